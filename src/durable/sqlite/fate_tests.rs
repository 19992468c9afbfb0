//! [`SqliteLog`](super::SqliteLog)'s final fates and retention on real
//! files (R8, R9, R10): finishes, tombstones, the version-2 upgrade that
//! keeps a file's facts, and finish rows altered outside baton.

use std::path::PathBuf;

use super::race_tests::with_one_inside;
use super::read::{RETIRED, RUNS_OF};
use super::tests::{TempDb, claim_of, owner, rows, rows_of, source_of, tables};
use super::*;
use crate::durable::tests::{ViaAsync, pause, source, the_final_fates_hold};
use crate::durable::{Decision, Finished, reconcile};

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

/// `SqliteLog::rows` counts what the file keeps as `MemoryLog::rows`
/// counts what it holds (R10), after the same operations: the Runs with a
/// record and the tombstones, read on the file's own tables above.
#[test]
fn r10_the_sqlite_log_counts_its_rows_as_the_memory_log_does() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let memory = crate::durable::MemoryLog::new();
    assert_eq!(log.rows().unwrap(), (0, 0), "a new file holds nothing");
    the_final_fates_hold(&log);
    the_final_fates_hold(&memory);
    assert_eq!(log.rows().unwrap(), memory.rows());
    assert_eq!(log.rows().unwrap(), (1, 1), "one open Run, one tombstone");
    assert!(matches!(
        log.claim("another root", "run"),
        Ok(Claim::Owner(_))
    ));
    assert_eq!(log.rows().unwrap(), (2, 1), "another root's Run is counted");
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
