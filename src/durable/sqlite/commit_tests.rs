//! [`SqliteLog`] when its own `COMMIT` fails (issue 44): SQLite's commit
//! hook turns the commit of the log's transaction into a rollback, so
//! every write's commit fails on the real path, decided by construction.
//! The log cannot tell a failed commit that landed from one that did not,
//! so each write answers [`LogError::OutcomeUnknown`] (SPEC R4: retry, or
//! read the facts); here the facts then show it did not land, and the same
//! write again answers as the first. A refusal never reaches a commit.
//! The caller's-transaction forms leave the commit to the caller: a failed
//! commit of the caller's leaves the log as it was.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, TransactionBehavior};

use super::tests::TempDb;
use super::*;
use crate::durable::Sweep;
use crate::durable::tests::{ViaAsync, pause, source};

/// Makes every commit on `connection` fail (a rollback), or lets them
/// through again; counts the commits it failed in `failed`.
fn failing_commits(connection: &Connection, failed: Option<&Arc<AtomicUsize>>) {
    let hook = failed.map(|failed| {
        let failed = Arc::clone(failed);
        move || {
            failed.fetch_add(1, Ordering::Relaxed);
            true // turns the commit into a rollback
        }
    });
    connection.commit_hook(hook).unwrap();
}

/// Every row of the file, as `(table, root_run_id, run_id or "")`: what a
/// failed commit must leave as it was.
fn every_row(log: &SqliteLog<u32>) -> Vec<(String, String, String)> {
    let connection = lock(&log.connection);
    let mut rows = Vec::new();
    for (table, run) in [
        ("handoff_pause", "run_id"),
        ("run_epoch", "run_id || ':' || epoch"),
        ("run_finish", "run_id"),
        ("retired_root", "''"),
    ] {
        let mut statement = connection
            .prepare(&format!(
                "SELECT root_run_id, {run} FROM {table} ORDER BY 1, 2"
            ))
            .unwrap();
        let found = statement
            .query_map([], |row| Ok((table.to_owned(), row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        rows.extend(found);
    }
    rows
}

fn successor() -> Invocation {
    Invocation {
        run_id: "successor-run".into(),
        invocation_id: "successor-invocation".into(),
        ..source()
    }
}

/// With every commit of the log failing, each write of `log` (the log
/// itself, or its async form) answers `OutcomeUnknown` and leaves every
/// row as it was; a refusal answers itself without a commit; `sweep` (one
/// batch of retention by age) too. Let through, the same write answers as
/// the first one would have.
fn a_failed_commit_is_an_unknown_outcome_and_left_nothing(
    log: &dyn HandoffLog<u32>,
    file: &SqliteLog<u32>,
    sweep: &dyn Fn() -> Result<Sweep, LogError>,
) {
    let failed = Arc::new(AtomicUsize::new(0));
    let fail = |on: bool| failing_commits(&lock(&file.connection), on.then_some(&failed));
    // Each write, with its commit failing: it reached its commit, answers
    // unknown, and changed nothing.
    let unknown = |what: &str, write: &dyn Fn() -> Result<String, LogError>| {
        let before = every_row(file);
        let commits = failed.load(Ordering::Relaxed);
        let answer = write();
        assert!(
            matches!(answer, Err(LogError::OutcomeUnknown(_))),
            "R4: {what} whose commit failed is an unknown outcome, never a refusal or \
             `Unavailable` (which would tell the caller nothing was written): {answer:?}"
        );
        assert_eq!(
            failed.load(Ordering::Relaxed),
            commits + 1,
            "{what} reached its commit once"
        );
        assert_eq!(
            every_row(file),
            before,
            "{what}: the failed commit left nothing"
        );
    };
    let claim = || log.claim("root", "run").map(|claim| format!("{claim:?}"));
    let epoch = Epoch::new(1);

    fail(true);
    unknown("a first claim", &claim);
    fail(false);
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Owner(epoch));

    fail(true);
    unknown("a takeover's claim", &claim);
    assert_eq!(log.facts("root", "run").unwrap().epoch, epoch);
    unknown("an append", &|| {
        log.append("root", &source(), epoch, &pause("h"))
            .map(|receipt| format!("{receipt:?}"))
    });
    // A refusal writes nothing and so commits nothing: it answers itself.
    let commits = failed.load(Ordering::Relaxed);
    let stale = log.append("root", &source(), Epoch::new(2), &pause("h"));
    assert!(
        matches!(
            stale,
            Err(LogError::EpochNotIssued { .. } | LogError::Fenced { .. })
        ),
        "a refusal is answered as such: {stale:?}"
    );
    assert_eq!(
        failed.load(Ordering::Relaxed),
        commits,
        "a refusal reaches no commit"
    );

    fail(false);
    assert!(log.facts("root", "run").unwrap().pauses.is_empty());
    assert_eq!(
        log.append("root", &source(), epoch, &pause("h")).unwrap(),
        Receipt::Written
    );
    let Claim::Owner(next) = log.claim("root", "successor-run").unwrap() else {
        panic!("G1: the successor is claimable");
    };

    fail(true);
    unknown("a finish", &|| {
        log.finish("root", &successor(), next, &7)
            .map(|receipt| format!("{receipt:?}"))
    });
    fail(false);
    assert_eq!(log.facts("root", "successor-run").unwrap().finished, None);
    assert_eq!(
        log.finish("root", &successor(), next, &7).unwrap(),
        Receipt::Written
    );

    fail(true);
    unknown("a retirement", &|| {
        log.retire("root").map(|retired| format!("{retired:?}"))
    });
    unknown("a batch of retention by age", &|| {
        sweep().map(|sweep| format!("{sweep:?}"))
    });
    fail(false);
    assert_eq!(
        log.claim("root", "successor-run").unwrap(),
        Claim::Finished(7)
    );
    assert_eq!(log.retire("root").unwrap(), Retirement::Retired { runs: 2 });
}

/// A cut-off after every Run written here.
fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(60)
}

#[test]
fn r4_a_failed_commit_of_the_logs_own_transaction_is_an_unknown_outcome() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let sweep = || log.retire_ended(later(), None, 10);
    a_failed_commit_is_an_unknown_outcome_and_left_nothing(&log, &log, &sweep);
}

#[test]
fn r4_a_failed_commit_of_the_logs_own_transaction_is_an_unknown_outcome_through_its_async_form() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let sweep = || runtime.block_on(log.retire_ended_async(later(), None, 10));
    a_failed_commit_is_an_unknown_outcome_and_left_nothing(&ViaAsync::new(&log), &log, &sweep);
}

/// The caller's-transaction forms never commit: when the caller's own
/// `COMMIT` fails, every write of the log in it is gone with the caller's
/// rows, and the log answers as if it had never run (the claim's epoch
/// number too, as a rollback's: SPEC G4's exception).
#[test]
fn a_failed_commit_of_the_callers_transaction_leaves_the_log_as_it_was() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let mut connection = Connection::open(&db.0).unwrap();
    connection.busy_timeout(Duration::from_secs(5)).unwrap();
    let failed = Arc::new(AtomicUsize::new(0));
    failing_commits(&connection, Some(&failed));
    let mut in_callers = |what: &str, write: &dyn Fn(&Transaction<'_>) -> String| {
        let before = every_row(&log);
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let answered = write(&tx);
        let commits = failed.load(Ordering::Relaxed);
        assert!(tx.commit().is_err(), "{what}: the caller's commit fails");
        assert_eq!(failed.load(Ordering::Relaxed), commits + 1);
        assert_eq!(
            every_row(&log),
            before,
            "{what} ({answered}) is gone with the commit"
        );
    };
    in_callers("a claim", &|tx| {
        let claim = SqliteLog::<u32>::claim_in(tx, "root", "run").unwrap();
        assert_eq!(claim, Claim::Owner(Epoch::new(1)));
        format!("{claim:?}")
    });
    let epoch = owner_of(&log, "run");
    assert_eq!(
        epoch,
        Epoch::new(1),
        "G4's exception: the same number again"
    );
    in_callers("an append", &|tx| {
        let receipt = SqliteLog::append_in(tx, "root", &source(), epoch, &pause("h")).unwrap();
        format!("{receipt:?}")
    });
    assert!(
        log.facts("root", "run").unwrap().pauses.is_empty(),
        "the Run is open"
    );
    in_callers("a finish", &|tx| {
        let receipt = SqliteLog::finish_in(tx, "root", &source(), epoch, &7).unwrap();
        format!("{receipt:?}")
    });
    assert_eq!(
        log.finish("root", &source(), epoch, &7).unwrap(),
        Receipt::Written
    );
    in_callers("a retirement", &|tx| {
        let retired = SqliteLog::<u32>::retire_in(tx, "root").unwrap();
        assert_eq!(retired, Retirement::Retired { runs: 1 });
        format!("{retired:?}")
    });
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::Finished(7),
        "not retired"
    );
}

fn owner_of(log: &SqliteLog<u32>, run_id: &str) -> Epoch {
    match log.claim("root", run_id).unwrap() {
        Claim::Owner(epoch) => epoch,
        other => panic!("the Run is not open: {other:?}"),
    }
}
