//! Setting up a file: the WAL journal, `synchronous = FULL`, and the
//! schema made or upgraded in one transaction.

use std::time::SystemTime;

use rusqlite::{Connection, TransactionBehavior};

use crate::durable::contract::LogError;

use super::SqliteLog;
use super::error::{not_a_log_or_storage, storage};
#[cfg(test)]
use super::inside;
use super::schema::{
    MIGRATE_V2, MIGRATE_V3, MIGRATE_V4, SCHEMA_V1, SCHEMA_VERSION, micros, version,
};

impl<P> SqliteLog<P> {
    /// The WAL journal, `synchronous = FULL`, and the schema at
    /// [`SCHEMA_VERSION`]: each step idempotent, so that after "database
    /// is locked" the whole may run again.
    pub(super) fn set_up(connection: &mut Connection) -> Result<(), LogError> {
        let mode: String = connection
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(not_a_log_or_storage)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(LogError::NotALog {
                reason: format!(
                    "the journal mode is {mode:?}, not WAL: an in-memory database cannot be durable"
                ),
                source: None,
            });
        }
        connection
            .pragma_update(None, "synchronous", "FULL")
            .map_err(storage)?;
        Self::migrate(connection)
    }

    /// Brings the file to [`SCHEMA_VERSION`] in one transaction: creates
    /// the schema in an empty file, or upgrades a version-1 or version-2
    /// file in place, atomically with the version number, so a crash
    /// leaves the old version or the new one whole.
    pub(super) fn migrate(connection: &mut Connection) -> Result<(), LogError> {
        if version(connection)? == SCHEMA_VERSION {
            return Ok(()); // the common case, without taking the write lock
        }
        #[cfg(test)]
        inside::set_up_reached(inside::SetUpPoint::BeforeTheWriteLock);
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(storage)?;
        // Again under the write lock: another process may have just made it.
        match version(&transaction)? {
            SCHEMA_VERSION => return Ok(()),
            0 => {
                let foreign: bool = transaction
                    .query_row(
                        "SELECT count(*) > 0 FROM sqlite_schema WHERE name = 'handoff_pause'",
                        [],
                        |row| row.get(0),
                    )
                    .map_err(storage)?;
                if foreign {
                    return Err(LogError::UnknownSchema {
                        found: 0,
                        expected: SCHEMA_VERSION,
                    });
                }
                transaction.execute_batch(SCHEMA_V1).map_err(storage)?;
                transaction.execute_batch(MIGRATE_V2).map_err(storage)?;
            }
            1 => transaction.execute_batch(MIGRATE_V2).map_err(storage)?,
            2 | 3 => {}
            found => {
                return Err(LogError::UnknownSchema {
                    found,
                    expected: SCHEMA_VERSION,
                });
            }
        }
        if version(&transaction)? < 3 {
            transaction.execute_batch(MIGRATE_V3).map_err(storage)?;
        }
        let now = micros(SystemTime::now());
        transaction
            .execute_batch(&MIGRATE_V4.replace("{now}", &now.to_string()))
            .map_err(storage)?;
        transaction
            .pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(storage)?;
        #[cfg(test)]
        inside::set_up_reached(inside::SetUpPoint::BeforeTheCommit);
        transaction.commit().map_err(storage)?;
        #[cfg(test)]
        inside::set_up_reached(inside::SetUpPoint::AfterTheCommit);
        Ok(())
    }
}
