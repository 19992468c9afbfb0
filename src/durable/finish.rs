//! The worker's last step of a Run that ends without a handoff: record the
//! finish durably under its epoch, then close its gate. [`close_step`] is
//! the pure rule (what the gate's state and the finish's answer mean);
//! [`finish_then_close`] and [`finish_then_close_async`] are its blocking
//! and async adapters. It is to a finish what
//! [`append_then_seal`](super::append_then_seal) is to a handoff.

use thiserror::Error;

use super::contract::{AsyncHandoffLog, Epoch, HandoffLog, LogError, Receipt};
use crate::gate::HandoffGate;
use crate::gate::core::StateKind;

/// Why [`finish_then_close`] (or [`finish_then_close_async`]) did not
/// record the finish.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FinishError {
    /// The gate is committed to a pause, or sealed: a handoff is under way
    /// or done, so the Run does not finish here (append and seal the pause
    /// instead). Nothing was written; the gate is unchanged.
    #[error("a handoff is under way on the gate; the Run does not finish here")]
    HandoffUnderway,
    /// Fenced: a newer owner epoch (`current`) claimed the Run. Nothing was
    /// written; the gate is closed. Stop: the Run is the newer epoch's.
    #[error("fenced: epoch {epoch} was superseded by epoch {current}; the gate is closed, stop")]
    Fenced {
        /// The epoch this worker held.
        epoch: Epoch,
        /// The Run's current epoch.
        current: Epoch,
    },
    /// The finish failed (the log's error is the
    /// [`source`](std::error::Error::source)); the gate is closed. For
    /// [`LogError::OutcomeUnknown`] the finish may be durable: the owner's
    /// next claim answers `Finished` if it is, else issues a new epoch.
    #[error("the durable finish failed; the gate is closed")]
    Finish(#[source] LogError),
}

/// The rule of the worker's finish (SPEC §6.1, R8), in two parts: whether
/// the gate lets the Run finish (`finished` is `None`, before the finish is
/// sent), and what the finish's answer means (`Some`, once the log
/// answered).
///
/// | gate | finish answered | step |
/// |---|---|---|
/// | committed or sealed | — | `Err(`[`FinishError::HandoffUnderway`]`)`: send nothing, leave the gate |
/// | running, requested, held or closed | not yet (`None`) | `Ok(None)`: send the finish |
/// | any | `Ok(receipt)` | `Ok(Some(receipt))`: close the gate; the Run is over |
/// | any | [`LogError::Fenced`] | `Err(`[`FinishError::Fenced`]`)`: close the gate, stop |
/// | any | any other `Err` | `Err(`[`FinishError::Finish`]`)`: close the gate |
///
/// Once a finish was sent the gate is closed whatever the answer, so no
/// handoff of the Run follows its finish (R8); a requester waiting on the
/// gate answers `Closed`.
///
/// ```
/// use baton::durable::{Epoch, FinishError, LogError, Receipt, close_step};
/// use baton::gate::core::StateKind;
///
/// assert!(matches!(close_step(StateKind::Running, None), Ok(None)));
/// assert!(matches!(close_step(StateKind::Committed, None), Err(FinishError::HandoffUnderway)));
/// let fenced = LogError::Fenced { epoch: Epoch::new(1), current: Epoch::new(2) };
/// assert!(matches!(close_step(StateKind::Closed, Some(Err(fenced))), Err(FinishError::Fenced { .. })));
/// assert!(matches!(close_step(StateKind::Closed, Some(Ok(Receipt::Written))), Ok(Some(_))));
/// ```
///
/// # Errors
///
/// See [`FinishError`].
pub fn close_step(
    gate: StateKind,
    finished: Option<Result<Receipt, LogError>>,
) -> Result<Option<Receipt>, FinishError> {
    match (gate, finished) {
        (_, Some(Ok(receipt))) => Ok(Some(receipt)),
        (_, Some(Err(LogError::Fenced { epoch, current }))) => {
            Err(FinishError::Fenced { epoch, current })
        }
        (_, Some(Err(error))) => Err(FinishError::Finish(error)),
        (StateKind::Committed | StateKind::Sealed, None) => Err(FinishError::HandoffUnderway),
        (StateKind::Running | StateKind::Requested | StateKind::Held | StateKind::Closed, None) => {
            Ok(None)
        }
    }
}

/// Finishes the worker's Run: records `outcome` durably in `log` under the
/// owner `epoch` this worker holds, filed under the gate's own
/// [`source`](HandoffGate::source) and root Run, then closes the gate
/// (every requester's `wait()` answers `Closed`). From then on the owner's
/// claim answers [`Claim::Finished`](super::Claim::Finished): the Run is
/// never resumed (R8). The rule is [`close_step`].
///
/// Only the worker moves its gate to committed (through its boundary), so
/// a gate found neither committed nor sealed here stays so until the
/// finish is sent.
///
/// ```
/// use baton::durable::{Claim, FinishError, HandoffLog, MemoryLog, Receipt, finish_then_close};
/// use baton::{HandoffGate, Invocation};
///
/// let source = Invocation {
///     session_id: "s".into(), turn_id: "t".into(), run_id: "run".into(), invocation_id: "i".into(),
/// };
/// let log = MemoryLog::<u32>::new();
/// let Claim::Owner(old) = log.claim("root", "run")? else { unreachable!() };
/// let Claim::Owner(epoch) = log.claim("root", "run")? else { unreachable!() };
/// let zombie = HandoffGate::new(source.clone(), "root".into());
/// assert!(matches!(finish_then_close(&zombie, &log, old, &1), Err(FinishError::Fenced { .. })));
/// let gate = HandoffGate::new(source, "root".into());
/// assert_eq!(finish_then_close(&gate, &log, epoch, &42)?, Receipt::Written);
/// assert_eq!(log.claim("root", "run")?, Claim::Finished(42), "R8: never resumed");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// See [`FinishError`].
pub fn finish_then_close<P, L>(
    gate: &HandoffGate<P>,
    log: &L,
    epoch: Epoch,
    outcome: &P,
) -> Result<Receipt, FinishError>
where
    P: PartialEq,
    L: HandoffLog<P> + ?Sized,
{
    close_step(gate.state().kind(), None)?;
    let finished = log.finish(gate.root_run_id(), gate.source(), epoch, outcome);
    gate.close();
    close_step(StateKind::Closed, Some(finished)).map(|receipt| receipt.unwrap_or(Receipt::Written))
}

/// [`finish_then_close`] for async code: the same step, with the finish
/// awaited through [`AsyncHandoffLog`].
///
/// # Cancel safety
///
/// Not cancel safe: once polled, the finish may have been sent and may
/// still commit after the future is dropped; the gate is then left open.
/// Call it again with the same `epoch` and `outcome` (the finish is
/// idempotent), or close the gate and let the owner's claim decide.
///
/// # Errors
///
/// See [`FinishError`].
pub async fn finish_then_close_async<P, L>(
    gate: &HandoffGate<P>,
    log: &L,
    epoch: Epoch,
    outcome: &P,
) -> Result<Receipt, FinishError>
where
    P: PartialEq,
    L: AsyncHandoffLog<P>,
{
    close_step(gate.state().kind(), None)?;
    let finished = log
        .finish_async(gate.root_run_id(), gate.source(), epoch, outcome)
        .await;
    gate.close();
    close_step(StateKind::Closed, Some(finished)).map(|receipt| receipt.unwrap_or(Receipt::Written))
}

#[cfg(test)]
#[path = "finish_tests.rs"]
mod tests;
