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
//! Kept whole, past 600 lines: the table is read cell by cell against
//! SPEC §2's, and each cell sits beside its neighbours in one exhaustive
//! `match`, with the waiters' answers that read the same states.

// The core shares pauses immutably; `Arc` here is a plain reference count,
// not a synchronisation point, so it is `std`'s even under loom.
use std::sync::Arc;

use crate::facts::{HandoffIntent, HandoffPause, Invocation};
use crate::gate::GateError;

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
    /// `Reserve` with [`GateError::TicketsExhausted`] instead).
    pub const fn successor(self) -> Ticket {
        Ticket(self.0.saturating_add(1))
    }
}

impl std::fmt::Display for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

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
    /// in this kind of state: [`begin`] is [`Begin::Nothing`] in every state
    /// of a kind for which this is `false`.
    pub const fn boundary_may_act(self) -> bool {
        matches!(self, Self::Requested | Self::Committed)
    }

    /// Whether an answer read from a copy of this kind, without the gate's
    /// lock ([`reserve_refusal`], [`boundary_may_act`](Self::boundary_may_act)),
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

    /// Why a waiter whose query says [`Wait::Gone`] in a state of this kind
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
        State::Running { next: Ticket(0) }
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
        State::Running { next } if next.0 == u64::MAX => Err(GateError::TicketsExhausted),
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
/// the state it was decided in ([`StateKind::gone`]).
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
