//! The gate's states, events and answers in a compact, `Copy` form whose
//! intents and pauses are indices into [`super::codec::Facts`]. The model
//! stores these; [`super::codec::Core`] translates them to and from the real
//! core's types.

use serde::{Deserialize, Serialize};

/// The gate state with facts as table indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Gate {
    /// `State::Running`.
    Running {
        /// The next ticket.
        next: u8,
    },
    /// `State::Requested`, with the intent's index.
    Requested {
        /// The live ticket.
        ticket: u8,
        /// The requested intent.
        intent: u8,
    },
    /// `State::Held`, with the pause's index.
    Held {
        /// The live ticket.
        ticket: u8,
        /// The prepared pause.
        pause: u8,
    },
    /// `State::Committed`.
    Committed {
        /// The committed ticket.
        ticket: u8,
        /// The pause to seal.
        pause: u8,
    },
    /// `State::Sealed`.
    Sealed {
        /// The sealed ticket.
        ticket: u8,
        /// The sealed pause.
        pause: u8,
    },
    /// `State::Closed`.
    Closed,
}

impl Gate {
    /// The live or final ticket, as `State::ticket`.
    pub fn ticket(self) -> Option<u8> {
        match self {
            Gate::Requested { ticket, .. }
            | Gate::Held { ticket, .. }
            | Gate::Committed { ticket, .. }
            | Gate::Sealed { ticket, .. } => Some(ticket),
            Gate::Running { .. } | Gate::Closed => None,
        }
    }

    /// The kind's name, as in SPEC's table.
    pub fn kind(self) -> &'static str {
        match self {
            Gate::Running { .. } => "Running",
            Gate::Requested { .. } => "Requested",
            Gate::Held { .. } => "Held",
            Gate::Committed { .. } => "Committed",
            Gate::Sealed { .. } => "Sealed",
            Gate::Closed => "Closed",
        }
    }

    /// Whether the state is `Sealed` or `Closed` (S6).
    pub fn is_terminal(self) -> bool {
        matches!(self, Gate::Sealed { .. } | Gate::Closed)
    }
}

/// A core event with facts as table indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ev {
    /// `Event::Reserve` with intent `intent`.
    Reserve {
        /// The intent.
        intent: u8,
    },
    /// `Event::Preflight`; `pause: None` is a failed preflight.
    Preflight {
        /// The ticket.
        ticket: u8,
        /// The pause (index; `None`: preflight failed).
        pause: Option<u8>,
        /// The cancellation bit.
        canceled: bool,
    },
    /// `Event::Cancel`.
    Cancel {
        /// The ticket to release.
        ticket: u8,
    },
    /// `Event::Commit`.
    Commit {
        /// The requester's ticket.
        ticket: u8,
        /// The cancellation bit.
        canceled: bool,
    },
    /// `Event::Seal` with pause `pause`.
    Seal {
        /// The pause reported durable.
        pause: u8,
    },
    /// `Event::Close`.
    Close,
}

impl Ev {
    /// The ticket the event is about, if any.
    pub fn ticket(self) -> Option<u8> {
        match self {
            Ev::Preflight { ticket, .. } | Ev::Cancel { ticket } | Ev::Commit { ticket, .. } => {
                Some(ticket)
            }
            Ev::Reserve { .. } | Ev::Seal { .. } | Ev::Close => None,
        }
    }
}

/// What `step` answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Out {
    /// `Outcome::Moved`.
    Moved(Gate),
    /// `Outcome::Ignored`.
    Ignored,
    /// `Outcome::Refused`.
    Refused(Refusal),
}

/// A `GateError`, by name (the error type is `#[non_exhaustive]`: a new
/// variant stops the model until it is decided here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Refusal {
    /// `InvalidInput`.
    InvalidInput,
    /// `Busy` (the one retryable refusal).
    Busy,
    /// `HandedOff`.
    HandedOff,
    /// `Closed`.
    Closed,
    /// `TicketsExhausted`.
    TicketsExhausted,
    /// `NotHeld`.
    NotHeld,
    /// `Canceled`.
    Canceled,
}

impl Refusal {
    /// Every refusal.
    pub const ALL: [Refusal; 7] = [
        Self::InvalidInput,
        Self::Busy,
        Self::HandedOff,
        Self::Closed,
        Self::TicketsExhausted,
        Self::NotHeld,
        Self::Canceled,
    ];

    /// The name `GateError::name` gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::InvalidInput => "InvalidInput",
            Self::Busy => "Busy",
            Self::HandedOff => "HandedOff",
            Self::Closed => "Closed",
            Self::TicketsExhausted => "TicketsExhausted",
            Self::NotHeld => "NotHeld",
            Self::Canceled => "Canceled",
        }
    }

    /// The refusal `GateError::name` calls `name`.
    ///
    /// # Panics
    ///
    /// On a name the model does not know: a new `GateError` must be decided
    /// here before the model can run.
    pub fn from_name(name: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|r| r.name() == name)
            .unwrap_or_else(|| panic!("GateError::{name} is new: decide how the model treats it"))
    }
}

/// A waiter's answer with the pause as a table index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// `Wait::Pending`.
    Pending,
    /// `Wait::Resolved` with this pause.
    Resolved(u8),
    /// `Wait::Gone`.
    Gone,
}

/// Which waiter query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Query {
    /// `core::ready`.
    Ready,
    /// `core::boundary`.
    Boundary,
    /// `core::seal`.
    Seal,
}

/// What `core::begin` tells a worker at a step boundary, with facts as
/// table indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Begun {
    /// `Begin::Nothing`: keep running.
    Nothing,
    /// `Begin::Requested`: run preflight for this ticket and intent.
    Requested {
        /// The live ticket.
        ticket: u8,
        /// The requested intent.
        intent: u8,
    },
    /// `Begin::Committed`: the boundary returns this committed pause.
    Committed {
        /// The committed pause.
        pause: u8,
    },
}
