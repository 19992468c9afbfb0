//! Why a handle's operation ended without its handoff, one small error per
//! operation in the manner of tokio's `RecvError` and `AcquireError`: each
//! says only what can happen to that operation, so a caller matches
//! exactly the cases it must handle.

use thiserror::Error;

use super::core::Gone;

/// Why [`HandoffReservation::ready`](super::HandoffReservation::ready)
/// resolved without a held handoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum ReadyError {
    /// The worker let the request go: its preflight prepared no pause (or
    /// one for another intent), it was canceled, or its `boundary` future
    /// was dropped. The Run keeps running; a new reservation may be tried.
    #[error("the worker released the Run")]
    Released,
    /// The Run was handed off by another reservation meanwhile.
    #[error("the Run was handed off")]
    HandedOff,
    /// The worker closed the gate (or exited): no handoff from this gate.
    #[error("the gate is closed")]
    Closed,
}

/// Why [`HeldHandoff::commit`](super::HeldHandoff::commit) refused. Nothing
/// was committed, and the Run is released if it was still held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum CommitError {
    /// The worker's cancellation fired while the handoff was held (S3).
    #[error("the Run is canceled")]
    Canceled,
    /// The worker let the handoff go before the commit (its boundary was
    /// dropped or canceled).
    #[error("the worker released the Run")]
    Released,
    /// Another reservation committed the Run meanwhile.
    #[error("the Run was handed off")]
    HandedOff,
    /// The worker closed the gate (or exited).
    #[error("the gate is closed")]
    Closed,
}

/// Why [`PendingSeal::wait`](super::PendingSeal::wait) resolved without a
/// seal: the worker closed the gate (or exited) without sealing. A
/// committed handoff ends sealed or closed (S4), so this is the one case.
/// The owner must then decide from the canonical log, never resume the old
/// worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum WaitError {
    /// The gate closed before the seal.
    #[error("the gate closed before the seal")]
    Closed,
}

/// Why [`HandoffGate::boundary`](super::HandoffGate::boundary) has nothing
/// more to do for this gate: the worker should stop using it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum BoundaryError {
    /// The Run was already handed off through this gate (it is sealed).
    #[error("the Run was already handed off")]
    HandedOff,
    /// The gate is closed.
    #[error("the gate is closed")]
    Closed,
}

impl From<Gone> for ReadyError {
    fn from(gone: Gone) -> Self {
        match gone {
            Gone::Released => Self::Released,
            Gone::HandedOff => Self::HandedOff,
            Gone::Closed => Self::Closed,
        }
    }
}

impl From<Gone> for CommitError {
    fn from(gone: Gone) -> Self {
        match gone {
            Gone::Released => Self::Released,
            Gone::HandedOff => Self::HandedOff,
            Gone::Closed => Self::Closed,
        }
    }
}

/// A requester's path is `reservation.ready().await?.commit()`: a
/// reservation that was never held fails its commit for the same reason.
impl From<ReadyError> for CommitError {
    fn from(error: ReadyError) -> Self {
        match error {
            ReadyError::Released => Self::Released,
            ReadyError::HandedOff => Self::HandedOff,
            ReadyError::Closed => Self::Closed,
        }
    }
}

impl BoundaryError {
    /// What a boundary that found `gone` returns: `None` (keep running) for
    /// a released request, else the error.
    pub(super) const fn from_gone(gone: Gone) -> Option<Self> {
        match gone {
            Gone::Released => None,
            Gone::HandedOff => Some(Self::HandedOff),
            Gone::Closed => Some(Self::Closed),
        }
    }
}
