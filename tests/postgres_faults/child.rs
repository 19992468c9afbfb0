//! The campaign's processes: a worker ("host") or the owner, each this test
//! binary re-executed with its role in the environment, reaching the
//! server through its own proxy. Each writes its history to a file of its
//! own, one numbered record per line (`<n> <µs> <op> invoke …` before an
//! operation, `<n> <µs> <op> <outcome> …` after it, `<n> <µs> - <event> …`
//! for seals and decisions, and `- end <n>` as it ends), stamped with the
//! machine's wall clock, which every process of the campaign shares; the
//! parent reads them all back and checks them.
//!
//! **Chains** (issue 43). Each root Run `rK` is the head of a chain of Runs
//! of that root: `rK` hands off to `rK.1`, which hands off to `rK.2`, …, up
//! to `rK.`[`MAX_CHAIN`], which always finishes. A process lives the
//! promise of a durable handoff as a runtime does: when a claim answers
//! `HandedOff(pause)` (or its own handoff was acknowledged), it claims
//! `pause.intent.successor_run_id` under the same root and runs it — works,
//! then finishes it (one in four, and always at the chain's end) or hands it
//! off again. So chains end, and retention can retire them.
//!
//! A **worker** loops until told to stop (`stop` on stdin): it picks a root
//! of the current window (the roots every process picks from move on every
//! [`WINDOW`]), and drives its chain from the head: it claims each Run,
//! follows each durable pause to its successor, and works the first Run it
//! owns (holding its epoch a while: the window in which a pause, a
//! partition or another process's claim turns it into a zombie), then hands
//! it off through a real gate (`append_then_seal_async` under its epoch,
//! `wait()` on the requester's side) and goes on with the successor, or
//! finishes it (`finish_then_close_async`).
//!
//! The **owner** is the wrong failure detector and the runtime's sweeper:
//! between its steps it claims roots of the window at random (taking them
//! over from live workers); it sweeps the roots of older windows in order,
//! driving each chain as a worker would (so a successor whose worker died
//! is claimed and run) and retiring half the roots whose chain ended by
//! name; it retires roots of older windows at random (which a zombie may
//! still be working on, or whose chain may still be open: `RunOpen`), and
//! now and then a root nobody claimed yet (`NothingToRetire`) — §6.1,
//! R8–R10, G1, G5. And its clean-up retires through the bulk form (issue
//! 43): every other step it runs one batch of retention by age
//! (`retire_ended_async` of the work that ended up to 3 s ago, 8 to 32
//! roots looked at), walking the cursor and starting again when a pass
//! ends, racing everything else, zombies included; each batch is one
//! operation of its history, its completion listing the roots it retired.
//! Told `decide`, it ends every chain of the campaign — claims each Run
//! from the head, finishes the first one open — and says `done`.
//!
//! Under `BATON_FAULT_UNFENCED=1` the workers append through a store with
//! fencing disabled (the test-only switch): the same row lock and
//! one-pause-per-Run key, but no epoch check; they neither finish nor
//! follow, and the owner neither retires nor sweeps. Under
//! `BATON_FAULT_RETENTION=broken` (the broken-retention control) the
//! owner's clean-up retires roots by SQL directly under the old rule (every
//! Run the log holds is final, successors ignored), and workers do not
//! follow their handoffs, so a retired root's successor is still unclaimed
//! (the owner's sweeps, the real store's rule, run as in the campaign).
//!
//! Under `BATON_FAULT_GROUP=1` (the parent sets it for every other
//! worker) the process's log has group commit of one slot, and a worker
//! drives [`GROUP_LANES`] chains at once on it, so that its claims,
//! appends and finishes of different roots wait for each other and are
//! sent in batches, under every fault of the campaign.

use std::cell::{Cell, RefCell};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::durable::tokio_postgres::NoTls;
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, FinishError, LogError, PostgresLog, PostgresOptions, Receipt,
    Retirement, SealError, SweepCursor, append_then_seal_async, finish_then_close_async,
};
use baton::{CancelSignal, HandoffGate, HandoffIntent, Invocation};

use super::{Rng, WINDOW, WINDOW_RUNS, env, var};
use crate::common::{Pause, commit_at_boundary, execution, pause_for};

type Log = PostgresLog<baton::HandoffExecution>;

/// A chain's last Run (its index): it always finishes.
pub const MAX_CHAIN: u64 = 3;

/// The owner decides the roots in this many lanes at once.
const DECIDE_LANES: u64 = 4;

/// A worker under group commit drives this many chains at once.
const GROUP_LANES: u64 = 3;

/// The wall clock in µs since the epoch: every process's history shares it.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The root Run `k` (the head of its chain).
pub fn run_name(k: u64) -> String {
    format!("r{k}")
}

/// The root of the Run `run` (`rK` for `rK` and `rK.i`).
pub fn root_of(run: &str) -> &str {
    run.split_once('.').map_or(run, |(root, _)| root)
}

/// The index of `run` in its chain (0 for the root).
pub fn chain_index(run: &str) -> u64 {
    run.split_once('.')
        .and_then(|(_, i)| i.parse().ok())
        .unwrap_or(0)
}

/// The successor a handoff of `run` names.
pub fn successor_of(run: &str) -> String {
    format!("{}.{}", root_of(run), chain_index(run) + 1)
}

/// A digest of a value's JSON encoding (re-encoded through
/// `serde_json::Value`), the same in every process of the campaign: what
/// the checker compares for G2 (what was acknowledged reads back equal).
pub fn digest<T: serde::Serialize>(value: &T) -> String {
    let json = serde_json::to_value(value).map_or_else(|e| e.to_string(), |v| v.to_string());
    let mut hasher = DefaultHasher::new();
    json.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

fn source(run: &str) -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: run.into(),
        invocation_id: format!("{run}-invocation"),
    }
}

fn intent(run: &str, pause_id: &str, host: &str) -> HandoffIntent {
    let successor = successor_of(run);
    HandoffIntent {
        handoff_id: pause_id.into(),
        host_epoch: host.into(),
        root_run_id: root_of(run).into(),
        successor_invocation_id: format!("{successor}-invocation"),
        successor_run_id: successor,
        claim_id: "claim".into(),
    }
}

/// This process's operations, numbered.
struct History {
    next: Cell<u64>,
}

/// This process's history: a file of its own (`BATON_FAULT_HISTORY`), so
/// nothing else printed (libtest's `test fault_child ... `, a panic)
/// shares its lines; and the records written to it so far.
static TRANSCRIPT: Mutex<Option<(std::fs::File, u64)>> = Mutex::new(None);

/// Appends one record, `<n> <µs> <line>`, numbered from 1 in the order
/// written, in one `write` of a whole line. A record that cannot be
/// written panics the process, and the parent, missing its trailer,
/// fails the campaign.
fn say(line: &str) {
    let mut transcript = TRANSCRIPT.lock().unwrap();
    let (file, written) = transcript.get_or_insert_with(|| {
        let path = var("BATON_FAULT_HISTORY");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("the history file {path}: {e}"));
        (file, 0)
    });
    *written += 1;
    let record = format!("{written} {} {line}\n", now_us());
    file.write_all(record.as_bytes())
        .expect("a history record is written");
}

/// The trailer a process writes as it ends normally: how many records
/// came before it (a process killed by the campaign has none).
fn say_end() {
    let written = TRANSCRIPT.lock().unwrap().as_ref().map_or(0, |(_, n)| *n);
    say(&format!("- end {written}"));
}

impl History {
    fn invoke(&self, what: &str) -> u64 {
        let op = self.next.get() + 1;
        self.next.set(op);
        say(&format!("{op} invoke {what}"));
        op
    }
    fn complete(&self, op: u64, outcome: &str) {
        say(&format!("{op} {outcome}"));
    }
}

fn refusal(error: &LogError) -> String {
    match error {
        LogError::Fenced { current, .. } => format!("refused fenced {current}"),
        LogError::AlreadyHandedOff { .. } => "refused already-handed-off".into(),
        LogError::AlreadyFinished { .. } => "refused already-finished".into(),
        LogError::Retired { .. } => "refused retired".into(),
        LogError::RunOpen { run_id, .. } => format!("refused run-open {run_id}"),
        LogError::NothingToRetire { .. } => "refused nothing-to-retire".into(),
        LogError::EpochNotIssued { current, .. } => format!("refused epoch-not-issued {current}"),
        LogError::OutcomeUnknown(_) => "unknown".into(),
        LogError::Unavailable(_) => "unavailable".into(),
        other => format!("refused other {}", format!("{other:?}").replace(' ', "_")),
    }
}

/// What a claim answered, for the process that made it.
enum Claimed {
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
enum Chain {
    /// Its last Run finished: the root's work ended.
    Ended,
    /// Its root is retired.
    Retired,
    /// Not known to have ended.
    Open,
}

/// How a process's modes shape its steps.
#[derive(Clone, Copy)]
struct Modes {
    /// Appends bypass fencing (the unfenced control).
    unfenced: bool,
    /// Retention by SQL under the old rule (the broken-retention control).
    broken: bool,
}

/// The entry of a child process: `role` is `worker` or `owner`.
pub fn main(role: &str) {
    let url = var("BATON_FAULT_URL");
    let name = var("BATON_FAULT_PROC");
    let t0: u64 = var("BATON_FAULT_T0").parse().expect("T0");
    let modes = Modes {
        unfenced: env("BATON_FAULT_UNFENCED").is_some_and(|v| v == "1"),
        broken: env("BATON_FAULT_RETENTION").is_some_and(|v| v == "broken"),
    };
    let mut rng = Rng(var("BATON_FAULT_SEED").parse::<u64>().expect("seed") ^ now_us());
    let stop = Arc::new(AtomicBool::new(false));
    let decide = Arc::new(std::sync::Mutex::new(None::<u64>));
    {
        let (stop, decide) = (Arc::clone(&stop), Arc::clone(&decide));
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if line == "stop" {
                    stop.store(true, Ordering::SeqCst);
                } else if let Some(runs) = line.strip_prefix("decide ") {
                    *decide.lock().unwrap() = runs.parse().ok();
                }
            }
            stop.store(true, Ordering::SeqCst);
        });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let log = connect(&url).await;
        let p = Proc {
            log,
            url,
            raw: RefCell::new(None),
            history: History { next: Cell::new(0) },
            name,
            modes,
        };
        let window = || (now_us().saturating_sub(t0)) / WINDOW.as_micros() as u64;
        match role {
            "worker" => {
                let lanes = if grouped() { GROUP_LANES } else { 1 };
                let (p, stop) = (&p, &stop);
                let lane = |lane: u64| async move {
                    if lane < lanes {
                        let rng = Rng(rng.0 ^ lane.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                        work(p, stop, rng, window).await;
                    }
                };
                // What the group commit sent so far, every second (the
                // parent sums each process's last record).
                let counts = async {
                    while !stop.load(Ordering::SeqCst) {
                        if let Some(sent) = p.log.group_commits() {
                            say(&format!(
                                "- grouped {} {} {} {}",
                                sent.batches, sent.writes, sent.rolled_back, sent.unknown
                            ));
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                };
                tokio::join!(lane(0), lane(1), lane(2), counts);
            }
            "owner" => {
                let mut sweep = 0;
                // Retention by age: a cursor walk of `retire_ended_async`
                // batches, started again once a pass ends.
                let mut cursor: Option<SweepCursor> = None;
                let runs = loop {
                    if let Some(runs) = *decide.lock().unwrap() {
                        break runs;
                    }
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    // The wrong failure detector: takes a root of the window
                    // over from whoever works it.
                    if rng.below(2) == 0 {
                        let root = run_name(window() * WINDOW_RUNS + rng.below(WINDOW_RUNS));
                        let claimed = p.claim(&root).await;
                        // ... and, now and then, retention races it: the
                        // root the owner just took over (RunOpen naming
                        // it), or whose handoff it just read while the
                        // successor is likely still worked on (RunOpen
                        // naming the successor).
                        let racing = matches!(claimed, Claimed::Owner(_) | Claimed::HandedOff(_));
                        if racing && !modes.unfenced && !modes.broken && rng.below(3) == 0 {
                            p.retire(&root).await;
                        }
                    }
                    if modes.unfenced {
                        tokio::time::sleep(Duration::from_millis(100 + rng.below(400))).await;
                        continue;
                    }
                    // The sweep: the next root two or more windows old; its
                    // chain driven (a successor nobody claimed is claimed
                    // and run), then retired once ended. Under the broken
                    // retention the owner neither follows nor waits.
                    if sweep < window().saturating_sub(1) * WINDOW_RUNS {
                        let root = run_name(sweep);
                        sweep += 1;
                        let chain = p.drive(&mut rng, &root, !modes.broken, false).await;
                        // Half the ended chains retired by name; the
                        // others are left to the sweeps (SPEC §6.1,
                        // retention by age).
                        if (chain == Chain::Ended && rng.below(2) == 0) || modes.broken {
                            p.retire(&root).await;
                        }
                        // Under the broken retention, the successor's host
                        // (here the owner, as a runtime would dispatch it)
                        // comes to claim it after the clean-up.
                        if modes.broken {
                            p.drive(&mut rng, &successor_of(&root), true, false).await;
                        }
                    }
                    // Retention by age (issue 43: the owner's clean-up
                    // retires through the bulk form): one batch of a
                    // sweep of the work that ended up to 3 s ago, racing
                    // the workers, the zombies, and the owner's own
                    // retirements by name.
                    if rng.below(2) == 0 {
                        let age = Duration::from_millis(rng.below(3000));
                        let limit = 8 + rng.below(25) as usize;
                        p.sweep(&mut cursor, age, limit).await;
                    }
                    // Retention at random: a root two or more windows old
                    // (a zombie may work on it), or one of the previous or
                    // the current window (its chain likely still open:
                    // RunOpen)...
                    if window() >= 2 && rng.below(3) == 0 {
                        let recent = (window() - 1) * WINDOW_RUNS;
                        let k = if rng.below(2) == 0 {
                            rng.below(recent)
                        } else {
                            recent + rng.below(2 * WINDOW_RUNS)
                        };
                        p.retire(&run_name(k)).await;
                    }
                    // ... and, now and then, a root nobody claimed yet: the
                    // log holds nothing for it, its work has not ended.
                    if !modes.broken && rng.below(10) == 0 {
                        let ahead = (window() + 10) * WINDOW_RUNS + rng.below(WINDOW_RUNS);
                        p.retire(&run_name(ahead)).await;
                    }
                    tokio::time::sleep(Duration::from_millis(20 + rng.below(100))).await;
                };
                // Every chain of the campaign ended: each Run claimed from
                // the head, the first one open finished by the owner; in
                // [`DECIDE_LANES`] lanes at once (a runtime's hosts decide
                // their Runs side by side), on the log's pool.
                let p = &p;
                let lane = |lane: u64| async move {
                    let mut rng = Rng(lane ^ now_us());
                    for k in (lane..runs).step_by(DECIDE_LANES as usize) {
                        let root = run_name(k);
                        while p.drive(&mut rng, &root, true, true).await == Chain::Open {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        say(&format!("- decided {root}"));
                    }
                };
                tokio::join!(lane(0), lane(1), lane(2), lane(3));
                say("- done");
                // Wait to be told to go, so the parent reads everything.
                while !stop.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            other => panic!("unknown role {other}"),
        }
    });
    say_end();
}

/// A worker's lane, until told to stop: a root of the current window
/// each time, its chain driven from the head.
async fn work(p: &Proc, stop: &AtomicBool, mut rng: Rng, window: impl Fn() -> u64) {
    while !stop.load(Ordering::SeqCst) {
        let root = run_name(window() * WINDOW_RUNS + rng.below(WINDOW_RUNS));
        if p.modes.unfenced {
            if let Claimed::Owner(epoch) = p.claim(&root).await {
                let work = 20 + rng.below(180);
                tokio::time::sleep(Duration::from_millis(work)).await;
                let pause_id = format!("{}-{root}-e{epoch}", p.name);
                let pause = pause_for(intent(&root, &pause_id, &p.name));
                p.unfenced_hand_off(&root, epoch, &pause).await;
            }
        } else {
            // A worker under the broken retention hands off and moves on
            // (as the campaign did before issue 43), leaving the successor
            // to the owner.
            let follow = !p.modes.broken;
            p.drive(&mut rng, &root, follow, false).await;
        }
        tokio::time::sleep(Duration::from_millis(5 + rng.below(30))).await;
    }
}

/// Whether this process's log has group commit (`BATON_FAULT_GROUP=1`).
fn grouped() -> bool {
    env("BATON_FAULT_GROUP").is_some_and(|v| v == "1")
}

async fn connect(url: &str) -> Log {
    loop {
        let config = url.parse().expect("a connection string");
        // The guide's configuration for every promise across a manager's
        // failover (issue 58): a synchronous standby required at every
        // write.
        let required = env("BATON_FAULT_REQUIRE_STANDBY").is_some_and(|v| v == "1");
        let options = PostgresOptions::new()
            .timeout(Duration::from_secs(2))
            .require_synchronous_standby(required)
            .group_commit(usize::from(grouped()));
        match PostgresLog::connect_with(config, NoTls, options).await {
            Ok(log) => return log,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// A campaign process's means: its log, a raw connection for the
/// controls, its history.
struct Proc {
    log: Log,
    url: String,
    /// Taken while in use (never borrowed across an await).
    raw: RefCell<Option<tokio_postgres::Client>>,
    history: History,
    name: String,
    modes: Modes,
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
    async fn drive(&self, rng: &mut Rng, from: &str, follow: bool, end: bool) -> Chain {
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
    async fn claim(&self, run: &str) -> Claimed {
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
        let wrote = match &appended {
            Ok(receipt) => {
                let how = if *receipt == Receipt::Written {
                    "written"
                } else {
                    "already"
                };
                self.history.complete(op, &format!("ok {how}"));
                Wrote::Ours
            }
            Err(SealError::Fenced { current, .. }) => {
                self.history
                    .complete(op, &format!("refused fenced {current}"));
                Wrote::Failed
            }
            Err(SealError::Append(error)) => {
                self.history.complete(op, &refusal(error));
                wrote(error)
            }
            Err(other) => {
                self.history
                    .complete(op, &format!("refused other {other:?}").replace(' ', "_"));
                Wrote::Failed
            }
        };
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
        match finish_then_close_async(&gate, &self.log, epoch, &outcome).await {
            Ok(Receipt::Written) => {
                self.history.complete(op, "ok written");
                Wrote::Ours
            }
            Ok(_) => {
                self.history.complete(op, "ok already");
                Wrote::Ours
            }
            Err(FinishError::Fenced { current, .. }) => {
                self.history
                    .complete(op, &format!("refused fenced {current}"));
                Wrote::Failed
            }
            Err(FinishError::Finish(error)) => {
                self.history.complete(op, &refusal(&error));
                wrote(&error)
            }
            Err(other) => {
                self.history
                    .complete(op, &format!("refused other {other:?}").replace(' ', "_"));
                Wrote::Failed
            }
        }
    }

    /// Retention: retires the root Run `root` (under the broken retention,
    /// by SQL under the old rule).
    async fn retire(&self, root: &str) {
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
    async fn sweep(&self, cursor: &mut Option<SweepCursor>, age: Duration, limit: usize) {
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
    async fn unfenced_hand_off(&self, run: &str, epoch: Epoch, pause: &Pause) {
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

/// The outcome a finish records: the execution, with the finish's id as
/// its one loaded tool, so the server's row says whose finish it is.
fn outcome(id: &str) -> baton::HandoffExecution {
    let mut outcome = execution();
    outcome.tools.loaded = vec![id.to_owned()];
    outcome
}

/// The id [`outcome`] put in `outcome`.
pub fn outcome_id(outcome: &baton::HandoffExecution) -> &str {
    outcome.tools.loaded.first().map_or("?", String::as_str)
}
