//! The PostgreSQL half of the retention bench: its storage stages and its
//! growth rounds (see `retention.rs` for what each measures).

use super::*;

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

pub(super) async fn pg_storage(cluster: &Cluster, runs: usize, open: usize) {
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

pub(super) async fn pg_growth(cluster: &Cluster, history: usize, ops: usize, rounds: usize) {
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
