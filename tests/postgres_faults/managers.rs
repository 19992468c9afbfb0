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

use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::{Duration, Instant};

use baton::durable::{timeline_floor, tokio_postgres};

use super::Rng;
use super::child;
use super::history::{Kind, Op, Outcome};
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
    /// A paused leader that leads again once healed although another
    /// member held the leader key while it was paused: their names (it,
    /// that member). Patroni 3.0.2 did so over etcd's v3 API (see
    /// `common/patroni.rs`'s `config`).
    pub taken_back: Option<(String, String)>,
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
        let paused = match self {
            Managed::Patroni(patroni) => patroni_fault(patroni, kind, rng),
            Managed::AutoFailover(formation) => {
                auto_failover_fault(formation, kind, rng);
                None
            }
        };
        // A manager notices a fault within its loop (Patroni's
        // `loop_wait`, 1 s; the monitor's health checks, 0.5 s): whether
        // it is healed is asked only after that, or a dead postmaster
        // would be taken for a running one.
        thread::sleep(Duration::from_secs(2));
        self.heal();
        let leader = self.leader();
        Injected {
            at,
            healed: child::now_us(),
            kind: FAULTS[kind],
            failed_over: leader != before,
            operator: self.stale_sync_keys() > removed,
            taken_back: match (&*self, paused) {
                (Managed::Patroni(patroni), Some((paused, other))) if leader == Some(paused) => {
                    Some((
                        patroni.name(paused).to_owned(),
                        patroni.name(other).to_owned(),
                    ))
                }
                _ => None,
            },
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

/// Patroni's side of [`Managed::inject`]; for a paused leader, it and
/// the member that held the leader key while it was paused, if another
/// did.
fn patroni_fault(patroni: &mut Patroni, kind: usize, rng: &mut Rng) -> Option<(usize, usize)> {
    let lease = Duration::from_secs(TTL);
    let leader = patroni.leader()?;
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
            let until = Instant::now() + lease + rng.millis(5000, 8000);
            let mut successor = None;
            while Instant::now() < until {
                successor = patroni.leader_key().filter(|m| *m != leader).or(successor);
                thread::sleep(Duration::from_millis(200));
            }
            patroni.signal_member(leader, "-CONT");
            return successor.map(|successor| (leader, successor));
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
    None
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

/// The timeline an epoch was issued on: a claim on timeline `t` answers
/// above `timeline_floor(t)`, `(t − 1) · 2^40`, fewer than 2^40 claims of
/// one Run each (`timeline_of_inverts_timeline_floor` holds the two
/// together).
fn timeline_of(epoch: u64) -> u64 {
    (epoch >> 40) + 1
}

/// `timeline_of` answers `t` for every epoch a claim on timeline `t` can
/// answer: from just above `timeline_floor(t)` to just below the next
/// timeline's floor.
#[test]
fn timeline_of_inverts_timeline_floor() {
    for t in [1u32, 2, 3, 17, 1000] {
        let floor = timeline_floor(t).get();
        let next = timeline_floor(t + 1).get();
        assert_eq!(timeline_of(floor + 1), u64::from(t));
        assert_eq!(timeline_of(next - 1), u64::from(t));
        assert_eq!(timeline_of(next + 1), u64::from(t) + 1);
    }
}

/// The final primary's timeline and the timelines its history holds (the
/// parents its `.history` file lists, and its own); `None` for the
/// history if the file is not in its `pg_wal`.
pub async fn final_timelines(client: &tokio_postgres::Client) -> (u64, Option<BTreeSet<u64>>) {
    let row = client
        .query_one(
            "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint",
            &[],
        )
        .await
        .expect("the primary's timeline");
    let timeline = row.get::<_, i64>(0) as u64;
    if timeline == 1 {
        return (timeline, Some(BTreeSet::from([1])));
    }
    let row = client
        .query_one(
            "SELECT pg_read_file(format('pg_wal/%s.history', lpad(upper(to_hex($1::bigint)), 8, '0')), \
             0, 1048576, true)",
            &[&(timeline as i64)],
        )
        .await
        .expect("the primary's timeline history");
    let history = row.get::<_, Option<String>>(0).map(|text| {
        text.lines()
            .filter_map(|line| line.split_whitespace().next()?.parse().ok())
            .chain(std::iter::once(timeline))
            .collect()
    });
    (timeline, history)
}

/// Every timeline on which the log acknowledged an operation (a claim's
/// epoch, an append or a finish written under one) and which the final
/// primary's history does not hold, each said in one line: `manager`
/// abandoned it, and what was acknowledged on it is lost. Holding the
/// timeline is not enough for nothing to be lost (a write past the
/// switchpoint of a timeline that holds on is lost too; the checkers say
/// so write by write); not holding it is enough for everything on it to be.
pub fn abandoned_timelines(
    manager: &str,
    ops: &[Op],
    timeline: u64,
    history: &BTreeSet<u64>,
) -> Vec<String> {
    let mut acknowledged: BTreeMap<u64, usize> = BTreeMap::new();
    for op in ops {
        let epoch = match (&op.kind, &op.outcome) {
            (Kind::Claim { .. }, Outcome::Owner(epoch)) => *epoch,
            (Kind::Append { epoch, .. } | Kind::Finish { epoch, .. }, Outcome::Written) => *epoch,
            _ => continue,
        };
        *acknowledged.entry(timeline_of(epoch)).or_default() += 1;
    }
    acknowledged
        .into_iter()
        .filter(|(on, _)| !history.contains(on))
        .map(|(on, count)| {
            format!(
                "{manager} abandoned timeline {on}, on which {count} operations were \
                 acknowledged (claims answering epochs from {floor}, appends and finishes under \
                 them): the final primary is on timeline {timeline}, whose history holds \
                 timelines {history:?}",
                floor = timeline_floor(on as u32).get()
            )
        })
        .collect()
}

/// A timeline the final primary does not descend from is named once, with
/// how many operations were acknowledged on it; one it descends from, and
/// operations not acknowledged, are not.
#[test]
fn a_timeline_the_final_primary_does_not_descend_from_is_named_once() {
    let op = |kind: Kind, outcome: Outcome| Op {
        process: "owner3.0".to_owned(),
        kind,
        invoked: 0,
        completed: Some(1),
        outcome,
    };
    let claim = |outcome| {
        op(
            Kind::Claim {
                run: "r1".to_owned(),
            },
            outcome,
        )
    };
    let append = |epoch, outcome| {
        op(
            Kind::Append {
                run: "r1".to_owned(),
                epoch,
                pause: "p".to_owned(),
                digest: "d".to_owned(),
                successor: "r1.1".to_owned(),
            },
            outcome,
        )
    };
    let (second, third) = ((1 << 40) + 1, (2 << 40) + 1);
    let ops = [
        claim(Outcome::Owner(1)),
        claim(Outcome::Owner(second)),
        claim(Outcome::Owner(third)),
        append(third, Outcome::Written),
        append(third, Outcome::Unknown),
    ];
    let history = BTreeSet::from([1, 2]);
    assert_eq!(
        abandoned_timelines("patroni", &ops, 2, &history),
        vec![format!(
            "patroni abandoned timeline 3, on which 2 operations were acknowledged (claims \
             answering epochs from {}, appends and finishes under them): the final primary is \
             on timeline 2, whose history holds timelines {{1, 2}}",
            2u64 << 40
        )]
    );
    assert!(abandoned_timelines("patroni", &ops, 3, &BTreeSet::from([1, 2, 3])).is_empty());
}
