//! The campaign's processes: a worker ("host") or the owner, each this test
//! binary re-executed with its role in the environment, reaching the
//! server through its own proxy. Each writes its history to a file of its
//! own, one numbered record per line (`<n> <µs> <op> invoke …` before an
//! operation, `<n> <µs> <op> <outcome> …` after it, `<n> <µs> - <event> …`
//! for seals and decisions, and `- end <n>` as it ends), stamped with the
//! machine's wall clock, which every process of the campaign shares; the
//! parent reads them all back and checks them.
//!
//! **Chains** (issue 43). Each root Run `rK` is the head of a chain of Runs
//! of that root: `rK` hands off to `rK.1`, which hands off to `rK.2`, …, up
//! to `rK.`[`MAX_CHAIN`], which always finishes. A process lives the
//! promise of a durable handoff as a runtime does: when a claim answers
//! `HandedOff(pause)` (or its own handoff was acknowledged), it claims
//! `pause.intent.successor_run_id` under the same root and runs it — works,
//! then finishes it (one in four, and always at the chain's end) or hands it
//! off again. So chains end, and retention can retire them.
//!
//! A **worker** loops until told to stop (`stop` on stdin): it picks a root
//! of the current window (the roots every process picks from move on every
//! [`WINDOW`]), and drives its chain from the head: it claims each Run,
//! follows each durable pause to its successor, and works the first Run it
//! owns (holding its epoch a while: the window in which a pause, a
//! partition or another process's claim turns it into a zombie), then hands
//! it off through a real gate (`append_then_seal_async` under its epoch,
//! `wait()` on the requester's side) and goes on with the successor, or
//! finishes it (`finish_then_close_async`).
//!
//! The **owner** is the wrong failure detector and the runtime's sweeper:
//! between its steps it claims roots of the window at random (taking them
//! over from live workers); it sweeps the roots of older windows in order,
//! driving each chain as a worker would (so a successor whose worker died
//! is claimed and run) and retiring half the roots whose chain ended by
//! name; it retires roots of older windows at random (which a zombie may
//! still be working on, or whose chain may still be open: `RunOpen`), and
//! now and then a root nobody claimed yet (`NothingToRetire`) — §6.1,
//! R8–R10, G1, G5. And its clean-up retires through the bulk form (issue
//! 43): every other step it runs one batch of retention by age
//! (`retire_ended_async` of the work that ended up to 3 s ago, 8 to 32
//! roots looked at), walking the cursor and starting again when a pass
//! ends, racing everything else, zombies included; each batch is one
//! operation of its history, its completion listing the roots it retired.
//! Told `decide`, it ends every chain of the campaign — claims each Run
//! from the head, finishes the first one open — and says `done`.
//!
//! Under `BATON_FAULT_UNFENCED=1` the workers append through a store with
//! fencing disabled (the test-only switch): the same row lock and
//! one-pause-per-Run key, but no epoch check; they neither finish nor
//! follow, and the owner neither retires nor sweeps. Under
//! `BATON_FAULT_RETENTION=broken` (the broken-retention control) the
//! owner's clean-up retires roots by SQL directly under the old rule (every
//! Run the log holds is final, successors ignored), and workers do not
//! follow their handoffs, so a retired root's successor is still unclaimed
//! (the owner's sweeps, the real store's rule, run as in the campaign).
//!
//! Under `BATON_FAULT_GROUP=1` (the parent sets it for every other
//! worker) the process's log has group commit of one slot, and a worker
//! drives [`GROUP_LANES`] chains at once on it, so that its claims,
//! appends and finishes of different roots wait for each other and are
//! sent in batches, under every fault of the campaign.

use std::cell::RefCell;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::durable::tokio_postgres::NoTls;
use baton::durable::{PostgresLog, PostgresOptions, SweepCursor};
use baton::{HandoffIntent, Invocation};

use super::{Rng, WINDOW, WINDOW_RUNS, env, var};
use crate::common::{execution, pause_for};

mod drive;
mod transcript;

use drive::{Chain, Claimed, Modes, Proc};
use transcript::{History, say, say_end};

type Log = PostgresLog<baton::HandoffExecution>;

/// A chain's last Run (its index): it always finishes.
pub const MAX_CHAIN: u64 = 3;

/// The owner decides the roots in this many lanes at once.
const DECIDE_LANES: u64 = 4;

/// A worker under group commit drives this many chains at once.
const GROUP_LANES: u64 = 3;

/// The wall clock in µs since the epoch: every process's history shares it.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The root Run `k` (the head of its chain).
pub fn run_name(k: u64) -> String {
    format!("r{k}")
}

/// The root of the Run `run` (`rK` for `rK` and `rK.i`).
pub fn root_of(run: &str) -> &str {
    run.split_once('.').map_or(run, |(root, _)| root)
}

/// The index of `run` in its chain (0 for the root).
pub fn chain_index(run: &str) -> u64 {
    run.split_once('.')
        .and_then(|(_, i)| i.parse().ok())
        .unwrap_or(0)
}

/// The successor a handoff of `run` names.
pub fn successor_of(run: &str) -> String {
    format!("{}.{}", root_of(run), chain_index(run) + 1)
}

/// A digest of a value's JSON encoding (re-encoded through
/// `serde_json::Value`), the same in every process of the campaign: what
/// the checker compares for G2 (what was acknowledged reads back equal).
pub fn digest<T: serde::Serialize>(value: &T) -> String {
    let json = serde_json::to_value(value).map_or_else(|e| e.to_string(), |v| v.to_string());
    let mut hasher = DefaultHasher::new();
    json.hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

fn source(run: &str) -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: run.into(),
        invocation_id: format!("{run}-invocation"),
    }
}

fn intent(run: &str, pause_id: &str, host: &str) -> HandoffIntent {
    let successor = successor_of(run);
    HandoffIntent {
        handoff_id: pause_id.into(),
        host_epoch: host.into(),
        root_run_id: root_of(run).into(),
        successor_invocation_id: format!("{successor}-invocation"),
        successor_run_id: successor,
        claim_id: "claim".into(),
    }
}

/// The entry of a child process: `role` is `worker` or `owner`.
pub fn main(role: &str) {
    let url = var("BATON_FAULT_URL");
    let name = var("BATON_FAULT_PROC");
    let t0: u64 = var("BATON_FAULT_T0").parse().expect("T0");
    let modes = Modes {
        unfenced: env("BATON_FAULT_UNFENCED").is_some_and(|v| v == "1"),
        broken: env("BATON_FAULT_RETENTION").is_some_and(|v| v == "broken"),
    };
    let mut rng = Rng(var("BATON_FAULT_SEED").parse::<u64>().expect("seed") ^ now_us());
    let stop = Arc::new(AtomicBool::new(false));
    let decide = Arc::new(std::sync::Mutex::new(None::<u64>));
    {
        let (stop, decide) = (Arc::clone(&stop), Arc::clone(&decide));
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if line == "stop" {
                    stop.store(true, Ordering::SeqCst);
                } else if let Some(runs) = line.strip_prefix("decide ") {
                    *decide.lock().unwrap() = runs.parse().ok();
                }
            }
            stop.store(true, Ordering::SeqCst);
        });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let log = connect(&url).await;
        let p = Proc {
            log,
            url,
            raw: RefCell::new(None),
            history: History::new(),
            name,
            modes,
        };
        let window = || (now_us().saturating_sub(t0)) / WINDOW.as_micros() as u64;
        match role {
            "worker" => {
                let lanes = if grouped() { GROUP_LANES } else { 1 };
                let (p, stop) = (&p, &stop);
                let lane = |lane: u64| async move {
                    if lane < lanes {
                        let rng = Rng(rng.0 ^ lane.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                        work(p, stop, rng, window).await;
                    }
                };
                // What the group commit sent so far, every second (the
                // parent sums each process's last record).
                let counts = async {
                    while !stop.load(Ordering::SeqCst) {
                        if let Some(sent) = p.log.group_commits() {
                            say(&format!(
                                "- grouped {} {} {} {}",
                                sent.batches, sent.writes, sent.rolled_back, sent.unknown
                            ));
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                };
                tokio::join!(lane(0), lane(1), lane(2), counts);
            }
            "owner" => {
                let mut sweep = 0;
                // Retention by age: a cursor walk of `retire_ended_async`
                // batches, started again once a pass ends.
                let mut cursor: Option<SweepCursor> = None;
                let runs = loop {
                    if let Some(runs) = *decide.lock().unwrap() {
                        break runs;
                    }
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    // The wrong failure detector: takes a root of the window
                    // over from whoever works it.
                    if rng.below(2) == 0 {
                        let root = run_name(window() * WINDOW_RUNS + rng.below(WINDOW_RUNS));
                        let claimed = p.claim(&root).await;
                        // ... and, now and then, retention races it: the
                        // root the owner just took over (RunOpen naming
                        // it), or whose handoff it just read while the
                        // successor is likely still worked on (RunOpen
                        // naming the successor).
                        let racing = matches!(claimed, Claimed::Owner(_) | Claimed::HandedOff(_));
                        if racing && !modes.unfenced && !modes.broken && rng.below(3) == 0 {
                            p.retire(&root).await;
                        }
                    }
                    if modes.unfenced {
                        tokio::time::sleep(Duration::from_millis(100 + rng.below(400))).await;
                        continue;
                    }
                    // The sweep: the next root two or more windows old; its
                    // chain driven (a successor nobody claimed is claimed
                    // and run), then retired once ended. Under the broken
                    // retention the owner neither follows nor waits.
                    if sweep < window().saturating_sub(1) * WINDOW_RUNS {
                        let root = run_name(sweep);
                        sweep += 1;
                        let chain = p.drive(&mut rng, &root, !modes.broken, false).await;
                        // Half the ended chains retired by name; the
                        // others are left to the sweeps (SPEC §6.1,
                        // retention by age).
                        if (chain == Chain::Ended && rng.below(2) == 0) || modes.broken {
                            p.retire(&root).await;
                        }
                        // Under the broken retention, the successor's host
                        // (here the owner, as a runtime would dispatch it)
                        // comes to claim it after the clean-up.
                        if modes.broken {
                            p.drive(&mut rng, &successor_of(&root), true, false).await;
                        }
                    }
                    // Retention by age (issue 43: the owner's clean-up
                    // retires through the bulk form): one batch of a
                    // sweep of the work that ended up to 3 s ago, racing
                    // the workers, the zombies, and the owner's own
                    // retirements by name.
                    if rng.below(2) == 0 {
                        let age = Duration::from_millis(rng.below(3000));
                        let limit = 8 + rng.below(25) as usize;
                        p.sweep(&mut cursor, age, limit).await;
                    }
                    // Retention at random: a root two or more windows old
                    // (a zombie may work on it), or one of the previous or
                    // the current window (its chain likely still open:
                    // RunOpen)...
                    if window() >= 2 && rng.below(3) == 0 {
                        let recent = (window() - 1) * WINDOW_RUNS;
                        let k = if rng.below(2) == 0 {
                            rng.below(recent)
                        } else {
                            recent + rng.below(2 * WINDOW_RUNS)
                        };
                        p.retire(&run_name(k)).await;
                    }
                    // ... and, now and then, a root nobody claimed yet: the
                    // log holds nothing for it, its work has not ended.
                    if !modes.broken && rng.below(10) == 0 {
                        let ahead = (window() + 10) * WINDOW_RUNS + rng.below(WINDOW_RUNS);
                        p.retire(&run_name(ahead)).await;
                    }
                    tokio::time::sleep(Duration::from_millis(20 + rng.below(100))).await;
                };
                // Every chain of the campaign ended: each Run claimed from
                // the head, the first one open finished by the owner; in
                // [`DECIDE_LANES`] lanes at once (a runtime's hosts decide
                // their Runs side by side), on the log's pool.
                let p = &p;
                let lane = |lane: u64| async move {
                    let mut rng = Rng(lane ^ now_us());
                    for k in (lane..runs).step_by(DECIDE_LANES as usize) {
                        let root = run_name(k);
                        while p.drive(&mut rng, &root, true, true).await == Chain::Open {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        say(&format!("- decided {root}"));
                    }
                };
                tokio::join!(lane(0), lane(1), lane(2), lane(3));
                say("- done");
                // Wait to be told to go, so the parent reads everything.
                while !stop.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            other => panic!("unknown role {other}"),
        }
    });
    say_end();
}

/// A worker's lane, until told to stop: a root of the current window
/// each time, its chain driven from the head.
async fn work(p: &Proc, stop: &AtomicBool, mut rng: Rng, window: impl Fn() -> u64) {
    while !stop.load(Ordering::SeqCst) {
        let root = run_name(window() * WINDOW_RUNS + rng.below(WINDOW_RUNS));
        if p.modes.unfenced {
            if let Claimed::Owner(epoch) = p.claim(&root).await {
                let work = 20 + rng.below(180);
                tokio::time::sleep(Duration::from_millis(work)).await;
                let pause_id = format!("{}-{root}-e{epoch}", p.name);
                let pause = pause_for(intent(&root, &pause_id, &p.name));
                p.unfenced_hand_off(&root, epoch, &pause).await;
            }
        } else {
            // A worker under the broken retention hands off and moves on
            // (as the campaign did before issue 43), leaving the successor
            // to the owner.
            let follow = !p.modes.broken;
            p.drive(&mut rng, &root, follow, false).await;
        }
        tokio::time::sleep(Duration::from_millis(5 + rng.below(30))).await;
    }
}

/// Whether this process's log has group commit (`BATON_FAULT_GROUP=1`).
fn grouped() -> bool {
    env("BATON_FAULT_GROUP").is_some_and(|v| v == "1")
}

async fn connect(url: &str) -> Log {
    loop {
        let config = url.parse().expect("a connection string");
        // The guide's configuration for every promise across a manager's
        // failover (issue 58): a synchronous standby required at every
        // write.
        let required = env("BATON_FAULT_REQUIRE_STANDBY").is_some_and(|v| v == "1");
        let options = PostgresOptions::new()
            .timeout(Duration::from_secs(2))
            .require_synchronous_standby(required)
            .group_commit(usize::from(grouped()));
        match PostgresLog::connect_with(config, NoTls, options).await {
            Ok(log) => return log,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The outcome a finish records: the execution, with the finish's id as
/// its one loaded tool, so the server's row says whose finish it is.
fn outcome(id: &str) -> baton::HandoffExecution {
    let mut outcome = execution();
    outcome.tools.loaded = vec![id.to_owned()];
    outcome
}

/// The id [`outcome`] put in `outcome`.
pub fn outcome_id(outcome: &baton::HandoffExecution) -> &str {
    outcome.tools.loaded.first().map_or("?", String::as_str)
}
