//! [`SqliteLog`] on real files: the log rules, durability across reopening,
//! the schema version, and corrupt rows.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use super::read::{RETIRED, RUNS_OF};
use super::*;
use crate::durable::tests::{ViaAsync, pause, source, the_final_fates_hold, the_log_rules_hold};
use crate::durable::{Decision, Finished, reconcile};
use rusqlite::params;

/// Claims `(root, run)` in `log`: the epoch its worker holds.
fn owner(log: &SqliteLog<u32>) -> Epoch {
    match log.claim("root", "run").unwrap() {
        Claim::Owner(epoch) => epoch,
        other => panic!("the Run is not open: {other:?}"),
    }
}

/// Claims the Run `run_id` of `root_run_id` in `log`: the epoch its
/// worker holds.
fn claim_of(log: &SqliteLog<u32>, root_run_id: &str, run_id: &str) -> Epoch {
    match log.claim(root_run_id, run_id).unwrap() {
        Claim::Owner(epoch) => epoch,
        other => panic!("{root_run_id}/{run_id} is not open: {other:?}"),
    }
}

/// The invocation of the Run `run_id` (within root Run `root`, as
/// [`source`]'s): a Run other than `run`, which [`pause`] may hand off too.
fn source_of(run_id: &str) -> Invocation {
    Invocation {
        run_id: run_id.into(),
        invocation_id: format!("{run_id}-invocation"),
        ..source()
    }
}

/// Every table of the file with its number of rows, by name: all that the
/// log keeps, whatever tables a schema version adds.
fn rows(log: &SqliteLog<u32>) -> Vec<(String, i64)> {
    rows_where(log, "")
}

/// Every table of the file with its number of rows of root Run
/// `root_run_id` (every table is keyed by the root Run first).
fn rows_of(log: &SqliteLog<u32>, root_run_id: &str) -> Vec<(String, i64)> {
    rows_where(log, &format!("WHERE root_run_id = '{root_run_id}'"))
}

fn rows_where(log: &SqliteLog<u32>, filter: &str) -> Vec<(String, i64)> {
    let connection = lock(&log.connection);
    let tables: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    tables
        .into_iter()
        .map(|table| {
            let count = connection
                .query_row(
                    &format!("SELECT count(*) FROM {table} {filter}"),
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            (table, count)
        })
        .collect()
}

/// The expected [`rows`]: pauses, tombstones, epochs, finishes.
fn tables(pauses: i64, tombstones: i64, epochs: i64, finishes: i64) -> Vec<(String, i64)> {
    [
        ("handoff_pause", pauses),
        ("retired_root", tombstones),
        ("run_epoch", epochs),
        ("run_finish", finishes),
    ]
    .into_iter()
    .map(|(table, count)| (table.to_owned(), count))
    .collect()
}

/// A fresh database path in the temp dir, removed (with its WAL) on drop.
pub(super) struct TempDb(pub(super) PathBuf);

impl TempDb {
    pub(super) fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "baton-sqlite-test-{}-{}.sqlite",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let db = Self(std::env::temp_dir().join(name));
        db.remove();
        db
    }
    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove();
    }
}

#[test]
fn the_sqlite_log_keeps_the_log_rules() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    the_log_rules_hold(&log);
    // Debug names the file, so a log in an error message says which one
    // (SQLite may resolve symlinks in the directory: match the name only).
    let debug = format!("{log:?}");
    let name = db.0.file_name().unwrap().to_str().unwrap();
    assert!(
        debug.starts_with("SqliteLog { path: Some(\"") && debug.ends_with(&format!("{name}\") }}")),
        "{debug}"
    );
}

#[test]
fn the_sqlite_log_keeps_the_log_rules_through_its_async_form() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    the_log_rules_hold(&ViaAsync::new(&log));
    let blocking: &dyn HandoffLog<u32> = &log;
    assert_eq!(
        blocking.facts("root", "run").unwrap().pauses.len(),
        1,
        "the async and the blocking forms share one file"
    );
}

#[test]
fn an_acknowledged_append_is_read_back_whole_after_reopening() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&log);
    assert_eq!(
        log.append("root", &source(), epoch, &pause("h")).unwrap(),
        Receipt::Written
    );
    drop(log);
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(facts.pauses[0].source, source());
    assert_eq!(facts.epoch, epoch, "the epoch is durable too");
    assert_eq!(reconcile(&facts), Ok(Decision::HandedOff(pause("h"))));
}

#[test]
fn the_log_is_wal_with_full_sync_and_records_its_schema_version() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let connection = lock(&log.connection);
    let mode: String = connection
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    let synchronous: i64 = connection
        .pragma_query_value(None, "synchronous", |row| row.get(0))
        .unwrap();
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(
        (mode.as_str(), synchronous, version),
        ("wal", 2, SCHEMA_VERSION)
    );
}

/// The durability the store promises is checked when it opens (issue
/// 37): a database that cannot run in the WAL journal (an in-memory one
/// keeps its journal in memory) is refused, naming the mode, not opened
/// without it. It is a permanent error (`NotALog`), as a directory and a
/// file that is not a database are: `Unavailable` would tell the caller
/// to retry. Nothing is written to the file that is not a database.
#[test]
fn what_is_not_a_log_is_refused_at_open_with_a_permanent_error() {
    let refused = SqliteLog::<u32>::open(":memory:");
    assert!(
        matches!(&refused, Err(LogError::NotALog { reason, .. }) if reason.contains("not WAL")),
        "{refused:?}"
    );
    let dir = std::env::temp_dir();
    let refused = SqliteLog::<u32>::open(&dir);
    assert!(
        matches!(&refused, Err(LogError::NotALog { reason, source: None }) if reason.contains("directory")),
        "{refused:?}"
    );
    let db = TempDb::new();
    let text = b"this is a text file, not a database, and it is long enough to have a header";
    std::fs::write(&db.0, text).unwrap();
    let refused = SqliteLog::<u32>::open(&db.0);
    assert!(
        matches!(
            &refused,
            Err(LogError::NotALog {
                source: Some(_),
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(std::fs::read(&db.0).unwrap(), text, "nothing written");
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("not an SQLite database"), "{message}");
}

#[test]
fn a_file_with_an_unknown_schema_version_is_a_typed_error() {
    let db = TempDb::new();
    let connection = Connection::open(&db.0).unwrap();
    connection.pragma_update(None, "user_version", 7).unwrap();
    drop(connection);
    assert!(matches!(
        SqliteLog::<u32>::open(&db.0),
        Err(LogError::UnknownSchema {
            found: 7,
            expected: SCHEMA_VERSION
        })
    ));
}

#[test]
fn a_foreign_handoff_pause_table_without_a_version_is_a_typed_error() {
    let db = TempDb::new();
    let connection = Connection::open(&db.0).unwrap();
    connection
        .execute_batch("CREATE TABLE handoff_pause (x);")
        .unwrap();
    drop(connection);
    assert!(matches!(
        SqliteLog::<u32>::open(&db.0),
        Err(LogError::UnknownSchema { found: 0, .. })
    ));
}

/// Which fault gives which error (issue 34): another connection holds the
/// file's write lock past the busy timeout (5 s), so the append's
/// transaction never begins: `Unavailable`, nothing written, and the same
/// append sent again once the lock is let go is written.
#[test]
fn an_append_locked_out_past_the_busy_timeout_is_unavailable_and_writes_nothing() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&log);
    let other = Connection::open(&db.0).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let appended = log.append("root", &source(), epoch, &pause("h"));
    assert!(
        matches!(&appended, Err(error @ LogError::Unavailable(_)) if !error.outcome_unknown()),
        "{appended:?}"
    );
    other.execute_batch("ROLLBACK").unwrap();
    assert!(
        log.facts("root", "run").unwrap().pauses.is_empty(),
        "nothing written"
    );
    assert_eq!(
        log.append("root", &source(), epoch, &pause("h")).unwrap(),
        Receipt::Written,
        "sent again, it is written"
    );
}

#[test]
fn the_schema_refuses_a_second_row_for_one_run_even_outside_baton() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&log);
    let _ = log.append("root", &source(), epoch, &pause("h")).unwrap();
    let connection = lock(&log.connection);
    let second = connection.execute(
        "INSERT INTO handoff_pause SELECT root_run_id, run_id, session_id, turn_id, \
         invocation_id, 'other', successor_run_id, successor_invocation_id, pause, epoch \
         FROM handoff_pause",
        [],
    );
    assert!(second.is_err(), "the primary key is the Run");
}

#[test]
fn a_row_altered_outside_baton_is_reported_corrupt_not_guessed() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&log);
    let _ = log.append("root", &source(), epoch, &pause("h")).unwrap();
    let stored: String = lock(&log.connection)
        .query_row("SELECT pause FROM handoff_pause", [], |row| row.get(0))
        .unwrap();
    // The pause names another root Run than its row: corrupt too.
    lock(&log.connection)
        .execute(
            "UPDATE handoff_pause SET pause = json_set(?1, '$.intent.root_run_id', 'other-root')",
            [&stored],
        )
        .unwrap();
    assert!(matches!(
        log.facts("root", "run"),
        Err(LogError::Corrupt { .. })
    ));
    lock(&log.connection)
        .execute("UPDATE handoff_pause SET pause = ?1", [&stored])
        .unwrap();
    assert!(log.facts("root", "run").is_ok(), "restored");
    lock(&log.connection)
        .execute("UPDATE handoff_pause SET handoff_id = 'forged'", [])
        .unwrap();
    assert!(matches!(
        log.facts("root", "run"),
        Err(LogError::Corrupt { .. })
    ));
    lock(&log.connection)
        .execute(
            "UPDATE handoff_pause SET handoff_id = 'h', pause = json_set(pause, '$.execution', 'x')",
            [],
        )
        .unwrap();
    assert!(matches!(
        log.facts("root", "run"),
        Err(LogError::Corrupt { .. })
    ));
}

#[test]
fn a_payload_that_fails_to_encode_is_a_typed_error_and_writes_nothing() {
    #[derive(Clone)]
    struct Unencodable;
    impl serde::Serialize for Unencodable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no"))
        }
    }
    impl<'de> serde::Deserialize<'de> for Unencodable {
        fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
            Err(serde::de::Error::custom("no"))
        }
    }
    impl PartialEq for Unencodable {
        fn eq(&self, _: &Self) -> bool {
            true
        }
    }
    let db = TempDb::new();
    let log: SqliteLog<Unencodable> = SqliteLog::open(&db.0).unwrap();
    let bad = HandoffPause {
        intent: pause("h").intent,
        execution: Unencodable,
    };
    assert!(matches!(
        log.append("root", &source(), Epoch::new(1), &bad),
        Err(LogError::Encode(_))
    ));
    assert!(log.facts("root", "run").unwrap().pauses.is_empty());
}

/// Claims from two connections each issue their own epoch: the epoch is
/// read and advanced under one write lock, never read-then-written. A load
/// test: whether the threads interleave is the scheduler's; the race itself
/// is decided by construction in `a_claim_cannot_come_between_…` below.
#[test]
fn claims_from_two_connections_issue_distinct_epochs() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let claims = std::thread::scope(|scope| {
        let a = scope.spawn(|| (0..20).map(|_| owner(&first)).collect::<Vec<_>>());
        let b = scope.spawn(|| (0..20).map(|_| owner(&second)).collect::<Vec<_>>());
        let mut all = a.join().unwrap();
        all.extend(b.join().unwrap());
        all
    });
    let mut sorted: Vec<u64> = claims.iter().map(|e| e.get()).collect();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (1..=40).collect::<Vec<_>>(),
        "R6: every epoch issued once"
    );
}

/// A file written by baton's schema version 1 (before owner epochs; made by
/// that version's `SqliteLog`, see `tests/data/durable/README.md`) opens,
/// upgrades in place to the current version and keeps its facts: its handed-off Run
/// stays handed off (a claim answers its pause), its open Run can be
/// claimed from epoch 1, and the root is retired whole once its Runs are
/// final (the version-1 pause, which has no epoch row, included).
#[test]
fn a_version_1_file_opens_and_upgrades_in_place() {
    const V1: &[u8] = include_bytes!("../../../tests/data/durable/v1.sqlite");
    let db = TempDb::new();
    std::fs::write(&db.0, V1).unwrap();
    let version = |path: &PathBuf| -> i64 {
        Connection::open(path)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap()
    };
    assert_eq!(version(&db.0), 1, "the fixture is a version-1 file");
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    drop(log);
    assert_eq!(version(&db.0), SCHEMA_VERSION, "upgraded in place");
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(facts.epoch, Epoch::NONE, "written before epochs");
    assert_eq!(reconcile(&facts), Ok(Decision::HandedOff(pause("h"))));
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::HandedOff(pause("h")),
        "R1: a Run handed off under version 1 is never resumed"
    );
    assert!(matches!(
        log.append("root", &source(), Epoch::NONE, &pause("h")),
        Err(LogError::EpochNotIssued { .. })
    ));
    assert_eq!(
        log.claim("root", "successor-run").unwrap(),
        Claim::Owner(Epoch::new(1))
    );
    // Retention finds the version-1 pause, which has no epoch row, and
    // its successor (G5).
    let _ = log
        .finish("root", &source_of("successor-run"), Epoch::new(1), &3)
        .unwrap();
    assert_eq!(
        log.retire("root").unwrap(),
        Retirement::Retired { runs: 2 },
        "R9: the handed-off Run of version 1 and its successor, finished"
    );
    assert_eq!(rows(&log), tables(0, 1, 0, 0), "R10");
}

/// An epoch altered outside baton to one no claim issues (0, or negative)
/// is reported corrupt, never read as "never claimed" or wrapped around:
/// the schema's CHECK refuses it, so the test switches the check off, as a
/// careless tool could.
#[test]
fn a_stored_epoch_that_is_not_positive_is_reported_corrupt() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(owner(&log), Epoch::new(1));
    for forged in [0, -1] {
        let connection = lock(&log.connection);
        connection
            .pragma_update(None, "ignore_check_constraints", true)
            .unwrap();
        connection
            .execute("UPDATE run_epoch SET epoch = ?1", [forged])
            .unwrap();
        drop(connection);
        assert!(
            matches!(log.facts("root", "run"), Err(LogError::Corrupt { .. })),
            "epoch {forged}"
        );
        assert!(
            matches!(log.claim("root", "run"), Err(LogError::Corrupt { .. })),
            "a claim refuses to decide on it too (epoch {forged})"
        );
    }
}

#[test]
fn r6_the_last_epoch_is_epoch_last_and_a_claim_past_it_writes_nothing() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(owner(&log), Epoch::new(1));
    // The largest epoch SQLite's integer holds, less one.
    lock(&log.connection)
        .execute("UPDATE run_epoch SET epoch = ?1", [i64::MAX - 1])
        .unwrap();
    assert_eq!(owner(&log), Epoch::LAST, "the last epoch is issued");
    assert!(matches!(
        log.claim("root", "run"),
        Err(LogError::EpochsExhausted)
    ));
    assert_eq!(log.facts("root", "run").unwrap().epoch, Epoch::LAST);
    let pause = pause("h");
    assert!(
        matches!(
            log.append("root", &source(), Epoch::LAST, &pause),
            Ok(Receipt::Written)
        ),
        "the last epoch still appends"
    );
}

#[path = "async_tests.rs"]
mod async_tests;

/// Runs `held` on a thread whose claim or append is stopped inside its write
/// transaction (after its reads, before its writes: `inside`), and while it
/// is there runs `other` on another thread and connection. Returns both
/// results and whether `other` finished while `held` was inside — which a
/// store without a read-then-write window never lets happen: `other` waits
/// for the write lock `held` holds. `other` is given half a second to show
/// a defect (in the defect's case it needs milliseconds); the verdict of a
/// correct store does not depend on that wait.
fn with_one_inside<A: Send, B: Send>(
    held: impl FnOnce() -> A + Send,
    other: impl FnOnce() -> B + Send,
) -> (A, B, bool) {
    use std::sync::mpsc;
    use std::time::Duration;
    let (inside_tx, inside_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::scope(|scope| {
        let held = scope.spawn(move || {
            inside::on_this_thread(move || {
                let _ = inside_tx.send(());
                let _ = go_rx.recv_timeout(Duration::from_secs(10));
            });
            held()
        });
        inside_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the held operation reaches the inside of its transaction");
        let other = scope.spawn(move || {
            let result = other();
            let _ = done_tx.send(());
            result
        });
        let finished_inside = done_rx.recv_timeout(Duration::from_millis(500)).is_ok();
        let _ = go_tx.send(());
        (held.join().unwrap(), other.join().unwrap(), finished_inside)
    })
}

/// R6 / R1, by construction: a claim on another connection cannot run
/// between a claim's read of the epoch and its write — it waits, then
/// issues the next epoch.
#[test]
fn a_claim_cannot_come_between_another_claims_read_and_write() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let (held, other, finished_inside) = with_one_inside(
        || first.claim("root", "run").unwrap(),
        || second.claim("root", "run").unwrap(),
    );
    assert!(
        !finished_inside,
        "R6: a claim ran inside another claim's read-then-write window"
    );
    assert_eq!(
        (held, other),
        (Claim::Owner(Epoch::new(1)), Claim::Owner(Epoch::new(2))),
        "R6: each epoch issued once, in order"
    );
}

/// R1 / R6, by construction: an append on another connection cannot run
/// between an append's read of the Run and its write: exactly one of two
/// different pauses under the same epoch is written, the other refused.
#[test]
fn an_append_cannot_come_between_another_appends_read_and_write() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&first);
    let (held, other, finished_inside) = with_one_inside(
        || first.append("root", &source(), epoch, &pause("a")),
        || second.append("root", &source(), epoch, &pause("b")),
    );
    assert!(
        !finished_inside,
        "R1: an append ran inside another append's read-then-write window"
    );
    assert!(matches!(held, Ok(Receipt::Written)), "{held:?}");
    assert!(
        matches!(other, Err(LogError::AlreadyHandedOff { .. })),
        "{other:?}"
    );
    assert_eq!(
        reconcile(&first.facts("root", "run").unwrap()),
        Ok(Decision::HandedOff(pause("a")))
    );
}

/// A claim cannot come between an append's read and its write either (R1:
/// no epoch is issued once a pause is durable; the claim waits and then
/// answers the handoff).
#[test]
fn a_claim_cannot_come_between_an_appends_read_and_write() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&first);
    let (held, other, finished_inside) = with_one_inside(
        || first.append("root", &source(), epoch, &pause("a")),
        || second.claim("root", "run").unwrap(),
    );
    assert!(
        !finished_inside,
        "R1: a claim ran inside an append's window"
    );
    assert!(matches!(held, Ok(Receipt::Written)), "{held:?}");
    assert_eq!(other, Claim::HandedOff(pause("a")), "R1");
}

/// Several processes starting at once open one fresh file: each open
/// waits for the others (up to the busy timeout) instead of failing with
/// "database is locked" while another sets the WAL journal or creates the
/// schema. Found by the contract suite, where four connections opened one
/// file at once and one in about forty runs failed.
#[test]
fn connections_opening_one_fresh_file_at_once_all_open() {
    const CONNECTIONS: usize = 8;
    for _ in 0..40 {
        let db = TempDb::new();
        let barrier = std::sync::Barrier::new(CONNECTIONS);
        let opened = std::thread::scope(|scope| {
            let opens: Vec<_> = (0..CONNECTIONS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        SqliteLog::<u32>::open(&db.0).map(drop)
                    })
                })
                .collect();
            opens
                .into_iter()
                .map(|open| open.join().unwrap())
                .collect::<Vec<_>>()
        });
        for open in opened {
            open.unwrap();
        }
    }
}

/// `facts` is one snapshot (issue 37), by construction: held between its
/// read of the epoch and its read of the pause, another connection claims
/// the Run (epoch 2) and hands it off under that epoch — and commits, as a
/// reader never blocks a writer in WAL. The held read still answers the
/// facts of its first read (epoch 1, no pause), never epoch 1 with the
/// pause of epoch 2, which were never true together.
#[test]
fn the_facts_are_one_snapshot_even_when_a_writer_commits_between_the_reads() {
    use std::sync::mpsc;
    use std::time::Duration;
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(owner(&first), Epoch::new(1));
    let (between_tx, between_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let read = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            inside::between_reads_on_this_thread(move || {
                let _ = between_tx.send(());
                let _ = go_rx.recv_timeout(Duration::from_secs(10));
            });
            first.facts("root", "run").unwrap()
        });
        between_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the read stops between its two reads");
        let epoch = owner(&second);
        assert_eq!(epoch, Epoch::new(2));
        assert_eq!(
            second
                .append("root", &source(), epoch, &pause("h"))
                .unwrap(),
            Receipt::Written,
            "the writer commits while the read is open"
        );
        let _ = go_tx.send(());
        reader.join().unwrap()
    });
    assert_eq!(
        (read.epoch, read.pauses.len()),
        (Epoch::new(1), 0),
        "one snapshot: the facts as they were at the first read"
    );
    let now = first.facts("root", "run").unwrap();
    assert_eq!((now.epoch, now.pauses.len()), (Epoch::new(2), 1));
}

/// The final fates and retention every log keeps (the shared test, as on
/// `MemoryLog`), on one SQLite file, then counted in the file itself
/// (R10): one open Run's epoch and one tombstone, no pause, no finish.
#[test]
fn r8_r9_r10_the_sqlite_log_keeps_the_final_fates_and_retention() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    the_final_fates_hold(&log);
    assert_eq!(rows(&log), tables(0, 1, 1, 0), "R10: no history kept");
}

#[test]
fn r8_r9_r10_the_sqlite_log_keeps_the_final_fates_and_retention_through_its_async_form() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    the_final_fates_hold(&ViaAsync::new(&log));
    assert_eq!(rows(&log), tables(0, 1, 1, 0), "R10: no history kept");
}

/// R8 on one file: a finish is fenced as an append (a stale epoch's is
/// refused and writes nothing); once durable, a claim answers `Finished`
/// and issues no epoch; the Run takes no pause and no other outcome; the
/// identical finish again is idempotent; a handed-off Run takes no finish;
/// and all of it is read back after the log is closed and reopened.
#[test]
fn r8_a_finished_run_is_never_resumed_and_takes_no_other_fate() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let stale = owner(&log);
    let epoch = owner(&log);
    let refused = log.finish("root", &source(), stale, &7);
    assert!(
        matches!(refused, Err(LogError::Fenced { epoch: e, current: c }) if e == stale && c == epoch),
        "R7/R8: a zombie's finish is fenced: {refused:?}"
    );
    assert_eq!(
        rows(&log),
        tables(0, 0, 1, 0),
        "a fenced finish writes nothing"
    );
    assert_eq!(
        log.finish("root", &source(), epoch, &7).unwrap(),
        Receipt::Written
    );
    assert_eq!(
        log.finish("root", &source(), epoch, &7).unwrap(),
        Receipt::AlreadyDurable,
        "the identical finish again (a lost reply) is idempotent"
    );
    assert!(matches!(
        log.finish("root", &source(), epoch, &8),
        Err(LogError::AlreadyFinished { .. })
    ));
    assert!(
        matches!(
            log.append("root", &source(), epoch, &pause("h")),
            Err(LogError::AlreadyFinished { .. })
        ),
        "R8: a finished Run is never handed off"
    );
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::Finished(7),
        "R8: never resumed"
    );
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(facts.epoch, epoch, "R8: no epoch issued once finished");
    assert!(facts.pauses.is_empty());
    assert_eq!(
        facts.finished,
        Some(Finished {
            source: source(),
            outcome: 7
        })
    );

    // A handed-off Run takes no finish.
    let handed = source_of("handed-off-run");
    let hop = claim_of(&log, "root", "handed-off-run");
    assert_eq!(
        log.append("root", &handed, hop, &pause("h")).unwrap(),
        Receipt::Written
    );
    assert!(
        matches!(
            log.finish("root", &handed, hop, &9),
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "R8: a handed-off Run never finishes"
    );
    assert_eq!(rows(&log), tables(1, 0, 2, 1), "one row per fate");

    log.close();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::Finished(7),
        "R8: the finish is durable"
    );
    assert_eq!(log.facts("root", "run").unwrap(), facts);
    assert_eq!(
        log.finish("root", &source(), epoch, &7).unwrap(),
        Receipt::AlreadyDurable
    );
    assert!(matches!(
        log.finish("root", &source(), stale, &7),
        Err(LogError::Fenced { .. })
    ));
    assert_eq!(
        log.claim("root", "handed-off-run").unwrap(),
        Claim::HandedOff(pause("h"))
    );
    assert_eq!(rows(&log), tables(1, 0, 2, 1));
}

/// R9 on one file: a root with an open Run is not retired (`RunOpen`,
/// nothing written); once every Run of it is final it is, and from then
/// on every claim under it answers `Retired` (a Run of it, or one never
/// claimed: no epoch is issued again), every zombie's append or finish
/// under its old epoch is refused `Retired` and writes nothing, a second
/// retirement is `AlreadyRetired`; another root is untouched; and the
/// reopened file keeps all of it.
#[test]
fn r9_a_root_is_retired_only_once_its_runs_are_final_and_its_zombies_never_write() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let handing = claim_of(&log, "root", "run");
    let finisher = source_of("successor-run");
    let zombie = claim_of(&log, "root", "successor-run");
    let finishing = claim_of(&log, "root", "successor-run");
    assert_eq!(
        log.append("root", &source(), handing, &pause("h")).unwrap(),
        Receipt::Written
    );
    let other_root = claim_of(&log, "other-root", "run");
    let before = rows(&log);
    let refused = log.retire("root");
    assert!(
        matches!(&refused, Err(LogError::RunOpen { root_run_id, run_id }) if root_run_id == "root" && run_id == "successor-run"),
        "R9: an open Run is never retired: {refused:?}"
    );
    assert_eq!(rows(&log), before, "a refused retirement writes nothing");
    assert_eq!(
        log.finish("root", &finisher, finishing, &7).unwrap(),
        Receipt::Written
    );
    assert_eq!(log.retire("root").unwrap(), Retirement::Retired { runs: 2 });
    let after = rows(&log);
    assert_eq!(
        after,
        tables(0, 1, 1, 0),
        "the other root's Run and the tombstone"
    );
    for run in ["run", "successor-run", "never-claimed"] {
        assert_eq!(
            log.claim("root", run).unwrap(),
            Claim::Retired,
            "R9: {run} is never resumed"
        );
        let facts = log.facts("root", run).unwrap();
        assert!(facts.retired, "{run}");
        assert_eq!(reconcile(&facts), Ok(Decision::Retired));
    }
    let zombies = |log: &SqliteLog<u32>| {
        for epoch in [handing, zombie, finishing, Epoch::new(4)] {
            assert!(
                matches!(
                    log.append("root", &source(), epoch, &pause("h")),
                    Err(LogError::Retired { .. })
                ),
                "R9: a zombie's append under epoch {epoch} never writes"
            );
            for outcome in [7, 8] {
                assert!(
                    matches!(
                        log.finish("root", &finisher, epoch, &outcome),
                        Err(LogError::Retired { .. })
                    ),
                    "R9: a zombie's finish under epoch {epoch} never writes"
                );
            }
        }
    };
    zombies(&log);
    assert_eq!(
        log.retire("root").unwrap(),
        Retirement::AlreadyRetired,
        "idempotent"
    );
    assert_eq!(
        rows(&log),
        after,
        "R9: nothing written after the retirement"
    );
    assert!(matches!(
        log.retire("other-root"),
        Err(LogError::RunOpen { .. })
    ));
    assert_eq!(log.facts("other-root", "run").unwrap().epoch, other_root);

    log.close();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Retired);
    zombies(&log);
    assert_eq!(log.retire("root").unwrap(), Retirement::AlreadyRetired);
    assert_eq!(rows(&log), after, "the reopened file keeps the tombstone");
}

/// R10 on one file: after its retirement a root Run leaves, in every
/// table of the file, its tombstone and nothing else, whatever its Runs'
/// fates were (handed off, finished); the Runs of the roots not retired
/// keep all their rows.
#[test]
fn r10_a_retired_root_leaves_only_its_tombstone_in_every_table() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    // `root`: a handoff and its successor's finish, after a takeover.
    let epoch = claim_of(&log, "root", "run");
    let _ = log.append("root", &source(), epoch, &pause("h")).unwrap();
    let _ = claim_of(&log, "root", "successor-run");
    let epoch = claim_of(&log, "root", "successor-run");
    let _ = log
        .finish("root", &source_of("successor-run"), epoch, &1)
        .unwrap();
    // `done`: three finished Runs; `kept`: one finished, one open.
    for (root, run) in [("done", "a"), ("done", "b"), ("done", "c"), ("kept", "a")] {
        let epoch = claim_of(&log, root, run);
        let _ = log.finish(root, &source_of(run), epoch, &2).unwrap();
    }
    let _ = claim_of(&log, "kept", "b");
    assert_eq!(rows(&log), tables(1, 0, 7, 5));
    assert_eq!(log.retire("root").unwrap(), Retirement::Retired { runs: 2 });
    assert_eq!(log.retire("done").unwrap(), Retirement::Retired { runs: 3 });
    for root in ["root", "done"] {
        assert_eq!(
            rows_of(&log, root),
            tables(0, 1, 0, 0),
            "R10: {root} leaves its tombstone only"
        );
    }
    assert_eq!(rows_of(&log, "kept"), tables(0, 0, 2, 1), "untouched");
    assert_eq!(rows(&log), tables(0, 2, 2, 1));
}

/// R9 / R10 at scale: a claim's, an append's and a finish's tombstone
/// lookup, and a retirement's search for a root's Runs, use the tables'
/// primary keys (SQLite's plan says `SEARCH … USING PRIMARY KEY`, never
/// `SCAN`): their cost does not grow with the number of retired roots or
/// of Runs kept.
#[test]
fn r10_the_tombstone_and_a_roots_runs_are_found_by_primary_key() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let connection = lock(&log.connection);
    for (query, searches) in [(RETIRED, 1), (RUNS_OF, 3)] {
        let plan: Vec<String> = connection
            .prepare(&format!("EXPLAIN QUERY PLAN {query}"))
            .unwrap()
            .query_map(["root"], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let by_key = plan
            .iter()
            .filter(|step| step.starts_with("SEARCH") && step.contains("PRIMARY KEY"))
            .count();
        assert_eq!(by_key, searches, "{query}: {plan:?}");
        assert!(
            !plan
                .iter()
                .any(|step| step.starts_with("SCAN ") && step != "SCAN CONSTANT ROW"),
            "no table is scanned: {query}: {plan:?}"
        );
    }
}

/// R8 by construction: a claim on another connection cannot run between
/// a finish's read and its write; it waits, then answers the outcome and
/// issues no epoch.
#[test]
fn r8_a_claim_cannot_come_between_a_finishs_read_and_write() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&first);
    let (held, other, finished_inside) = with_one_inside(
        || first.finish("root", &source(), epoch, &7),
        || second.claim("root", "run").unwrap(),
    );
    assert!(!finished_inside, "R8: a claim ran inside a finish's window");
    assert!(matches!(held, Ok(Receipt::Written)), "{held:?}");
    assert_eq!(other, Claim::Finished(7), "R8");
    assert_eq!(first.facts("root", "run").unwrap().epoch, epoch);
}

/// R9 by construction: a claim of a new Run of the root, on another
/// connection, cannot run between a retirement's read of the root's Runs
/// and its deletion; it waits, then answers `Retired` and writes no epoch.
#[test]
fn r9_a_claim_cannot_come_between_a_retirements_read_and_write() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&first);
    let _ = first.finish("root", &source(), epoch, &7).unwrap();
    let (held, other, finished_inside) = with_one_inside(
        || first.retire("root"),
        || second.claim("root", "new-run").unwrap(),
    );
    assert!(
        !finished_inside,
        "R9: a claim ran inside a retirement's window"
    );
    assert!(
        matches!(held, Ok(Retirement::Retired { runs: 1 })),
        "{held:?}"
    );
    assert_eq!(other, Claim::Retired, "R9");
    assert_eq!(rows(&first), tables(0, 1, 0, 0));
}

/// A file of schema version 2 (owner epochs, before finishing and
/// retention), written here with version 2's own statements (as baton
/// made them at that version), opens, upgrades in place to the current
/// version and keeps its facts: its handed-off Run stays handed off, its open Run
/// keeps its epoch and can be claimed, finished and retired. A file of a
/// version newer than this baton's is refused.
#[test]
fn a_version_2_file_opens_and_upgrades_in_place_keeping_its_facts() {
    const V2: &str = "
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
        ALTER TABLE handoff_pause ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0 CHECK (epoch >= 0);
        CREATE TABLE run_epoch (
            root_run_id TEXT NOT NULL,
            run_id      TEXT NOT NULL,
            epoch       INTEGER NOT NULL CHECK (epoch > 0),
            PRIMARY KEY (root_run_id, run_id)
        ) STRICT, WITHOUT ROWID;
        PRAGMA journal_mode = wal;
        PRAGMA user_version = 2;
        INSERT INTO run_epoch VALUES ('root', 'run', 2), ('root', 'open-run', 3);
    ";
    let db = TempDb::new();
    let connection = Connection::open(&db.0).unwrap();
    connection.execute_batch(V2).unwrap();
    let json = serde_json::to_string(&pause("h")).unwrap();
    connection
        .execute(
            "INSERT INTO handoff_pause VALUES ('root', 'run', 'session', 'turn', 'invocation', \
             'h', 'successor-run', 'successor-invocation', ?1, 2)",
            [&json],
        )
        .unwrap();
    drop(connection);
    let version = |path: &PathBuf| -> i64 {
        Connection::open(path)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap()
    };
    assert_eq!(version(&db.0), 2, "a version-2 file");

    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(version(&db.0), SCHEMA_VERSION, "upgraded in place");
    assert_eq!(rows(&log), tables(1, 0, 2, 0), "every row kept");
    let handed = log.facts("root", "run").unwrap();
    assert_eq!(handed.epoch, Epoch::new(2));
    assert_eq!(reconcile(&handed), Ok(Decision::HandedOff(pause("h"))));
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::HandedOff(pause("h")),
        "R1: a Run handed off under version 2 is never resumed"
    );
    let open = log.facts("root", "open-run").unwrap();
    assert_eq!(
        (open.epoch, reconcile(&open)),
        (Epoch::new(3), Ok(Decision::Resumable))
    );
    log.close();

    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(
        version(&db.0),
        SCHEMA_VERSION,
        "opened again: nothing to do"
    );
    let epoch = claim_of(&log, "root", "open-run");
    assert_eq!(epoch, Epoch::new(4), "the epochs go on from version 2's");
    assert_eq!(
        log.finish("root", &source_of("open-run"), epoch, &5)
            .unwrap(),
        Receipt::Written
    );
    assert_eq!(log.claim("root", "open-run").unwrap(), Claim::Finished(5));
    assert!(
        matches!(log.retire("root"), Err(LogError::RunOpen { run_id, .. }) if run_id == "successor-run"),
        "G5: version 2's handoff keeps its root until its successor is final"
    );
    let epoch = claim_of(&log, "root", "successor-run");
    let _ = log
        .finish("root", &source_of("successor-run"), epoch, &6)
        .unwrap();
    assert_eq!(log.retire("root").unwrap(), Retirement::Retired { runs: 3 });
    assert_eq!(rows(&log), tables(0, 1, 0, 0));

    let newer = TempDb::new();
    let connection = Connection::open(&newer.0).unwrap();
    connection
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(connection);
    assert!(matches!(
        SqliteLog::<u32>::open(&newer.0),
        Err(LogError::UnknownSchema { found, expected: SCHEMA_VERSION }) if found == SCHEMA_VERSION + 1
    ));
}

/// Finishes and tombstones survive closing the log and opening the file
/// again, as pauses and epochs do: a finished Run is still finished (its
/// outcome and source whole), a retired root still retired, a Run open
/// before still open at its epoch.
#[test]
fn r8_r9_finishes_and_tombstones_survive_closing_and_reopening() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = claim_of(&log, "finished-root", "run");
    let _ = log.finish("finished-root", &source(), epoch, &11).unwrap();
    let epoch = claim_of(&log, "retired-root", "run");
    let _ = log.finish("retired-root", &source(), epoch, &12).unwrap();
    let _ = log.retire("retired-root").unwrap();
    let open = claim_of(&log, "open-root", "run");
    let before = rows(&log);
    log.close();

    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(rows(&log), before);
    let finished = log.facts("finished-root", "run").unwrap();
    assert_eq!(
        finished.finished,
        Some(Finished {
            source: source(),
            outcome: 11
        })
    );
    assert_eq!(
        log.claim("finished-root", "run").unwrap(),
        Claim::Finished(11)
    );
    assert_eq!(log.claim("retired-root", "run").unwrap(), Claim::Retired);
    assert_eq!(
        log.retire("retired-root").unwrap(),
        Retirement::AlreadyRetired
    );
    assert_eq!(log.facts("open-root", "run").unwrap().epoch, open);
    assert_eq!(
        log.retire("finished-root").unwrap(),
        Retirement::Retired { runs: 1 }
    );
}

/// A finish row altered outside baton is never guessed at: an outcome
/// that does not decode is `Corrupt` for a read, a claim and a
/// retirement (which then removes nothing); a pause and a finish both
/// stored for one Run (two final fates, which baton never writes) are
/// `Contradictory` for a claim, a write and a retirement alike.
#[test]
fn a_finish_row_altered_outside_baton_is_refused_and_never_retired() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&log);
    let _ = log.finish("root", &source(), epoch, &7).unwrap();
    lock(&log.connection)
        .execute("UPDATE run_finish SET outcome = '\"seven\"'", [])
        .unwrap();
    let before = rows(&log);
    assert!(matches!(
        log.facts("root", "run"),
        Err(LogError::Corrupt { .. })
    ));
    assert!(matches!(
        log.claim("root", "run"),
        Err(LogError::Corrupt { .. })
    ));
    assert!(matches!(log.retire("root"), Err(LogError::Corrupt { .. })));
    assert_eq!(rows(&log), before, "nothing removed");

    lock(&log.connection)
        .execute("UPDATE run_finish SET outcome = '7'", [])
        .unwrap();
    let json = serde_json::to_string(&pause("h")).unwrap();
    lock(&log.connection)
        .execute(
            "INSERT INTO handoff_pause VALUES ('root', 'run', 'session', 'turn', 'invocation', \
             'h', 'successor-run', 'successor-invocation', ?1, ?2, 0)",
            rusqlite::params![json, i64::try_from(epoch.get()).unwrap()],
        )
        .unwrap();
    let before = rows(&log);
    let two_fates = |result: &dyn std::fmt::Debug| {
        let result = format!("{result:?}");
        assert!(result.contains("Contradictory(TwoFates"), "{result}");
    };
    two_fates(&log.claim("root", "run"));
    two_fates(&log.append("root", &source(), epoch, &pause("h")));
    two_fates(&log.finish("root", &source(), epoch, &7));
    two_fates(&log.retire("root"));
    assert_eq!(rows(&log), before, "nothing written or removed");
}

/// The runtime's own connection on the log's file, as the docs of
/// [`SqliteLog::claim_in`] set it up, with its own table `jobs`.
fn callers_connection(db: &TempDb) -> Connection {
    let connection = Connection::open(&db.0).unwrap();
    connection.busy_timeout(BUSY_TIMEOUT).unwrap();
    connection
        .pragma_update(None, "synchronous", "FULL")
        .unwrap();
    connection
        .execute_batch("CREATE TABLE IF NOT EXISTS jobs (run_id TEXT NOT NULL, epoch INTEGER)")
        .unwrap();
    connection
}

/// The caller's transaction, holding the write lock from its start.
fn immediate(connection: &mut Connection) -> Transaction<'_> {
    connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap()
}

/// The caller's own row for `run_id` under `epoch`, in `tx`.
fn job(tx: &Transaction<'_>, run_id: &str, epoch: Epoch) {
    tx.execute(
        "INSERT INTO jobs (run_id, epoch) VALUES (?1, ?2)",
        params![run_id, i64::try_from(epoch.get()).unwrap()],
    )
    .unwrap();
}

/// [`tables`], and the caller's `jobs` with its number of rows.
fn tables_and_jobs(
    pauses: i64,
    tombstones: i64,
    epochs: i64,
    finishes: i64,
    jobs: i64,
) -> Vec<(String, i64)> {
    let mut all = tables(pauses, tombstones, epochs, finishes);
    all.push(("jobs".to_owned(), jobs));
    all.sort();
    all
}

/// The owner's epoch a claim inside `tx` answered.
fn owner_in(tx: &Transaction<'_>, root_run_id: &str, run_id: &str) -> Epoch {
    match SqliteLog::<u32>::claim_in(tx, root_run_id, run_id).unwrap() {
        Claim::Owner(epoch) => epoch,
        other => panic!("{root_run_id}/{run_id} is not open: {other:?}"),
    }
}

/// R5, R6, R8 inside the caller's transaction, committed: the claims, the
/// pause and the finish made in it are durable with the caller's own rows,
/// and the fence reads them as the store's own: the epochs issued are
/// taken, the handed-off Run and the finished Run are final.
#[test]
fn r5_r6_r8_writes_in_the_callers_transaction_committed_are_durable_with_its_own_rows() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let mut connection = callers_connection(&db);

    let tx = immediate(&mut connection);
    let epoch = owner_in(&tx, "root", "run");
    assert_eq!(epoch, Epoch::new(1));
    job(&tx, "run", epoch);
    tx.commit().unwrap();
    assert_eq!(rows(&log), tables_and_jobs(0, 0, 1, 0, 1));
    assert_eq!(log.facts("root", "run").unwrap().epoch, epoch);

    let tx = immediate(&mut connection);
    assert_eq!(
        SqliteLog::append_in(&tx, "root", &source(), epoch, &pause("h")).unwrap(),
        Receipt::Written
    );
    let finishing = owner_in(&tx, "root", "successor-run");
    assert_eq!(finishing, Epoch::new(1));
    assert_eq!(
        SqliteLog::<u32>::finish_in(&tx, "root", &source_of("successor-run"), finishing, &7)
            .unwrap(),
        Receipt::Written
    );
    job(&tx, "successor-run", finishing);
    tx.commit().unwrap();

    assert_eq!(rows(&log), tables_and_jobs(1, 0, 2, 1, 2));
    let handed = log.facts("root", "run").unwrap();
    assert_eq!(
        handed.pauses.len(),
        1,
        "R5: the pause committed with the job"
    );
    assert_eq!(handed.pauses[0].pause, pause("h"));
    assert_eq!(reconcile(&handed), Ok(Decision::HandedOff(pause("h"))));
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::HandedOff(pause("h"))
    );
    assert_eq!(
        log.claim("root", "successor-run").unwrap(),
        Claim::Finished(7),
        "R8: a Run finished in the caller's transaction is never resumed"
    );
    assert!(
        matches!(
            log.append("root", &source(), epoch, &pause("other")),
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "R6: no second pause for the Run"
    );
    // Again inside a transaction: the answers the fence gives the store's own.
    let tx = immediate(&mut connection);
    assert_eq!(
        SqliteLog::append_in(&tx, "root", &source(), epoch, &pause("h")).unwrap(),
        Receipt::AlreadyDurable
    );
    assert_eq!(
        SqliteLog::<u32>::claim_in(&tx, "root", "successor-run").unwrap(),
        Claim::Finished(7)
    );
    tx.commit().unwrap();
    assert_eq!(rows(&log), tables_and_jobs(1, 0, 2, 1, 2));
}

/// R6 inside the caller's transaction, rolled back: a claim, an append and
/// a finish made in it wrote nothing, and the fence is as if they had
/// never run: the next claim, through the store, issues the same epoch
/// the rolled-back one answered.
#[test]
fn r6_writes_in_the_callers_transaction_rolled_back_leave_nothing_and_the_next_claim_issues_the_same_epoch()
 {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let mut connection = callers_connection(&db);

    let tx = immediate(&mut connection);
    let epoch = owner_in(&tx, "root", "run");
    assert_eq!(epoch, Epoch::new(1));
    job(&tx, "run", epoch);
    assert_eq!(
        SqliteLog::append_in(&tx, "root", &source(), epoch, &pause("h")).unwrap(),
        Receipt::Written
    );
    tx.rollback().unwrap();
    assert_eq!(
        rows(&log),
        tables_and_jobs(0, 0, 0, 0, 0),
        "nothing written"
    );
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::Owner(epoch),
        "R6: the rolled-back epoch was never issued: the next claim issues it"
    );

    let tx = immediate(&mut connection);
    let finishing = owner_in(&tx, "root", "run");
    assert_eq!(finishing, Epoch::new(2));
    assert_eq!(
        SqliteLog::<u32>::finish_in(&tx, "root", &source(), finishing, &7).unwrap(),
        Receipt::Written
    );
    job(&tx, "run", finishing);
    drop(tx); // rolls back
    assert_eq!(
        rows(&log),
        tables_and_jobs(0, 0, 1, 0, 0),
        "the store's claim only"
    );
    let facts = log.facts("root", "run").unwrap();
    assert_eq!((facts.epoch, facts.finished), (Epoch::new(1), None));
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Owner(finishing));
}

/// R6 needs the write lock from the first read: a caller's DEFERRED
/// transaction that has not written (no lock, or only a read snapshot) is
/// refused by every write, with a typed error, before anything is read or
/// written, and stays usable; one that has written holds the lock and is
/// taken. A file without the schema is refused as well.
#[test]
fn r6_a_callers_transaction_without_the_write_lock_is_refused_and_writes_nothing() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&log);
    let mut connection = callers_connection(&db);
    let refused = |result: Result<(), LogError>, what: &str| {
        assert!(
            matches!(&result, Err(LogError::Unavailable(source)) if source.to_string().contains("no write lock")),
            "{what}: {result:?}"
        );
    };

    for read_first in [false, true] {
        let tx = connection.transaction().unwrap(); // DEFERRED
        if read_first {
            let _: i64 = tx
                .query_row("SELECT count(*) FROM jobs", [], |row| row.get(0))
                .unwrap();
        }
        refused(
            SqliteLog::<u32>::claim_in(&tx, "root", "run").map(drop),
            "claim",
        );
        refused(
            SqliteLog::append_in(&tx, "root", &source(), epoch, &pause("h")).map(drop),
            "append",
        );
        refused(
            SqliteLog::<u32>::finish_in(&tx, "root", &source(), epoch, &7).map(drop),
            "finish",
        );
        refused(
            SqliteLog::<u32>::retire_in(&tx, "other-root").map(drop),
            "retire",
        );
        // Still the caller's to use: its own row commits.
        job(&tx, "run", epoch);
        tx.commit().unwrap();
    }
    assert_eq!(
        rows(&log),
        tables_and_jobs(0, 0, 1, 0, 2),
        "the store's claim and the caller's rows only"
    );
    assert_eq!(log.facts("root", "run").unwrap().epoch, epoch);

    // A DEFERRED transaction that has written holds the lock: taken.
    let tx = connection.transaction().unwrap();
    job(&tx, "run", epoch);
    assert_eq!(
        SqliteLog::append_in(&tx, "root", &source(), epoch, &pause("h")).unwrap(),
        Receipt::Written
    );
    tx.commit().unwrap();
    assert_eq!(rows(&log), tables_and_jobs(1, 0, 1, 0, 3));

    // A file `SqliteLog::open` never set up.
    let bare = TempDb::new();
    let mut connection = callers_connection(&bare);
    let tx = immediate(&mut connection);
    let unknown = SqliteLog::<u32>::claim_in(&tx, "root", "run");
    assert!(
        matches!(
            unknown,
            Err(LogError::UnknownSchema {
                found: 0,
                expected: SCHEMA_VERSION
            })
        ),
        "{unknown:?}"
    );
}

/// R9 inside the caller's transaction: a retirement rolled back leaves
/// every row of the root (its Runs still final, the root not retired);
/// committed, the root's rows are gone with its tombstone written, beside
/// the caller's own row, and a claim under it answers Retired.
#[test]
fn r9_a_retirement_in_the_callers_transaction_holds_if_committed_and_leaves_nothing_if_rolled_back()
{
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let handing = owner(&log);
    assert_eq!(
        log.append("root", &source(), handing, &pause("h")).unwrap(),
        Receipt::Written
    );
    let finishing = claim_of(&log, "root", "successor-run");
    assert_eq!(
        log.finish("root", &source_of("successor-run"), finishing, &7)
            .unwrap(),
        Receipt::Written
    );
    let open = claim_of(&log, "other-root", "run");
    let mut connection = callers_connection(&db);
    let before = tables_and_jobs(1, 0, 3, 1, 0);
    assert_eq!(rows(&log), before);

    let tx = immediate(&mut connection);
    assert_eq!(
        SqliteLog::<u32>::retire_in(&tx, "root").unwrap(),
        Retirement::Retired { runs: 2 }
    );
    job(&tx, "root", Epoch::new(1));
    tx.rollback().unwrap();
    assert_eq!(
        rows(&log),
        before,
        "a rolled-back retirement leaves every row"
    );
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::HandedOff(pause("h"))
    );

    let tx = immediate(&mut connection);
    let refused = SqliteLog::<u32>::retire_in(&tx, "other-root");
    assert!(
        matches!(&refused, Err(LogError::RunOpen { .. })),
        "R9: an open Run is never retired: {refused:?}"
    );
    assert_eq!(
        SqliteLog::<u32>::retire_in(&tx, "root").unwrap(),
        Retirement::Retired { runs: 2 }
    );
    job(&tx, "root", Epoch::new(1));
    tx.commit().unwrap();
    assert_eq!(rows(&log), tables_and_jobs(0, 1, 1, 0, 1));
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Retired);
    assert_eq!(log.retire("root").unwrap(), Retirement::AlreadyRetired);
    assert!(matches!(
        log.finish("root", &source(), handing, &1),
        Err(LogError::Retired { .. })
    ));
    assert_eq!(log.facts("other-root", "run").unwrap().epoch, open);
}

/// R6 while the caller's transaction is open: the write lock it holds
/// keeps every other connection's claim waiting until it ends, and that
/// claim then reads what the caller decided: the epoch after the one
/// committed, or, after a rollback, the very epoch the rolled-back claim
/// answered (never issued).
#[test]
fn r6_a_claim_elsewhere_waits_for_the_callers_transaction_and_reads_its_commit_or_rollback() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let mut connection = callers_connection(&db);
    for (run, commit, expected) in [("rolled-back", false, 1), ("committed", true, 2)] {
        let tx = immediate(&mut connection);
        let epoch = owner_in(&tx, "root", run);
        assert_eq!(epoch, Epoch::new(1));
        job(&tx, run, epoch);
        std::thread::scope(|scope| {
            let other = scope.spawn(|| log.claim("root", run));
            std::thread::sleep(Duration::from_millis(200));
            assert!(
                !other.is_finished(),
                "another connection's claim waits for the caller's transaction"
            );
            if commit {
                tx.commit().unwrap();
            } else {
                tx.rollback().unwrap();
            }
            assert_eq!(
                other.join().unwrap().unwrap(),
                Claim::Owner(Epoch::new(expected)),
                "{run}"
            );
        });
    }
    assert_eq!(rows(&log), tables_and_jobs(0, 0, 2, 0, 1));
}

/// G5 by age without scanning every row: a sweep's read of its candidates
/// goes through the index on the finishes' end time (SQLite's own plan
/// says so), and a root it retires leaves its tombstone only (R10).
#[test]
fn g5_a_sweep_reads_its_candidates_through_the_end_time_index() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let plan: Vec<String> = {
        let connection = lock(&log.connection);
        let mut statement = connection
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::sweep::CANDIDATES))
            .unwrap();
        statement
            .query_map(params![0, 0, "", 10], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert!(
        plan.iter()
            .any(|step| step.contains("INDEX run_finish_by_end")),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|step| step.starts_with("SCAN run_finish")),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|step| step.contains("TEMP B-TREE")),
        "ordered by the index: {plan:?}"
    );

    let epoch = claim_of(&log, "root", "run");
    let _ = log.finish("root", &source(), epoch, &1).unwrap();
    let _ = claim_of(&log, "live", "run");
    let sweep = log
        .retire_ended(std::time::SystemTime::now(), None, 10)
        .unwrap();
    assert_eq!(
        (sweep.retired, sweep.runs, sweep.kept, sweep.next),
        (1, 1, 0, None)
    );
    assert_eq!(rows_of(&log, "root"), tables(0, 1, 0, 0), "R10");
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Retired);
}
