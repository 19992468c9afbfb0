//! The waiters' answers: what a requester's `ready`, a worker's
//! `boundary` and a `wait` for the seal do in a state ([`ready`],
//! [`boundary`], [`seal`]: [`Wait`]), and what a worker reaching a step
//! boundary must do ([`begin`], [`observe`]).

// The core shares pauses immutably; `Arc` here is a plain reference count,
// not a synchronisation point, so it is `std`'s even under loom.
use std::sync::Arc;

use super::{State, Ticket};
use crate::facts::{HandoffIntent, HandoffPause};

/// What a waiter should do in a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wait<T> {
    /// Keep waiting: the state may still go either way.
    Pending,
    /// Resolve with this value.
    Resolved(T),
    /// Resolve with nothing: what was waited for can no longer happen.
    Gone,
}

impl<T> Wait<T> {
    /// `None` while pending, else the waiter's answer.
    pub fn decided(self) -> Option<Option<T>> {
        match self {
            Wait::Pending => None,
            Wait::Resolved(value) => Some(Some(value)),
            Wait::Gone => Some(None),
        }
    }
}

/// Why a handoff a waiter or a commit was after can no longer happen, by
/// the state it was decided in ([`StateKind::gone`](super::StateKind::gone)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gone {
    /// The request was let go (`Running`, or another ticket's
    /// `Requested`/`Held`): a failed or mismatched preflight, a
    /// cancellation, a dropped handle.
    Released,
    /// The Run was handed off (`Committed` or `Sealed`).
    HandedOff,
    /// The gate is closed.
    Closed,
}

/// The shape of the waiter queries [`ready`], [`boundary`] and [`seal`].
pub type Query<P> = for<'a> fn(&'a State<P>, Ticket) -> Wait<&'a Arc<HandoffPause<P>>>;

/// `reservation.ready()` for `ticket`: pending while `Requested{ticket}`,
/// resolved with the pause in `Held{ticket}`, gone otherwise (S7).
pub fn ready<P>(state: &State<P>, ticket: Ticket) -> Wait<&Arc<HandoffPause<P>>> {
    match state {
        State::Requested { ticket: live, .. } if *live == ticket => Wait::Pending,
        State::Held {
            ticket: live,
            pause,
        } if *live == ticket => Wait::Resolved(pause),
        State::Running { .. }
        | State::Requested { .. }
        | State::Held { .. }
        | State::Committed { .. }
        | State::Sealed { .. }
        | State::Closed => Wait::Gone,
    }
}

/// The worker's `boundary` after its preflight for `ticket` was accepted:
/// pending while `Held{ticket}`, resolved with the pause in
/// `Committed{ticket}`, gone otherwise (S7).
pub fn boundary<P>(state: &State<P>, ticket: Ticket) -> Wait<&Arc<HandoffPause<P>>> {
    match state {
        State::Held { ticket: live, .. } if *live == ticket => Wait::Pending,
        State::Committed {
            ticket: live,
            pause,
        } if *live == ticket => Wait::Resolved(pause),
        State::Running { .. }
        | State::Requested { .. }
        | State::Held { .. }
        | State::Committed { .. }
        | State::Sealed { .. }
        | State::Closed => Wait::Gone,
    }
}

/// `pending.wait()` for `ticket`: pending while `Committed{ticket}`,
/// resolved with the pause only in `Sealed{ticket}` (S5), gone otherwise.
pub fn seal<P>(state: &State<P>, ticket: Ticket) -> Wait<&Arc<HandoffPause<P>>> {
    match state {
        State::Committed { ticket: live, .. } if *live == ticket => Wait::Pending,
        State::Sealed {
            ticket: live,
            pause,
        } if *live == ticket => Wait::Resolved(pause),
        State::Running { .. }
        | State::Requested { .. }
        | State::Held { .. }
        | State::Committed { .. }
        | State::Sealed { .. }
        | State::Closed => Wait::Gone,
    }
}

/// What the worker finds when it reaches a step boundary: what
/// [`HandoffGate::boundary`](crate::HandoffGate::boundary) does first.
#[derive(Debug, PartialEq, Eq)]
pub enum Begin<'a, P> {
    /// No handoff to act on: keep running (`Running`; `Held`, which only a
    /// boundary already under way waits on; the terminal states).
    Nothing,
    /// A requester holds `Ticket` and asks for this intent: run preflight.
    Requested(Ticket, &'a Arc<HandoffIntent>),
    /// A handoff is already committed — the boundary that held it was
    /// dropped after the commit. The commit is irreversible (S4): stop,
    /// append this pause durably and seal it.
    Committed(&'a Arc<HandoffPause<P>>),
}

impl<P> Clone for Begin<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Begin<'_, P> {}

/// What a worker reaching a step boundary must do in `state` (see
/// [`Begin`]). Reaching a boundary is enough for a committed handoff to end
/// (L3): a later boundary learns of a commit its dropped predecessor missed.
pub fn begin<P>(state: &State<P>) -> Begin<'_, P> {
    match state {
        State::Requested { ticket, intent } => Begin::Requested(*ticket, intent),
        State::Committed { pause, .. } => Begin::Committed(pause),
        State::Running { .. } | State::Held { .. } | State::Sealed { .. } | State::Closed => {
            Begin::Nothing
        }
    }
}

/// The request a worker reaching a step boundary would prepare for: the
/// live ticket and intent in `Requested`, else `None`. The
/// [`Begin::Requested`] case of [`begin`].
pub fn observe<P>(state: &State<P>) -> Option<(Ticket, &Arc<HandoffIntent>)> {
    match begin(state) {
        Begin::Requested(ticket, intent) => Some((ticket, intent)),
        Begin::Nothing | Begin::Committed(_) => None,
    }
}
