//! The worker's last step of a handoff: append the committed pause durably,
//! then seal — in that order, never the other. [`seal_step`] is the pure
//! rule (what the append's answer means for the gate); [`append_then_seal`]
//! and [`append_then_seal_async`] are its blocking and async adapters.

use thiserror::Error;

use super::contract::{AsyncHandoffLog, Epoch, HandoffLog, LogError, Receipt};
use crate::facts::HandoffPause;
use crate::gate::HandoffGate;
use crate::gate::core::State;
use crate::trace;

/// Why [`append_then_seal`] (or [`append_then_seal_async`]) did not seal.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SealError {
    /// API misuse: the gate is not committed to this pause (pass the pause
    /// `boundary` returned). Nothing was appended; the gate is unchanged.
    #[error("the gate is not committed to this pause")]
    NotCommitted,
    /// Fenced: a newer owner epoch (`current`) claimed the Run, so this
    /// worker was taken for dead. Nothing was appended; the gate is **closed
    /// without a seal** (every `wait()` answers `Err(WaitError::Closed)`). Stop: the Run is
    /// the newer epoch's.
    #[error("fenced: epoch {epoch} was superseded by epoch {current}; the gate is closed, stop")]
    Fenced {
        /// The epoch this worker held.
        epoch: Epoch,
        /// The Run's current epoch.
        current: Epoch,
    },
    /// The append failed; the gate is **closed without a seal**, so the
    /// requester's `wait()` answers `Err(WaitError::Closed)`. For
    /// [`LogError::OutcomeUnknown`] the append's outcome is unknown: the
    /// owner reconciles from the log. The
    /// log's error is this error's [`source`](std::error::Error::source)
    /// (the message does not repeat it).
    #[error("the durable append failed; the gate is closed without a seal")]
    Append(#[source] LogError),
    /// The pause is durable (the handoff is final), but the gate was closed
    /// between the append and the seal, so the requester's `wait()` answers
    /// `Err(WaitError::Closed)`. The owner reconciles: the log says
    /// `HandedOff`.
    #[error("the pause is durable but the gate was closed before the seal")]
    ClosedBeforeSeal,
}

/// What the worker does with its gate once the log has answered its
/// append: the rule of [`append_then_seal`]'s last step, from
/// [`seal_step`].
#[derive(Debug)]
#[must_use = "the step says whether to seal or to close the gate"]
pub enum SealStep {
    /// The pause is durable: seal the gate (the requester's `wait()` then
    /// returns `Ok` with the pause), and answer this receipt.
    Seal(Receipt),
    /// The append did not succeed, or its outcome is unknown: close the
    /// gate without a seal (every `wait()` answers `Err(WaitError::Closed)`) and answer this
    /// error. [`SealError::Fenced`] also tells the worker to stop.
    Close(SealError),
}

/// The rule of the worker's last step (SPEC §6, R2 and R7): what the
/// answer of its append, under the epoch it holds, means for its gate.
///
/// | the append answered | step |
/// |---|---|
/// | `Ok(receipt)` (`Written`, or `AlreadyDurable` for a retry) | [`SealStep::Seal`]`(receipt)` |
/// | [`LogError::Fenced`] | [`SealStep::Close`]`(`[`SealError::Fenced`]`)`: a newer epoch owns the Run, stop |
/// | any other `Err` (a refusal, [`LogError::Unavailable`], or [`LogError::OutcomeUnknown`]: a lost reply) | [`SealStep::Close`]`(`[`SealError::Append`]`)` |
///
/// Only an acknowledged append seals, so an `Ok` from `wait()` implies a
/// durable pause (R2), and a fenced worker never seals (R7). A lost reply
/// closes without a seal although the append may have committed: the owner's
/// next [`claim`](HandoffLog::claim) then answers `HandedOff`, never a new
/// epoch (R1). Both [`append_then_seal`] and [`append_then_seal_async`]
/// apply it, and the model checker (`baton-model`) explores it with zombie
/// workers and lost replies.
///
/// ```
/// use baton::durable::{Epoch, LogError, Receipt, SealError, SealStep, seal_step};
///
/// assert!(matches!(seal_step(Ok(Receipt::Written)), SealStep::Seal(Receipt::Written)));
/// let fenced = LogError::Fenced { epoch: Epoch::new(1), current: Epoch::new(2) };
/// assert!(matches!(seal_step(Err(fenced)), SealStep::Close(SealError::Fenced { .. })));
/// let lost = LogError::OutcomeUnknown("the reply was lost".into());
/// assert!(matches!(seal_step(Err(lost)), SealStep::Close(SealError::Append(_))));
/// ```
pub fn seal_step(appended: Result<Receipt, LogError>) -> SealStep {
    match appended {
        Ok(receipt) => SealStep::Seal(receipt),
        Err(LogError::Fenced { epoch, current }) => {
            SealStep::Close(SealError::Fenced { epoch, current })
        }
        // Every other answer listed, so a new `LogError` must be decided
        // here before it compiles.
        Err(
            error @ (LogError::InvalidPause(_)
            | LogError::InvalidRun { .. }
            | LogError::AlreadyHandedOff { .. }
            | LogError::AlreadyFinished { .. }
            | LogError::Retired { .. }
            | LogError::RunOpen { .. }
            | LogError::NothingToRetire { .. }
            | LogError::EpochNotIssued { .. }
            | LogError::EpochsExhausted
            | LogError::Contradictory(_)
            | LogError::UnknownSchema { .. }
            | LogError::NotALog { .. }
            | LogError::WrongTransaction { .. }
            | LogError::Corrupt { .. }
            | LogError::Encode(_)
            | LogError::Unavailable(_)
            | LogError::OutcomeUnknown(_)),
        ) => SealStep::Close(SealError::Append(error)),
    }
}

/// Makes a committed handoff final: appends `pause` to `log` durably under
/// the owner `epoch` this worker holds (from [`HandoffLog::claim`]), and
/// only once that is acknowledged seals the gate (SPEC §1: the requester's
/// `wait()` returns `Ok` only for a durable pause). The pause is filed
/// under the gate's own [`source`](HandoffGate::source), so it cannot land
/// under another Run. What the append's answer means is [`seal_step`].
///
/// This is the blocking form: it waits for the log on the calling thread
/// (for `SqliteLog`, a transaction and an fsync). Inside an async runtime
/// use [`append_then_seal_async`], which leaves the executor free.
///
/// A worker that was paused while its owner took the Run over learns it
/// here: [`SealError::Fenced`], nothing written, the gate closed (R7).
///
/// On `Ok` the successor owns the Run and the worker must stop. On
/// [`SealError::Append`] the gate is closed without a seal: the requester's
/// `wait()` answers `Err(WaitError::Closed)`, and the owner reconciles the Run from the log
/// (`Resumable` if nothing was written).
///
/// Every failure but [`SealError::NotCommitted`] (which leaves the gate
/// unchanged) leaves the gate closed, so calling this again afterwards
/// answers [`SealError::NotCommitted`] and appends nothing: the owner's
/// next claim decides the Run from the log. Only a dropped
/// [`append_then_seal_async`] future leaves the gate committed, and the
/// identical call then may be made again (the append is idempotent; see
/// its cancel safety).
///
/// With the `tracing` feature the step runs in an `append` span (target
/// `baton::durable`) with the root Run, the run id and the epoch, which
/// records the append's `outcome` (`written`, `already_durable`, `fenced`,
/// `failed`, or `not_committed` when nothing was appended) and whether the
/// gate was `sealed`.
///
/// ```
/// use baton::durable::{Claim, HandoffLog, MemoryLog, Receipt, SealError, append_then_seal};
/// use baton::{CancelSignal, HandoffGate, HandoffIntent, HandoffPause, Invocation};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// # let source = Invocation {
/// #     session_id: "s".into(), turn_id: "t".into(), run_id: "run".into(), invocation_id: "i".into(),
/// # };
/// # let intent = HandoffIntent {
/// #     handoff_id: "h".into(), host_epoch: "e".into(), root_run_id: "run".into(),
/// #     successor_run_id: "run-2".into(), successor_invocation_id: "i-2".into(), claim_id: "c".into(),
/// # };
/// let log = MemoryLog::new();
/// let Claim::Owner(epoch) = log.claim("run", "run")? else { unreachable!() };
/// let gate = HandoffGate::new(source, "run".into());
/// let reservation = gate.requester().reserve(intent)?;
/// let cancel = CancelSignal::new();
/// let (paused, pending) = tokio::join!(
///     gate.boundary(&cancel, |intent| async move { Some(HandoffPause::new(intent, 7u32)) }),
///     async { reservation.ready().await?.commit() },
/// );
/// let paused = paused?.expect("committed");
/// assert_eq!(append_then_seal(&gate, &log, epoch, &paused)?, Receipt::Written);
/// assert_eq!(pending?.wait().await?, paused); // durable, then sealed (R2)
///
/// // A zombie of an older epoch is fenced: nothing written, its gate closed.
/// # let source = Invocation {
/// #     session_id: "s".into(), turn_id: "t".into(), run_id: "run-b".into(), invocation_id: "i".into(),
/// # };
/// # let intent = HandoffIntent {
/// #     handoff_id: "h".into(), host_epoch: "e".into(), root_run_id: "run-b".into(),
/// #     successor_run_id: "run-c".into(), successor_invocation_id: "i-2".into(), claim_id: "c".into(),
/// # };
/// let Claim::Owner(old) = log.claim("run-b", "run-b")? else { unreachable!() };
/// let zombie = HandoffGate::new(source, "run-b".into());
/// let reservation = zombie.requester().reserve(intent)?;
/// let (paused, _pending) = tokio::join!(
///     zombie.boundary(&cancel, |intent| async move { Some(HandoffPause::new(intent, 8u32)) }),
///     async { reservation.ready().await?.commit() },
/// );
/// let _takeover = log.claim("run-b", "run-b")?; // the owner suspected it
/// let paused = paused?.expect("committed");
/// assert!(matches!(
///     append_then_seal(&zombie, &log, old, &paused),
///     Err(SealError::Fenced { .. })
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Errors
///
/// See [`SealError`].
pub fn append_then_seal<P, L>(
    gate: &HandoffGate<P>,
    log: &L,
    epoch: Epoch,
    pause: &HandoffPause<P>,
) -> Result<Receipt, SealError>
where
    P: PartialEq,
    L: HandoffLog<P> + ?Sized,
{
    let _span = trace::append_span!(gate, epoch);
    let _entered = trace::enter!(_span);
    let result = committed_to(gate, pause).and_then(|()| {
        let step = seal_step(log.append(gate.root_run_id(), gate.source(), epoch, pause));
        trace::append_step!(_span, &step);
        apply(gate, pause, step)
    });
    trace::append_end!(_span, &result);
    result
}

/// [`append_then_seal`] for async code: the same step, with the append
/// awaited through [`AsyncHandoffLog`] (for `SqliteLog` its blocking work
/// runs on the log's own thread, so the executor's other tasks go on while
/// the pause is synced). The same rule, [`seal_step`], decides what the
/// append's answer means; the gate is sealed or closed after the append
/// resolves, never before.
///
/// ```
/// use baton::durable::{AsyncHandoffLog, Claim, MemoryLog, Receipt, append_then_seal_async};
/// use baton::{CancelSignal, HandoffGate, HandoffIntent, HandoffPause, Invocation};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let source = Invocation {
///     session_id: "session".into(),
///     turn_id: "turn".into(),
///     run_id: "run".into(),
///     invocation_id: "invocation".into(),
/// };
/// let log = MemoryLog::new();
/// let Claim::Owner(epoch) = log.claim_async("root", "run").await? else {
///     return Err("already handed off".into());
/// };
/// let gate = HandoffGate::new(source, "root".into());
/// let reservation = gate.requester().reserve(HandoffIntent {
///     handoff_id: "handoff".into(),
///     host_epoch: "host".into(),
///     root_run_id: "root".into(),
///     successor_run_id: "successor".into(),
///     successor_invocation_id: "successor-invocation".into(),
///     claim_id: "claim".into(),
/// })?;
/// let cancel = CancelSignal::new();
/// let (paused, pending) = tokio::join!(
///     gate.boundary(&cancel, |intent| async move { Some(HandoffPause::new(intent, 7u32)) }),
///     async { reservation.ready().await?.commit() },
/// );
/// let (paused, pending) = (paused?.ok_or("not committed")?, pending?);
/// assert_eq!(append_then_seal_async(&gate, &log, epoch, &paused).await?, Receipt::Written);
/// assert!(pending.wait().await.is_ok(), "durable, then sealed");
/// # Ok(())
/// # }
/// ```
///
/// # Cancel safety
///
/// This method is not cancel safe: dropping its future undoes nothing.
/// Once the future has been polled, the append may have been sent to the
/// log, and it may still commit after the future is dropped. The gate is
/// left as it was, committed, neither sealed nor closed, so the requester's
/// `wait()` stays pending. The outcome is that of a lost reply: call this
/// again with the same `epoch` and `pause` (the append is idempotent:
/// `AlreadyDurable`, then the seal), or close the gate and let the owner's
/// [`claim`](AsyncHandoffLog::claim_async) decide from the log (`HandedOff`
/// if the append committed). Dropping the future before its first poll
/// does nothing.
///
/// With the `tracing` feature the future runs in the same `append` span as
/// [`append_then_seal`]'s, entered on each of its polls.
///
/// # Errors
///
/// See [`SealError`].
pub async fn append_then_seal_async<P, L>(
    gate: &HandoffGate<P>,
    log: &L,
    epoch: Epoch,
    pause: &HandoffPause<P>,
) -> Result<Receipt, SealError>
where
    P: PartialEq,
    L: AsyncHandoffLog<P>,
{
    let _span = trace::append_span!(gate, epoch);
    let step = async {
        committed_to(gate, pause)?;
        let appended = log
            .append_async(gate.root_run_id(), gate.source(), epoch, pause)
            .await;
        let step = seal_step(appended);
        trace::append_step!(_span, &step);
        apply(gate, pause, step)
    };
    let result: Result<Receipt, SealError> = trace::instrument!(step, _span).await;
    trace::append_end!(_span, &result);
    result
}

/// `Ok` if `gate` is committed to `pause`, else [`SealError::NotCommitted`].
fn committed_to<P: PartialEq>(
    gate: &HandoffGate<P>,
    pause: &HandoffPause<P>,
) -> Result<(), SealError> {
    let committed = match gate.state() {
        State::Committed {
            pause: committed, ..
        } => std::ptr::eq(&*committed, pause) || *committed == *pause,
        State::Running { .. }
        | State::Requested { .. }
        | State::Held { .. }
        | State::Sealed { .. }
        | State::Closed => false,
    };
    if committed {
        Ok(())
    } else {
        Err(SealError::NotCommitted)
    }
}

/// Carries out `step` on the gate.
fn apply<P: PartialEq>(
    gate: &HandoffGate<P>,
    pause: &HandoffPause<P>,
    step: SealStep,
) -> Result<Receipt, SealError> {
    match step {
        SealStep::Seal(receipt) => {
            if gate.sealed(pause) {
                Ok(receipt)
            } else {
                Err(SealError::ClosedBeforeSeal)
            }
        }
        SealStep::Close(error) => {
            gate.close();
            Err(error)
        }
    }
}

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;
