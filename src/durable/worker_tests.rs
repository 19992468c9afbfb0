//! The worker's last step: [`seal_step`] cell by cell, the error chain,
//! and [`append_then_seal_async`] on each path the blocking form has.

use std::error::Error as _;
use std::sync::Arc;

use super::*;
use crate::durable::tests::{BrokenLog, committed, gate, owner, pause};
use crate::durable::{Claim, Decision, MemoryLog, Retirement, RunFacts, RunField, reconcile};
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
    async fn finish_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &u32,
    ) -> Result<Receipt, LogError> {
        HandoffLog::finish(self, root_run_id, source, epoch, outcome)
    }
    async fn retire_async(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        HandoffLog::retire(self, root_run_id)
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

/// What [`AroundAppend`] answers, made of what its inner log answered.
type Answer<'a> = dyn Fn(Result<Receipt, LogError>) -> Result<Receipt, LogError> + Send + Sync + 'a;

/// A log whose append goes to `log` (if `writes`), and whose answer is
/// then what `after` makes of the inner log's: a way to decide, by
/// construction, what happens around the append (issue 37: the gate closed
/// once the pause is durable; issue 44: the reply lost).
struct AroundAppend<'a> {
    log: &'a MemoryLog<u32>,
    writes: bool,
    after: Box<Answer<'a>>,
}

impl<'a> AroundAppend<'a> {
    /// Closes the gate once the inner log has made the pause durable,
    /// before answering: the seal that follows does not land.
    fn closes_the_gate(log: &'a MemoryLog<u32>, gate: &'a crate::durable::tests::Gate) -> Self {
        Self {
            log,
            writes: true,
            after: Box::new(move |appended| {
                gate.close();
                appended
            }),
        }
    }

    /// Answers `OutcomeUnknown` whatever happened, after writing the pause
    /// (`writes`, a reply lost after the commit) or not (lost before).
    fn loses_the_reply(log: &'a MemoryLog<u32>, writes: bool) -> Self {
        Self {
            log,
            writes,
            after: Box::new(|_| Err(LogError::OutcomeUnknown("the reply was lost".into()))),
        }
    }
}

impl HandoffLog<u32> for AroundAppend<'_> {
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<u32>, LogError> {
        self.log.claim(root_run_id, run_id)
    }
    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<u32>,
    ) -> Result<Receipt, LogError> {
        let appended = if self.writes {
            self.log.append(root_run_id, source, epoch, pause)
        } else {
            Ok(Receipt::Written) // never sent
        };
        (self.after)(appended)
    }
    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &u32,
    ) -> Result<Receipt, LogError> {
        self.log.finish(root_run_id, source, epoch, outcome)
    }
    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        self.log.retire(root_run_id)
    }
    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<u32>, LogError> {
        self.log.facts(root_run_id, run_id)
    }
}

impl AsyncHandoffLog<u32> for AroundAppend<'_> {
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
    async fn finish_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &u32,
    ) -> Result<Receipt, LogError> {
        HandoffLog::finish(self, root_run_id, source, epoch, outcome)
    }
    async fn retire_async(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        HandoffLog::retire(self, root_run_id)
    }
    async fn facts_async(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<RunFacts<u32>, LogError> {
        HandoffLog::facts(self, root_run_id, run_id)
    }
}

/// The seal that does not land after a durable append (issue 37): the
/// gate is closed between the append and the seal, so both forms answer
/// `ClosedBeforeSeal` — not `Append`, not `Ok` — while the pause is
/// durable (the owner's claim then answers `HandedOff`, R1), and the
/// requester's `wait()` answers `Closed`.
#[tokio::test]
async fn a_seal_that_does_not_land_after_a_durable_append_is_closed_before_seal_in_both_forms() {
    for blocking in [true, false] {
        let gate = gate();
        let log = MemoryLog::new();
        let epoch = owner(&log);
        let (pending, paused) = committed(&gate).await;
        let closing = AroundAppend::closes_the_gate(&log, &gate);
        let answer = if blocking {
            append_then_seal(&gate, &closing, epoch, &paused)
        } else {
            append_then_seal_async(&gate, &closing, epoch, &paused).await
        };
        assert!(
            matches!(answer, Err(SealError::ClosedBeforeSeal)),
            "blocking {blocking}: {answer:?}"
        );
        assert_eq!(
            reconcile(&log.facts("root", "run").unwrap()),
            Ok(Decision::HandedOff(HandoffPause::clone(&paused))),
            "the pause is durable"
        );
        assert!(matches!(log.claim("root", "run"), Ok(Claim::HandedOff(_))));
        assert_eq!(
            within("L1: the closed gate ends the wait", pending.wait()).await,
            Err(WaitError::Closed)
        );
    }
}

/// The append's reply is lost (issue 44), after the pause was written or
/// before: both forms answer `Append(OutcomeUnknown)` and close the gate
/// without a seal — never `Ok`, never leaving it committed — so the
/// requester's `wait()` answers `Closed` (R2: no seal without an
/// acknowledged append); the same call again appends nothing
/// (`NotCommitted`); and the owner's next claim decides the Run from the
/// log: `HandedOff` if the pause landed (R1), a new epoch if not.
#[tokio::test]
async fn an_append_whose_reply_is_lost_closes_the_gate_and_the_log_decides_r1_r2() {
    for (blocking, writes) in [(true, true), (true, false), (false, true), (false, false)] {
        let case = format!("blocking {blocking}, written {writes}");
        let gate = gate();
        let log = MemoryLog::new();
        let epoch = owner(&log);
        let (pending, paused) = committed(&gate).await;
        let lossy = AroundAppend::loses_the_reply(&log, writes);
        let answer = if blocking {
            append_then_seal(&gate, &lossy, epoch, &paused)
        } else {
            append_then_seal_async(&gate, &lossy, epoch, &paused).await
        };
        assert!(
            matches!(answer, Err(SealError::Append(LogError::OutcomeUnknown(_)))),
            "{case}: {answer:?}"
        );
        assert_eq!(gate.state().kind(), StateKind::Closed, "{case}");
        assert_eq!(
            within("L1: the closed gate ends the wait", pending.wait()).await,
            Err(WaitError::Closed),
            "R2, {case}: no seal without an acknowledged append"
        );
        let again = if blocking {
            append_then_seal(&gate, &log, epoch, &paused)
        } else {
            append_then_seal_async(&gate, &log, epoch, &paused).await
        };
        assert!(
            matches!(again, Err(SealError::NotCommitted)),
            "{case}: {again:?}"
        );
        let claimed = log.claim("root", "run").unwrap();
        if writes {
            assert_eq!(
                claimed,
                Claim::HandedOff(HandoffPause::clone(&paused)),
                "R1, {case}"
            );
        } else {
            assert_eq!(
                claimed,
                Claim::Owner(epoch.next().unwrap()),
                "{case}: resumable"
            );
        }
    }
}

/// What the last step accepts as the committed pause (issue 37): the very
/// pause, or one equal to it — not one with the same intent and another
/// execution. Offered that, both forms answer `NotCommitted`, append
/// nothing and leave the gate committed; the committed pause then seals.
#[tokio::test]
async fn an_equal_intent_with_another_execution_is_not_the_committed_pause_in_both_forms() {
    for blocking in [true, false] {
        let gate = gate();
        let log = MemoryLog::new();
        let epoch = owner(&log);
        let (pending, paused) = committed(&gate).await;
        let impostor = HandoffPause {
            intent: Arc::clone(&paused.intent),
            execution: paused.execution + 1,
        };
        let answer = if blocking {
            append_then_seal(&gate, &log, epoch, &impostor)
        } else {
            append_then_seal_async(&gate, &log, epoch, &impostor).await
        };
        assert!(
            matches!(answer, Err(SealError::NotCommitted)),
            "blocking {blocking}: {answer:?}"
        );
        assert!(
            log.facts("root", "run").unwrap().pauses.is_empty(),
            "nothing appended"
        );
        assert_eq!(
            gate.state().kind(),
            StateKind::Committed,
            "the gate is unchanged"
        );
        let equal = HandoffPause::clone(&paused);
        assert_eq!(
            append_then_seal(&gate, &log, epoch, &equal).unwrap(),
            Receipt::Written,
            "an equal pause is the committed one"
        );
        assert_eq!(
            within("S5: the seal reaches the requester", pending.wait())
                .await
                .map(|p| p.execution),
            Ok(7)
        );
    }
}
