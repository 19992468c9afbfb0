//! The worker's last step: [`seal_step`] cell by cell, the error chain,
//! and [`append_then_seal_async`] on each path the blocking form has.

use std::error::Error as _;

use super::*;
use crate::durable::tests::{BrokenLog, committed, gate, owner, pause};
use crate::durable::{Claim, Decision, MemoryLog, RunFacts, RunField, reconcile};
use crate::facts::{Field, IdError, IntentError, Invocation};
use crate::gate::WaitError;
use crate::gate::core::StateKind;
use crate::within::within;

/// Every answer an append can give, with the step R2/R7 require of it:
/// `Some(fenced)` for a close, `None` for a seal.
fn every_answer() -> Vec<(Result<Receipt, LogError>, Option<bool>)> {
    let (one, two) = (Epoch::new(1), Epoch::new(2));
    vec![
        (Ok(Receipt::Written), None),
        (Ok(Receipt::AlreadyDurable), None),
        (
            Err(LogError::Fenced {
                epoch: one,
                current: two,
            }),
            Some(true),
        ),
        (
            Err(LogError::InvalidPause(IntentError::Empty(Field::HandoffId))),
            Some(false),
        ),
        (
            Err(LogError::InvalidRun {
                field: RunField::RunId,
                error: IdError::Empty,
            }),
            Some(false),
        ),
        (
            Err(LogError::AlreadyHandedOff {
                root_run_id: "root".into(),
                run_id: "run".into(),
            }),
            Some(false),
        ),
        (
            Err(LogError::EpochNotIssued {
                epoch: two,
                current: one,
            }),
            Some(false),
        ),
        (Err(LogError::EpochsExhausted), Some(false)),
        (
            Err(LogError::Contradictory(
                crate::durable::ReconcileError::ConflictingPauses { count: 2 },
            )),
            Some(false),
        ),
        (
            Err(LogError::UnknownSchema {
                found: 9,
                expected: 2,
            }),
            Some(false),
        ),
        (
            Err(LogError::Corrupt {
                run_id: "run".into(),
                reason: "altered".into(),
            }),
            Some(false),
        ),
        (
            Err(LogError::Encode(
                serde_json::from_str::<u32>("x").unwrap_err(),
            )),
            Some(false),
        ),
        (
            Err(LogError::Unavailable("connection refused".into())),
            Some(false),
        ),
        (
            Err(LogError::OutcomeUnknown("the reply was lost".into())),
            Some(false),
        ),
    ]
}

/// R2 / R7, cell by cell: only an acknowledged append seals (with its
/// receipt); `Fenced` closes and says stop; every other error closes with
/// the log's error inside.
#[test]
fn seal_step_seals_only_an_acknowledged_append_and_closes_on_every_error_r2_r7() {
    for (answer, expected) in every_answer() {
        let shown = format!("{answer:?}");
        let receipt = answer.as_ref().ok().copied();
        let log_error = answer.as_ref().err().map(ToString::to_string);
        match (seal_step(answer), expected) {
            (SealStep::Seal(got), None) => assert_eq!(Some(got), receipt, "{shown}"),
            (SealStep::Close(SealError::Fenced { epoch, current }), Some(true)) => {
                assert_eq!((epoch, current), (Epoch::new(1), Epoch::new(2)), "{shown}")
            }
            (SealStep::Close(SealError::Append(inner)), Some(false)) => {
                assert_eq!(
                    Some(inner.to_string()),
                    log_error,
                    "{shown}: the log's own error"
                )
            }
            (step, expected) => panic!("R2/R7: {shown} gave {step:?}, expected {expected:?}"),
        }
    }
}

/// The error chain names each cause once: `SealError::Append`'s message
/// does not repeat the `LogError` its `source()` returns, nor
/// `LogError::Unavailable`'s the store's error.
#[test]
fn a_failed_appends_error_chain_prints_each_cause_once() {
    let error = SealError::Append(LogError::Unavailable("disk full".into()));
    let mut chain = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(next) = cause {
        chain.push(next.to_string());
        cause = next.source();
    }
    assert_eq!(
        chain,
        [
            "the durable append failed; the gate is closed without a seal",
            "storage unavailable; nothing was written",
            "disk full",
        ]
    );
    let encode = LogError::Encode(serde_json::from_str::<u32>("x").unwrap_err());
    let inner = encode
        .source()
        .expect("the JSON error is the source")
        .to_string();
    assert!(!encode.to_string().contains(&inner), "{encode}");
}

impl AsyncHandoffLog<u32> for BrokenLog {
    async fn claim_async(&self, root_run_id: &str, run_id: &str) -> Result<Claim<u32>, LogError> {
        HandoffLog::claim(self, root_run_id, run_id)
    }
    async fn append_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<u32>,
    ) -> Result<Receipt, LogError> {
        HandoffLog::append(self, root_run_id, source, epoch, pause)
    }
    async fn facts_async(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<RunFacts<u32>, LogError> {
        HandoffLog::facts(self, root_run_id, run_id)
    }
}

#[tokio::test]
async fn the_async_form_appends_before_it_seals_and_wait_sees_the_durable_pause_r2() {
    let gate = gate();
    let log = MemoryLog::new();
    let epoch = owner(&log);
    let (pending, paused) = committed(&gate).await;
    let receipt = within(
        "R4: the async append resolves",
        append_then_seal_async(&gate, &log, epoch, &paused),
    )
    .await;
    assert_eq!(receipt.unwrap(), Receipt::Written);
    assert_eq!(gate.state().kind(), StateKind::Sealed);
    let sealed = within(
        "S5: the sealed pause reaches the waiting requester",
        pending.wait(),
    )
    .await
    .expect("S5: a sealed pause");
    assert_eq!(
        reconcile(&log.facts("root", "run").unwrap()),
        Ok(Decision::HandedOff(HandoffPause::clone(&sealed))),
        "R2: a Some from wait() implies the pause is durable"
    );
}

#[tokio::test]
async fn the_async_form_closes_the_gate_without_a_seal_when_the_append_fails() {
    let gate = gate();
    let (pending, paused) = committed(&gate).await;
    assert!(matches!(
        append_then_seal_async(&gate, &BrokenLog, Epoch::new(1), &paused).await,
        Err(SealError::Append(LogError::Unavailable(_)))
    ));
    assert_eq!(gate.state().kind(), StateKind::Closed);
    assert_eq!(
        within("L1: closing the gate ends the pending seal", pending.wait()).await,
        Err(WaitError::Closed),
        "R2: no seal without the append"
    );
}

#[tokio::test]
async fn the_async_form_refuses_a_pause_the_gate_is_not_committed_to() {
    let gate = gate();
    let log = MemoryLog::new();
    let epoch = owner(&log);
    assert!(matches!(
        append_then_seal_async(&gate, &log, epoch, &pause("h")).await,
        Err(SealError::NotCommitted)
    ));
    let (_pending, _) = committed(&gate).await;
    assert!(matches!(
        append_then_seal_async(&gate, &log, epoch, &pause("other")).await,
        Err(SealError::NotCommitted)
    ));
    assert!(log.is_empty(), "nothing appended");
    assert_eq!(
        gate.state().kind(),
        StateKind::Committed,
        "the gate is unchanged"
    );
}

/// R7 through the async form: the zombie of epoch 1 wakes after the
/// owner's takeover; its append is fenced, nothing written, gate closed.
#[tokio::test]
async fn the_async_form_fences_a_zombie_r7() {
    let gate = gate();
    let log = MemoryLog::new();
    let zombie = owner(&log);
    let (pending, paused) = committed(&gate).await;
    let takeover = owner(&log);
    assert!(matches!(
        append_then_seal_async(&gate, &log, zombie, &paused).await,
        Err(SealError::Fenced { epoch, current }) if epoch == zombie && current == takeover
    ));
    assert_eq!(
        gate.state().kind(),
        StateKind::Closed,
        "R7: closed without a seal"
    );
    assert_eq!(
        within("R7: a fenced worker's pending seal ends", pending.wait()).await,
        Err(WaitError::Closed)
    );
    assert!(
        log.facts("root", "run").unwrap().pauses.is_empty(),
        "R7: nothing written"
    );
}

/// Cancel safety, as documented: a future dropped before its first poll
/// does nothing (sqlite_tests drops one mid-append).
#[tokio::test]
async fn an_async_append_then_seal_dropped_before_its_first_poll_does_nothing() {
    let gate = gate();
    let log = MemoryLog::new();
    let epoch = owner(&log);
    let (pending, paused) = committed(&gate).await;
    drop(append_then_seal_async(&gate, &log, epoch, &paused));
    assert!(log.is_empty(), "an unpolled future appends nothing");
    assert_eq!(gate.state().kind(), StateKind::Committed);
    assert_eq!(
        append_then_seal_async(&gate, &log, epoch, &paused)
            .await
            .unwrap(),
        Receipt::Written
    );
    assert!(within("S5: sealed", pending.wait()).await.is_ok());
}
