//! [`SqliteLog`] on real files: the log rules, durability across reopening,
//! the schema version, and corrupt rows.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;
use crate::durable::tests::{ViaAsync, pause, source, the_log_rules_hold};
use crate::durable::{Decision, reconcile};

/// Claims `(root, run)` in `log`: the epoch its worker holds.
fn owner(log: &SqliteLog<u32>) -> Epoch {
    match log.claim("root", "run").unwrap() {
        Claim::Owner(epoch) => epoch,
        Claim::HandedOff(pause) => panic!("already handed off: {pause:?}"),
    }
}

/// A fresh database path in the temp dir, removed (with its WAL) on drop.
struct TempDb(PathBuf);

impl TempDb {
    fn new() -> Self {
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

#[test]
fn a_file_that_is_not_a_database_is_a_storage_error_not_a_panic() {
    let db = TempDb::new();
    std::fs::write(
        &db.0,
        b"this is not a SQLite database, just some bytes......",
    )
    .unwrap();
    assert!(matches!(
        SqliteLog::<u32>::open(&db.0),
        Err(LogError::Storage(_))
    ));
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

#[test]
fn two_processes_racing_to_hand_off_one_run_cannot_both_succeed() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&first);
    let results = std::thread::scope(|scope| {
        let a = scope.spawn(|| first.append("root", &source(), epoch, &pause("a")));
        let b = scope.spawn(|| second.append("root", &source(), epoch, &pause("b")));
        [a.join().unwrap(), b.join().unwrap()]
    });
    let written = results
        .iter()
        .filter(|r| matches!(r, Ok(Receipt::Written)))
        .count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(LogError::AlreadyHandedOff { .. })))
        .count();
    assert_eq!((written, refused), (1, 1), "{results:?}");
    let facts = first.facts("root", "run").unwrap();
    assert!(matches!(reconcile(&facts), Ok(Decision::HandedOff(_))));
}

/// Claims from two connections each issue their own epoch: the epoch is
/// read and advanced under one write lock, never read-then-written.
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
/// upgrades in place to version 2 and keeps its facts: its handed-off Run
/// stays handed off (a claim answers its pause), its open Run can be
/// claimed from epoch 1.
#[test]
fn a_version_1_file_opens_and_upgrades_in_place() {
    const V1: &[u8] = include_bytes!("../../tests/data/durable/v1.sqlite");
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
        log.claim("root", "other-run").unwrap(),
        Claim::Owner(Epoch::new(1))
    );
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

#[path = "sqlite_async_tests.rs"]
mod async_tests;
