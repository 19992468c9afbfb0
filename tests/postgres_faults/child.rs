//! The campaign's processes: a worker ("host") or the owner, each this test
//! binary re-executed with its role in the environment, reaching the
//! server through its own proxy. Each prints its history on stdout, one
//! line per event (`H <µs> <op> invoke …` before an operation, `H <µs>
//! <op> <outcome> …` after it, `H <µs> - <event> …` for seals and
//! decisions), stamped with the machine's wall clock, which every process
//! of the campaign shares; the parent reads and checks it.
//!
//! A **worker** loops until told to stop (`stop` on stdin): it claims a
//! Run of the current window (the Runs every process picks from move on
//! every [`WINDOW`]), works a little while holding its epoch (the window in
//! which a pause, a partition or another process's claim turns it into a
//! zombie), then hands the Run off through a real gate:
//! `append_then_seal_async` under its epoch, and `wait()` on the
//! requester's side. The **owner** is the wrong failure detector: it claims
//! Runs of the window at random (taking them over from live workers) until
//! told `decide`; then it decides every Run of the campaign — claims it, and
//! if open, hands it off itself — and says `done`.
//!
//! Each Run is its own root Run, so that retention runs during the faults:
//! a worker ends one Run in four with a finish (`finish_then_close_async`)
//! instead of a handoff, and the owner, between its claims, retires the
//! root of a Run of an earlier window (which a zombie may still be working
//! on) — §6.1, R8–R10. The unfenced campaign does neither.
//!
//! Under `BATON_FAULT_UNFENCED=1` the workers append through a store with
//! fencing disabled (the test-only switch): the same row lock and
//! one-pause-per-Run key, but no epoch check.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::durable::tokio_postgres::NoTls;
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, FinishError, LogError, PostgresLog, PostgresOptions, Receipt,
    Retirement, SealError, append_then_seal_async, finish_then_close_async,
};
use baton::{CancelSignal, HandoffGate, HandoffIntent, Invocation};

use super::{Rng, WINDOW, WINDOW_RUNS, env, var};
use crate::common::{Pause, commit_at_boundary, execution, pause_for};

type Log = PostgresLog<baton::HandoffExecution>;

/// The wall clock in µs since the epoch: every process's history shares it.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The Run `k`.
pub fn run_name(k: u64) -> String {
    format!("r{k}")
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
    HandoffIntent {
        handoff_id: pause_id.into(),
        host_epoch: host.into(),
        root_run_id: run.into(),
        successor_run_id: format!("{run}-next"),
        successor_invocation_id: format!("{run}-next-invocation"),
        claim_id: "claim".into(),
    }
}

/// This process's history on stdout.
struct History {
    next: u64,
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "H {} {line}", now_us());
    let _ = out.flush();
}

impl History {
    fn invoke(&mut self, what: &str) -> u64 {
        self.next += 1;
        say(&format!("{} invoke {what}", self.next));
        self.next
    }
    fn complete(&self, op: u64, outcome: &str) {
        say(&format!("{op} {outcome}"));
    }
}

fn refusal(error: &LogError) -> String {
    match error {
        LogError::Fenced { current, .. } => format!("refused fenced {current}"),
        LogError::AlreadyHandedOff { .. } => "refused already-handed-off".into(),
        LogError::AlreadyFinished { .. } => "refused already-finished".into(),
        LogError::Retired { .. } => "refused retired".into(),
        LogError::RunOpen { .. } => "refused run-open".into(),
        LogError::EpochNotIssued { current, .. } => format!("refused epoch-not-issued {current}"),
        LogError::OutcomeUnknown(_) => "unknown".into(),
        LogError::Unavailable(_) => "unavailable".into(),
        other => format!("refused other {}", format!("{other:?}").replace(' ', "_")),
    }
}

/// The entry of a child process: `role` is `worker` or `owner`.
pub fn main(role: &str) {
    let url = var("BATON_FAULT_URL");
    let name = var("BATON_FAULT_PROC");
    let t0: u64 = var("BATON_FAULT_T0").parse().expect("T0");
    let unfenced = env("BATON_FAULT_UNFENCED").is_some_and(|v| v == "1");
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
        let mut history = History { next: 0 };
        let window = || (now_us().saturating_sub(t0)) / WINDOW.as_micros() as u64;
        match role {
            "worker" => {
                let mut raw = None;
                while !stop.load(Ordering::SeqCst) {
                    let k = window() * WINDOW_RUNS + rng.below(WINDOW_RUNS);
                    let run = run_name(k);
                    let claimed = claim(&log, &mut history, &run).await;
                    if claimed.is_err() {
                        // No answer (a crashed server, a partition): back
                        // off a little, as a real host would.
                        tokio::time::sleep(Duration::from_millis(100 + rng.below(200))).await;
                    }
                    if let Ok(Some(epoch)) = claimed {
                        let work = 20 + rng.below(180);
                        tokio::time::sleep(Duration::from_millis(work)).await;
                        let pause_id = format!("{name}-{run}-e{epoch}");
                        if !unfenced && rng.below(4) == 0 {
                            finish(&log, &mut history, &run, epoch, &pause_id).await;
                        } else if unfenced {
                            let pause = pause_for(intent(&run, &pause_id, &name));
                            unfenced_hand_off(&url, &mut raw, &mut history, &run, epoch, &pause)
                                .await;
                        } else {
                            hand_off(&log, &mut history, &run, epoch, &pause_id, &name).await;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(5 + rng.below(30))).await;
                }
            }
            "owner" => {
                let runs = loop {
                    if let Some(runs) = *decide.lock().unwrap() {
                        break runs;
                    }
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let run = run_name(window() * WINDOW_RUNS + rng.below(WINDOW_RUNS));
                    let _claimed = claim(&log, &mut history, &run).await;
                    // Retention: the root of a Run two or more windows old.
                    if !unfenced && window() >= 2 && rng.below(2) == 0 {
                        let old = rng.below((window() - 1) * WINDOW_RUNS);
                        retire(&log, &mut history, &run_name(old)).await;
                    }
                    tokio::time::sleep(Duration::from_millis(100 + rng.below(400))).await;
                };
                for k in 0..runs {
                    let run = run_name(k);
                    loop {
                        match claim(&log, &mut history, &run).await {
                            Ok(Some(epoch)) => {
                                let pause_id = format!("{name}-{run}-e{epoch}");
                                if hand_off(&log, &mut history, &run, epoch, &pause_id, &name).await
                                {
                                    break;
                                }
                            }
                            Ok(None) | Err(()) => {
                                let read = log.facts_async(&run, &run).await;
                                if read.is_ok_and(|facts| {
                                    !facts.pauses.is_empty()
                                        || facts.finished.is_some()
                                        || facts.retired
                                }) {
                                    break;
                                }
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                    }
                    say(&format!("- decided {run}"));
                }
                say("- done");
                // Wait to be told to go, so the parent reads everything.
                while !stop.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            other => panic!("unknown role {other}"),
        }
    });
}

async fn connect(url: &str) -> Log {
    loop {
        let config = url.parse().expect("a connection string");
        let options = PostgresOptions::new().timeout(Duration::from_secs(2));
        match PostgresLog::connect_with(config, NoTls, options).await {
            Ok(log) => return log,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Claims `run` (its own root Run): the epoch if this process now owns it,
/// `None` if it is final (handed off, finished or retired), `Err` without
/// an answer (or with a refusal).
async fn claim(log: &Log, history: &mut History, run: &str) -> Result<Option<Epoch>, ()> {
    let op = history.invoke(&format!("claim {run}"));
    match log.claim_async(run, run).await {
        Ok(Claim::Owner(epoch)) => {
            history.complete(op, &format!("ok owner {epoch}"));
            Ok(Some(epoch))
        }
        Ok(Claim::HandedOff(pause)) => {
            history.complete(op, &format!("ok handed-off {}", pause.intent.handoff_id));
            Ok(None)
        }
        Ok(Claim::Finished(outcome)) => {
            history.complete(op, &format!("ok finished {}", outcome_id(&outcome)));
            Ok(None)
        }
        Ok(Claim::Retired) => {
            history.complete(op, "ok retired");
            Ok(None)
        }
        Err(error) => {
            history.complete(op, &refusal(&error));
            Err(())
        }
    }
}

/// The worker's last step through a real gate; whether the Run is handed
/// off (by this append or one before it).
async fn hand_off(
    log: &Log,
    history: &mut History,
    run: &str,
    epoch: Epoch,
    pause_id: &str,
    host: &str,
) -> bool {
    let gate = HandoffGate::new(source(run), run.into());
    let reservation = gate
        .requester()
        .reserve(intent(run, pause_id, host))
        .expect("a valid intent");
    let cancel = CancelSignal::new();
    let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
    let paused: Arc<Pause> = paused.expect("committed");
    let op = history.invoke(&format!("append {run} {epoch} {pause_id}"));
    let appended = append_then_seal_async(&gate, log, epoch, &paused).await;
    let done = match &appended {
        Ok(receipt) => {
            let how = if *receipt == Receipt::Written {
                "written"
            } else {
                "already"
            };
            history.complete(op, &format!("ok {how}"));
            true
        }
        Err(SealError::Fenced { current, .. }) => {
            history.complete(op, &format!("refused fenced {current}"));
            false
        }
        Err(SealError::Append(error)) => {
            history.complete(op, &refusal(error));
            matches!(
                error,
                LogError::AlreadyHandedOff { .. }
                    | LogError::AlreadyFinished { .. }
                    | LogError::Retired { .. }
            )
        }
        Err(other) => {
            history.complete(op, &format!("refused other {other:?}").replace(' ', "_"));
            false
        }
    };
    // R2, R7: what the requester's wait() says; a seal is printed only if
    // it returned the pause.
    if let Ok(Ok(sealed)) = tokio::time::timeout(Duration::from_secs(1), pending.wait()).await {
        say(&format!(
            "- sealed {run} {epoch} {}",
            sealed.intent.handoff_id
        ));
    }
    done
}

/// The outcome a finish records: the execution, with the finish's id as
/// its one loaded tool, so the server's row says whose finish it is.
fn outcome(id: &str) -> baton::HandoffExecution {
    let mut outcome = execution();
    outcome.tools.loaded = vec![id.to_owned()];
    outcome
}

/// The id [`outcome`] put in `outcome`.
fn outcome_id(outcome: &baton::HandoffExecution) -> &str {
    outcome.tools.loaded.first().map_or("?", String::as_str)
}

/// The worker ends its Run without a handoff: `finish_then_close_async`
/// under its epoch, through a real gate.
async fn finish(log: &Log, history: &mut History, run: &str, epoch: Epoch, id: &str) {
    let gate = HandoffGate::new(source(run), run.into());
    let op = history.invoke(&format!("finish {run} {epoch} {id}"));
    match finish_then_close_async(&gate, log, epoch, &outcome(id)).await {
        Ok(Receipt::Written) => history.complete(op, "ok written"),
        Ok(_) => history.complete(op, "ok already"),
        Err(FinishError::Fenced { current, .. }) => {
            history.complete(op, &format!("refused fenced {current}"));
        }
        Err(FinishError::Finish(error)) => history.complete(op, &refusal(&error)),
        Err(other) => history.complete(op, &format!("refused other {other:?}").replace(' ', "_")),
    }
}

/// Retention: retires the root Run `run`.
async fn retire(log: &Log, history: &mut History, run: &str) {
    let op = history.invoke(&format!("retire {run}"));
    match log.retire_async(run).await {
        Ok(Retirement::Retired { runs }) => history.complete(op, &format!("ok retired-now {runs}")),
        Ok(Retirement::AlreadyRetired) => history.complete(op, "ok already-retired"),
        Err(error) => history.complete(op, &refusal(&error)),
    }
}

/// The test-only switch: an append with fencing disabled, on a raw
/// connection. The Run's row lock and the one-pause-per-Run key as the
/// real log has them, but no epoch check: whoever comes first writes.
async fn unfenced_hand_off(
    url: &str,
    raw: &mut Option<tokio_postgres::Client>,
    history: &mut History,
    run: &str,
    epoch: Epoch,
    pause: &Pause,
) {
    let pause_id = pause.intent.handoff_id.as_str();
    let op = history.invoke(&format!("append {run} {epoch} {pause_id}"));
    let outcome = async {
        if raw.as_ref().is_none_or(|c| c.is_closed()) {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            *raw = Some(client);
        }
        let client = raw.as_ref().expect("connected");
        client.batch_execute("BEGIN").await?;
        client
            .query(
                "SELECT epoch FROM baton_run WHERE root_run_id = $1 AND run_id = $2 FOR UPDATE",
                &[&run, &run],
            )
            .await?;
        let existing = client
            .query_opt(
                "SELECT handoff_id FROM baton_handoff_pause WHERE root_run_id = $1 AND run_id = $2",
                &[&run, &run],
            )
            .await?;
        let written = if existing.is_none() {
            let pause = serde_json::to_string(pause).expect("a pause encodes");
            let at = epoch.get() as i64;
            client
                .execute(
                    "INSERT INTO baton_handoff_pause VALUES ($1, $2, 'session', 'turn', $3, $4, $5, $6, \
                     CAST($7::text AS json), $8)",
                    &[
                        &run,
                        &run,
                        &format!("{run}-invocation"),
                        &pause_id,
                        &format!("{run}-next"),
                        &format!("{run}-next-invocation"),
                        &pause,
                        &at,
                    ],
                )
                .await?;
            true
        } else {
            false
        };
        client.batch_execute("COMMIT").await?;
        Ok::<bool, tokio_postgres::Error>(written)
    };
    match tokio::time::timeout(Duration::from_secs(2), outcome).await {
        Ok(Ok(true)) => {
            history.complete(op, "ok written");
            say(&format!("- sealed {run} {epoch} {pause_id}"));
        }
        Ok(Ok(false)) => history.complete(op, "refused already-handed-off"),
        Ok(Err(_)) | Err(_) => {
            *raw = None;
            history.complete(op, "unknown");
        }
    }
}
