//! baton's durable log beside its closest peer on one PostgreSQL server
//! (issue 47): the ownership lifecycle of one unit of work, fenced on both.
//!
//! - **baton**: `PostgresLog`'s claim+finish of a new root Run (2
//!   transactions), and the 4-op handoff unit (claim, append the pause,
//!   claim the successor, finish it: 4 transactions).
//! - **awa 0.6.9**: a PostgreSQL job queue whose claim and completion are
//!   fenced by a `run_lease`: dispatch and completion of jobs already
//!   enqueued, through its worker runtime.
//! - **bare**: one prepared autocommit `INSERT`: one commit, the physical
//!   limit of the server and disk.
//!
//! For each k (workers), each round runs baton and awa (with its defaults,
//! and as its own benchmarks tune it) back to back (their order reversed
//! every other round), then bare, then the handoff unit;
//! each cell on a fresh database, after a warm-up of twice its units (awa
//! needs thousands of jobs to reach its pace: its claim's server time per
//! job falls about 3× between a warm-up of 128 jobs and one of 4,000).
//! Then a zombie cell: a stale owner's writes after a takeover, on both.
//! Prints markdown tables on stdout, progress on stderr.
//!
//! Run by `scripts/peers`, which starts the server. Settings (environment):
//! `PEERS_PG_URL` (`postgres://user@host:port`, required), `PEERS_ROUNDS`
//! (3), `PEERS_UNITS` per cell (2000), `PEERS_WARM` (warm-up units per
//! cell, twice `PEERS_UNITS`), `PEERS_KS` (`1,8,32`),
//! `PEERS_ZOMBIES` (100 tries), `PEERS_THREADS` (the tokio runtime's
//! worker threads, 2), `PEERS_AWA_START` (`stream` or `idle`, see
//! `awa_units::Start`), `PEERS_AWA_LEAD` (the jobs streamed ahead of awa's
//! timed ones, 4·max(k, 8)), `PEERS_STATEMENTS` (`1`: the per-statement and
//! per-WAL-record tables, see `statements`), `PEERS_GROUP` (baton's
//! group commit slots; unset: the library's default), `PEERS_COMMIT` and
//! `PEERS_DATE` (for the header).

mod awa_units;
mod bare;
mod baton_units;
// The fixtures baton's durable benches share: the contract's payload, its
// pauses and sources, `setting` and `bounded`.
#[path = "../../benches/durable_common.rs"]
mod durable_common;
mod measure;
mod report;
mod statements;

use std::time::Instant;

use awa_units::{Start, Tuning};
use baton_units::Unit;
use measure::{Server, load_average, setting};
use report::{Results, Round};

struct Settings {
    url: String,
    rounds: usize,
    units: usize,
    ks: Vec<usize>,
    zombies: usize,
    awa_start: Start,
    warm: usize,
}

impl Settings {
    fn from_env() -> Settings {
        let url = std::env::var("PEERS_PG_URL")
            .expect("PEERS_PG_URL: the server's postgres://user@host:port (scripts/peers sets it)");
        let ks = std::env::var("PEERS_KS").unwrap_or_else(|_| "1,8,32".into());
        let ks = ks
            .split(',')
            .map(|k| {
                k.trim()
                    .parse()
                    .expect("PEERS_KS: numbers, comma separated")
            })
            .filter(|&k| k > 0)
            .collect();
        let units = setting("PEERS_UNITS", 2000).max(1);
        Settings {
            url,
            rounds: setting("PEERS_ROUNDS", 3).max(1),
            units,
            ks,
            zombies: setting("PEERS_ZOMBIES", 100),
            warm: setting("PEERS_WARM", 2 * units).max(1),
            awa_start: match std::env::var("PEERS_AWA_START").as_deref() {
                Ok("idle") => Start::Idle,
                Ok("stream") | Err(_) => Start::Stream,
                Ok(other) => panic!("PEERS_AWA_START: `idle` or `stream`, not {other:?}"),
            },
        }
    }
}

/// One round at `k`: baton and awa (in the round's order), bare, handoff.
async fn round(server: &Server, s: &Settings, k: usize, r: usize) -> Round {
    let warm = s.warm;
    let db = |system: &str| format!("peers_{system}_k{k}_r{r}");
    let baton =
        async || baton_units::cell(server, Unit::ClaimFinish, &db("baton"), k, warm, s.units).await;
    let awa = async |tuning, name: &str| {
        awa_units::cell(server, &db(name), tuning, s.awa_start, k, warm, s.units).await
    };
    let (baton, awa, awa_tuned) = if r % 2 == 0 {
        let b = baton().await;
        let a = awa(Tuning::Defaults, "awa").await;
        (b, a, awa(Tuning::AsItsBenches, "awatuned").await)
    } else {
        let t = awa(Tuning::AsItsBenches, "awatuned").await;
        let a = awa(Tuning::Defaults, "awa").await;
        (baton().await, a, t)
    };
    let bare = bare::cell(server, &db("bare"), k, warm, s.units).await;
    let handoff = baton_units::cell(server, Unit::Handoff, &db("handoff"), k, warm, s.units).await;
    eprintln!(
        "k={k} round {}: baton {:.0}/s, awa {:.0}/s, awa as its benches {:.0}/s, bare {:.0}/s, \
         handoff {:.0}/s (load {})",
        r + 1,
        baton.per_second(),
        awa.per_second(),
        awa_tuned.per_second(),
        bare.per_second(),
        handoff.per_second(),
        load_average(),
    );
    Round {
        baton,
        awa,
        awa_tuned,
        bare,
        handoff,
    }
}

async fn run() {
    let s = Settings::from_env();
    let started = Instant::now();
    let load_before = load_average();
    let server = Server::connect(&s.url).await;
    let mut results = Results { rows: Vec::new() };
    for &k in &s.ks {
        let mut rounds = Vec::with_capacity(s.rounds);
        for r in 0..s.rounds {
            rounds.push(round(&server, &s, k, r).await);
        }
        results.rows.push((k, rounds));
    }
    let baton_zombie = baton_units::zombie(&server, s.zombies).await;
    let awa_zombie = awa_units::zombie(&server, s.zombies).await;
    eprintln!("zombie cell done");

    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "## baton vs awa 0.6.9 vs bare INSERT, one PostgreSQL server\n\n\
         {} · commit `{}` · PostgreSQL {} · {cores} cores · load average {load_before} \
         at start, {} at end · {} rounds × {} units per cell after {} of warm-up, k = {:?} · \
         awa timed {:?} · {} tokio threads · baton's group commit: {}{} · {:.0} s\n",
        env("PEERS_DATE"),
        env("PEERS_COMMIT"),
        server.version().await,
        load_average(),
        s.rounds,
        s.units,
        s.warm,
        s.ks,
        s.awa_start,
        tokio::runtime::Handle::current().metrics().num_workers(),
        baton_units::group_commit_setting(),
        if server.in_statements_mode() {
            " · pg_stat_statements loaded"
        } else {
            ""
        },
        started.elapsed().as_secs_f64(),
    );
    println!("{}", results.throughput());
    println!("{}", results.cost());
    println!("{}", results.cpu());
    println!("{}", report::zombie(&baton_zombie, &awa_zombie));
    let breakdowns = server.breakdowns();
    if server.in_statements_mode() {
        println!("{}", report::breakdowns(&breakdowns));
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(setting("PEERS_THREADS", 2).max(1))
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run());
}
