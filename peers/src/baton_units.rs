//! baton's cells: its durable log (`PostgresLog`) driven directly, as a
//! runtime would drive it (no gate, no worker runtime around it).
//!
//! - **claim+finish**: `claim_async` of a new root Run (its row is created
//!   by the claim, inside the timing) → `Claim::Owner(epoch)`, then
//!   `finish_async` under that epoch → `Receipt::Written`. Two
//!   transactions, each its own commit, fenced by the epoch: the whole
//!   ownership lifecycle of one Run.
//! - **handoff**: the 4-op unit of a handoff: claim root Run A, append A's
//!   pause handing off to B under A's epoch, claim the successor B, finish
//!   B under B's epoch. Four transactions.
//!
//! k workers are k tokio tasks sharing ONE log whose pool holds k
//! connections (the README's usage), each doing its share of the units in
//! sequence, each waiting for its own commits.

use std::sync::Arc;
use std::time::Duration;

use baton::durable::{AsyncHandoffLog, Claim, LogError, PostgresLog, PostgresOptions, Receipt};
use baton::{HandoffExecution, HandoffPause};
use tokio_postgres::NoTls;

use crate::durable_common::{self, source};
use crate::measure::{Cell, Server, bounded};

type Log = PostgresLog<HandoffExecution>;

/// The longest one cell may take.
const LIMIT: Duration = Duration::from_secs(900);

/// Which baton unit a cell runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unit {
    ClaimFinish,
    Handoff,
}

/// A Run's execution facts; `tool` tells two outcomes apart.
fn execution(tool: &str) -> HandoffExecution {
    let mut execution = durable_common::execution();
    execution.tools.loaded = vec![tool.into()];
    execution
}

/// The pause that hands Run `run` (root `run`) off to `next`.
fn pause(run: &str, next: &str) -> HandoffPause<HandoffExecution> {
    durable_common::pause(run, run, next)
}

/// The epoch of a claim that must make this worker the owner.
fn owner<P>(claim: Result<Claim<P>, LogError>) -> baton::durable::Epoch {
    match claim.expect("claim") {
        Claim::Owner(epoch) => epoch,
        _ => panic!("a new Run's claim did not answer Owner"),
    }
}

/// One unit on Run `run` (and its successor), finishing with `outcome`.
async fn unit(log: &Log, kind: Unit, run: &str, outcome: &HandoffExecution) {
    let epoch = owner(log.claim_async(run, run).await);
    let from = source(run);
    let finished = match kind {
        Unit::ClaimFinish => log.finish_async(run, &from, epoch, outcome).await,
        Unit::Handoff => {
            let next = format!("{run}-next");
            let pause = pause(run, &next);
            let appended = log.append_async(run, &from, epoch, &pause).await;
            assert_eq!(appended.expect("append"), Receipt::Written);
            let successor = owner(log.claim_async(run, &next).await);
            log.finish_async(run, &source(&next), successor, outcome)
                .await
        }
    };
    assert_eq!(finished.expect("finish"), Receipt::Written);
}

/// `units` units of `kind` on `workers` tasks sharing `log`; Run ids start
/// with `tag`.
async fn run_units(log: &Arc<Log>, kind: Unit, tag: &str, workers: usize, units: usize) {
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let (log, tag) = (Arc::clone(log), format!("{tag}-w{w}"));
            let share = units / workers + usize::from(w < units % workers);
            tokio::spawn(async move {
                let outcome = execution("shell");
                for i in 0..share {
                    unit(&log, kind, &format!("{tag}-{i}"), &outcome).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a baton worker");
    }
}

/// `PEERS_GROUP`: the log's group commit slots (unset: the library's
/// default).
fn group_slots() -> Option<usize> {
    std::env::var("PEERS_GROUP")
        .ok()
        .and_then(|v| v.parse().ok())
}

/// The group commit the logs are opened with, for the header.
pub fn group_commit_setting() -> String {
    match group_slots() {
        Some(0) => "off".into(),
        Some(slots) => format!("{slots} slots"),
        None => "the default: as many slots as the pool".into(),
    }
}

/// Opens a fresh log on a fresh database `db`, its pool `pool` connections,
/// all of them opened now.
async fn open(server: &Server, db: &str, pool: usize) -> Arc<Log> {
    let url = server.fresh_database(db).await;
    let mut options = PostgresOptions::new()
        .pool_size(pool)
        .timeout(Duration::from_secs(120))
        .migrate(true);
    // `PEERS_GROUP`: the log's group commit slots (unset: the default).
    if let Some(slots) = group_slots() {
        options = options.group_commit(slots);
    }
    let config = url.parse().expect("a connection string");
    let log = PostgresLog::connect_with(config, NoTls, options);
    let log = Arc::new(log.await.expect("PostgresLog::connect_with"));
    let mut held = Vec::with_capacity(pool);
    for _ in 0..pool {
        held.push(log.pool().get().await.expect("a pool connection"));
    }
    log
}

/// One baton cell: a fresh database and log, `warm_up` untimed units, then
/// `units` timed ones on `k` workers.
pub async fn cell(
    server: &Server,
    kind: Unit,
    db: &str,
    k: usize,
    warm_up: usize,
    units: usize,
) -> Cell {
    let log = open(server, db, k).await;
    bounded(
        "baton warm-up",
        LIMIT,
        run_units(&log, kind, "warm", k, warm_up),
    )
    .await;
    let window = server.open().await;
    bounded(db, LIMIT, run_units(&log, kind, "timed", k, units)).await;
    window.close(server, units as u64).await
}

/// What the zombie cell saw on baton.
#[derive(Default, Debug)]
pub struct Zombie {
    pub tries: usize,
    /// Stale writes (append, finish, finish again under e1) that landed.
    pub landed: usize,
    /// Of the first two stale writes, how many answered `LogError::Fenced`.
    pub fenced: usize,
    /// The rightful owner's `finish@e2` answered `Written`.
    pub owner_written: usize,
}

/// `tries` times: claim → e1; a takeover claim → e2; the zombie appends and
/// finishes under e1 (refused, `Fenced`); the owner finishes under e2
/// (`Written`); the zombie finishes under e1 once more. Then the Run's
/// facts must hold the owner's finish alone, no pause, epoch e2.
pub async fn zombie(server: &Server, tries: usize) -> Zombie {
    let log = open(server, "peers_zombie_baton", 2).await;
    let mut seen = Zombie {
        tries,
        ..Zombie::default()
    };
    for i in 0..tries {
        let run = format!("zombie-{i}");
        let e1 = owner(log.claim_async(&run, &run).await);
        let e2 = owner(log.claim_async(&run, &run).await);
        assert!(e2 > e1, "a takeover issues a newer epoch");
        let (src, zombie_outcome) = (source(&run), execution("zombie"));
        let stale = [
            log.append_async(&run, &src, e1, &pause(&run, &format!("{run}-next")))
                .await,
            log.finish_async(&run, &src, e1, &zombie_outcome).await,
        ];
        seen.fenced += stale
            .iter()
            .filter(|r| matches!(r, Err(LogError::Fenced { .. })))
            .count();
        let rightful = log.finish_async(&run, &src, e2, &execution("owner")).await;
        seen.owner_written += usize::from(matches!(rightful, Ok(Receipt::Written)));
        let late = log.finish_async(&run, &src, e1, &zombie_outcome).await;
        let facts = log.facts_async(&run, &run).await.expect("facts");
        let finished_by_owner = facts
            .finished
            .as_ref()
            .is_some_and(|f| f.outcome.tools.loaded == ["owner"]);
        // A stale write landed if it answered Ok, or if the facts show it.
        let answered = stale.iter().filter(|r| r.is_ok()).count() + usize::from(late.is_ok());
        let shown = facts.pauses.len() + usize::from(!finished_by_owner);
        seen.landed += answered.max(shown);
        assert_eq!(facts.epoch, e2);
    }
    seen
}
