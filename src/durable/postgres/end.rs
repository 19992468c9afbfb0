//! How an operation's transaction ends: its commit, sent with its write
//! (and the guard of a log that requires a synchronous standby), or its
//! abort after a refusal or a failed statement.

use std::future::Future;

use tokio_postgres::Client;

use super::failure::Failure;
use super::flight::{flight2, flight3};
use super::replication::NoSynchronousStandby;
use super::sql::Conn;
use crate::durable::contract::LogError;

/// Ends a transaction that will not commit (a refusal, a failed
/// statement): `ROLLBACK`, unless the connection is gone. The failure to
/// answer.
pub(super) async fn abort(client: &Client, failure: Failure) -> Failure {
    if matches!(failure, Failure::Lost(_)) {
        return failure;
    }
    match client.batch_execute("ROLLBACK").await {
        Ok(()) => failure,
        Err(error) => Failure::from(error),
    }
}

/// Sends `write` (if any) and `COMMIT` in one flight; the write's count of
/// affected rows (0 without a write). A log that requires a synchronous
/// standby sends its guard first in the same flight, so a write is
/// committed only if the server, as the write runs, waits for a standby:
/// else the guard aborts the transaction, the write is not made, the
/// `COMMIT` rolls back, and the answer is [`refused`].
pub(super) async fn commit<W>(conn: &Conn<'_>, write: Option<W>) -> Result<u64, Failure>
where
    W: Future<Output = Result<u64, tokio_postgres::Error>>,
{
    let client = conn.client;
    let guard = match write {
        Some(_) => match conn.guard().await {
            Ok(guard) => guard,
            Err(failure) => return Err(abort(client, failure).await),
        },
        None => None,
    };
    let (written, committed) = match (write, guard) {
        (Some(write), Some(guard)) => {
            let (guarded, written, committed) = flight3(
                guard.execute(client, &[]),
                write,
                client.batch_execute("COMMIT"),
            )
            .await;
            match guarded {
                // The write and the COMMIT found the transaction aborted.
                Err(error) if committed.is_ok() && error.code().is_some() => {
                    return Err(refused(error));
                }
                Err(error) => (Err(error), committed),
                Ok(_) => (written, committed),
            }
        }
        (Some(write), None) => flight2(write, client.batch_execute("COMMIT")).await,
        (None, _) => (Ok(0), client.batch_execute("COMMIT").await),
    };
    match (written, committed) {
        (Ok(count), Ok(())) => Ok(count),
        // The write failed on the server: its transaction was aborted, and
        // the COMMIT sent with it rolled back.
        (Err(error), Ok(())) if error.code().is_some() => Err(error.into()),
        (Ok(_), Err(error)) | (Err(_), Err(error)) | (Err(error), Ok(())) => {
            Err(match Failure::from(error) {
                // A serialization failure or a deadlock at the commit:
                // nothing committed, run again.
                retry @ Failure::Server { retry: true, .. } => retry,
                // Anything else once the commit was sent (a lost
                // connection, the server ending the session): it may have
                // committed.
                Failure::Server { error, .. } | Failure::Lost(error) | Failure::Unknown(error) => {
                    Failure::Unknown(error)
                }
                other @ (Failure::Answer(_) | Failure::Raced) => other,
            })
        }
    }
}

/// A write that is its own transaction (a one-statement form), of a log
/// that requires a synchronous standby: `BEGIN`, the guard, the write and
/// `COMMIT`, in one flight. What the write answered, as if it had been
/// sent alone (its `COMMIT`'s failure, if that failed: the write may have
/// committed), or the guard's refusal ([`refused`]: nothing written).
pub(super) async fn guarded<W>(
    conn: &Conn<'_>,
    guard: &super::sql::Stmt<'_>,
    write: W,
) -> Result<Result<u64, tokio_postgres::Error>, Failure>
where
    W: Future<Output = Result<u64, tokio_postgres::Error>>,
{
    let client = conn.client;
    let ((begun, guarded), (written, committed)) = flight2(
        flight2(client.batch_execute("BEGIN"), guard.execute(client, &[])),
        flight2(write, client.batch_execute("COMMIT")),
    )
    .await;
    match (begun.and(guarded.map(|_| ())), written, committed) {
        // The guard (or the BEGIN) failed on the server: the write was
        // not made, and the COMMIT rolled back.
        (Err(error), _, Ok(())) if error.code().is_some() => Err(refused(error)),
        (_, Ok(count), Ok(())) => Ok(Ok(count)),
        // The write failed on the server; the COMMIT rolled back.
        (_, Err(error), Ok(())) => Ok(Err(error)),
        (_, _, Err(error)) => Ok(Err(error)),
    }
}

/// The failure of a flight whose guard (or whose `BEGIN`) failed on the
/// server, its transaction rolled back: the guard's refusal,
/// [`LogError::Unavailable`] with [`NoSynchronousStandby`] as its source,
/// or the server's other error as it is.
pub(super) fn refused(error: tokio_postgres::Error) -> Failure {
    match error.as_db_error().and_then(NoSynchronousStandby::raised) {
        Some(refusal) => Failure::Answer(LogError::Unavailable(Box::new(refusal))),
        None => error.into(),
    }
}
