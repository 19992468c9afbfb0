//! What only `PostgresLog` has, the helpers its tests share: a log opened
//! on the shared cluster (migrating, or through a proxy the test
//! controls), a fresh database, the test's Run and pause. The tests are
//! beside, by concern: `postgres_schema.rs`, `postgres_network.rs`,
//! `postgres_retries.rs`, `postgres_fates.rs`, `postgres_in_tx.rs` (and
//! `postgres_drops.rs`, `postgres_commits.rs`, `postgres_sessions.rs`,
//! `postgres_finish.rs`, `postgres_failover.rs`, …); the contract's own
//! tests run on it unchanged (`main.rs`).

use std::time::Duration;

use baton::durable::tokio_postgres::NoTls;
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, PostgresLog, PostgresOptions, Receipt,
};

use crate::Payload;
use crate::common::postgres::Cluster;
use crate::common::proxy::Proxy;
use crate::common::{self, within};

pub(crate) type Log = PostgresLog<Payload>;

pub(crate) const ROOT: &str = "run";

/// Opens a log on `url` that migrates the schema first (as a test or a
/// development setup does; a fleet migrates as a deploy step).
pub(crate) async fn connect(url: &str) -> Result<Log, LogError> {
    open(url, PostgresOptions::new().migrate(true)).await
}

pub(crate) async fn open(url: &str, options: PostgresOptions) -> Result<Log, LogError> {
    within(
        "R5: a connect resolves",
        PostgresLog::connect_with(url.parse().unwrap(), NoTls, options),
    )
    .await
}

pub(crate) async fn connect_with_timeout(url: &str, timeout: Duration) -> Log {
    open(url, PostgresOptions::new().migrate(true).timeout(timeout))
        .await
        .expect("connect")
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A fresh database of the shared cluster: its name and connection string.
pub(crate) async fn fresh(cluster: &Cluster) -> (String, String) {
    let dbname = cluster.database().await;
    let url = cluster.url(&dbname);
    (dbname, url)
}

pub(crate) async fn owner(log: &Log) -> Epoch {
    match within("R5", log.claim_async(ROOT, "run")).await {
        Ok(Claim::Owner(epoch)) => epoch,
        other => panic!("the Run is not open: {other:?}"),
    }
}

/// A proxy to the cluster, and `url` pointed at it.
pub(crate) fn through_a_proxy(cluster: &Cluster, url: &str) -> (Proxy, String) {
    let proxy = Proxy::start(cluster.port());
    let via = url.replace(
        &format!("port={}", cluster.port()),
        &format!("port={}", proxy.port()),
    );
    (proxy, via)
}

/// A fresh database with its schema, and a log reaching it through a
/// proxy of its own.
pub(crate) async fn log_through_a_proxy(cluster: &Cluster) -> (Proxy, Log) {
    let (_, url) = fresh(cluster).await;
    drop(connect(&url).await.unwrap()); // the schema
    let (proxy, via) = through_a_proxy(cluster, &url);
    (proxy, connect(&via).await.unwrap())
}

/// Appends the test's pause to `(ROOT, run)` under `epoch`, bounded (R5).
pub(crate) async fn append(log: &Log, epoch: Epoch) -> Result<Receipt, LogError> {
    within(
        "R5",
        log.append_async(ROOT, &common::source(), epoch, &pause()),
    )
    .await
}

pub(crate) fn pause() -> common::Pause {
    common::pause_for(common::intent())
}
