//! The durable stores' `append` and `claim` against the bare store doing
//! the same durable write (issue 23): latency (median, p99) and throughput
//! with 1, 8 and 32 concurrent workers, each with a connection of its own,
//! for `SqliteLog` and `PostgresLog`. The physical limit is the store's own
//! commit, so the bare figure is one `INSERT` and its `COMMIT` of a row the
//! size of the pause, with the same durability settings: SQLite in WAL
//! with `synchronous = FULL` (`BEGIN IMMEDIATE; INSERT; COMMIT`), and
//! PostgreSQL with its defaults (`fsync`, `synchronous_commit = on`), one
//! autocommit `INSERT` (one round trip: its own commit). Measured in the
//! same run; ratio = baton / bare (lower is better, 1.0 is the limit).
//!
//! Appends go to Runs claimed beforehand (in bulk, untimed); claims are
//! each Run's first. PostgreSQL runs on a throwaway cluster the bench
//! starts as the tests do; without the server programs its rows are
//! skipped. `cargo bench --features sqlite,postgres --bench durable_stores`
//! prints a Markdown table; `BATON_BENCH_OPS` sets the operations per
//! measurement (default 800).

#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres_fixture;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::durable::{AsyncHandoffLog, Claim, Epoch, HandoffLog, PostgresLog, SqliteLog};
use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{HandoffExecution, HandoffIntent, HandoffPause, Invocation};
use postgres_fixture::Cluster;

const ROOT: &str = "root";
const CONCURRENCY: [usize; 3] = [1, 8, 32];

type Pause = HandoffPause<HandoffExecution>;

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
                // (5 s) with 32 writers: the operation answers Storage,
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

async fn on_tasks<F, Fut>(workers: usize, work: F) -> Sample
where
    F: Fn(usize) -> Fut,
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

async fn postgres_baton(url: Arc<String>, op: &'static str, workers: usize, ops: usize) -> Sample {
    let tag = format!("{op}-{workers}");
    if op == "append" {
        let _schema: PostgresLog<HandoffExecution> = PostgresLog::connect_with(
            url.parse().unwrap(),
            tokio_postgres::NoTls,
            baton::durable::PostgresOptions::new().migrate(true),
        )
        .await
        .unwrap();
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .execute(
                "INSERT INTO baton_run SELECT $1, $2 || '-' || i, 1 FROM generate_series(0, $3 - 1) i",
                &[&ROOT, &tag, &(ops as i32)],
            )
            .await
            .unwrap();
    }
    on_tasks(workers, |w| {
        let (url, runs) = (Arc::clone(&url), share(&tag, w, workers, ops));
        async move {
            let log: PostgresLog<HandoffExecution> =
                PostgresLog::connect(url.parse().unwrap()).await.unwrap();
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
    })
    .await
}

async fn postgres_bare(url: Arc<String>, tag: &str, workers: usize, ops: usize) -> Sample {
    {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute("CREATE TABLE IF NOT EXISTS bare (k text PRIMARY KEY, v json NOT NULL)")
            .await
            .unwrap();
    }
    on_tasks(workers, |w| {
        let (url, runs) = (Arc::clone(&url), share(tag, w, workers, ops));
        async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let insert = client
                .prepare("INSERT INTO bare VALUES ($1, CAST($2::text AS json))")
                .await
                .unwrap();
            let mut latencies = Vec::new();
            for run in &runs {
                let json = serde_json::to_string(&pause(run)).unwrap();
                let started = Instant::now();
                client.execute(&insert, &[run, &json]).await.unwrap();
                latencies.push(started.elapsed());
            }
            latencies
        }
    })
    .await
}

fn main() {
    // `cargo bench` passes `--bench`; a filter is not supported.
    let ops: usize = std::env::var("BATON_BENCH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(800);
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
        for op in ["append", "claim"] {
            for workers in CONCURRENCY {
                let baton = postgres_baton(Arc::clone(&url), op, workers, ops).await;
                let bare =
                    postgres_bare(Arc::clone(&url), &format!("{op}-{workers}"), workers, ops).await;
                row("PostgreSQL", op, workers, &baton, &bare);
            }
        }
    });
}
