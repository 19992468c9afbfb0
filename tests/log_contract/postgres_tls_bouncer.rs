//! `PostgresLog` over TLS and through PgBouncer, beyond the contract suite
//! (which runs unchanged on both, as the stores `postgres_tls` and
//! `postgres_bouncer`): that a TLS log's traffic really is encrypted, that
//! a TLS requirement the server cannot meet is a typed error and never a
//! plaintext fallback, that the server's certificate is checked, and that
//! many logs share PgBouncer's few server connections with every answer
//! right.

use std::error::Error;
use std::sync::Arc;

use baton::durable::tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use baton::durable::tokio_postgres::{NoTls, Socket};
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, PostgresLog, PostgresOptions, PostgresSchema, Receipt,
    Retirement,
};
use baton::{HandoffIntent, HandoffPause, Invocation};

use crate::common::pgbouncer::POOL_SIZE;
use crate::common::postgres::Cluster;
use crate::common::{execution, within};
use crate::postgres_bouncer_store::postgres_bouncer;
use crate::postgres_store::{DML_ROLE, SCHEMA, dml_only};
use crate::postgres_tls_store::{postgres_tls, rustls_trusting};
use crate::{Payload, Store, run};

type Log = PostgresLog<Payload>;

const ROOT: &str = "root";

fn source(run: &str) -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: run.into(),
        invocation_id: format!("{run}-invocation"),
    }
}

fn pause(run: &str) -> HandoffPause<Payload> {
    HandoffPause::new(
        HandoffIntent {
            handoff_id: format!("{run}-handoff"),
            host_epoch: "host".into(),
            root_run_id: ROOT.into(),
            successor_run_id: format!("{run}-next"),
            successor_invocation_id: format!("{run}-next-invocation"),
            claim_id: "claim".into(),
        },
        execution(),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Opens a log on `url` with `tls`, the suite's schema, bounded (R5).
async fn open<T>(url: &str, tls: T) -> Result<Log, LogError>
where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + Sync,
    T::TlsConnect: Send + Sync,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let options = PostgresOptions::new().schema(PostgresSchema::named(SCHEMA).unwrap());
    within(
        "R5: a connect resolves",
        PostgresLog::connect_with(url.parse().unwrap(), tls, options),
    )
    .await
}

/// An error and its sources, one text.
fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Asserts that `opened` is [`LogError::Unavailable`] and that its sources
/// say `why` (so the refusal is the one the test means, not another).
fn assert_unavailable(opened: Result<Log, LogError>, why: &str, what: &str) {
    match opened {
        Err(LogError::Unavailable(source)) => {
            let text = chain(&*source);
            assert!(
                text.contains(why),
                "{what}: Unavailable, but not for {why:?}: {text}"
            );
        }
        Err(other) => panic!("{what}: another error than Unavailable: {other:?}"),
        Ok(log) => panic!("{what}: the log opened: {log:?}"),
    }
}

/// Whether each backend of [`DML_ROLE`] on database `dbname` of `cluster`
/// uses TLS (`pg_stat_ssl`, read by the superuser), and whether the
/// superuser's own plain connection does (the contrast: the query tells
/// the two apart).
async fn backends_ssl(cluster: &Cluster, dbname: &str) -> (Vec<bool>, bool) {
    let admin = cluster.connect(dbname).await;
    let rows = admin
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.datname = $1 AND a.usename = $2",
            &[&dbname, &DML_ROLE],
        )
        .await
        .expect("pg_stat_ssl");
    let own = admin
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .expect("the superuser's own backend");
    (rows.iter().map(|row| row.get(0)).collect(), own.get(0))
}

/// A log over TLS (the `postgres_tls` store: `sslmode=require`, rustls
/// trusting the cluster's CA) is encrypted on the wire: after it claimed a
/// Run, every backend of its role on its database shows `ssl = true` in
/// `pg_stat_ssl`, while the superuser's plain connection beside it shows
/// `false`.
#[test]
fn a_log_over_tls_is_encrypted_on_the_server_side() {
    run(postgres_tls, |store| async move {
        let cluster = Cluster::shared_tls().expect("the TLS cluster");
        let log = store.open().await;
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::Owner(Epoch::new(1))
        );
        let (backends, admin) = backends_ssl(cluster, &store.dbname).await;
        assert!(!backends.is_empty(), "the log's backend is open");
        assert!(
            backends.iter().all(|&ssl| ssl),
            "every backend of the log uses TLS: {backends:?}"
        );
        assert!(!admin, "a plain connection shows ssl = false");
    });
}

/// `sslmode=prefer` with the rustls connector, against a server that
/// speaks TLS, uses TLS.
#[test]
fn sslmode_prefer_with_a_tls_connector_uses_tls_when_the_server_offers_it() {
    run(postgres_tls, |store| async move {
        let cluster = Cluster::shared_tls().expect("the TLS cluster");
        let url = store.url.replace("sslmode=require", "sslmode=prefer");
        assert!(url.contains("sslmode=prefer"));
        let log = open(&url, store.tls.clone()).await.expect("the log opens");
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::Owner(Epoch::new(1))
        );
        let (backends, _) = backends_ssl(cluster, &store.dbname).await;
        assert!(!backends.is_empty(), "the log's backend is open");
        assert!(
            backends.iter().all(|&ssl| ssl),
            "prefer negotiated TLS: {backends:?}"
        );
    });
}

/// `sslmode=require` against a server without TLS (the shared cluster) is
/// [`LogError::Unavailable`] saying the server does not support TLS, with
/// the rustls connector and with `NoTls` alike: never a plaintext fallback.
/// The same string without `sslmode` opens (the refusal is TLS's alone).
#[test]
fn sslmode_require_against_a_server_without_tls_is_unavailable_never_plaintext() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let url = dml_only(cluster, &dbname).await;
        let required = format!("{url} sslmode=require");
        // Any root will do: the server refuses TLS before a certificate.
        let tls = rustls_trusting(&[]);
        assert_unavailable(
            open(&required, tls).await,
            "server does not support TLS",
            "rustls, sslmode=require",
        );
        assert_unavailable(
            open(&required, NoTls).await,
            "server does not support TLS",
            "NoTls, sslmode=require",
        );
        let (backends, _) = backends_ssl(cluster, &dbname).await;
        assert!(backends.is_empty(), "no session was opened: {backends:?}");
        open(&url, NoTls)
            .await
            .expect("the same string without sslmode opens");
    });
}

/// A connector that does not trust the server's CA is refused, as
/// [`LogError::Unavailable`] naming the certificate: `sslmode=require`
/// checks the server's certificate, it does not only encrypt.
#[test]
fn a_server_certificate_from_an_untrusted_ca_is_unavailable() {
    run(postgres_tls, |store| async move {
        assert_unavailable(
            open(&store.url, rustls_trusting(&[])).await,
            "certificate",
            "rustls trusting no CA",
        );
        open(&store.url, store.tls.clone())
            .await
            .expect("the same string with the CA trusted opens");
    });
}

/// Through PgBouncer in transaction mode, 4 logs × 25 Runs claimed and
/// appended all at once — more client connections than PgBouncer's
/// [`POOL_SIZE`] server connections, which they share — each answer
/// right: every claim `Owner(1)`, every append `Written`, and a second
/// claim of every Run, from another log, `HandedOff` with its pause. The
/// server saw at most `POOL_SIZE` sessions of the role on the database.
/// (With prepared statements the same logs fail here: `prepared statement
/// "sN" does not exist`, a statement prepared in one transaction's server
/// connection and executed in another's.)
#[test]
fn through_pgbouncer_many_logs_share_few_server_connections_and_answer_right() {
    const LOGS: usize = 4;
    const RUNS: usize = 25;
    run(postgres_bouncer, |store| async move {
        let cluster = Cluster::shared().expect("the shared cluster");
        let mut logs = Vec::new();
        for _ in 0..LOGS {
            logs.push(Arc::new(store.open().await));
        }
        let tasks: Vec<_> = (0..LOGS * RUNS)
            .map(|i| {
                let log = Arc::clone(&logs[i % LOGS]);
                tokio::spawn(async move {
                    let run = format!("run-{i}");
                    let claimed = within("R5", log.claim_async(ROOT, &run)).await;
                    assert_eq!(claimed.unwrap(), Claim::Owner(Epoch::new(1)), "{run}");
                    let appended = within(
                        "R5",
                        log.append_async(ROOT, &source(&run), Epoch::new(1), &pause(&run)),
                    )
                    .await;
                    assert_eq!(appended.unwrap(), Receipt::Written, "{run}");
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("every operation answered right");
        }
        let clients: usize = logs.iter().map(|log| log.pool().status().size).sum();
        assert!(
            clients > POOL_SIZE,
            "the logs held {clients} client connections, more than PgBouncer's {POOL_SIZE}"
        );
        for i in 0..LOGS * RUNS {
            let run = format!("run-{i}");
            let other = &logs[(i + 1) % LOGS];
            assert_eq!(
                within("R5", other.claim_async(ROOT, &run)).await.unwrap(),
                Claim::HandedOff(pause(&run)),
                "R1: {run} was handed off"
            );
        }
        let admin = cluster.connect(&store.dbname).await;
        let sessions: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND usename = $2",
                &[&store.dbname, &DML_ROLE],
            )
            .await
            .expect("pg_stat_activity")
            .get(0);
        assert!(
            (1..=POOL_SIZE as i64).contains(&sessions),
            "the server saw {sessions} sessions of {DML_ROLE}, PgBouncer's pool is {POOL_SIZE}"
        );
    });
}

/// Through PgBouncer in transaction mode (no prepared statements, no
/// session state), the third fate and retention, raced: under each of 16
/// root Runs one Run is finished, then a retirement of the root and 6
/// claims of new Runs under it are sent all at once from 4 logs. Whatever
/// order the server puts them in, no Run's row is left under a tombstone
/// (R9, R10): a claim that answered `Owner` has its row under a live root
/// (whose retirement then answered `RunOpen`), one that answered `Retired`
/// has none. Then a claim inside the caller's own transaction, on a
/// connection through PgBouncer, commits with it. (The suite's role is
/// granted `DELETE` here, which a retirement needs.)
#[test]
fn through_pgbouncer_retirements_racing_new_claims_never_leave_a_run_under_a_tombstone() {
    const LOGS: usize = 4;
    const ROOTS: usize = 16;
    const LATE: usize = 6;
    run(postgres_bouncer, |store| async move {
        let cluster = Cluster::shared().expect("the shared cluster");
        let admin = cluster.connect(&store.dbname).await;
        admin
            .batch_execute(&format!(
                "GRANT DELETE ON ALL TABLES IN SCHEMA {SCHEMA} TO {DML_ROLE}"
            ))
            .await
            .expect("the grant");
        let mut logs = Vec::new();
        for _ in 0..LOGS {
            logs.push(Arc::new(store.open().await));
        }
        for root in 0..ROOTS {
            let root = format!("root-{root}");
            let Ok(Claim::Owner(epoch)) = within("R5", logs[0].claim_async(&root, "done")).await
            else {
                panic!("a fresh Run is open");
            };
            let done = source("done");
            let finished = within(
                "R5",
                logs[0].finish_async(&root, &done, epoch, &execution()),
            )
            .await;
            assert_eq!(finished.unwrap(), Receipt::Written);
        }
        let mut retirements = Vec::new();
        let mut claims = Vec::new();
        for root in 0..ROOTS {
            let name = format!("root-{root}");
            let log = Arc::clone(&logs[root % LOGS]);
            let retiring = name.clone();
            retirements.push((
                name.clone(),
                tokio::spawn(async move { log.retire_async(&retiring).await }),
            ));
            for late in 0..LATE {
                let log = Arc::clone(&logs[(root + late + 1) % LOGS]);
                let (root, run) = (name.clone(), format!("late-{late}"));
                claims.push(tokio::spawn(async move {
                    let claimed = log.claim_async(&root, &run).await;
                    (root, run, claimed)
                }));
            }
        }
        let mut retired = std::collections::HashSet::new();
        for (root, retirement) in retirements {
            match within("R5", retirement).await.unwrap() {
                Ok(Retirement::Retired { .. }) => {
                    retired.insert(root);
                }
                Err(LogError::RunOpen { .. }) => {}
                other => panic!("{root}: {other:?}"),
            }
        }
        for claim in claims {
            let (root, run, claimed) = within("R5", claim).await.unwrap();
            let rows: i64 = admin
                .query_one(
                    &format!(
                        "SELECT count(*) FROM {SCHEMA}.baton_run \
                         WHERE root_run_id = $1 AND run_id = $2"
                    ),
                    &[&root, &run],
                )
                .await
                .unwrap()
                .get(0);
            match claimed.unwrap() {
                Claim::Owner(epoch) => {
                    assert_eq!(epoch, Epoch::new(1));
                    assert!(
                        !retired.contains(&root),
                        "{root}/{run}: Owner under a tombstone"
                    );
                    assert_eq!(rows, 1, "{root}/{run}");
                }
                Claim::Retired => {
                    assert!(retired.contains(&root), "{root}/{run}");
                    assert_eq!(rows, 0, "{root}/{run}: a Run's row under the tombstone");
                }
                other => panic!("{root}/{run}: {other:?}"),
            }
        }
        let under_tombstones: i64 = admin
            .query_one(
                &format!(
                    "SELECT count(*) FROM {SCHEMA}.baton_run JOIN {SCHEMA}.baton_root \
                     USING (root_run_id) WHERE retired"
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(under_tombstones, 0, "R10: no Run's row under a tombstone");
        eprintln!(
            "{} of {ROOTS} root Runs retired before their new claims",
            retired.len()
        );

        // The caller's transaction, through PgBouncer.
        // The log's statements name its schema: the caller's connection
        // needs no `search_path` (no session state behind PgBouncer).
        let (mut client, connection) = baton::durable::tokio_postgres::connect(&store.url, NoTls)
            .await
            .expect("a connection through PgBouncer");
        tokio::spawn(connection);
        let tx = client.transaction().await.unwrap();
        let claimed = within("R5", logs[0].claim_in(&tx, "own", "run")).await;
        assert_eq!(claimed.unwrap(), Claim::Owner(Epoch::new(1)));
        tx.commit().await.unwrap();
        assert_eq!(
            within("R5", logs[1].claim_async("own", "run"))
                .await
                .unwrap(),
            Claim::Owner(Epoch::new(2)),
            "the claim committed with the caller's transaction"
        );
    });
}
