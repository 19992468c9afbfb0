//! [`SqliteLog`](super::SqliteLog)'s writes inside the caller's own
//! transaction: committed with its rows, rolled back with them, refused
//! without the write lock.

use super::tests::{TempDb, claim_of, owner, rows, source_of, tables};
use super::*;
use crate::durable::tests::{pause, source};
use crate::durable::{Decision, reconcile};
use rusqlite::params;

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
            matches!(&result, Err(LogError::WrongTransaction { reason }) if reason.contains("no write lock")),
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
