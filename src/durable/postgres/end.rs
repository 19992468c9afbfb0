//! How an operation's transaction ends: its commit, sent with its write,
//! or its abort after a refusal or a failed statement.

use std::future::Future;

use tokio_postgres::Client;

use super::failure::Failure;
use super::flight::flight2;

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
/// affected rows (0 without a write).
pub(super) async fn commit<W>(client: &Client, write: Option<W>) -> Result<u64, Failure>
where
    W: Future<Output = Result<u64, tokio_postgres::Error>>,
{
    let (written, committed) = match write {
        Some(write) => flight2(write, client.batch_execute("COMMIT")).await,
        None => (Ok(0), client.batch_execute("COMMIT").await),
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
