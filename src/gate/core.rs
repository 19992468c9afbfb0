//! The handoff gate's transition table as pure functions.
//!
//! [`step`] maps a state and an event to an [`Outcome`]; [`ready`],
//! [`boundary`] and [`seal`] say what each kind of waiter should do in a
//! state; [`begin`] is what a worker must do when it reaches a step
//! boundary ([`observe`]: the request it would prepare for, if any). There are no
//! locks, no clock and no async here: the cancellation bit is an input of the
//! events that need it. Every `(state, event)` cell is decided by an
//! exhaustive match, so adding a state or an event does not compile until
//! each new cell is decided.
//!
//! The state, event and outcome enums here are exhaustive (not
//! `#[non_exhaustive]`) on purpose: they *are* the table, and code that
//! matches on them (the model checker, the fuzzers, a runtime's own
//! diagnostics) must also fail to compile when a state or event is added,
//! until it decides the new cells. A new variant is a breaking change.
//!
//! This file is the table itself ([`step`] and its `Reserve` row in
//! halves, [`reserve_valid`], [`reserve_next`], [`reserve_refusal`]) with
//! its events and outcomes; the states and tickets are in `state.rs`, the
//! waiters' answers ([`ready`], [`boundary`], [`seal`], [`begin`]) in
//! `wait.rs`. All are re-exported here: one path, `gate::core`, for
//! every name.

// The core shares pauses immutably; `Arc` here is a plain reference count,
// not a synchronisation point, so it is `std`'s even under loom.
use std::sync::Arc;

mod state;
mod wait;

pub use state::{State, StateKind, Ticket};
pub use wait::{Begin, Gone, Query, Wait, begin, boundary, observe, ready, seal};

use crate::facts::{HandoffIntent, HandoffPause, Invocation};
use crate::gate::GateError;

/// What a gate is fixed to when it is made: the Run it guards.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    source: Invocation,
    root_run_id: String,
}

impl Config {
    /// A gate for the Run executing as `source`, within the logical Run
    /// `root_run_id`.
    pub fn new(source: Invocation, root_run_id: String) -> Self {
        Self {
            source,
            root_run_id,
        }
    }

    /// Where the Run being guarded executes.
    pub fn source(&self) -> &Invocation {
        &self.source
    }

    /// The logical Run every accepted intent must keep.
    pub fn root_run_id(&self) -> &str {
        &self.root_run_id
    }
}

/// An input to the gate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event<P> {
    /// A requester asks for a handoff. The intent is shared, not copied: a
    /// requester that keeps it in an `Arc` pays one reference count.
    Reserve(Arc<HandoffIntent>),
    /// The worker's preflight for `ticket` finished with `pause` (`None`:
    /// failed), with the cancellation bit read when it finished.
    Preflight {
        /// The ticket the worker observed.
        ticket: Ticket,
        /// The prepared pause, or `None` if preflight failed.
        pause: Option<HandoffPause<P>>,
        /// Whether the Run was canceled when preflight finished.
        canceled: bool,
    },
    /// Release `ticket`: a handle was dropped or the Run was canceled.
    Cancel(Ticket),
    /// The requester holding `ticket` commits, with the cancellation bit.
    Commit {
        /// The requester's ticket.
        ticket: Ticket,
        /// Whether the Run is canceled now.
        canceled: bool,
    },
    /// The worker reports `pause` durably appended to the canonical log.
    /// The committed pause's own `Arc` matches by pointer, without calling
    /// `P`'s `PartialEq`; any other matches if equal by value. The adapter
    /// offers only the gate's own `Arc`, having compared the caller's pause
    /// with it first.
    Seal(Arc<HandoffPause<P>>),
    /// The worker exits: no handoff from now on.
    Close,
}

/// Why the table refused an event. The reserve refusals are the
/// requester's [`GateError`]s; the commit refusals stay in the core: the
/// adapter answers them as [`CommitError`](super::CommitError)s, with the
/// reason read from the state (`Released`, `HandedOff`, `Closed`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Refusal {
    /// A reserve refused: bad input (S9), another live reservation (S1),
    /// or a final gate.
    #[error("{0}")]
    Reserve(GateError),
    /// A commit whose ticket is not the held one (released, stale).
    #[error("the reservation is not held")]
    NotHeld,
    /// A commit while the Run is canceled (S3).
    #[error("the Run is canceled")]
    Canceled,
}

impl Refusal {
    /// The refusal's name, as the transition table prints it.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Reserve(error) => error.name(),
            Self::NotHeld => "NotHeld",
            Self::Canceled => "Canceled",
        }
    }
}

/// What an event did and what the caller learns.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "an outcome carries the next state"]
pub enum Outcome<P> {
    /// Accepted: the gate is now in this state.
    Moved(State<P>),
    /// The event does not apply to the current state (a stale ticket, a seal
    /// of another pause, a terminal gate). The state is unchanged.
    Ignored,
    /// The event is refused for this reason. The state is unchanged.
    Refused(Refusal),
}

/// The transition table: the outcome of `event` in `state`.
///
/// `Reserve` validates the intent first
/// ([`HandoffIntent::validate_for`]), so bad input is reported as such in
/// every state and never changes anything (S9).
pub fn step<P: PartialEq>(config: &Config, state: &State<P>, event: Event<P>) -> Outcome<P> {
    use Outcome::{Ignored, Moved, Refused};
    match event {
        Event::Reserve(intent) => match intent.validate_for(&config.source, &config.root_run_id) {
            Err(error) => Refused(Refusal::Reserve(GateError::InvalidInput(error))),
            Ok(()) => reserve_valid(state, intent),
        },
        Event::Preflight {
            ticket,
            pause,
            canceled,
        } => match state {
            State::Requested {
                ticket: live,
                intent,
            } if *live == ticket => match pause {
                Some(pause) if !canceled && pause.intent == *intent => Moved(State::Held {
                    ticket,
                    pause: Arc::new(pause),
                }),
                Some(_) | None => Moved(State::Running {
                    next: ticket.successor(),
                }),
            },
            State::Running { .. }
            | State::Requested { .. }
            | State::Held { .. }
            | State::Committed { .. }
            | State::Sealed { .. }
            | State::Closed => Ignored,
        },
        Event::Cancel(ticket) => match state {
            State::Requested { ticket: live, .. } | State::Held { ticket: live, .. }
                if *live == ticket =>
            {
                Moved(State::Running {
                    next: ticket.successor(),
                })
            }
            State::Running { .. }
            | State::Requested { .. }
            | State::Held { .. }
            | State::Committed { .. }
            | State::Sealed { .. }
            | State::Closed => Ignored,
        },
        Event::Commit { ticket, canceled } => match state {
            State::Held { ticket: live, .. } if *live == ticket && canceled => {
                Refused(Refusal::Canceled)
            }
            State::Held {
                ticket: live,
                pause,
            } if *live == ticket => Moved(State::Committed {
                ticket,
                pause: Arc::clone(pause),
            }),
            State::Running { .. }
            | State::Requested { .. }
            | State::Held { .. }
            | State::Committed { .. }
            | State::Sealed { .. }
            | State::Closed => Refused(Refusal::NotHeld),
        },
        Event::Seal(offered) => match state {
            State::Committed { ticket, pause }
                if Arc::ptr_eq(pause, &offered) || *pause == offered =>
            {
                // Sealed keeps the gate's own `Arc` (S5): the offered one
                // only when it is that very `Arc`, which saves a count.
                let pause = if Arc::ptr_eq(pause, &offered) {
                    offered
                } else {
                    Arc::clone(pause)
                };
                Moved(State::Sealed {
                    ticket: *ticket,
                    pause,
                })
            }
            State::Running { .. }
            | State::Requested { .. }
            | State::Held { .. }
            | State::Committed { .. }
            | State::Sealed { .. }
            | State::Closed => Ignored,
        },
        Event::Close => match state {
            State::Running { .. }
            | State::Requested { .. }
            | State::Held { .. }
            | State::Committed { .. } => Moved(State::Closed),
            State::Sealed { .. } | State::Closed => Ignored,
        },
    }
}

/// The `Reserve` row of the table for an intent already found valid for
/// this gate's [`Config`] ([`HandoffIntent::validate_for`]): what [`step`]
/// does once the intent passed. The adapter validates before it takes its
/// lock, and then calls this.
pub fn reserve_valid<P>(state: &State<P>, intent: Arc<HandoffIntent>) -> Outcome<P> {
    match reserve_next(state, intent) {
        Ok(next) => Outcome::Moved(next),
        Err(error) => Outcome::Refused(Refusal::Reserve(error)),
    }
}

/// [`reserve_valid`] with its refusal as the requester sees it: the next
/// state, or why not. A reserve is never ignored.
pub fn reserve_next<P>(
    state: &State<P>,
    intent: Arc<HandoffIntent>,
) -> Result<State<P>, GateError> {
    match state {
        State::Running { next } if next.get() == u64::MAX => Err(GateError::TicketsExhausted),
        State::Running { next } => Ok(State::Requested {
            ticket: *next,
            intent,
        }),
        State::Requested { .. } | State::Held { .. } => Err(GateError::Busy),
        State::Committed { .. } | State::Sealed { .. } => Err(GateError::HandedOff),
        State::Closed => Err(GateError::Closed),
    }
}

/// What [`reserve_valid`] answers from the kind of state alone: every kind
/// but `Running` refuses a valid intent, and says why (S1); `None` for
/// `Running`, whose answer depends on its next ticket. The adapter answers
/// these refusals from a copy of the kind, without its lock, where
/// [`StateKind::copy_may_answer`].
pub fn reserve_refusal(kind: StateKind) -> Option<GateError> {
    match kind {
        StateKind::Running => None,
        StateKind::Requested | StateKind::Held => Some(GateError::Busy),
        StateKind::Committed | StateKind::Sealed => Some(GateError::HandedOff),
        StateKind::Closed => Some(GateError::Closed),
    }
}
