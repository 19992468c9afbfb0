//! [`SqliteLog`] on real files: the log rules, durability across reopening,
//! the schema version, and corrupt rows.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;
use crate::durable::tests::{ViaAsync, pause, source, the_log_rules_hold};
use crate::durable::{Decision, reconcile};

/// Claims `(root, run)` in `log`: the epoch its worker holds.
pub(super) fn owner(log: &SqliteLog<u32>) -> Epoch {
    match log.claim("root", "run").unwrap() {
        Claim::Owner(epoch) => epoch,
        other => panic!("the Run is not open: {other:?}"),
    }
}

/// Claims the Run `run_id` of `root_run_id` in `log`: the epoch its
/// worker holds.
pub(super) fn claim_of(log: &SqliteLog<u32>, root_run_id: &str, run_id: &str) -> Epoch {
    match log.claim(root_run_id, run_id).unwrap() {
        Claim::Owner(epoch) => epoch,
        other => panic!("{root_run_id}/{run_id} is not open: {other:?}"),
    }
}

/// The invocation of the Run `run_id` (within root Run `root`, as
/// [`source`]'s): a Run other than `run`, which [`pause`] may hand off too.
pub(super) fn source_of(run_id: &str) -> Invocation {
    Invocation {
        run_id: run_id.into(),
        invocation_id: format!("{run_id}-invocation"),
        ..source()
    }
}

/// Every table of the file with its number of rows, by name: all that the
/// log keeps, whatever tables a schema version adds.
pub(super) fn rows(log: &SqliteLog<u32>) -> Vec<(String, i64)> {
    rows_where(log, "")
}

/// Every table of the file with its number of rows of root Run
/// `root_run_id` (every table is keyed by the root Run first).
pub(super) fn rows_of(log: &SqliteLog<u32>, root_run_id: &str) -> Vec<(String, i64)> {
    rows_where(log, &format!("WHERE root_run_id = '{root_run_id}'"))
}

pub(super) fn rows_where(log: &SqliteLog<u32>, filter: &str) -> Vec<(String, i64)> {
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
pub(super) fn tables(
    pauses: i64,
    tombstones: i64,
    epochs: i64,
    finishes: i64,
) -> Vec<(String, i64)> {
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

/// The log's connection waits `BUSY_TIMEOUT` for another's write lock: its
/// own setting, not rusqlite's default (5 s), which it differs from so
/// that this sees it (issue 63).
#[test]
fn the_log_sets_its_own_busy_timeout() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let set: i64 = lock(&log.connection)
        .pragma_query_value(None, "busy_timeout", |row| row.get(0))
        .unwrap();
    assert_eq!(set, BUSY_TIMEOUT.as_millis() as i64);
    let default: i64 = Connection::open(&db.0)
        .unwrap()
        .pragma_query_value(None, "busy_timeout", |row| row.get(0))
        .unwrap();
    assert_ne!(set, default, "the log's value differs from rusqlite's own");
}

/// Which fault gives which error (issue 34): another connection holds the
/// file's write lock past the busy timeout (10 s), so the append's
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
