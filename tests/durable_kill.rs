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
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton::durable::{
    Claim, Decision, Epoch, HandoffLog, LogError, Receipt, SqliteLog, append_then_seal, reconcile,
};
use baton::facts::from_json;
use baton::{CancelSignal, HandoffPause, Invocation};
use common::*;

const DB_VAR: &str = "BATON_KILL_DB";
const POINT: &str = "baton-point: ";
/// The points the child reports, in order.
const POINTS: [&str; 6] = [
    "opening",
    "opened",
    "before-append",
    "appended",
    "sealed",
    "received",
];
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

/// Writes a line to the process's real stderr, past libtest's output
/// capture (which only takes `print!`/`eprint!`): the kill-point figures
/// appear in CI logs with or without `--nocapture`.
macro_rules! report {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// In the child, reports `name` on stdout, then works for [`WORK`]; in the
/// parent (whose owner also hands Runs off), does nothing.
fn point(name: &str) {
    if std::env::var_os(DB_VAR).is_none() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{POINT}{name}");
    let _ = out.flush();
    drop(out);
    std::thread::sleep(WORK);
}

/// The log as the child's worker sees it: reports the points around the
/// append, so the parent can aim its kill between them.
struct Reporting<'a>(&'a SqliteLog<baton::HandoffExecution>);

impl HandoffLog<baton::HandoffExecution> for Reporting<'_> {
    fn claim(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Claim<baton::HandoffExecution>, LogError> {
        self.0.claim(root_run_id, run_id)
    }

    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &Pause,
    ) -> Result<Receipt, LogError> {
        point("before-append");
        let receipt = self.0.append(root_run_id, source, epoch, pause)?;
        point("appended");
        Ok(receipt)
    }

    fn facts(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<baton::durable::RunFacts<baton::HandoffExecution>, LogError> {
        self.0.facts(root_run_id, run_id)
    }
}

/// A full handoff on `log`: reserve, boundary, commit, append then
/// seal (the library's helper), wait. Returns what the requester received.
/// Its awaits are bounded (the runtime has a timer for it): a hang in the
/// child fails it, which ends the parent's wait for its points too.
fn hand_off(log: &dyn HandoffLog<baton::HandoffExecution>) -> Option<std::sync::Arc<Pause>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    // The owner's claim, for the worker it starts: the epoch it appends under.
    let epoch = match log.claim("run", "run").expect("claim") {
        Claim::Owner(epoch) => epoch,
        Claim::HandedOff(pause) => panic!("the Run is already handed off: {pause:?}"),
    };
    runtime.block_on(async {
        let gate = gate();
        let requester = gate.requester();
        let cancel = CancelSignal::new();
        let reservation = requester.reserve(intent()).expect("reserve");
        let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
        let paused = paused.expect("committed");
        let receipt = append_then_seal(&gate, log, epoch, &paused).expect("append then seal");
        assert_eq!(receipt, Receipt::Written, "the Run had no pause yet");
        point("sealed");
        within(SEALED, pending.wait()).await
    })
}

/// The child process's worker; a no-op unless `BATON_KILL_DB` is set.
#[test]
fn kill_test_child_worker() {
    let Some(db) = std::env::var_os(DB_VAR) else {
        return;
    };
    point("opening");
    let log = SqliteLog::open(PathBuf::from(db)).expect("open the log");
    point("opened");
    let received = hand_off(&Reporting(&log));
    assert!(
        received.is_some(),
        "the requester receives the sealed pause"
    );
    point("received");
}

/// xorshift64*: small, seeded, good enough to scatter kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}

/// The point a line of the child's stdout reports, if any. Found anywhere in
/// the line: libtest prints `test kill_test_child_worker ... ` without a
/// newline before the test runs, so the first point shares its line.
fn point_in(line: &str) -> Option<&str> {
    line.split_once(POINT).map(|(_, name)| name.trim_end())
}

/// One run: spawn the child on `db`, wait for the point `target` (or not at
/// all for `None`), sleep `delay`, SIGKILL. Returns the points the child
/// reached and whether the kill found it still running.
fn run_child(db: &Path, target: Option<&str>, delay: Duration) -> (Vec<String>, bool) {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "kill_test_child_worker", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(DB_VAR, db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut reached = Vec::new();
    if let Some(target) = target {
        for line in lines.by_ref() {
            let Ok(line) = line else { break };
            if let Some(name) = point_in(&line) {
                reached.push(name.to_owned());
                if name == target {
                    break;
                }
            }
        }
    }
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reap the child");
    // What the child printed before it died is still in the pipe.
    reached.extend(
        lines
            .map_while(Result::ok)
            .filter_map(|line| point_in(&line).map(str::to_owned)),
    );
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
    let raw = rusqlite::Connection::open(db).expect("open the database raw");
    let integrity: String = raw
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity_check");
    assert_eq!(integrity, "ok", "PRAGMA integrity_check");
    let version: i64 = raw
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .expect("user_version");

    let log: SqliteLog<baton::HandoffExecution> =
        SqliteLog::open(db).expect("the log opens after any kill: no half-made schema");
    let facts = log.facts("run", "run").expect("the facts read back");
    let decision = reconcile(&facts).expect("the facts are never contradictory");

    let rows: Vec<(String, String)> = {
        let mut statement = raw
            .prepare("SELECT invocation_id, pause FROM handoff_pause")
            .expect("the table exists once the log opened");
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
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
    let seed = std::env::var("BATON_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    let runs: usize = std::env::var("BATON_KILL_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    report!("durable_kill: seed {seed} (replay with BATON_KILL_SEED={seed}), {runs} runs");
    let mut rng = Rng(seed);
    let dir = std::env::temp_dir().join(format!("baton-kill-{}-{seed}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");

    let started = Instant::now();
    let mut last_points: BTreeMap<String, usize> = BTreeMap::new();
    let mut decisions: BTreeMap<&str, usize> = BTreeMap::new();
    let mut done = 0;
    while done < runs && started.elapsed() < BUDGET {
        let db = dir.join(format!("run-{done}.sqlite"));
        remove_db(&db);
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
        if std::env::var_os("BATON_KILL_VERBOSE").is_some() {
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
        *last_points.entry(last).or_default() += 1;
        *decisions
            .entry(match decision {
                Decision::HandedOff(_) => "HandedOff",
                Decision::Resumable => "Resumable",
            })
            .or_default() += 1;
        remove_db(&db);
        done += 1;
    }
    let _ = std::fs::remove_dir(&dir);
    let elapsed = started.elapsed();

    report!("durable_kill: {done} runs in {elapsed:.1?}; decisions {decisions:?}");
    report!("durable_kill: distribution of the last point reached:");
    for (point, count) in &last_points {
        report!("  {count:>4}  {point}");
    }
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
