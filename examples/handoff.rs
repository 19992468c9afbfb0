//! A worker runs an agent Run step by step; a supervisor asks to hand the Run
//! to a successor. The worker prepares a pause at its next step boundary, the
//! supervisor commits, the worker appends the pause durably (simulated) and
//! seals, and the supervisor receives the sealed pause.
//!
//! Run with `cargo run --example handoff`.

use std::time::Duration;

use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{CancelSignal, HandoffExecution, HandoffGate, HandoffIntent, HandoffPause, Invocation};

fn digest(seed: u8) -> Digest {
    Digest::parse(format!("sha256:{}", format!("{seed:02x}").repeat(32))).expect("64 hex digits")
}

/// What the worker hands to its successor after `steps` steps.
fn execution_after(steps: u32) -> HandoffExecution {
    HandoffExecution {
        replay: ReplayEvidence {
            version: REPLAY_VERSION,
            digest: digest(steps as u8),
            route_identity: digest(0xee),
        },
        tools: HandoffTools {
            catalog_digest: digest(0xcc),
            loaded: vec!["shell".into(), "search".into()],
        },
        compaction: CompactionBudget::Available,
        main_output_limit: Some(8192),
        supports_vision: false,
        replay_base: None,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let source = Invocation {
        session_id: "session-1".into(),
        turn_id: "turn-4".into(),
        run_id: "run-a".into(),
        invocation_id: "invocation-a1".into(),
    };
    let gate = HandoffGate::<HandoffExecution>::new(source, "run-a".into());
    let requester = gate.requester();
    let cancel = CancelSignal::new();

    let worker = async move {
        for step in 1.. {
            println!("worker     step {step}");
            tokio::time::sleep(Duration::from_millis(5)).await;
            let pause = gate
                .boundary(&cancel, |intent| async move {
                    println!(
                        "worker     boundary: preparing a pause for {}",
                        intent.handoff_id
                    );
                    Some(HandoffPause {
                        intent,
                        execution: execution_after(step),
                    })
                })
                .await;
            let Some(pause) = pause else { continue };
            println!("worker     committed at step {step}; appending the pause durably");
            tokio::time::sleep(Duration::from_millis(10)).await; // the durable append
            let sealed = gate.sealed(&pause);
            println!("worker     sealed: {sealed}; exiting, the successor owns the Run");
            return step;
        }
        unreachable!("the loop only ends by handing off")
    };

    let supervisor = async move {
        tokio::time::sleep(Duration::from_millis(12)).await;
        let intent = HandoffIntent {
            handoff_id: "handoff-1".into(),
            host_epoch: "host-epoch-9".into(),
            root_run_id: "run-a".into(),
            successor_run_id: "run-b".into(),
            successor_invocation_id: "invocation-b1".into(),
            claim_id: "claim-1".into(),
        };
        let reservation = requester.reserve(intent)?;
        println!(
            "supervisor reserved ticket {}: {:?}",
            reservation.ticket(),
            requester.state().kind()
        );
        let held = reservation
            .ready()
            .await
            .ok_or("the worker released the Run")?;
        println!(
            "supervisor held: {:?}, replay {}",
            requester.state().kind(),
            held.preview().execution.replay.digest
        );
        let pending = held.commit().ok_or("the Run was canceled")?;
        println!("supervisor committed: {:?}", requester.state().kind());
        let sealed = pending
            .wait()
            .await
            .ok_or("the worker exited without sealing")?;
        println!(
            "supervisor sealed: {:?}; successor {} continues",
            requester.state().kind(),
            sealed.intent.successor_run_id
        );
        Ok::<_, Box<dyn std::error::Error>>(sealed)
    };

    let started = std::time::Instant::now();
    let (steps, sealed) = tokio::join!(worker, supervisor);
    let sealed = sealed?;
    println!(
        "handed off after {steps} steps in {:?}: {}",
        started.elapsed(),
        serde_json::to_string(&sealed.intent)?
    );
    Ok(())
}
