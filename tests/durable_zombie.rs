//! Issue 20, zombies with real processes (SPEC §6): a worker child is
//! **SIGSTOPped** at a random point, its owner takes the Run over and a new
//! worker runs, then the old one gets SIGCONT and goes on; some workers are
//! SIGKILLed instead. After every run the parent checks the SQLite file and
//! what each worker reported.
//!
//! The parent is the owner. It claims the Run and hands the epoch to the
//! worker it starts (`BATON_ZOMBIE_EPOCH`), as a runtime does: the owner,
//! not the worker, decides who holds which epoch, and the parent knows
//! worker A's epoch before A acts, so it can check what A wrote (R7) from
//! the pause row's `epoch` column.
//!
//! **Races decided by construction.** The child (this test binary
//! re-executed with `BATON_ZOMBIE_DB` set, filtered to
//! [`zombie_test_child_worker`]) reports each point it reaches on stdout
//! and then waits for the parent's `go` on stdin before its next step. The
//! parent signals it while it waits (and after SIGSTOP waits until `/proc`
//! shows the process stopped), so a stop or kill lands exactly between two
//! steps, never inside a SQLite transaction, and what was
//! durable at that moment is known: the pause is durable exactly when its
//! worker reported `appended`. A defect in fencing therefore fails every run
//! whose plan reaches it, not some runs depending on scheduling. (A stop
//! *inside* a transaction would hold SQLite's write lock, and the owner's
//! claim would wait for it; that is a liveness matter of a one-host store,
//! not tested here.)
//!
//! One run, from a fresh file:
//! 1. the owner claims (0–2 earlier claims first, so epochs vary) and
//!    starts worker A with epoch `a`;
//! 2. at a random point A is stopped (SIGSTOP), or killed, or left to
//!    finish;
//! 3. the owner claims again: `HandedOff` (A's append had landed: nobody
//!    continues the Run but the successor) or `Owner(b)`: worker B starts
//!    with `b` and finishes, or is killed at a random point, or is stopped
//!    at a random point while A goes on and resumed afterwards;
//! 4. A gets SIGCONT and goes on to its end.
//!
//! The points are those of `common::child::POINTS` (`opening` … `appended`,
//! `sealed`, `received`); at its append a fenced worker reports `fenced`,
//! any other refusal `append-failed`, and a worker whose `wait()` returned
//! `None` reports `closed`.
//!
//! Then: `PRAGMA integrity_check` is `ok`; the claim answered `HandedOff`
//! exactly when A had reported `appended`; a fenced A reports `fenced` and
//! a closed gate (`wait()` = `None`), never `appended`, `sealed` or
//! `received`, and no pause row carries its epoch (R7); "continued by
//! exactly one party" holds: at most one worker's append was acknowledged,
//! and the pause row, if any, is that worker's (its epoch and its own
//! handoff id), so an acknowledged append is never lost and nothing
//! unacknowledged is durable; every `received` (a `Some` from `wait()`) is
//! that durable pause (R2); the Run's epoch is the newest claimed; and a
//! final claim by the owner answers `HandedOff` with that pause or, if none
//! is durable, a newer epoch whose worker then hands the Run off once.
//!
//! Set `BATON_ZOMBIE_SEED` to replay a seed's plans (stop points, signals,
//! epochs: the whole run is decided by the seed), `BATON_ZOMBIE_RUNS` to
//! change the number of runs (default 300), `BATON_ZOMBIE_VERBOSE` to print
//! every run. The figures go to stderr past libtest's capture.
#![cfg(all(unix, feature = "sqlite"))]

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use baton::durable::{Claim, Decision, Epoch, HandoffLog, Receipt, SqliteLog, reconcile};
use common::child::{
    Campaign, POINTS, Reporting, Rng, Worker, hand_off, integrity_ok, open_log, pause_rows, report,
    report_distribution, say_point, tally,
};
use common::*;

const DB_VAR: &str = "BATON_ZOMBIE_DB";
const EPOCH_VAR: &str = "BATON_ZOMBIE_EPOCH";
const CHILD_TEST: &str = "zombie_test_child_worker";

/// Stop starting runs after this long, whatever the count.
const BUDGET: Duration = Duration::from_secs(150);
const MIN_RUNS: usize = 300;

/// The intent of the worker holding `epoch`: each worker's pause is its
/// own (a resumed Run makes its own handoff), so the pause row says whose
/// it is.
fn intent_of(epoch: Epoch) -> baton::HandoffIntent {
    intent_named(&format!("handoff-{epoch}"))
}

/// In the child: reports `name`, then waits for the parent's `go` (a line,
/// or the end of its stdin: released). In the parent, does nothing.
fn point(name: &str) {
    if std::env::var_os(DB_VAR).is_none() {
        return;
    }
    say_point(name);
    let mut go = String::new();
    let _ = std::io::stdin().read_line(&mut go);
}

/// The child process's worker; a no-op unless `BATON_ZOMBIE_DB` is set.
/// It holds the epoch its owner (the parent) claimed for it.
#[test]
fn zombie_test_child_worker() {
    let Some(db) = std::env::var_os(DB_VAR) else {
        return;
    };
    let epoch = Epoch::new(
        std::env::var(EPOCH_VAR)
            .ok()
            .and_then(|e| e.parse().ok())
            .expect("the owner gives the worker its epoch"),
    );
    let log = open_log(&db, point);
    let handoff = hand_off(
        &Reporting { log: &log, point },
        epoch,
        intent_of(epoch),
        point,
    );
    // What the requester got; the parent judges it against what the log
    // holds (the child reports, it does not assert, so a defect shows up
    // as the rule it breaks).
    match handoff.received {
        Some(received) if *received == pause_for(intent_of(epoch)) => point("received"),
        Some(other) => point(&format!("received another pause: {other:?}")),
        None => point("closed"),
    }
}

/// What the parent does to a worker.
#[derive(Clone, Copy, Debug)]
enum Fate {
    /// Leave it to finish.
    Finish,
    /// SIGSTOP it once it reported this point, and SIGCONT it later.
    Stop(&'static str),
    /// SIGKILL it once it reported this point.
    Kill(&'static str),
}

impl Fate {
    fn draw(rng: &mut Rng, finish_in: u64) -> Self {
        if rng.below(finish_in) == 0 {
            return Fate::Finish;
        }
        let point = *rng.pick(&POINTS);
        if rng.below(3) == 0 {
            Fate::Kill(point)
        } else {
            Fate::Stop(point)
        }
    }

    fn describe(self) -> String {
        match self {
            Fate::Finish => "never stopped".into(),
            Fate::Stop(point) => format!("stopped after {point}"),
            Fate::Kill(point) => format!("killed after {point}"),
        }
    }
}

/// A worker started on `db` with `epoch`, driven to its fate's point: for
/// `Stop`, stopped there (and returned, to be continued); for `Kill` and
/// `Finish`, ended (its points and exit are checked here).
fn start(db: &Path, epoch: Epoch, fate: Fate) -> (Worker, bool) {
    let epoch_text = epoch.to_string();
    let mut worker = Worker::spawn(
        CHILD_TEST,
        &[
            (DB_VAR, db.as_os_str()),
            (EPOCH_VAR, std::ffi::OsStr::new(&epoch_text)),
        ],
        true,
    );
    match fate {
        Fate::Finish => {}
        Fate::Stop(point) | Fate::Kill(point) => {
            assert!(
                worker.run_to(point),
                "the worker (epoch {epoch}) ended before `{point}`: {:?}",
                worker.reached
            );
            if let Fate::Kill(_) = fate {
                worker.kill();
            } else {
                worker.signal("STOP");
            }
        }
    }
    (worker, matches!(fate, Fate::Stop(_)))
}

/// Ends a worker (bounded): SIGCONT if `stopped`, then lets it run to its
/// end. Returns its points; asserts it finished cleanly unless killed.
fn end(worker: Worker, stopped: bool, fate: Fate) -> Vec<String> {
    if stopped {
        worker.signal("CONT");
    }
    let (reached, status) = worker.finish();
    match fate {
        Fate::Kill(_) => assert_eq!(status.signal(), Some(9), "killed: {reached:?}"),
        Fate::Finish | Fate::Stop(_) => assert!(
            status.success(),
            "the worker ends cleanly: {status:?} after {reached:?}"
        ),
    }
    reached
}

fn reported(points: &[String], name: &str) -> bool {
    points.iter().any(|p| p == name)
}

/// What one run came to, for the distribution.
struct Outcome {
    claim: &'static str,
    a_after: &'static str,
    durable: &'static str,
}

/// What the parent will do in one run, drawn from the seed before it starts.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Claims before the one for A (so A's epoch is 1 to 3).
    earlier_claims: u64,
    a: Fate,
    /// B's fate, if the owner's claim starts B.
    b: Fate,
}

impl Plan {
    fn draw(rng: &mut Rng) -> Self {
        Plan {
            earlier_claims: rng.below(3),
            a: Fate::draw(rng, 16),
            b: Fate::draw(rng, 2),
        }
    }
}

/// Reports the run's seed, number and plan if the run fails (the panic
/// says which rule broke; this says how to get there again).
struct OnFailure<'a>(u64, usize, &'a Plan);

impl Drop for OnFailure<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let OnFailure(seed, run, plan) = self;
            report!(
                "durable_zombie: run {run} failed: {plan:?} (replay with BATON_ZOMBIE_SEED={seed})"
            );
        }
    }
}

/// One run on a fresh `db` following `plan`; every check of the module
/// doc. Returns whether B ran and the outcome.
fn run_once(db: &Path, plan: Plan) -> (bool, Outcome) {
    let log = SqliteLog::open(db).expect("the owner opens the log");
    let claim = |log: &SqliteLog<baton::HandoffExecution>| {
        HandoffLog::<baton::HandoffExecution>::claim(log, "run", "run")
    };
    let mut a = Epoch::NONE;
    for _ in 0..=plan.earlier_claims {
        a = match claim(&log).expect("claim") {
            Claim::Owner(epoch) => epoch,
            other => panic!("nothing was handed off, finished or retired yet: {other:?}"),
        };
    }
    let a_fate = plan.a;
    let (worker_a, a_stopped) = start(db, a, a_fate);
    // A is stopped or dead here (or left to finish: then let it end first).
    let (worker_a, mut a_points) = match a_fate {
        Fate::Stop(_) => (Some(worker_a), Vec::new()),
        Fate::Kill(_) | Fate::Finish => (None, end(worker_a, false, a_fate)),
    };
    let before_claim = match &worker_a {
        Some(worker) => worker.reached.clone(),
        None => a_points.clone(),
    };

    // The owner takes A for dead and claims the Run.
    let taken_over = match claim(&log).expect("the takeover claim") {
        Claim::HandedOff(pause) => {
            assert!(
                reported(&before_claim, "appended"),
                "R1: the claim answered HandedOff, but A's append was never acknowledged: {before_claim:?}"
            );
            assert_eq!(pause, pause_for(intent_of(a)), "the durable pause is A's");
            None
        }
        Claim::Owner(b) => {
            assert!(
                !reported(&before_claim, "appended"),
                "R1: A's append was acknowledged, yet the claim issued epoch {b}"
            );
            assert_eq!(Some(b), a.next(), "a claim advances the epoch by one");
            Some(b)
        }
        other @ (Claim::Finished(_) | Claim::Retired) => {
            panic!("R8: nobody finished or retired the Run, yet the claim answered {other:?}")
        }
    };

    // B runs (its own fate); a stopped B is held while A goes on.
    let b_fate = taken_over.map(|_| plan.b);
    let worker_b = taken_over.zip(b_fate).map(|(b, fate)| start(db, b, fate));
    let (held_b, mut b_points) = match (worker_b, b_fate) {
        (Some((worker, true)), _) => (Some(worker), Vec::new()),
        (Some((worker, false)), Some(fate)) => (None, end(worker, false, fate)),
        _ => (None, Vec::new()),
    };
    if let Some(worker) = worker_a {
        a_points = end(worker, a_stopped, a_fate);
    }
    if let (Some(worker), Some(fate)) = (held_b, b_fate) {
        b_points = end(worker, true, fate);
    }

    // What A did after the claim.
    let a_after = &a_points[before_claim.len().min(a_points.len())..];
    let a_alive = matches!(a_fate, Fate::Stop(_));
    let a_after_name = if taken_over.is_some() {
        for forbidden in ["appended", "sealed", "received"] {
            assert!(
                !reported(a_after, forbidden),
                "R7: fenced A (epoch {a}) reported `{forbidden}` after the claim: {a_points:?}"
            );
        }
        if a_alive {
            assert_eq!(
                a_after.iter().rev().take(2).collect::<Vec<_>>(),
                ["closed", "fenced"],
                "a fenced zombie learns `fenced` at its append and its gate closes without a seal: {a_points:?}"
            );
            "A fenced on waking"
        } else {
            "A dead"
        }
    } else if a_alive {
        assert_eq!(
            a_points.last().map(String::as_str),
            Some("received"),
            "A's handoff stands"
        );
        "A's handoff stands, A goes on"
    } else {
        "A's handoff stands"
    };

    if let Some(Fate::Finish | Fate::Stop(_)) = b_fate {
        assert_eq!(
            b_points.last().map(String::as_str),
            Some("received"),
            "B, the newest epoch's worker, hands the Run off: {b_points:?} (A {a_points:?})"
        );
    }

    // The file, and who continued the Run.
    let raw = integrity_ok(db);
    let rows: Vec<(i64, String)> = pause_rows(&raw, "epoch, handoff_id");
    drop(raw);
    let durable = match rows.as_slice() {
        [] => None,
        [(epoch, handoff_id)] => {
            let epoch = Epoch::new(u64::try_from(*epoch).expect("a stored epoch"));
            assert_eq!(
                *handoff_id,
                intent_of(epoch).handoff_id,
                "the row of epoch {epoch} holds its own worker's pause"
            );
            Some(epoch)
        }
        rows => panic!("R1: one Run, {} pause rows", rows.len()),
    };
    let mut acknowledged = Vec::new();
    if reported(&a_points, "appended") {
        acknowledged.push(a);
    }
    if let Some(b) = taken_over.filter(|_| reported(&b_points, "appended")) {
        acknowledged.push(b);
    }
    assert!(
        acknowledged.len() <= 1,
        "R1/R6: the appends of epochs {acknowledged:?} were both acknowledged"
    );
    assert_eq!(
        durable,
        acknowledged.first().copied(),
        "exactly one party continues: the durable pause is the acknowledged one (A {a_points:?}, B {b_points:?})"
    );
    if taken_over.is_some() {
        assert_ne!(durable, Some(a), "R7: the fenced epoch {a} wrote the pause");
    }
    for (epoch, points) in [(Some(a), &a_points), (taken_over, &b_points)] {
        if reported(points, "received") {
            assert_eq!(durable, epoch, "R2: `received`, so that pause is durable");
        }
    }
    let facts = HandoffLog::<baton::HandoffExecution>::facts(&log, "run", "run").expect("facts");
    assert_eq!(
        facts.epoch,
        taken_over.unwrap_or(a),
        "the Run's epoch is the newest claimed"
    );

    // The owner claims once more and acts on the answer.
    let durable_name = match (claim(&log).expect("the final claim"), durable) {
        (Claim::HandedOff(pause), Some(epoch)) => {
            assert_eq!(pause, pause_for(intent_of(epoch)), "never resumed");
            if epoch == a { "A's pause" } else { "B's pause" }
        }
        (Claim::Owner(next), None) => {
            assert_eq!(Some(next), facts.epoch.next());
            let handoff = hand_off(&log, next, intent_of(next), point);
            assert_eq!(handoff.sealed.expect("append then seal"), Receipt::Written);
            assert!(handoff.received.is_some(), "R2: the new worker's seal");
            "none (the owner's next worker hands off)"
        }
        (claim, durable) => panic!("the final claim {claim:?} contradicts the row of {durable:?}"),
    };
    let facts = HandoffLog::<baton::HandoffExecution>::facts(&log, "run", "run").expect("facts");
    assert!(
        matches!(reconcile(&facts), Ok(Decision::HandedOff(_))),
        "the Run ends handed off once"
    );
    (
        taken_over.is_some(),
        Outcome {
            claim: if taken_over.is_some() {
                "Owner"
            } else {
                "HandedOff"
            },
            a_after: a_after_name,
            durable: durable_name,
        },
    )
}

/// Issue 20: a worker stopped at any point and continued after its owner
/// took the Run over (or killed there) never appends or seals once fenced,
/// and the Run is continued by exactly one party.
#[test]
fn a_zombie_worker_continued_after_a_takeover_is_fenced_and_the_run_is_continued_once() {
    if std::env::var_os(DB_VAR).is_some() {
        return; // the child runs only its worker
    }
    let mut campaign = Campaign::start("durable_zombie", "ZOMBIE", MIN_RUNS, BUDGET);
    let mut a_points: BTreeMap<String, usize> = BTreeMap::new();
    let mut b_points: BTreeMap<String, usize> = BTreeMap::new();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(db) = campaign.next_db() {
        let plan = Plan::draw(&mut campaign.rng);
        let guard = OnFailure(campaign.seed, campaign.done, &plan);
        let (b_ran, outcome) = run_once(&db, plan);
        drop(guard);
        let b = b_ran.then_some(plan.b);
        if campaign.verbose {
            let done = campaign.done;
            report!(
                "run {done}: {plan:?}; claim {}: {}; durable: {}",
                outcome.claim,
                outcome.a_after,
                outcome.durable
            );
        }
        tally(&mut a_points, plan.a.describe());
        tally(
            &mut b_points,
            b.map_or("not started".into(), Fate::describe),
        );
        tally(
            &mut outcomes,
            format!(
                "claim {}: {}; durable: {}",
                outcome.claim, outcome.a_after, outcome.durable
            ),
        );
    }
    let (done, runs) = campaign.finish();
    report_distribution("durable_zombie: worker A (the zombie to be):", &a_points);
    report_distribution("durable_zombie: worker B (after a takeover):", &b_points);
    report_distribution("durable_zombie: outcomes:", &outcomes);
    assert!(
        done >= MIN_RUNS.min(runs),
        "only {done} runs within {BUDGET:?}"
    );
    // The test cannot silently test nothing: the cases it is for happened.
    if runs >= MIN_RUNS {
        for wanted in [
            "claim Owner: A fenced on waking; durable: B's pause",
            "claim Owner: A fenced on waking; durable: none (the owner's next worker hands off)",
            "claim HandedOff: A's handoff stands, A goes on; durable: A's pause",
            "claim Owner: A dead; durable: B's pause",
        ] {
            assert!(
                outcomes.contains_key(wanted),
                "no run ended `{wanted}`: {outcomes:?}"
            );
        }
        assert!(
            a_points.contains_key("stopped after before-append"),
            "no zombie was stopped right before its append"
        );
    }
}
