//! Why an attempt at an operation failed, as the server's errors are
//! classified: retried, unavailable, or an unknown outcome; and the
//! reading of stored values whose failure is a corrupt row.

use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use crate::durable::contract::{Epoch, LogError};
use crate::durable::row::corrupt;

pub(super) fn unavailable(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> LogError {
    LogError::Unavailable(error.into())
}

/// Why one attempt at an operation's transaction did not succeed.
pub(super) enum Failure {
    /// The log's answer (a refusal, bad facts): returned as it is.
    Answer(LogError),
    /// The server answered an error; `retry` if it is a serialization
    /// failure or a deadlock, else it is [`LogError::Unavailable`]. The
    /// transaction did not commit.
    Server {
        error: tokio_postgres::Error,
        retry: bool,
    },
    /// A Run's first claim lost the race to insert its row: run again.
    Raced,
    /// The connection failed before the commit was sent: nothing
    /// committed; run again on a new connection.
    Lost(tokio_postgres::Error),
    /// The connection failed while the commit was in flight: the outcome
    /// is unknown.
    Unknown(tokio_postgres::Error),
}

impl From<LogError> for Failure {
    fn from(error: LogError) -> Self {
        Failure::Answer(error)
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        match error.code() {
            // The server ends the session: shutting down, crashed, or the
            // connection is broken (classes 57P and 08).
            Some(code) if code.code().starts_with("57P") || code.code().starts_with("08") => {
                Failure::Lost(error)
            }
            Some(code) => {
                let retry = *code == SqlState::T_R_SERIALIZATION_FAILURE
                    || *code == SqlState::T_R_DEADLOCK_DETECTED;
                Failure::Server { error, retry }
            }
            None => Failure::Lost(error),
        }
    }
}

/// An epoch as stored (`bigint`).
pub(super) fn stored(epoch: Epoch) -> Result<i64, LogError> {
    i64::try_from(epoch.get()).map_err(|_| LogError::EpochsExhausted)
}

/// A stored epoch (column `index`) as an [`Epoch`]: positive, as the
/// schema's check says.
pub(super) fn epoch_of(row: &Row, index: usize, run_id: &str) -> Result<Epoch, Failure> {
    let value: i64 = column(row, index, run_id)?;
    match u64::try_from(value) {
        Ok(epoch) if epoch > 0 => Ok(Epoch::new(epoch)),
        _ => Err(corrupt(run_id, "the stored epoch is not positive").into()),
    }
}

/// Column `index` of a row read for the Run `run_id`; a column of another
/// type than baton's schema says means the table was altered outside baton.
pub(super) fn column<T>(row: &Row, index: usize, run_id: &str) -> Result<T, Failure>
where
    T: for<'r> tokio_postgres::types::FromSql<'r>,
{
    row.try_get(index)
        .map_err(|error| corrupt(run_id, format_args!("column {index}: {error}")).into())
}
