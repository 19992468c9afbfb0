//! A pooled connection's seams (issue 44): what a `PostgresLog` leaves on
//! the connections it hands back to its pool, which a user borrows through
//! `log.pool()`, and which behind PgBouncer another client gets next. What
//! a dropped operation leaves behind is `postgres_drops.rs`; what a failed
//! commit means, `postgres_commits.rs`.

use std::time::Duration;

use baton::durable::tokio_postgres::{Client, Config, NoTls};
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, PostgresLog, PostgresOptions, Receipt,
};

use crate::Payload;
use crate::common;
use crate::common::pgbouncer::POOL_SIZE;
use crate::common::postgres::{Cluster, USER};
use crate::postgres_bouncer_store::bouncer;
use crate::postgres_only::{open, pause, runtime};

type Log = PostgresLog<Payload>;

const ROOT: &str = "run";

/// The settings baton sets (its `SET LOCAL` timeouts, its transactions'
/// isolation and read-only mode), as `SHOW` answers them on `client`.
async fn settings(client: &Client) -> Vec<(&'static str, String)> {
    let mut shown = Vec::new();
    for setting in [
        "statement_timeout",
        "lock_timeout",
        "idle_in_transaction_session_timeout",
        "transaction_isolation",
        "transaction_read_only",
        "default_transaction_isolation",
        "default_transaction_read_only",
    ] {
        let row = client
            .query_one(&format!("SHOW {setting}"), &[])
            .await
            .expect("SHOW");
        shown.push((setting, row.get::<_, String>(0)));
    }
    shown
}

/// A log of its own on `url` with one pooled connection, so every
/// operation runs on the connection the test then borrows, and with a
/// timeout (7 s) that is no server default.
pub(crate) async fn one_connection_log(url: &str) -> Log {
    let options = PostgresOptions::new()
        .migrate(true)
        .pool_size(1)
        .timeout(Duration::from_secs(7));
    open(url, options).await.expect("connect")
}

/// Each kind of operation once — a first claim and a takeover, an append
/// and a refused one, a read, a finish, a refused and a granted
/// retirement, a batch of retention by age — each followed by `check`
/// with the operation's name.
async fn every_kind_of_operation<C, F>(log: &Log, mut check: C)
where
    C: FnMut(&'static str) -> F,
    F: std::future::Future<Output = ()>,
{
    let Ok(Claim::Owner(_)) = log.claim_async(ROOT, "run").await else {
        panic!("the first claim")
    };
    check("a first claim").await;
    let Ok(Claim::Owner(epoch)) = log.claim_async(ROOT, "run").await else {
        panic!("the takeover")
    };
    check("a takeover").await;
    let stale = log
        .append_async(ROOT, &common::source(), Epoch::new(1), &pause())
        .await;
    assert!(matches!(stale, Err(LogError::Fenced { .. })), "{stale:?}");
    check("a refused append").await;
    let appended = log
        .append_async(ROOT, &common::source(), epoch, &pause())
        .await;
    assert_eq!(appended.unwrap(), Receipt::Written);
    check("an append").await;
    log.facts_async(ROOT, "run").await.expect("the facts");
    check("a read of the facts").await;
    let successor = pause().intent.successor_run_id.clone();
    let refused = log.retire_async(ROOT).await;
    assert!(
        matches!(refused, Err(LogError::RunOpen { .. })),
        "{refused:?}"
    );
    check("a refused retirement").await;
    let Ok(Claim::Owner(next)) = log.claim_async(ROOT, &successor).await else {
        panic!("G1: the successor's claim")
    };
    let mut finisher = common::source();
    finisher.run_id = successor;
    let finished = log
        .finish_async(ROOT, &finisher, next, &common::execution())
        .await;
    assert_eq!(finished.unwrap(), Receipt::Written);
    check("a finish").await;
    let later = std::time::SystemTime::now() + Duration::from_secs(60);
    let swept = log
        .retire_ended_async(later, None, 10)
        .await
        .expect("the sweep");
    assert_eq!(swept.retired, 1, "{swept:?}");
    check("a batch of retention by age").await;
}

/// After every kind of operation, the log's pooled connection — borrowed
/// through `log.pool()`, the very backend the operation ran on — shows the
/// server's defaults for every setting baton touches, and is not inside a
/// transaction.
#[test]
fn no_setting_baton_touches_stays_on_a_pooled_connection() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let admin = cluster.connect(&dbname).await;
        let defaults = settings(&admin).await;
        let log = one_connection_log(&cluster.url(&dbname)).await;
        let backend = {
            let pooled = log.pool().get().await.expect("the pooled connection");
            pooled
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .unwrap()
                .get::<_, i32>(0)
        };
        every_kind_of_operation(&log, |what| {
            let (log, defaults, admin) = (&log, &defaults, &admin);
            async move {
                let state: String = admin
                    .query_one(
                        "SELECT state FROM pg_stat_activity WHERE pid = $1",
                        &[&backend],
                    )
                    .await
                    .expect("the backend is still there: the operation kept its connection")
                    .get(0);
                assert_eq!(
                    state, "idle",
                    "after {what}: back in the pool outside a transaction"
                );
                let pooled = log.pool().get().await.expect("the pooled connection");
                let pid: i32 = pooled
                    .query_one("SELECT pg_backend_pid()", &[])
                    .await
                    .unwrap()
                    .get(0);
                assert_eq!(pid, backend, "after {what}: the same backend");
                assert_eq!(
                    &settings(&pooled).await,
                    defaults,
                    "after {what}: a setting baton touched stayed on the pooled connection"
                );
            }
        })
        .await;
    });
}

/// Behind PgBouncer in transaction mode, a server connection the log's
/// operations ran on is the one another client gets next: after every kind
/// of operation, each of the database's server connections (PgBouncer
/// keeps at most [`POOL_SIZE`]; that many clients, each inside a
/// transaction, hold them all at once) shows the server's defaults.
#[test]
fn no_setting_baton_touches_reaches_the_next_client_of_a_pgbouncer_server_connection() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let Some(bouncer) = bouncer() else {
            return;
        };
        let dbname = cluster.database().await;
        let defaults = settings(&cluster.connect(&dbname).await).await;
        let url = bouncer.url(USER, &dbname);
        let options = PostgresOptions::new()
            .migrate(true)
            .pool_size(1)
            .prepared_statements(false)
            .timeout(Duration::from_secs(7));
        let log = open(&url, options)
            .await
            .expect("connect through PgBouncer");
        let mut others = Vec::new();
        for _ in 0..POOL_SIZE {
            let (client, connection) = url
                .parse::<Config>()
                .unwrap()
                .connect(NoTls)
                .await
                .expect("another client of PgBouncer");
            tokio::spawn(connection);
            others.push(client);
        }
        every_kind_of_operation(&log, |what| {
            let (others, defaults) = (&others, &defaults);
            async move {
                for other in others {
                    other
                        .batch_execute("BEGIN")
                        .await
                        .expect("a server connection");
                }
                for other in others {
                    assert_eq!(
                        &settings(other).await,
                        defaults,
                        "after {what}: a setting baton touched reached PgBouncer's next client"
                    );
                }
                for other in others {
                    other.batch_execute("COMMIT").await.expect("its end");
                }
            }
        })
        .await;
    });
}
