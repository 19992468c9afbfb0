//! A durable handoff on a SQLite log, and what an owner decides after a
//! crash. A worker hands its Run to a successor: the pause is appended to the
//! log (acknowledged only once on disk) and only then sealed. Later a "new
//! owner" reopens the log and reconciles: the Run is handed off, so the old
//! worker must never resume. A second Run whose worker dies before its
//! append reconciles as resumable.
//!
//! Run with `cargo run --example durable_handoff --features sqlite`.

use baton::durable::{Decision, HandoffLog, SqliteLog, append_then_seal, reconcile};
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
    let log = SqliteLog::open(&path)?;

    // Run A: a full handoff. The supervisor reserves and commits; the worker
    // appends the committed pause durably, then seals.
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
    let (paused, pending) = (
        paused.ok_or("not committed")?,
        pending.ok_or("not committed")?,
    );
    let receipt = append_then_seal(&gate, &log, &paused)?;
    println!("worker     appended ({receipt:?}) then sealed; exiting");
    let sealed = pending.wait().await.ok_or("the worker did not seal")?;
    println!(
        "supervisor sealed: successor {} continues",
        sealed.intent.successor_run_id
    );
    drop(gate);

    // Run B: the worker is committed, then dies before its append (here: it
    // drops its gate, which closes it). The requester learns nothing final.
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
    assert!(paused.is_some());
    drop(gate); // the crash
    let pending = pending.ok_or("not committed")?;
    println!(
        "supervisor run-b: wait() = {:?} (no seal)",
        pending.wait().await.map(|p| p.intent.handoff_id.clone())
    );
    drop(log);

    // A new owner, after a restart: reconcile each Run from the log alone.
    let log = SqliteLog::open(&path)?;
    for run in ["run-a", "run-b"] {
        let facts = HandoffLog::<HandoffExecution>::facts(&log, run, run)?;
        match reconcile(&facts)? {
            Decision::HandedOff(pause) => println!(
                "owner      {run}: handed off to {}; never resume the old worker",
                pause.intent.successor_run_id
            ),
            Decision::Resumable => {
                println!("owner      {run}: resumable; a new worker resumes from canonical state")
            }
        }
    }
    drop(log);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
