//! The PostgreSQL cells of the table: the workers of a cell share one
//! log with a connection each, against the bare prepared `INSERT` on a
//! plain connection per worker.

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::durable::deadpool_postgres::{Object, Pool};
use baton::durable::{AsyncHandoffLog, Claim, Epoch, PostgresLog, PostgresOptions};
use tokio_postgres::NoTls;

use super::{Log, ROOT, Sample, ms, pause, share, source};

/// The longest any one measurement (or wait of the bench) may take: past
/// it the bench panics, never hangs.
pub(super) const LIMIT: Duration = Duration::from_secs(300);

/// `what`, or a panic if it outlives [`LIMIT`].
pub(super) async fn bounded<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    super::durable_common::bounded(what, LIMIT, work).await
}

/// Opens `size` connections of `pool` (all held at once, so each one is
/// new), so that no measurement times a connect.
pub(super) async fn open_all(pool: &Pool, size: usize) -> Vec<Object> {
    let mut objects = Vec::with_capacity(size);
    for _ in 0..size {
        objects.push(pool.get().await.unwrap());
    }
    objects
}

/// `work(w)` as `workers` tasks at once: every latency, and the wall time.
async fn on_tasks<F, Fut>(workers: usize, mut work: F) -> Sample
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Vec<Duration>> + Send + 'static,
{
    let started = Instant::now();
    let tasks: Vec<_> = (0..workers).map(|w| tokio::spawn(work(w))).collect();
    let mut parts = Vec::new();
    for task in tasks {
        parts.push(task.await.unwrap());
    }
    Sample::merge(parts, started.elapsed())
}

/// A log as a process now opens it: one for all its workers, its pool as
/// large as `options` say (migrating the schema, if need be, as it opens).
pub(super) async fn open_log(url: &str, options: PostgresOptions) -> Arc<Log> {
    Arc::new(
        PostgresLog::connect_with(url.parse().unwrap(), NoTls, options.migrate(true))
            .await
            .unwrap(),
    )
}

/// `ops` of `op` (`append`, `claim` or `handoff`) in round `round`,
/// shared by `workers` tasks on one log with a connection each.
pub(super) async fn baton(
    url: Arc<String>,
    op: &'static str,
    workers: usize,
    ops: usize,
    round: usize,
) -> Sample {
    baton_with(url, options(), op, workers, ops, round).await
}

/// `BATON_BENCH_GROUP`: the group commit slots the logs open with, if set
/// (0 turns it off; `PostgresOptions::group_commit`); unset, the
/// library's default, as many as the pool has connections.
pub(super) fn group_slots() -> Option<usize> {
    std::env::var_os("BATON_BENCH_GROUP").map(|_| super::setting("BATON_BENCH_GROUP", 0))
}

/// The options the logs of the table and of the fleet open with: the
/// defaults, with [`group_slots`] if set.
pub(super) fn options() -> PostgresOptions {
    match group_slots() {
        Some(slots) => PostgresOptions::new().group_commit(slots),
        None => PostgresOptions::new(),
    }
}

/// [`baton`] on a log opened with `options` (its pool sized to the
/// workers).
async fn baton_with(
    url: Arc<String>,
    options: PostgresOptions,
    op: &'static str,
    workers: usize,
    ops: usize,
    round: usize,
) -> Sample {
    let tag = format!("{op}-{workers}-r{round}");
    // One log shared by the cell's workers, a connection each.
    let log = open_log(&url, options.pool_size(workers)).await;
    drop(open_all(log.pool(), workers).await);
    if op == "append" {
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        client
            .execute(
                "INSERT INTO baton_run SELECT $1, $2 || '-' || i, 1 FROM generate_series(0, $3 - 1) i",
                &[&ROOT, &tag, &(ops as i32)],
            )
            .await
            .unwrap();
    }
    let root_each = crate::durable_common::setting("BATON_BENCH_ROOT_EACH", 0) == 1;
    let work = on_tasks(workers, |w| {
        let (log, runs) = (Arc::clone(&log), share(&tag, w, workers, ops));
        async move {
            let mut latencies = Vec::new();
            for run in &runs {
                let started = Instant::now();
                match op {
                    "append" => {
                        let _ = log
                            .append_async(ROOT, &source(run), Epoch::new(1), &pause(run))
                            .await
                            .unwrap();
                    }
                    "claim" => assert!(matches!(
                        log.claim_async(ROOT, run).await.unwrap(),
                        Claim::Owner(_)
                    )),
                    _ => handoff(&log, run, root_each).await,
                }
                latencies.push(started.elapsed());
            }
            latencies
        }
    });
    bounded(&format!("baton {tag}"), work).await
}

/// The handoff unit, four transactions: `run`'s first claim, its pause's
/// append, its successor's first claim, and the successor's finish; under
/// the one root Run every unit shares, or with `root_each`
/// (`BATON_BENCH_ROOT_EACH=1`) with `run` as its own root (as
/// `scripts/peers` runs them).
async fn handoff(log: &Log, run: &str, root_each: bool) {
    let root = if root_each { run } else { ROOT };
    let pause = crate::durable_common::pause(root, run, &format!("{run}-next"));
    let Ok(Claim::Owner(epoch)) = log.claim_async(root, run).await else {
        panic!("{run} is not open");
    };
    let _ = log
        .append_async(root, &source(run), epoch, &pause)
        .await
        .unwrap();
    let next = &pause.intent.successor_run_id;
    let Ok(Claim::Owner(epoch)) = log.claim_async(root, next).await else {
        panic!("{next} is not open");
    };
    let _ = log
        .finish_async(root, &source(next), epoch, &pause.execution)
        .await
        .unwrap();
}

/// The bare store's limit for `ops` units of `writes` transactions each:
/// one prepared autocommit `INSERT` of a row the pause's size, `writes`
/// times per unit, on a plain connection per worker.
pub(super) async fn bare(
    url: Arc<String>,
    tag: &str,
    writes: usize,
    workers: usize,
    ops: usize,
) -> Sample {
    {
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        client
            .batch_execute("CREATE TABLE IF NOT EXISTS bare (k text PRIMARY KEY, v json NOT NULL)")
            .await
            .unwrap();
    }
    // A connection per worker, opened (and its statement prepared) before
    // the timing, as the log's pool is.
    let mut clients = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        let insert = client
            .prepare("INSERT INTO bare VALUES ($1, CAST($2::text AS json))")
            .await
            .unwrap();
        clients.push((client, insert));
    }
    let mut clients = clients.into_iter();
    let work = on_tasks(workers, |w| {
        let runs = share(tag, w, workers, ops);
        let (client, insert) = clients.next().unwrap();
        async move {
            let mut latencies = Vec::new();
            for run in &runs {
                let json = serde_json::to_string(&pause(run)).unwrap();
                let started = Instant::now();
                for write in 0..writes {
                    let key = format!("{run}/{write}");
                    client.execute(&insert, &[&key, &json]).await.unwrap();
                }
                latencies.push(started.elapsed());
            }
            latencies
        }
    });
    bounded(&format!("bare {tag}"), work).await
}

/// One side of a section's table: its name, its server, and the options
/// its logs open with.
pub(super) struct Side {
    pub(super) name: &'static str,
    pub(super) url: Arc<String>,
    pub(super) options: PostgresOptions,
}

impl Side {
    /// A side whose logs open with the default options.
    pub(super) fn new(name: &'static str, url: Arc<String>) -> Self {
        let options = options();
        Side { name, url, options }
    }
}

/// A section's table of `operations` on `one` beside `two`, each cell
/// `ops` units in `rounds` alternating rounds (Runs of their own, numbered
/// from `first_round`); the row is the round of the median ratio, every
/// round's ratio beside it.
pub(super) async fn side_by_side(
    [one_side, two_side]: [Side; 2],
    operations: &[&'static str],
    workers: &[usize],
    (ops, rounds, first_round): (usize, usize, usize),
) {
    let (one_name, other) = (one_side.name, two_side.name);
    println!(
        "| operation | workers | {one_name} median / p99 (ms) | {other} median / p99 (ms) | \
         ratio (medians; the rounds') | {one_name} ops/s | {other} ops/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &op in operations {
        for &workers in workers {
            let mut cells = Vec::new();
            for round in first_round..first_round + rounds {
                let (url, options) = (Arc::clone(&one_side.url), one_side.options.clone());
                let one = baton_with(url, options, op, workers, ops, round).await;
                let (url, options) = (Arc::clone(&two_side.url), two_side.options.clone());
                // Runs of its own, should both sides share a database.
                let two = baton_with(url, options, op, workers, ops, round + 1000).await;
                let ratio = two.quantile(0.5).as_secs_f64() / one.quantile(0.5).as_secs_f64();
                cells.push((ratio, one, two));
            }
            cells.sort_by(|a, b| a.0.total_cmp(&b.0));
            let ratios: Vec<String> = cells.iter().map(|c| format!("{:.2}", c.0)).collect();
            let (_, one, two) = &cells[cells.len() / 2];
            println!(
                "| {op} | {workers} | {} / {} | {} / {} | {:.2}× ({}) | {:.0} | {:.0} |",
                ms(one.quantile(0.5)),
                ms(one.quantile(0.99)),
                ms(two.quantile(0.5)),
                ms(two.quantile(0.99)),
                two.quantile(0.5).as_secs_f64() / one.quantile(0.5).as_secs_f64(),
                ratios.join(", "),
                one.per_second(),
                two.per_second()
            );
        }
    }
}
