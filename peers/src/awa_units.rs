//! awa's cells: its worker runtime (`Client`, default queue-storage engine)
//! dispatching and completing jobs already in its queue.
//!
//! - **unit**: a job enqueued beforehand (the whole cell's jobs by one COPY,
//!   `QueueStorage::enqueue_params_copy`, untimed), claimed by the runtime,
//!   run by a no-op handler (`Ok(JobResult::Completed)`) and completed.
//!   Timed from the enqueue's commit to the last completion visible in the
//!   database. awa claims and completes in batches, so its transactions per
//!   job fall as k grows.
//! - **k workers**: one queue with `max_workers = k`, run two ways
//!   ([`Tuning`]): with awa's defaults (poll 200 ms, deadline 300 s, claim
//!   batch up to 512, completion batcher), and as awa's own throughput
//!   benchmarks run it (deadline 0, poll 50 ms). Its sqlx pool has k + 10
//!   connections: the runtime holds three for good (two `LISTEN`s and the
//!   maintenance leader's advisory lock), and with k + 3 it starved at
//!   k = 1.
//! - **end**: the handler wakes the cell when it has run the last job (no
//!   polling while awa works), then a 1 ms poll of a cheap exact SQL probe
//!   over the tables awa's completions land in; after the cell awa's own
//!   `QueueStorage::queue_counts(..).terminal` must agree (it is too slow,
//!   ~0.4 s a call, to time with).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use awa::model::{ClaimedRuntimeJob, migrations};
use awa::{
    Client, InsertOpts, InsertParams, JobContext, JobError, JobResult, JobState, QueueConfig,
    QueueStorage, QueueStorageConfig, Worker,
};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use crate::measure::{Cell, Server, bounded, connect, setting};

/// The longest one cell may take.
const LIMIT: Duration = Duration::from_secs(900);
const QUEUE: &str = "peers";
const KIND: &str = "peers_noop";

/// How awa's queue is configured, besides `max_workers = k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tuning {
    /// `QueueConfig::default()`: poll 200 ms, deadline 300 s.
    Defaults,
    /// As awa's own throughput benchmarks configure it
    /// (`benchmark_test.rs` in the awa crate): `deadline_duration` zero, which
    /// skips the deadline rescue path and claims a batch with one compact
    /// row instead of one `lease_claims` row per job, and poll 50 ms.
    /// Heartbeat rescue still runs.
    AsItsBenches,
}

impl Tuning {
    fn config(self, k: usize) -> QueueConfig {
        let defaults = QueueConfig {
            max_workers: k as u32,
            ..QueueConfig::default()
        };
        match self {
            Tuning::Defaults => defaults,
            Tuning::AsItsBenches => QueueConfig {
                deadline_duration: Duration::ZERO,
                poll_interval: Duration::from_millis(50),
                ..defaults
            },
        }
    }
}

/// When awa's timed window opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// At the commit of the COPY that enqueues the timed jobs, awa idle
    /// until then (its dispatcher woken by the COPY's `NOTIFY`): the
    /// window includes awa's ramp from idle to its pace.
    Idle,
    /// In a stream: the COPY enqueues `PEERS_AWA_LEAD` more jobs (4·max(k, 8)
    /// by default) ahead of the timed ones, and the clock starts once the
    /// handler has run them, awa claiming and completing at its pace (awa's
    /// benchmarking guide: steady numbers are the better indicator of
    /// sustained behaviour).
    Stream,
}

/// The jobs the handler ran, and a wake-up when they reach `target`.
#[derive(Default)]
struct Ran {
    count: AtomicU64,
    target: AtomicU64,
    reached: Notify,
}

impl Ran {
    /// Waits until the handler has run `target` jobs in all.
    async fn until(&self, target: u64) {
        self.target.store(target, Ordering::SeqCst);
        // A permit `notify_one` stored before this wait is taken at once,
        // and the count is checked again after it.
        while self.count.load(Ordering::SeqCst) < target {
            self.reached.notified().await;
        }
    }
}

/// The no-op handler; counts the jobs it ran.
struct NoOp(Arc<Ran>);

#[async_trait::async_trait]
impl Worker for NoOp {
    fn kind(&self) -> &'static str {
        KIND
    }
    async fn perform(&self, _: &JobContext) -> Result<JobResult, JobError> {
        let ran = self.0.count.fetch_add(1, Ordering::SeqCst) + 1;
        if ran == self.0.target.load(Ordering::SeqCst) {
            self.0.reached.notify_one();
        }
        Ok(JobResult::Completed)
    }
}

/// `n` jobs for `queue`, args tagged `tag`.
fn jobs(queue: &str, tag: &str, n: usize) -> Vec<InsertParams> {
    (0..n)
        .map(|i| InsertParams {
            kind: KIND.into(),
            args: serde_json::json!({ "tag": tag, "i": i }),
            opts: InsertOpts {
                queue: queue.into(),
                ..InsertOpts::default()
            },
        })
        .collect()
}

/// A fresh database `db` with awa's schema and queue storage installed,
/// and a sqlx pool of `size` connections on it, all of them opened now.
async fn install(server: &Server, db: &str, size: usize) -> (String, PgPool, QueueStorage) {
    let url = server.fresh_database(db).await;
    let pool = PgPoolOptions::new()
        .max_connections(size as u32)
        .connect(&url)
        .await
        .expect("awa's pool");
    migrations::run(&pool).await.expect("awa's migrations");
    let store = QueueStorage::new(QueueStorageConfig::default()).expect("queue storage");
    store.install(&pool).await.expect("queue storage install");
    let mut held = Vec::with_capacity(size);
    for _ in 0..size {
        held.push(pool.acquire().await.expect("a pool connection"));
    }
    (url, pool, store)
}

/// Completed jobs, exactly, from where awa's completions land: compact
/// receipt batches, done entries, and the rollups of pruned ones.
const TERMINAL_PROBE: &str = "SELECT \
    COALESCE((SELECT sum(completed_count) FROM awa.receipt_completion_batches), 0)::bigint \
  + (SELECT count(*) FROM awa.done_entries WHERE state = 'completed')::bigint \
  + COALESCE((SELECT sum(pruned_completed_count) FROM awa.queue_terminal_rollups), 0)::bigint";

/// Waits until the handler ran `total` jobs (woken by it), then until the
/// database shows them all completed (polled every 1 ms).
async fn wait_for(ran: &Ran, probe: &tokio_postgres::Client, total: u64) {
    ran.until(total).await;
    loop {
        let row = probe.query_one(TERMINAL_PROBE, &[]).await;
        let completed: i64 = row.expect("the terminal probe").get(0);
        if completed as u64 >= total {
            assert_eq!(completed as u64, total, "more jobs completed than enqueued");
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One awa cell: a fresh database and runtime with `max_workers = k`,
/// configured by `tuning`, `warm_up` untimed jobs run to completion, then
/// `units` timed ones.
pub async fn cell(
    server: &Server,
    db: &str,
    tuning: Tuning,
    start: Start,
    k: usize,
    warm_up: usize,
    units: usize,
) -> Cell {
    let (url, pool, store) = install(server, db, k + 10).await;
    let ran = Arc::new(Ran::default());
    let config = tuning.config(k);
    let client = Client::builder(pool.clone())
        .queue(QUEUE, config)
        .register_worker(NoOp(Arc::clone(&ran)))
        .build()
        .expect("awa client");
    client.start().await.expect("awa client start");
    let probe = connect(&url).await;

    let warm = jobs(QUEUE, "warm", warm_up);
    store
        .enqueue_params_copy(&pool, &warm)
        .await
        .expect("enqueue");
    bounded("awa warm-up", LIMIT, wait_for(&ran, &probe, warm_up as u64)).await;

    // In a stream, `PEERS_AWA_LEAD` more jobs (4·max(k, 8) by default) run
    // before the clock starts (the same COPY as the timed ones): the window
    // opens with awa already claiming and completing at its pace.
    let lead = match start {
        Start::Idle => 0,
        Start::Stream => setting("PEERS_AWA_LEAD", 4 * k.max(8)),
    };
    let total = (warm_up + lead + units) as u64;
    let timed = jobs(QUEUE, "timed", lead + units);
    store
        .enqueue_params_copy(&pool, &timed)
        .await
        .expect("enqueue");
    let (window, timed) = match start {
        // The clock starts at the enqueue's commit: awa may claim at once.
        Start::Idle => (server.open_from(Instant::now()).await, units as u64),
        // The clock starts when the handler wakes the cell after the lead;
        // the jobs run by then are left out of the units.
        Start::Stream => {
            ran.until((warm_up + lead) as u64).await;
            let started = Instant::now();
            let done = ran.count.load(Ordering::SeqCst);
            (server.open_from(started).await, total - done)
        }
    };
    bounded(db, LIMIT, wait_for(&ran, &probe, total)).await;
    let cell = window.close(server, timed).await;

    let counts = store
        .queue_counts(&pool, QUEUE)
        .await
        .expect("queue_counts");
    assert_eq!(
        counts.terminal as u64, total,
        "awa's own count of terminal jobs"
    );
    client.shutdown(Duration::from_secs(10)).await;
    pool.close().await;
    cell
}

/// What the zombie cell saw on awa.
#[derive(Default, Debug)]
pub struct Zombie {
    pub tries: usize,
    /// Stale completions (with the superseded run_lease) that landed.
    pub landed: usize,
    /// Stale completions that matched 0 rows.
    pub matched_none: usize,
    /// The rightful attempt's completion matched its 1 row.
    pub owner_completed: usize,
}

/// Claims the one job of `queue` with a 300 s deadline (awa's default).
async fn claim_one(store: &QueueStorage, pool: &PgPool, queue: &str) -> ClaimedRuntimeJob {
    let deadline = QueueConfig::default().deadline_duration;
    let mut claimed = store
        .claim_runtime_batch(pool, queue, 1, deadline)
        .await
        .expect("claim_runtime_batch");
    assert_eq!(claimed.len(), 1, "one job claimed");
    claimed.pop().expect("one job")
}

/// `tries` times, with no runtime running: enqueue a job; claim it → run
/// lease L1; a takeover: `rescue_stale_heartbeats(staleness 0)`, the
/// deferred row made due, `promote_due`, claim again → L2 > L1; the zombie
/// completes with its L1 claim (the call awa's completion batcher makes),
/// which must match 0 rows; the rightful attempt completes with L2.
pub async fn zombie(server: &Server, tries: usize) -> Zombie {
    let (_, pool, store) = install(server, "peers_zombie_awa", 4).await;
    let mut seen = Zombie {
        tries,
        ..Zombie::default()
    };
    for i in 0..tries {
        let queue = format!("zombie{i}");
        store
            .enqueue_params_copy(&pool, &jobs(&queue, "zombie", 1))
            .await
            .expect("enqueue");
        let first = claim_one(&store, &pool, &queue).await;
        let rescued = store.rescue_stale_heartbeats(&pool, Duration::ZERO).await;
        assert_eq!(
            rescued.expect("rescue").len(),
            1,
            "the stale attempt rescued"
        );
        sqlx::query("UPDATE awa.deferred_jobs SET run_at = now() WHERE job_id = $1")
            .bind(first.job.id)
            .execute(&pool)
            .await
            .expect("making the retry due");
        let promoted = store.promote_due(&pool, JobState::Retryable, 10).await;
        assert_eq!(promoted.expect("promote_due"), 1, "the retry promoted");
        let second = claim_one(&store, &pool, &queue).await;
        assert_eq!(second.job.id, first.job.id);
        assert!(
            second.job.run_lease > first.job.run_lease,
            "a newer run_lease"
        );
        let stale = store
            .complete_runtime_batch(&pool, std::slice::from_ref(&first))
            .await
            .expect("the zombie's completion");
        seen.landed += stale.len();
        seen.matched_none += usize::from(stale.is_empty());
        let rightful = store
            .complete_runtime_batch(&pool, std::slice::from_ref(&second))
            .await
            .expect("the rightful completion");
        seen.owner_completed += usize::from(rightful.len() == 1);
    }
    pool.close().await;
    seen
}
