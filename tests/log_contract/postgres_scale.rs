//! The schema ready to be distributed by `root_run_id` (docs/SCALE.md),
//! read from the server's catalog after the log has migrated it: every
//! primary key and unique index of baton's Run tables leads with
//! `root_run_id` (a distributed table's unique keys must hold its
//! distribution column), and no foreign key ties them. (That every
//! statement binds its rows to one root Run is checked on the statements'
//! text: `src/durable/postgres/sql_tests.rs`.)

use crate::common::postgres::Cluster;
use crate::postgres_drops::patient_log;
use crate::postgres_only::runtime;

#[test]
fn every_unique_key_of_the_run_tables_leads_with_root_run_id_and_none_is_foreign() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let _log = patient_log(&cluster.url(&dbname)).await;
        let admin = cluster.connect(&dbname).await;
        let keys = admin
            .query(
                "SELECT t.relname::text, i.relname::text, a.attname::text \
                 FROM pg_index x \
                 JOIN pg_class t ON t.oid = x.indrelid \
                 JOIN pg_class i ON i.oid = x.indexrelid \
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0] \
                 WHERE t.relname LIKE 'baton\\_%' AND t.relname <> 'baton_schema' \
                 AND x.indisunique ORDER BY 1, 2",
                &[],
            )
            .await
            .expect("pg_index");
        let keys: Vec<(String, String, String)> = keys
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect();
        let tables: std::collections::BTreeSet<&str> =
            keys.iter().map(|(table, ..)| table.as_str()).collect();
        assert_eq!(
            tables.into_iter().collect::<Vec<_>>(),
            ["baton_handoff_pause", "baton_root", "baton_run"],
            "every Run table has a key: {keys:?}"
        );
        let indexes: Vec<&str> = keys.iter().map(|(_, index, _)| index.as_str()).collect();
        assert_eq!(
            indexes,
            [
                "baton_handoff_pause_pkey",
                "baton_root_pkey",
                "baton_run_pkey"
            ],
            "the only unique keys are the primary keys (docs/SCALE.md)"
        );
        for (table, index, first) in &keys {
            assert_eq!(
                first, "root_run_id",
                "{table}'s unique index {index} leads with {first}, not root_run_id"
            );
        }
        let foreign: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid \
                 WHERE t.relname LIKE 'baton\\_%' AND c.contype = 'f'",
                &[],
            )
            .await
            .expect("pg_constraint")
            .get(0);
        assert_eq!(foreign, 0, "no foreign key between baton's tables");
    });
}
