//! The gate's states: [`State`], its six kinds ([`StateKind`]) and the
//! [`Ticket`] that names a reservation in them.

// The core shares pauses immutably; `Arc` here is a plain reference count,
// not a synchronisation point, so it is `std`'s even under loom.
use std::sync::Arc;

use super::Gone;
use crate::facts::{HandoffIntent, HandoffPause};

/// Identifies one reservation. Issued by the core on each successful
/// `Reserve`, in increasing order, and never reused by a gate: a stale ticket
/// can never touch a newer reservation (S2), even one with an equal intent.
///
/// Its number is private so that its representation may change; read it
/// with [`get`](Self::get).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(u64);

impl Ticket {
    /// The ticket numbered `number`. A gate issues its own tickets; this
    /// names one for a table, a model or a test (a state built by hand).
    pub const fn new(number: u64) -> Ticket {
        Ticket(number)
    }

    /// The ticket's number: the first is 0, each next one 1 more.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The ticket issued after this one.
    ///
    /// Saturates at `u64::MAX`, which the core never issues (a gate refuses
    /// `Reserve` with [`GateError::TicketsExhausted`](crate::gate::GateError::TicketsExhausted) instead).
    pub const fn successor(self) -> Ticket {
        Ticket(self.0.saturating_add(1))
    }
}

impl std::fmt::Display for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The state of a gate. Cloning it costs reference counts, never a copy of
/// `P` (it needs no `P: Clone`).
#[derive(Debug, PartialEq, Eq, Hash)]
pub enum State<P> {
    /// The worker runs; no handoff is asked. `next` is the ticket the next
    /// successful `Reserve` issues.
    Running {
        /// The ticket the next reservation gets.
        next: Ticket,
    },
    /// A requester holds `ticket` and waits for the worker's boundary.
    Requested {
        /// The live ticket.
        ticket: Ticket,
        /// What the requester asks for, shared with the requester's `Arc`
        /// (no copy).
        intent: Arc<HandoffIntent>,
    },
    /// The worker prepared `pause` for `ticket` and waits for a commit.
    Held {
        /// The live ticket.
        ticket: Ticket,
        /// The prepared pause; its intent is the requested one.
        pause: Arc<HandoffPause<P>>,
    },
    /// The requester committed: irreversible, waiting for the durable seal.
    Committed {
        /// The committed ticket.
        ticket: Ticket,
        /// The pause to seal.
        pause: Arc<HandoffPause<P>>,
    },
    /// Terminal: the pause is durable; the successor owns the Run.
    Sealed {
        /// The sealed ticket.
        ticket: Ticket,
        /// The sealed pause.
        pause: Arc<HandoffPause<P>>,
    },
    /// Terminal: the worker closed the gate; no handoff happened or will.
    Closed,
}

impl<P> Clone for State<P> {
    fn clone(&self) -> Self {
        match self {
            State::Running { next } => State::Running { next: *next },
            State::Requested { ticket, intent } => State::Requested {
                ticket: *ticket,
                intent: Arc::clone(intent),
            },
            State::Held { ticket, pause } => State::Held {
                ticket: *ticket,
                pause: Arc::clone(pause),
            },
            State::Committed { ticket, pause } => State::Committed {
                ticket: *ticket,
                pause: Arc::clone(pause),
            },
            State::Sealed { ticket, pause } => State::Sealed {
                ticket: *ticket,
                pause: Arc::clone(pause),
            },
            State::Closed => State::Closed,
        }
    }
}

/// The six kinds of [`State`], without their data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum StateKind {
    /// [`State::Running`]
    Running,
    /// [`State::Requested`]
    Requested,
    /// [`State::Held`]
    Held,
    /// [`State::Committed`]
    Committed,
    /// [`State::Sealed`]
    Sealed,
    /// [`State::Closed`]
    Closed,
}

impl StateKind {
    /// Every kind, in table order.
    pub const ALL: [StateKind; 6] = [
        Self::Running,
        Self::Requested,
        Self::Held,
        Self::Committed,
        Self::Sealed,
        Self::Closed,
    ];

    /// The kind's name, as in the table.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Running => "Running",
            Self::Requested => "Requested",
            Self::Held => "Held",
            Self::Committed => "Committed",
            Self::Sealed => "Sealed",
            Self::Closed => "Closed",
        }
    }

    /// Whether no event can leave this kind of state (S6).
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Sealed | Self::Closed)
    }

    /// The kind whose `as u8` is `index`, its place in [`ALL`](Self::ALL)
    /// (a test pins that the two agree), if any.
    pub fn from_index(index: u8) -> Option<StateKind> {
        Self::ALL.get(usize::from(index)).copied()
    }

    /// Whether a worker reaching a step boundary may have something to do
    /// in this kind of state: [`begin`](super::begin) is
    /// [`Begin::Nothing`](super::Begin::Nothing) in every state
    /// of a kind for which this is `false`.
    pub const fn boundary_may_act(self) -> bool {
        matches!(self, Self::Requested | Self::Committed)
    }

    /// Whether an answer read from a copy of this kind, without the gate's
    /// lock ([`reserve_refusal`](super::reserve_refusal),
    /// [`boundary_may_act`](Self::boundary_may_act)),
    /// is the table's answer at the moment of that read.
    ///
    /// `false` for `Held` alone. A commit is decided on the worker's cancel
    /// bit, which the cancellation sets without the gate's lock. A commit
    /// that reads the bit clear takes effect no later than that read (a
    /// cancellation completing after it cannot refuse it), yet the state
    /// becomes `Committed` only afterwards, in the same critical section. A
    /// reader of the copy in between would answer `Busy` or "no handoff
    /// asked" for a state already left, after the cancellation it may have
    /// fired itself: no order of steps explains that (S3). So in `Held` the
    /// adapter takes the lock, which the commit holds from its read of the
    /// bit to its change of state.
    ///
    /// `Requested` is left the same way, by a preflight that reads the bit,
    /// but a preflight that reads it clear moves to `Held`, whose copy
    /// answers are the same (a test checks this for every such step).
    pub const fn copy_may_answer(self) -> bool {
        !matches!(self, Self::Held)
    }

    /// Why a waiter whose query says [`Wait::Gone`](super::Wait::Gone) in a state of this kind
    /// will not get its handoff: the worker let the request go (the Run
    /// keeps running, or serves another ticket), the Run was handed off,
    /// or the gate is closed. The handles' errors are made from it.
    pub const fn gone(self) -> Gone {
        match self {
            Self::Running | Self::Requested | Self::Held => Gone::Released,
            Self::Committed | Self::Sealed => Gone::HandedOff,
            Self::Closed => Gone::Closed,
        }
    }
}

impl<P> State<P> {
    /// A new gate's state: running, the first ticket not yet issued.
    pub const fn initial() -> Self {
        State::Running {
            next: Ticket::new(0),
        }
    }

    /// The kind of this state.
    pub fn kind(&self) -> StateKind {
        match self {
            State::Running { .. } => StateKind::Running,
            State::Requested { .. } => StateKind::Requested,
            State::Held { .. } => StateKind::Held,
            State::Committed { .. } => StateKind::Committed,
            State::Sealed { .. } => StateKind::Sealed,
            State::Closed => StateKind::Closed,
        }
    }

    /// The ticket this state is about, if any.
    pub fn ticket(&self) -> Option<Ticket> {
        match self {
            State::Requested { ticket, .. }
            | State::Held { ticket, .. }
            | State::Committed { ticket, .. }
            | State::Sealed { ticket, .. } => Some(*ticket),
            State::Running { .. } | State::Closed => None,
        }
    }

    /// The pause this state holds, if any.
    pub fn pause(&self) -> Option<&Arc<HandoffPause<P>>> {
        match self {
            State::Held { pause, .. }
            | State::Committed { pause, .. }
            | State::Sealed { pause, .. } => Some(pause),
            State::Running { .. } | State::Requested { .. } | State::Closed => None,
        }
    }
}
