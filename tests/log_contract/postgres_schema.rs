//! `PostgresLog`'s schema in a shared database: created once by logs
//! connecting together, a version recorded and checked, migrations the
//! operator runs (or another tool applies), upgrades in place that keep
//! every fact, and rows altered outside baton reported, never decoded.

use std::sync::Arc;

use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, POSTGRES_SCHEMA_VERSION, PostgresOptions,
    PostgresSchema, Receipt, Retirement, RunField,
};
use baton::facts::IdError;

use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_fates::*;
use crate::postgres_only::*;
use crate::postgres_store::insert_pause_row;

/// Logs connecting at once to a database without a schema create it once,
/// whole, and record its version; reconnecting leaves it as it is.
#[test]
fn logs_connecting_at_once_create_the_schema_once_and_record_its_version() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let url = Arc::new(url);
        let connects: Vec<_> = (0..6)
            .map(|_| {
                let url = Arc::clone(&url);
                tokio::spawn(async move { connect(&url).await.map(drop) })
            })
            .collect();
        for connecting in connects {
            connecting.await.unwrap().expect("every log connects");
        }
        let log = connect(&url).await.unwrap();
        assert_eq!(owner(&log).await, Epoch::new(1));
        let admin = cluster.connect(&dbname).await;
        let version: i64 = admin
            .query_one("SELECT version FROM baton_schema", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, POSTGRES_SCHEMA_VERSION);
        let rows: i64 = admin
            .query_one("SELECT count(*) FROM baton_schema", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 1, "one version row");
        let debug = format!("{log:?}");
        assert!(
            debug.starts_with("PostgresLog { pool_size: 16, connections: 1,"),
            "{debug}"
        );
    });
}

/// A database recording a newer schema version, or holding baton's table
/// names without a version, is refused with a typed error, never guessed.
#[test]
fn an_unknown_schema_version_or_a_foreign_table_is_a_typed_error() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        drop(connect(&url).await.unwrap());
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("UPDATE baton_schema SET version = 99")
            .await
            .unwrap();
        assert!(matches!(
            connect(&url).await,
            Err(LogError::UnknownSchema {
                found: 99,
                expected: POSTGRES_SCHEMA_VERSION
            })
        ));

        let (dbname, url) = fresh(cluster).await;
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("CREATE TABLE baton_run (x integer)")
            .await
            .unwrap();
        assert!(matches!(
            connect(&url).await,
            Err(LogError::UnknownSchema { found: 0, .. })
        ));
    });
}

/// A row altered outside baton is reported corrupt, never decoded into a
/// decision; text the server cannot store (a NUL in the source's session
/// id) is refused as bad input before the server sees it, and writes
/// nothing.
#[test]
fn a_row_altered_outside_baton_is_corrupt_and_text_the_server_refuses_is_a_typed_error() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        let epoch = owner(&log).await;
        let mut nul = common::source();
        nul.session_id = "session\u{0}".into();
        assert!(matches!(
            within("R5", log.append_async(ROOT, &nul, epoch, &pause())).await,
            Err(LogError::InvalidRun {
                field: RunField::SessionId,
                error: IdError::ControlCharacter
            })
        ));
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert!(read.pauses.is_empty(), "nothing written");

        let _ = append(&log, epoch).await.unwrap();
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("UPDATE baton_handoff_pause SET handoff_id = 'forged'")
            .await
            .unwrap();
        assert!(matches!(
            within("R5", log.facts_async(ROOT, "run")).await,
            Err(LogError::Corrupt { .. })
        ));
        assert!(
            matches!(
                within("R5", log.claim_async(ROOT, "run")).await,
                Err(LogError::Corrupt { .. })
            ),
            "a claim never decides on a corrupt row"
        );
        admin
            .batch_execute(
                "UPDATE baton_handoff_pause SET handoff_id = 'handoff', \
                 pause = json_build_object('intent', 7)",
            )
            .await
            .unwrap();
        assert!(matches!(
            within("R5", log.facts_async(ROOT, "run")).await,
            Err(LogError::Corrupt { .. })
        ));
    });
}

/// Opening a log runs no DDL (issue 34): on a database without the schema
/// it answers `UnknownSchema { found: 0 }` and creates nothing; once the
/// operator has migrated (here `PostgresSchema::migrate`, the explicit
/// step), the same options open it.
#[test]
fn opening_a_log_runs_no_ddl_and_a_database_is_refused_until_migrated() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        assert!(matches!(
            open(&url, PostgresOptions::new()).await,
            Err(LogError::UnknownSchema {
                found: 0,
                expected: POSTGRES_SCHEMA_VERSION
            })
        ));
        let admin = cluster.connect(&dbname).await;
        let tables: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'baton%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(tables, 0, "opening created nothing");
        PostgresSchema::search_path()
            .migrate(&admin)
            .await
            .expect("the explicit migrate step");
        PostgresSchema::search_path()
            .migrate(&admin)
            .await
            .expect("migrating again changes nothing");
        let log = open(&url, PostgresOptions::new()).await.expect("migrated");
        assert_eq!(owner(&log).await, Epoch::new(1));
    });
}

/// The SQL of every version, exported for other migration tools, applied
/// by hand (each script in a transaction of its own, as such a tool does)
/// in a named schema: a log told that schema opens on it without
/// migrating, and keeps its tables there and nowhere else.
#[test]
fn the_exported_migrations_applied_by_another_tool_make_a_schema_the_log_opens() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let schema = PostgresSchema::named("fleet").unwrap();
        let admin = cluster.connect(&dbname).await;
        admin.batch_execute("CREATE SCHEMA fleet").await.unwrap();
        for script in schema.migrations() {
            admin
                .batch_execute(&format!("BEGIN; {script} COMMIT;"))
                .await
                .unwrap();
        }
        let log = open(&url, PostgresOptions::new().schema(schema.clone()))
            .await
            .expect("the log opens on the schema another tool made");
        assert_eq!(owner(&log).await, Epoch::new(1));
        assert_eq!(append(&log, Epoch::new(1)).await.unwrap(), Receipt::Written);
        let placed: Vec<String> = admin
            .query(
                "SELECT schemaname || '.' || tablename FROM pg_tables \
                 WHERE tablename LIKE 'baton%' ORDER BY 1",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(
            placed,
            [
                "fleet.baton_handoff_pause",
                "fleet.baton_root",
                "fleet.baton_run",
                "fleet.baton_schema"
            ]
        );
        assert!(
            matches!(
                open(&url, PostgresOptions::new()).await,
                Err(LogError::UnknownSchema { found: 0, .. })
            ),
            "the search_path's schema has no tables"
        );
    });
}

/// Schema version 2 (no foreign key from the pause to its Run), and the
/// versions after it, upgrade a database of version 1 in place: written as
/// version 1's SQL made it,
/// with an open Run at epoch 2 and a handed-off Run, it is migrated when
/// a log opens with `migrate`, the key is gone, and every fact is kept:
/// the open Run's next claim issues epoch 3, the handed-off Run stays
/// handed off (R1).
#[test]
fn a_version_1_database_is_upgraded_in_place_and_keeps_its_facts() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let admin = cluster.connect(&dbname).await;
        let version_1 = &PostgresSchema::search_path().migrations()[0];
        admin.batch_execute(version_1).await.unwrap();
        admin
            .execute(
                "INSERT INTO baton_run VALUES ('run', 'open', 2), ('run', 'run', 1)",
                &[],
            )
            .await
            .unwrap();
        let handoff = pause();
        insert_pause_row(
            &admin,
            "baton_handoff_pause",
            ROOT,
            &common::source(),
            &handoff,
            1,
        )
        .await;
        let foreign_keys = async || -> i64 {
            admin
                .query_one(
                    "SELECT count(*) FROM pg_constraint \
                     WHERE conrelid = 'baton_handoff_pause'::regclass AND contype = 'f'",
                    &[],
                )
                .await
                .unwrap()
                .get(0)
        };
        assert_eq!(foreign_keys().await, 1, "version 1 has the key");
        assert!(matches!(
            open(&url, PostgresOptions::new()).await,
            Err(LogError::UnknownSchema { found: 1, .. })
        ));
        let log = connect(&url)
            .await
            .expect("migrated to the current version");
        assert_eq!(foreign_keys().await, 0, "version 2 (and on) has none");
        let version: i64 = admin
            .query_one("SELECT version FROM baton_schema", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, POSTGRES_SCHEMA_VERSION);
        assert_eq!(
            within("R5", log.claim_async(ROOT, "open")).await.unwrap(),
            Claim::Owner(Epoch::new(3))
        );
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::HandedOff(pause()),
            "R1: a handed-off Run stays handed off across the upgrade"
        );
    });
}

/// A role with only `USAGE` on the schema and `SELECT`, `INSERT` and
/// `UPDATE` on the tables runs the log (the contract suite runs as such a
/// role, see `main.rs`), but cannot migrate: asked to, it answers
/// `Unavailable` (permission denied, nothing changed).
#[test]
fn a_role_with_only_dml_rights_cannot_migrate_and_the_refusal_is_unavailable() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, _) = fresh(cluster).await;
        let url = crate::postgres_store::dml_only(cluster, &dbname).await;
        let schema = PostgresSchema::named(crate::postgres_store::SCHEMA).unwrap();
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute(&format!(
                "UPDATE {}.baton_schema SET version = 1",
                crate::postgres_store::SCHEMA
            ))
            .await
            .unwrap();
        let refused = open(&url, PostgresOptions::new().schema(schema).migrate(true)).await;
        let Err(LogError::Unavailable(error)) = &refused else {
            panic!("{refused:?}");
        };
        let code = error
            .downcast_ref::<baton::durable::tokio_postgres::Error>()
            .and_then(|error| error.code());
        assert_eq!(
            code,
            Some(&baton::durable::tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{refused:?}"
        );
        let version: i64 = admin
            .query_one(
                &format!(
                    "SELECT version FROM {}.baton_schema",
                    crate::postgres_store::SCHEMA
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, 1, "the refused migration changed nothing");
    });
}

/// Schema versions 3 (the finish on the Run's row, the root Runs' table)
/// and 4 (the end times, for retention by age)
/// upgrades a database of version 2 in place: written as versions 1 and
/// 2's SQL made it, with an open Run at epoch 2 and a handed-off Run, it
/// is refused until migrated, then migrated when a log opens with
/// `migrate`; every fact is kept (the open Run's next claim issues epoch
/// 3, the handed-off Run stays handed off, R1), and the new operations
/// work on the old rows: the open Run finishes (R8), and the root Run —
/// which has no row of its own yet — retires (R9, R10).
#[test]
fn a_version_2_database_is_upgraded_to_the_current_version_in_place_and_keeps_its_facts() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let admin = cluster.connect(&dbname).await;
        let scripts = PostgresSchema::search_path().migrations();
        admin.batch_execute(&scripts[0]).await.unwrap();
        admin.batch_execute(&scripts[1]).await.unwrap();
        admin
            .execute(
                "INSERT INTO baton_run VALUES ('run', 'open', 2), ('run', 'run', 1)",
                &[],
            )
            .await
            .unwrap();
        insert_pause_row(
            &admin,
            "baton_handoff_pause",
            ROOT,
            &common::source(),
            &pause(),
            1,
        )
        .await;
        assert!(matches!(
            open(&url, PostgresOptions::new()).await,
            Err(LogError::UnknownSchema { found: 2, .. })
        ));
        let log = connect(&url).await.expect("migrated to version 5");
        let version: i64 = admin
            .query_one("SELECT version FROM baton_schema", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, 5);
        assert_eq!(POSTGRES_SCHEMA_VERSION, 5);
        let flagged: Vec<(String, bool)> = admin
            .query("SELECT run_id, paused FROM baton_run ORDER BY run_id", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        assert_eq!(
            flagged,
            [("open".to_owned(), false), ("run".to_owned(), true)],
            "version 5 flags the Runs paused before it"
        );
        let untimed: i64 = admin
            .query_one(
                "SELECT count(*) FROM baton_handoff_pause WHERE ended_at IS NULL",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            untimed, 0,
            "a pause of version 2 takes the migration's time"
        );
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::HandedOff(pause()),
            "R1: a handed-off Run stays handed off across the upgrade"
        );
        assert!(
            matches!(
                finish(&log, "run", Epoch::new(1), &common::execution()).await,
                Err(LogError::AlreadyHandedOff { .. })
            ),
            "R8: a Run paused before the upgrade takes no finish after it"
        );
        let epoch = owner_of(&log, "open").await;
        assert_eq!(epoch, Epoch::new(3));
        assert!(matches!(
            within("R5", log.retire_async(ROOT)).await,
            Err(LogError::RunOpen { .. })
        ));
        assert_eq!(
            finish(&log, "open", epoch, &common::execution())
                .await
                .unwrap(),
            Receipt::Written
        );
        finish_the_successor(&log).await;
        assert_eq!(
            within("R5", log.retire_async(ROOT)).await.unwrap(),
            Retirement::Retired { runs: 3 }
        );
        assert_eq!(rows(&admin).await, (0, 0, 1));
        assert_eq!(
            within("R5", log.claim_async(ROOT, "open")).await.unwrap(),
            Claim::Retired
        );
    });
}
