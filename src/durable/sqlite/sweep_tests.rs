//! [`SqliteLog`](super::SqliteLog)'s retention by age reads its candidates
//! through the end-time index (G5).

use super::tests::{TempDb, claim_of, rows_of, tables};
use super::*;
use crate::durable::tests::source;
use rusqlite::params;

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
