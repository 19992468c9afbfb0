//! [`SqliteLog`]: the [`HandoffLog`] for one host, one SQLite file
//! (feature `sqlite`, off by default; SQLite bundled: no system library
//! needed).
#![cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]

use std::future::Future;
use std::marker::PhantomData;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use serde::Serialize;
use serde::de::DeserializeOwned;

use self::offload::Offload;
use super::contract::{
    AsyncHandoffLog, Claim, Epoch, HandoffLog, LogError, Receipt, Retirement, RunFacts,
};
use crate::facts::{HandoffPause, Invocation};
use crate::sync::{Arc, Mutex, lock};

/// The SQLite crate baton is built with, re-exported so that a runtime
/// opening its own [`Connection`] for the writes inside its transaction
/// ([`SqliteLog::claim_in`] and its siblings) names the very version whose
/// [`Transaction`] they take.
pub use rusqlite;

mod error;
mod in_tx;
mod offload;
mod op;
mod read;
mod schema;
mod set_up;
mod write;

use self::error::{commit_failed, is_busy, not_a_log_or_storage, storage};
use self::in_tx::callers;
pub use self::schema::SCHEMA_VERSION;

use self::op::{Answer, Op};

/// How long a connection waits for another's write lock before the
/// operation fails with [`LogError::Unavailable`]: 10 s, not rusqlite's
/// own default of 5 s, so that a test sees the log's setting (issue 63).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The durable handoff log in one SQLite file: WAL journal,
/// `synchronous = FULL` (a commit returns only after the WAL is synced, so an
/// acknowledged append survives a crash of the process and of the machine),
/// one row per claimed Run (its epoch), per pause, per finish and per
/// retired root Run, the
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
/// Run, and once its work has ended (every Run final, and every
/// successor a pause names claimed and final; else `RunOpen`, and a root
/// it holds nothing of is `NothingToRetire`) deletes their rows and writes one
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
/// file locked by another connection past the busy timeout of 10 s, an I/O
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

impl<P> SqliteLog<P> {
    /// Opens (creating if needed) the log at `path`: sets the WAL journal
    /// and `synchronous = FULL`, and creates the schema in one transaction
    /// if the file has none. Other connections setting up the same file at
    /// the same moment (processes starting together) are waited for, up to
    /// the busy timeout of 10 s.
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
}

// The pipeline of the writes: an operation (`Op`) checked, then run by
// its one body (`locked`) on the log's connection in a `BEGIN IMMEDIATE`
// transaction of its own (`on`: the blocking forms on the caller's thread,
// the async ones on the log's) or in the caller's transaction
// (`in_callers`).
impl<P> SqliteLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
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
        /// The upgrade, its new version with it, has just committed.
        AfterTheCommit,
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

mod sweep;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fate_tests;

#[cfg(test)]
mod in_tx_tests;

#[cfg(test)]
mod race_tests;

#[cfg(test)]
mod sweep_tests;

#[cfg(test)]
mod commit_tests;

#[cfg(test)]
mod set_up_tests;
