//! How a SQLite error is answered: unavailable, not a log, or an unknown
//! outcome when a commit failed.

use crate::durable::contract::LogError;

/// Whether `error` is SQLite's "database is locked" (`SQLITE_BUSY`).
pub(super) fn is_busy(error: &LogError) -> bool {
    let LogError::Unavailable(error) = error else {
        return false;
    };
    error
        .downcast_ref::<rusqlite::Error>()
        .and_then(rusqlite::Error::sqlite_error_code)
        == Some(rusqlite::ErrorCode::DatabaseBusy)
}

/// A failure before the transaction's commit: nothing was written.
pub(super) fn storage(error: rusqlite::Error) -> LogError {
    LogError::Unavailable(Box::new(error))
}

/// An error opening the file: [`LogError::NotALog`] if SQLite says it is
/// not a database (permanent), else [`storage`].
pub(super) fn not_a_log_or_storage(error: rusqlite::Error) -> LogError {
    if error.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
        return LogError::NotALog {
            reason: "the file is not an SQLite database".into(),
            source: Some(Box::new(error)),
        };
    }
    storage(error)
}

/// A failed commit of a transaction that wrote: SQLite's journal makes
/// the transaction whole or absent, but which one is not known here.
pub(super) fn commit_failed(error: rusqlite::Error) -> LogError {
    LogError::OutcomeUnknown(Box::new(error))
}
