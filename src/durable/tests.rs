//! The log rules on [`MemoryLog`], and the worker helper's two paths.
//!
//! Kept whole, past 600 lines: the rule tests every store runs
//! (`the_log_rules_hold`, `the_final_fates_hold`, called by each store's
//! own tests) and the helpers they share.

use std::sync::Arc;

use super::*;
use crate::cancel::CancelSignal;
use crate::facts::{Field, HandoffIntent, HandoffPause, IntentError, Invocation};
use crate::gate::core::StateKind;
use crate::gate::{HandoffGate, WaitError};
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

/// The log rules every [`HandoffLog`] keeps (SPEC §6); run unchanged on
/// each implementation. Ends with two Runs handed off.
pub(super) fn the_log_rules_hold(log: &dyn HandoffLog<u32>) {
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(facts.epoch, Epoch::NONE, "never claimed");
    assert_eq!(reconcile(&facts), Ok(Decision::Resumable));

    // Bad input is a typed error and writes nothing.
    assert!(matches!(
        log.claim("", "run"),
        Err(LogError::InvalidRun {
            field: RunField::RootRunId,
            ..
        })
    ));
    assert!(
        matches!(
            log.append("root", &source(), Epoch::new(1), &pause("h")),
            Err(LogError::EpochNotIssued { .. })
        ),
        "an epoch no claim issued"
    );
    let first = log.claim("root", "run").unwrap();
    assert_eq!(
        first,
        Claim::Owner(Epoch::new(1)),
        "the first claim issues epoch 1"
    );
    let one = Epoch::new(1);
    for never in [Epoch::NONE, Epoch::new(2)] {
        assert!(
            matches!(
                log.append("root", &source(), never, &pause("h")),
                Err(LogError::EpochNotIssued { epoch, current }) if epoch == never && current == one
            ),
            "epoch {never} was never issued"
        );
    }
    let mut other_root = pause("h");
    Arc::make_mut(&mut other_root.intent).root_run_id = "other-root".into();
    assert!(
        matches!(
            log.append("root", &source(), one, &other_root),
            Err(LogError::InvalidPause(IntentError::OtherRootRun { .. }))
        ),
        "a pause for another root Run is bad input"
    );
    let mut itself = pause("h");
    Arc::make_mut(&mut itself.intent).successor_run_id = "run".into();
    assert!(matches!(
        log.append("root", &source(), one, &itself),
        Err(LogError::InvalidPause(IntentError::SuccessorIsSource(
            Field::SuccessorRunId
        )))
    ));
    let mut bad_source = source();
    bad_source.run_id.clear();
    assert!(matches!(
        log.append("root", &bad_source, one, &pause("h")),
        Err(LogError::InvalidRun {
            field: RunField::RunId,
            ..
        })
    ));
    let facts = log.facts("root", "run").unwrap();
    assert!(facts.pauses.is_empty(), "bad input writes nothing");
    assert_eq!(facts.epoch, one);

    // R1 / R6 / R7: the owner takes over while the worker of epoch 1 is
    // only paused; when the zombie wakes, its append is fenced.
    let two = Epoch::new(2);
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Owner(two));
    assert!(
        matches!(
            log.append("root", &source(), one, &pause("zombie")),
            Err(LogError::Fenced { epoch, current }) if epoch == one && current == two
        ),
        "R7: the fenced epoch never appends"
    );
    assert!(
        log.facts("root", "run").unwrap().pauses.is_empty(),
        "R7: nothing written"
    );

    assert_eq!(
        log.append("root", &source(), two, &pause("h")).unwrap(),
        Receipt::Written
    );
    assert_eq!(
        log.append("root", &source(), two, &pause("h")).unwrap(),
        Receipt::AlreadyDurable,
        "the identical append again (a lost reply) is idempotent"
    );
    assert!(
        matches!(
            log.append("root", &source(), two, &pause("other")),
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "a second, different pause for the Run is refused"
    );
    let mut other_invocation = source();
    other_invocation.invocation_id = "invocation-2".into();
    assert!(
        matches!(
            log.append("root", &other_invocation, two, &pause("h")),
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "the same pause from another invocation of the Run is not the identical row"
    );
    assert!(
        matches!(
            log.append("root", &source(), one, &pause("h")),
            Err(LogError::Fenced { .. })
        ),
        "R6: only the current epoch appends, even the same row"
    );
    // R1: a handed-off Run is never resumed: a claim answers the pause and
    // issues no epoch.
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::HandedOff(pause("h"))
    );
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(facts.epoch, two, "R1: no epoch issued once handed off");
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
        log.claim("root", "successor-run").unwrap(),
        Claim::Owner(one),
        "each Run has its own epochs"
    );
    assert_eq!(
        log.append("root", &next_hop, one, &onward).unwrap(),
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
            field: RunField::RootRunId,
            ..
        })
    ));
}

/// The final fates (R8) and retention (R9, R10) every [`HandoffLog`] keeps;
/// run unchanged on each implementation. Ends with one Run open under
/// `other-root` and `root` retired.
pub(super) fn the_final_fates_hold(log: &dyn HandoffLog<u32>) {
    let one = Epoch::new(1);
    let two = Epoch::new(2);
    let mut bad_source = source();
    bad_source.turn_id.clear();
    assert!(matches!(
        log.finish("root", &bad_source, one, &7),
        Err(LogError::InvalidRun {
            field: RunField::TurnId,
            ..
        })
    ));
    assert!(
        matches!(
            log.finish("root", &source(), one, &7),
            Err(LogError::EpochNotIssued { .. })
        ),
        "R8: a finish under an epoch no claim issued"
    );
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Owner(one));
    assert_eq!(log.claim("root", "run").unwrap(), Claim::Owner(two));
    assert!(
        matches!(log.finish("root", &source(), one, &7), Err(LogError::Fenced { epoch, current }) if epoch == one && current == two),
        "R7/R8: a zombie's finish is fenced"
    );
    assert!(
        matches!(log.retire("root"), Err(LogError::RunOpen { root_run_id, run_id }) if root_run_id == "root" && run_id == "run"),
        "R9: an open Run is never retired"
    );
    assert_eq!(
        log.facts("root", "run").unwrap().epoch,
        two,
        "a refused retirement writes nothing"
    );
    assert_eq!(
        log.finish("root", &source(), two, &7).unwrap(),
        Receipt::Written
    );
    assert_eq!(
        log.finish("root", &source(), two, &7).unwrap(),
        Receipt::AlreadyDurable,
        "the identical finish again (a lost reply) is idempotent"
    );
    assert!(matches!(
        log.finish("root", &source(), two, &8),
        Err(LogError::AlreadyFinished { .. })
    ));
    assert!(
        matches!(
            log.append("root", &source(), two, &pause("h")),
            Err(LogError::AlreadyFinished { .. })
        ),
        "R8: a finished Run is never handed off"
    );
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::Finished(7),
        "R8: never resumed"
    );
    let facts = log.facts("root", "run").unwrap();
    assert_eq!(facts.epoch, two, "R8: no epoch issued once finished");
    assert!(facts.pauses.is_empty());
    assert_eq!(
        facts.finished,
        Some(Finished {
            source: source(),
            outcome: 7
        })
    );
    assert_eq!(reconcile(&facts), Ok(Decision::Finished(7)));

    // A handed-off Run of the same root, and its successor, which finishes.
    let mut next_hop = source();
    next_hop.run_id = "successor-run".into();
    next_hop.invocation_id = "successor-invocation".into();
    let Claim::Owner(hop) = log.claim("root", "successor-run").unwrap() else {
        panic!("the successor is open")
    };
    let mut onward = pause("h2");
    Arc::make_mut(&mut onward.intent).successor_run_id = "third-run".into();
    Arc::make_mut(&mut onward.intent).successor_invocation_id = "third-invocation".into();
    assert_eq!(
        log.append("root", &next_hop, hop, &onward).unwrap(),
        Receipt::Written
    );
    assert!(
        matches!(
            log.finish("root", &next_hop, hop, &9),
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "R8: a handed-off Run never finishes"
    );
    // A Run of another root stays open through the retirement.
    assert_eq!(log.claim("other-root", "run").unwrap(), Claim::Owner(one));

    // G1, G5: the handoff to "third-run" keeps the root until "third-run"
    // is final, claimed or not; then a retirement takes the whole chain.
    let waiting = |log: &dyn HandoffLog<u32>| {
        matches!(
            log.retire("root"),
            Err(LogError::RunOpen { root_run_id, run_id }) if root_run_id == "root" && run_id == "third-run"
        )
    };
    assert!(waiting(log), "G5: the successor is not claimed yet");
    let Claim::Owner(third) = log.claim("root", "third-run").unwrap() else {
        panic!("G1: the successor of a durable pause is claimable")
    };
    assert!(waiting(log), "G5: the successor is still running");
    let mut last_hop = source();
    last_hop.run_id = "third-run".into();
    last_hop.invocation_id = "third-invocation".into();
    assert_eq!(
        log.finish("root", &last_hop, third, &11).unwrap(),
        Receipt::Written
    );
    assert_eq!(
        log.retire("root").unwrap(),
        Retirement::Retired { runs: 3 },
        "every Run of the root is final, and so is every successor"
    );
    assert_eq!(log.retire("root").unwrap(), Retirement::AlreadyRetired);
    assert!(
        matches!(
            log.retire("never-seen-root"),
            Err(LogError::NothingToRetire { root_run_id }) if root_run_id == "never-seen-root"
        ),
        "G5: a root the log holds nothing for has not ended"
    );
    assert_eq!(
        log.facts("never-seen-root", "run").unwrap(),
        RunFacts::empty("never-seen-root", "run"),
        "G3: the refused retirement wrote no tombstone"
    );
    for run in ["run", "successor-run", "third-run", "never-claimed"] {
        assert_eq!(
            log.claim("root", run).unwrap(),
            Claim::Retired,
            "R9: {run} is never resumed"
        );
        let facts = log.facts("root", run).unwrap();
        assert!(facts.retired, "{run}");
        assert_eq!(
            (facts.epoch, facts.pauses.len(), facts.finished.is_none()),
            (Epoch::NONE, 0, true),
            "R10: {run}'s rows are gone"
        );
        assert_eq!(reconcile(&facts), Ok(Decision::Retired));
    }
    for epoch in [Epoch::NONE, one, two, Epoch::new(3)] {
        assert!(
            matches!(
                log.append("root", &source(), epoch, &pause("h")),
                Err(LogError::Retired { .. })
            ),
            "R9: a retired Run's zombie (epoch {epoch}) never writes"
        );
        assert!(matches!(
            log.finish("root", &source(), epoch, &7),
            Err(LogError::Retired { .. })
        ));
    }
    assert!(matches!(
        log.retire(""),
        Err(LogError::InvalidRun {
            field: RunField::RootRunId,
            ..
        })
    ));
    assert_eq!(
        log.facts("other-root", "run").unwrap().epoch,
        one,
        "another root's Run is untouched"
    );
    assert!(matches!(
        log.retire("other-root"),
        Err(LogError::RunOpen { .. })
    ));
}

/// A [`HandoffLog`] that runs each operation through `L`'s
/// [`AsyncHandoffLog`] form, on a runtime of its own (each await bounded):
/// so the one contract test checks the async forms too.
pub(super) struct ViaAsync<'a, L>(&'a L, tokio::runtime::Runtime);

impl<'a, L> ViaAsync<'a, L> {
    pub(super) fn new(log: &'a L) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        Self(log, runtime)
    }
}

impl<L: AsyncHandoffLog<u32>> HandoffLog<u32> for ViaAsync<'_, L> {
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<u32>, LogError> {
        let claim = self.0.claim_async(root_run_id, run_id);
        self.1
            .block_on(within("R5: an async claim resolves", claim))
    }
    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<u32>,
    ) -> Result<Receipt, LogError> {
        let append = self.0.append_async(root_run_id, source, epoch, pause);
        self.1
            .block_on(within("R4: an async append resolves", append))
    }
    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &u32,
    ) -> Result<Receipt, LogError> {
        let finish = self.0.finish_async(root_run_id, source, epoch, outcome);
        self.1
            .block_on(within("R4: an async finish resolves", finish))
    }
    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        let retire = self.0.retire_async(root_run_id);
        self.1
            .block_on(within("an async retirement resolves", retire))
    }
    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<u32>, LogError> {
        let facts = self.0.facts_async(root_run_id, run_id);
        self.1
            .block_on(within("an async read of the facts resolves", facts))
    }
}

#[test]
fn the_memory_log_keeps_the_log_rules_through_its_async_form() {
    let log = MemoryLog::new();
    the_log_rules_hold(&ViaAsync::new(&log));
    assert_eq!(log.len(), 2);
    let log = MemoryLog::new();
    the_final_fates_hold(&ViaAsync::new(&log));
    assert_eq!(log.rows(), (1, 1));
}

#[test]
fn the_memory_log_keeps_the_log_rules() {
    let log = MemoryLog::new();
    assert!(log.is_empty());
    the_log_rules_hold(&log);
    assert_eq!(log.len(), 2, "one row per Run that handed off");
    assert!(!log.is_empty());
    assert_eq!(
        format!("{log:?}"),
        "MemoryLog { len: 2, runs: 2, retired: 0 }"
    );
}

#[test]
fn r8_r9_r10_the_memory_log_keeps_the_final_fates_and_retention() {
    let log = MemoryLog::new();
    the_final_fates_hold(&log);
    assert_eq!(
        log.rows(),
        (1, 1),
        "R10: the open Run and one tombstone, no history"
    );
}

pub(super) type Gate = HandoffGate<u32>;

/// Claims the gate's Run in `log`; the epoch its worker holds.
pub(super) fn owner(log: &dyn HandoffLog<u32>) -> Epoch {
    match log.claim("root", "run").unwrap() {
        Claim::Owner(epoch) => epoch,
        other => panic!("the Run is not open: {other:?}"),
    }
}

pub(super) fn gate() -> Gate {
    HandoffGate::new(source(), "root".into())
}

/// Drives `gate` to Committed on `pause("h")`; returns the requester's
/// pending seal and the pause `boundary` returned.
pub(super) async fn committed(
    gate: &Gate,
) -> (crate::gate::PendingSeal<u32>, Arc<HandoffPause<u32>>) {
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
    (
        pending,
        paused.expect("the gate is open").expect("committed"),
    )
}

/// A log whose every operation fails, like a full disk.
pub(super) struct BrokenLog;

impl HandoffLog<u32> for BrokenLog {
    fn claim(&self, _: &str, _: &str) -> Result<Claim<u32>, LogError> {
        Ok(Claim::Owner(Epoch::new(1)))
    }
    fn append(
        &self,
        _: &str,
        _: &Invocation,
        _: Epoch,
        _: &HandoffPause<u32>,
    ) -> Result<Receipt, LogError> {
        Err(LogError::Unavailable("disk full".into()))
    }
    fn finish(&self, _: &str, _: &Invocation, _: Epoch, _: &u32) -> Result<Receipt, LogError> {
        Err(LogError::Unavailable("disk full".into()))
    }
    fn retire(&self, _: &str) -> Result<Retirement, LogError> {
        Err(LogError::Unavailable("disk full".into()))
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
        append_then_seal(&gate, &log, owner(&log), &paused).unwrap(),
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
        append_then_seal(&gate, &BrokenLog, Epoch::new(1), &paused),
        Err(SealError::Append(LogError::Unavailable(_)))
    ));
    assert_eq!(gate.state().kind(), StateKind::Closed);
    assert_eq!(
        within("L1: closing the gate ends the pending seal", pending.wait()).await,
        Err(WaitError::Closed),
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
        append_then_seal(&gate, &log, owner(&log), &pause("h")),
        Err(SealError::NotCommitted)
    ));
    let (pending, _) = committed(&gate).await;
    assert!(matches!(
        append_then_seal(&gate, &log, Epoch::new(1), &pause("other")),
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
        Err(WaitError::Closed)
    );
}

/// R7 and the worker side of SPEC §6: the worker of epoch 1 is committed,
/// then paused while its owner claims the Run again (epoch 2). When it
/// wakes, its append is fenced: nothing is written, its gate closes without
/// a seal (the requester's `wait()` answers `Err(WaitError::Closed)`), and the error tells
/// it to stop. The Run stays open for epoch 2's worker.
#[tokio::test]
async fn a_zombie_worker_is_fenced_its_gate_closed_and_nothing_written() {
    let gate = gate();
    let log = MemoryLog::new();
    let zombie = owner(&log);
    let (pending, paused) = committed(&gate).await;
    let takeover = owner(&log);
    assert!(takeover > zombie, "the owner's claim fences the old epoch");
    assert!(matches!(
        append_then_seal(&gate, &log, zombie, &paused),
        Err(SealError::Fenced { epoch, current }) if epoch == zombie && current == takeover
    ));
    assert_eq!(
        gate.state().kind(),
        StateKind::Closed,
        "closed without a seal"
    );
    assert_eq!(
        within("R7: a fenced worker's pending seal ends", pending.wait()).await,
        Err(WaitError::Closed),
        "R2: no Some without a durable pause"
    );
    let facts = log.facts("root", "run").unwrap();
    assert!(
        facts.pauses.is_empty(),
        "R7: the fenced worker wrote nothing"
    );
    assert_eq!(facts.epoch, takeover);
    assert_eq!(
        log.claim("root", "run").unwrap(),
        Claim::Owner(takeover.next().unwrap()),
        "R1: the Run is still open: a later owner may take it again"
    );
}

/// A read writes nothing, so a store's read never answers an unknown
/// outcome: `of_a_read` turns `OutcomeUnknown` (a panicked read on the
/// SQLite log's thread, a read past PostgreSQL's timeout) into
/// `Unavailable` with the same source, and leaves every other error as it
/// is; `outcome_unknown` says which error alone may have written.
#[test]
fn a_reads_failure_is_never_an_unknown_outcome() {
    let read = LogError::OutcomeUnknown("the thread panicked".into()).of_a_read();
    assert!(
        matches!(&read, LogError::Unavailable(source) if source.to_string() == "the thread panicked"),
        "{read:?}"
    );
    assert!(!read.outcome_unknown());
    assert!(LogError::OutcomeUnknown("lost".into()).outcome_unknown());
    let kept = LogError::Unavailable("refused".into()).of_a_read();
    assert!(matches!(&kept, LogError::Unavailable(source) if source.to_string() == "refused"));
    assert!(matches!(
        LogError::EpochsExhausted.of_a_read(),
        LogError::EpochsExhausted
    ));
    assert!(!LogError::EpochsExhausted.outcome_unknown());
}

/// G2, G3: a pause or an outcome whose JSON does not decode back equal is
/// refused with `Encode` and writes nothing, on `MemoryLog` as on the SQL
/// stores (which would otherwise acknowledge a row that never decodes);
/// one that does is acknowledged and reads back equal.
#[test]
fn g2_every_store_refuses_a_payload_that_does_not_read_back_equal() {
    fn check(log: &dyn HandoffLog<f64>) {
        let Claim::Owner(epoch) = log.claim("root", "run").unwrap() else {
            panic!("the Run is open")
        };
        let with = |value: f64| HandoffPause::new(pause("h").intent, value);
        for lossy in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                log.append("root", &source(), epoch, &with(lossy)),
                Err(LogError::Encode(_))
            ));
            assert!(matches!(
                log.finish("root", &source(), epoch, &lossy),
                Err(LogError::Encode(_))
            ));
            let facts = log.facts("root", "run").unwrap();
            assert_eq!(
                (facts.epoch, facts.pauses.len(), facts.finished.is_none()),
                (epoch, 0, true),
                "G3: nothing written"
            );
        }
        assert_eq!(
            log.append("root", &source(), epoch, &with(0.5)).unwrap(),
            Receipt::Written
        );
        assert_eq!(
            log.claim("root", "run").unwrap(),
            Claim::HandedOff(with(0.5))
        );
    }
    check(&MemoryLog::new());
    #[cfg(feature = "sqlite")]
    {
        let path = std::env::temp_dir().join(format!("baton-g2-{}.sqlite", std::process::id()));
        let log = crate::durable::SqliteLog::<f64>::open(&path).unwrap();
        check(&log);
        log.close();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    assert_eq!(encode_checked(&0.5_f64).unwrap(), "0.5");
    let error = encode_checked(&f64::NAN).unwrap_err();
    assert!(error.to_string().contains("reads back equal"), "{error}");
}
