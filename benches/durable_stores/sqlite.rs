//! The SQLite cells of the table: each worker a thread with a log of its
//! own on one file, against the bare `INSERT` and `COMMIT` on another.

use std::path::Path;
use std::time::{Duration, Instant};

use baton::HandoffExecution;
use baton::durable::{Claim, Epoch, HandoffLog, LogError, SqliteLog};

use super::{ROOT, Sample, pause, share, source};

/// `work(w)` on `workers` threads at once: every latency, and the wall time.
fn on_threads(workers: usize, work: impl Fn(usize) -> Vec<Duration> + Send + Sync) -> Sample {
    let started = Instant::now();
    let parts = std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = (0..workers).map(|w| scope.spawn(move || work(w))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    Sample::merge(parts, started.elapsed())
}

/// `ops` of `op` (`append`, `claim` or `handoff`), shared by `workers`
/// threads, each with a log of its own on the file at `path`.
pub(super) fn baton(path: &Path, op: &str, workers: usize, ops: usize) -> Sample {
    let tag = format!("{op}-{workers}");
    if op == "append" {
        // The Runs claimed in bulk, untimed, in the log's own table.
        let log: SqliteLog<HandoffExecution> = SqliteLog::open(path).unwrap();
        drop(log);
        let mut raw = rusqlite::Connection::open(path).unwrap();
        let tx = raw.transaction().unwrap();
        for i in 0..ops {
            tx.execute(
                "INSERT INTO run_epoch VALUES (?1, ?2, 1)",
                (ROOT, format!("{tag}-{i}")),
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    on_threads(workers, |w| {
        let log: SqliteLog<HandoffExecution> = SqliteLog::open(path).unwrap();
        share(&tag, w, workers, ops)
            .iter()
            .map(|run| {
                let started = Instant::now();
                match op {
                    "append" => {
                        let _receipt = retried(op, || {
                            log.append(ROOT, &source(run), Epoch::new(1), &pause(run))
                        });
                    }
                    "claim" => assert!(matches!(
                        retried(op, || log.claim(ROOT, run)),
                        Claim::Owner(_)
                    )),
                    _ => handoff(&log, run),
                }
                started.elapsed()
            })
            .collect()
    })
}

/// The handoff unit, four transactions: `run`'s first claim, its pause's
/// append, its successor's first claim, and the successor's finish.
fn handoff(log: &SqliteLog<HandoffExecution>, run: &str) {
    let pause = pause(run);
    let Claim::Owner(epoch) = retried("claim", || log.claim(ROOT, run)) else {
        panic!("{run} is not open");
    };
    let _receipt = retried("append", || log.append(ROOT, &source(run), epoch, &pause));
    let next = &pause.intent.successor_run_id;
    let Claim::Owner(epoch) = retried("claim", || log.claim(ROOT, next)) else {
        panic!("{next} is not open");
    };
    let _receipt = retried("finish", || {
        log.finish(ROOT, &source(next), epoch, &pause.execution)
    });
}

/// `call`, sent again while it answers `Unavailable` or `OutcomeUnknown`:
/// SQLite's write lock may outlast the log's busy timeout (5 s) with 32
/// writers, and a caller does it again (an append or a finish is
/// idempotent, a claim's epoch was not issued or is simply superseded).
fn retried<T>(op: &str, mut call: impl FnMut() -> Result<T, LogError>) -> T {
    loop {
        match call() {
            Ok(answer) => return answer,
            Err(LogError::Unavailable(_) | LogError::OutcomeUnknown(_)) => continue,
            Err(other) => panic!("{op}: {other}"),
        }
    }
}

/// The bare store's limit for `ops` units of `writes` transactions each:
/// `BEGIN IMMEDIATE; INSERT; COMMIT` of a row the pause's size, `writes`
/// times per unit.
pub(super) fn bare(path: &Path, tag: &str, writes: usize, workers: usize, ops: usize) -> Sample {
    {
        let raw = rusqlite::Connection::open(path).unwrap();
        raw.pragma_update(None, "journal_mode", "wal").unwrap();
        raw.execute_batch(
            "CREATE TABLE IF NOT EXISTS bare (k TEXT PRIMARY KEY, v TEXT NOT NULL) STRICT",
        )
        .unwrap();
    }
    on_threads(workers, |w| {
        let mut raw = rusqlite::Connection::open(path).unwrap();
        raw.busy_timeout(Duration::from_secs(30)).unwrap();
        raw.pragma_update(None, "synchronous", "FULL").unwrap();
        share(tag, w, workers, ops)
            .iter()
            .map(|run| {
                let json = serde_json::to_string(&pause(run)).unwrap();
                let started = Instant::now();
                for write in 0..writes {
                    let tx = raw
                        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                        .unwrap();
                    tx.execute(
                        "INSERT INTO bare VALUES (?1, ?2)",
                        (format!("{run}/{write}"), &json),
                    )
                    .unwrap();
                    tx.commit().unwrap();
                }
                started.elapsed()
            })
            .collect()
    })
}
