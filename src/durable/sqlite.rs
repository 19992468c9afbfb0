//! [`SqliteLog`]: the [`HandoffLog`] for one host, one SQLite file
//! (feature `sqlite`, off by default; SQLite bundled: no system library
//! needed).
#![cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]

use std::future::Future;
use std::marker::PhantomData;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{
    Connection, OptionalExtension, Transaction, TransactionBehavior, TransactionState, params,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::contract::{
    Appended, AsyncHandoffLog, Claim, Epoch, Finished, HandoffLog, LogError, Receipt,
    ReconcileError, Retirement, RunFacts, check_run,
};
use super::fence::{AppendStep, Fate, append_step, claim_step, finish_step, retire_step};
use super::offload::Offload;
use super::row::{checked_row, corrupt, decoded_outcome};
use crate::facts::{HandoffPause, Invocation};
use crate::sync::{Arc, Mutex, lock};

/// The SQLite crate baton is built with, re-exported so that a runtime
/// opening its own [`Connection`] for the writes inside its transaction
/// ([`SqliteLog::claim_in`] and its siblings) names the very version whose
/// [`Transaction`] they take.
pub use rusqlite;

#[path = "sqlite_op.rs"]
mod op;

use self::op::{Answer, Op};

/// The schema version this baton writes and reads, kept in SQLite's
/// `PRAGMA user_version` (0 means "no schema yet"). A file of version 1
/// (before owner epochs), 2 (before finishing and retention) or 3 (before
/// retention by age) is upgraded in place when opened.
pub const SCHEMA_VERSION: i64 = 4;

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

/// Version 1 → 2: owner epochs (SPEC §6). `run_epoch` holds each claimed
/// Run's current epoch (a Run never claimed has no row: epoch 0); each pause
/// row records the epoch it was appended under (0 for rows of version 1,
/// written before epochs existed).
const MIGRATE_V2: &str = "
ALTER TABLE handoff_pause ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0 CHECK (epoch >= 0);
CREATE TABLE run_epoch (
    root_run_id TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    epoch       INTEGER NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id)
) STRICT, WITHOUT ROWID;
";

/// Version 2 → 3: finishing and retention (R8, R9, R10). `run_finish`
/// holds each finished Run's outcome (as JSON), the invocation that
/// finished it and the epoch it finished under; `retired_root` holds one
/// tombstone per retired root Run, whose other rows are gone. Every table
/// is keyed by the root Run first, so a retirement finds a root's Runs by
/// its primary keys, and a claim or a write finds its tombstone by one
/// primary-key lookup, however many roots were retired.
const MIGRATE_V3: &str = "
CREATE TABLE run_finish (
    root_run_id   TEXT NOT NULL,
    run_id        TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    turn_id       TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    outcome       TEXT NOT NULL CHECK (json_valid(outcome)),
    epoch         INTEGER NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE retired_root (
    root_run_id TEXT NOT NULL PRIMARY KEY
) STRICT, WITHOUT ROWID;
";

/// Version 3 → 4: retention by age (SPEC §6.1, G5). Each pause and each
/// finish records when it was written (`ended_at`, microseconds since the
/// UNIX epoch, by the writing process's clock); rows written before take
/// the time of the upgrade (`{now}`). The finishes are indexed by that
/// time, so a sweep ([`SqliteLog::retire_ended`]) reads only the finishes
/// it looks at, oldest first.
const MIGRATE_V4: &str = "
ALTER TABLE handoff_pause ADD COLUMN ended_at INTEGER;
ALTER TABLE run_finish ADD COLUMN ended_at INTEGER;
UPDATE handoff_pause SET ended_at = {now};
UPDATE run_finish SET ended_at = {now};
CREATE INDEX run_finish_by_end ON run_finish (ended_at, root_run_id);
";

/// Whether a root Run is retired: its tombstone, found by primary key
/// (so a claim's or a write's cost does not grow with the number of
/// retired roots).
const RETIRED: &str = "SELECT EXISTS (SELECT 1 FROM retired_root WHERE root_run_id = ?1)";

/// Every Run the log holds a row for under a root Run, each once: an
/// epoch, a pause (a version-1 file's has no epoch) or a finish. Each
/// table is searched by the leading column of its primary key.
const RUNS_OF: &str = "SELECT run_id FROM run_epoch WHERE root_run_id = ?1 \
     UNION SELECT run_id FROM handoff_pause WHERE root_run_id = ?1 \
     UNION SELECT run_id FROM run_finish WHERE root_run_id = ?1 \
     ORDER BY run_id";

/// How long a connection waits for another's write lock before the
/// operation fails with [`LogError::Unavailable`].
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The durable handoff log in one SQLite file: WAL journal,
/// `synchronous = FULL` (a commit returns only after the WAL is synced, so an
/// acknowledged append survives a crash of the process and of the machine),
/// one row per handed-off or finished Run and per retired root Run, the
/// schema version in `PRAGMA user_version`.
///
/// Several processes may open the same file. Each claim, append, finish
/// and retirement is one transaction that takes SQLite's write lock
/// before its first read (`BEGIN IMMEDIATE`), so nothing comes between
/// what it reads (the root's tombstone, the Run's epoch, pause and finish)
/// and what it writes: two claims never issue one epoch,
/// two workers racing to hand off one Run cannot both succeed, and a claim
/// and a zombie's append are ordered one way or the other.
///
/// Finishing and retirement are transactions of the same shape:
/// [`finish`](HandoffLog::finish) is fenced as an append and writes the
/// Run's outcome; [`retire`](HandoffLog::retire) reads every Run of a root
/// Run, and once all are final deletes their rows and writes one
/// tombstone for the root, so a claim under it answers
/// [`Claim::Retired`] and a zombie's write is refused
/// ([`LogError::Retired`]).
///
/// Schema version 4 keeps, beside the pause rows, a table of each claimed
/// Run's epoch (version 2), a table of finished Runs' outcomes and one of
/// retired roots' tombstones (version 3), and when each pause and finish
/// was written, the finishes indexed by it (version 4, for
/// [`retire_ended`](SqliteLog::retire_ended)). A file of version 1, 2 or
/// 3 is upgraded in place, in one transaction, when opened: its Runs keep
/// their facts (a Run of version 1 has epoch 0: a handed-off one stays
/// handed off, an open one is claimed from epoch 1), none is finished or
/// retired, and their pauses and finishes take the time of the upgrade.
///
/// **Errors say what to do.** A failure before a transaction's commit (the
/// file locked by another connection past the busy timeout of 5 s, an I/O
/// error while reading, a closed log) is [`LogError::Unavailable`]: nothing
/// was written. A failed `COMMIT` of a write, or a panic inside the
/// operation on the log's thread, is [`LogError::OutcomeUnknown`]: read the
/// facts (or append the identical row again) to learn whether it
/// committed.
///
/// The log is typed by the payload `P` of the pauses it holds, so reading
/// needs no annotation once the log's type is known.
///
/// **Blocking and async.** As a [`HandoffLog`] it works on the calling
/// thread: each operation blocks until SQLite is done (an append, until the
/// WAL is synced). As an [`AsyncHandoffLog`] the same work runs on a thread
/// the log owns (started by [`open`](Self::open), one per log, the
/// operations in the order their futures were first polled), and the
/// future is woken when it is done: the executor is never blocked, and no
/// particular runtime is needed (no tokio `spawn_blocking`, which panics
/// outside a tokio runtime). Both forms share one connection and one rule.
/// Dropping the log does not wait for its thread: the thread ends, and
/// the file is closed, once the operations already sent are done and no
/// future of the log's async operations is left (a future holds the
/// connection and the way to the thread until it finishes or is dropped).
/// [`close`](Self::close) waits for the thread.
///
/// ```
/// use baton::durable::{Claim, Decision, Epoch, HandoffLog, SqliteLog, reconcile};
///
/// let path = std::env::temp_dir().join(format!("baton-doc-{}.sqlite", std::process::id()));
/// let log: SqliteLog<u32> = SqliteLog::open(&path)?;
/// assert_eq!(reconcile(&log.facts("root-run", "run")?), Ok(Decision::Resumable));
/// assert_eq!(log.claim("root-run", "run")?, Claim::Owner(Epoch::new(1)));
/// assert_eq!(log.facts("root-run", "run")?.epoch, Epoch::new(1));
/// # drop(log);
/// # for suffix in ["", "-wal", "-shm"] {
/// #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
/// # }
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub struct SqliteLog<P> {
    /// Shared with the jobs of the async operations on the log's thread.
    connection: Arc<Mutex<Connection>>,
    /// The thread the async operations' blocking work runs on.
    thread: Offload,
    /// The payload type of the pauses the log holds (`fn() -> P`: the log
    /// owns no `P`, so it is `Send` and `Sync` whatever `P` is).
    payload: PhantomData<fn() -> P>,
}

impl<P> std::fmt::Debug for SqliteLog<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let connection = lock(&self.connection);
        f.debug_struct("SqliteLog")
            .field("path", &connection.path())
            .finish()
    }
}

/// Whether `error` is SQLite's "database is locked" (`SQLITE_BUSY`).
fn is_busy(error: &LogError) -> bool {
    let LogError::Unavailable(error) = error else {
        return false;
    };
    error
        .downcast_ref::<rusqlite::Error>()
        .and_then(rusqlite::Error::sqlite_error_code)
        == Some(rusqlite::ErrorCode::DatabaseBusy)
}

/// A failure before the transaction's commit: nothing was written.
fn storage(error: rusqlite::Error) -> LogError {
    LogError::Unavailable(Box::new(error))
}

/// An error opening the file: [`LogError::NotALog`] if SQLite says it is
/// not a database (permanent), else [`storage`].
fn not_a_log_or_storage(error: rusqlite::Error) -> LogError {
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
fn commit_failed(error: rusqlite::Error) -> LogError {
    LogError::OutcomeUnknown(Box::new(error))
}

impl<P> SqliteLog<P> {
    /// Opens (creating if needed) the log at `path`: sets the WAL journal
    /// and `synchronous = FULL`, and creates the schema in one transaction
    /// if the file has none. Other connections setting up the same file at
    /// the same moment (processes starting together) are waited for, up to
    /// the busy timeout of 5 s.
    ///
    /// # Errors
    ///
    /// [`LogError::UnknownSchema`] if the file records another schema
    /// version (or has a `handoff_pause` table but no version);
    /// [`LogError::NotALog`] (permanent: opening again fails the same way)
    /// if `path` is a directory, a file that is not a database, or a
    /// database that cannot use the WAL journal (an in-memory database);
    /// [`LogError::Unavailable`] if it cannot be opened otherwise (the
    /// permissions, no space, the file locked past the busy timeout) or
    /// the log's thread cannot be started.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LogError> {
        let path = path.as_ref();
        if path.is_dir() {
            return Err(LogError::NotALog {
                reason: format!("{} is a directory", path.display()),
                source: None,
            });
        }
        let mut connection = Connection::open(path).map_err(not_a_log_or_storage)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(storage)?;
        // SQLite does not call the busy handler for every lock that setting
        // up a file takes: while another connection sets the WAL journal
        // or creates the schema, a step may answer "database is locked" at
        // once. Several processes starting together on one fresh file do
        // that, so such an answer is waited out here, as the busy timeout
        // would, and only then returned.
        let deadline = Instant::now() + BUSY_TIMEOUT;
        while let Err(error) = Self::set_up(&mut connection) {
            if !is_busy(&error) || Instant::now() >= deadline {
                return Err(error);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(Self {
            connection: Arc::new(Mutex::new(connection)),
            thread: Offload::start("baton-sqlite-log")?,
            payload: PhantomData,
        })
    }

    /// Closes the log and waits for its thread: the async operations
    /// already sent to it run to the end, then the thread exits, and the
    /// log's connection is closed unless a future not yet polled still
    /// holds it (such a future answers [`LogError::Unavailable`] when polled,
    /// without touching the file). Blocks the caller meanwhile (call it
    /// from a blocking context, not on an async runtime's thread).
    ///
    /// Dropping the log instead returns at once, and leaves its thread to
    /// end on its own: a process that checks for leaks as it exits (a
    /// fuzzer's LeakSanitizer), or that reopens the file and must know the
    /// old connection is gone, closes it.
    pub fn close(self) {
        let Self {
            connection, thread, ..
        } = self;
        thread.close();
        drop(connection);
    }

    /// The WAL journal, `synchronous = FULL`, and the schema at
    /// [`SCHEMA_VERSION`]: each step idempotent, so that after "database
    /// is locked" the whole may run again.
    fn set_up(connection: &mut Connection) -> Result<(), LogError> {
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
    fn migrate(connection: &mut Connection) -> Result<(), LogError> {
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
        let now = sweep::micros(SystemTime::now());
        transaction
            .execute_batch(&MIGRATE_V4.replace("{now}", &now.to_string()))
            .map_err(storage)?;
        transaction
            .pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(storage)?;
        #[cfg(test)]
        inside::set_up_reached(inside::SetUpPoint::BeforeTheCommit);
        transaction.commit().map_err(storage)
    }

    /// The Run's current epoch ([`Epoch::NONE`] if never claimed).
    fn epoch(connection: &Connection, root_run_id: &str, run_id: &str) -> Result<Epoch, LogError> {
        let stored: Option<i64> = connection
            .query_row(
                "SELECT epoch FROM run_epoch WHERE root_run_id = ?1 AND run_id = ?2",
                params![root_run_id, run_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(storage)?;
        match stored.map(u64::try_from) {
            None => Ok(Epoch::NONE),
            Some(Ok(epoch)) if epoch > 0 => Ok(Epoch::new(epoch)),
            Some(_) => Err(corrupt(run_id, "the stored epoch is not positive")),
        }
    }

    /// Whether the root Run is retired: its tombstone, by primary key.
    fn is_retired(connection: &Connection, root_run_id: &str) -> Result<bool, LogError> {
        connection
            .query_row(RETIRED, params![root_run_id], |row| row.get(0))
            .map_err(storage)
    }

    /// Everything the log holds for a Run, read on `connection` (inside the
    /// caller's transaction, so the tombstone, the epoch, the pause and
    /// the finish agree).
    fn facts_in(
        connection: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<RunFacts<P>, LogError>
    where
        P: DeserializeOwned,
    {
        let mut facts = RunFacts::empty(root_run_id, run_id);
        facts.retired = Self::is_retired(connection, root_run_id)?;
        facts.epoch = Self::epoch(connection, root_run_id, run_id)?;
        facts
            .pauses
            .extend(Self::read(connection, root_run_id, run_id)?);
        facts.finished = Self::read_finish(connection, root_run_id, run_id)?;
        Ok(facts)
    }

    /// The finish stored for a Run, its outcome decoded.
    fn read_finish(
        connection: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Option<Finished<P>>, LogError>
    where
        P: DeserializeOwned,
    {
        let row = connection
            .query_row(
                "SELECT session_id, turn_id, invocation_id, outcome \
                 FROM run_finish WHERE root_run_id = ?1 AND run_id = ?2",
                params![root_run_id, run_id],
                |row| {
                    Ok((
                        Invocation {
                            session_id: row.get(0)?,
                            turn_id: row.get(1)?,
                            run_id: run_id.to_owned(),
                            invocation_id: row.get(2)?,
                        },
                        row.get::<_, String>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(storage)?;
        let Some((source, json)) = row else {
            return Ok(None);
        };
        let outcome = decoded_outcome(run_id, &json)?;
        Ok(Some(Finished { source, outcome }))
    }

    /// Every Run the log holds a row for under the root Run ([`RUNS_OF`]).
    fn runs_of(connection: &Connection, root_run_id: &str) -> Result<Vec<String>, LogError> {
        let mut statement = connection.prepare(RUNS_OF).map_err(storage)?;
        statement
            .query_map(params![root_run_id], |row| row.get(0))
            .map_err(storage)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(storage)
    }

    /// The row stored for a Run, decoded and checked against its columns.
    fn read(
        connection: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Option<Appended<P>>, LogError>
    where
        P: DeserializeOwned,
    {
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
        checked_row(root_run_id, source, columns, &json).map(Some)
    }
}

/// The Run's epoch and [`Fate`] in `facts`, as the write rules read them:
/// [`Fate::Retired`] under a tombstone, else its pause or its finish.
/// A pause and a finish both stored (never written by baton) are
/// [`LogError::Contradictory`]: no write decides on them.
fn fate_of<P>(facts: &RunFacts<P>) -> Result<(Epoch, Fate<'_, P>), LogError> {
    if facts.retired {
        return Ok((facts.epoch, Fate::Retired));
    }
    match (facts.pauses.first(), &facts.finished) {
        (Some(_), Some(_)) => Err(LogError::Contradictory(ReconcileError::TwoFates {
            run_id: facts.run_id.clone(),
        })),
        (Some(pause), None) => Ok((facts.epoch, Fate::HandedOff(pause))),
        (None, Some(finished)) => Ok((facts.epoch, Fate::Finished(finished))),
        (None, None) => Ok((facts.epoch, Fate::Open)),
    }
}

/// Every Run's fate, as `retire_step` reads them.
fn fates_of<P>(runs: &[RunFacts<P>]) -> Result<Vec<(&str, Fate<'_, P>)>, LogError> {
    runs.iter()
        .map(|facts| fate_of(facts).map(|(_, fate)| (facts.run_id.as_str(), fate)))
        .collect()
}

/// # Inside the caller's transaction
///
/// `claim_in`, `append_in`, `finish_in` and `retire_in` apply the very rule
/// of [`claim`](HandoffLog::claim) and its siblings, with the same
/// statements (the store's own operations run these very bodies, each in
/// a `BEGIN IMMEDIATE` transaction of its own), but on the caller's
/// [`rusqlite::Transaction`] (of the version baton re-exports as
/// [`baton::durable::rusqlite`](crate::durable::rusqlite)): they run no
/// `BEGIN`, `COMMIT` or `ROLLBACK`, set nothing, and run nothing again. So
/// a Run's claim, its pause or its finish becomes durable exactly when,
/// and only if, the caller's own rows of the same transaction do.
///
/// **The file.** The caller's connection is opened on a file that
/// [`SqliteLog::open`] has set up (the log's tables are read in its `main`
/// database): each method checks, inside the transaction, that the file
/// records [`SCHEMA_VERSION`], and answers [`LogError::UnknownSchema`]
/// (nothing written) otherwise. Its settings are the caller's: the WAL
/// journal is the file's (set by `open`, kept by every connection), but
/// `synchronous` and the busy timeout are each connection's own. `open`
/// sets `synchronous = FULL` (a commit returns only once the WAL is
/// synced, so a committed claim, pause or finish survives a crash of the
/// machine); set it on the caller's connection too
/// (`connection.pragma_update(None, "synchronous", "FULL")`), or the
/// caller's commit may be lost by a power failure that the store's own
/// would survive.
///
/// **The write lock from the first read.** The caller's transaction must
/// hold SQLite's write lock on `main` before the method reads, as the
/// store's own `BEGIN IMMEDIATE` does, so that no other connection writes
/// between what the rule reads (the root's tombstone, the Run's epoch,
/// pause and finish) and what it writes: begin it with
/// [`TransactionBehavior::Immediate`] (or have written in it already).
/// Each method checks (`sqlite3_txn_state`), before its first read, and
/// answers [`LogError::Unavailable`] (saying so, nothing written, the
/// transaction as it was) if it does not hold the lock: a `DEFERRED`
/// transaction that has not written holds none, or only a read snapshot
/// that another connection's commit may already have left behind.
///
/// **Commit and rollback.** The lock is held until the caller's
/// transaction ends, so what the method answered stays true meanwhile,
/// whoever else claims, appends, finishes or retires (they wait for the
/// caller, up to their busy timeout). **If the caller commits**, the
/// answer holds: the write (the epoch issued, the pause, the finish, the
/// retirement) is durable with the caller's rows; a commit that fails
/// leaves both absent, or (an I/O error during it) both unknown together,
/// as [`LogError::OutcomeUnknown`] says of the store's own. **If the
/// caller rolls back** (or drops the transaction, which rolls it back),
/// nothing was written, as if the method had never run: an epoch it
/// answered was never issued, and **the next claim answers the same epoch
/// number again** — so a claim's epoch is the Run's only once the caller's
/// commit succeeded, and is handed to a worker only then (SPEC G4 holds
/// for committed claims only; §6.1 says why).
/// Hold the transaction briefly: every other writer of the file waits for
/// it.
///
/// **Errors.** A refusal ([`LogError::Fenced`], [`LogError::Retired`], …),
/// a bad input, a wrong schema version and a transaction without the
/// write lock write nothing and leave the caller's transaction as it was,
/// usable: the caller may go on and commit its own rows, or roll back.
/// [`LogError::Unavailable`] carrying a [`rusqlite::Error`] is a statement
/// SQLite failed — `SQLITE_BUSY` past the caller's busy timeout among them
/// (another connection's lock), or an I/O error: **running again is the
/// caller's**. Roll back, and run the whole transaction again (its own
/// statements too): the failed method may have written part of its write,
/// and SQLite may have rolled the transaction back already; nothing baton
/// wrote in it survives a rollback, so that is always safe.
/// [`LogError::OutcomeUnknown`] is never answered: the commit is the
/// caller's.
impl<P> SqliteLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    /// [`claim`](HandoffLog::claim) inside the caller's transaction `tx`
    /// (see [above](#inside-the-callers-transaction)), which must hold the
    /// write lock (begun with [`TransactionBehavior::Immediate`]). If `tx`
    /// commits, the answer holds and a new epoch is issued with the
    /// caller's rows; if it rolls back, nothing was issued: the next claim
    /// answers the same epoch number, so give the epoch to a worker only
    /// after the commit succeeded (G4).
    ///
    /// ```
    /// use baton::durable::rusqlite::{Connection, TransactionBehavior};
    /// use baton::durable::{Claim, Epoch, HandoffLog, SqliteLog};
    ///
    /// let path = std::env::temp_dir().join(format!("baton-doc-tx-{}.sqlite", std::process::id()));
    /// let log: SqliteLog<u32> = SqliteLog::open(&path)?; // sets the file up
    ///
    /// // The runtime's own connection on the same file, its own table.
    /// let mut connection = Connection::open(&path)?;
    /// connection.pragma_update(None, "synchronous", "FULL")?;
    /// connection.busy_timeout(std::time::Duration::from_secs(5))?;
    /// connection.execute_batch("CREATE TABLE IF NOT EXISTS my_jobs (run_id TEXT, epoch INTEGER)")?;
    ///
    /// let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    /// let Claim::Owner(epoch) = SqliteLog::<u32>::claim_in(&tx, "root-run", "run")? else {
    ///     return Ok(()); // final already: never resume it (tx rolls back on drop)
    /// };
    /// tx.execute(
    ///     "INSERT INTO my_jobs (run_id, epoch) VALUES ('run', ?1)",
    ///     [i64::try_from(epoch.get())?],
    /// )?;
    /// tx.commit()?; // the epoch and the job row, or neither
    ///
    /// assert_eq!(log.facts("root-run", "run")?.epoch, Epoch::new(1));
    /// # drop(connection);
    /// # log.close();
    /// # for suffix in ["", "-wal", "-shm"] {
    /// #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    /// # }
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::claim`], and [`LogError::Unavailable`] and
    /// [`LogError::UnknownSchema`] as the
    /// [section above](#inside-the-callers-transaction) says; never
    /// [`LogError::OutcomeUnknown`].
    pub fn claim_in(
        tx: &Transaction<'_>,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Claim<P>, LogError> {
        let op = Op::Claim {
            root_run_id,
            run_id,
        };
        Self::in_callers(tx, op)?.claim()
    }

    /// [`append`](HandoffLog::append) inside the caller's transaction `tx`
    /// (see [above](#inside-the-callers-transaction)), which must hold the
    /// write lock. The pause is durable once `tx` commits, and only then;
    /// a rollback leaves the Run open, at the same epoch.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::append`], and [`LogError::Unavailable`] and
    /// [`LogError::UnknownSchema`] as the
    /// [section above](#inside-the-callers-transaction) says; never
    /// [`LogError::OutcomeUnknown`].
    pub fn append_in(
        tx: &Transaction<'_>,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        let op = Op::Append {
            root_run_id,
            source,
            epoch,
            pause,
        };
        Self::in_callers(tx, op)?.receipt()
    }

    /// [`finish`](HandoffLog::finish) inside the caller's transaction `tx`
    /// (see [above](#inside-the-callers-transaction)), which must hold the
    /// write lock. The finish is durable once `tx` commits, and only then;
    /// a rollback leaves the Run open, at the same epoch.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::finish`], and [`LogError::Unavailable`] and
    /// [`LogError::UnknownSchema`] as the
    /// [section above](#inside-the-callers-transaction) says; never
    /// [`LogError::OutcomeUnknown`].
    pub fn finish_in(
        tx: &Transaction<'_>,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        let op = Op::Finish {
            root_run_id,
            source,
            epoch,
            outcome,
        };
        Self::in_callers(tx, op)?.receipt()
    }

    /// [`retire`](HandoffLog::retire) inside the caller's transaction `tx`
    /// (see [above](#inside-the-callers-transaction)), which must hold the
    /// write lock, so no Run of the root is claimed, handed off or
    /// finished until `tx` ends. The Runs' rows are gone and the tombstone
    /// written once `tx` commits, and only then; a rollback leaves every
    /// row of the root as it was.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::retire`], and [`LogError::Unavailable`] and
    /// [`LogError::UnknownSchema`] as the
    /// [section above](#inside-the-callers-transaction) says; never
    /// [`LogError::OutcomeUnknown`].
    pub fn retire_in(tx: &Transaction<'_>, root_run_id: &str) -> Result<Retirement, LogError> {
        Self::in_callers(tx, Op::Retire { root_run_id })?.retirement()
    }
}

/// Whether the caller's transaction may run the log's writes: it holds
/// the write lock on `main` (else [`LogError::Unavailable`]), and the file
/// is a baton file of [`SCHEMA_VERSION`] (else
/// [`LogError::UnknownSchema`]). Reads only the file's header (its
/// version), under the lock; writes nothing.
fn callers(tx: &Connection) -> Result<(), LogError> {
    let state = tx
        .transaction_state(Some(rusqlite::MAIN_DB))
        .map_err(storage)?;
    if state != TransactionState::Write {
        return Err(LogError::Unavailable(
            format!(
                "the caller's transaction holds no write lock on the database (its state is \
                 {state:?}): SqliteLog's writes inside it need one from their first read; begin \
                 it with TransactionBehavior::Immediate; nothing was written"
            )
            .into(),
        ));
    }
    let found = version(tx)?;
    if found != SCHEMA_VERSION {
        return Err(LogError::UnknownSchema {
            found,
            expected: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// The file's schema version (`PRAGMA user_version`).
fn version(connection: &Connection) -> Result<i64, LogError> {
    connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(storage)
}

/// Each operation's one body (the store's own, and the caller's
/// transaction's), on a connection that holds the write lock from before
/// its first read: the reads, the rule, the write. Each answers, beside
/// the rule's answer, whether it wrote (the store's own commits only
/// then). The operations on the log's connection, called on the caller's
/// thread by the blocking forms and on the log's thread by the async
/// ones, wrap each in a `BEGIN IMMEDIATE` transaction of their own.
impl<P> SqliteLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    fn claim_locked(
        tx: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<(Claim<P>, bool), LogError> {
        let facts = Self::facts_in(tx, root_run_id, run_id)?;
        #[cfg(test)]
        inside::reached();
        let step = claim_step(&facts)?;
        let Some(epoch) = step.write else {
            return Ok((step.answer, false));
        };
        let stored = i64::try_from(epoch.get()).map_err(|_| LogError::EpochsExhausted)?;
        tx.execute(
            "INSERT INTO run_epoch (root_run_id, run_id, epoch) VALUES (?1, ?2, ?3) \
             ON CONFLICT (root_run_id, run_id) DO UPDATE SET epoch = excluded.epoch",
            params![root_run_id, run_id, stored],
        )
        .map_err(storage)?;
        Ok((step.answer, true))
    }

    /// `json`: the pause, encoded.
    fn append_locked(
        tx: &Connection,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
        json: &str,
    ) -> Result<(Receipt, bool), LogError> {
        let held = Self::facts_in(tx, root_run_id, &source.run_id)?;
        #[cfg(test)]
        inside::reached();
        let (current, fate) = fate_of(&held)?;
        let step = append_step(root_run_id, current, fate, epoch, (source, pause))?;
        if step != AppendStep::Write {
            return Ok((step.receipt(), false));
        }
        let intent = &pause.intent;
        // `append_step` wrote only under the current epoch, which was
        // read from the table, so it fits an i64.
        let stored = i64::try_from(epoch.get()).map_err(|_| LogError::EpochsExhausted)?;
        tx.execute(
            "INSERT INTO handoff_pause (root_run_id, run_id, session_id, turn_id, \
                 invocation_id, handoff_id, successor_run_id, \
                 successor_invocation_id, pause, epoch, ended_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
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
                stored,
                sweep::micros(SystemTime::now()),
            ],
        )
        .map_err(storage)?;
        Ok((step.receipt(), true))
    }

    /// `json`: the outcome, encoded.
    fn finish_locked(
        tx: &Connection,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
        json: &str,
    ) -> Result<(Receipt, bool), LogError> {
        let held = Self::facts_in(tx, root_run_id, &source.run_id)?;
        #[cfg(test)]
        inside::reached();
        let (current, fate) = fate_of(&held)?;
        let step = finish_step(root_run_id, current, fate, epoch, (source, outcome))?;
        if step != AppendStep::Write {
            return Ok((step.receipt(), false));
        }
        // `finish_step` wrote only under the current epoch, which was
        // read from the table, so it fits an i64.
        let stored = i64::try_from(epoch.get()).map_err(|_| LogError::EpochsExhausted)?;
        tx.execute(
            "INSERT INTO run_finish (root_run_id, run_id, session_id, turn_id, \
                 invocation_id, outcome, epoch, ended_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                root_run_id,
                source.run_id,
                source.session_id,
                source.turn_id,
                source.invocation_id,
                json,
                stored,
                sweep::micros(SystemTime::now()),
            ],
        )
        .map_err(storage)?;
        Ok((step.receipt(), true))
    }

    fn retire_locked(tx: &Connection, root_run_id: &str) -> Result<(Retirement, bool), LogError> {
        let (retired, runs) = Self::root_facts(tx, root_run_id)?;
        #[cfg(test)]
        inside::reached();
        let step = retire_step(root_run_id, retired, fates_of(&runs)?)?;
        let Retirement::Retired { .. } = step else {
            return Ok((step, false));
        };
        Self::remove_root(tx, root_run_id)?;
        Ok((step, true))
    }

    /// What a retirement reads under the write lock: whether the root is
    /// retired, and the facts of every Run of it.
    fn root_facts(
        tx: &Connection,
        root_run_id: &str,
    ) -> Result<(bool, Vec<RunFacts<P>>), LogError> {
        let retired = Self::is_retired(tx, root_run_id)?;
        let mut runs = Vec::new();
        if !retired {
            for run_id in Self::runs_of(tx, root_run_id)? {
                runs.push(Self::facts_in(tx, root_run_id, &run_id)?);
            }
        }
        Ok((retired, runs))
    }

    /// A retirement's writes: the root's tombstone, then the removal of
    /// every row of it.
    fn remove_root(tx: &Connection, root_run_id: &str) -> Result<(), LogError> {
        // The tombstone first: should a later statement fail in a caller's
        // transaction that is then committed against the rules above, the
        // root is still retired (claims answer Retired, writes are
        // refused), never a root whose epochs are gone without it.
        tx.execute(
            "INSERT INTO retired_root (root_run_id) VALUES (?1)",
            params![root_run_id],
        )
        .map_err(storage)?;
        for table in ["handoff_pause", "run_finish", "run_epoch"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE root_run_id = ?1"),
                params![root_run_id],
            )
            .map_err(storage)?;
        }
        Ok(())
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction of the log's
    /// connection (the write lock from the first read to the commit: no
    /// other claim or write can come between what it reads and what it
    /// writes), committing it if it wrote. With `synchronous = FULL`,
    /// `COMMIT` returns after the WAL is synced: only then is the write
    /// acknowledged.
    /// The one body of every write, on a connection that holds the write
    /// lock from before its first read (the log's own transaction, or the
    /// caller's), `json` what it writes, encoded: the reads, the rule, the
    /// write. Beside the answer, whether it wrote.
    fn locked(tx: &Connection, op: &Op<'_, P>, json: &str) -> Result<(Answer<P>, bool), LogError> {
        match *op {
            Op::Claim {
                root_run_id,
                run_id,
            } => Self::claim_locked(tx, root_run_id, run_id)
                .map(|(claim, wrote)| (Answer::Claim(claim), wrote)),
            Op::Append {
                root_run_id,
                source,
                epoch,
                pause,
            } => Self::append_locked(tx, root_run_id, source, epoch, pause, json)
                .map(|(receipt, wrote)| (Answer::Receipt(receipt), wrote)),
            Op::Finish {
                root_run_id,
                source,
                epoch,
                outcome,
            } => Self::finish_locked(tx, root_run_id, source, epoch, outcome, json)
                .map(|(receipt, wrote)| (Answer::Receipt(receipt), wrote)),
            Op::Retire { root_run_id } => Self::retire_locked(tx, root_run_id)
                .map(|(retirement, wrote)| (Answer::Retirement(retirement), wrote)),
        }
    }

    /// A write on the log's connection (its blocking form on the caller's
    /// thread, its async form on the log's): checked, then in a `BEGIN
    /// IMMEDIATE` transaction of its own.
    fn on(connection: &Mutex<Connection>, op: Op<'_, P>) -> Result<Answer<P>, LogError> {
        let json = op.checked()?;
        Self::immediate(connection, |tx| Self::locked(tx, &op, &json))
    }

    /// A write inside the caller's transaction: checked, then the
    /// caller's transaction checked ([`callers`]); no `BEGIN`, `COMMIT` or
    /// `ROLLBACK`.
    fn in_callers(tx: &Transaction<'_>, op: Op<'_, P>) -> Result<Answer<P>, LogError> {
        let json = op.checked()?;
        callers(tx)?;
        Self::locked(tx, &op, &json).map(|(answer, _)| answer)
    }

    fn immediate<T>(
        connection: &Mutex<Connection>,
        body: impl FnOnce(&Connection) -> Result<(T, bool), LogError>,
    ) -> Result<T, LogError> {
        let mut connection = lock(connection);
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(storage)?;
        let (answer, wrote) = body(&transaction)?;
        if wrote {
            transaction.commit().map_err(commit_failed)?;
        }
        Ok(answer)
    }

    fn facts_on(
        connection: &Mutex<Connection>,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<RunFacts<P>, LogError> {
        check_run(root_run_id, run_id)?;
        let mut connection = lock(connection);
        // One read transaction: the epoch and the pause of one snapshot
        // (WAL: taken by the first read, kept while writers commit).
        let transaction = connection.transaction().map_err(storage)?;
        let mut facts = RunFacts::empty(root_run_id, run_id);
        facts.epoch = Self::epoch(&transaction, root_run_id, run_id)?;
        #[cfg(test)]
        inside::between_reads();
        facts
            .pauses
            .extend(Self::read(&transaction, root_run_id, run_id)?);
        facts.finished = Self::read_finish(&transaction, root_run_id, run_id)?;
        facts.retired = Self::is_retired(&transaction, root_run_id)?;
        Ok(facts)
    }
}

impl<P> HandoffLog<P> for SqliteLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        let op = Op::Claim {
            root_run_id,
            run_id,
        };
        Self::on(&self.connection, op)?.claim()
    }

    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        let op = Op::Append {
            root_run_id,
            source,
            epoch,
            pause,
        };
        Self::on(&self.connection, op)?.receipt()
    }

    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        let op = Op::Finish {
            root_run_id,
            source,
            epoch,
            outcome,
        };
        Self::on(&self.connection, op)?.receipt()
    }

    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        Self::on(&self.connection, Op::Retire { root_run_id })?.retirement()
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        Self::facts_on(&self.connection, root_run_id, run_id)
    }
}

/// Each operation, from the input's checks and the pause's JSON encoding
/// to the synced commit, runs on the log's thread; the arguments are
/// copied into the job, so the future borrows nothing once created (its
/// type still names their lifetimes, as the trait's does: it is not
/// `'static`).
impl<P> AsyncHandoffLog<P> for SqliteLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + 'static,
{
    fn claim_async(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> impl Future<Output = Result<Claim<P>, LogError>> + Send {
        let connection = Arc::clone(&self.connection);
        let (root_run_id, run_id) = (root_run_id.to_owned(), run_id.to_owned());
        self.thread.run(move || {
            let op = Op::Claim {
                root_run_id: &root_run_id,
                run_id: &run_id,
            };
            Self::on(&connection, op)?.claim()
        })
    }

    fn append_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> impl Future<Output = Result<Receipt, LogError>> + Send {
        let connection = Arc::clone(&self.connection);
        let (root_run_id, source, pause) = (root_run_id.to_owned(), source.clone(), pause.clone());
        self.thread.run(move || {
            let op = Op::Append {
                root_run_id: &root_run_id,
                source: &source,
                epoch,
                pause: &pause,
            };
            Self::on(&connection, op)?.receipt()
        })
    }

    fn finish_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> impl Future<Output = Result<Receipt, LogError>> + Send {
        let connection = Arc::clone(&self.connection);
        let (root_run_id, source, outcome) =
            (root_run_id.to_owned(), source.clone(), outcome.clone());
        self.thread.run(move || {
            let op = Op::Finish {
                root_run_id: &root_run_id,
                source: &source,
                epoch,
                outcome: &outcome,
            };
            Self::on(&connection, op)?.receipt()
        })
    }

    fn retire_async(
        &self,
        root_run_id: &str,
    ) -> impl Future<Output = Result<Retirement, LogError>> + Send {
        let connection = Arc::clone(&self.connection);
        let root_run_id = root_run_id.to_owned();
        self.thread.run(move || {
            let op = Op::Retire {
                root_run_id: &root_run_id,
            };
            Self::on(&connection, op)?.retirement()
        })
    }

    fn facts_async(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> impl Future<Output = Result<RunFacts<P>, LogError>> + Send {
        let connection = Arc::clone(&self.connection);
        let (root_run_id, run_id) = (root_run_id.to_owned(), run_id.to_owned());
        let facts = self
            .thread
            .run(move || Self::facts_on(&connection, &root_run_id, &run_id));
        async move { facts.await.map_err(LogError::of_a_read) }
    }
}

/// A test hook inside the write transactions, between their reads and
/// their writes: a test holds one thread's claim, append, finish or
/// retirement there while another connection's runs, so a read-then-write
/// window would be open by construction, not by the scheduler's luck.
#[cfg(test)]
pub(super) mod inside {
    use std::cell::RefCell;

    thread_local! {
        static HOOK: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
    }

    /// Runs `hook` on this thread whenever one of its claims, appends,
    /// finishes or retirements has read, before it writes.
    pub(crate) fn on_this_thread(hook: impl FnMut() + 'static) {
        HOOK.with(|slot| *slot.borrow_mut() = Some(Box::new(hook)));
    }

    pub(super) fn reached() {
        HOOK.with(|slot| {
            if let Some(hook) = slot.borrow_mut().as_mut() {
                hook();
            }
        });
    }

    thread_local! {
        static BETWEEN: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
    }

    /// Runs `hook` on this thread whenever one of its reads of the facts
    /// has read the epoch, before it reads the pause.
    pub(crate) fn between_reads_on_this_thread(hook: impl FnMut() + 'static) {
        BETWEEN.with(|slot| *slot.borrow_mut() = Some(Box::new(hook)));
    }

    pub(super) fn between_reads() {
        BETWEEN.with(|slot| {
            if let Some(hook) = slot.borrow_mut().as_mut() {
                hook();
            }
        });
    }

    /// The points of opening a file where a test may step in.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(crate) enum SetUpPoint {
        /// The version was read without the write lock, and is not the
        /// current one: the upgrade is about to take the lock.
        BeforeTheWriteLock,
        /// Every step of the upgrade ran, and the new version is written,
        /// in its one transaction: about to commit.
        BeforeTheCommit,
    }

    /// What a test runs at a [`SetUpPoint`].
    type SetUpHook = Box<dyn FnOnce()>;

    thread_local! {
        static SET_UP: RefCell<Option<(SetUpPoint, SetUpHook)>> =
            const { RefCell::new(None) };
    }

    /// Runs `hook` once, the first time an open on this thread reaches
    /// `point` (taken out first, so the hook may open the file itself).
    pub(crate) fn once_at(point: SetUpPoint, hook: impl FnOnce() + 'static) {
        SET_UP.with(|slot| *slot.borrow_mut() = Some((point, Box::new(hook))));
    }

    pub(super) fn set_up_reached(point: SetUpPoint) {
        let hook = SET_UP.with(|slot| {
            let mut slot = slot.borrow_mut();
            match slot.take() {
                Some((at, hook)) if at == point => Some(hook),
                other => {
                    *slot = other;
                    None
                }
            }
        });
        if let Some(hook) = hook {
            hook();
        }
    }
}

#[path = "sqlite_sweep.rs"]
mod sweep;

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "sqlite_commit_tests.rs"]
mod commit_tests;

#[cfg(test)]
#[path = "sqlite_set_up_tests.rs"]
mod set_up_tests;
