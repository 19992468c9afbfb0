//! [`SqliteLog`]: the default [`HandoffLog`], one SQLite file (feature
//! `sqlite`, SQLite bundled: no system library needed).
#![cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::log::{AppendStep, HandoffLog, LogError, Receipt, append_step, check_append, check_run};
use super::reconcile::{Appended, RunFacts};
use crate::facts::{HandoffPause, Invocation, from_json};
use crate::sync::{Mutex, lock};

/// The schema version this baton writes and reads, kept in SQLite's
/// `PRAGMA user_version` (0 means "no schema yet").
pub const SCHEMA_VERSION: i64 = 1;

/// Schema version 1. One row per handed-off Run: the primary key is the Run
/// (`root_run_id`, `run_id`), so a second pause for a Run cannot be stored.
/// The pause is kept whole as JSON; the key columns are broken out for
/// queries and checked against it on every read.
const SCHEMA_V1: &str = "
CREATE TABLE handoff_pause (
    root_run_id             TEXT NOT NULL,
    run_id                  TEXT NOT NULL,
    session_id              TEXT NOT NULL,
    turn_id                 TEXT NOT NULL,
    invocation_id           TEXT NOT NULL,
    handoff_id              TEXT NOT NULL,
    successor_run_id        TEXT NOT NULL,
    successor_invocation_id TEXT NOT NULL,
    pause                   TEXT NOT NULL CHECK (json_valid(pause)),
    PRIMARY KEY (root_run_id, run_id)
) STRICT, WITHOUT ROWID;
";

/// How long a connection waits for another's write lock before the
/// operation fails with [`LogError::Storage`].
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The durable handoff log in one SQLite file: WAL journal,
/// `synchronous = FULL` (a commit returns only after the WAL is synced, so an
/// acknowledged append survives a crash of the process and of the machine),
/// one row per handed-off Run, the schema version in `PRAGMA user_version`.
///
/// Several processes may open the same file; appends are serialised by
/// SQLite's write lock (`BEGIN IMMEDIATE`), so two workers racing to hand off
/// one Run cannot both succeed.
///
/// ```
/// use baton::durable::{HandoffLog, SqliteLog, reconcile, Decision};
///
/// let path = std::env::temp_dir().join(format!("baton-doc-{}.sqlite", std::process::id()));
/// let log = SqliteLog::open(&path)?;
/// let facts = HandoffLog::<u32>::facts(&log, "root-run", "run")?;
/// assert_eq!(reconcile(&facts), Ok(Decision::Resumable));
/// # drop(log);
/// # for suffix in ["", "-wal", "-shm"] {
/// #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
/// # }
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub struct SqliteLog {
    connection: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let connection = lock(&self.connection);
        f.debug_struct("SqliteLog")
            .field("path", &connection.path())
            .finish()
    }
}

fn storage(error: rusqlite::Error) -> LogError {
    LogError::Storage(Box::new(error))
}

fn corrupt(run_id: &str, reason: impl std::fmt::Display) -> LogError {
    LogError::Corrupt {
        run_id: run_id.to_owned(),
        reason: reason.to_string(),
    }
}

impl SqliteLog {
    /// Opens (creating if needed) the log at `path`: sets the WAL journal
    /// and `synchronous = FULL`, and creates the schema in one transaction
    /// if the file has none.
    ///
    /// # Errors
    ///
    /// [`LogError::UnknownSchema`] if the file records another schema
    /// version (or has a `handoff_pause` table but no version);
    /// [`LogError::Storage`] if it cannot be opened or is not a database.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LogError> {
        let mut connection = Connection::open(path).map_err(storage)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(storage)?;
        let mode: String = connection
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(storage)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(LogError::Storage(
                format!("the journal mode is {mode:?}, not WAL (an in-memory database?)").into(),
            ));
        }
        connection
            .pragma_update(None, "synchronous", "FULL")
            .map_err(storage)?;
        Self::migrate(&mut connection)?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    /// Creates schema version 1 in an empty file, atomically with its
    /// version number: a crash leaves either no schema or all of it.
    fn migrate(connection: &mut Connection) -> Result<(), LogError> {
        if Self::version(connection)? == SCHEMA_VERSION {
            return Ok(()); // the common case, without taking the write lock
        }
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(storage)?;
        // Again under the write lock: another process may have just made it.
        match Self::version(&transaction)? {
            SCHEMA_VERSION => return Ok(()),
            0 => {}
            found => {
                return Err(LogError::UnknownSchema {
                    found,
                    expected: SCHEMA_VERSION,
                });
            }
        }
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
        transaction
            .pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(storage)?;
        transaction.commit().map_err(storage)
    }

    fn version(connection: &Connection) -> Result<i64, LogError> {
        connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(storage)
    }

    /// The row stored for a Run, decoded and checked against its columns.
    fn read<P: DeserializeOwned>(
        connection: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Option<Appended<P>>, LogError> {
        let row = connection
            .query_row(
                "SELECT session_id, turn_id, invocation_id, handoff_id, \
                        successor_run_id, successor_invocation_id, pause \
                 FROM handoff_pause WHERE root_run_id = ?1 AND run_id = ?2",
                params![root_run_id, run_id],
                |row| {
                    Ok((
                        Invocation {
                            session_id: row.get(0)?,
                            turn_id: row.get(1)?,
                            run_id: run_id.to_owned(),
                            invocation_id: row.get(2)?,
                        },
                        [row.get::<_, String>(3)?, row.get(4)?, row.get(5)?],
                        row.get::<_, String>(6)?,
                    ))
                },
            )
            .optional()
            .map_err(storage)?;
        let Some((source, columns, json)) = row else {
            return Ok(None);
        };
        let pause: HandoffPause<P> = from_json(json.as_bytes())
            .map_err(|error| corrupt(run_id, format_args!("the pause does not decode: {error}")))?;
        let intent = &pause.intent;
        let in_json = [
            &intent.handoff_id,
            &intent.successor_run_id,
            &intent.successor_invocation_id,
        ];
        if columns.iter().ne(in_json) || intent.root_run_id != root_run_id {
            return Err(corrupt(
                run_id,
                "the key columns disagree with the stored pause",
            ));
        }
        Ok(Some(Appended { source, pause }))
    }
}

impl<P> HandoffLog<P> for SqliteLog
where
    P: PartialEq + Serialize + DeserializeOwned,
{
    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        check_append(root_run_id, source, pause)?;
        let json = serde_json::to_string(pause).map_err(LogError::Encode)?;
        let mut connection = lock(&self.connection);
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(storage)?;
        let existing = Self::read::<P>(&transaction, root_run_id, &source.run_id)?;
        match append_step(root_run_id, existing.as_ref(), (source, pause))? {
            AppendStep::Idempotent => Ok(Receipt::AlreadyDurable),
            AppendStep::Write => {
                let intent = &pause.intent;
                transaction
                    .execute(
                        "INSERT INTO handoff_pause (root_run_id, run_id, session_id, turn_id, \
                             invocation_id, handoff_id, successor_run_id, \
                             successor_invocation_id, pause) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                        params![
                            root_run_id,
                            source.run_id,
                            source.session_id,
                            source.turn_id,
                            source.invocation_id,
                            intent.handoff_id,
                            intent.successor_run_id,
                            intent.successor_invocation_id,
                            json,
                        ],
                    )
                    .map_err(storage)?;
                // With `synchronous = FULL`, COMMIT returns after the WAL is
                // synced: only now is the append acknowledged.
                transaction.commit().map_err(storage)?;
                Ok(Receipt::Written)
            }
        }
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        check_run(root_run_id, run_id)?;
        let connection = lock(&self.connection);
        let row = Self::read(&connection, root_run_id, run_id)?;
        Ok(RunFacts {
            root_run_id: root_run_id.to_owned(),
            run_id: run_id.to_owned(),
            pauses: row.into_iter().collect(),
        })
    }
}

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;
