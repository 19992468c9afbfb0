use thiserror::Error;

use crate::facts::IntentError;

/// Why the gate refused an operation, sorted by who must act.
///
/// Each message says everything, its cause included, so
/// [`source`](std::error::Error::source) is `None`: a reporter that walks
/// the chain prints each cause once. The cause is in the variant
/// ([`InvalidInput`](Self::InvalidInput)'s [`IntentError`]) for code that
/// matches on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum GateError {
    /// Caller fault: the intent is malformed or names another Run (S9).
    #[error("invalid handoff intent: {0}")]
    InvalidInput(IntentError),
    /// Retryable: another reservation is live; try again later (S1).
    #[error("another handoff is in progress")]
    Busy,
    /// Final: the Run was handed off (committed or sealed).
    #[error("the Run was already handed off")]
    HandedOff,
    /// Final: the worker closed the gate.
    #[error("the gate is closed")]
    Closed,
    /// Final: this gate issued every ticket it can (2^64 - 1 of them).
    #[error("the gate has no tickets left")]
    TicketsExhausted,
}

impl From<IntentError> for GateError {
    /// [`GateError::InvalidInput`].
    fn from(error: IntentError) -> Self {
        Self::InvalidInput(error)
    }
}

impl GateError {
    /// Whether retrying the same operation later may succeed.
    pub const fn is_retryable(&self) -> bool {
        matches!(self, Self::Busy)
    }

    /// The error's name, as the transition table prints it.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::InvalidInput(_) => "InvalidInput",
            Self::Busy => "Busy",
            Self::HandedOff => "HandedOff",
            Self::Closed => "Closed",
            Self::TicketsExhausted => "TicketsExhausted",
        }
    }
}
