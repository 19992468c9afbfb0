//! The durable stores' `append`, `claim` and handoff unit against the
//! bare store doing the same durable writes (issues 23 and 47), in two
//! sections.
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
//! of the median ratio, and every round's ratio is printed under it.
//! Appends go to Runs claimed beforehand (in bulk, untimed); claims are
//! each Run's first. The handoff unit is a Run's life across one handoff,
//! four transactions: its first claim, its pause's append, its
//! successor's first claim and the successor's finish; its bare limit is
//! four such `INSERT`s and `COMMIT`s in a row.
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
//! table (default 800), `BATON_BENCH_RUNS` the fleet's N (default 1000),
//! `BATON_BENCH_GROUP` the PostgreSQL logs' group commit slots (default:
//! the library's; 0 turns it off) in the table and the fleet;
//! `BATON_BENCH_SECTIONS` (`sqlite,postgres,fleet,synchronous,citus`) and
//! `BATON_BENCH_OPERATIONS` (`append,claim,handoff`) pick what runs
//! (default: all); `BATON_BENCH_ROOT_EACH=1` runs each PostgreSQL handoff
//! unit under a root Run of its own (default: all under one).
//!
//! The table's cells are in `durable_stores/sqlite.rs` and
//! `durable_stores/postgres.rs`, the fleet section in
//! `durable_stores/fleet.rs`, the price of a synchronous standby in
//! `durable_stores/synchronous.rs`, the price of Citus in
//! `durable_stores/citus.rs`; this file holds what they share and the
//! order they run in.

mod durable_common;
/// The tests' fixtures: the throwaway PostgreSQL cluster and the Citus
/// cluster of three of them.
#[path = "../tests/common"]
#[allow(dead_code)]
mod common {
    pub mod citus;
    pub mod postgres;
}

#[path = "durable_stores/citus.rs"]
mod citus;
#[path = "durable_stores/fleet.rs"]
mod fleet;
#[path = "durable_stores/postgres.rs"]
mod postgres;
#[path = "durable_stores/sqlite.rs"]
mod sqlite;
#[path = "durable_stores/synchronous.rs"]
mod synchronous;

use std::sync::Arc;
use std::time::Duration;

use baton::HandoffExecution;
use baton::durable::PostgresLog;
use common::postgres::Cluster;
use durable_common::{Pause, TempFile, setting, source};

const ROOT: &str = "root";
const CONCURRENCY: [usize; 3] = [1, 8, 32];

/// The table's operations: an append to a claimed Run, a Run's first
/// claim, and the handoff unit (four transactions: a Run's first claim,
/// its pause's append, its successor's first claim and finish).
const OPERATIONS: [&str; 3] = ["append", "claim", "handoff"];

/// The transactions of one unit of `op`: the bare side's per unit.
fn writes(op: &str) -> usize {
    if op == "handoff" { 4 } else { 1 }
}

type Log = PostgresLog<HandoffExecution>;

/// The pause that hands `run` (of [`ROOT`]) off to `{run}-next`.
fn pause(run: &str) -> Pause {
    durable_common::pause(ROOT, run, &format!("{run}-next"))
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

fn main() {
    // `cargo bench` passes `--bench`; a filter is not supported.
    let (ops, runs, rounds) = (
        setting("BATON_BENCH_OPS", 800),
        setting("BATON_BENCH_RUNS", 1000),
        setting("BATON_BENCH_ROUNDS", 3).max(1),
    );
    // The sections to run (default all): `sqlite`, `postgres`, `fleet`,
    // and the table's operations (default all of OPERATIONS).
    let chosen = |name: &str, all: &[&'static str]| -> Vec<&'static str> {
        let asked = std::env::var(name).unwrap_or_default();
        all.iter()
            .copied()
            .filter(|item| asked.is_empty() || asked.split(',').any(|a| a == *item))
            .collect()
    };
    let sections = chosen(
        "BATON_BENCH_SECTIONS",
        &["sqlite", "postgres", "fleet", "synchronous", "citus"],
    );
    let operations = chosen("BATON_BENCH_OPERATIONS", &OPERATIONS);
    println!(
        "PostgreSQL logs' group commit (`BATON_BENCH_GROUP`): {}.\n",
        fleet::group_commit()
    );
    println!(
        "| store | operation | workers | baton median / p99 (ms) | bare median / p99 (ms) | \
         ratio (medians) | baton ops/s | bare ops/s |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let dir = std::env::temp_dir();
    let (log_file, bare_file) = (TempFile::new(&dir, "log"), TempFile::new(&dir, "bare"));
    for &op in operations.iter().filter(|_| sections.contains(&"sqlite")) {
        for workers in CONCURRENCY {
            let baton = sqlite::baton(&log_file.0, op, workers, ops);
            let tag = format!("{op}-{workers}");
            let bare = sqlite::bare(&bare_file.0, &tag, writes(op), workers, ops);
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
        for &op in operations.iter().filter(|_| sections.contains(&"postgres")) {
            for workers in CONCURRENCY {
                let mut cells = Vec::new();
                for round in 0..rounds {
                    let baton = postgres::baton(Arc::clone(&url), op, workers, ops, round).await;
                    let tag = format!("{op}-{workers}-r{round}");
                    let bare =
                        postgres::bare(Arc::clone(&url), &tag, writes(op), workers, ops).await;
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
        if sections.contains(&"fleet") {
            fleet::fleet_host(&cluster, runs, rounds).await;
        }
        if sections.contains(&"synchronous") {
            synchronous::price(&cluster, &operations, ops, rounds).await;
        }
        if sections.contains(&"citus") {
            citus::price(&cluster, &operations, ops, rounds).await;
        }
    });
}
