//! Issue 23's fault-injection test, in the spirit of Jepsen: real
//! processes, real faults, a recorded history, a checker (SPEC §6).
//!
//! Three worker processes ("hosts") and an owner process — this test binary
//! re-executed with a role (`child.rs`) — each reach a throwaway PostgreSQL
//! server through a loopback TCP proxy of its own that the test controls
//! (`common/proxy.rs`). While they drive chains of Runs — claim a Run, work,
//! hand it off to its successor and claim and run that one in turn, or
//! finish it (issue 43: a durable handoff reaches its successor, G1) — the
//! owner meanwhile taking Runs over as a wrong failure detector would,
//! sweeping older chains (claiming the successors nobody claimed) and
//! retiring their roots once ended, retiring roots at random, and running
//! retention by age in batches (`retire_ended_async`, a cursor walk), the
//! test injects faults at random times, drawn from a printed seed:
//!
//! - **partition** a process from the server: its proxy drops every
//!   connection, or blackholes them (bytes held both ways), then heals;
//! - **pause** a worker (SIGSTOP, then SIGCONT): it wakes a zombie;
//! - **kill** a worker (SIGKILL) and start a new one in its place;
//! - **crash** the server: `pg_ctl -m immediate`, or SIGKILL of the
//!   postmaster, then restart it;
//! - **lose the reply** to a commit (the proxy forwards the COMMIT and
//!   closes the connection before the answer);
//! - **delay** a process's traffic.
//!
//! Then the faults stop: the workers are told to stop, the owner ends every
//! chain of the campaign (R5: each root decided within [`DECIDE_EACH`] of
//! the one before, all within [`DECIDE_BOUND`]), the test reads the
//! server's facts back (every pause and outcome decoded), and the checker
//! (`checker.rs`) verifies R1–R10 and G1–G5 over the whole history against
//! them: no acknowledged write lost across the crashes, every one read
//! back equal, no successor of a durable pause refused before it was
//! final, no root retired before its work ended. A sweep's batch is an
//! operation, and each root its answer names an acknowledged retirement of
//! that root, checked as one by name is; a batch with no answer names none
//! and may have retired any. It prints the operations, the faults by kind,
//! the Runs decided, the chains, the retirements (by name, and by the
//! sweeps: batches, roots, passes completed) and every anomaly (there must
//! be none).
//!
//! **Read whole, judged twice** (issue 50). Each process writes its
//! records to a file of its own, numbered, and counts them in a trailer as
//! it ends; the parent reads each back whole (`history::read_transcript`),
//! and any record lost, cut or miscounted fails the campaign. The history
//! is then judged by two checkers that share no code: ours, rule by rule
//! (`checker.rs`, and `answers.rs` for every answer's kind), and a
//! linearizability check of each root's history against a sequential
//! specification of the log written from SPEC's tables (`spec.rs`,
//! searched by stateright's `LinearizabilityTester`: `linearizable.rs`).
//! Every campaign fails unless both flag the same roots (ours counting
//! only its anomalies about the log's answers). The histories and the
//! final read-back are kept under `target/tmp/postgres_faults/`;
//! [`replay_a_kept_campaign`] judges one again.
//!
//! Two controls must be caught (their tests pass only if the checkers
//! report anomalies): the same campaign against a store with fencing
//! disabled (a test-only switch of the workers, `BATON_FAULT_UNFENCED`),
//! and one whose retention is broken the old way (`BATON_FAULT_RETENTION`:
//! the owner retires roots by SQL once every Run the log holds is final,
//! while a durable pause's successor is still unclaimed: G1, G5).
//!
//! Three more campaigns fail over (issue 49): the server has a standby,
//! each process reaches both through one multi-host config, and halfway
//! through the faults the primary is killed and the standby promoted. To
//! a synchronous standby, the checker must find nothing; to an
//! asynchronous one that stopped receiving a quarter of the way in, it
//! must name the acknowledged writes lost and find no epoch answered
//! twice — and must find some with epochs as before issue 49 (a control).
//!
//! Two more run on Citus (issue 57): a coordinator and two workers, the
//! tables distributed by root Run, every process's log on the coordinator
//! through its proxy, each crash hitting a node drawn from the three. The
//! checkers must find nothing — and must find epochs answered twice when
//! Citus's catalog is hidden from the log's sessions, so that it sends
//! one server's statements to the distributed tables (a control).
//!
//! **Seeds.** Every campaign draws a fresh seed each run (the clock's
//! microseconds) and prints it first, so CI explores a new fault schedule
//! on every commit and a red run is replayed from its log:
//! `BATON_FAULT_SEED` replays a seed's fault schedule (the processes'
//! timing still varies); `BATON_FAULT_SECONDS` sets how long faults are
//! injected (default 120 s; a longer campaign: set it higher), and
//! `BATON_FAULT_FAILOVER_SECONDS` the failover campaigns' (default 30 s),
//! `BATON_FAULT_CITUS_SECONDS` the Citus campaign's (default 30 s),
//! `BATON_FAULT_CONTROL_SECONDS` the unfenced and broken-retention
//! controls' (default 20 s). `scripts/campaign-sweep` runs the campaign
//! and its controls on many fresh seeds, tabulates both checkers'
//! verdicts per seed and keeps every history; `BATON_FAULT_REPLAY` on the
//! directory it prints judges them all again with the checkers as they
//! are now (a disagreement or a wrong verdict fails).

#![cfg(all(unix, feature = "postgres"))]

#[path = "../common/mod.rs"]
mod common;

mod answers;
mod campaigns;
mod checker;
mod checker_tests;
mod child;
mod differential;
mod figures;
mod history;
mod judge;
mod linearizable;
mod managers;
mod spec;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use baton::durable::PostgresSchema;
use common::citus::{self, Citus};
use common::postgres::{Cluster, multi_host};
use common::proxy::{Mode, Proxy};
use figures::Figures;
use judge::{Started, TRUTH, kept};
use managers::{Managed, Manager};

/// The Runs processes pick from move on this often...
pub const WINDOW: Duration = Duration::from_secs(1);
/// ...and there are this many in each window: few, so that claims collide.
pub const WINDOW_RUNS: u64 = 8;
/// R5: once the faults stop, the owner decides every Run, each within
/// this of the one before (or of the faults' end, for the first)...
const DECIDE_EACH: Duration = Duration::from_secs(10);
/// ...and all of them within this.
const DECIDE_BOUND: Duration = Duration::from_secs(240);
const WORKERS: usize = 3;
/// The kinds of fault (see the module's docs).
const KINDS: u64 = 8;

pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub fn var(name: &str) -> String {
    env(name).unwrap_or_else(|| panic!("{name} is not set"))
}

/// SplitMix64: the schedule's randomness, replayable from the seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.draw() % n.max(1)
    }
    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from))
    }
}

/// Past libtest's capture, so a passing run shows it too.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr(), "postgres_faults: {line}");
}

/// The child processes' entry: does nothing in a normal test run.
#[test]
fn fault_child() {
    if let Some(role) = env("BATON_FAULT_ROLE") {
        child::main(&role);
    }
}

/// A campaign's process: a worker or the owner, in its proxy's slot.
struct Process {
    name: String,
    child: Child,
    stdin: ChildStdin,
    /// Its history file.
    history: PathBuf,
}

impl Process {
    /// Starts it, writing its history to a file of its own in `histories`.
    fn spawn(role: &str, name: &str, url: &str, env: &[(&str, String)], histories: &Path) -> Self {
        let history = histories.join(format!("{name}.history"));
        let mut command = Command::new(std::env::current_exe().expect("the test binary"));
        command
            .args(["--exact", "fault_child", "--nocapture", "--test-threads=1"])
            .env("BATON_FAULT_ROLE", role)
            .env("BATON_FAULT_PROC", name)
            .env("BATON_FAULT_URL", url)
            .env("BATON_FAULT_HISTORY", &history)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = command.spawn().expect("a campaign process");
        let stdin = child.stdin.take().expect("its stdin");
        Process {
            name: name.to_owned(),
            child,
            stdin,
            history,
        }
    }

    fn tell(&mut self, what: &str) {
        let _ = writeln!(self.stdin, "{what}");
        let _ = self.stdin.flush();
    }

    fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status();
    }

    /// Waits for it to exit, at most `bound`, then kills it.
    fn end(mut self, bound: Duration) {
        let deadline = Instant::now() + bound;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Which campaign: the real one, or a control the checker must catch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Control {
    None,
    /// Fencing disabled.
    Unfenced,
    /// Retention by SQL under the old rule.
    BrokenRetention,
    /// Epochs as before issue 49, restarting from the surviving row after
    /// a failover: the log's sessions are shown timeline 1 always (a
    /// `pg_walfile_name` of the control's own, first on their
    /// `search_path`), so every claim's floor is 0.
    NoFloor,
    /// Citus's catalog hidden from the log's sessions (a `pg_extension`
    /// of the control's own, first on their `search_path`, without
    /// `citus`): the log takes its distributed tables for one server's
    /// and sends the one-server statements.
    NoCitus,
}

/// What the campaign's processes reach: one server (which may fail over),
/// or a Citus coordinator and two workers, the tables distributed by root
/// Run (issue 57).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Servers {
    One(Failover),
    Citus,
    /// Run by a high-availability manager, which fails over by itself
    /// (issue 58; `managers.rs`).
    Managed(Manager),
}

fn campaign(name: &str, control: Control, seconds: u64) -> Option<Figures> {
    campaign_on(name, control, seconds, Failover::None)
}

/// [`campaign`] on one server, failing over as `failover` says.
fn campaign_on(name: &str, control: Control, seconds: u64, failover: Failover) -> Option<Figures> {
    campaign_over(name, control, seconds, Servers::One(failover))
}

/// A process's config: its proxies, one per server, in one multi-host
/// config that opens on the server accepting writes.
fn via(proxies: &[Proxy], dbname: &str) -> String {
    let ports: Vec<u16> = proxies.iter().map(Proxy::port).collect();
    multi_host(&ports, dbname)
}

/// A connection of the test's own to `url`.
async fn connect(url: &str) -> baton::durable::tokio_postgres::Client {
    use baton::durable::tokio_postgres;
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the primary");
    tokio::spawn(connection);
    client
}

/// Sets every proxy of a process to `mode`.
fn set(proxies: &[Proxy], mode: Mode) {
    for proxy in proxies {
        proxy.set(mode);
    }
}

/// Whether, and to what, a campaign fails over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Failover {
    None,
    /// To a synchronous standby: nothing acknowledged is lost.
    Synchronous,
    /// To an asynchronous standby that stopped receiving a quarter of the
    /// faults' time before: what the primary acknowledged since is lost.
    AsynchronousBehind,
}

/// [`campaign`]; with a `failover`, the server has a standby, and halfway
/// through the faults the primary's postmaster is killed (SIGKILL) and the
/// standby promoted. Each process reaches both through one multi-host
/// config (`target_session_attrs=read-write`, a proxy to each server, a
/// partition or a delay of the process applying to both), so it goes on
/// with the new primary by itself, and the faults that follow crash it.
/// On Citus the processes reach the coordinator, the tables are
/// distributed by the operator's step, and each crash hits a node drawn
/// from the coordinator and the workers.
fn campaign_over(name: &str, control: Control, seconds: u64, servers: Servers) -> Option<Figures> {
    let failover = match servers {
        Servers::One(failover) => failover,
        Servers::Citus | Servers::Managed(_) => Failover::None,
    };
    let citus = match servers {
        Servers::Citus => Some(Citus::start()?),
        Servers::One(_) | Servers::Managed(_) => None,
    };
    let mut managed = match servers {
        Servers::Managed(manager) => Some(Managed::start(manager)?),
        Servers::One(_) | Servers::Citus => None,
    };
    let single = match (&citus, &managed) {
        (None, None) => Some(Cluster::start()?),
        _ => None,
    };
    // The server the test controls (none under a manager).
    let first: Option<&Cluster> = match (&citus, &single) {
        (Some(citus), _) => Some(citus.coordinator()),
        (None, Some(single)) => Some(single),
        (None, None) => None,
    };
    // The nodes a crash may hit (besides the primary of one server).
    let nodes: Vec<&Cluster> = citus
        .iter()
        .flat_map(|citus| std::iter::once(citus.coordinator()).chain(citus.workers()))
        .collect();
    let seed = env("BATON_FAULT_SEED")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(child::now_us);
    report(&format!(
        "{name}: seed {seed} (replay with BATON_FAULT_SEED={seed}), {seconds} s of faults"
    ));
    let mut rng = Rng(seed);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dbname = match (&citus, &managed, first) {
        (Some(_), _, _) => citus::DATABASE.to_owned(),
        (None, Some(managed), _) => runtime.block_on(managed.database()),
        (None, None, Some(first)) => runtime.block_on(first.database()),
        (None, None, None) => unreachable!(),
    };
    let standby = match (failover, first) {
        (Failover::Synchronous, Some(first)) => Some(runtime.block_on(first.synchronous_standby())),
        (Failover::AsynchronousBehind, Some(first)) => Some(first.standby()),
        _ => None,
    };
    // The primary now: the first server, then the promoted standby.
    let mut cluster = first;
    // The test's own way to the primary now: its URL.
    let primary = |cluster: Option<&Cluster>, managed: &Option<Managed>| match (cluster, managed) {
        (_, Some(managed)) => managed.url(&dbname),
        (Some(cluster), None) => cluster.url(&dbname),
        (None, None) => unreachable!(),
    };
    let admin_url = primary(cluster, &managed);
    runtime.block_on(async {
        let admin = connect(&admin_url).await;
        PostgresSchema::search_path()
            .migrate(&admin)
            .await
            .expect("the schema");
        if citus.is_some() {
            PostgresSchema::search_path()
                .distribute(&admin)
                .await
                .expect("the tables distributed");
        }
        if control == Control::NoCitus {
            admin
                .batch_execute(&format!(
                    "CREATE SCHEMA no_citus; \
                     CREATE VIEW no_citus.pg_extension AS \
                         SELECT * FROM pg_catalog.pg_extension WHERE extname <> 'citus'; \
                     ALTER DATABASE \"{dbname}\" SET search_path = no_citus, pg_catalog, public"
                ))
                .await
                .expect("the control's catalog");
        }
        if control == Control::NoFloor {
            admin
                .batch_execute(&format!(
                    "CREATE SCHEMA timeline_one; \
                     CREATE FUNCTION timeline_one.pg_walfile_name(pg_lsn) RETURNS text \
                         LANGUAGE sql AS $$ SELECT '00000001' || \
                         substr(pg_catalog.pg_walfile_name($1), 9) $$; \
                     ALTER DATABASE \"{dbname}\" SET search_path = timeline_one, pg_catalog, public"
                ))
                .await
                .expect("the control's timeline");
        }
    });
    // Each process's history, in a file of its own; kept after the test
    // for `BATON_FAULT_REPLAY` (see `replay_a_kept_campaign`).
    let histories = kept(name, seed);
    let started: RefCell<Started> = RefCell::default();
    // Each process's way to the servers: a proxy to the primary, and with
    // a standby one to it too, both in its one multi-host config.
    let servers: Vec<u16> = match (&managed, first) {
        (Some(managed), _) => managed.ports(),
        (None, Some(first)) => std::iter::once(first.port())
            .chain(standby.as_ref().map(Cluster::port))
            .collect(),
        (None, None) => unreachable!(),
    };
    let proxies: Vec<Vec<Proxy>> = (0..=WORKERS)
        .map(|_| servers.iter().map(|port| Proxy::start(*port)).collect())
        .collect();
    // The proxy of a slot to the primary now (the standby's, once it is
    // promoted).
    let mut leading = 0;
    let t0 = child::now_us();
    let shared_env = vec![
        ("BATON_FAULT_T0", t0.to_string()),
        ("BATON_FAULT_SEED", seed.to_string()),
        (
            "BATON_FAULT_UNFENCED",
            if control == Control::Unfenced {
                "1"
            } else {
                "0"
            }
            .to_owned(),
        ),
        (
            "BATON_FAULT_REQUIRE_STANDBY",
            if managed.is_some() { "1" } else { "0" }.to_owned(),
        ),
        (
            "BATON_FAULT_RETENTION",
            if control == Control::BrokenRetention {
                "broken"
            } else {
                "rule"
            }
            .to_owned(),
        ),
    ];
    let spawn = |role: &str, slot: usize, incarnation: usize| {
        // Every other worker's log has group commit, and drives several
        // chains at once (`child.rs`).
        let grouped = role == "worker" && slot % 2 == 1;
        let mut env = shared_env.clone();
        env.push((
            "BATON_FAULT_GROUP",
            if grouped { "1" } else { "0" }.to_owned(),
        ));
        let process = Process::spawn(
            role,
            &format!("{role}{slot}.{incarnation}"),
            &via(&proxies[slot], &dbname),
            &env,
            &histories,
        );
        let path = process.history.clone();
        started
            .borrow_mut()
            .insert(process.name.clone(), (path, false));
        process
    };
    let mut workers: Vec<Process> = (0..WORKERS).map(|slot| spawn("worker", slot, 0)).collect();
    let mut incarnations = [0; WORKERS];
    let mut owner = spawn("owner", WORKERS, 0);

    let mut faults: BTreeMap<&'static str, usize> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut failover_at = standby
        .as_ref()
        .map(|standby| (Instant::now() + Duration::from_secs(seconds / 2), standby));
    let mut behind_at = (failover == Failover::AsynchronousBehind)
        .then(|| Instant::now() + Duration::from_secs(seconds / 4));
    // The kinds in rounds, each kind once per round in a random order, so
    // every kind is injected once there have been as many faults as kinds.
    let mut round: Vec<u64> = Vec::new();
    let mut manager_faults: Vec<usize> = Vec::new();
    let mut injected: Vec<managers::Injected> = Vec::new();
    while Instant::now() < deadline {
        thread::sleep(rng.millis(300, 2000));
        if behind_at.take_if(|at| Instant::now() >= *at).is_some() {
            // The asynchronous standby stops receiving: what the primary
            // acknowledges from now on is lost at the failover.
            if let Some(standby) = &standby {
                standby.stop();
            }
            report(&format!("{name}: the standby stopped receiving"));
        }
        if let Some((_, standby)) = failover_at.take_if(|(at, _)| Instant::now() >= *at) {
            cluster.expect("the primary").kill_postmaster();
            if failover == Failover::AsynchronousBehind {
                standby.restart();
            }
            standby.promote();
            cluster = Some(standby);
            leading = 1;
            report(&format!("{name}: failed over to the standby"));
            *faults
                .entry("failover (SIGKILL primary, promote its standby)")
                .or_default() += 1;
            continue;
        }
        if round.is_empty() {
            round = (0..KINDS).collect();
            for i in (1..round.len()).rev() {
                round.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        let slot = rng.below(WORKERS as u64 + 1) as usize;
        let worker = rng.below(WORKERS as u64) as usize;
        let kind_drawn = round.pop().unwrap_or(0);
        let kind = match kind_drawn {
            0 => {
                set(&proxies[slot], Mode::Drop);
                thread::sleep(rng.millis(500, 3000));
                set(&proxies[slot], Mode::Forward);
                "partition (drop)"
            }
            1 => {
                set(&proxies[slot], Mode::Blackhole);
                thread::sleep(rng.millis(500, 4000));
                set(&proxies[slot], Mode::Forward);
                "partition (blackhole)"
            }
            2 => {
                workers[worker].signal("-STOP");
                thread::sleep(rng.millis(300, 3000));
                workers[worker].signal("-CONT");
                "pause (SIGSTOP/SIGCONT)"
            }
            3 => {
                workers[worker].signal("-KILL");
                if let Some(entry) = started.borrow_mut().get_mut(&workers[worker].name) {
                    entry.1 = true;
                }
                incarnations[worker] += 1;
                let replaced = std::mem::replace(
                    &mut workers[worker],
                    spawn("worker", worker, incarnations[worker]),
                );
                replaced.end(Duration::from_secs(5));
                "kill a worker (SIGKILL)"
            }
            4 | 5 if managed.is_some() => {
                // The manager's faults in a seed-drawn order, each kind
                // once before any twice.
                if manager_faults.is_empty() {
                    manager_faults = (0..managers::FAULTS.len()).collect();
                    for i in (1..manager_faults.len()).rev() {
                        manager_faults.swap(i, rng.below(i as u64 + 1) as usize);
                    }
                    // The campaign's first fault of the manager's makes it
                    // fail over (the leader's host killed or paused, or a
                    // switchover), however short the campaign.
                    if injected.is_empty() {
                        let last = manager_faults.len() - 1;
                        if let Some(at) = manager_faults
                            .iter()
                            .position(|kind| managers::FAILS_OVER.contains(kind))
                        {
                            manager_faults.swap(at, last);
                        }
                    }
                }
                let kind = manager_faults.pop().unwrap_or(0);
                let managed = managed.as_mut().expect("a manager");
                let done = managed.inject(kind, &mut rng);
                let taken_back = done.taken_back.as_ref().map_or(String::new(), |(paused, other)| {
                    format!(
                        " (the paused leader, {paused}, leads again: it took the leader key back \
                         from {other}, which held it while it was paused)"
                    )
                });
                report(&format!(
                    "{name}: {}{}{}{taken_back}",
                    done.kind,
                    if done.failed_over {
                        " (the leader changed)"
                    } else {
                        ""
                    },
                    if done.operator {
                        " (healed by the operator: Patroni's stale /sync key removed)"
                    } else {
                        ""
                    }
                ));
                let kind = done.kind;
                injected.push(done);
                kind
            }
            4 | 5 => {
                // One server's primary, or a Citus node (the coordinator
                // first in `nodes`).
                let hit = match nodes.len() {
                    0 => None,
                    n => Some(rng.below(n as u64) as usize),
                };
                let node = hit.map_or_else(|| cluster.expect("the primary"), |at| nodes[at]);
                let immediate = kind_drawn == 4;
                if immediate {
                    node.crash();
                } else {
                    node.kill_postmaster();
                }
                thread::sleep(rng.millis(200, 1500));
                node.restart();
                match (hit, immediate) {
                    (None, true) => "server crash (pg_ctl -m immediate)",
                    (None, false) => "server crash (SIGKILL postmaster)",
                    (Some(0), true) => "coordinator crash (pg_ctl -m immediate)",
                    (Some(0), false) => "coordinator crash (SIGKILL postmaster)",
                    (Some(_), true) => "worker crash (pg_ctl -m immediate)",
                    (Some(_), false) => "worker crash (SIGKILL postmaster)",
                }
            }
            6 => {
                if let Some(leader) = managed.as_ref().and_then(Managed::leader) {
                    leading = leader;
                }
                proxies[slot][leading].lose_next_commit_reply();
                "lost reply to a commit (armed)"
            }
            _ => {
                let delay = rng.millis(20, 200);
                for proxy in &proxies[slot] {
                    proxy.set_delay(delay);
                }
                set(&proxies[slot], Mode::Delay);
                thread::sleep(rng.millis(500, 3000));
                set(&proxies[slot], Mode::Forward);
                "delay"
            }
        };
        *faults.entry(kind).or_default() += 1;
    }

    // The faults stop: every proxy forwards, every process runs, the
    // server is up. Workers stop; the owner decides every Run.
    if let Some(managed) = &managed {
        managed.heal();
    }
    for slot in &proxies {
        set(slot, Mode::Forward);
    }
    let lost: u64 = proxies.iter().flatten().map(Proxy::lost_replies).sum();
    *faults
        .entry("lost reply to a commit (happened)")
        .or_default() += lost as usize;
    for worker in &mut workers {
        worker.tell("stop");
    }
    for worker in workers {
        worker.end(Duration::from_secs(10));
    }
    let runs = (child::now_us() - t0) / WINDOW.as_micros() as u64 * WINDOW_RUNS + WINDOW_RUNS;
    let stopped = Instant::now();
    let stopped_at = child::now_us();
    // A store that takes distributed tables for one server's cannot
    // decide its Runs (its claims answer epochs it has issued already, and
    // the owner's appends under them are refused): its control skips the
    // owner's deciding, and its Runs count undecided (R5).
    let decides = control != Control::NoCitus;
    if decides {
        owner.tell(&format!("decide {runs}"));
    }
    let done = || {
        std::fs::read_to_string(&owner.history)
            .unwrap_or_default()
            .ends_with(" - done\n")
    };
    while decides && !done() && stopped.elapsed() < DECIDE_BOUND {
        thread::sleep(Duration::from_millis(50));
    }
    let decide_time = stopped.elapsed();
    owner.tell("stop");
    let owner_name = owner.name.clone();
    owner.end(Duration::from_secs(5));

    // The final read-back of the facts: every pause and outcome decoded
    // as the store decodes it, and digested as its writer digested it (G2).
    let (truth, timelines) = runtime.block_on(async {
        let client = connect(&primary(cluster, &managed)).await;
        figures::read_back(&client, managed.is_some()).await
    });
    std::fs::write(histories.join(TRUTH), truth.to_text()).expect("the truth is kept");
    Some(figures::figures(
        name,
        figures::Ended {
            started: started.into_inner(),
            truth,
            timelines,
            runs,
            faults,
            injected,
            owner: owner_name,
            stopped_at,
            decide_time,
        },
    ))
}
