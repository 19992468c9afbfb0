//! One attempt at an operation's transaction: its flights, its write and
//! its commit.

use std::future::Future;
use std::sync::atomic::Ordering;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::durable::contract::RunFacts;
use crate::durable::fence::{AppendStep, Fate, append_step, claim_step_above, finish_step};
use crate::durable::row::corrupt;

use super::decide::{decide, finish_params, floor_of, pause_params};
use super::end::{abort, commit, guarded, refused};
use super::failure::{Failure, stored};
use super::flight::{flight2, flight3};
use super::op::{Answer, Op};
use super::read::{Reading, RunRead};
use super::replication::NoSynchronousStandby;
use super::sql::{Conn, Layout, Param, Which};

/// One attempt at `op`'s transaction, in two flights: `BEGIN` (with its
/// `SET LOCAL` timeouts), the Run's row lock (which returns its epoch and
/// its finish), its pause read and its root Run's tombstone read together;
/// then the write and `COMMIT` together (or `COMMIT` alone when there is
/// nothing to write, `ROLLBACK` after a refusal). A retirement's first
/// flight locks the root Run's row and then every Run of it (see
/// [`RootRead`](super::read::RootRead) and [`one_root`](super::sweep::one_root)).
///
/// The server runs a flight's statements in order, each to its end before
/// the next, so the pause and the tombstone are read by statements of
/// their own after the lock is held, with a snapshot taken then (`READ
/// COMMITTED`): nothing written by another transaction of the Run can come
/// between what this one reads and what it writes, as every writer takes
/// the same lock first (a retirement too, for every Run of its root). If a
/// statement fails, the server refuses the rest of its transaction, and a
/// `COMMIT` sent with a failed write rolls back.
pub(super) async fn transaction<P>(conn: &Conn<'_>, op: &Op<'_, P>) -> Result<Answer<P>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    if let Some(answer) = write_if_as_assumed(conn, op).await? {
        return Ok(answer);
    }
    let client: &Client = conn.client;
    let begin = match op {
        Op::Facts { .. } => &conn.sql.begin_read,
        _ => &conn.sql.begin_write,
    };
    if let Op::Sweep { roots, before } = *op {
        return super::sweep::batch::<P>(conn, roots, before).await;
    }
    if let Op::Retire { root_run_id } = *op {
        return super::sweep::one_root::<P>(conn, root_run_id, None).await;
    }
    let (root_run_id, run_id) = op.run();
    let read = RunRead::prepare(conn, Reading::of(op)).await?;
    let (begun, facts) = flight2(
        client.batch_execute(begin),
        read.read(client, root_run_id, run_id),
    )
    .await;
    let decided = begun
        .map_err(Failure::from)
        .and(facts)
        .and_then(|(locked, facts, timeline)| {
            if let Some(timeline) = timeline {
                conn.sql.timeline.store(timeline, Ordering::Relaxed);
            }
            decide(op, facts, locked, timeline)
        });
    let (answer, write) = match decided {
        Ok(decided) => decided,
        Err(failure) => return Err(abort(client, failure).await),
    };
    let Some(write) = write else {
        commit(conn, None::<std::future::Ready<_>>).await?;
        return Ok(answer);
    };
    let statement = match conn.statement(write.which()).await {
        Ok(statement) => statement,
        Err(failure) => return Err(abort(client, failure).await),
    };
    let params = write.params(op, conn.sql.layout);
    let count = commit(conn, Some(statement.execute(client, &params))).await?;
    write.check(count, run_id)?;
    Ok(answer)
}

/// The one-statement form of a claim or an append, tried first: the pure
/// rule is asked what it does for the facts an operation usually finds —
/// a Run's first claim finds no row (no epoch, no pause: a pause needs the
/// Run's row), an append finds its own epoch current and no pause — and
/// one statement writes what the rule answered *only if* the Run's facts
/// are those, deciding by its count of affected rows: the claim's
/// `INSERT … ON CONFLICT DO NOTHING`, the append's insert from the Run's
/// row locked at the append's epoch (`FOR UPDATE`: a claim that would
/// move the epoch waits for it, or it for the claim, which it then sees),
/// refused by the pause's primary key if a pause is there (a unique
/// violation: nothing written). The statement is its own
/// transaction (autocommit), so the write is durable in one round trip,
/// like the bare store's own insert; a log that requires a synchronous
/// standby sends it in a transaction of its own with the guard, still in
/// one flight ([`one_statement`]). `None` when the facts are not those
/// (no row affected, or the pause's key refused it: nothing written): the
/// operation then runs its
/// transaction, which reads the facts under the lock and asks the rule
/// again. `Facts` and any claim or append for which the rule does not
/// write on those facts have no such form.
///
/// A failure of the statement is read as a commit's: a serialization
/// failure or a deadlock committed nothing (run again); a connection lost
/// while it was in flight may have committed (unknown).
pub(super) async fn write_if_as_assumed<P>(
    conn: &Conn<'_>,
    op: &Op<'_, P>,
) -> Result<Option<Answer<P>>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let client: &Client = conn.client;
    let (written, answer) = match *op {
        Op::Facts { .. } | Op::Retire { .. } | Op::Sweep { .. } => return Ok(None),
        Op::Finish { .. } => return finish_in_one_flight(conn, op).await,
        // Distributed by root Run, the first claim is sent only in the
        // transaction that read the root's server's timeline (see `Sql`).
        Op::Claim { .. } if conn.sql.layout == Layout::ByRootRun => return Ok(None),
        Op::Claim {
            root_run_id,
            run_id,
        } => {
            // On the timeline this log last read: the statement writes
            // only if it is the server's (else the transaction reads it).
            let timeline = conn.sql.timeline.load(Ordering::Relaxed);
            let empty = RunFacts::<P>::empty(root_run_id, run_id);
            let step = claim_step_above(&empty, floor_of(timeline))?;
            let Some(epoch) = step.write else {
                return Ok(None);
            };
            let Ok(new) = stored(epoch) else {
                return Ok(None);
            };
            let insert = conn.statement(Which::InsertRun).await?;
            let params: [Param<'_>; 4] = [&root_run_id, &run_id, &new, &timeline];
            let inserted = one_statement(conn, insert.execute(client, &params)).await?;
            (inserted, Answer::Claim(step.answer))
        }
        Op::Append {
            root_run_id,
            source,
            epoch,
            pause,
            ref json,
        } => {
            // The rule on the facts the statement requires: the append's
            // epoch is the Run's, and the Run is open (no pause, no finish,
            // its root Run not retired: the Run has its row).
            let step = match append_step(root_run_id, epoch, Fate::Open, epoch, (source, pause)) {
                Ok(step) => step,
                Err(_) => return Ok(None),
            };
            if step != AppendStep::Write {
                return Ok(None);
            }
            let Ok(at) = stored(epoch) else {
                return Ok(None); // no such epoch is stored: the rule refuses it
            };
            let insert = conn.statement(Which::AppendIfCurrent).await?;
            let params = pause_params(&root_run_id, source, pause, json, &at);
            let inserted = one_statement(conn, insert.execute(client, &params)).await?;
            (inserted, Answer::Receipt(step.receipt()))
        }
    };
    match written {
        Ok(1) => Ok(Some(answer)),
        Ok(0) => Ok(None),
        Ok(_) => Err(corrupt(op.run().1, "one Run's write affected several rows").into()),
        // The append found a pause: its statement, its own transaction,
        // committed nothing.
        Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => Ok(None),
        Err(error) => Err(match Failure::from(error) {
            retry @ Failure::Server { retry: true, .. } => retry,
            // The server refused the statement: it committed nothing.
            refused @ Failure::Server { .. } => refused,
            Failure::Lost(error) | Failure::Unknown(error) => Failure::Unknown(error),
            other @ (Failure::Answer(_) | Failure::Raced) => other,
        }),
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

/// The one-flight form of a finish, tried first: the pure rule is asked
/// what it does for the facts a finish usually finds — its epoch current,
/// the Run open — and one flight sends its whole transaction: `BEGIN`
/// (with its `SET LOCAL` timeouts), the Run's row lock (`LockRun`), the
/// finish only if the Run's facts are those (`FinishIfNoPause`: its epoch,
/// no finish, no pause), and `COMMIT`. One round trip, where the
/// transaction's two flights take two. A finish cannot be one statement
/// as an append is: an append holds the Run's row lock without changing
/// the row, so a statement that waited for it would still read the pause
/// table with the snapshot it took before waiting and miss the pause. Here
/// the finish is a statement of its own, after the lock: its snapshot sees
/// whatever the lock's holder committed. `None` when the facts are not
/// those (no row updated; the `COMMIT` committed nothing): the operation
/// then runs its transaction, which reads the facts under the lock and
/// asks the rule again.
///
/// A failure of the lock (a lock timeout, a deadlock) aborted the
/// transaction before the finish, and the `COMMIT` sent after it rolled
/// back: it is answered as the lock's failure. Any other failure is read
/// as a commit's.
async fn finish_in_one_flight<P>(
    conn: &Conn<'_>,
    op: &Op<'_, P>,
) -> Result<Option<Answer<P>>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let Op::Finish {
        root_run_id,
        source,
        epoch,
        outcome,
        ref json,
    } = *op
    else {
        return Ok(None);
    };
    let step = match finish_step(root_run_id, epoch, Fate::Open, epoch, (source, outcome)) {
        Ok(step) => step,
        Err(_) => return Ok(None),
    };
    if step != AppendStep::Write {
        return Ok(None);
    }
    let Ok(at) = stored(epoch) else {
        return Ok(None); // no such epoch is stored: the rule refuses it
    };
    let client: &Client = conn.client;
    let lock = conn.statement(Which::LockRun).await?;
    let finish = conn.statement(Which::FinishIfNoPause).await?;
    let key: [Param<'_>; 2] = [&root_run_id, &source.run_id];
    let params = finish_params(&root_run_id, source, json, &at);
    let (begun, locked, committed) = flight3(
        client.batch_execute(&conn.sql.begin_write),
        lock.query_opt(client, &key),
        commit(conn, Some(finish.execute(client, &params))),
    )
    .await;
    let aborted = [begun.err(), locked.err()]
        .into_iter()
        .flatten()
        .find(|error| error.code().is_some());
    if let Some(error) = aborted {
        return Err(error.into());
    }
    match committed? {
        1 => Ok(Some(Answer::Receipt(step.receipt()))),
        0 => Ok(None),
        _ => Err(corrupt(&source.run_id, "one Run's write affected several rows").into()),
    }
}
