//! The worker's last step of a handoff: append the committed pause durably,
//! then seal — in that order, never the other.

use thiserror::Error;

use super::fence::Epoch;
use super::log::{HandoffLog, LogError, Receipt};
use crate::facts::HandoffPause;
use crate::gate::HandoffGate;
use crate::gate::core::State;

/// Why [`append_then_seal`] did not seal.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SealError {
    /// API misuse: the gate is not committed to this pause (pass the pause
    /// `boundary` returned). Nothing was appended; the gate is unchanged.
    #[error("the gate is not committed to this pause")]
    NotCommitted,
    /// Fenced: a newer owner epoch (`current`) claimed the Run, so this
    /// worker was taken for dead. Nothing was appended; the gate is **closed
    /// without a seal** (every `wait()` returns `None`). Stop: the Run is
    /// the newer epoch's.
    #[error("fenced: epoch {epoch} was superseded by epoch {current}; the gate is closed, stop")]
    Fenced {
        /// The epoch this worker held.
        epoch: Epoch,
        /// The Run's current epoch.
        current: Epoch,
    },
    /// The append failed; the gate is **closed without a seal**, so the
    /// requester's `wait()` returns `None`. For [`LogError::Storage`] the
    /// append's outcome is unknown: the owner reconciles from the log. The
    /// log's error is this error's [`source`](std::error::Error::source)
    /// (the message does not repeat it).
    #[error("the durable append failed; the gate is closed without a seal")]
    Append(#[source] LogError),
    /// The pause is durable (the handoff is final), but the gate was closed
    /// between the append and the seal, so the requester's `wait()` returned
    /// `None`. The owner reconciles: the log says `HandedOff`.
    #[error("the pause is durable but the gate was closed before the seal")]
    ClosedBeforeSeal,
}

/// Makes a committed handoff final: appends `pause` to `log` durably under
/// the owner `epoch` this worker holds (from [`HandoffLog::claim`]), and
/// only once that is acknowledged seals the gate (SPEC §1: the requester's
/// `wait()` returns `Some` only for a durable pause). The pause is filed
/// under the gate's own [`source`](HandoffGate::source), so it cannot land
/// under another Run.
///
/// A worker that was paused while its owner took the Run over learns it
/// here: [`SealError::Fenced`], nothing written, the gate closed (R7).
///
/// On `Ok` the successor owns the Run and the worker must stop. On
/// [`SealError::Append`] the gate is closed without a seal: the requester's
/// `wait()` returns `None`, and the owner reconciles the Run from the log
/// (`Resumable` if nothing was written).
///
/// An append is idempotent, so calling this again after a crash-free
/// failure is safe while the gate is still committed.
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
    P: PartialEq + Clone,
    L: HandoffLog<P> + ?Sized,
{
    let committed = match gate.state() {
        State::Committed {
            pause: committed, ..
        } => *committed == *pause,
        State::Running { .. }
        | State::Requested { .. }
        | State::Held { .. }
        | State::Sealed { .. }
        | State::Closed => false,
    };
    if !committed {
        return Err(SealError::NotCommitted);
    }
    match log.append(gate.root_run_id(), gate.source(), epoch, pause) {
        Ok(receipt) => {
            if gate.sealed(pause) {
                Ok(receipt)
            } else {
                Err(SealError::ClosedBeforeSeal)
            }
        }
        Err(LogError::Fenced { epoch, current }) => {
            gate.close();
            Err(SealError::Fenced { epoch, current })
        }
        Err(error) => {
            gate.close();
            Err(SealError::Append(error))
        }
    }
}

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;
