//! The durable stores' `append` and `claim` against the bare store doing
//! the same durable write (issue 23), in two sections.
//!
//! **The table**: latency (median, p99) and throughput with 1, 8 and 32
//! concurrent workers, for `SqliteLog` and `PostgresLog`. On SQLite each
//! worker opens a log of its own; on PostgreSQL the workers of a cell share
//! ONE log whose pool has a connection per worker (`pool_size(workers)`),
//! as a process is meant to use it, while each bare worker has a plain
//! connection of its own; all connections are opened before the timing.
//! The physical limit is the store's own commit, so the bare figure is one
//! `INSERT` and its `COMMIT` of a row the size of the pause, with the same
//! durability settings: SQLite in WAL with `synchronous = FULL` (`BEGIN
//! IMMEDIATE; INSERT; COMMIT`), and PostgreSQL with its defaults (`fsync`,
//! `synchronous_commit = on`), one prepared autocommit `INSERT` (one round
//! trip: its own commit). Measured in the same run; ratio = baton / bare
//! of the medians (lower is better, 1.0 is the limit). PostgreSQL's cells
//! are measured in `BATON_BENCH_ROUNDS` (default 3) alternating rounds,
//! baton then bare, each on Runs of its own; the row shown is the round
//! of the median ratio, and every round's ratio is printed under it. Appends go to Runs
//! claimed beforehand (in bulk, untimed); claims are each Run's first.
//!
//! **A fleet host** (PostgreSQL only): one process, N concurrent Runs,
//! each a tokio task that claims its Run and then appends its pause, all
//! through ONE log with a pool of k = 8, then k = 16 connections; against
//! the bare equivalent on a deadpool pool of k plain connections (prepared
//! statements): per Run an autocommit `INSERT` of its run row, then one of
//! its pause row, into bare tables shaped like baton's (schema version 2).
//! It prints, per k, Runs/s of both and their ratio (baton / bare, higher
//! is better, 1.0 is the limit; the median of the alternating rounds, each
//! round's ratio beside it) and the p50 / p99 of the per-Run latency
//! (from its task's start, so its wait for a connection counts). Then the
//! same baton measurement once more while another session holds one more
//! Run's row lock (`SELECT … FOR UPDATE` in an open transaction) for the
//! whole measurement and a task claims that Run meanwhile (it holds one of
//! the k connections until the lock is let go, after the measurement): the
//! N other Runs' p99 beside the unlocked one, and how the held Run's claim
//! ended. Each fleet measurement has a fresh database, warmed first (the
//! pool's connections opened, its statements prepared).
//!
//! PostgreSQL runs on a throwaway cluster the bench starts as the tests do;
//! without the server programs its rows are skipped. Every wait is bounded
//! (a measurement past 5 minutes panics). Run it with
//! `cargo bench --features sqlite,postgres --bench durable_stores`; it
//! prints Markdown. `BATON_BENCH_OPS` sets the operations per cell of the
//! table (default 800), `BATON_BENCH_RUNS` the fleet's N (default 1000).
//!
//! Kept whole, past 600 lines: one criterion binary — its fixture, its
//! measured loops and the table it prints, which benches/README.md
//! quotes section by section.

#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres_fixture;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::durable::deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, HandoffLog, PostgresLog, PostgresOptions, SqliteLog,
};
use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{HandoffExecution, HandoffIntent, HandoffPause, Invocation};
use postgres_fixture::Cluster;
use tokio_postgres::NoTls;

const ROOT: &str = "root";
const CONCURRENCY: [usize; 3] = [1, 8, 32];

type Pause = HandoffPause<HandoffExecution>;
type Log = PostgresLog<HandoffExecution>;

fn source(run: &str) -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: run.into(),
        invocation_id: format!("{run}-invocation"),
    }
}

fn pause(run: &str) -> Pause {
    let digest = |c: char| Digest::parse(format!("sha256:{}", c.to_string().repeat(64))).unwrap();
    let execution = HandoffExecution {
        replay: ReplayEvidence {
            version: REPLAY_VERSION,
            digest: digest('a'),
            route_identity: digest('b'),
        },
        tools: HandoffTools {
            catalog_digest: digest('c'),
            loaded: vec!["shell".into()],
        },
        compaction: CompactionBudget::Available,
        main_output_limit: None,
        supports_vision: false,
        replay_base: None,
    };
    HandoffPause::new(
        HandoffIntent {
            handoff_id: format!("{run}-handoff"),
            host_epoch: "host".into(),
            root_run_id: ROOT.into(),
            successor_run_id: format!("{run}-next"),
            successor_invocation_id: format!("{run}-next-invocation"),
            claim_id: "claim".into(),
        },
        execution,
    )
}

/// One measurement: every operation's latency, and the wall time of all.
struct Sample {
    latencies: Vec<Duration>,
    wall: Duration,
}

impl Sample {
    fn merge(parts: Vec<Vec<Duration>>, wall: Duration) -> Self {
        let mut latencies: Vec<Duration> = parts.into_iter().flatten().collect();
        latencies.sort();
        Sample { latencies, wall }
    }
    fn quantile(&self, q: f64) -> Duration {
        let i = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
        self.latencies.get(i).copied().unwrap_or_default()
    }
    fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn row(store: &str, op: &str, workers: usize, baton: &Sample, bare: &Sample) {
    println!(
        "| {store} | {op} | {workers} | {} / {} | {} / {} | {:.2}× | {:.0} | {:.0} |",
        ms(baton.quantile(0.5)),
        ms(baton.quantile(0.99)),
        ms(bare.quantile(0.5)),
        ms(bare.quantile(0.99)),
        baton.quantile(0.5).as_secs_f64() / bare.quantile(0.5).as_secs_f64(),
        baton.per_second(),
        bare.per_second()
    );
}

/// The runs worker `w` of `workers` works on, `ops` in all.
fn share(tag: &str, w: usize, workers: usize, ops: usize) -> Vec<String> {
    (0..ops)
        .filter(|i| i % workers == w)
        .map(|i| format!("{tag}-{i}"))
        .collect()
}

// --- SQLite ---

struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> Self {
        let file = TempFile(
            std::env::temp_dir().join(format!("baton-bench-{}-{name}.sqlite", std::process::id())),
        );
        file.remove();
        file
    }
    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.remove();
    }
}

fn on_threads(workers: usize, work: impl Fn(usize) -> Vec<Duration> + Send + Sync) -> Sample {
    let started = Instant::now();
    let parts = std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = (0..workers).map(|w| scope.spawn(move || work(w))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    Sample::merge(parts, started.elapsed())
}

fn sqlite_baton(path: &Path, op: &str, workers: usize, ops: usize) -> Sample {
    let tag = format!("{op}-{workers}");
    if op == "append" {
        // The Runs claimed in bulk, untimed, in the log's own table.
        let log: SqliteLog<HandoffExecution> = SqliteLog::open(path).unwrap();
        drop(log);
        let mut raw = rusqlite::Connection::open(path).unwrap();
        let tx = raw.transaction().unwrap();
        for i in 0..ops {
            tx.execute(
                "INSERT INTO run_epoch VALUES (?1, ?2, 1)",
                (ROOT, format!("{tag}-{i}")),
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    on_threads(workers, |w| {
        let log: SqliteLog<HandoffExecution> = SqliteLog::open(path).unwrap();
        share(&tag, w, workers, ops)
            .iter()
            .map(|run| {
                let (source, pause) = (source(run), pause(run));
                let started = Instant::now();
                // SQLite's write lock may outlast the log's busy timeout
                // (5 s) with 32 writers: the operation answers Unavailable,
                // and a caller does it again (an append is idempotent, a
                // claim's epoch was not issued or is simply superseded).
                loop {
                    let done = if op == "append" {
                        log.append(ROOT, &source, Epoch::new(1), &pause).map(drop)
                    } else {
                        log.claim(ROOT, run)
                            .map(|claim| assert!(matches!(claim, Claim::Owner(_))))
                    };
                    match done {
                        Ok(()) => break,
                        Err(
                            baton::durable::LogError::Unavailable(_)
                            | baton::durable::LogError::OutcomeUnknown(_),
                        ) => continue,
                        Err(other) => panic!("{op}: {other}"),
                    }
                }
                started.elapsed()
            })
            .collect()
    })
}

fn sqlite_bare(path: &Path, tag: &str, workers: usize, ops: usize) -> Sample {
    {
        let raw = rusqlite::Connection::open(path).unwrap();
        raw.pragma_update(None, "journal_mode", "wal").unwrap();
        raw.execute_batch(
            "CREATE TABLE IF NOT EXISTS bare (k TEXT PRIMARY KEY, v TEXT NOT NULL) STRICT",
        )
        .unwrap();
    }
    on_threads(workers, |w| {
        let mut raw = rusqlite::Connection::open(path).unwrap();
        raw.busy_timeout(Duration::from_secs(30)).unwrap();
        raw.pragma_update(None, "synchronous", "FULL").unwrap();
        share(tag, w, workers, ops)
            .iter()
            .map(|run| {
                let json = serde_json::to_string(&pause(run)).unwrap();
                let started = Instant::now();
                let tx = raw
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .unwrap();
                tx.execute("INSERT INTO bare VALUES (?1, ?2)", (run, json))
                    .unwrap();
                tx.commit().unwrap();
                started.elapsed()
            })
            .collect()
    })
}

// --- PostgreSQL ---

/// The longest any one measurement (or wait of the bench) may take: past
/// it the bench panics, never hangs.
const LIMIT: Duration = Duration::from_secs(300);

/// `what`, or a panic if it outlives [`LIMIT`].
async fn bounded<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, work)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {LIMIT:?}"))
}

/// Opens `size` connections of `pool` (all held at once, so each one is
/// new), so that no measurement times a connect.
async fn open_all(pool: &Pool, size: usize) -> Vec<Object> {
    let mut objects = Vec::with_capacity(size);
    for _ in 0..size {
        objects.push(pool.get().await.unwrap());
    }
    objects
}

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
async fn open_log(url: &str, options: PostgresOptions) -> Arc<Log> {
    Arc::new(
        PostgresLog::connect_with(url.parse().unwrap(), NoTls, options.migrate(true))
            .await
            .unwrap(),
    )
}

async fn postgres_baton(
    url: Arc<String>,
    op: &'static str,
    workers: usize,
    ops: usize,
    round: usize,
) -> Sample {
    let tag = format!("{op}-{workers}-r{round}");
    // One log shared by the cell's workers, a connection each.
    let log = open_log(&url, PostgresOptions::new().pool_size(workers)).await;
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
    let work = on_tasks(workers, |w| {
        let (log, runs) = (Arc::clone(&log), share(&tag, w, workers, ops));
        async move {
            let mut latencies = Vec::new();
            for run in &runs {
                let (source, pause) = (source(run), pause(run));
                let started = Instant::now();
                if op == "append" {
                    let _ = log
                        .append_async(ROOT, &source, Epoch::new(1), &pause)
                        .await
                        .unwrap();
                } else {
                    assert!(matches!(
                        log.claim_async(ROOT, run).await.unwrap(),
                        Claim::Owner(_)
                    ));
                }
                latencies.push(started.elapsed());
            }
            latencies
        }
    });
    bounded(&format!("baton {tag}"), work).await
}

async fn postgres_bare(url: Arc<String>, tag: &str, workers: usize, ops: usize) -> Sample {
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
                client.execute(&insert, &[run, &json]).await.unwrap();
                latencies.push(started.elapsed());
            }
            latencies
        }
    });
    bounded(&format!("bare {tag}"), work).await
}

// --- PostgreSQL: a fleet host ---

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
        PostgresOptions::new().pool_size(k).timeout(FLEET_TIMEOUT),
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

async fn fleet_host(cluster: &Cluster, runs: usize, rounds: usize) {
    println!();
    println!("### A fleet host: {runs} concurrent Runs on one log");
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

fn main() {
    // `cargo bench` passes `--bench`; a filter is not supported.
    let setting = |name: &str, default: usize| -> usize {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (ops, runs, rounds) = (
        setting("BATON_BENCH_OPS", 800),
        setting("BATON_BENCH_RUNS", 1000),
        setting("BATON_BENCH_ROUNDS", 3).max(1),
    );
    println!(
        "| store | operation | workers | baton median / p99 (ms) | bare median / p99 (ms) | \
         ratio (medians) | baton ops/s | bare ops/s |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let (log_file, bare_file) = (TempFile::new("log"), TempFile::new("bare"));
    for op in ["append", "claim"] {
        for workers in CONCURRENCY {
            let baton = sqlite_baton(&log_file.0, op, workers, ops);
            let bare = sqlite_bare(&bare_file.0, &format!("{op}-{workers}"), workers, ops);
            row("SQLite", op, workers, &baton, &bare);
        }
    }
    let Some(cluster) = Cluster::start() else {
        println!("(PostgreSQL skipped: no server programs)");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let url = Arc::new(cluster.url(&cluster.database().await));
        // Alternating rounds (baton, bare, baton, bare, …): the server's
        // own drift (its WAL, checkpoints, the disk's flushes) falls on
        // both sides; the row is the round of the median ratio.
        for op in ["append", "claim"] {
            for workers in CONCURRENCY {
                let mut cells = Vec::new();
                for round in 0..rounds {
                    let baton = postgres_baton(Arc::clone(&url), op, workers, ops, round).await;
                    let tag = format!("{op}-{workers}-r{round}");
                    let bare = postgres_bare(Arc::clone(&url), &tag, workers, ops).await;
                    let ratio =
                        baton.quantile(0.5).as_secs_f64() / bare.quantile(0.5).as_secs_f64();
                    cells.push((ratio, baton, bare));
                }
                cells.sort_by(|a, b| a.0.total_cmp(&b.0));
                let ratios: Vec<String> = cells.iter().map(|c| format!("{:.2}", c.0)).collect();
                let (_, baton, bare) = &cells[cells.len() / 2];
                row("PostgreSQL", op, workers, baton, bare);
                println!(
                    "|  | (the {rounds} rounds' ratios: {}) | | | | | | |",
                    ratios.join(", ")
                );
            }
        }
        fleet_host(&cluster, runs, rounds).await;
    });
}
