//! A runtime on PostgreSQL, end to end (docs/guide/runtime.md): a
//! supervisor and three worker processes on one `PostgresLog`.
//!
//! Twelve roots, each a chain of three Runs. A worker claims a Run, works
//! it step by step (printing each), and after its share of the steps its
//! host moves the Run on: a requester reserves a handoff to the chain's
//! next Run, the worker's boundary pauses with the progress (the step
//! reached and a running total), and `append_then_seal_async` makes the
//! pause durable, then seals. The supervisor dispatches the successor to
//! the next worker, which claims it and resumes from the predecessor's
//! pause. The last Run of a chain finishes (`finish_then_close_async`).
//!
//! When a worker's host dies, the supervisor claims each Run it gave that
//! host (a new epoch fences the dead one) and does what the log answers:
//! `Owner` → resume on a live worker; `HandedOff` → make sure the
//! successor is dispatched; `Finished`, `Retired` → nothing. Then it reads
//! each chain back from the log, retires the ended roots (retention by
//! age), and prints a summary.
//!
//! ```text
//! scripts/postgres        # a throwaway server; prints its connection string
//! BATON_PG_URL="host=127.0.0.1 port=54329 user=baton dbname=postgres" \
//!     cargo run --example postgres_runtime --features postgres [-- --kill-one]
//! ```
//!
//! `--kill-one` makes the supervisor SIGKILL worker `host-1` mid-run and
//! recover. With `BATON_PG_CA=/path/ca.pem` every process connects over
//! TLS (rustls, trusting that CA alone; add `sslmode=require` to the URL).
//! The supervisor is this program without arguments; a worker is the same
//! program run as `postgres_runtime worker host-N`, its orders on stdin.

mod hosts;
pub mod protocol;
mod retention;
mod supervisor;
#[path = "../common/tls.rs"]
mod tls;
mod worker;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use baton::durable::tokio_postgres::NoTls;
use baton::durable::{PostgresConfig, PostgresLog, PostgresOptions, PostgresSchema};

pub use protocol::Progress;
pub use supervisor::Plan;
pub use tls::rustls_trusting;

/// The log every process of the runtime opens.
pub type Log = PostgresLog<Progress>;

/// Any error, sendable between tasks.
pub type Failure = Box<dyn std::error::Error + Send + Sync>;

/// The schema the runtime's tables are in.
pub const SCHEMA: &str = "baton_runtime";

/// The process's one log on `url`, over TLS if `BATON_PG_CA` names a CA
/// file. `migrate`: the supervisor's deploy step (a fleet migrates before
/// it starts, as docs/guide/fleet.md says).
pub async fn connect(url: &str, migrate: bool) -> Result<Log, Failure> {
    let config: PostgresConfig = url.parse()?;
    let options = PostgresOptions::new()
        .schema(PostgresSchema::named(SCHEMA)?)
        .pool_size(8)
        .timeout(Duration::from_secs(5))
        .migrate(migrate);
    let log = match std::env::var("BATON_PG_CA") {
        Ok(ca) => PostgresLog::connect_with(config, rustls_trusting(&ca)?, options).await?,
        Err(_) => PostgresLog::connect_with(config, NoTls, options).await?,
    };
    Ok(log)
}

/// The supervisor's role: its log, the workers `worker_command` starts
/// (given a host name), the plan; ends with the summary printed.
pub async fn supervise(
    url: &str,
    plan: Plan,
    worker_command: impl FnMut(&str) -> Command,
) -> Result<(), Failure> {
    let log = connect(url, true).await?;
    supervisor::run(&log, plan, worker_command).await
}

/// A worker's role: its log, then its orders from stdin until it closes.
pub async fn serve(url: &str, host: &str) -> Result<(), Failure> {
    let log = Arc::new(connect(url, false).await?);
    worker::serve(log, host).await
}

/// The runtime every process runs on: one thread, with I/O and timers.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

fn main() -> Result<(), Failure> {
    let Ok(url) = std::env::var("BATON_PG_URL") else {
        println!(
            "set BATON_PG_URL to a PostgreSQL connection string: scripts/postgres starts a \
             throwaway server and prints one; then\n  BATON_PG_URL=\"…\" cargo run --example \
             postgres_runtime --features postgres"
        );
        return Ok(());
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        let host = args.get(1).ok_or("usage: postgres_runtime worker HOST")?;
        return runtime()?.block_on(serve(&url, host));
    }
    let program = std::env::current_exe()?;
    let plan = Plan {
        workers: 3,
        roots: 12,
        kill_one: args.iter().any(|arg| arg == "--kill-one"),
    };
    let worker = |host: &str| {
        let mut command = Command::new(&program);
        command.args(["worker", host]);
        command
    };
    runtime()?.block_on(supervise(&url, plan, worker))?;
    Ok(())
}
