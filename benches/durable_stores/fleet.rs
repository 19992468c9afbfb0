//! A fleet host (PostgreSQL only): one process, N concurrent Runs, each a
//! task that claims its Run and then appends its pause, all through ONE
//! log with a pool of k connections, against the bare equivalent on a
//! pool of k plain connections; then the same with one more Run's row
//! lock held by another session.

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::durable::deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use baton::durable::{AsyncHandoffLog, Claim};
use tokio_postgres::NoTls;

use super::common::postgres::Cluster;
use super::postgres::{bounded, open_all, open_log, options};
use super::{Log, ROOT, Sample, ms, pause, source};

/// The pool sizes of the fleet section.
const POOLS: [usize; 2] = [8, 16];

/// The Run whose row lock another session holds, in the fleet section.
const HELD: &str = "held";

/// The fleet logs' operation timeout: longer than a measurement, so the
/// claim of the held Run waits the lock out (and still bounded).
const FLEET_TIMEOUT: Duration = Duration::from_secs(120);

/// The bare tables of the fleet section, shaped like baton's (schema
/// version 2: no foreign key from the pause to the Run).
const BARE_FLEET_TABLES: &str = "
CREATE TABLE bare_run (
    root_run_id text   NOT NULL,
    run_id      text   NOT NULL,
    epoch       bigint NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id)
);
CREATE TABLE bare_pause (
    root_run_id             text   NOT NULL,
    run_id                  text   NOT NULL,
    session_id              text   NOT NULL,
    turn_id                 text   NOT NULL,
    invocation_id           text   NOT NULL,
    handoff_id              text   NOT NULL,
    successor_run_id        text   NOT NULL,
    successor_invocation_id text   NOT NULL,
    pause                   json   NOT NULL,
    epoch                   bigint NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id)
);
";
const BARE_RUN: &str = "INSERT INTO bare_run VALUES ($1, $2, $3)";
const BARE_PAUSE: &str = "INSERT INTO bare_pause \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CAST($9::text AS json), $10)";

/// `runs` Runs at once, each a task doing `work` for its Run: each Run's
/// latency (from its task's start to its end) and the wall time of all.
async fn fleet<F, Fut>(tag: &str, runs: usize, work: F) -> Sample
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let tasks: Vec<_> = (0..runs)
        .map(|i| {
            let run = work(format!("{tag}-{i}"));
            tokio::spawn(async move {
                let started = Instant::now();
                run.await;
                started.elapsed()
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(runs);
    for task in tasks {
        latencies.push(task.await.unwrap());
    }
    Sample::merge(vec![latencies], started.elapsed())
}

/// A Run of a fleet host on baton: its claim, then its pause's append.
fn baton_run(log: &Arc<Log>) -> impl Fn(String) -> BoxedRun + '_ {
    move |run| {
        let (log, source, pause) = (Arc::clone(log), source(&run), pause(&run));
        Box::pin(async move {
            let Claim::Owner(epoch) = log.claim_async(ROOT, &run).await.unwrap() else {
                panic!("{run}: a fresh Run was handed off");
            };
            let _ = log
                .append_async(ROOT, &source, epoch, &pause)
                .await
                .unwrap();
        })
    }
}

/// The same Run bare: an autocommit `INSERT` of its row, then one of its
/// pause's, each on a connection of the pool (as baton's two operations).
fn bare_run(pool: &Pool) -> impl Fn(String) -> BoxedRun + '_ {
    move |run| {
        let (pool, source, pause) = (pool.clone(), source(&run), pause(&run));
        let json = serde_json::to_string(&pause).unwrap();
        Box::pin(async move {
            let client = pool.get().await.unwrap();
            let insert = client.prepare_cached(BARE_RUN).await.unwrap();
            client
                .execute(&insert, &[&ROOT, &run, &1_i64])
                .await
                .unwrap();
            drop(client);
            let client = pool.get().await.unwrap();
            let insert = client.prepare_cached(BARE_PAUSE).await.unwrap();
            let intent = &pause.intent;
            client
                .execute(
                    &insert,
                    &[
                        &ROOT,
                        &source.run_id,
                        &source.session_id,
                        &source.turn_id,
                        &source.invocation_id,
                        &intent.handoff_id,
                        &intent.successor_run_id,
                        &intent.successor_invocation_id,
                        &json,
                        &1_i64,
                    ],
                )
                .await
                .unwrap();
        })
    }
}

type BoxedRun = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The held Run's claim, as it ended: its answer, and how long it waited.
struct HeldClaim {
    answer: String,
    waited: Duration,
}

/// `runs` Runs on one log with a pool of `k`, in a fresh database. With
/// `held`, another session holds the row lock of one more Run for the
/// whole measurement, and a task claims that Run meanwhile (holding one
/// of the `k` connections until the lock is let go, after the
/// measurement).
async fn fleet_baton(
    cluster: &Cluster,
    k: usize,
    runs: usize,
    held: bool,
) -> (Sample, Option<HeldClaim>) {
    let db = cluster.database().await;
    let log = open_log(
        &cluster.url(&db),
        options().pool_size(k).timeout(FLEET_TIMEOUT),
    )
    .await;
    drop(open_all(log.pool(), k).await);
    // Each connection prepares its statements in a warm-up.
    bounded("baton warm-up", fleet("warm", 4 * k, baton_run(&log))).await;
    let mut holding = None;
    if held {
        assert!(matches!(
            log.claim_async(ROOT, HELD).await.unwrap(),
            Claim::Owner(_)
        ));
        let holder = cluster.connect(&db).await;
        holder
            .batch_execute(&format!(
                "BEGIN; SELECT 1 FROM baton_run WHERE run_id = '{HELD}' FOR UPDATE"
            ))
            .await
            .unwrap();
        let claim = tokio::spawn({
            let log = Arc::clone(&log);
            async move {
                let started = Instant::now();
                let answer = match log.claim_async(ROOT, HELD).await {
                    Ok(Claim::Owner(epoch)) => format!("owner at epoch {epoch}"),
                    Ok(Claim::HandedOff(_)) => "handed off".to_owned(),
                    Ok(other) => format!("{other:?}"),
                    Err(error) => format!("error: {error}"),
                };
                HeldClaim {
                    answer,
                    waited: started.elapsed(),
                }
            }
        });
        // The claim is measured against only once it waits on the lock.
        let watcher = cluster.connect(&db).await;
        bounded("the held Run's claim to wait on its lock", async {
            loop {
                let waiting: i64 = watcher
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity \
                         WHERE datname = current_database() AND wait_event_type = 'Lock'",
                        &[],
                    )
                    .await
                    .unwrap()
                    .get(0);
                if waiting > 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        holding = Some((holder, claim));
    }
    let sample = bounded(
        &format!("baton fleet, k = {k}"),
        fleet("run", runs, baton_run(&log)),
    )
    .await;
    let held = match holding {
        Some((holder, claim)) => {
            holder.batch_execute("COMMIT").await.unwrap();
            Some(bounded("the held Run's claim", claim).await.unwrap())
        }
        None => None,
    };
    (sample, held)
}

/// The same `runs` Runs bare, on a pool of `k` plain connections (with
/// prepared statements), in a fresh database.
async fn fleet_bare(cluster: &Cluster, k: usize, runs: usize) -> Sample {
    let db = cluster.database().await;
    cluster
        .connect(&db)
        .await
        .batch_execute(BARE_FLEET_TABLES)
        .await
        .unwrap();
    let manager = Manager::from_config(
        cluster.url(&db).parse().unwrap(),
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager).max_size(k).build().unwrap();
    for client in open_all(&pool, k).await {
        client.prepare_cached(BARE_RUN).await.unwrap();
        client.prepare_cached(BARE_PAUSE).await.unwrap();
    }
    bounded("bare warm-up", fleet("warm", 4 * k, bare_run(&pool))).await;
    bounded(
        &format!("bare fleet, k = {k}"),
        fleet("run", runs, bare_run(&pool)),
    )
    .await
}

/// `BATON_BENCH_GROUP`, as the headings say it.
pub(super) fn group_commit() -> String {
    match super::postgres::group_slots() {
        Some(0) => "off".into(),
        Some(slots) => format!("{slots} slots"),
        None => "as many slots as the pool".into(),
    }
}

/// The fleet section: its table, then the same with one Run's row lock held.
pub(super) async fn fleet_host(cluster: &Cluster, runs: usize, rounds: usize) {
    println!();
    println!(
        "### A fleet host: {runs} concurrent Runs on one log (group commit: {})",
        group_commit()
    );
    println!();
    println!(
        "Each Run a task: its claim, then its pause's append (bare: an autocommit INSERT of \
         its run row, then one of its pause row), on one pool of k connections; latency per \
         Run, from its task's start (its wait for a connection included)."
    );
    println!();
    println!(
        "| pool (k) | baton Runs/s | bare Runs/s | ratio (Runs/s) | baton p50 / p99 (ms) | \
         bare p50 / p99 (ms) |"
    );
    println!("|---|---|---|---|---|---|");
    let mut unlocked = Vec::new();
    for k in POOLS {
        // Alternating rounds, as in the table: the row of the median ratio.
        let mut cells = Vec::new();
        for _ in 0..rounds {
            let (baton, _) = fleet_baton(cluster, k, runs, false).await;
            let bare = fleet_bare(cluster, k, runs).await;
            cells.push((baton.per_second() / bare.per_second(), baton, bare));
        }
        cells.sort_by(|a, b| a.0.total_cmp(&b.0));
        let ratios: Vec<String> = cells.iter().map(|c| format!("{:.2}", c.0)).collect();
        let (ratio, baton, bare) = cells.swap_remove(cells.len() / 2);
        println!(
            "| {k} | {:.0} | {:.0} | {ratio:.2}× (rounds: {}) | {} / {} | {} / {} |",
            baton.per_second(),
            bare.per_second(),
            ratios.join(", "),
            ms(baton.quantile(0.5)),
            ms(baton.quantile(0.99)),
            ms(bare.quantile(0.5)),
            ms(bare.quantile(0.99)),
        );
        unlocked.push((k, baton));
    }
    println!();
    println!(
        "With one more Run's row lock held by another session for the whole measurement, \
         and a task claiming that Run meanwhile (it waits on one of the k connections until \
         the lock is let go, after the measurement): the {runs} other Runs."
    );
    println!();
    println!(
        "| pool (k) | p99 unlocked (ms) | p99 with the lock held (ms) | p50 with the lock held \
         (ms) | Runs/s with the lock held | held Run's claim |"
    );
    println!("|---|---|---|---|---|---|");
    for (k, free) in unlocked {
        let (locked, held) = fleet_baton(cluster, k, runs, true).await;
        let held = held.expect("the held Run's claim");
        println!(
            "| {k} | {} | {} | {} | {:.0} | {} after {:.2} s |",
            ms(free.quantile(0.99)),
            ms(locked.quantile(0.99)),
            ms(locked.quantile(0.5)),
            locked.per_second(),
            held.answer,
            held.waited.as_secs_f64(),
        );
    }
}
