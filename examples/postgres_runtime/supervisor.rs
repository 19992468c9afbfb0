//! The supervisor: starts the workers, hands out the chains' first Runs
//! and each successor once its handoff is sealed, and, when a host dies,
//! claims each Run it gave that host and acts on the log's answer. It
//! keeps only what it sent where; what happened to a Run it asks the log.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use baton::durable::{AsyncHandoffLog, Claim};
use tokio::sync::mpsc::unbounded_channel;

use super::hosts::{Heard, Hosts};
use super::protocol::{Line, Order, RunId, is_kill_point};
use super::{Failure, Log, retention};

/// How big a run of the runtime is.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Worker processes (hosts).
    pub workers: usize,
    /// Root Runs, each a chain of Runs.
    pub roots: usize,
    /// Whether the supervisor itself SIGKILLs `host-1` mid-run (at
    /// [`is_kill_point`]), to show a recovery.
    pub kill_one: bool,
}

/// The host `--kill-one` kills.
const VICTIM: &str = "host-1";

/// What the supervisor did after a death, for its summary.
#[derive(Debug, Default)]
pub struct Recovery {
    /// The hosts that died and how (`host-1 pid=… signal:9`).
    pub deaths: Vec<String>,
    /// The Runs resumed on a live host: `RUN@EPOCH`.
    pub resumed: Vec<String>,
    /// The dead hosts' Runs the log answered `HandedOff` for.
    pub handed_off: usize,
    /// Their successors dispatched only then (never dispatched before).
    pub successors: usize,
    /// The dead hosts' Runs the log answered `Finished` or `Retired` for.
    pub ended: usize,
}

/// The supervisor's state: its log, its hosts, where it sent each Run, and
/// which roots' chains ended.
struct Supervisor<'a> {
    log: &'a Log,
    hosts: Hosts,
    assigned: BTreeMap<RunId, usize>,
    ended: BTreeSet<String>,
    recovery: Recovery,
}

/// Runs the runtime of `plan` on `log` until every chain ended, then reads
/// the chains back, retires the ended roots and prints the summary.
pub async fn run(
    log: &Log,
    plan: Plan,
    worker_command: impl FnMut(&str) -> Command,
) -> Result<(), Failure> {
    let started = Instant::now();
    let (sender, mut heard) = unbounded_channel();
    let hosts = Hosts::start(plan.workers, worker_command, &sender)?;
    drop(sender);
    for index in 0..hosts.count() {
        Line::new("supervisor", "started")
            .with("host", hosts.name(index))
            .with("pid", hosts.pid(index))
            .print();
    }
    let mut supervisor = Supervisor {
        log,
        hosts,
        assigned: BTreeMap::new(),
        ended: BTreeSet::new(),
        recovery: Recovery::default(),
    };
    // Root names of this run alone: a database keeps earlier runs' roots.
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let roots: Vec<String> = (0..plan.roots).map(|k| format!("rt{stamp}-{k}")).collect();
    for root in &roots {
        supervisor.dispatch(Order::Run(RunId::first(root)))?;
    }
    let mut kill = plan.kill_one;
    while supervisor.ended.len() < roots.len() {
        match heard.recv().await.ok_or("every host is gone")? {
            Heard::Said(index, line) => {
                line.print();
                if kill && is_kill_point(&line, VICTIM) {
                    kill = false;
                    supervisor.hosts.kill(index)?;
                    Line::new("supervisor", "killed")
                        .with("host", VICTIM)
                        .print();
                }
                supervisor.on_line(&line)?;
            }
            Heard::Gone(index) => supervisor.recover(index).await?,
        }
    }
    supervisor.hosts.close()?;
    let chains = retention::read_chains(log, &roots).await?;
    let retired = retention::retire_ended(log, &roots).await?;
    let runs = chains.handoffs + chains.finishes;
    let recovery = &supervisor.recovery;
    println!(
        "summary: {} workers, {} roots, {runs} Runs: {} handoffs, {} finishes (read back from \
         the log)",
        plan.workers, plan.roots, chains.handoffs, chains.finishes
    );
    println!("summary: deaths {:?}", recovery.deaths);
    println!(
        "summary: after a death, resumed {:?}; already handed off {} (successors dispatched \
         then: {}); already ended {}",
        recovery.resumed, recovery.handed_off, recovery.successors, recovery.ended
    );
    println!("summary: {retired}");
    println!("summary: {:.1?}", started.elapsed());
    Ok(())
}

impl Supervisor<'_> {
    /// Sends `order` to the next live host, and notes where it went. A
    /// host that died meanwhile does not get it; its death's recovery
    /// claims the Run like every other Run it was given.
    fn dispatch(&mut self, order: Order) -> Result<(), Failure> {
        let index = self.hosts.next_live().ok_or("no live host left")?;
        self.assigned.insert(order.run().clone(), index);
        Line::new("supervisor", "sent")
            .with("host", self.hosts.name(index))
            .with("order", order.to_string().replace(' ', ":"))
            .print();
        if let Err(error) = self.hosts.send(index, &order) {
            eprintln!(
                "supervisor: {} did not take {order}: {error}",
                self.hosts.name(index)
            );
        }
        Ok(())
    }

    /// Acts on a host's line: a sealed handoff's successor is dispatched,
    /// a finish ends its root's chain.
    fn on_line(&mut self, line: &Line) -> Result<(), Failure> {
        let run = line.run("run");
        match (line.what.as_str(), run) {
            ("handed-off", Some(_)) => {
                let successor = line.run("to").ok_or("a handoff without a successor")?;
                if !self.assigned.contains_key(&successor) {
                    self.dispatch(Order::Run(successor))?;
                }
            }
            ("finished", Some(run)) => {
                self.ended.insert(run.root);
            }
            ("final", Some(run)) if line.get("answer") == Some("finished") => {
                self.ended.insert(run.root);
            }
            ("stopped", Some(run)) => {
                return Err(format!("{} stopped {run} (its stderr says why)", line.who).into());
            }
            _ => {}
        }
        Ok(())
    }

    /// Host `index` is gone: claims each Run it was given, in chain order,
    /// and does what the log answers. The claim's new epoch fences the
    /// dead host, should it only have been paused.
    async fn recover(&mut self, index: usize) -> Result<(), Failure> {
        let how = self.hosts.reap(index)?;
        let (name, pid) = (self.hosts.name(index).to_owned(), self.hosts.pid(index));
        Line::new("supervisor", "died")
            .with("host", &name)
            .with("pid", pid)
            .with("how", &how)
            .print();
        self.recovery.deaths.push(format!("{name} pid={pid} {how}"));
        let runs: Vec<RunId> = self
            .assigned
            .iter()
            .filter(|(_, host)| **host == index)
            .map(|(run, _)| run.clone())
            .collect();
        for run in runs {
            let claimed = self.log.claim_async(&run.root, &run.to_string()).await?;
            let line = Line::new("supervisor", "claimed").with("run", &run);
            match claimed {
                Claim::Owner(epoch) => {
                    // Open: resume it elsewhere, under the epoch just claimed.
                    self.recovery.resumed.push(format!("{run}@{epoch}"));
                    line.with("answer", "owner").with("epoch", epoch).print();
                    self.dispatch(Order::Resume(run, epoch))?;
                }
                Claim::HandedOff(pause) => {
                    // Final: never resume it; its successor must run.
                    let successor = RunId::parse(&pause.intent.successor_run_id)
                        .ok_or("a pause naming a Run of another shape")?;
                    let dispatched = !self.assigned.contains_key(&successor);
                    self.recovery.handed_off += 1;
                    self.recovery.successors += usize::from(dispatched);
                    line.with("answer", "handed-off")
                        .with("successor", &successor)
                        .with("dispatched-now", dispatched)
                        .print();
                    if dispatched {
                        self.dispatch(Order::Run(successor))?;
                    }
                }
                Claim::Finished(_) => {
                    self.recovery.ended += 1;
                    line.with("answer", "finished").print();
                    self.ended.insert(run.root);
                }
                Claim::Retired => {
                    self.recovery.ended += 1;
                    line.with("answer", "retired").print();
                }
            }
        }
        Ok(())
    }
}
