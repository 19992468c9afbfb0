//! The global state of the handoff system: the gate, each actor's program
//! counter and the ghost variables that record what each actor was
//! promised, plus the transition labels.

use serde::{Deserialize, Serialize};

pub use super::codec::Decided;
use super::codec::{Ev, Gate, Out};

/// The most requesters a state has room for.
pub const MAX_REQUESTERS: usize = 6;
/// The worker's fairness class.
pub const WORKER: u8 = 62;
/// The closer's fairness class, when it is fair.
pub const CLOSER: u8 = 63;
/// The restart's fairness class (durable configurations).
pub const RESTART: u8 = 61;

/// Whether the worker appends its pause to a durable log, and in which
/// order it appends and seals (issue 9). With [`Durable::Off`] the system
/// is the gate alone and none of the durable fields ever change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Durable {
    /// No log, no crashes, no restart: the handoff gate of issue 3.
    #[default]
    Off,
    /// The correct worker: append the committed pause durably, then seal.
    /// The worker may crash at every point; a restart reconciles.
    AppendThenSeal,
    /// BROKEN ON PURPOSE (self-test): the worker seals first and appends
    /// afterwards, so a crash in between leaves a seal nothing durable
    /// backs.
    SealThenAppend,
}

impl Durable {
    /// Whether the log, crashes and the restart are modelled.
    pub fn is_on(self) -> bool {
        self != Durable::Off
    }
}

/// Which actors a configuration has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Setup {
    /// Number of requesters (1..=[`MAX_REQUESTERS`]).
    pub requesters: u8,
    /// Successful reservations each requester may make.
    pub tries: u8,
    /// A closer that may close the gate at any time.
    pub closer: bool,
    /// The closer must eventually close (shows how it excuses livelocks).
    pub fair_closer: bool,
    /// Cancellation may fire at any time.
    pub cancellation: bool,
    /// Bad input (a malformed intent, another root Run) may arrive any time.
    pub bad_input: bool,
    /// The durable log, crashes of the worker and the restart that
    /// reconciles (absent in traces recorded before it existed: `Off`).
    #[serde(default)]
    pub durable: Durable,
}

/// Where a requester's program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Phase {
    /// Not reserved; may reserve while tries are left.
    Idle,
    /// Holds a reservation, in `ready()`.
    Waiting {
        /// Its ticket.
        ticket: u8,
    },
    /// Holds a `HeldHandoff`; ghost: the pause `ready()` promised.
    Holding {
        /// Its ticket.
        ticket: u8,
        /// Ghost: the pause `ready()` gave it.
        pause: u8,
    },
    /// Its commit was refused; dropping the `HeldHandoff`.
    Releasing {
        /// Its ticket.
        ticket: u8,
    },
    /// Committed, in `wait()`; ghost: the pause it committed.
    Sealing {
        /// Its ticket.
        ticket: u8,
        /// Ghost: the pause it committed.
        pause: u8,
    },
    /// Finished; ghost: whether `wait()` gave it the seal.
    Done {
        /// Ghost: whether `wait()` gave it the seal.
        sealed: bool,
    },
}

/// One requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Requester {
    /// Its program counter and ghost.
    pub phase: Phase,
    /// Successful reservations it may still make.
    pub tries: u8,
}

/// Where the worker's program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Worker {
    /// Running steps; at each boundary it looks for a request.
    Running,
    /// Observed `ticket` with intent `intent`; preflight runs.
    Preflight {
        /// The observed ticket.
        ticket: u8,
        /// The observed intent.
        intent: u8,
    },
    /// Its pause is held, `boundary` waits; ghost: the pause it prepared.
    Awaiting {
        /// The held ticket.
        ticket: u8,
        /// Ghost: the pause it prepared.
        pause: u8,
    },
    /// `boundary` returned the committed pause (when it woke, or when a
    /// later boundary found the commit); appending it durably.
    Sealing {
        /// The committed pause `boundary` returned.
        pause: u8,
    },
    /// Sealed or exited (durable configurations: gone, crashed or exited).
    Done,
    /// Durable: the worker's `append_then_seal` found the gate committed
    /// to its pause (it checks before it appends); the append is next (the
    /// seal, in the broken order). The gate may close meanwhile: the check
    /// and the append are two steps.
    Checked {
        /// The committed pause.
        pause: u8,
    },
    /// Durable, correct order: the pause is appended; the seal is next.
    Appended {
        /// The committed pause, now durable.
        pause: u8,
    },
    /// Durable, broken order ([`Durable::SealThenAppend`]): the gate is
    /// sealed but the pause is not appended yet.
    SealedUnappended {
        /// The committed pause, sealed but not durable.
        pause: u8,
    },
    /// Durable: both the append and the seal are done; the worker exits
    /// next (its gate drops: `Close`, ignored once sealed).
    Exiting,
}

/// Where the worker was when it crashed (durable configurations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CrashPoint {
    /// Running, in preflight or awaiting its boundary: no committed pause
    /// in hand.
    Running,
    /// `boundary` returned the committed pause (checked or not); nothing
    /// appended or sealed.
    BeforeAppend,
    /// Appended, not sealed yet.
    AfterAppendBeforeSeal,
    /// Sealed, not appended yet (only the broken order gets here).
    AfterSealBeforeAppend,
    /// Appended and sealed, before it exited.
    AfterSeal,
}

/// Who owns the Run after the restart (durable configurations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Owner {
    /// Not reconciled yet (the old worker may still run, or is gone and the
    /// restart has not run).
    #[default]
    Undecided,
    /// Reconciled `HandedOff`: the successor owns the Run.
    Successor,
    /// Reconciled `Resumable`: a *new* worker resumes the Run (its own,
    /// fresh gate; the model stops there — that is this system again).
    Resumed,
    /// Reconciliation refused contradictory facts: an operator must look.
    Operator,
}

/// The global state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Sys {
    /// The gate core's state.
    pub gate: Gate,
    /// The cancellation bit (one-way).
    pub canceled: bool,
    /// The closer has not closed yet.
    pub closer: bool,
    /// The worker.
    pub worker: Worker,
    /// The requesters; slots past the configured number stay `Done`.
    pub req: [Requester; MAX_REQUESTERS],
    /// The durable log: the pause row appended for the Run, if any (the
    /// schema's uniqueness constraint allows one per Run). Absent in traces
    /// recorded before it existed.
    #[serde(default)]
    pub log: Option<u8>,
    /// Who owns the Run after the restart (absent in older traces).
    #[serde(default)]
    pub owner: Owner,
}

/// What an actor did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Act {
    /// Requester `r` reserves with its intent.
    Reserve(u8),
    /// Requester `r`'s `ready()` resolves.
    ReadyWakes(u8),
    /// Requester `r` drops its reservation or `ready()` future.
    DropReservation(u8),
    /// Requester `r` commits its held handoff.
    Commit(u8),
    /// Requester `r` drops its `HeldHandoff` (also after a refused commit).
    DropHeld(u8),
    /// Requester `r`'s `wait()` resolves.
    SealWakes(u8),
    /// Requester `r` drops its `PendingSeal`.
    DropPendingSeal(u8),
    /// The worker sees a request at a boundary.
    Observe,
    /// The worker's preflight prepares the requested pause.
    PreflightOk,
    /// The worker's preflight fails.
    PreflightFails,
    /// The worker's preflight prepares a pause for another intent.
    PreflightMismatched,
    /// The worker's `boundary` future is dropped (or preflight panics).
    DropBoundary,
    /// The worker's `boundary` resolves.
    BoundaryWakes,
    /// A new `boundary` begins in `Committed` (its predecessor was dropped
    /// after the commit) and returns the committed pause at once.
    BoundaryFindsCommit,
    /// The worker's `boundary` sees cancellation while held.
    BoundaryCanceled,
    /// The worker seals the committed pause.
    Seal,
    /// The worker reports a different pause as sealed.
    SealForged,
    /// The worker exits after `boundary` returned the committed pause,
    /// without sealing (its gate drops: `Close`).
    WorkerExits,
    /// The closer closes the gate.
    Close,
    /// Cancellation fires.
    Cancel,
    /// A malformed intent is reserved.
    ReserveMalformed,
    /// An intent for another root Run is reserved.
    ReserveOtherRun,
    /// Durable: the worker appends the committed pause to the log.
    Append,
    /// Durable: `append_then_seal` finds the gate no longer committed to
    /// the pause (`SealError::NotCommitted`): nothing is appended and the
    /// worker exits (its gate drops: `Close`).
    NotCommitted,
    /// Durable: `append_then_seal` checks that the gate is committed to the
    /// pause before it appends.
    CheckCommitted,
    /// Durable: the append fails and wrote nothing; the worker closes
    /// without sealing.
    AppendFails,
    /// Durable: the append fails with a storage error *after* the row
    /// became durable (its outcome is unknown to the worker); the worker
    /// closes without sealing.
    AppendFailsWritten,
    /// Durable: the worker, done, exits (its gate drops: `Close`).
    Exit,
    /// Durable: the worker's process dies here (its gate drops: `Close`).
    Crash(CrashPoint),
    /// Durable: the restart reads the log and calls the real
    /// `baton::durable::reconcile`.
    Reconcile(Decided),
}

/// One transition: the actor's act, and the core event with its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Step {
    /// What the actor did.
    pub act: Act,
    /// The core event it fed, if any (waiter steps feed none).
    pub event: Option<Ev>,
    /// What `step` answered.
    pub outcome: Option<Out>,
}

/// Pause index helpers (see [`super::codec::Facts`]).
pub mod pause {
    /// The pause prepared for intent `intent`.
    pub fn prepared(intent: u8) -> u8 {
        2 * intent
    }
    /// A pause for the same intent with another payload.
    pub fn forged(pause: u8) -> u8 {
        pause ^ 1
    }
    /// The intent a pause answers.
    pub fn intent(pause: u8) -> u8 {
        pause / 2
    }
}

impl Setup {
    /// The initial state.
    pub fn initial(&self) -> Sys {
        let mut req = [Requester {
            phase: Phase::Done { sealed: false },
            tries: 0,
        }; MAX_REQUESTERS];
        for r in req.iter_mut().take(self.requesters as usize) {
            *r = Requester {
                phase: Phase::Idle,
                tries: self.tries,
            };
        }
        Sys {
            gate: Gate::Running { next: 0 },
            canceled: false,
            closer: self.closer,
            worker: Worker::Running,
            req,
            log: None,
            owner: Owner::Undecided,
        }
    }
}
