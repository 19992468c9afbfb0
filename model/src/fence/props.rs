//! The fenced handoff's properties (SPEC §6), each named by its id and the
//! sentence it encodes, over every reachable state of [`super::FenceModel`]
//! (zombies, wrong suspicions, lost replies and crashes included):
//!
//! - **R1** a Run is never both handed off and continued by a resumed
//!   worker: once worker `i`'s pause is durable, no worker started after it
//!   exists (no epoch was issued after the pause was durable, and no pause
//!   of an older epoch became durable after a newer epoch was issued);
//! - **R2** a `Some` from `wait()` (a seal) implies the pause is durable;
//! - **R3** every decision matches the log at the moment it is made: a
//!   claim answers `HandedOff` exactly when a pause is durable, and never
//!   refuses the facts the protocol writes;
//! - **R4** a sealed worker's pause is durable;
//! - **R5** (liveness) once faults stop, the Run reaches a decision: a
//!   durable pause, or a live worker holding the current epoch;
//! - **R6** at most one epoch of a Run ever appends, and it is the current
//!   one;
//! - **R7** a fenced worker never appends and never seals: a write or a
//!   seal is always by a worker holding the current epoch.

use super::{Answer, FAct, FSys, FenceModel, MAX_WORKERS, Owner, Phase};
use crate::explore::{Check, Property};

type M = FenceModel;

/// R1's name.
pub const R1: &str = "R1 a Run is never both handed off and continued by a resumed worker";
/// R2's name.
pub const R2: &str = "R2 a Some from wait() (a seal) implies the pause is durable";
/// R3's name.
pub const R3: &str = "R3 a claim answers HandedOff exactly when a pause is durable";
/// R4's name.
pub const R4: &str = "R4 a sealed worker's pause is durable";
/// R5's name.
pub const R5: &str = "R5 once faults stop, the Run reaches a decision";
/// R6's name.
pub const R6: &str = "R6 at most one epoch ever appends, and it is the current one";
/// R7's name.
pub const R7: &str = "R7 a fenced worker never appends and never seals";

fn sometimes(name: &'static str, check: crate::explore::StepCheck<M>) -> Property<M> {
    Property {
        name,
        check: Check::Sometimes(check),
    }
}

/// Whether the step by worker `w` wrote the log or sealed.
fn wrote_or_sealed(t: &FAct) -> Option<u8> {
    match *t {
        FAct::Append {
            worker,
            answer: Answer::Written,
            ..
        }
        | FAct::Seal(worker) => Some(worker),
        FAct::Append { .. }
        | FAct::Claim { .. }
        | FAct::Commit(_)
        | FAct::RequestLost(_)
        | FAct::Crash(_) => None,
    }
}

/// Every property, in report order.
pub fn properties() -> Vec<Property<M>> {
    vec![
        Property {
            name: R1,
            check: Check::Always(|_: &M, s: &FSys| {
                s.pause == 0
                    || (usize::from(s.pause)..MAX_WORKERS)
                        .all(|later| s.phase[later] == Phase::Idle)
            }),
        },
        Property {
            name: R2,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, _: &FSys| match *t {
                FAct::Seal(w) => a.pause == w + 1,
                _ => true,
            }),
        },
        Property {
            name: R3,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, b: &FSys| match *t {
                FAct::Claim {
                    started, refused, ..
                } => {
                    !refused
                        && match started {
                            Some(_) => a.pause == 0,
                            None => a.pause > 0 && b.owner == Owner::Successor,
                        }
                }
                _ => true,
            }),
        },
        Property {
            name: R4,
            check: Check::Always(|_: &M, s: &FSys| {
                (0..MAX_WORKERS)
                    .all(|i| s.phase[i] != Phase::Sealed || usize::from(s.pause) == i + 1)
            }),
        },
        Property {
            name: R5,
            check: Check::Eventually(|_: &M, s: &FSys| {
                u64::from(s.pause == 0 && !s.current_worker_lives())
            }),
        },
        Property {
            name: R6,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, b: &FSys| {
                // The pause, once durable, never changes hands; a write is
                // by a worker holding the current epoch.
                (a.pause == 0 || b.pause == a.pause)
                    && match *t {
                        FAct::Append {
                            worker,
                            answer: Answer::Written,
                            ..
                        } => a.pause == 0 && a.held[usize::from(worker)] == a.epoch,
                        _ => true,
                    }
            }),
        },
        Property {
            name: R7,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, _: &FSys| {
                wrote_or_sealed(t).is_none_or(|w| a.held[usize::from(w)] == a.epoch)
            }),
        },
        sometimes(
            "a zombie's append is fenced (its owner took the Run over while it lived)",
            |_, _, t, _| {
                matches!(
                    t,
                    FAct::Append {
                        answer: Answer::Fenced,
                        ..
                    }
                )
            },
        ),
        sometimes(
            "a wrong suspicion: a claim while the current worker lives",
            |_, _, t, _| {
                matches!(
                    t,
                    FAct::Claim {
                        suspicion: true,
                        started: Some(_),
                        ..
                    }
                )
            },
        ),
        sometimes(
            "a lost reply: the pause is durable, its worker closed without a seal",
            |_, _, t, _| {
                matches!(
                    t,
                    FAct::Append {
                        answer: Answer::Written,
                        lost: true,
                        ..
                    }
                )
            },
        ),
        sometimes(
            "a claim answers HandedOff after a lost reply (the owner learns the handoff)",
            |_, a, t, _| {
                matches!(t, FAct::Claim { started: None, .. })
                    && (0..MAX_WORKERS)
                        .any(|i| a.phase[i] == Phase::Closed && usize::from(a.pause) == i + 1)
            },
        ),
        sometimes(
            "a worker crashes after its append, before its seal",
            |_, a, t, _| matches!(*t, FAct::Crash(w) if a.phase[usize::from(w)] == Phase::Acked),
        ),
        sometimes("a handoff is sealed", |_, _, t, _| {
            matches!(t, FAct::Seal(_))
        }),
        sometimes(
            "the last worker is started (every takeover of the configuration)",
            |m, _, t, b| {
                matches!(
                    t,
                    FAct::Claim {
                        started: Some(_),
                        ..
                    }
                ) && b.started() == usize::from(m.setup.workers)
            },
        ),
    ]
}
