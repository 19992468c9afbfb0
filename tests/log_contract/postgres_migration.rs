//! A migration is one transaction, by construction (issue 63): all of it
//! or nothing, and nothing of it visible to another session before it
//! commits — from every version a database may be at (none, 1, 2, 3, 4).
//! Nothing here races: a conflicting object made beforehand fails one of
//! the migration's last statements (version 5's function); one made in
//! another session's open transaction holds the migration there, where
//! the test looks at the database from a third session and starts a
//! second migration that must wait for the first.

use baton::durable::tokio_postgres::Client;
use baton::durable::{LogError, POSTGRES_SCHEMA_VERSION, PostgresSchema};

use crate::common::postgres::Cluster;
use crate::postgres_only::{fresh, runtime};

/// The name of the last object but one the migrations make (version 5's
/// function; its trigger is the last).
const LAST: &str = "baton_run_paused";

/// A function named [`LAST`], as the test makes it to take the name.
const TAKEN: &str = "CREATE FUNCTION baton_run_paused() RETURNS trigger LANGUAGE plpgsql \
                     AS $$ BEGIN RETURN NULL; END $$";

/// Every relation, function and trigger of baton's in the database, and
/// its version (0: none).
async fn what_is_there(client: &Client) -> (Vec<String>, i64) {
    let relations = client
        .query(
            "SELECT relname::text FROM pg_class \
             WHERE relname LIKE 'baton%' AND relnamespace = 'public'::regnamespace \
             UNION ALL SELECT proname::text FROM pg_proc \
             WHERE proname LIKE 'baton%' AND pronamespace = 'public'::regnamespace \
             UNION ALL SELECT tgname::text FROM pg_trigger WHERE tgname LIKE 'baton%' \
             ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let version = PostgresSchema::search_path().version(client).await.unwrap();
    (relations, version)
}

/// A fresh database brought to `version` by the exported scripts, each
/// committed.
async fn at_version(cluster: &Cluster, version: usize) -> (String, Client) {
    let (dbname, _) = fresh(cluster).await;
    let admin = cluster.connect(&dbname).await;
    for script in PostgresSchema::search_path()
        .migrations()
        .iter()
        .take(version)
    {
        admin
            .batch_execute(&format!("BEGIN; {script} COMMIT;"))
            .await
            .unwrap();
    }
    (dbname, admin)
}

/// One of the migration's last statements fails (an object already holds
/// its name): the migration answers `Unavailable`, and the database is as it
/// was — the same relations, the same version — from every version; once
/// the name is free it migrates whole.
#[test]
fn g3_a_migration_whose_last_statement_fails_leaves_the_database_as_it_was() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        for from in 0..POSTGRES_SCHEMA_VERSION as usize {
            let (dbname, admin) = at_version(cluster, from).await;
            admin.batch_execute(TAKEN).await.unwrap();
            let before = what_is_there(&admin).await;
            let migrating = cluster.connect(&dbname).await;
            let failed = PostgresSchema::search_path().migrate(&migrating).await;
            assert!(
                matches!(failed, Err(LogError::Unavailable(_))),
                "from version {from}: {failed:?}"
            );
            assert_eq!(
                what_is_there(&admin).await,
                before,
                "from version {from}: the failed migration left nothing"
            );
            admin
                .batch_execute(&format!("DROP FUNCTION {LAST}"))
                .await
                .unwrap();
            PostgresSchema::search_path()
                .migrate(&migrating)
                .await
                .expect("the migration once the name is free");
            assert_eq!(
                what_is_there(&admin).await.1,
                POSTGRES_SCHEMA_VERSION,
                "from version {from}"
            );
        }
    });
}

/// The server process of `client`'s session.
async fn backend(client: &Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

/// Until a backend of `pid` waits on a lock of the kind `wait_event`
/// names (`relation`, `transactionid`, `advisory`, …).
async fn until_waiting(watch: &Client, pid: i32) -> String {
    loop {
        let row = watch
            .query_one(
                "SELECT coalesce(wait_event_type, ''), coalesce(wait_event, '') \
                 FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .await
            .unwrap();
        let (kind, event): (String, String) = (row.get(0), row.get(1));
        if kind == "Lock" {
            return event;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// A migration held at one of its last statements (another session's open
/// transaction made an object of that name, uncommitted): a third session
/// sees nothing of it — no relation, no version — and a second migration
/// waits for the first at the advisory lock. Once the other session rolls
/// back, the first migrates whole and the second finds the version
/// current and changes nothing. From every version.
#[test]
fn g3_a_migration_in_progress_is_invisible_and_a_second_one_waits_for_it() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        for from in 0..POSTGRES_SCHEMA_VERSION as usize {
            let (dbname, admin) = at_version(cluster, from).await;
            let before = what_is_there(&admin).await;
            let holder = cluster.connect(&dbname).await;
            holder
                .batch_execute(&format!("BEGIN; {TAKEN}"))
                .await
                .unwrap();
            let first = cluster.connect(&dbname).await;
            let second = cluster.connect(&dbname).await;
            let (first_pid, second_pid) = (backend(&first).await, backend(&second).await);
            let migrate = |client: Client| {
                tokio::spawn(async move { PostgresSchema::search_path().migrate(&client).await })
            };
            let first = migrate(first);
            // The first has made everything before its function.
            assert_eq!(until_waiting(&admin, first_pid).await, "transactionid");
            assert_eq!(
                what_is_there(&admin).await,
                before,
                "from version {from}: nothing of the migration is visible before it commits"
            );
            let second = migrate(second);
            assert_eq!(
                until_waiting(&admin, second_pid).await,
                "advisory",
                "from version {from}: the second migration waits for the first"
            );
            holder.batch_execute("ROLLBACK").await.unwrap();
            first.await.unwrap().expect("the first migration");
            second.await.unwrap().expect("the second migration");
            let (relations, version) = what_is_there(&admin).await;
            assert_eq!(version, POSTGRES_SCHEMA_VERSION, "from version {from}");
            assert!(relations.iter().any(|name| name == LAST), "{relations:?}");
        }
    });
}
