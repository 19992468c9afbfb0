//! The write of an operation on the facts it usually finds ([`Assumed`]):
//! asked of the pure rule in Rust, then sent as one statement (or, a
//! finish on tables distributed by root Run, one flight) that writes only if the Run's
//! facts are those, alone or in a group commit
//! ([`group`](super::group)).

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::durable::contract::{Epoch, RunFacts};
use crate::durable::fence::{AppendStep, Fate, append_step, claim_step_above, finish_step};
use crate::durable::row::corrupt;
use crate::facts::Invocation;

use super::decide::floor_of;
use super::end::{commit, guarded, refused};
use super::failure::{Failure, stored};
use super::flight::flight3;
use super::op::{Answer, Op};
use super::replication::NoSynchronousStandby;
use super::sql::{Conn, Layout, Param, Which};

/// A parameter owned by its write, so that a group commit's task can send
/// it after the operation that made it has moved on.
type Owned = Box<dyn ToSql + Send + Sync>;

/// What the rule answers and writes for the facts an operation usually
/// finds: a Run's first claim finds no row (no epoch, no pause: a pause
/// needs the Run's row), an append or a finish finds its own epoch
/// current, the Run open and no pause.
pub(super) struct Assumed<P> {
    /// The operation's answer, if [`write`](Self::write) affects its row.
    pub(super) answer: Answer<P>,
    pub(super) write: Write,
}

/// The write of an [`Assumed`]: statements that write the rule's answer
/// only if the Run's facts are the assumed ones, deciding by the last
/// one's count of affected rows (1: written; 0: the facts are other,
/// nothing was written).
pub(super) struct Write {
    pub(super) kind: Kind,
    root_run_id: String,
    run_id: String,
    params: Vec<Owned>,
}

/// Which statements a [`Write`] sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    /// `InsertRun`: the Run's row, `ON CONFLICT DO NOTHING`.
    Claim,
    /// `AppendIfCurrent`: the pause from the Run's row locked at its epoch.
    Append,
    /// `FinishUnpaused`: one statement, fenced on the Run's row alone
    /// (its epoch, its finish and its `paused` flag).
    Finish,
    /// On tables distributed by root Run, which keep no `paused` flag:
    /// `LockRun`, then `FinishIfNoPause` (in a statement of its own after
    /// the lock, so its snapshot sees a pause the lock's holder committed).
    LockedFinish,
}

impl<P> Assumed<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    /// `op`'s assumed write, if it has one: `Facts`, a retirement, a
    /// sweep, a claim or an append or a finish for which the rule does
    /// not write on the assumed facts (or whose epoch is not stored: the
    /// rule refuses it) have none; nor has a Run's first claim on tables
    /// distributed by root Run (sent only in the transaction that read
    /// the root's server's timeline, see `Sql`).
    pub(super) fn of(op: &Op<'_, P>, sql_layout: Layout, timeline: i64) -> Option<Self> {
        match *op {
            Op::Facts { .. } | Op::Retire { .. } | Op::Sweep { .. } => None,
            Op::Claim { .. } if sql_layout == Layout::ByRootRun => None,
            Op::Claim {
                root_run_id,
                run_id,
            } => {
                // On the timeline this log last read: the statement writes
                // only if it is the server's (else the transaction reads it).
                let empty = RunFacts::<P>::empty(root_run_id, run_id);
                let step = claim_step_above(&empty, floor_of(timeline)).ok()?;
                let new = stored(step.write?).ok()?;
                Some(Self {
                    answer: Answer::Claim(step.answer),
                    write: Write {
                        kind: Kind::Claim,
                        root_run_id: root_run_id.to_owned(),
                        run_id: run_id.to_owned(),
                        params: vec![
                            text(root_run_id),
                            text(run_id),
                            Box::new(new),
                            Box::new(timeline),
                        ],
                    },
                })
            }
            Op::Append {
                root_run_id,
                source,
                epoch,
                pause,
                ref json,
            } => {
                let step = append_step(root_run_id, epoch, Fate::Open, epoch, (source, pause));
                let intent = &pause.intent;
                // `baton_handoff_pause`'s column order, as `pause_params`
                // binds them.
                fenced(Kind::Append, step, root_run_id, source, epoch, |at| {
                    vec![
                        text(&intent.handoff_id),
                        text(&intent.successor_run_id),
                        text(&intent.successor_invocation_id),
                        text(json),
                        Box::new(at),
                    ]
                })
            }
            Op::Finish {
                root_run_id,
                source,
                epoch,
                outcome,
                ref json,
            } => {
                let step = finish_step(root_run_id, epoch, Fate::Open, epoch, (source, outcome));
                let kind = match sql_layout {
                    Layout::OneServer => Kind::Finish,
                    Layout::ByRootRun => Kind::LockedFinish,
                };
                // As `finish_params` binds them; the lock's key is the
                // first two.
                fenced(kind, step, root_run_id, source, epoch, |at| {
                    vec![text(json), Box::new(at)]
                })
            }
        }
    }
}

/// An append's or a finish's assumed write, if `step` (the rule's answer
/// on the assumed facts) writes and `epoch` is stored: its parameters the
/// Run's key, the source's ids, then `rest` of the stored epoch.
fn fenced<P, E>(
    kind: Kind,
    step: Result<AppendStep, E>,
    root_run_id: &str,
    source: &Invocation,
    epoch: Epoch,
    rest: impl FnOnce(i64) -> Vec<Owned>,
) -> Option<Assumed<P>> {
    let step = step.ok()?;
    if step != AppendStep::Write {
        return None;
    }
    let at = stored(epoch).ok()?;
    Some(Assumed {
        answer: Answer::Receipt(step.receipt()),
        write: Write {
            kind,
            root_run_id: root_run_id.to_owned(),
            run_id: source.run_id.clone(),
            params: invocation(root_run_id, source)
                .into_iter()
                .chain(rest(at))
                .collect(),
        },
    })
}

fn text(text: &str) -> Owned {
    Box::new(text.to_owned())
}

/// The first five parameters of an append's and a finish's write: the
/// Run's key and the source's ids.
fn invocation(root_run_id: &str, source: &Invocation) -> [Owned; 5] {
    [
        text(root_run_id),
        text(&source.run_id),
        text(&source.session_id),
        text(&source.turn_id),
        text(&source.invocation_id),
    ]
}

impl Write {
    /// The Run the write is of.
    pub(super) fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The Run's key: a group commit holds at most one write of each, and
    /// takes their locks in this order.
    pub(super) fn key(&self) -> (&str, &str) {
        (&self.root_run_id, &self.run_id)
    }

    /// The parameters, as the statements bind them.
    pub(super) fn params(&self) -> Vec<Param<'_>> {
        self.params
            .iter()
            .map(|param| &**param as Param<'_>)
            .collect()
    }

    /// The statement whose count decides, and the lock sent before it (a
    /// finish's).
    pub(super) fn statements(&self) -> (Option<Which>, Which) {
        match self.kind {
            Kind::Claim => (None, Which::InsertRun),
            Kind::Append => (None, Which::AppendIfCurrent),
            Kind::Finish => (None, Which::FinishUnpaused),
            Kind::LockedFinish => (Some(Which::LockRun), Which::FinishIfNoPause),
        }
    }

    /// Sends the write alone: a claim's, an append's or a finish's one
    /// statement, its own transaction (autocommit; by a log that requires
    /// a synchronous standby on one server, with the guard's test in its
    /// `WHERE`; on tables distributed by root Run, in a transaction of its
    /// own with the guard, still one flight), or, on tables distributed
    /// by root Run, a finish's one flight: `BEGIN` (with its `SET LOCAL`
    /// timeouts), the Run's row lock, the finish only if the Run's facts
    /// are the assumed ones, and `COMMIT`. Whether it was written
    /// (`false`: the facts are other, nothing was written).
    ///
    /// A failure is read as a commit's: a serialization failure or a
    /// deadlock committed nothing (run again); a connection lost while
    /// the write was in flight may have committed (unknown). A finish's
    /// lock that failed (a lock timeout, a deadlock) aborted the
    /// transaction before the finish, and the `COMMIT` sent after it
    /// rolled back: it is answered as the lock's failure.
    pub(super) async fn alone(&self, conn: &Conn<'_>) -> Result<bool, Failure> {
        let client = conn.client;
        let params = self.params();
        let (lock, decides) = self.statements();
        let decides = conn.statement(decides).await?;
        let written = match lock {
            None => one_statement(conn, decides.execute(client, &params)).await?,
            Some(lock) => {
                let lock = conn.statement(lock).await?;
                let (begun, locked, committed) = flight3(
                    client.batch_execute(&conn.sql.begin_write),
                    lock.query_opt(client, &params[..2]),
                    commit(conn, Some(decides.execute(client, &params))),
                )
                .await;
                let aborted = [begun.err(), locked.err()]
                    .into_iter()
                    .flatten()
                    .find(|error| error.code().is_some());
                if let Some(error) = aborted {
                    return Err(error.into());
                }
                Ok::<u64, tokio_postgres::Error>(committed?)
            }
        };
        match written {
            Ok(count) => self.decided(count),
            // An append that found a pause: its statement, its own
            // transaction, committed nothing.
            Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => Ok(false),
            Err(error) => Err(match Failure::from(error) {
                retry @ Failure::Server { retry: true, .. } => retry,
                // The server refused the statement: it committed nothing.
                refused @ Failure::Server { .. } => refused,
                Failure::Lost(error) | Failure::Unknown(error) => Failure::Unknown(error),
                other @ (Failure::Answer(_) | Failure::Raced) => other,
            }),
        }
    }

    /// Whether a count of affected rows is the write's (1) or none (0).
    fn decided(&self, count: u64) -> Result<bool, Failure> {
        match count {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(corrupt(&self.run_id, "one Run's write affected several rows").into()),
        }
    }
}

/// A one-statement form's write, its own transaction: sent alone
/// (autocommit; by a log that requires a synchronous standby on one
/// server, with the guard's test in its `WHERE`), or, by such a log on
/// tables distributed by root Run, in a transaction of its own with the
/// guard ([`guarded`]).
async fn one_statement<W>(
    conn: &Conn<'_>,
    write: W,
) -> Result<Result<u64, tokio_postgres::Error>, Failure>
where
    W: Future<Output = Result<u64, tokio_postgres::Error>>,
{
    if conn.sql.guard_inline {
        return match write.await {
            Err(error) if NoSynchronousStandby::is(&error) => Err(refused(error)),
            written => Ok(written),
        };
    }
    match conn.guard().await? {
        None => Ok(write.await),
        Some(guard) => guarded(conn, &guard, write).await,
    }
}
