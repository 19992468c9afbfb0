//! The writes inside the caller's own transaction.

use rusqlite::{Connection, Transaction, TransactionState};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::durable::contract::{Claim, Epoch, LogError, Receipt, Retirement};
use crate::facts::{HandoffPause, Invocation};

use super::SqliteLog;
use super::error::storage;
use super::op::Op;
use super::schema::{SCHEMA_VERSION, version};

/// Whether the caller's transaction may run the log's writes: it holds
/// the write lock on `main` (else [`LogError::WrongTransaction`]), and the file
/// is a baton file of [`SCHEMA_VERSION`] (else
/// [`LogError::UnknownSchema`]). Reads only the file's header (its
/// version), under the lock; writes nothing.
pub(super) fn callers(tx: &Connection) -> Result<(), LogError> {
    let state = tx
        .transaction_state(Some(rusqlite::MAIN_DB))
        .map_err(storage)?;
    if state != TransactionState::Write {
        return Err(LogError::WrongTransaction {
            reason: format!(
                "it holds no write lock on the database (its state is {state:?}), and \
                 SqliteLog's writes inside it need one from their first read: begin it with \
                 TransactionBehavior::Immediate"
            ),
        });
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

/// # Inside the caller's transaction
///
/// `claim_in`, `append_in`, `finish_in` and `retire_in` apply the very rule
/// of [`claim`](crate::durable::HandoffLog::claim) and its siblings, with the same
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
/// [`TransactionBehavior::Immediate`](rusqlite::TransactionBehavior::Immediate) (or have written in it already).
/// Each method checks (`sqlite3_txn_state`), before its first read, and
/// answers [`LogError::WrongTransaction`] (saying so, nothing written, the
/// transaction as it was; permanent: running it again in such a
/// transaction never helps) if it does not hold the lock: a `DEFERRED`
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
    /// [`claim`](crate::durable::HandoffLog::claim) inside the caller's transaction `tx`
    /// (see [above](#inside-the-callers-transaction)), which must hold the
    /// write lock (begun with [`TransactionBehavior::Immediate`](rusqlite::TransactionBehavior::Immediate)). If `tx`
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
    /// As [`HandoffLog::claim`](crate::durable::HandoffLog::claim), and [`LogError::Unavailable`],
    /// [`LogError::WrongTransaction`] and [`LogError::UnknownSchema`] as the
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

    /// [`append`](crate::durable::HandoffLog::append) inside the caller's transaction `tx`
    /// (see [above](#inside-the-callers-transaction)), which must hold the
    /// write lock. The pause is durable once `tx` commits, and only then;
    /// a rollback leaves the Run open, at the same epoch.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::append`](crate::durable::HandoffLog::append), and [`LogError::Unavailable`],
    /// [`LogError::WrongTransaction`] and [`LogError::UnknownSchema`] as the
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

    /// [`finish`](crate::durable::HandoffLog::finish) inside the caller's transaction `tx`
    /// (see [above](#inside-the-callers-transaction)), which must hold the
    /// write lock. The finish is durable once `tx` commits, and only then;
    /// a rollback leaves the Run open, at the same epoch.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::finish`](crate::durable::HandoffLog::finish), and [`LogError::Unavailable`],
    /// [`LogError::WrongTransaction`] and [`LogError::UnknownSchema`] as the
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

    /// [`retire`](crate::durable::HandoffLog::retire) inside the caller's transaction `tx`
    /// (see [above](#inside-the-callers-transaction)), which must hold the
    /// write lock, so no Run of the root is claimed, handed off or
    /// finished until `tx` ends. The Runs' rows are gone and the tombstone
    /// written once `tx` commits, and only then; a rollback leaves every
    /// row of the root as it was.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::retire`](crate::durable::HandoffLog::retire), and [`LogError::Unavailable`],
    /// [`LogError::WrongTransaction`] and [`LogError::UnknownSchema`] as the
    /// [section above](#inside-the-callers-transaction) says; never
    /// [`LogError::OutcomeUnknown`].
    pub fn retire_in(tx: &Transaction<'_>, root_run_id: &str) -> Result<Retirement, LogError> {
        Self::in_callers(tx, Op::Retire { root_run_id })?.retirement()
    }
}
