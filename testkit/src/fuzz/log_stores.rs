//! The stores `log_table` drives, each sent the same calls: a
//! [`MemoryLog`] and, with the `sqlite` feature, a
//! [`SqliteLog`](baton::durable::SqliteLog) on a file of the thread's own
//! (in `/dev/shm` where it exists, else the temp dir), emptied before each
//! input and removed when the thread (or the process) ends normally; a
//! process that aborts on a violation leaves its one file behind. Or, for
//! `log_store`, one store of the caller's own instead.

use super::Violation;
use super::log_ghost::{Answer, Payload, Refusal};
use super::log_ops::Call;
use baton::durable::{HandoffLog, MemoryLog, RunFacts};

/// Every store of one input.
pub(super) struct Stores<'a> {
    /// baton's `MemoryLog` (`log_table`), or the caller's store
    /// (`log_store`), by name.
    first: (&'static str, First<'a>),
    #[cfg(feature = "sqlite")]
    sqlite: Option<sqlite::File>,
}

/// The store every input drives.
enum First<'a> {
    Memory(MemoryLog<Payload>),
    Theirs(&'a dyn HandoffLog<Payload>),
}

impl First<'_> {
    fn log(&self) -> &dyn HandoffLog<Payload> {
        match self {
            First::Memory(log) => log,
            First::Theirs(log) => *log,
        }
    }
}

/// `log`'s answer to `call` (a reopen: a store with nothing to reopen
/// answers `Ok`).
fn ask(log: &dyn HandoffLog<Payload>, call: &Call) -> Answer {
    match call {
        Call::Claim(root, run) => Answer::Claimed(log.claim(root, run).map_err(Refusal::from)),
        Call::Append(root, source, epoch, pause) => Answer::Appended(
            log.append(root, source, *epoch, pause)
                .map_err(Refusal::from),
        ),
        Call::Facts(root, run) => Answer::Facts(log.facts(root, run).map_err(Refusal::from)),
        Call::Reopen => Answer::Reopened(Ok(())),
        Call::Finish(root, source, epoch, outcome) => Answer::Finished(
            log.finish(root, source, *epoch, outcome)
                .map_err(Refusal::from),
        ),
        Call::Retire(root) => Answer::Retired(log.retire(root).map_err(Refusal::from)),
    }
}

impl<'a> Stores<'a> {
    /// baton's empty stores (a new SQLite file).
    pub(super) fn new() -> Self {
        Stores {
            first: ("MemoryLog", First::Memory(MemoryLog::new())),
            #[cfg(feature = "sqlite")]
            sqlite: Some(sqlite::File::new()),
        }
    }

    /// The caller's store `log`, named `name`, alone.
    pub(super) fn theirs(name: &'static str, log: &'a dyn HandoffLog<Payload>) -> Self {
        Stores {
            first: (name, First::Theirs(log)),
            #[cfg(feature = "sqlite")]
            sqlite: None,
        }
    }

    /// Each store's answer to `call`, named by the store.
    pub(super) fn apply(&mut self, call: &Call) -> Vec<(&'static str, Answer)> {
        let first = (self.first.0, ask(self.first.1.log(), call));
        #[cfg(feature = "sqlite")]
        let sqlite = self.sqlite.as_mut().map(|file| {
            (
                "SqliteLog",
                match call {
                    Call::Reopen => Answer::Reopened(file.reopen()),
                    call => match file.log.as_ref() {
                        Some(log) => ask(log, call),
                        None => Answer::Reopened(Err(Refusal::Unavailable("not open".into()))),
                    },
                },
            )
        });
        #[cfg(not(feature = "sqlite"))]
        let sqlite = None;
        std::iter::once(first).chain(sqlite).collect()
    }

    /// Every store holds exactly `expected` for each Run in it, else
    /// `rule` is violated.
    pub(super) fn check_facts(
        &self,
        expected: &[RunFacts<Payload>],
        rule: &'static str,
    ) -> Result<(), Violation> {
        let first = (self.first.0, self.first.1.log());
        #[cfg(feature = "sqlite")]
        let sqlite = self
            .sqlite
            .as_ref()
            .and_then(|file| file.log.as_ref())
            .map(|log| ("SqliteLog", log as _));
        #[cfg(not(feature = "sqlite"))]
        let sqlite = None;
        for (store, log) in std::iter::once(first).chain(sqlite) {
            for facts in expected {
                let held = log
                    .facts(&facts.root_run_id, &facts.run_id)
                    .map_err(Refusal::from);
                ensure!(
                    held.as_ref() == Ok(facts),
                    rule,
                    "{store} holds {held:?}; the log acknowledged {facts:?}"
                );
            }
        }
        Ok(())
    }

    /// The memory log holds `acknowledged` pauses over every Run, else
    /// `rule` is violated (a write to a Run nobody asked about). A store
    /// of the caller's is not counted: the trait has no way to.
    pub(super) fn check_len(
        &self,
        acknowledged: usize,
        rule: &'static str,
    ) -> Result<(), Violation> {
        if let First::Memory(memory) = &self.first.1 {
            let held = memory.len();
            ensure!(
                held == acknowledged,
                rule,
                "MemoryLog holds {held} pauses, {acknowledged} were acknowledged"
            );
        }
        Ok(())
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use std::cell::RefCell;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU64, Ordering};

    use rusqlite::Connection;

    use super::{Payload, Refusal};
    use baton::durable::SqliteLog;

    /// The SQLite log of one input. Creating a database, or only opening
    /// one, costs more than a whole input under ASan, so each thread keeps
    /// one file open and empties it between inputs: an input starts from an
    /// empty log either way. `Op::Reopen` closes every connection to the
    /// file (the last close checkpoints and removes the WAL), then opens
    /// the log again.
    pub(super) struct File {
        inner: Option<Inner>,
        pub(super) log: Option<SqliteLog<Payload>>,
    }

    /// A file kept between inputs, with a connection of the harness's own
    /// that empties it (closed by a reopen, opened again when needed).
    struct Inner {
        path: PathBuf,
        eraser: Option<Connection>,
    }

    impl Inner {
        /// Deletes every row.
        fn erase(&mut self) -> Result<(), rusqlite::Error> {
            let eraser = match &mut self.eraser {
                Some(eraser) => eraser,
                slot @ None => slot.insert(Connection::open(&self.path)?),
            };
            eraser.execute_batch(
                "DELETE FROM handoff_pause; DELETE FROM run_finish; DELETE FROM run_epoch; \
                 DELETE FROM retired_root;",
            )
        }
    }

    thread_local! {
        /// This thread's file and its open log, between two inputs.
        static KEPT: RefCell<Option<(Inner, Option<SqliteLog<Payload>>)>> =
            const { RefCell::new(None) };
    }

    /// Where the files go: `/dev/shm` where it exists (a `tmpfs`, so the
    /// store's `fsync` on every commit costs nothing), else the temp dir.
    fn folder() -> PathBuf {
        let shm = PathBuf::from("/dev/shm");
        if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        }
    }

    impl File {
        /// This thread's log, emptied; a new file the first time.
        pub(super) fn new() -> Self {
            let mut file = match KEPT.with(|kept| kept.borrow_mut().take()) {
                Some((mut inner, log)) => {
                    if let Err(error) = inner.erase() {
                        panic!("log_table: cannot empty {}: {error}", inner.path.display());
                    }
                    File {
                        inner: Some(inner),
                        log,
                    }
                }
                None => Self::create(),
            };
            // An input that failed may have left it closed.
            if file.log.is_none() {
                if let Err(error) = file.reopen() {
                    panic!("log_table: cannot open the log: {error:?}");
                }
            }
            file
        }

        fn create() -> Self {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let name = format!(
                "baton-log-table-{}-{}.sqlite",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            let path = folder().join(name);
            remove(&path);
            let log = SqliteLog::<Payload>::open(&path).unwrap_or_else(|error| {
                panic!("log_table: cannot open {}: {error:?}", path.display())
            });
            File {
                inner: Some(Inner { path, eraser: None }),
                log: Some(log),
            }
        }

        /// Closes the log (and the eraser: no connection is left) and opens
        /// its file again.
        pub(super) fn reopen(&mut self) -> Result<(), Refusal> {
            // Closed, not dropped: its thread has exited when this returns,
            // so no old log's thread is still exiting while the next input
            // runs (see fuzz/lsan.supp).
            if let Some(log) = self.log.take() {
                log.close();
            }
            let inner = self.inner.as_mut().expect("kept until drop");
            inner.eraser = None;
            self.log = Some(SqliteLog::open(&inner.path).map_err(Refusal::from)?);
            Ok(())
        }
    }

    fn remove(path: &std::path::Path) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    impl Drop for File {
        /// Keeps the file and its open log for the thread's next input.
        fn drop(&mut self) {
            let kept = self.inner.take().map(|inner| (inner, self.log.take()));
            let _ = KEPT.try_with(|slot| *slot.borrow_mut() = kept);
        }
    }

    impl Drop for Inner {
        /// The thread is done (or the file was replaced): remove the file.
        fn drop(&mut self) {
            remove(&self.path);
        }
    }
}
