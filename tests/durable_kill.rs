//! Issue 9, proof under real crashes: a worker runs as a **real child
//! process** on a SQLite log and is killed with SIGKILL at randomised points;
//! after every run the parent reconciles from the database alone.
//!
//! The child is this test binary itself, re-executed with `BATON_KILL_DB`
//! set and a filter naming [`kill_test_child_worker`] (which does nothing in
//! a normal test run). It prints each point it reaches (`baton-point: NAME`)
//! on stdout and works 1 ms after each; the parent waits for a randomly
//! chosen point (or only for the spawn), sleeps a random delay more (up to
//! 3 ms; up to 25 ms after `opening`), and kills. Kills therefore land before
//! the log exists, while it is being created, before, during and after the
//! append, between append and seal, and after the seal. The distribution of
//! the last point reached is printed (past libtest's capture), and each
//! of `before-append`, `appended`, `sealed` must be the last point of some
//! killed run, so the test cannot silently test nothing.
//!
//! After every run: `PRAGMA integrity_check` is `ok`; the log opens (no
//! half-made schema); the decision is `HandedOff` exactly when the pause row
//! exists, and the row, if any, is the whole pause; an acknowledged append
//! (`appended`) or a `Some` from `wait()` (`received`) implies `HandedOff`;
//! and the owner then acts on the decision (a new worker hands off a
//! `Resumable` Run; a handed-off Run refuses another pause).
//!
//! Set `BATON_KILL_SEED` to replay a seed's kill targets and delays (the
//! child's timing still varies), `BATON_KILL_RUNS` to change the number of
//! runs (default 300; the default must complete at least 200 within the
//! 100 s budget), `BATON_KILL_VERBOSE` to print every run.
#![cfg(all(unix, feature = "sqlite"))]

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use baton::HandoffPause;
use baton::durable::{Claim, Decision, HandoffLog, LogError, Receipt, SqliteLog, reconcile};
use baton::facts::from_json;
use common::child::{
    Campaign, POINTS, Reporting, Worker, integrity_ok, open_log, pause_rows, remove_db, report,
    report_distribution, say_point, tally,
};
use common::*;

const DB_VAR: &str = "BATON_KILL_DB";
/// Stop starting runs after this long, whatever the count (2-core machine,
/// shared): the test stays within ~2 minutes.
const BUDGET: Duration = Duration::from_secs(100);
const MIN_RUNS: usize = 200;
/// The signal `Child::kill` sends on Unix.
const SIGKILL: i32 = 9;

/// How long the child works after reporting each point before it takes its
/// next step (the worker's own work between steps). Without it the points
/// after the append are microseconds apart and a kill could almost never
/// land between them.
const WORK: Duration = Duration::from_millis(1);

/// About how long the child takes from `opening` to `opened` (creating the
/// log: WAL, schema, several syncs) on a loaded 2-core machine.
const OPENING: Duration = Duration::from_millis(25);

/// In the child, reports `name` on stdout, then works for [`WORK`]; in the
/// parent (whose owner also hands Runs off), does nothing.
fn point(name: &str) {
    if std::env::var_os(DB_VAR).is_none() {
        return;
    }
    say_point(name);
    std::thread::sleep(WORK);
}

/// The owner's claim for a new worker, then the worker's full handoff
/// under the epoch claimed (reporting its points in a child). Returns what
/// the requester received.
fn hand_off(log: &dyn HandoffLog<baton::HandoffExecution>) -> Option<std::sync::Arc<Pause>> {
    let epoch = match log.claim("run", "run").expect("claim") {
        Claim::Owner(epoch) => epoch,
        other => panic!("the Run is not open: {other:?}"),
    };
    let handoff = common::child::hand_off(log, epoch, intent(), point);
    let receipt = handoff.sealed.expect("append then seal");
    assert_eq!(receipt, Receipt::Written, "the Run had no pause yet");
    handoff.received
}

/// The child process's worker; a no-op unless `BATON_KILL_DB` is set.
#[test]
fn kill_test_child_worker() {
    let Some(db) = std::env::var_os(DB_VAR) else {
        return;
    };
    let log = open_log(&db, point);
    let received = hand_off(&Reporting { log: &log, point });
    assert!(
        received.is_some(),
        "the requester receives the sealed pause"
    );
    point("received");
}

/// One run: spawn the child on `db`, wait for the point `target` (or not at
/// all for `None`), sleep `delay`, SIGKILL. Returns the points the child
/// reached and whether the kill found it still running.
fn run_child(db: &Path, target: Option<&str>, delay: Duration) -> (Vec<String>, bool) {
    let mut child = Worker::spawn("kill_test_child_worker", &[(DB_VAR, db.as_os_str())], false);
    if let Some(target) = target {
        child.run_to(target);
    }
    std::thread::sleep(delay);
    child.kill();
    // What the child printed before it died is still in the pipe.
    let (reached, status) = child.finish();
    let killed = status.signal() == Some(SIGKILL);
    assert!(
        killed || status.success(),
        "the child either was killed or finished: {status:?}, reached {reached:?}"
    );
    (reached, killed)
}

/// The checks after one run, from the database alone; returns the decision
/// and whether the child had made the schema durable before it died.
fn check_after_kill(db: &Path, reached: &[String]) -> (Decision<baton::HandoffExecution>, bool) {
    let raw = integrity_ok(db);
    let version: i64 = raw
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .expect("user_version");

    let log: SqliteLog<baton::HandoffExecution> =
        SqliteLog::open(db).expect("the log opens after any kill: no half-made schema");
    let facts = log.facts("run", "run").expect("the facts read back");
    let decision = reconcile(&facts).expect("the facts are never contradictory");

    let rows: Vec<(String, String)> = pause_rows(&raw, "invocation_id, pause");
    let expected = pause_for(intent());
    match (&decision, rows.as_slice()) {
        (Decision::HandedOff(pause), [(invocation, json)]) => {
            assert_eq!(pause, &expected, "the durable pause is the whole pause");
            assert_eq!(invocation, &source().invocation_id);
            let stored: Pause = from_json(json.as_bytes()).expect("the stored JSON decodes");
            assert_eq!(stored, expected, "nothing half-written is visible");
        }
        (Decision::Resumable, []) => {}
        (decision, rows) => panic!(
            "the decision is HandedOff exactly when the pause row exists: {decision:?} with {} rows",
            rows.len()
        ),
    }
    let reached_any = |name: &str| reached.iter().any(|p| p == name);
    for acknowledged in ["appended", "sealed", "received"] {
        if reached_any(acknowledged) {
            assert!(
                matches!(decision, Decision::HandedOff(_)),
                "`{acknowledged}` was reported, so the pause is durable"
            );
        }
    }
    if !reached_any("before-append") {
        assert_eq!(decision, Decision::Resumable, "no append was begun");
    }
    drop(raw);
    act_on(&log, &decision);
    (decision, version != 0)
}

/// The owner acts on the decision: a `Resumable` Run is taken by a new
/// worker, which hands it off; a handed-off Run refuses another pause
/// (the old worker is never resumed).
fn act_on(log: &SqliteLog<baton::HandoffExecution>, decision: &Decision<baton::HandoffExecution>) {
    match decision {
        Decision::Resumable => {
            let received = hand_off(log).expect("the new worker hands off");
            assert_eq!(*received, pause_for(intent()));
        }
        Decision::HandedOff(_) => {
            let mut other: Pause = pause_for(intent_named("a-second-handoff"));
            other.execution.supports_vision = true;
            let epoch = log.facts("run", "run").expect("facts").epoch;
            let refused = log.append("run", &source(), epoch, &other);
            assert!(
                matches!(refused, Err(LogError::AlreadyHandedOff { .. })),
                "a handed-off Run takes no other pause: {refused:?}"
            );
        }
        // Nobody finishes or retires a Run in this campaign.
        other @ (Decision::Finished(_) | Decision::Retired) => {
            panic!("R8: a killed worker's Run decided {other:?}")
        }
    }
    let facts = log.facts("run", "run").expect("facts");
    assert_eq!(
        reconcile(&facts),
        Ok(Decision::HandedOff(pause_for(intent()))),
        "after the owner acted, the Run is handed off once"
    );
}

/// Issue 9: SIGKILL at randomised points across at least 200 runs never
/// corrupts the log, never loses an acknowledged append, and reconciliation
/// decides `HandedOff` exactly when the pause row exists.
#[test]
fn a_worker_killed_at_any_point_is_reconciled_from_the_log_never_resumed_after_handoff() {
    if std::env::var_os(DB_VAR).is_some() {
        return; // the child runs only its worker
    }
    let mut campaign = Campaign::start("durable_kill", "KILL", 300, BUDGET);
    let mut last_points: BTreeMap<String, usize> = BTreeMap::new();
    let mut decisions: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(db) = campaign.next_db() {
        let rng = &mut campaign.rng;
        // None: kill right after spawn; else after the child reports it.
        let target = match rng.below(POINTS.len() as u64 + 1) {
            0 => None,
            i => Some(POINTS[i as usize - 1]),
        };
        // Up to 3 × WORK after a point or the spawn: before the next step,
        // during it, or past it. Up to OPENING after `opening`: anywhere in
        // the log's creation.
        let bound = match target {
            Some("opening") => OPENING,
            Some(_) | None => 3 * WORK,
        };
        let delay = Duration::from_micros(rng.below(bound.as_micros() as u64));
        let (reached, killed) = run_child(&db, target, delay);
        let (decision, had_schema) = check_after_kill(&db, &reached);
        if campaign.verbose {
            let done = campaign.done;
            report!(
                "run {done}: target {target:?} + {delay:?}: reached {reached:?}, killed {killed}"
            );
        }
        let last = match (killed, reached.last()) {
            (false, _) => "finished before the kill".to_owned(),
            (true, None) => "killed before opening".to_owned(),
            (true, Some(last)) => match (last.as_str(), &decision) {
                ("opening", _) if had_schema => "killed after opening (schema durable)".to_owned(),
                ("opening", _) => "killed after opening (no schema yet)".to_owned(),
                ("before-append", Decision::HandedOff(_)) => {
                    "killed after before-append (append durable, unacknowledged)".to_owned()
                }
                ("before-append", Decision::Resumable) => {
                    "killed after before-append (nothing durable)".to_owned()
                }
                (last, _) => format!("killed after {last}"),
            },
        };
        tally(&mut last_points, last);
        tally(
            &mut decisions,
            match decision {
                Decision::HandedOff(_) => "HandedOff",
                Decision::Resumable => "Resumable",
                Decision::Finished(_) => "Finished",
                Decision::Retired => "Retired",
            },
        );
    }
    let (done, runs) = campaign.finish();
    report!("durable_kill: decisions {decisions:?}");
    report_distribution(
        "durable_kill: distribution of the last point reached:",
        &last_points,
    );
    assert!(
        done >= MIN_RUNS.min(runs),
        "only {done} runs within {BUDGET:?}"
    );
    for point in ["before-append", "appended", "sealed"] {
        assert!(
            last_points
                .keys()
                .any(|k| k.starts_with(&format!("killed after {point}"))),
            "no run was killed right after `{point}`: the test would test nothing there"
        );
    }
}

/// The kill test's own check, without a child: a database where the pause
/// row exists is `HandedOff`, one without is `Resumable`.
#[test]
fn the_checks_after_a_kill_accept_both_outcomes() {
    if std::env::var_os(DB_VAR).is_some() {
        return;
    }
    let db = std::env::temp_dir().join(format!("baton-kill-self-{}.sqlite", std::process::id()));
    remove_db(&db);
    assert_eq!(check_after_kill(&db, &[]), (Decision::Resumable, false));
    let after: HandoffPause<_> = pause_for(intent());
    let all = ["before-append", "appended", "sealed"].map(str::to_owned);
    assert_eq!(
        check_after_kill(&db, &all),
        (Decision::HandedOff(after), true)
    );
    remove_db(&db);
}
