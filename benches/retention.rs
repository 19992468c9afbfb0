//! Retention (issue 35): storage stays bounded, and a claim and an append
//! do not grow with the retired history, for `SqliteLog` and `PostgresLog`.
//!
//! **Bounded storage.** `BATON_RETENTION_RUNS` (default 100,000) final
//! Runs, written through baton's API: root Runs each a chain of 4 Runs,
//! three handed off and the last finished (per Run a claim, then its
//! pause's append naming the next Run of the chain as successor, claimed
//! next under the same root; the last Run a claim, then a finish with an
//! outcome the size of the execution), so `RUNS / 4` roots; plus
//! `BATON_RETENTION_OPEN` (default 1,000) Runs still open (claimed, no
//! fate), each under a root of its own: the live Runs. Then every final
//! root is retired (`retire`, each answering `Retired { runs: 4 }`). The
//! rows of each table and the bytes on disk, before and after retention,
//! in total and per live Run. SQLite: one log (one thread) on a file in
//! `/dev/shm` (a storage measurement: tmpfs makes its syncs free), bytes
//! as the file plus its WAL after `PRAGMA wal_checkpoint(TRUNCATE)`, then
//! `page_count × page_size` after `VACUUM`. PostgreSQL: one log, a pool of
//! 16, 32 concurrent tasks (each a root at a time), the throwaway
//! cluster's defaults; bytes as `pg_total_relation_size` (heap, TOAST,
//! indexes, free-space and visibility maps) of the four baton tables
//! summed, after a plain `VACUUM` (which does not shrink files) and after
//! `VACUUM FULL` (which rewrites them).
//!
//! **No growth with history.** Latency of a claim of a fresh Run (under a
//! fresh root, as a new conversation) and of its pause's append, one Run
//! at a time, on a store holding `BATON_RETENTION_HISTORY` (default
//! 1,000,000) retired Runs against one holding 1,000, in the same run,
//! in `BATON_RETENTION_ROUNDS` (default 30) alternating rounds (1k then
//! 1M in the first, 1M then 1k in the second, and so on, so neither
//! store always goes first) of `BATON_RETENTION_OPS` (default 100) Runs
//! each (3,000 Runs per history; short rounds, so a change of the disk's
//! flush speed on a shared machine falls on both stores alike), after
//! an untimed warm-up of 50 Runs on each. Retirement leaves one
//! tombstone per root and nothing else, so 1,000,000 retired Runs leave at
//! most 1,000,000 tombstones (one Run per root; fewer for longer chains):
//! the history is written as that many tombstones, in bulk with SQL, after
//! three roots (chains of 4) were retired through the API in the same
//! store, and the bench checks first that the API's retirements left
//! exactly that: no row in any other table, and a tombstone whose every
//! column but the root's id equals a bulk one's. Root ids are 32 hex
//! digits of a hash (as UUIDs), so neither the history nor the measured
//! Runs are written in key order. SQLite: a file in the temp dir (a real
//! disk) with the log's own settings (WAL, `synchronous = FULL`);
//! PostgreSQL: the throwaway cluster's defaults (`fsync`,
//! `synchronous_commit = on`), one database per history, each `VACUUM
//! ANALYZE`d after its bulk write. Printed: every round's medians and
//! ratio, then the median and p99 of all rounds' samples, the ratio of
//! those medians (1M / 1k; the target is ≤ 1.1) and the median of the
//! rounds' ratios (robust to the disk's flush changing speed between
//! rounds, which moves both stores' medians of a round together).
//!
//! Run it with `cargo bench --features sqlite,postgres --bench retention`;
//! it prints Markdown. Without the PostgreSQL server programs its rows are
//! skipped. Every wait of PostgreSQL is bounded (a phase past its limit
//! panics); SQLite's waits are the log's busy timeout.
//!
//! The SQLite half is `retention/sqlite.rs`, the PostgreSQL half
//! `retention/postgres.rs`; this file holds what they share and the order
//! they run in.

mod durable_common;
#[path = "retention/postgres.rs"]
mod postgres;
#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres_fixture;
#[path = "retention/sqlite.rs"]
mod sqlite;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::HandoffExecution;
use baton::durable::{
    AsyncHandoffLog, Claim, HandoffLog, PostgresLog, PostgresOptions, Retirement, SqliteLog,
};
use durable_common::{
    Sample, TempFile, bounded, execution, hashed, ms, pause, ratio, setting, source, thousands,
};
use postgres_fixture::Cluster;
use tokio_postgres::NoTls;

type PgLog = PostgresLog<HandoffExecution>;

/// Runs per root in the storage workload: three handoffs, then a finish.
const CHAIN: usize = 4;
/// Roots retired through the API in each history store, to check the bulk
/// tombstones against.
const API_ROOTS: usize = 3;
/// Untimed Runs on each history store before the rounds.
const WARM_UP: usize = 50;
/// The PostgreSQL storage workload's pool and concurrent tasks.
const PG_POOL: usize = 16;
const PG_TASKS: usize = 32;

/// The `k`-th Run of a chain under `root`.
fn hop(root: &str, k: usize) -> String {
    format!("{root}-h{k}")
}

fn per_live(n: u64, live: usize) -> String {
    format!("{:.1}", n as f64 / live as f64)
}

/// One round of one history: each Run's claim, append and both.
#[derive(Default)]
struct Latencies {
    claim: Vec<Duration>,
    append: Vec<Duration>,
    run: Vec<Duration>,
}

impl Latencies {
    fn push(&mut self, claim: Duration, append: Duration) {
        self.claim.push(claim);
        self.append.push(append);
        self.run.push(claim + append);
    }
    fn extend(&mut self, other: &Latencies) {
        self.claim.extend(&other.claim);
        self.append.extend(&other.append);
        self.run.extend(&other.run);
    }
    fn samples(&self) -> [(&'static str, Sample); 3] {
        [
            ("claim", Sample::new(self.claim.clone())),
            ("append", Sample::new(self.append.clone())),
            ("claim + append", Sample::new(self.run.clone())),
        ]
    }
}

/// Prints the rounds and the pooled figures of the history measurement.
fn print_history(store: &str, history: usize, rounds: &[(Latencies, Latencies)]) {
    let big = thousands(history as u64);
    println!();
    println!("#### {store}: every round (medians, ms; 1k = 1,000 retired, 1M = {big} retired)");
    println!();
    println!(
        "| round | order | claim: 1k / 1M | ratio | append: 1k / 1M | ratio | claim + append: \
         1k / 1M | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let (mut small_all, mut big_all) = (Latencies::default(), Latencies::default());
    let mut round_ratios: [Vec<f64>; 3] = Default::default();
    for (round, (small, large)) in rounds.iter().enumerate() {
        small_all.extend(small);
        big_all.extend(large);
        let order = if round % 2 == 0 { "1k, 1M" } else { "1M, 1k" };
        let mut cells = Vec::new();
        for (k, ((_, s), (_, b))) in small.samples().into_iter().zip(large.samples()).enumerate() {
            let r = ratio(b.median(), s.median());
            round_ratios[k].push(r);
            cells.push(format!("{} / {} | {r:.3}", ms(s.median()), ms(b.median())));
        }
        println!("| {} | {order} | {} |", round + 1, cells.join(" | "));
    }
    println!();
    println!(
        "#### {store}: all rounds ({} Runs per history)",
        thousands(small_all.claim.len() as u64)
    );
    println!();
    println!(
        "| operation | 1,000 retired: median / p99 (ms) | {big} retired: median / p99 (ms) | \
         ratio of the medians | median of the rounds' ratios |"
    );
    println!("|---|---|---|---|---|");
    for (k, ((op, s), (_, b))) in small_all
        .samples()
        .into_iter()
        .zip(big_all.samples())
        .enumerate()
    {
        let ratios = &mut round_ratios[k];
        ratios.sort_by(f64::total_cmp);
        println!(
            "| {op} | {} / {} | {} / {} | **{:.3}** | {:.3} |",
            ms(s.median()),
            ms(s.quantile(0.99)),
            ms(b.median()),
            ms(b.quantile(0.99)),
            ratio(b.median(), s.median()),
            ratios[ratios.len() / 2]
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter is not supported.
    let runs = setting("BATON_RETENTION_RUNS", 100_000);
    let open = setting("BATON_RETENTION_OPEN", 1000).max(1);
    let history = setting("BATON_RETENTION_HISTORY", 1_000_000).max(1000);
    let ops = setting("BATON_RETENTION_OPS", 100).max(1);
    let rounds = setting("BATON_RETENTION_ROUNDS", 30).max(1);
    println!("## Retention: bounded storage");
    sqlite::sqlite_storage(runs, open);
    let cluster = Cluster::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    match &cluster {
        Some(cluster) => runtime.block_on(postgres::pg_storage(cluster, runs, open)),
        None => println!("\n(PostgreSQL skipped: no server programs)"),
    }
    println!();
    println!(
        "## Retention: no growth with history ({} retired Runs against 1,000; {rounds} \
         alternating rounds of {ops} Runs; the history written in bulk as the tombstones \
         retire leaves, checked against 3 roots retired through the API)",
        thousands(history as u64)
    );
    sqlite::sqlite_growth(history, ops, rounds);
    match &cluster {
        Some(cluster) => runtime.block_on(postgres::pg_growth(cluster, history, ops, rounds)),
        None => println!("\n(PostgreSQL skipped: no server programs)"),
    }
}
