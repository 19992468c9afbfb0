//! One attempt at an operation's transaction: its flights, its write and
//! its commit.

use std::sync::atomic::Ordering;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::Client;

use super::assumed::Assumed;
use super::decide::decide;
use super::end::{abort, commit};
use super::failure::Failure;
use super::flight::flight2;
use super::op::{Answer, Op};
use super::read::{Reading, RunRead};
use super::sql::Conn;

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
///
/// With `assume`, the operation's write on the facts it usually finds is
/// tried first, alone ([`write_if_as_assumed`]); without, a group commit
/// has just found the facts other.
pub(super) async fn transaction<P>(
    conn: &Conn<'_>,
    op: &Op<'_, P>,
    assume: bool,
) -> Result<Answer<P>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    if assume {
        if let Some(answer) = write_if_as_assumed(conn, op).await? {
            return Ok(answer);
        }
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

/// The write of `op` on the facts it usually finds ([`Assumed`]), sent
/// alone first: its answer if it was written, `None` (nothing written) if
/// the facts are other or `op` has no such write; the operation then runs
/// its transaction, which reads the facts under the lock and asks the rule
/// again.
pub(super) async fn write_if_as_assumed<P>(
    conn: &Conn<'_>,
    op: &Op<'_, P>,
) -> Result<Option<Answer<P>>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let timeline = conn.sql.timeline.load(Ordering::Relaxed);
    let Some(assumed) = Assumed::of(op, conn.sql.layout, timeline) else {
        return Ok(None);
    };
    Ok(assumed.write.alone(conn).await?.then_some(assumed.answer))
}
