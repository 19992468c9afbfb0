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
//! Kept whole, past 600 lines: one criterion binary — its fixture, its
//! measured loops and the table it prints, which benches/README.md
//! quotes section by section.

mod durable_common;
#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres_fixture;

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

// --- SQLite ---

type Sqlite = SqliteLog<HandoffExecution>;

/// One chain under `root` through the API: 3 handoffs, then a finish.
fn sqlite_chain(log: &Sqlite, root: &str) {
    for k in 0..CHAIN {
        let run = hop(root, k);
        let Claim::Owner(epoch) = log.claim(root, &run).unwrap() else {
            panic!("{run}: a fresh Run was not owned");
        };
        if k + 1 < CHAIN {
            let _ = log
                .append(
                    root,
                    &source(&run),
                    epoch,
                    &pause(root, &run, &hop(root, k + 1)),
                )
                .unwrap();
        } else {
            let _ = log
                .finish(root, &source(&run), epoch, &execution())
                .unwrap();
        }
    }
}

const SQLITE_TABLES: [&str; 4] = ["run_epoch", "handoff_pause", "run_finish", "retired_root"];

fn sqlite_count(raw: &rusqlite::Connection, table: &str) -> u64 {
    let n: i64 = raw
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
            row.get(0)
        })
        .unwrap();
    n as u64
}

fn sqlite_pragma(raw: &rusqlite::Connection, name: &str) -> u64 {
    let n: i64 = raw
        .pragma_query_value(None, name, |row| row.get(0))
        .unwrap();
    n as u64
}

/// One row of the SQLite storage table: the rows per table, and the bytes.
fn sqlite_stage(file: &TempFile, stage: &str, vacuum: bool, live: usize) {
    let raw = rusqlite::Connection::open(&file.0).unwrap();
    raw.busy_timeout(Duration::from_secs(30)).unwrap();
    if vacuum {
        raw.execute_batch("VACUUM").unwrap();
    }
    raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
        assert_eq!(row.get::<_, i64>(0)?, 0, "the checkpoint was blocked");
        Ok(())
    })
    .unwrap();
    let counts: Vec<u64> = SQLITE_TABLES
        .iter()
        .map(|t| sqlite_count(&raw, t))
        .collect();
    let total: u64 = counts.iter().sum();
    let page = sqlite_pragma(&raw, "page_size");
    let pages = sqlite_pragma(&raw, "page_count") * page;
    let free = sqlite_pragma(&raw, "freelist_count") * page;
    let on_disk = file.size("") + file.size("-wal");
    // Each table's pages (its B-tree and overflow pages) by `dbstat`.
    let by_table = SQLITE_TABLES
        .iter()
        .map(|t| {
            raw.query_row(
                "SELECT coalesce(sum(pgsize), 0), \
                        coalesce(sum(pagetype = 'overflow'), 0) FROM dbstat WHERE name = ?1",
                [t],
                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)),
            )
            .map(|(bytes, overflow)| {
                if overflow > 0 {
                    format!(
                        "{} ({} overflow pages)",
                        thousands(bytes as u64),
                        thousands(overflow as u64)
                    )
                } else {
                    thousands(bytes as u64)
                }
            })
            .unwrap_or_else(|_| "(no dbstat)".to_owned())
        })
        .collect::<Vec<_>>()
        .join(" / ");
    println!(
        "| {stage} | {} | {} | {} | {} | {} | {} | {} ({} free) | {} | {} | {by_table} |",
        thousands(counts[0]),
        thousands(counts[1]),
        thousands(counts[2]),
        thousands(counts[3]),
        thousands(total),
        per_live(total, live),
        thousands(on_disk),
        thousands(free),
        thousands(pages),
        per_live(on_disk, live),
    );
}

fn sqlite_storage(runs: usize, open: usize) {
    let roots = runs / CHAIN;
    let file = TempFile::new(Path::new("/dev/shm"), "storage");
    let log: Sqlite = SqliteLog::open(&file.0).unwrap();
    let started = Instant::now();
    for i in 0..roots {
        sqlite_chain(&log, &format!("final-{}", hashed(1, i as u64)));
    }
    for j in 0..open {
        let root = format!("open-{}", hashed(2, j as u64));
        assert!(matches!(
            log.claim(&root, &hop(&root, 0)).unwrap(),
            Claim::Owner(_)
        ));
    }
    let written = started.elapsed();
    println!();
    println!(
        "### SQLite (file in /dev/shm): {} final Runs ({} roots × {CHAIN}: 3 handoffs, a \
         finish) and {open} open Runs",
        thousands((roots * CHAIN) as u64),
        thousands(roots as u64)
    );
    println!();
    println!(
        "| stage | run_epoch | handoff_pause | run_finish | retired_root | rows total | rows / \
         live Run | bytes: file + wal, checkpointed | bytes: page_count × page_size | bytes / \
         live Run (file + wal) | bytes by table (dbstat: run_epoch / handoff_pause / run_finish / \
         retired_root) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    sqlite_stage(&file, "before retention", false, open);
    sqlite_stage(&file, "before retention, after VACUUM", true, open);
    let sizes: (f64, f64) = rusqlite::Connection::open(&file.0)
        .unwrap()
        .query_row(
            "SELECT (SELECT avg(length(pause)) FROM handoff_pause), \
                    (SELECT avg(length(outcome)) FROM run_finish)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    let started = Instant::now();
    for i in 0..roots {
        let root = format!("final-{}", hashed(1, i as u64));
        assert_eq!(
            log.retire(&root).unwrap(),
            Retirement::Retired { runs: CHAIN }
        );
    }
    let retired = started.elapsed();
    sqlite_stage(&file, "after retention", false, open);
    sqlite_stage(&file, "after retention, after VACUUM", true, open);
    println!();
    println!(
        "Written through the API in {:.1} s ({} claims, {} appends, {} finishes); {} \
         retirements in {:.1} s. A pause's JSON is {:.0} bytes, an outcome's {:.0} (averages).",
        written.as_secs_f64(),
        thousands((roots * CHAIN + open) as u64),
        thousands((roots * (CHAIN - 1)) as u64),
        thousands(roots as u64),
        thousands(roots as u64),
        retired.as_secs_f64(),
        sizes.0,
        sizes.1
    );
    drop(log);
}

/// A store holding `history` tombstones: `API_ROOTS` roots retired through
/// the API, checked, then the rest in bulk.
fn sqlite_history(dir: &Path, history: usize) -> (TempFile, Sqlite) {
    let file = TempFile::new(dir, &format!("history-{history}"));
    let log: Sqlite = SqliteLog::open(&file.0).unwrap();
    let api: Vec<String> = (0..API_ROOTS)
        .map(|i| format!("api-{}", hashed(3, i as u64)))
        .collect();
    for root in &api {
        sqlite_chain(&log, root);
        assert_eq!(
            log.retire(root).unwrap(),
            Retirement::Retired { runs: CHAIN }
        );
    }
    let mut raw = rusqlite::Connection::open(&file.0).unwrap();
    raw.busy_timeout(Duration::from_secs(30)).unwrap();
    // What the API's retirements left: the tombstones, nothing else.
    let tables: Vec<String> = raw
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut known: Vec<&str> = SQLITE_TABLES.to_vec();
    known.sort();
    assert_eq!(tables, known, "the log's tables");
    for table in SQLITE_TABLES {
        let want = if table == "retired_root" {
            API_ROOTS
        } else {
            0
        };
        assert_eq!(
            sqlite_count(&raw, table),
            want as u64,
            "{table} after retire"
        );
    }
    let tx = raw.transaction().unwrap();
    {
        let mut insert = tx
            .prepare("INSERT INTO retired_root (root_run_id) VALUES (?1)")
            .unwrap();
        for i in API_ROOTS..history {
            insert.execute([hashed(4, i as u64)]).unwrap();
        }
    }
    tx.commit().unwrap();
    // Every column but the key of an API tombstone equals a bulk one's.
    let row_of = |root: &str| -> Vec<rusqlite::types::Value> {
        raw.query_row(
            "SELECT * FROM retired_root WHERE root_run_id = ?1",
            [root],
            |row| {
                (0..row.as_ref().column_count())
                    .map(|i| row.get(i))
                    .collect::<Result<Vec<_>, _>>()
            },
        )
        .unwrap()
    };
    let (by_api, bulk) = (row_of(&api[0]), row_of(&hashed(4, API_ROOTS as u64)));
    assert_eq!(by_api.len(), bulk.len());
    assert_eq!(by_api[1..], bulk[1..], "a bulk tombstone is not the API's");
    assert_eq!(sqlite_count(&raw, "retired_root"), history as u64);
    raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    (file, log)
}

/// `n` Runs, one at a time: a claim of a fresh Run under a fresh root,
/// then its pause's append.
fn sqlite_runs(log: &Sqlite, tag: u64, n: usize) -> Latencies {
    let mut out = Latencies::default();
    for i in 0..n {
        let root = hashed(tag, i as u64);
        let run = format!("{root}-run");
        let (source, pause) = (source(&run), pause(&root, &run, &format!("{root}-next")));
        let started = Instant::now();
        let Claim::Owner(epoch) = log.claim(&root, &run).unwrap() else {
            panic!("{run}: a fresh Run was not owned");
        };
        let claimed = Instant::now();
        let _ = log.append(&root, &source, epoch, &pause).unwrap();
        out.push(claimed - started, claimed.elapsed());
    }
    out
}

fn sqlite_growth(history: usize, ops: usize, rounds: usize) {
    let dir = std::env::temp_dir();
    let (_small_file, small) = sqlite_history(&dir, 1000);
    let (_big_file, big) = sqlite_history(&dir, history);
    sqlite_runs(&small, 100, WARM_UP);
    sqlite_runs(&big, 100, WARM_UP);
    let mut all = Vec::new();
    for round in 0..rounds as u64 {
        // 1k, 1M, then 1M, 1k: neither goes first every time.
        let (s, b) = if round % 2 == 0 {
            let s = sqlite_runs(&small, 200 + round, ops);
            (s, sqlite_runs(&big, 200 + round, ops))
        } else {
            let b = sqlite_runs(&big, 200 + round, ops);
            (sqlite_runs(&small, 200 + round, ops), b)
        };
        all.push((s, b));
    }
    print_history(
        &format!(
            "SQLite (file in {}, WAL, synchronous = FULL)",
            dir.display()
        ),
        history,
        &all,
    );
}

// --- PostgreSQL ---

const PG_TABLES: [&str; 4] = [
    "baton_run",
    "baton_handoff_pause",
    "baton_root",
    "baton_schema",
];

async fn open_log(url: &str, pool: usize) -> Arc<PgLog> {
    Arc::new(
        PostgresLog::connect_with(
            url.parse().unwrap(),
            NoTls,
            PostgresOptions::new().pool_size(pool).migrate(true),
        )
        .await
        .unwrap(),
    )
}

async fn pg_chain(log: &PgLog, root: &str) {
    for k in 0..CHAIN {
        let run = hop(root, k);
        let Claim::Owner(epoch) = log.claim_async(root, &run).await.unwrap() else {
            panic!("{run}: a fresh Run was not owned");
        };
        if k + 1 < CHAIN {
            let pause = pause(root, &run, &hop(root, k + 1));
            let _ = log
                .append_async(root, &source(&run), epoch, &pause)
                .await
                .unwrap();
        } else {
            let _ = log
                .finish_async(root, &source(&run), epoch, &execution())
                .await
                .unwrap();
        }
    }
}

/// `work(i)` for `i` in `0..n`, on `PG_TASKS` tasks (each an `i` at a time).
async fn on_tasks<F, Fut>(n: usize, work: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let work = Arc::new(work);
    let tasks: Vec<_> = (0..PG_TASKS)
        .map(|t| {
            let work = Arc::clone(&work);
            tokio::spawn(async move {
                for i in (t..n).step_by(PG_TASKS) {
                    work(i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

async fn pg_stage(client: &tokio_postgres::Client, stage: &str, vacuum: &str, live: usize) {
    client
        .batch_execute(&format!("{vacuum} {}", PG_TABLES.join(", ")))
        .await
        .unwrap();
    let mut counts = Vec::new();
    let mut bytes = 0_u64;
    let mut by_table = Vec::new();
    for table in PG_TABLES {
        let row = client
            .query_one(
                &format!("SELECT count(*), pg_total_relation_size('{table}') FROM {table}"),
                &[],
            )
            .await
            .unwrap();
        counts.push(row.get::<_, i64>(0) as u64);
        bytes += row.get::<_, i64>(1) as u64;
        by_table.push(thousands(row.get::<_, i64>(1) as u64));
    }
    let retired: i64 = client
        .query_one("SELECT count(*) FROM baton_root WHERE retired", &[])
        .await
        .unwrap()
        .get(0);
    let total: u64 = counts.iter().sum();
    println!(
        "| {stage} | {vacuum} | {} | {} | {} ({} retired) | {} | {} | {} | {} | {} | {} |",
        thousands(counts[0]),
        thousands(counts[1]),
        thousands(counts[2]),
        thousands(retired as u64),
        thousands(counts[3]),
        thousands(total),
        per_live(total, live),
        thousands(bytes),
        per_live(bytes, live),
        by_table.join(" / "),
    );
}

async fn pg_storage(cluster: &Cluster, runs: usize, open: usize) {
    const LIMIT: Duration = Duration::from_secs(3600);
    let roots = runs / CHAIN;
    let db = cluster.database().await;
    let log = open_log(&cluster.url(&db), PG_POOL).await;
    let client = cluster.connect(&db).await;
    let started = Instant::now();
    bounded("the storage workload", LIMIT, {
        let log = Arc::clone(&log);
        on_tasks(roots, move |i| {
            let log = Arc::clone(&log);
            async move { pg_chain(&log, &format!("final-{}", hashed(1, i as u64))).await }
        })
    })
    .await;
    bounded("the open Runs", LIMIT, {
        let log = Arc::clone(&log);
        on_tasks(open, move |j| {
            let log = Arc::clone(&log);
            async move {
                let root = format!("open-{}", hashed(2, j as u64));
                assert!(matches!(
                    log.claim_async(&root, &hop(&root, 0)).await.unwrap(),
                    Claim::Owner(_)
                ));
            }
        })
    })
    .await;
    let written = started.elapsed();
    println!();
    println!(
        "### PostgreSQL: {} final Runs ({} roots × {CHAIN}: 3 handoffs, a finish) and {open} \
         open Runs",
        thousands((roots * CHAIN) as u64),
        thousands(roots as u64)
    );
    println!();
    println!(
        "| stage | after | baton_run | baton_handoff_pause | baton_root | baton_schema | rows \
         total | rows / live Run | bytes (pg_total_relation_size, summed) | bytes / live Run | \
         bytes by table (run / pause / root / schema) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    pg_stage(&client, "before retention", "VACUUM", open).await;
    pg_stage(&client, "before retention", "VACUUM FULL", open).await;
    let started = Instant::now();
    bounded("the retirements", LIMIT, {
        let log = Arc::clone(&log);
        on_tasks(roots, move |i| {
            let log = Arc::clone(&log);
            async move {
                let root = format!("final-{}", hashed(1, i as u64));
                assert_eq!(
                    log.retire_async(&root).await.unwrap(),
                    Retirement::Retired { runs: CHAIN }
                );
            }
        })
    })
    .await;
    let retired = started.elapsed();
    pg_stage(&client, "after retention", "VACUUM", open).await;
    pg_stage(&client, "after retention", "VACUUM FULL", open).await;
    println!();
    println!(
        "Written through the API in {:.1} s ({} claims, {} appends, {} finishes; {PG_TASKS} \
         tasks, a pool of {PG_POOL}); {} retirements in {:.1} s.",
        written.as_secs_f64(),
        thousands((roots * CHAIN + open) as u64),
        thousands((roots * (CHAIN - 1)) as u64),
        thousands(roots as u64),
        thousands(roots as u64),
        retired.as_secs_f64()
    );
}

/// A database holding `history` tombstones: `API_ROOTS` roots retired
/// through the API, checked, then the rest in bulk.
async fn pg_history(cluster: &Cluster, history: usize) -> Arc<PgLog> {
    const LIMIT: Duration = Duration::from_secs(600);
    let db = cluster.database().await;
    let log = open_log(&cluster.url(&db), 4).await;
    let client = cluster.connect(&db).await;
    let api: Vec<String> = (0..API_ROOTS)
        .map(|i| format!("api-{}", hashed(3, i as u64)))
        .collect();
    bounded("the API's retirements", LIMIT, async {
        for root in &api {
            pg_chain(&log, root).await;
            assert_eq!(
                log.retire_async(root).await.unwrap(),
                Retirement::Retired { runs: CHAIN }
            );
        }
    })
    .await;
    // What the API's retirements left: the tombstones, nothing else.
    let tables: Vec<String> = client
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() \
             ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let mut known: Vec<&str> = PG_TABLES.to_vec();
    known.sort();
    assert_eq!(tables, known, "the log's tables");
    for table in ["baton_run", "baton_handoff_pause", "baton_root"] {
        let n: i64 = client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .unwrap()
            .get(0);
        let want = if table == "baton_root" { API_ROOTS } else { 0 };
        assert_eq!(n, want as i64, "{table} after retire");
    }
    // md5 of (i, history): 32 hex digits, as the API roots' hashed ids.
    bounded(
        "the bulk history",
        LIMIT,
        client.execute(
            "INSERT INTO baton_root (root_run_id, retired) \
             SELECT md5(i::text || '-' || $2::text), true \
             FROM generate_series(1, $1::bigint) i",
            &[&((history - API_ROOTS) as i64), &history.to_string()],
        ),
    )
    .await
    .unwrap();
    // Every column but the key of an API tombstone equals a bulk one's.
    let columns = |root: String| {
        let client = &client;
        async move {
            client
                .query_one(
                    "SELECT (to_jsonb(r) - 'root_run_id')::text FROM baton_root r \
                     WHERE root_run_id = $1",
                    &[&root],
                )
                .await
                .unwrap()
                .get::<_, String>(0)
        }
    };
    let bulk: String = client
        .query_one(
            "SELECT md5('1-' || $1::text)",
            &[&(history as i64).to_string()],
        )
        .await
        .unwrap()
        .get(0);
    let (by_api, by_bulk) = (columns(api[0].clone()).await, columns(bulk).await);
    assert_eq!(by_api, by_bulk, "a bulk tombstone is not the API's");
    let n: i64 = client
        .query_one("SELECT count(*) FROM baton_root WHERE retired", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, history as i64);
    bounded(
        "VACUUM ANALYZE",
        LIMIT,
        client.batch_execute("VACUUM ANALYZE"),
    )
    .await
    .unwrap();
    log
}

async fn pg_runs(log: &PgLog, tag: u64, n: usize) -> Latencies {
    let mut out = Latencies::default();
    for i in 0..n {
        let root = hashed(tag, i as u64);
        let run = format!("{root}-run");
        let (source, pause) = (source(&run), pause(&root, &run, &format!("{root}-next")));
        let started = Instant::now();
        let Claim::Owner(epoch) = log.claim_async(&root, &run).await.unwrap() else {
            panic!("{run}: a fresh Run was not owned");
        };
        let claimed = Instant::now();
        let _ = log
            .append_async(&root, &source, epoch, &pause)
            .await
            .unwrap();
        out.push(claimed - started, claimed.elapsed());
    }
    out
}

async fn pg_growth(cluster: &Cluster, history: usize, ops: usize, rounds: usize) {
    const LIMIT: Duration = Duration::from_secs(600);
    let small = pg_history(cluster, 1000).await;
    let big = pg_history(cluster, history).await;
    bounded("the warm-up", LIMIT, async {
        pg_runs(&small, 100, WARM_UP).await;
        pg_runs(&big, 100, WARM_UP).await;
    })
    .await;
    let mut all = Vec::new();
    for round in 0..rounds as u64 {
        // 1k, 1M, then 1M, 1k: neither goes first every time.
        let (s, b) = if round % 2 == 0 {
            let s = bounded("a round", LIMIT, pg_runs(&small, 200 + round, ops)).await;
            (
                s,
                bounded("a round", LIMIT, pg_runs(&big, 200 + round, ops)).await,
            )
        } else {
            let b = bounded("a round", LIMIT, pg_runs(&big, 200 + round, ops)).await;
            (
                bounded("a round", LIMIT, pg_runs(&small, 200 + round, ops)).await,
                b,
            )
        };
        all.push((s, b));
    }
    print_history(
        "PostgreSQL (defaults: fsync, synchronous_commit = on)",
        history,
        &all,
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter is not supported.
    let runs = setting("BATON_RETENTION_RUNS", 100_000);
    let open = setting("BATON_RETENTION_OPEN", 1000).max(1);
    let history = setting("BATON_RETENTION_HISTORY", 1_000_000).max(1000);
    let ops = setting("BATON_RETENTION_OPS", 100).max(1);
    let rounds = setting("BATON_RETENTION_ROUNDS", 30).max(1);
    println!("## Retention: bounded storage");
    sqlite_storage(runs, open);
    let cluster = Cluster::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    match &cluster {
        Some(cluster) => runtime.block_on(pg_storage(cluster, runs, open)),
        None => println!("\n(PostgreSQL skipped: no server programs)"),
    }
    println!();
    println!(
        "## Retention: no growth with history ({} retired Runs against 1,000; {rounds} \
         alternating rounds of {ops} Runs; the history written in bulk as the tombstones \
         retire leaves, checked against 3 roots retired through the API)",
        thousands(history as u64)
    );
    sqlite_growth(history, ops, rounds);
    match &cluster {
        Some(cluster) => runtime.block_on(pg_growth(cluster, history, ops, rounds)),
        None => println!("\n(PostgreSQL skipped: no server programs)"),
    }
}
