//! The runtime chapter's program (docs/guide/runtime.md), run as real
//! processes: the example `postgres_runtime`'s supervisor and its three
//! workers, each this test binary re-executed in its role
//! ([`runtime_child_process`]), on the tests' TLS server, trusting the
//! fixture's CA alone (`BATON_PG_CA`, `sslmode=require`). Twelve roots,
//! each a chain of three Runs.
//!
//! The test SIGKILLs worker `host-1` at a point chosen by construction
//! ([`is_kill_point`]): the first step of a successor Run it resumed from
//! a pause, after it reported steps of other Runs, so it dies holding that
//! Run with all its steps but one to go. Then, from the supervisor's
//! stdout (every worker's line relayed, and its own) and from the log:
//! every chain ended exactly once, on its last Run, with the total of
//! every step done once in order; no Run was worked after its pause was
//! durable, and none under an epoch above its handoff's (R6); the
//! supervisor resumed at least one Run after the kill (so the test cannot
//! test nothing); after retention every root is retired (a claim of each
//! Run answers `Retired`) and no Run's row is left (R9, R10). Its figures
//! are printed past the harness's capture.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use baton::durable::tokio_postgres::NoTls;
use baton::durable::{AsyncHandoffLog, Claim, Epoch, PostgresLog, PostgresOptions, PostgresSchema};

use crate::common::postgres::Cluster;
use crate::postgres_only::runtime;

// Its `main` and the supervisor's own `--kill-one` are not used here; its
// TLS connector (examples/common/tls.rs) is postgres_fleet's too, which
// `postgres_example` includes into this crate as well.
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "../../examples/postgres_runtime/main.rs"]
mod example;

use example::protocol::{Line, RUNS_PER_ROOT, RunId, chain_total, is_kill_point};

/// The role of a child process: `supervisor` or `worker`.
const ROLE: &str = "BATON_RUNTIME_ROLE";
/// A worker child's host name.
const HOST: &str = "BATON_RUNTIME_HOST";
/// The test a child process runs.
const CHILD: &str = "postgres_runtime::runtime_child_process";
/// The worker processes the supervisor starts.
const WORKERS: usize = 3;
/// The root Runs, each a chain of `RUNS_PER_ROOT` Runs.
const ROOTS: usize = 12;
/// The worker the test kills.
const VICTIM: &str = "host-1";
/// How long the whole runtime may take before the test calls it hung.
const BOUND: Duration = Duration::from_secs(60);

/// Prints `line` past the test harness's capture, so that a plain `cargo
/// test` (and CI's log) shows the run's figures.
fn say(line: String) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "postgres_runtime: {line}");
}

/// A child process's role (a no-op in a normal run): the supervisor, or a
/// worker, with `BATON_PG_URL` and `BATON_PG_CA` from the parent.
#[test]
fn runtime_child_process() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let url = std::env::var("BATON_PG_URL").expect("the parent sets BATON_PG_URL");
    let runtime = example::runtime().expect("a runtime");
    match role.as_str() {
        "supervisor" => {
            let plan = example::Plan {
                workers: WORKERS,
                roots: ROOTS,
                kill_one: false,
            };
            let supervised = runtime.block_on(example::supervise(&url, plan, worker_command));
            supervised.expect("the supervisor");
        }
        "worker" => {
            let host = std::env::var(HOST).expect("the supervisor names the host");
            runtime
                .block_on(example::serve(&url, &host))
                .expect("the worker");
        }
        other => panic!("no role {other}"),
    }
}

/// This test binary, filtered to [`runtime_child_process`], in `role`.
fn child_command(role: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["--exact", CHILD, "--nocapture", "--test-threads", "1"])
        .env(ROLE, role);
    command
}

/// The supervisor's way to start the worker `host`.
fn worker_command(host: &str) -> Command {
    let mut command = child_command("worker");
    command.env(HOST, host);
    command
}

/// The supervisor process and its stdout's lines. Dropped before it
/// exited (the test failed), it is killed, and so are the workers it
/// reported (which also exit once their orders' pipe closes).
struct Supervisor {
    child: Child,
    lines: Receiver<String>,
    workers: Vec<u32>,
}

impl Supervisor {
    /// Starts the supervisor on `url`, trusting the CA in the file `ca`.
    fn spawn(url: &str, ca: &std::path::Path) -> Self {
        let mut child = child_command("supervisor")
            .env("BATON_PG_URL", url)
            .env("BATON_PG_CA", ca)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the supervisor");
        let stdout = child.stdout.take().expect("piped");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            lines,
            workers: Vec::new(),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            for pid in &self.workers {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

/// The kill, as the test did it.
struct Kill {
    pid: u32,
    /// Steps the victim had reported before it.
    steps: usize,
    /// Runs it had begun and not yet ended then.
    holding: Vec<String>,
}

/// Reads the supervisor's lines until it exits, SIGKILLing [`VICTIM`] at
/// its kill point; answers the runtime's lines, the supervisor's summary
/// lines, and the kill.
fn run_killing_the_victim(supervisor: &mut Supervisor) -> (Vec<Line>, Vec<String>, Kill) {
    let deadline = Instant::now() + BOUND;
    let (mut lines, mut summary, mut kill) = (Vec::new(), Vec::new(), None);
    let mut victim_pid = None;
    while let Ok(text) = supervisor.lines.recv_timeout(deadline - Instant::now()) {
        let Some(line) = Line::parse(&text) else {
            summary.extend(text.starts_with("summary:").then_some(text));
            continue;
        };
        if line.what == "started" {
            let pid = line.number("pid").expect("a pid") as u32;
            supervisor.workers.push(pid);
            if line.get("host") == Some(VICTIM) {
                victim_pid = Some(pid);
            }
        }
        if kill.is_none() && is_kill_point(&line, VICTIM) {
            let pid = victim_pid.expect("the victim was started");
            let killed = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            assert!(killed.is_ok_and(|s| s.success()), "SIGKILL {VICTIM}");
            kill = Some(Kill {
                pid,
                steps: lines.iter().filter(|l| said(l, VICTIM, "step")).count() + 1,
                holding: unended(&lines, VICTIM),
            });
        }
        lines.push(line);
    }
    assert!(
        Instant::now() < deadline,
        "the runtime did not end within {BOUND:?}"
    );
    (
        lines,
        summary,
        kill.expect("the victim reached its kill point"),
    )
}

/// Whether `line` is `who` saying `what`.
fn said(line: &Line, who: &str, what: &str) -> bool {
    line.who == who && line.what == what
}

/// The Runs `host` began (`working`) and had not ended in `lines`.
fn unended(lines: &[Line], host: &str) -> Vec<String> {
    let mut open = BTreeSet::new();
    for line in lines.iter().filter(|l| l.who == host) {
        let run = line.get("run").unwrap_or_default().to_owned();
        match line.what.as_str() {
            "working" => open.insert(run),
            "handed-off" | "finished" => open.remove(&run),
            _ => false,
        };
    }
    open.into_iter().collect()
}

/// Issue 59: a runtime of processes on PostgreSQL, a worker SIGKILLed mid-run;
/// every chain ends exactly once and no handed-off Run is resumed (R6, R8),
/// the dead host's open Runs are resumed from the log, and retention
/// leaves only tombstones (G5, R9, R10).
#[test]
fn a_worker_killed_mid_run_is_resumed_from_the_log_and_every_chain_ends_exactly_once() {
    if std::env::var_os(ROLE).is_some() {
        return; // a child runs only its role
    }
    let Some(cluster) = Cluster::shared_tls() else {
        return;
    };
    let started = Instant::now();
    let dbname = runtime().block_on(cluster.database());
    let ca = std::env::temp_dir().join(format!("baton-runtime-ca-{}.pem", std::process::id()));
    std::fs::write(&ca, cluster.ca_pem().expect("the TLS cluster's CA")).unwrap();
    let url = format!("{} sslmode=require", cluster.url(&dbname));
    let mut supervisor = Supervisor::spawn(&url, &ca);
    let (lines, summary, kill) = run_killing_the_victim(&mut supervisor);
    let status = supervisor.child.wait().expect("the supervisor's status");
    std::fs::remove_file(&ca).unwrap();
    assert!(status.success(), "the supervisor failed: {status:?}");
    assert!(!kill.holding.is_empty(), "the victim held no unended Run");
    let died: Vec<&Line> = lines.iter().filter(|l| l.what == "died").collect();
    assert_eq!(died.len(), 1, "one death");
    assert_eq!(died[0].get("host"), Some(VICTIM));
    assert_eq!(died[0].get("how"), Some("signal:9"), "SIGKILL");

    let roots = every_chain_ended_exactly_once(&lines);
    let resumed = no_handed_off_run_was_resumed(&lines);
    assert!(
        !resumed.is_empty(),
        "the supervisor resumed no Run after the kill"
    );
    let rows = runtime().block_on(every_root_is_retired(cluster, &dbname, &roots));

    let handoffs = lines.iter().filter(|l| l.what == "handed-off").count();
    let recovered = lines.iter().filter(|l| l.what == "claimed").count();
    say(format!(
        "{WORKERS} workers, {ROOTS} roots, {} Runs; {handoffs} handoffs and {ROOTS} finishes \
         reported (every chain read back from the log: {} handoffs)",
        ROOTS * RUNS_PER_ROOT as usize,
        ROOTS * (RUNS_PER_ROOT as usize - 1),
    ));
    say(format!(
        "killed {VICTIM} (pid {}) with SIGKILL after {} steps, holding {:?}; the supervisor \
         claimed its {recovered} Runs and resumed {resumed:?}",
        kill.pid, kill.steps, kill.holding
    ));
    say(format!(
        "retired {} roots: a claim of each Run answers Retired; rows left: {rows:?}; {:.1?}",
        roots.len(),
        started.elapsed()
    ));
    for line in summary {
        say(line);
    }
}

/// Every root's chain ended exactly once, on its last Run, with the total
/// of every step done once in order: one `finished` line per root, one
/// `chain` line read back from the log. Answers the roots.
fn every_chain_ended_exactly_once(lines: &[Line]) -> Vec<String> {
    let mut finishes: BTreeMap<String, Vec<RunId>> = BTreeMap::new();
    for line in lines.iter().filter(|l| l.what == "finished") {
        let run = line.run("run").expect("a finished Run");
        assert_eq!(line.number("total"), Some(chain_total()), "{run}'s total");
        finishes.entry(run.root.clone()).or_default().push(run);
    }
    let chains: Vec<&Line> = lines.iter().filter(|l| l.what == "chain").collect();
    assert_eq!(chains.len(), ROOTS, "one chain read back per root");
    for chain in &chains {
        let root = chain.get("root").expect("a root");
        let last = chain.run("finished").expect("its finished Run");
        assert!(
            last.is_last(),
            "{root} finished on {last}, not its last Run"
        );
        assert_eq!(chain.number("runs"), Some(u64::from(RUNS_PER_ROOT)));
        assert_eq!(chain.number("total"), Some(chain_total()));
        assert_eq!(finishes.get(root), Some(&vec![last]), "{root}: one finish");
    }
    finishes.into_keys().collect()
}

/// No Run was worked once its pause was durable: no `working` line for a
/// Run after its `handed-off` line, none under an epoch above its
/// handoff's, and a Run worked twice only when the victim's Run was
/// resumed under the supervisor's epoch. Answers the Runs resumed
/// (`RUN@EPOCH`).
fn no_handed_off_run_was_resumed(lines: &[Line]) -> Vec<String> {
    let mut handed_off: BTreeMap<String, u64> = BTreeMap::new();
    let mut worked: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    let mut resumed = Vec::new();
    for line in lines {
        let run = line.get("run").unwrap_or_default().to_owned();
        match line.what.as_str() {
            "handed-off" => {
                handed_off.insert(run, line.number("epoch").expect("its epoch"));
            }
            "working" => {
                assert!(
                    !handed_off.contains_key(&run),
                    "{run} worked after its handoff"
                );
                let epoch = line.number("epoch").expect("its epoch");
                worked
                    .entry(run)
                    .or_default()
                    .push((line.who.clone(), epoch));
            }
            "claimed" if line.get("answer") == Some("owner") => {
                assert!(
                    !handed_off.contains_key(&run),
                    "{run} resumed after its handoff"
                );
                resumed.push(format!(
                    "{run}@{}",
                    line.number("epoch").expect("its epoch")
                ));
            }
            _ => {}
        }
    }
    for (run, workers) in &worked {
        if let Some(epoch) = handed_off.get(run) {
            let above = workers.iter().find(|(_, e)| e > epoch);
            assert!(
                above.is_none(),
                "{run} worked under {above:?} above its handoff's epoch {epoch}"
            );
        }
        let epochs: BTreeSet<u64> = workers.iter().map(|(_, e)| *e).collect();
        assert_eq!(
            epochs.len(),
            workers.len(),
            "{run}: two workers under one epoch"
        );
        for (host, _) in &workers[..workers.len() - 1] {
            assert_eq!(
                host, VICTIM,
                "{run} was taken from a live host: {workers:?}"
            );
        }
    }
    resumed
}

/// After retention, every Run of `roots` answers `Retired` and its facts
/// hold nothing; the database keeps no Run's row, only a tombstone per
/// root. Answers the row counts (Runs, pauses, tombstones).
async fn every_root_is_retired(
    cluster: &Cluster,
    dbname: &str,
    roots: &[String],
) -> (i64, i64, i64) {
    let options = PostgresOptions::new().schema(PostgresSchema::named(example::SCHEMA).unwrap());
    let config = cluster.url(dbname).parse().unwrap();
    let log: PostgresLog<example::Progress> = PostgresLog::connect_with(config, NoTls, options)
        .await
        .expect("the log");
    for root in roots {
        for index in 0..RUNS_PER_ROOT {
            let run = RunId {
                root: root.clone(),
                index,
            }
            .to_string();
            let claimed = log.claim_async(root, &run).await.expect("a claim");
            assert_eq!(claimed, Claim::Retired, "{run}");
            let facts = log.facts_async(root, &run).await.expect("the facts");
            assert!(facts.retired, "{run}");
            assert_eq!(facts.epoch, Epoch::NONE, "{run}: no epoch kept");
            assert!(facts.pauses.is_empty() && facts.finished.is_none(), "{run}");
        }
    }
    let admin = cluster.connect(dbname).await;
    let count = async |sql: &str| -> i64 {
        let table = format!("SELECT count(*) FROM {}.{sql}", example::SCHEMA);
        admin.query_one(&table, &[]).await.expect(sql).get(0)
    };
    let rows = (
        count("baton_run").await,
        count("baton_handoff_pause").await,
        count("baton_root WHERE retired").await,
    );
    assert_eq!(
        rows,
        (0, 0, ROOTS as i64),
        "R10: no Run kept, one tombstone per root"
    );
    rows
}
