//! Retention by age (issue 43, SPEC §6.1 G5), and what G2's round-trip
//! check costs an append, for `SqliteLog` and `PostgresLog`.
//!
//! **Appends while a sweep runs.** A store holding `BATON_SWEEP_ROOTS`
//! (default 1,000,000) ended root Runs — each one Run, claimed and
//! finished an hour ago, written in bulk with SQL as the store writes them
//! (the bench first checks through the API that such a row reads back as
//! `Finished`) — is swept to the end by `retire_ended` in batches of
//! `BATON_SWEEP_BATCH` (default 200) roots, on a connection of its own,
//! while live Runs are handed off one at a time on another: per live Run a
//! claim of a fresh Run under a fresh root (untimed), then the timed
//! append of its pause. The appends' latencies while the sweep runs are
//! compared with those of `BATON_SWEEP_OPS` (default 2,000) appends before
//! the sweep and as many after it, in the same run (the goal: p99 within
//! 1.1× of the no-retention figure). Printed: p50 and p99 of each, their
//! ratios, the sweep's roots per second, and the rows and bytes left.
//! `BATON_SWEEP_PAUSE_MS` (default 0) paces the sweep while the appends are
//! measured (a pause after each batch), `BATON_SWEEP_MEASURE_SECONDS`
//! (default: the whole sweep) ends the measurement early (the sweep then
//! goes on to the end, unpaced), and `BATON_SWEEP_STORES` (`sqlite`,
//! `postgres`; default both) picks the stores.
//! SQLite: a file in the temp dir (a real disk), the log's own settings.
//! PostgreSQL: the throwaway cluster's defaults (`fsync`,
//! `synchronous_commit = on`), a pool of 8 for the sweep (which uses half)
//! and one for the live Runs.
//!
//! **The round-trip check's cost.** `encode_checked` (encode, decode,
//! compare) against `serde_json::to_string` alone, per pause of the
//! contract's payload, and the difference beside the median append
//! measured above.
//!
//! Run it with `cargo bench --features sqlite,postgres --bench
//! retention_by_age`; it prints Markdown. Without the PostgreSQL server
//! programs its rows are skipped.

mod durable_common;
#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres_fixture;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use baton::HandoffExecution;
use baton::durable::{
    AsyncHandoffLog, Claim, HandoffLog, PostgresLog, PostgresOptions, SqliteLog, Sweep,
    encode_checked,
};
use durable_common::{
    Sample, TempFile, bounded, execution, hashed, ms, pause, ratio, setting, source, thousands,
};
use postgres_fixture::Cluster;
use tokio_postgres::NoTls;

type Sqlite = SqliteLog<HandoffExecution>;
type PgLog = PostgresLog<HandoffExecution>;

/// How the sweep runs: batches of `batch` roots, `pause` between two
/// batches while the appends are measured, which stops after `measure`
/// (then the sweep goes on to the end, unpaced and unmeasured).
#[derive(Clone, Copy)]
struct Pace {
    batch: usize,
    pause: Duration,
    measure: Duration,
}

/// The append latencies of one store: before, during and after the sweep.
struct Appends {
    quiet: Vec<Duration>,
    sweeping: Vec<Duration>,
}

/// What a sweep to its end did.
#[derive(Default)]
struct Swept {
    sweep: Sweep,
    batches: usize,
    took: Duration,
    /// How long the appends were measured, and the roots retired meanwhile.
    measured: Duration,
    while_measured: usize,
}

/// The sweeper's side of the measurement: whether the appends are still
/// measured (`measuring`, set false by the appender once `measure` ran
/// out), and the sweep's end (`done`).
#[derive(Default)]
struct Flags {
    measuring: AtomicBool,
    done: AtomicBool,
}

impl Swept {
    /// Notes a batch: counts it, and the roots retired while measured.
    fn note(&mut self, batch: Sweep, flags: &Flags, started: Instant) {
        self.batches += 1;
        if flags.measuring.load(Ordering::Acquire) {
            self.while_measured += batch.retired;
            self.measured = started.elapsed();
        }
        add(&mut self.sweep, batch);
    }
}

/// A sweep's cut-off: a minute ago (the bulk roots ended an hour ago; the
/// live Runs' pauses are not finishes, so never candidates).
fn cut_off() -> SystemTime {
    SystemTime::now() - Duration::from_secs(60)
}

/// Adds a batch to the running sum.
fn add(total: &mut Sweep, batch: Sweep) {
    total.retired += batch.retired;
    total.runs += batch.runs;
    total.kept += batch.kept;
    total.next = batch.next;
}

fn print_appends(store: &str, roots: usize, pace: Pace, appends: &Appends, swept: &Swept) {
    let quiet = Sample::new(appends.quiet.clone());
    let sweeping = Sample::new(appends.sweeping.clone());
    println!();
    println!(
        "#### {store}: appends on live Runs, with and without a sweep of {} ended roots",
        thousands(roots as u64)
    );
    println!();
    println!("| appends | n | p50 ms | p99 ms |");
    println!("|---|---|---|---|");
    for (name, sample) in [
        ("no retention (before and after)", &quiet),
        ("while sweeping", &sweeping),
    ] {
        println!(
            "| {name} | {} | {} | {} |",
            sample.0.len(),
            ms(sample.median()),
            ms(sample.quantile(0.99))
        );
    }
    println!(
        "| ratio (sweeping / none) | | {:.2}× | **{:.2}×** |",
        ratio(sweeping.median(), quiet.median()),
        ratio(sweeping.quantile(0.99), quiet.quantile(0.99))
    );
    println!();
    println!(
        "Sweep: {} roots ({} Runs) retired, {} kept, in {} batches of ≤ {}, {:.1} s: {} roots/s \
         overall; while measured ({:.1} s, {} ms between batches): {} roots/s.",
        thousands(swept.sweep.retired as u64),
        thousands(swept.sweep.runs as u64),
        swept.sweep.kept,
        swept.batches,
        pace.batch,
        swept.took.as_secs_f64(),
        thousands((swept.sweep.retired as f64 / swept.took.as_secs_f64()) as u64),
        swept.measured.as_secs_f64(),
        pace.pause.as_millis(),
        thousands((swept.while_measured as f64 / swept.measured.as_secs_f64().max(1e-9)) as u64),
    );
}

// --- SQLite ---

/// `n` ended roots, one Run each, finished an hour ago, as `SqliteLog`
/// writes them, in one transaction; ids spread over the key space.
fn sqlite_bulk(file: &TempFile, n: usize) {
    let raw = rusqlite::Connection::open(&file.0).unwrap();
    let outcome = serde_json::to_string(&execution()).unwrap();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let micros = hour_ago
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64;
    let ids = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
               SELECT printf('ended-%08x', (i * 2654435761) % 4294967296) AS id, i FROM n";
    raw.execute_batch("BEGIN").unwrap();
    raw.execute(
        &format!("INSERT INTO run_epoch SELECT id, 'run', 1 FROM ({ids})"),
        rusqlite::params![n as i64],
    )
    .unwrap();
    raw.execute(
        &format!(
            "INSERT INTO run_finish (root_run_id, run_id, session_id, turn_id, invocation_id, \
             outcome, epoch, ended_at) \
             SELECT id, 'run', 'session', 'turn', 'run-invocation', ?2, 1, ?3 + i FROM ({ids})"
        ),
        rusqlite::params![n as i64, outcome, micros],
    )
    .unwrap();
    raw.execute_batch("COMMIT").unwrap();
}

/// One live Run handed off: a claim, then the timed append.
fn sqlite_append(log: &Sqlite, tag: u64, i: u64) -> Duration {
    let root = hashed(tag, i);
    let run = format!("{root}-run");
    let Claim::Owner(epoch) = log.claim(&root, &run).unwrap() else {
        panic!("{run}: a fresh Run was not owned");
    };
    let pause = pause(&root, &run, &format!("{root}-next"));
    let started = Instant::now();
    let _ = log.append(&root, &source(&run), epoch, &pause).unwrap();
    started.elapsed()
}

fn sqlite_by_age(roots: usize, ops: usize, pace: Pace) -> Duration {
    let file = TempFile::new(&std::env::temp_dir(), "by-age");
    let log: Sqlite = SqliteLog::open(&file.0).unwrap();
    sqlite_bulk(&file, roots);
    let first = "ended-9e3779b1"; // i = 1
    assert_eq!(
        log.claim(first, "run").unwrap(),
        Claim::Finished(execution()),
        "a bulk row reads back as the log's own"
    );
    let mut quiet: Vec<Duration> = (0..ops as u64).map(|i| sqlite_append(&log, 1, i)).collect();
    let flags = Arc::new(Flags::default());
    flags.measuring.store(true, Ordering::Release);
    let sweeper = std::thread::spawn({
        let (path, flags) = (file.0.clone(), Arc::clone(&flags));
        move || {
            let log: Sqlite = SqliteLog::open(&path).unwrap();
            let (started, before) = (Instant::now(), cut_off());
            let mut swept = Swept::default();
            loop {
                let next = swept.sweep.next.clone();
                let batch = log.retire_ended(before, next.as_ref(), pace.batch).unwrap();
                swept.note(batch, &flags, started);
                if swept.sweep.next.is_none() {
                    break;
                }
                if flags.measuring.load(Ordering::Acquire) {
                    std::thread::sleep(pace.pause);
                }
            }
            flags.done.store(true, Ordering::Release);
            swept.took = started.elapsed();
            swept
        }
    });
    let mut sweeping = Vec::new();
    let (started, mut i) = (Instant::now(), 0);
    while !flags.done.load(Ordering::Acquire) && started.elapsed() < pace.measure {
        sweeping.push(sqlite_append(&log, 2, i));
        i += 1;
    }
    flags.measuring.store(false, Ordering::Release);
    let swept = sweeper.join().unwrap();
    quiet.extend((0..ops as u64).map(|i| sqlite_append(&log, 3, i)));
    let appends = Appends { quiet, sweeping };
    print_appends(
        "SQLite (a file in the temp dir; WAL, synchronous = FULL)",
        roots,
        pace,
        &appends,
        &swept,
    );
    let raw = rusqlite::Connection::open(&file.0).unwrap();
    raw.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let mut left = Vec::new();
    for table in ["run_epoch", "handoff_pause", "run_finish", "retired_root"] {
        let n: i64 = raw
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                row.get(0)
            })
            .unwrap();
        left.push(format!("{table} {}", thousands(n as u64)));
    }
    println!(
        "Left: {}; {} bytes on disk (file and WAL).",
        left.join(", "),
        thousands(file.size("") + file.size("-wal"))
    );
    Sample::new(appends.quiet).median()
}

// --- PostgreSQL ---

/// `n` ended roots, one Run each, finished an hour ago, as `PostgresLog`
/// writes them (the root's row, the Run's row with its finish).
async fn pg_bulk(client: &tokio_postgres::Client, n: usize) {
    let outcome = serde_json::to_string(&execution()).unwrap();
    client
        .execute(
            "INSERT INTO baton_root (root_run_id) \
             SELECT md5(i::text) FROM generate_series(1, $1::bigint) i",
            &[&(n as i64)],
        )
        .await
        .unwrap();
    client
        .execute(
            "INSERT INTO baton_run (root_run_id, run_id, epoch, finish_session_id, \
             finish_turn_id, finish_invocation_id, outcome, ended_at) \
             SELECT md5(i::text), 'run', 1, 'session', 'turn', 'run-invocation', $2::text::json, \
                    now() - interval '1 hour' + i * interval '1 microsecond' \
             FROM generate_series(1, $1::bigint) i",
            &[&(n as i64), &outcome],
        )
        .await
        .unwrap();
    client.batch_execute("VACUUM ANALYZE").await.unwrap();
}

async fn pg_append(log: &PgLog, tag: u64, i: u64) -> Duration {
    let root = hashed(tag, i);
    let run = format!("{root}-run");
    let Claim::Owner(epoch) = log.claim_async(&root, &run).await.unwrap() else {
        panic!("{run}: a fresh Run was not owned");
    };
    let pause = pause(&root, &run, &format!("{root}-next"));
    let started = Instant::now();
    let _ = log
        .append_async(&root, &source(&run), epoch, &pause)
        .await
        .unwrap();
    started.elapsed()
}

async fn open_log(url: &str, pool: usize) -> Arc<PgLog> {
    let options = PostgresOptions::new().pool_size(pool).migrate(true);
    Arc::new(
        PostgresLog::connect_with(url.parse().unwrap(), NoTls, options)
            .await
            .unwrap(),
    )
}

async fn pg_by_age(cluster: &Cluster, roots: usize, ops: usize, pace: Pace) -> Duration {
    const LIMIT: Duration = Duration::from_secs(1800);
    let db = cluster.database().await;
    let url = cluster.url(&db);
    let (live, sweeper) = (open_log(&url, 1).await, open_log(&url, 8).await);
    let client = cluster.connect(&db).await;
    bounded("the bulk roots", LIMIT, pg_bulk(&client, roots)).await;
    let first: String = client
        .query_one("SELECT md5('1')", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        live.claim_async(&first, "run").await.unwrap(),
        Claim::Finished(execution()),
        "a bulk row reads back as the log's own"
    );
    let mut quiet = Vec::with_capacity(2 * ops);
    for i in 0..ops as u64 {
        quiet.push(pg_append(&live, 1, i).await);
    }
    let flags = Arc::new(Flags::default());
    flags.measuring.store(true, Ordering::Release);
    let sweep = tokio::spawn({
        let flags = Arc::clone(&flags);
        async move {
            let (started, before) = (Instant::now(), cut_off());
            let mut swept = Swept::default();
            loop {
                let next = swept.sweep.next.clone();
                let one = sweeper.retire_ended_async(before, next.as_ref(), pace.batch);
                swept.note(one.await.unwrap(), &flags, started);
                if swept.sweep.next.is_none() {
                    break;
                }
                if flags.measuring.load(Ordering::Acquire) {
                    tokio::time::sleep(pace.pause).await;
                }
            }
            flags.done.store(true, Ordering::Release);
            swept.took = started.elapsed();
            swept
        }
    });
    let mut sweeping = Vec::new();
    let (started, mut i) = (Instant::now(), 0);
    while !flags.done.load(Ordering::Acquire) && started.elapsed() < pace.measure {
        sweeping.push(pg_append(&live, 2, i).await);
        i += 1;
    }
    flags.measuring.store(false, Ordering::Release);
    let swept = bounded("the sweep", LIMIT, sweep).await.unwrap();
    for i in 0..ops as u64 {
        quiet.push(pg_append(&live, 3, i).await);
    }
    let appends = Appends { quiet, sweeping };
    print_appends(
        "PostgreSQL (defaults: fsync, synchronous_commit = on)",
        roots,
        pace,
        &appends,
        &swept,
    );
    client.batch_execute("VACUUM").await.unwrap();
    let mut left = Vec::new();
    for table in ["baton_run", "baton_handoff_pause", "baton_root"] {
        let row = client
            .query_one(
                &format!("SELECT count(*), pg_total_relation_size('{table}') FROM {table}"),
                &[],
            )
            .await
            .unwrap();
        let (n, bytes): (i64, i64) = (row.get(0), row.get(1));
        left.push(format!(
            "{table} {} rows, {} bytes",
            thousands(n as u64),
            thousands(bytes as u64)
        ));
    }
    println!("Left (after VACUUM): {}.", left.join("; "));
    Sample::new(appends.quiet).median()
}

// --- G2's round trip ---

/// Per pause of the contract's payload: `serde_json::to_string` alone and
/// `encode_checked`, best of five runs of 20,000 each.
fn round_trip(appends: &[(&str, Duration)]) {
    const N: u32 = 20_000;
    let pause = pause("root", "run", "next");
    let best = |f: &dyn Fn()| {
        (0..5)
            .map(|_| {
                let started = Instant::now();
                for _ in 0..N {
                    f();
                }
                started.elapsed() / N
            })
            .min()
            .unwrap()
    };
    let encode = best(&|| {
        std::hint::black_box(serde_json::to_string(std::hint::black_box(&pause)).unwrap());
    });
    let checked = best(&|| {
        std::hint::black_box(encode_checked(std::hint::black_box(&pause)).unwrap());
    });
    let extra = checked.saturating_sub(encode);
    println!();
    println!("#### G2: the round-trip check's cost per pause");
    println!();
    println!(
        "`serde_json::to_string` {:.1} µs; `encode_checked` {:.1} µs: {:.1} µs more.",
        encode.as_secs_f64() * 1e6,
        checked.as_secs_f64() * 1e6,
        extra.as_secs_f64() * 1e6
    );
    for (store, append) in appends {
        println!(
            "- {store}: {:.2}% of the median append ({} ms).",
            100.0 * extra.as_secs_f64() / append.as_secs_f64(),
            ms(*append)
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter is not supported.
    let roots = setting("BATON_SWEEP_ROOTS", 1_000_000).max(1);
    let ops = setting("BATON_SWEEP_OPS", 2000).max(1);
    let pace = Pace {
        batch: setting("BATON_SWEEP_BATCH", 200).max(1),
        pause: Duration::from_millis(setting("BATON_SWEEP_PAUSE_MS", 0) as u64),
        measure: Duration::from_secs(setting("BATON_SWEEP_MEASURE_SECONDS", 86_400) as u64),
    };
    let stores = std::env::var("BATON_SWEEP_STORES").unwrap_or_else(|_| "both".into());
    println!("## Retention by age: appends while a sweep runs");
    let mut appends = Vec::new();
    if stores != "postgres" {
        appends.push(("SQLite", sqlite_by_age(roots, ops, pace)));
    }
    let cluster = if stores == "sqlite" {
        None
    } else {
        Cluster::start()
    };
    match &cluster {
        Some(cluster) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            appends.push((
                "PostgreSQL",
                runtime.block_on(pg_by_age(cluster, roots, ops, pace)),
            ));
        }
        None => println!("\n(PostgreSQL skipped: not asked for, or no server programs found)"),
    }
    round_trip(&appends);
}
