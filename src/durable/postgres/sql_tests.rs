//! Every statement of an operation binds its rows to one root Run (its
//! `$1`), so that each operation's transaction stays on one shard of a
//! database distributed by `root_run_id` (docs/SCALE.md); the sweep's
//! batch is the one exception, by design, and says so.

use std::time::Duration;

use super::{Layout, Sql, Which};
use crate::durable::postgres::PostgresSchema;

/// The sweep's batch: many root Runs in one transaction (docs/SCALE.md).
fn of_a_batch(which: Which) -> bool {
    matches!(
        which,
        Which::LockRoots | Which::LockRunsOf | Which::ReadPausesOf | Which::RetireRoots
    )
}

const TABLES: [&str; 3] = ["baton_run", "baton_handoff_pause", "baton_root"];

/// Each place `text` names one of baton's tables, with the text up to the
/// next such place: the clause that reads or writes it.
fn clauses(text: &str) -> Vec<(&'static str, &str)> {
    let mut at: Vec<(usize, &'static str)> = TABLES
        .iter()
        .flat_map(|table| {
            text.match_indices(table)
                // `baton_run` is a prefix of no other table's name, but a
                // name must end where the table's does.
                .filter(|(i, _)| {
                    !text[i + table.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
                .map(move |(i, _)| (i, *table))
        })
        .collect();
    at.sort();
    at.iter()
        .enumerate()
        .map(|(n, &(i, table))| {
            let end = at.get(n + 1).map_or(text.len(), |&(next, _)| next);
            (table, &text[i + table.len()..end])
        })
        .collect()
}

/// Whether a clause binds the rows it reads or writes to the root Run
/// `$1`: a `WHERE root_run_id = $1`, or an insert whose first column is
/// `root_run_id` and whose first value is `$1`.
fn bound_to_one_root(clause: &str) -> bool {
    let clause = clause.split_whitespace().collect::<Vec<_>>().join(" ");
    let inserts = clause
        .trim_start()
        .trim_start_matches("AS root ")
        .starts_with("(root_run_id");
    // `SELECT root_run_id, …`: the root Run of the rows selected, which
    // the clause after it (the table they are selected from) binds.
    let first_value = clause.contains("VALUES ($1")
        || clause.contains("SELECT $1,")
        || clause.contains("SELECT $1 WHERE")
        || clause.contains("SELECT root_run_id,");
    clause.contains("root_run_id = $1") || (inserts && first_value)
}

#[test]
fn every_statement_of_an_operation_binds_its_rows_to_one_root_run() {
    for (schema, layout) in [
        (PostgresSchema::default(), Layout::OneServer),
        (PostgresSchema::named("baton").unwrap(), Layout::OneServer),
        (PostgresSchema::named("baton").unwrap(), Layout::ByRootRun),
    ] {
        let sql = Sql::new(&schema, Duration::from_secs(1), layout, false);
        for which in Which::ALL {
            let text = sql.text(which);
            let clauses = clauses(text);
            if matches!(which, Which::Timeline) && layout == Layout::OneServer {
                // The server's timeline: no table, so no shard either.
                assert!(clauses.is_empty(), "{which:?} names a table: {text}");
                continue;
            }
            assert!(!clauses.is_empty(), "{which:?} names no table: {text}");
            for (table, clause) in clauses {
                if of_a_batch(which) {
                    assert!(
                        clause.contains("ANY($1)") || clause.contains("unnest($1::text[])"),
                        "the batch's {which:?} reads {table} beyond its roots: {text}"
                    );
                } else {
                    assert!(
                        bound_to_one_root(clause),
                        "{which:?} reads or writes {table} beyond one root Run: {text}"
                    );
                }
            }
        }
    }
}

/// The check itself refuses a statement that reaches past one root Run.
#[test]
fn the_one_root_check_refuses_a_statement_over_every_root() {
    for (text, bound) in [
        ("SELECT epoch FROM baton_run WHERE run_id = $2", false),
        ("UPDATE baton_root SET retired = true", false),
        (
            "INSERT INTO baton_run (run_id, root_run_id) VALUES ($1, $2)",
            false,
        ),
        ("DELETE FROM baton_run WHERE root_run_id = $2", false),
        ("SELECT epoch FROM baton_run WHERE root_run_id = $1", true),
        (
            "INSERT INTO baton_run (root_run_id, run_id) VALUES ($1, $2)",
            true,
        ),
    ] {
        let clauses = clauses(text);
        assert_eq!(clauses.len(), 1, "{text}");
        assert_eq!(bound_to_one_root(clauses[0].1), bound, "{text}");
    }
}
