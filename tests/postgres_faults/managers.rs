//! The campaign's servers run by a high-availability manager (issue 58):
//! the manager, not the test, decides when the leader is gone and which
//! standby to promote. The campaign's crashes are the manager's faults,
//! one at a time, each healed before the next (a killed host started
//! again, a paused one continued):
//!
//! - the leader's postmaster killed (SIGKILL): the manager restarts it, or
//!   fails over;
//! - the leader's host killed (the manager's agent and PostgreSQL), then
//!   started again: a failover, and the old leader rejoins;
//! - the leader's host paused (SIGSTOP) longer than the manager's lease,
//!   then continued: the old primary, a zombie, must acknowledge nothing;
//! - a planned switchover;
//! - the synchronous standby's host killed while the primary serves (the
//!   manager drops it to stay writable), then started again;
//! - the manager's store (etcd, the monitor) paused for a while.
//!
//! Patroni (`Manager::Patroni`) runs three members, pg_auto_failover
//! (`Manager::AutoFailover`) a monitor and two nodes.
//!
//! Every worker's log requires a synchronous standby, as docs/guide/ha.md
//! configures it for every promise.

use std::thread;
use std::time::{Duration, Instant};

use super::Rng;
use super::child;
use crate::common::auto_failover::AutoFailover;
use crate::common::patroni::{Patroni, Synchronous, TTL};

/// Which manager, in which configuration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Manager {
    /// Patroni with etcd, three members.
    Patroni(Synchronous),
    /// pg_auto_failover: a monitor and two nodes, the secondary in the
    /// primary's quorum (its default).
    AutoFailover,
}

/// The kinds of a manager's fault, each named as the campaign counts it.
pub const FAULTS: [&str; 6] = [
    "manager: leader's postmaster killed",
    "manager: leader's host killed, started again",
    "manager: leader's host paused past the lease, continued",
    "manager: planned switchover",
    "manager: synchronous standby's host killed, started again",
    "manager: its store paused",
];

/// The faults (indexes of [`FAULTS`]) after which a new leader leads.
pub const FAILS_OVER: [usize; 3] = [1, 2, 3];

/// A running managed cluster.
pub enum Managed {
    Patroni(Patroni),
    AutoFailover(AutoFailover),
}

/// One fault as it happened: when it began and when it was healed (the
/// histories' clock), its kind, and whether the leader changed.
pub struct Injected {
    pub at: u64,
    pub healed: u64,
    pub kind: &'static str,
    pub failed_over: bool,
    /// Whether healing it took an operator's hand: Patroni's stale `/sync`
    /// key removed (see `Patroni::healthy`).
    pub operator: bool,
}

impl Managed {
    /// Starts the cluster; `None` without the manager (its tests skip).
    pub fn start(manager: Manager) -> Option<Managed> {
        match manager {
            Manager::Patroni(synchronous) => Patroni::start(3, synchronous).map(Managed::Patroni),
            Manager::AutoFailover => AutoFailover::start().map(Managed::AutoFailover),
        }
    }

    /// Every server's port.
    pub fn ports(&self) -> Vec<u16> {
        match self {
            Managed::Patroni(patroni) => patroni.ports(),
            Managed::AutoFailover(formation) => formation.ports(),
        }
    }

    /// A multi-host config opening on the primary.
    pub fn url(&self, dbname: &str) -> String {
        match self {
            Managed::Patroni(patroni) => patroni.url(dbname),
            Managed::AutoFailover(formation) => formation.url(dbname),
        }
    }

    /// A new database.
    pub async fn database(&self) -> String {
        match self {
            Managed::Patroni(patroni) => patroni.database().await,
            Managed::AutoFailover(formation) => formation.database().await,
        }
    }

    /// The leader's index in [`ports`](Self::ports), if one leads.
    pub fn leader(&self) -> Option<usize> {
        match self {
            Managed::Patroni(patroni) => patroni.leader(),
            Managed::AutoFailover(formation) => formation.leader(),
        }
    }

    /// Until the cluster is whole again: a leader with a synchronous
    /// standby, every member running.
    pub fn heal(&self) {
        match self {
            Managed::Patroni(patroni) => patroni.healthy(Duration::from_secs(90)),
            Managed::AutoFailover(formation) => formation.healthy(),
        }
    }

    /// Injects `kind` (an index of [`FAULTS`]) and heals it.
    pub fn inject(&mut self, kind: usize, rng: &mut Rng) -> Injected {
        let at = child::now_us();
        let before = self.leader();
        let removed = self.stale_sync_keys();
        super::report(&format!("{}: injected, healing", FAULTS[kind]));
        match self {
            Managed::Patroni(patroni) => patroni_fault(patroni, kind, rng),
            Managed::AutoFailover(formation) => auto_failover_fault(formation, kind, rng),
        }
        // A manager notices a fault within its loop (Patroni's
        // `loop_wait`, 1 s; the monitor's health checks, 0.5 s): whether
        // it is healed is asked only after that, or a dead postmaster
        // would be taken for a running one.
        thread::sleep(Duration::from_secs(2));
        self.heal();
        Injected {
            at,
            healed: child::now_us(),
            kind: FAULTS[kind],
            failed_over: self.leader() != before,
            operator: self.stale_sync_keys() > removed,
        }
    }

    /// How often healing removed Patroni's stale `/sync` key.
    fn stale_sync_keys(&self) -> usize {
        match self {
            Managed::Patroni(patroni) => patroni.stale_sync_keys(),
            Managed::AutoFailover(_) => 0,
        }
    }
}

/// Patroni's side of [`Managed::inject`].
fn patroni_fault(patroni: &mut Patroni, kind: usize, rng: &mut Rng) {
    let lease = Duration::from_secs(TTL);
    let Some(leader) = patroni.leader() else {
        return;
    };
    match kind {
        0 => patroni.kill_postgres(leader),
        1 => {
            patroni.kill_member(leader);
            thread::sleep(lease + rng.millis(1000, 4000));
            patroni.start_member(leader);
        }
        2 => {
            // Past the lease by more than a replica needs to take it: its
            // next loop (`loop_wait`, 1 s) and its question to the paused
            // leader's API, which goes unanswered for `retry_timeout` (2 s)
            // — with 2 s to spare, the pause ended before the failover once
            // in CI (the leader continued and kept its lease).
            patroni.signal_member(leader, "-STOP");
            thread::sleep(lease + rng.millis(5000, 8000));
            patroni.signal_member(leader, "-CONT");
        }
        3 => {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !patroni.switchover() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(500));
            }
        }
        4 => {
            if let Some(standby) = patroni.sync_standby() {
                patroni.kill_member(standby);
                thread::sleep(rng.millis(2000, 5000));
                patroni.start_member(standby);
            }
        }
        _ => {
            patroni.signal_etcd("-STOP");
            thread::sleep(rng.millis(2000, 6000));
            patroni.signal_etcd("-CONT");
        }
    }
}

/// pg_auto_failover's side of [`Managed::inject`]: the monitor finds a
/// node unhealthy once missed for 2 s (`common/auto_failover.rs`).
fn auto_failover_fault(formation: &mut AutoFailover, kind: usize, rng: &mut Rng) {
    let unhealthy = Duration::from_secs(3);
    let Some(primary) = formation.leader() else {
        return;
    };
    match kind {
        0 => formation.kill_postgres(primary),
        1 => {
            formation.kill_node(primary);
            thread::sleep(unhealthy + rng.millis(1000, 4000));
            formation.start_node(primary);
        }
        2 => {
            formation.signal_node(primary, "-STOP");
            thread::sleep(unhealthy + rng.millis(2000, 5000));
            formation.signal_node(primary, "-CONT");
        }
        3 => {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !formation.switchover() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(500));
            }
        }
        4 => {
            if let Some(secondary) = formation.secondary() {
                formation.kill_node(secondary);
                thread::sleep(rng.millis(2000, 5000));
                formation.start_node(secondary);
            }
        }
        _ => {
            formation.signal_monitor("-STOP");
            thread::sleep(rng.millis(2000, 6000));
            formation.signal_monitor("-CONT");
        }
    }
}
