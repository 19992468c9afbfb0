//! How a campaign process drives its Runs: claims, follows durable
//! pauses, works, hands off through a real gate or finishes, and cleans
//! up as the owner, each operation recorded in its history.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, FinishError, LogError, Receipt, Retirement, SealError,
    SweepCursor, append_then_seal_async, finish_then_close_async,
};
use baton::{CancelSignal, HandoffGate};

use super::transcript::{History, refusal, say};
use super::{
    Log, MAX_CHAIN, chain_index, digest, intent, now_us, outcome, outcome_id, root_of, source,
    successor_of,
};
use crate::Rng;
use crate::common::{Pause, commit_at_boundary};

/// What a claim answered, for the process that made it.
pub(super) enum Claimed {
    /// This process now owns the Run under this epoch.
    Owner(Epoch),
    /// A pause is durable: the successor it names.
    HandedOff(String),
    /// The Run finished.
    Finished,
    /// The root is retired.
    Retired,
    /// No answer, or a refusal.
    NoAnswer,
}

/// Where driving a chain left it.
#[derive(PartialEq, Eq)]
pub(super) enum Chain {
    /// Its last Run finished: the root's work ended.
    Ended,
    /// Its root is retired.
    Retired,
    /// Not known to have ended.
    Open,
}

/// How a process's modes shape its steps.
#[derive(Clone, Copy)]
pub(super) struct Modes {
    /// Appends bypass fencing (the unfenced control).
    pub(super) unfenced: bool,
    /// Retention by SQL under the old rule (the broken-retention control).
    pub(super) broken: bool,
}

/// A campaign process's means: its log, a raw connection for the
/// controls, its history.
pub(super) struct Proc {
    pub(super) log: Log,
    pub(super) url: String,
    /// Taken while in use (never borrowed across an await).
    pub(super) raw: RefCell<Option<tokio_postgres::Client>>,
    pub(super) history: History,
    pub(super) name: String,
    pub(super) modes: Modes,
}

/// How a handoff or a finish of a Run ended.
enum Wrote {
    /// Acknowledged (`Written` or `AlreadyDurable`).
    Ours,
    /// Refused: the Run is already handed off.
    HandedOff,
    /// Refused: the Run already finished.
    Finished,
    /// Refused: the root is retired.
    Retired,
    /// Refused otherwise, unavailable, or unknown.
    Failed,
}

/// What a write (an append then seal, a finish then close) landed as:
/// the cases of its error type that the history tells apart.
enum Landed<'a> {
    /// The log's receipt.
    Receipt(Receipt),
    /// Fenced by a later epoch: the current one.
    Fenced(Epoch),
    /// The log's refusal, or no answer.
    Refused(&'a LogError),
    /// Any other error, as debugged.
    Other(String),
}

fn wrote(error: &LogError) -> Wrote {
    match error {
        LogError::AlreadyHandedOff { .. } => Wrote::HandedOff,
        LogError::AlreadyFinished { .. } => Wrote::Finished,
        LogError::Retired { .. } => Wrote::Retired,
        _ => Wrote::Failed,
    }
}

impl Proc {
    /// Drives a chain from the Run `from` (its head, but for the broken
    /// retention's successor), as a runtime does: claims
    /// each Run, follows every durable pause to its successor (if
    /// `follow`), and works the first Run it owns — finishes it (if `end`,
    /// at the chain's end, or one time in four) or hands it off and, if
    /// `follow`, goes on with the successor.
    pub(super) async fn drive(&self, rng: &mut Rng, from: &str, follow: bool, end: bool) -> Chain {
        let mut run = from.to_owned();
        // Each Run is claimed at most twice (once more after a refusal
        // saying it is final), so this bounds the walk.
        for _ in 0..2 * (MAX_CHAIN + 1) {
            match self.claim(&run).await {
                Claimed::Owner(epoch) => {
                    // The work (none when ending the chain once the faults
                    // stopped).
                    if !end {
                        let work = 20 + rng.below(180);
                        tokio::time::sleep(Duration::from_millis(work)).await;
                    }
                    let id = format!("{}-{run}-e{epoch}", self.name);
                    let wrote = if end || chain_index(&run) >= MAX_CHAIN || rng.below(4) == 0 {
                        match self.finish(&run, epoch, &id).await {
                            Wrote::Ours => return Chain::Ended,
                            other => other,
                        }
                    } else {
                        match self.hand_off(&run, epoch, &id).await {
                            Wrote::Ours if follow => {
                                run = successor_of(&run);
                                continue;
                            }
                            Wrote::Ours => return Chain::Open,
                            other => other,
                        }
                    };
                    match wrote {
                        // Someone else made it final: claim it again to see.
                        Wrote::HandedOff | Wrote::Finished => {}
                        Wrote::Retired => return Chain::Retired,
                        Wrote::Ours | Wrote::Failed => return Chain::Open,
                    }
                }
                Claimed::HandedOff(successor) if follow => run = successor,
                Claimed::HandedOff(_) | Claimed::NoAnswer => return Chain::Open,
                Claimed::Finished => return Chain::Ended,
                Claimed::Retired => return Chain::Retired,
            }
        }
        Chain::Open
    }

    /// Claims `run` under its root.
    pub(super) async fn claim(&self, run: &str) -> Claimed {
        let op = self.history.invoke(&format!("claim {run}"));
        let claimed = match self.log.claim_async(root_of(run), run).await {
            Ok(Claim::Owner(epoch)) => {
                self.history.complete(op, &format!("ok owner {epoch}"));
                return Claimed::Owner(epoch);
            }
            Ok(Claim::HandedOff(pause)) => {
                self.history.complete(
                    op,
                    &format!(
                        "ok handed-off {} {} {}",
                        pause.intent.handoff_id,
                        digest(&pause),
                        pause.intent.successor_run_id
                    ),
                );
                return Claimed::HandedOff(pause.intent.successor_run_id.clone());
            }
            Ok(Claim::Finished(outcome)) => {
                let id = outcome_id(&outcome);
                format!("ok finished {id} {}", digest(&outcome))
            }
            Ok(Claim::Retired) => "ok retired".to_owned(),
            Err(error) => {
                self.history.complete(op, &refusal(&error));
                // No answer (a crashed server, a partition): back off a
                // little, as a real host would.
                tokio::time::sleep(Duration::from_millis(100 + now_us() % 200)).await;
                return Claimed::NoAnswer;
            }
        };
        self.history.complete(op, &claimed);
        if claimed == "ok retired" {
            Claimed::Retired
        } else {
            Claimed::Finished
        }
    }

    /// Hands `run` off through a real gate.
    async fn hand_off(&self, run: &str, epoch: Epoch, pause_id: &str) -> Wrote {
        let gate = HandoffGate::new(source(run), root_of(run).into());
        let reservation = gate
            .requester()
            .reserve(intent(run, pause_id, &self.name))
            .expect("a valid intent");
        let cancel = CancelSignal::new();
        let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
        let paused: Arc<Pause> = paused.expect("committed");
        let op = self.history.invoke(&format!(
            "append {run} {epoch} {pause_id} {} {}",
            digest(&*paused),
            paused.intent.successor_run_id
        ));
        let appended = append_then_seal_async(&gate, &self.log, epoch, &paused).await;
        let landed = match &appended {
            Ok(receipt) => Landed::Receipt(*receipt),
            Err(SealError::Fenced { current, .. }) => Landed::Fenced(*current),
            Err(SealError::Append(error)) => Landed::Refused(error),
            Err(other) => Landed::Other(format!("{other:?}")),
        };
        let wrote = self.landed(op, landed);
        // R2, R7: what the requester's wait() says; a seal is printed only
        // if it returned the pause.
        if let Ok(Ok(sealed)) = tokio::time::timeout(Duration::from_secs(1), pending.wait()).await {
            say(&format!(
                "- sealed {run} {epoch} {}",
                sealed.intent.handoff_id
            ));
        }
        wrote
    }

    /// Ends `run` without a handoff: `finish_then_close_async` under its
    /// epoch, through a real gate.
    async fn finish(&self, run: &str, epoch: Epoch, id: &str) -> Wrote {
        let gate = HandoffGate::new(source(run), root_of(run).into());
        let outcome = outcome(id);
        let op = self
            .history
            .invoke(&format!("finish {run} {epoch} {id} {}", digest(&outcome)));
        let finished = finish_then_close_async(&gate, &self.log, epoch, &outcome).await;
        let landed = match &finished {
            Ok(receipt) => Landed::Receipt(*receipt),
            Err(FinishError::Fenced { current, .. }) => Landed::Fenced(*current),
            Err(FinishError::Finish(error)) => Landed::Refused(error),
            Err(other) => Landed::Other(format!("{other:?}")),
        };
        self.landed(op, landed)
    }

    /// Completes the write `op` (an append, a finish) with what it landed
    /// as, and says what it wrote.
    fn landed(&self, op: u64, landed: Landed<'_>) -> Wrote {
        match landed {
            Landed::Receipt(receipt) => {
                let how = if receipt == Receipt::Written {
                    "written"
                } else {
                    "already"
                };
                self.history.complete(op, &format!("ok {how}"));
                Wrote::Ours
            }
            Landed::Fenced(current) => {
                self.history
                    .complete(op, &format!("refused fenced {current}"));
                Wrote::Failed
            }
            Landed::Refused(error) => {
                self.history.complete(op, &refusal(error));
                wrote(error)
            }
            Landed::Other(debug) => {
                self.history
                    .complete(op, &format!("refused other {debug}").replace(' ', "_"));
                Wrote::Failed
            }
        }
    }

    /// Retention: retires the root Run `root` (under the broken retention,
    /// by SQL under the old rule).
    pub(super) async fn retire(&self, root: &str) {
        if self.modes.broken {
            return self.broken_retire(root).await;
        }
        let op = self.history.invoke(&format!("retire {root}"));
        match self.log.retire_async(root).await {
            Ok(Retirement::Retired { runs }) => {
                self.history.complete(op, &format!("ok retired-now {runs}"));
            }
            Ok(Retirement::AlreadyRetired) => self.history.complete(op, "ok already-retired"),
            Err(error) => self.history.complete(op, &refusal(&error)),
        }
    }

    /// One batch of retention by age: `retire_ended_async` of the work
    /// that ended `age` ago or earlier, from `cursor`, at most `limit`
    /// roots looked at. Its completion lists the roots it retired (in the
    /// batch's order) and whether the pass ended (`end`: `next` is `None`,
    /// the walk starts again) or goes on (`more`). After an error the
    /// cursor stays: the same batch is sent again.
    pub(super) async fn sweep(
        &self,
        cursor: &mut Option<SweepCursor>,
        age: Duration,
        limit: usize,
    ) {
        let op = self.history.invoke(&format!(
            "sweep {limit} {} {}",
            age.as_millis(),
            if cursor.is_some() { "on" } else { "start" }
        ));
        let before = SystemTime::now() - age;
        match self
            .log
            .retire_ended_async(before, cursor.as_ref(), limit)
            .await
        {
            Ok(sweep) => {
                let pass = if sweep.next.is_none() { "end" } else { "more" };
                let mut line = format!("ok swept {} {} {pass}", sweep.runs, sweep.kept);
                for root in &sweep.roots {
                    line.push(' ');
                    line.push_str(root);
                }
                self.history.complete(op, &line);
                *cursor = sweep.next;
            }
            Err(error) => self.history.complete(op, &refusal(&error)),
        }
    }

    /// A raw connection, for the controls.
    /// The raw connection, taken (put it back with [`Proc::put_raw`]).
    async fn raw(&self) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
        let held = self.raw.borrow_mut().take();
        match held {
            Some(client) if !client.is_closed() => Ok(client),
            _ => {
                let (client, connection) =
                    tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await?;
                tokio::spawn(connection);
                Ok(client)
            }
        }
    }

    fn put_raw(&self, client: tokio_postgres::Client) {
        *self.raw.borrow_mut() = Some(client);
    }

    /// The broken-retention control: the old rule, by SQL. The root's row
    /// locked as the real store locks it; retired if every Run the log
    /// holds of it is final (handed off or finished) — a successor a
    /// durable pause names but nobody claimed yet is not looked at.
    async fn broken_retire(&self, root: &str) {
        let op = self.history.invoke(&format!("retire {root}"));
        let outcome = async {
            let client = self.raw().await?;
            client.batch_execute("BEGIN").await?;
            let retired: bool = client
                .query_one(
                    "INSERT INTO baton_root AS root (root_run_id) VALUES ($1) \
                     ON CONFLICT (root_run_id) DO UPDATE SET retired = root.retired \
                     RETURNING retired",
                    &[&root],
                )
                .await?
                .get(0);
            let runs: i64 = client
                .query_one(
                    "SELECT count(*) FROM baton_run WHERE root_run_id = $1",
                    &[&root],
                )
                .await?
                .get(0);
            let open: i64 = client
                .query_one(
                    "SELECT count(*) FROM baton_run r WHERE r.root_run_id = $1 \
                     AND r.outcome IS NULL AND NOT EXISTS (SELECT 1 FROM baton_handoff_pause p \
                     WHERE p.root_run_id = r.root_run_id AND p.run_id = r.run_id)",
                    &[&root],
                )
                .await?
                .get(0);
            let answer = if retired {
                "ok already-retired".to_owned()
            } else if runs == 0 {
                "refused nothing-to-retire".to_owned()
            } else if open > 0 {
                "refused run-open ?".to_owned()
            } else {
                client
                    .batch_execute(&format!(
                        "DELETE FROM baton_handoff_pause WHERE root_run_id = '{root}'; \
                         DELETE FROM baton_run WHERE root_run_id = '{root}'; \
                         UPDATE baton_root SET retired = true WHERE root_run_id = '{root}'"
                    ))
                    .await?;
                format!("ok retired-now {runs}")
            };
            client.batch_execute("COMMIT").await?;
            Ok::<_, tokio_postgres::Error>((answer, client))
        };
        match tokio::time::timeout(Duration::from_secs(2), outcome).await {
            Ok(Ok((answer, client))) => {
                self.put_raw(client);
                self.history.complete(op, &answer);
            }
            Ok(Err(_)) | Err(_) => self.history.complete(op, "unknown"),
        }
    }

    /// The test-only switch: an append with fencing disabled, on a raw
    /// connection. The Run's row lock and the one-pause-per-Run key as the
    /// real log has them, but no epoch check: whoever comes first writes.
    pub(super) async fn unfenced_hand_off(&self, run: &str, epoch: Epoch, pause: &Pause) {
        let pause_id = pause.intent.handoff_id.as_str();
        let op = self.history.invoke(&format!(
            "append {run} {epoch} {pause_id} {} {}",
            digest(pause),
            pause.intent.successor_run_id
        ));
        let root = root_of(run);
        let outcome = async {
            let client = self.raw().await?;
            client.batch_execute("BEGIN").await?;
            client
                .query(
                    "SELECT epoch FROM baton_run WHERE root_run_id = $1 AND run_id = $2 FOR UPDATE",
                    &[&root, &run],
                )
                .await?;
            let existing = client
                .query_opt(
                    "SELECT handoff_id FROM baton_handoff_pause WHERE root_run_id = $1 AND run_id = $2",
                    &[&root, &run],
                )
                .await?;
            let written = if existing.is_none() {
                let json = serde_json::to_string(pause).expect("a pause encodes");
                let at = epoch.get() as i64;
                client
                    .execute(
                        "INSERT INTO baton_handoff_pause VALUES ($1, $2, 'session', 'turn', $3, $4, $5, $6, \
                         CAST($7::text AS json), $8)",
                        &[
                            &root,
                            &run,
                            &format!("{run}-invocation"),
                            &pause_id,
                            &pause.intent.successor_run_id,
                            &pause.intent.successor_invocation_id,
                            &json,
                            &at,
                        ],
                    )
                    .await?;
                true
            } else {
                false
            };
            client.batch_execute("COMMIT").await?;
            Ok::<_, tokio_postgres::Error>((written, client))
        };
        match tokio::time::timeout(Duration::from_secs(2), outcome).await {
            Ok(Ok((true, client))) => {
                self.put_raw(client);
                self.history.complete(op, "ok written");
                say(&format!("- sealed {run} {epoch} {pause_id}"));
            }
            Ok(Ok((false, client))) => {
                self.put_raw(client);
                self.history.complete(op, "refused already-handed-off");
            }
            Ok(Err(_)) | Err(_) => self.history.complete(op, "unknown"),
        }
    }
}
