//! One host of a fleet on a shared PostgreSQL log: the deploy step that
//! migrates, then the process's one log (a pool, TLS when a CA is given),
//! shared by its Runs, and what each error tells the caller to do.
//!
//! The host's twenty Runs, all under one root Run of its own, hand off at
//! once through the one log; their twenty successors are claimed and
//! finished; every Run claimed again answers `HandedOff` or `Finished`
//! (never resumed), and the root, its work ended, is retired: a claim of
//! any of its Runs then answers `Retired`. The whole loop of a worker
//! (steps, the gate's boundary, append then seal) and a supervisor that
//! recovers a dead host's Runs is examples/postgres_runtime/
//! (docs/guide/runtime.md).
//!
//! ```text
//! BATON_PG_URL="host=... user=... dbname=..." \
//!     cargo run --example postgres_fleet --features postgres
//! ```
//!
//! With `BATON_PG_CA=/path/ca.pem` the log connects over TLS (rustls,
//! tokio-postgres-rustls), trusting that CA alone; add `sslmode=require` to
//! the URL so a server without TLS is refused, never used in plaintext
//! (without a CA, leave `sslmode=require` out: no TLS, no connection).
//! `scripts/postgres` starts a throwaway server and prints a URL. Without
//! `BATON_PG_URL` the example says how to run it and exits.

#[path = "common/tls.rs"]
mod tls;

use std::sync::Arc;
use std::time::Duration;

use baton::durable::tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use baton::durable::tokio_postgres::{NoTls, Socket};
use baton::durable::{
    AsyncHandoffLog, Claim, LogError, PostgresConfig, PostgresLog, PostgresOptions, PostgresSchema,
    Retirement,
};
use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{HandoffExecution, HandoffIntent, HandoffPause, Invocation};
pub use tls::rustls_trusting;

type Log = PostgresLog<HandoffExecution>;

/// The Runs the host hands off (each to a successor it then finishes).
pub const RUNS: usize = 20;

/// What a Run hands its successor, and what a successor ends with.
fn execution() -> HandoffExecution {
    let digest = |c: char| Digest::parse(format!("sha256:{}", c.to_string().repeat(64)));
    let digest = |c| digest(c).expect("64 hex digits");
    HandoffExecution {
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
    }
}

/// The invocation of `run`.
fn invocation(run: &str) -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: run.into(),
        invocation_id: format!("{run}-invocation"),
    }
}

/// The pause handing `run` (of `root`) to `run-next`.
fn pause(root: &str, run: &str) -> HandoffPause<HandoffExecution> {
    let intent = HandoffIntent {
        handoff_id: format!("{run}-handoff"),
        host_epoch: "host-1".into(),
        root_run_id: root.into(),
        successor_run_id: format!("{run}-next"),
        successor_invocation_id: format!("{run}-next-invocation"),
        claim_id: "claim".into(),
    };
    HandoffPause::new(intent, execution())
}

/// What a caller does with each error of the log.
fn advice(error: &LogError) -> &'static str {
    match error {
        LogError::Fenced { .. } => "a newer owner holds the Run: stop this worker",
        LogError::Unavailable(_) => "nothing was written: send the same operation again",
        LogError::OutcomeUnknown(_) => {
            "maybe written: read the facts, or append the identical pause again"
        }
        _ => "the log's answer: nothing was written",
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let Ok(url) = std::env::var("BATON_PG_URL") else {
        println!(
            "set BATON_PG_URL to a PostgreSQL connection string (scripts/postgres prints one)"
        );
        return Ok(());
    };
    let config: PostgresConfig = url.parse()?;
    let name = format!("host-{}", std::process::id());
    let report = match std::env::var("BATON_PG_CA") {
        Ok(ca) => host(config, rustls_trusting(&ca)?, &name).await?,
        Err(_) => host(config, NoTls, &name).await?,
    };
    println!("{report:?}");
    Ok(())
}

/// What one host's run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Runs handed off now.
    pub handed_off: usize,
    /// Successors finished now.
    pub finished: usize,
    /// Runs a claim answered `Owner` for once their fate was durable:
    /// always 0 (R6, R8).
    pub resumed: usize,
    /// Runs removed by retiring the host's root (its 20 Runs and their
    /// 20 successors; 0 if it was retired already).
    pub retired: usize,
}

/// Claims `run` of `root` for a worker: its epoch, or `None` if the Run
/// is final (handed off, finished, retired: never resume it).
async fn owner(
    log: &Log,
    root: &str,
    run: &str,
) -> Result<Option<baton::durable::Epoch>, LogError> {
    match log.claim_async(root, run).await? {
        Claim::Owner(epoch) => Ok(Some(epoch)),
        Claim::HandedOff(_) | Claim::Finished(_) | Claim::Retired => Ok(None),
    }
}

/// Runs `work` on each of `runs` at once through the one log; counts the
/// Runs it acted on, printing each error with what to do about it.
async fn each<F, Fut>(
    runs: Vec<String>,
    work: F,
) -> Result<usize, Box<dyn std::error::Error + Send + Sync>>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<bool, LogError>> + Send + 'static,
{
    let tasks: Vec<_> = runs
        .into_iter()
        .map(|run| tokio::spawn(work(run)))
        .collect();
    let mut acted = 0;
    for task in tasks {
        match task.await? {
            Ok(true) => acted += 1,
            Ok(false) => {}
            Err(error) => println!("{error}: {}", advice(&error)),
        }
    }
    Ok(acted)
}

/// The deploy step, then one host's Runs through its one log, every
/// connection made with `tls`, all under the root Run `root-NAME`: hands
/// off its Runs, finishes their successors, claims them all again (none
/// resumed) and retires the root. Run again with the same `name`, every
/// claim answers `Retired` and it does nothing.
/// (`tests/log_contract/postgres_example.rs` runs it on the tests' own
/// servers, plain and over TLS.)
pub async fn host<T>(
    config: PostgresConfig,
    tls: T,
    name: &str,
) -> Result<Report, Box<dyn std::error::Error + Send + Sync>>
where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + Sync,
    T::TlsConnect: Send + Sync,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    // The deploy step, once, with a role that may run DDL (here the same).
    let (admin, connection) = config.connect(tls.clone()).await?;
    tokio::spawn(connection);
    PostgresSchema::named("baton_example")?
        .migrate(&admin)
        .await?;
    println!("migrated schema baton_example");

    // The process's one log, shared by its Runs.
    let options = PostgresOptions::new()
        .schema(PostgresSchema::named("baton_example")?)
        .pool_size(8)
        .timeout(Duration::from_secs(5));
    let log: Arc<Log> = Arc::new(PostgresLog::connect_with(config, tls, options).await?);
    let root: Arc<str> = format!("root-{name}").into();
    let runs: Vec<String> = (0..RUNS).map(|i| format!("{name}-run-{i}")).collect();
    let successors: Vec<String> = runs.iter().map(|run| format!("{run}-next")).collect();

    // Each Run hands off: claimed, then its pause appended under its epoch.
    let handed_off = each(runs.clone(), |run| {
        let (log, root) = (Arc::clone(&log), Arc::clone(&root));
        async move {
            let Some(epoch) = owner(&log, &root, &run).await? else {
                return Ok(false); // final: never resume it
            };
            let pause = pause(&root, &run);
            let _receipt = log
                .append_async(&root, &invocation(&run), epoch, &pause)
                .await?;
            Ok(true)
        }
    })
    .await?;
    // Each successor is claimed and finishes (a worker would first resume
    // from the pause: docs/guide/runtime.md).
    let finished = each(successors.clone(), |run| {
        let (log, root) = (Arc::clone(&log), Arc::clone(&root));
        async move {
            let Some(epoch) = owner(&log, &root, &run).await? else {
                return Ok(false);
            };
            let _receipt = log
                .finish_async(&root, &invocation(&run), epoch, &execution())
                .await?;
            Ok(true)
        }
    })
    .await?;
    println!(
        "{} Runs handed off, {} successors finished, through one log ({log:?})",
        handed_off, finished
    );
    // Claimed again, every Run is final: none is resumed.
    let all: Vec<String> = runs.into_iter().chain(successors).collect();
    let resumed = each(all, |run| {
        let (log, root) = (Arc::clone(&log), Arc::clone(&root));
        async move { Ok(owner(&log, &root, &run).await?.is_some()) }
    })
    .await?;
    println!("claimed again, {resumed} Runs resumed");
    // Retention: the root's work has ended (G5), so it goes; a tombstone stays.
    let retired = match log.retire_async(&root).await? {
        Retirement::Retired { runs } => runs,
        Retirement::AlreadyRetired => 0,
    };
    let first = format!("{name}-run-0");
    println!(
        "retired {root} ({} Runs); a claim of {first} now answers {:?}",
        retired,
        log.claim_async(&root, &first).await?
    );
    Ok(Report {
        handed_off,
        finished,
        resumed,
        retired,
    })
}
