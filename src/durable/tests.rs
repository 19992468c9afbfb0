//! The log rules on [`MemoryLog`], and the worker helper's two paths.

use std::sync::Arc;

use super::*;
use crate::cancel::CancelSignal;
use crate::facts::{Field, HandoffIntent, HandoffPause, IntentError, Invocation};
use crate::gate::HandoffGate;
use crate::gate::core::StateKind;
use crate::within::within;

pub(super) fn source() -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    }
}

pub(super) fn pause(handoff_id: &str) -> HandoffPause<u32> {
    let intent = HandoffIntent {
        handoff_id: handoff_id.into(),
        host_epoch: "epoch".into(),
        root_run_id: "root".into(),
        successor_run_id: "successor-run".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    };
    HandoffPause::new(intent, 7)
}

/// The log rules every [`HandoffLog`] keeps; run on each implementation.
pub(super) fn the_log_rules_hold(log: &dyn HandoffLog<u32>) {
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(reconcile(&facts), Ok(Decision::Resumable));

    let mut other_root = pause("h");
    Arc::make_mut(&mut other_root.intent).root_run_id = "other-root".into();
    assert!(
        matches!(
            log.append("root", &source(), &other_root),
            Err(LogError::InvalidPause(IntentError::OtherRootRun { .. }))
        ),
        "a pause for another root Run is bad input"
    );
    let mut itself = pause("h");
    Arc::make_mut(&mut itself.intent).successor_run_id = "run".into();
    assert!(matches!(
        log.append("root", &source(), &itself),
        Err(LogError::InvalidPause(IntentError::SuccessorIsSource(
            Field::SuccessorRunId
        )))
    ));
    let mut bad_source = source();
    bad_source.run_id.clear();
    assert!(matches!(
        log.append("root", &bad_source, &pause("h")),
        Err(LogError::InvalidRun {
            field: "run_id",
            ..
        })
    ));
    assert!(
        log.facts("root", "run").unwrap().pauses.is_empty(),
        "bad input writes nothing"
    );

    assert_eq!(
        log.append("root", &source(), &pause("h")).unwrap(),
        Receipt::Written
    );
    assert_eq!(
        log.append("root", &source(), &pause("h")).unwrap(),
        Receipt::AlreadyDurable,
        "the identical append again is idempotent"
    );
    assert!(
        matches!(
            log.append("root", &source(), &pause("other")),
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "a second, different pause for the Run is refused"
    );
    let mut other_invocation = source();
    other_invocation.invocation_id = "invocation-2".into();
    assert!(
        matches!(
            log.append("root", &other_invocation, &pause("h")),
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "the same pause from another invocation of the Run is not the identical row"
    );
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(facts.pauses.len(), 1, "refused appends wrote nothing");
    assert_eq!(reconcile(&facts), Ok(Decision::HandedOff(pause("h"))));

    assert_eq!(
        reconcile(&log.facts("root", "other-run").unwrap()),
        Ok(Decision::Resumable),
        "another Run's facts are its own"
    );
    let mut next_hop = source();
    next_hop.run_id = "successor-run".into();
    next_hop.invocation_id = "successor-invocation".into();
    let mut onward = pause("h2");
    Arc::make_mut(&mut onward.intent).successor_run_id = "third-run".into();
    Arc::make_mut(&mut onward.intent).successor_invocation_id = "third-invocation".into();
    assert_eq!(
        log.append("root", &next_hop, &onward).unwrap(),
        Receipt::Written,
        "the next hop of a chain (another Run of the same root) hands off too"
    );
    assert_eq!(
        reconcile(&log.facts("root", "successor-run").unwrap()),
        Ok(Decision::HandedOff(onward))
    );
    assert_eq!(
        reconcile(&log.facts("root", "run").unwrap()),
        Ok(Decision::HandedOff(pause("h"))),
        "each Run keeps its own pause"
    );
    assert!(matches!(
        log.facts("", "run"),
        Err(LogError::InvalidRun {
            field: "root_run_id",
            ..
        })
    ));
}

#[test]
fn the_memory_log_keeps_the_log_rules() {
    let log = MemoryLog::new();
    assert!(log.is_empty());
    the_log_rules_hold(&log);
    assert_eq!(log.len(), 2, "one row per Run that handed off");
    assert!(!log.is_empty());
    assert_eq!(format!("{log:?}"), "MemoryLog { len: 2 }");
}

type Gate = HandoffGate<u32>;

fn gate() -> Gate {
    HandoffGate::new(source(), "root".into())
}

/// Drives `gate` to Committed on `pause("h")`; returns the requester's
/// pending seal and the pause `boundary` returned.
async fn committed(gate: &Gate) -> (crate::gate::PendingSeal<u32>, Arc<HandoffPause<u32>>) {
    let requester = gate.requester();
    let cancel = CancelSignal::new();
    let reservation = requester.reserve(pause("h").intent).unwrap();
    let (paused, pending) = within(
        "L1: the boundary and the requester's ready and commit meet",
        async {
            tokio::join!(
                gate.boundary(&cancel, |intent| async move {
                    Some(HandoffPause {
                        intent,
                        execution: 7,
                    })
                }),
                async { reservation.ready().await.unwrap().commit().unwrap() }
            )
        },
    )
    .await;
    (pending, paused.expect("committed"))
}

/// A log whose every operation fails, like a full disk.
struct BrokenLog;

impl HandoffLog<u32> for BrokenLog {
    fn append(&self, _: &str, _: &Invocation, _: &HandoffPause<u32>) -> Result<Receipt, LogError> {
        Err(LogError::Storage("disk full".into()))
    }
    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<u32>, LogError> {
        Ok(RunFacts::empty(root_run_id, run_id))
    }
}

#[tokio::test]
async fn append_then_seal_appends_before_it_seals_and_wait_sees_the_durable_pause() {
    let gate = gate();
    let log = MemoryLog::new();
    let (pending, paused) = committed(&gate).await;
    assert_eq!(
        append_then_seal(&gate, &log, &paused).unwrap(),
        Receipt::Written
    );
    assert_eq!(gate.state().kind(), StateKind::Sealed);
    let sealed = within(
        "S5: the sealed pause reaches the waiting requester",
        pending.wait(),
    )
    .await
    .expect("S5: a sealed pause");
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(gate.source(), &source());
    assert_eq!(
        facts
            .pauses
            .iter()
            .map(|row| &row.source)
            .collect::<Vec<_>>(),
        [&source()],
        "the pause is filed under the gate's own source"
    );
    assert_eq!(
        reconcile(&facts),
        Ok(Decision::HandedOff(HandoffPause::clone(&sealed))),
        "a Some from wait() implies the pause is durable"
    );
}

#[tokio::test]
async fn a_failed_append_closes_the_gate_without_a_seal_and_the_run_is_resumable() {
    let gate = gate();
    let (pending, paused) = committed(&gate).await;
    assert!(matches!(
        append_then_seal(&gate, &BrokenLog, &paused),
        Err(SealError::Append(LogError::Storage(_)))
    ));
    assert_eq!(gate.state().kind(), StateKind::Closed);
    assert_eq!(
        within("L1: closing the gate ends the pending seal", pending.wait()).await,
        None,
        "S5: no seal without the append"
    );
    let facts = BrokenLog.facts("root", "run").unwrap();
    assert_eq!(reconcile(&facts), Ok(Decision::Resumable));
}

#[tokio::test]
async fn append_then_seal_refuses_a_pause_the_gate_is_not_committed_to_and_appends_nothing() {
    let gate = gate();
    let log = MemoryLog::new();
    assert!(matches!(
        append_then_seal(&gate, &log, &pause("h")),
        Err(SealError::NotCommitted)
    ));
    let (pending, _) = committed(&gate).await;
    assert!(matches!(
        append_then_seal(&gate, &log, &pause("other")),
        Err(SealError::NotCommitted)
    ));
    assert!(log.is_empty(), "nothing appended");
    assert_eq!(
        gate.state().kind(),
        StateKind::Committed,
        "the gate is unchanged"
    );
    gate.close();
    assert_eq!(
        within("L1: closing the gate ends the pending seal", pending.wait()).await,
        None
    );
}
