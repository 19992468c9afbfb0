//! A durable handoff on a SQLite log, and a zombie worker fenced off.
//!
//! Run A: the owner claims the Run (epoch 1) and starts its worker; the
//! worker hands the Run to a successor: the pause is appended to the log
//! under its epoch (acknowledged only once on disk) and only then sealed.
//!
//! Run B: the worker of epoch 1 commits a handoff, then stalls (a GC pause,
//! a stopped process) before its append. The owner takes it for dead and
//! claims the Run again: epoch 2, which fences epoch 1. When the zombie
//! wakes, its append is refused (`Fenced`), its gate closes without a seal
//! and it stops; the Run is epoch 2's alone.
//!
//! Finally a new owner, after a restart, claims each Run: run A answers
//! `HandedOff` (never resumed), run B a fresh epoch.
//!
//! Run with `cargo run --example durable_handoff --features sqlite`.

use baton::durable::{Claim, Epoch, HandoffLog, SealError, SqliteLog, append_then_seal};
use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{CancelSignal, HandoffExecution, HandoffGate, HandoffIntent, HandoffPause, Invocation};

fn digest(seed: u8) -> Digest {
    Digest::parse(format!("sha256:{}", format!("{seed:02x}").repeat(32))).expect("64 hex digits")
}

fn execution() -> HandoffExecution {
    HandoffExecution {
        replay: ReplayEvidence {
            version: REPLAY_VERSION,
            digest: digest(0x42),
            route_identity: digest(0xee),
        },
        tools: HandoffTools {
            catalog_digest: digest(0xcc),
            loaded: vec!["shell".into()],
        },
        compaction: CompactionBudget::Available,
        main_output_limit: Some(8192),
        supports_vision: false,
        replay_base: None,
    }
}

fn source(run_id: &str) -> Invocation {
    Invocation {
        session_id: "session-1".into(),
        turn_id: "turn-4".into(),
        run_id: run_id.into(),
        invocation_id: format!("{run_id}-invocation-1"),
    }
}

fn intent(run_id: &str) -> HandoffIntent {
    HandoffIntent {
        handoff_id: format!("handoff-of-{run_id}"),
        host_epoch: "host-epoch-9".into(),
        root_run_id: run_id.into(),
        successor_run_id: format!("{run_id}-successor"),
        successor_invocation_id: format!("{run_id}-successor-invocation-1"),
        claim_id: "claim-1".into(),
    }
}

/// Claims `run` (its own root Run here) for a worker: the epoch it holds.
fn owner(
    log: &SqliteLog<HandoffExecution>,
    run: &str,
) -> Result<Epoch, Box<dyn std::error::Error>> {
    match log.claim(run, run)? {
        Claim::Owner(epoch) => Ok(epoch),
        Claim::HandedOff(pause) => Err(format!("{run} is already handed off: {pause:?}").into()),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!(
        "baton-durable-handoff-{}-{}.sqlite",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos()
    ));
    println!("log        {}", path.display());
    let log: SqliteLog<HandoffExecution> = SqliteLog::open(&path)?;

    // Run A: a full handoff. The owner claims the Run for its worker; the
    // supervisor reserves and commits; the worker appends the committed
    // pause durably under its epoch, then seals.
    let epoch = owner(&log, "run-a")?;
    println!("owner      run-a: claimed, epoch {epoch}");
    let gate = HandoffGate::<HandoffExecution>::new(source("run-a"), "run-a".into());
    let requester = gate.requester();
    let reservation = requester.reserve(intent("run-a"))?;
    let cancel = CancelSignal::new();
    let (paused, pending) = tokio::join!(
        gate.boundary(&cancel, |intent| async move {
            Some(HandoffPause {
                intent,
                execution: execution(),
            })
        }),
        async { reservation.ready().await?.commit() }
    );
    let (paused, pending) = (paused?.ok_or("not committed")?, pending?);
    let receipt = append_then_seal(&gate, &log, epoch, &paused)?;
    println!("worker     run-a: appended ({receipt:?}) then sealed; exiting");
    let sealed = pending.wait().await?;
    println!(
        "supervisor run-a: sealed; successor {} continues",
        sealed.intent.successor_run_id
    );
    drop(gate);

    // Run B: the worker of epoch 1 is committed, then stalls before its
    // append. The owner suspects it and takes the Run over: epoch 2.
    let zombie_epoch = owner(&log, "run-b")?;
    let gate = HandoffGate::<HandoffExecution>::new(source("run-b"), "run-b".into());
    let requester = gate.requester();
    let reservation = requester.reserve(intent("run-b"))?;
    let (paused, pending) = tokio::join!(
        gate.boundary(&cancel, |intent| async move {
            Some(HandoffPause {
                intent,
                execution: execution(),
            })
        }),
        async { reservation.ready().await?.commit() }
    );
    let (paused, pending) = (paused?.ok_or("not committed")?, pending?);
    println!("worker     run-b: epoch {zombie_epoch}, committed, then paused (a zombie to be)");
    let new_epoch = owner(&log, "run-b")?;
    println!(
        "owner      run-b: worker suspected; claimed again, epoch {new_epoch}; a new worker runs it"
    );
    // The zombie wakes and goes on with its last step.
    match append_then_seal(&gate, &log, zombie_epoch, &paused) {
        Err(SealError::Fenced { epoch, current }) => {
            println!(
                "worker     run-b: woke up; append fenced (epoch {epoch}, Run is epoch {current}'s); stops"
            )
        }
        other => return Err(format!("the zombie was not fenced: {other:?}").into()),
    }
    println!(
        "supervisor run-b: wait() = {:?} (no seal: nothing handed off)",
        pending.wait().await.map(|p| p.intent.handoff_id.clone())
    );
    drop(gate);
    drop(log);

    // A new owner, after a restart: claim each Run; the log decides.
    let log: SqliteLog<HandoffExecution> = SqliteLog::open(&path)?;
    for run in ["run-a", "run-b"] {
        match log.claim(run, run)? {
            Claim::HandedOff(pause) => println!(
                "owner      {run}: handed off to {}; never resumed",
                pause.intent.successor_run_id
            ),
            Claim::Owner(epoch) => {
                println!("owner      {run}: open; a new worker resumes it with epoch {epoch}")
            }
        }
    }
    drop(log);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
