//! The worker's finish: [`close_step`] cell by cell, and both adapters on
//! each of its paths (R7, R8).

use super::*;
use crate::durable::tests::{BrokenLog, committed, gate, owner};
use crate::durable::{Claim, MemoryLog};
use crate::gate::ReadyError;
use crate::within::within;

#[test]
fn r8_close_step_sends_a_finish_only_from_a_gate_with_no_handoff_under_way() {
    for kind in StateKind::ALL {
        let step = close_step(kind, None);
        match kind {
            StateKind::Committed | StateKind::Sealed => {
                assert!(
                    matches!(step, Err(FinishError::HandoffUnderway)),
                    "{kind:?}"
                )
            }
            _ => assert!(matches!(step, Ok(None)), "{kind:?}"),
        }
        assert!(matches!(
            close_step(kind, Some(Ok(Receipt::AlreadyDurable))),
            Ok(Some(Receipt::AlreadyDurable))
        ));
        let fenced = LogError::Fenced {
            epoch: Epoch::new(1),
            current: Epoch::new(2),
        };
        assert!(matches!(
            close_step(kind, Some(Err(fenced))),
            Err(FinishError::Fenced { epoch, current }) if epoch == Epoch::new(1) && current == Epoch::new(2)
        ));
        let lost = LogError::OutcomeUnknown("the reply was lost".into());
        assert!(matches!(
            close_step(kind, Some(Err(lost))),
            Err(FinishError::Finish(LogError::OutcomeUnknown(_)))
        ));
    }
}

#[tokio::test]
async fn r8_a_finished_run_is_never_resumed_and_its_requester_answers_closed() {
    let worker = gate();
    let log = MemoryLog::new();
    let epoch = owner(&log);
    let requester = worker.requester();
    let reservation = requester
        .reserve(crate::durable::tests::pause("h").intent)
        .unwrap();
    assert_eq!(
        finish_then_close(&worker, &log, epoch, &5).unwrap(),
        Receipt::Written
    );
    assert_eq!(worker.state().kind(), StateKind::Closed);
    assert!(matches!(
        within(
            "a requester of a finished Run is answered",
            reservation.ready()
        )
        .await,
        Err(ReadyError::Closed)
    ));
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Finished(5));
    let again = gate();
    assert_eq!(
        finish_then_close_async(&again, &log, epoch, &5)
            .await
            .unwrap(),
        Receipt::AlreadyDurable,
        "the identical finish again (a lost reply) is idempotent"
    );
}

#[tokio::test]
async fn r8_a_gate_committed_to_a_pause_does_not_finish_and_writes_nothing() {
    let gate = gate();
    let log = MemoryLog::new();
    let epoch = owner(&log);
    let (_pending, _paused) = committed(&gate).await;
    assert!(matches!(
        finish_then_close(&gate, &log, epoch, &5),
        Err(FinishError::HandoffUnderway)
    ));
    assert!(matches!(
        finish_then_close_async(&gate, &log, epoch, &5).await,
        Err(FinishError::HandoffUnderway)
    ));
    assert_eq!(
        gate.state().kind(),
        StateKind::Committed,
        "the gate is unchanged"
    );
    assert!(
        log.facts("root", "run").unwrap().finished.is_none(),
        "nothing written"
    );
}

#[tokio::test]
async fn r7_a_fenced_or_failed_finish_closes_the_gate_and_writes_nothing() {
    let log = MemoryLog::new();
    let old = owner(&log);
    let _takeover = owner(&log);
    let zombie = gate();
    assert!(matches!(
        finish_then_close_async(&zombie, &log, old, &5).await,
        Err(FinishError::Fenced { .. })
    ));
    assert_eq!(zombie.state().kind(), StateKind::Closed);
    assert!(log.facts("root", "run").unwrap().finished.is_none());
    let broken = gate();
    let error = finish_then_close(&broken, &BrokenLog, Epoch::new(1), &5).unwrap_err();
    assert!(matches!(
        error,
        FinishError::Finish(LogError::Unavailable(_))
    ));
    assert!(
        std::error::Error::source(&error).is_some(),
        "the log's error is the source"
    );
    assert_eq!(broken.state().kind(), StateKind::Closed);
}
