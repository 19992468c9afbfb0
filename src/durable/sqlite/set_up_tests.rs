//! Opening a file that needs its schema, decided by construction (issue
//! 44): another process upgrading the file between this one's read of the
//! version and its write lock, and an upgrade interrupted after its steps,
//! before its commit.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use super::inside::{SetUpPoint, once_at};
use super::schema::{MIGRATE_V2, MIGRATE_V3};
use super::tests::TempDb;
use super::*;
use crate::durable::tests::{pause, source};
use crate::durable::{Decision, reconcile};

const V1: &[u8] = include_bytes!("../../../tests/data/durable/v1.sqlite");

/// The file's schema version, read by a plain connection.
fn version(path: &Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

/// The version-1 fixture's one Run reads back handed off, as it was
/// written, and the log goes on from it.
fn the_version_1_run_reads_back(log: &SqliteLog<u32>) {
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(reconcile(&facts), Ok(Decision::HandedOff(pause("h"))));
    assert_eq!(
        log.claim("root", "successor-run").unwrap(),
        Claim::Owner(Epoch::new(1))
    );
    assert!(matches!(
        log.append("root", &source(), Epoch::NONE, &pause("h")),
        Err(LogError::EpochNotIssued { .. })
    ));
}

/// Another process sets the file up — a fresh file, a version-1 file —
/// after this open read the old version and before it took the write
/// lock: the open reads the version again under the lock, finds it
/// current, and changes nothing.
#[test]
fn a_file_set_up_by_another_process_before_the_write_lock_is_read_again_under_it() {
    for fixture in [None, Some(V1)] {
        let db = TempDb::new();
        if let Some(bytes) = fixture {
            std::fs::write(&db.0, bytes).unwrap();
        }
        let path = db.0.clone();
        let other = std::rc::Rc::new(std::cell::Cell::new(false));
        let ran = std::rc::Rc::clone(&other);
        once_at(SetUpPoint::BeforeTheWriteLock, move || {
            let log: SqliteLog<u32> = SqliteLog::open(&path).expect("the other process's open");
            log.close();
            ran.set(true);
        });
        let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap_or_else(|error| {
            panic!("opening a file another process just set up ({fixture:?}): {error}")
        });
        assert!(
            other.get(),
            "the other process came between, by construction"
        );
        assert_eq!(version(&db.0), SCHEMA_VERSION);
        if fixture.is_some() {
            the_version_1_run_reads_back(&log);
        }
    }
}

/// An upgrade stopped after all its steps and its new version number ran,
/// before its commit (a crash, a kill): the file is still the version-1
/// file, whole, and the next open upgrades it and reads its Run back.
#[test]
fn a_schema_upgrade_interrupted_before_its_commit_leaves_the_old_version_whole() {
    let db = TempDb::new();
    std::fs::write(&db.0, V1).unwrap();
    once_at(SetUpPoint::BeforeTheCommit, || {
        panic!("the process dies here")
    });
    let interrupted = catch_unwind(AssertUnwindSafe(|| SqliteLog::<u32>::open(&db.0)));
    assert!(
        interrupted.is_err(),
        "the open was interrupted, by construction"
    );
    assert_eq!(version(&db.0), 1, "nothing of the upgrade is left");
    let tables: Vec<String> = Connection::open(&db.0)
        .unwrap()
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        ["handoff_pause"],
        "version 1's one table, as it was"
    );
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(version(&db.0), SCHEMA_VERSION);
    the_version_1_run_reads_back(&log);
}

/// A file at `version` (0: empty; 1: the version-1 fixture; 2 and 3: that
/// fixture upgraded by those versions' own scripts, as an older baton
/// left it).
fn file_at(version: i64) -> TempDb {
    let db = TempDb::new();
    if version == 0 {
        return db;
    }
    std::fs::write(&db.0, V1).unwrap();
    let connection = Connection::open(&db.0).unwrap();
    for (to, script) in [(2, MIGRATE_V2), (3, MIGRATE_V3)] {
        if to <= version {
            connection.execute_batch(script).unwrap();
            connection.pragma_update(None, "user_version", to).unwrap();
        }
    }
    db
}

/// An upgrade that has just committed, from every version a file may be
/// at: another process opening the file right then finds it whole at the
/// current version — its tables and its version number committed together
/// — and reads its Runs; and a process that dies right there leaves it so:
/// the next open changes nothing and reads them too.
#[test]
fn a_schema_upgrade_just_committed_is_whole_at_the_new_version_for_another_process_and_a_crash() {
    for from in 0..SCHEMA_VERSION {
        let db = file_at(from);
        let path = db.0.clone();
        once_at(SetUpPoint::AfterTheCommit, move || {
            assert_eq!(
                version(&path),
                SCHEMA_VERSION,
                "from {from}: the version is recorded with the upgrade's commit"
            );
            let other: SqliteLog<u32> =
                SqliteLog::open(&path).expect("another process opens the file just upgraded");
            if from > 0 {
                let facts = other.facts("root", "run").unwrap();
                assert_eq!(reconcile(&facts), Ok(Decision::HandedOff(pause("h"))));
            }
            other.close();
            panic!("the process dies right after the upgrade's commit");
        });
        let died = catch_unwind(AssertUnwindSafe(|| SqliteLog::<u32>::open(&db.0)));
        assert!(died.is_err(), "from {from}: the open died, by construction");
        assert_eq!(version(&db.0), SCHEMA_VERSION, "from {from}");
        let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
        if from > 0 {
            the_version_1_run_reads_back(&log);
        }
    }
}
