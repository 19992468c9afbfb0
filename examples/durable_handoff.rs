//! A durable handoff on a SQLite log, and a zombie worker fenced off.
//!
//! Run A: the owner claims the Run (epoch 1) and starts its worker; the
//! worker hands the Run to a successor: the pause is appended to the log
//! under its epoch (acknowledged only once on disk) and only then sealed.
//!
//! Run B, two workers of one Run: the worker of epoch 1 commits a handoff,
//! then stalls (a GC pause, a stopped process) before its append. The
//! owner takes it for dead and claims the Run again: epoch 2, which fences
//! epoch 1, and starts a second worker. When the zombie wakes, its append
//! is refused (`Fenced`), its gate closes without a seal and it stops; the
//! Run is epoch 2's alone, and its worker hands it off.
//!
//! Run C simply ends: its worker records the outcome under its epoch
//! (`finish_then_close_async`) and closes its gate; a later claim answers
//! `Finished` (never resumed).
//!
//! Finally a new owner, after a restart, claims each Run: `HandedOff`,
//! `HandedOff`, `Finished`, never resumed. A retention pass then retires
//! each root Run whose work has ended: its rows go, one tombstone per root
//! stays, and a claim of any of its Runs answers `Retired`. A Run still
//! open keeps its root, and so does a handoff whose successor is not final
//! yet (its claim must still reach it, G1); a root the log holds nothing
//! for is not retired either.
//!
//! Everything runs on one `current_thread` runtime, and every log
//! operation is awaited through `AsyncHandoffLog`: `SqliteLog` does its
//! transactions and fsyncs on a thread of its own, so the runtime's one
//! thread is never blocked on the disk (the blocking `HandoffLog` and
//! `append_then_seal` are for code outside async).
//!
//! Run with `cargo run --example durable_handoff --features sqlite`.

use std::sync::Arc;

use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, SealError, SqliteLog, append_then_seal_async,
    finish_then_close_async,
};
use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{
    CancelSignal, HandoffExecution, HandoffGate, HandoffIntent, HandoffPause, Invocation,
    PendingSeal,
};

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

fn source(run_id: &str, worker: u8) -> Invocation {
    Invocation {
        session_id: "session-1".into(),
        turn_id: "turn-4".into(),
        run_id: run_id.into(),
        invocation_id: format!("{run_id}-invocation-{worker}"),
    }
}

fn intent(run_id: &str, worker: u8) -> HandoffIntent {
    HandoffIntent {
        handoff_id: format!("handoff-{worker}-of-{run_id}"),
        host_epoch: "host-epoch-9".into(),
        root_run_id: run_id.into(),
        successor_run_id: format!("{run_id}-successor"),
        successor_invocation_id: format!("{run_id}-successor-invocation-1"),
        claim_id: "claim-1".into(),
    }
}

type Log = SqliteLog<HandoffExecution>;
type Pause = HandoffPause<HandoffExecution>;

/// Claims `run` (its own root Run here) for a worker: the epoch it holds.
async fn owner(log: &Log, run: &str) -> Result<Epoch, Box<dyn std::error::Error>> {
    match log.claim_async(run, run).await? {
        Claim::Owner(epoch) => Ok(epoch),
        other => Err(format!("{run} is not open: {other:?}").into()),
    }
}

/// A supervisor reserves a handoff of the gate's Run and commits it at the
/// worker's boundary: the pause the worker must now append, and the
/// supervisor's pending seal.
async fn commit(
    gate: &HandoffGate<HandoffExecution>,
    intent: HandoffIntent,
) -> Result<(Arc<Pause>, PendingSeal<HandoffExecution>), Box<dyn std::error::Error>> {
    let reservation = gate.requester().reserve(intent)?;
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
    Ok((paused?.ok_or("not committed")?, pending?))
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
    let log: Log = SqliteLog::open(&path)?;

    // Run A: a full handoff. The owner claims the Run for its worker; the
    // supervisor reserves and commits; the worker appends the committed
    // pause durably under its epoch, then seals.
    let epoch = owner(&log, "run-a").await?;
    println!("owner      run-a: claimed, epoch {epoch}");
    let gate = HandoffGate::new(source("run-a", 1), "run-a".into());
    let (paused, pending) = commit(&gate, intent("run-a", 1)).await?;
    let receipt = append_then_seal_async(&gate, &log, epoch, &paused).await?;
    println!("worker     run-a: appended ({receipt:?}) then sealed; exiting");
    let sealed = pending.wait().await?;
    println!(
        "supervisor run-a: sealed; successor {} continues",
        sealed.intent.successor_run_id
    );
    drop(gate);

    // Run B: worker 1 (epoch 1) is committed, then stalls before its
    // append. The owner suspects it and takes the Run over: epoch 2, and
    // worker 2 runs the Run while worker 1 is still paused.
    let zombie_epoch = owner(&log, "run-b").await?;
    let zombie = HandoffGate::new(source("run-b", 1), "run-b".into());
    let (zombie_paused, zombie_pending) = commit(&zombie, intent("run-b", 1)).await?;
    println!("worker 1   run-b: epoch {zombie_epoch}, committed, then paused (a zombie to be)");
    let epoch = owner(&log, "run-b").await?;
    let worker = HandoffGate::new(source("run-b", 2), "run-b".into());
    println!(
        "owner      run-b: worker 1 suspected; claimed again, epoch {epoch}; worker 2 runs it"
    );
    // The zombie wakes and goes on with its last step.
    match append_then_seal_async(&zombie, &log, zombie_epoch, &zombie_paused).await {
        Err(SealError::Fenced { epoch, current }) => println!(
            "worker 1   run-b: woke up; append fenced (epoch {epoch}, Run is epoch {current}'s); stops"
        ),
        other => return Err(format!("the zombie was not fenced: {other:?}").into()),
    }
    println!(
        "supervisor run-b: worker 1's wait() = {:?} (no seal: nothing handed off)",
        zombie_pending
            .wait()
            .await
            .map(|p| p.intent.handoff_id.clone())
    );
    // Worker 2, of the current epoch, hands the Run off.
    let (paused, pending) = commit(&worker, intent("run-b", 2)).await?;
    let receipt = append_then_seal_async(&worker, &log, epoch, &paused).await?;
    let sealed = pending.wait().await?;
    println!(
        "worker 2   run-b: appended ({receipt:?}) then sealed {}; exiting",
        sealed.intent.handoff_id
    );
    drop((zombie, worker));

    // Run C ends without a handoff: the worker records its outcome under
    // its epoch, then closes its gate.
    let epoch = owner(&log, "run-c").await?;
    let gate = HandoffGate::new(source("run-c", 1), "run-c".into());
    let receipt = finish_then_close_async(&gate, &log, epoch, &execution()).await?;
    println!("worker     run-c: finished ({receipt:?}) under epoch {epoch}; gate closed");
    drop(gate);
    // Run D is still running when the restart comes.
    let epoch = owner(&log, "run-d").await?;
    println!("owner      run-d: claimed, epoch {epoch}; still running");
    drop(log);

    // A new owner, after a restart: claim each Run; the log decides.
    let log: Log = SqliteLog::open(&path)?;
    for run in ["run-a", "run-b", "run-c"] {
        match log.claim_async(run, run).await? {
            Claim::HandedOff(pause) => println!(
                "owner      {run}: handed off ({}) to {}; never resumed",
                pause.intent.handoff_id, pause.intent.successor_run_id
            ),
            Claim::Finished(_) => println!("owner      {run}: finished; never resumed"),
            other => return Err(format!("{run} should be final: {other:?}").into()),
        }
    }

    // Retention: retire every root Run whose work has ended (G5). An open
    // Run keeps its root, and so does a handoff's successor that is not
    // final yet (nobody has claimed run-a's and run-b's here); a retired
    // root keeps one tombstone, and every claim under it answers Retired
    // (its zombies are refused too).
    for root in ["run-a", "run-b", "run-c", "run-d", "run-never-seen"] {
        match log.retire_async(root).await {
            Ok(retired) => println!("retention  {root}: {retired:?}"),
            Err(LogError::RunOpen { run_id, .. }) => {
                println!("retention  {root}: kept, Run {run_id} is not final yet")
            }
            Err(LogError::NothingToRetire { .. }) => {
                println!("retention  {root}: kept, the log holds no Run of it")
            }
            Err(error) => return Err(error.into()),
        }
    }
    for run in ["run-a", "run-b", "run-c"] {
        let claimed = log.claim_async(run, run).await?;
        println!("owner      {run}: {claimed:?}; never resumed");
    }
    drop(log);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
