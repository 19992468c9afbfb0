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
//!   seal is always by a worker holding the current epoch;
//! - **R8** a Run has at most one final fate (handed off or finished), and
//!   no epoch is issued after it: never both finished and handed off,
//!   never finished and continued by a worker started after the finisher,
//!   and a durable outcome never changes (until retention removes it);
//! - **R9** retention never reopens the fence: a claim never issues an
//!   epoch any worker already holds (before or after the rows are
//!   removed), never answers `Owner` under the tombstone, and no write
//!   succeeds under it (a retired Run's zombie is always refused);
//! - **R10** storage is bounded: retention removes a Run only when its
//!   fate is final (or when the log holds no Run), and then the log holds
//!   the tombstone only (no epoch, no pause, no finish).
//!
//! And the promises to the user they serve (SPEC §6.1, G1–G5; G2, a
//! payload's round trip, is the stores' tests', not the model's):
//!
//! - **G1** a durable handoff reaches its successor: until the successor a
//!   durable pause names is final, its claim is never refused (it answers
//!   `Owner`, never `Retired`, never an error), and neither is its finish
//!   (its work is never lost);
//! - **G3** a refusal writes nothing: a claim that starts no worker, a
//!   write (append or finish, the successor's too) not `Written`, a lost
//!   request and a retirement that removes nothing leave the log as it was;
//! - **G4** an epoch a claim answered is never answered to another claim
//!   of that Run (R9's first half);
//! - **G5** retention removes only ended work: whenever a retirement
//!   removes the root, the log holds a Run of it, every Run of it is final,
//!   and the successor a durable pause names was claimed and is final (its
//!   work is not lost).
//!
//! Retention removes the pause with the Run's rows, so R2, R4 and R7 also
//! accept a seal under the tombstone: the worker's append was acknowledged
//! before (R6: the pause never changed until then), and R10 says the Run
//! was final when its rows went.

use super::names::sometimes;
pub use super::names::{G1, G2, G3, G4, G5, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10};
use super::{
    Answer, FAct, FSys, FenceModel, MAX_WORKERS, Owner, Phase, Replication, Retired, Setup, Succ,
    SuccClaimed,
};
use crate::explore::{Check, Property};

type M = FenceModel;

/// Whether the step by worker `w` wrote the log or sealed.
fn wrote_or_sealed(t: &FAct) -> Option<u8> {
    match *t {
        FAct::Append {
            worker,
            answer: Answer::Written,
            ..
        }
        | FAct::Finish {
            worker,
            answer: Answer::Written,
            ..
        }
        | FAct::Seal(worker) => Some(worker),
        FAct::Append { .. }
        | FAct::Finish { .. }
        | FAct::Claim { .. }
        | FAct::Commit(_)
        | FAct::End(_)
        | FAct::RequestLost(_)
        | FAct::Crash(_)
        | FAct::Retire(_)
        | FAct::SuccClaim(_)
        | FAct::SuccFinish(_)
        | FAct::Replicate
        | FAct::Failover { .. } => None,
    }
}

/// Whether the step was refused or wrote nothing by its answer (G3): a
/// claim that started no worker, a write not `Written`, a lost request, a
/// retirement that removed nothing.
fn refused(t: &FAct) -> bool {
    match *t {
        FAct::Claim { started, .. } => started.is_none(),
        FAct::Append { answer, .. } | FAct::Finish { answer, .. } | FAct::SuccFinish(answer) => {
            answer != Answer::Written
        }
        FAct::RequestLost(_) => true,
        FAct::Retire(answer) => !matches!(answer, Retired::Removed { .. }),
        FAct::SuccClaim(answer) => answer != SuccClaimed::Owner,
        FAct::Commit(_)
        | FAct::Seal(_)
        | FAct::Crash(_)
        | FAct::End(_)
        | FAct::Replicate
        | FAct::Failover { .. } => false,
    }
}

/// Whether the step wrote a pause or an outcome.
fn wrote(t: &FAct) -> bool {
    matches!(
        t,
        FAct::Append {
            answer: Answer::Written,
            ..
        } | FAct::Finish {
            answer: Answer::Written,
            ..
        }
    )
}

/// Whether the step is a retention that removed the Run's rows.
fn removed(t: &FAct) -> bool {
    matches!(t, FAct::Retire(Retired::Removed { .. }))
}

/// Whether the step is a failover: it may lose a write nobody was told
/// of on any standby, and more on an asynchronous one ([`G2`] says what
/// must survive).
fn failover(t: &FAct) -> bool {
    matches!(t, FAct::Failover { .. })
}

/// Whether no worker was started after worker `fate - 1` (a fate of 0:
/// none is durable).
fn none_started_after(s: &FSys, fate: u8) -> bool {
    fate == 0 || (usize::from(fate)..MAX_WORKERS).all(|later| s.phase[later] == Phase::Idle)
}

/// The properties `setup` is checked against: its [`promises`], except
/// that on an asynchronous standby those a failover may break
/// ([`MAY_BREAK_ASYNCHRONOUSLY`](super::failover::MAY_BREAK_ASYNCHRONOUSLY))
/// are replaced by witnesses of their breaking (the report shows them
/// broken, and `model/tests/fence_counts.rs` pins exactly which break).
pub fn properties(setup: &Setup) -> Vec<Property<M>> {
    let all = promises(setup);
    if setup.replication != Replication::Asynchronous {
        return all;
    }
    all.into_iter()
        .filter(|p| !super::failover::MAY_BREAK_ASYNCHRONOUSLY.contains(&p.name))
        .chain(super::failover::witnesses())
        .collect()
}

/// Every promise of `setup`, in report order: R1–R10, G1–G5 (G1 and G5
/// where the successor and retention run, G2 with a standby) and the
/// coverage (the finish's, retention's, the successor's and the failover's
/// situations only where they happen).
pub fn promises(setup: &Setup) -> Vec<Property<M>> {
    let mut all = vec![
        Property {
            name: R1,
            check: Check::Always(|_: &M, s: &FSys| none_started_after(s, s.pause)),
        },
        Property {
            name: R2,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, _: &FSys| match *t {
                FAct::Seal(w) => a.pause == w + 1 || a.tombstone_only(),
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
                            Some(_) => !a.has_fate() && !a.retired,
                            None => match b.owner {
                                Owner::Successor => a.pause > 0,
                                Owner::Finished => a.finish > 0 && a.pause == 0,
                                Owner::Retired => a.retired,
                                Owner::Open => false,
                            },
                        }
                }
                _ => true,
            }),
        },
        Property {
            name: R4,
            check: Check::Always(|_: &M, s: &FSys| {
                (0..MAX_WORKERS).all(|i| {
                    s.phase[i] != Phase::Sealed
                        || usize::from(s.pause) == i + 1
                        || s.tombstone_only()
                })
            }),
        },
        Property {
            name: R5,
            check: Check::Eventually(|_: &M, s: &FSys| {
                u64::from(!s.has_fate() && !s.retired && !s.current_worker_lives())
            }),
        },
        Property {
            name: R6,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, b: &FSys| {
                // The pause, once durable, never changes hands (until
                // retention removes it); a write is by a worker holding the
                // current epoch, while no fate is durable.
                (a.pause == 0 || b.pause == a.pause || removed(t) || failover(t))
                    && match *t {
                        FAct::Append {
                            worker,
                            answer: Answer::Written,
                            ..
                        }
                        | FAct::Finish {
                            worker,
                            answer: Answer::Written,
                            ..
                        } => !a.has_fate() && a.held[usize::from(worker)] == a.epoch,
                        _ => true,
                    }
            }),
        },
        Property {
            name: R7,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, _: &FSys| {
                wrote_or_sealed(t).is_none_or(|w| {
                    a.held[usize::from(w)] == a.epoch
                        || (matches!(t, FAct::Seal(_)) && a.tombstone_only())
                })
            }),
        },
        Property {
            name: R8,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, b: &FSys| {
                // One fate at most; none started after the finisher; the
                // outcome, once durable, never changes until retention.
                !(b.pause > 0 && b.finish > 0)
                    && none_started_after(b, b.finish)
                    && (a.finish == 0 || b.finish == a.finish || removed(t) || failover(t))
            }),
        },
        Property {
            name: R9,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, b: &FSys| match *t {
                FAct::Claim {
                    started: Some(i), ..
                } => {
                    let i = usize::from(i);
                    !a.retired
                        && (0..MAX_WORKERS)
                            .all(|j| j == i || a.phase[j] == Phase::Idle || a.held[j] != b.held[i])
                }
                FAct::SuccFinish(Answer::Written) => !a.retired,
                _ => !(wrote(t) && a.retired),
            }),
        },
        Property {
            name: R10,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, b: &FSys| {
                (!removed(t) || a.epoch == 0 || a.has_fate())
                    && (!removed(t) || b.tombstone_only())
                    && (!b.retired || b.tombstone_only())
            }),
        },
        Property {
            name: G3,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, b: &FSys| {
                !refused(t) || a.log() == b.log()
            }),
        },
        Property {
            name: G4,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, b: &FSys| match *t {
                FAct::Claim {
                    started: Some(i), ..
                } => {
                    let i = usize::from(i);
                    (0..MAX_WORKERS)
                        .all(|j| j == i || a.phase[j] == Phase::Idle || a.held[j] != b.held[i])
                }
                _ => true,
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
    ];
    if setup.finish {
        all.extend(finish_coverage());
    }
    if setup.retire {
        // G1 before G3 and G4, G5 after them (report order: G1, G3–G5).
        let [g1, g5] = successor_properties();
        all.insert(10, g1);
        all.insert(13, g5);
        all.extend(retire_coverage());
        all.extend(successor_coverage());
    }
    if setup.replication != Replication::Single {
        let g2 = Property {
            name: G2,
            check: Check::Always(|_: &M, s: &FSys| super::failover::told_is_kept(s)),
        };
        all.insert(if setup.retire { 11 } else { 10 }, g2);
        all.extend(super::failover::coverage());
    }
    if setup.finish && setup.retire {
        all.push(sometimes(
            "a zombie's finish is refused under the tombstone (Retired)",
            |_, _, t, _| {
                matches!(
                    t,
                    FAct::Finish {
                        answer: Answer::Retired,
                        ..
                    }
                )
            },
        ));
    }
    all
}

/// G1 and G5: the successor a durable pause names, and retention.
fn successor_properties() -> [Property<M>; 2] {
    [
        Property {
            name: G1,
            check: Check::AlwaysStep(|_: &M, _: &FSys, t: &FAct, _: &FSys| match *t {
                FAct::SuccClaim(answer) => answer == SuccClaimed::Owner,
                FAct::SuccFinish(answer) => {
                    matches!(answer, Answer::Written | Answer::AlreadyDurable)
                }
                _ => true,
            }),
        },
        Property {
            name: G5,
            check: Check::AlwaysStep(|_: &M, a: &FSys, t: &FAct, _: &FSys| {
                !removed(t)
                    || (a.epoch > 0
                        && a.has_fate()
                        && (a.succ_epoch == 0 || a.succ_finish)
                        && !matches!(a.succ, Succ::Due | Succ::Working))
            }),
        },
    ]
}

/// The successor's situations, so that G1 and G5 are not vacuous.
fn successor_coverage() -> Vec<Property<M>> {
    vec![
        sometimes(
            "retention is refused while the successor is not claimed (RunOpen)",
            |_, a, t, _| matches!(t, FAct::Retire(Retired::RunOpen)) && a.succ == Succ::Due,
        ),
        sometimes(
            "retention is refused while the successor runs (RunOpen)",
            |_, a, t, _| {
                matches!(t, FAct::Retire(Retired::RunOpen))
                    && a.succ == Succ::Working
                    && a.has_fate()
            },
        ),
        sometimes(
            "the successor's claim answers Owner after the handoff",
            |_, _, t, _| matches!(t, FAct::SuccClaim(SuccClaimed::Owner)),
        ),
        sometimes(
            "the successor's claim answers Owner after its handoff's reply was lost",
            |_, a, t, _| {
                matches!(t, FAct::SuccClaim(SuccClaimed::Owner))
                    && (0..MAX_WORKERS)
                        .any(|i| a.phase[i] == Phase::Closed && usize::from(a.pause) == i + 1)
            },
        ),
        sometimes(
            "a retirement removes the root after the successor finished",
            |_, a, t, _| {
                matches!(t, FAct::Retire(Retired::Removed { runs: 2, .. }))
                    && a.succ == Succ::Finished
                    && a.pause > 0
            },
        ),
        sometimes(
            "retention is refused for a root never claimed (NothingToRetire)",
            |_, _, t, _| matches!(t, FAct::Retire(Retired::NothingToRetire)),
        ),
    ]
}

/// The finish's situations, so that R8 is not vacuous.
fn finish_coverage() -> Vec<Property<M>> {
    vec![
        sometimes(
            "a worker finishes the Run (its outcome durable)",
            |_, _, t, _| {
                matches!(
                    t,
                    FAct::Finish {
                        answer: Answer::Written,
                        lost: false,
                        ..
                    }
                )
            },
        ),
        sometimes(
            "a zombie's finish is fenced (its owner took the Run over while it lived)",
            |_, _, t, _| {
                matches!(
                    t,
                    FAct::Finish {
                        answer: Answer::Fenced,
                        ..
                    }
                )
            },
        ),
        sometimes(
            "a claim answers Finished after a lost finish reply (the owner learns the outcome)",
            |_, a, t, b| {
                matches!(t, FAct::Claim { started: None, .. })
                    && b.owner == Owner::Finished
                    && (0..MAX_WORKERS)
                        .any(|i| a.phase[i] == Phase::Closed && usize::from(a.finish) == i + 1)
            },
        ),
    ]
}

/// Retention's situations, so that R9 and R10 are not vacuous.
fn retire_coverage() -> Vec<Property<M>> {
    vec![
        sometimes(
            "retention is refused: the Run is open (RunOpen)",
            |_, _, t, _| matches!(t, FAct::Retire(Retired::RunOpen)),
        ),
        sometimes(
            "retention removes a final Run's rows and keeps the tombstone",
            |_, a, t, _| {
                matches!(t, FAct::Retire(Retired::Removed { runs: 1, .. })) && a.has_fate()
            },
        ),
        sometimes("a claim answers Retired (never resumed)", |_, _, t, b| {
            matches!(t, FAct::Claim { started: None, .. }) && b.owner == Owner::Retired
        }),
        sometimes(
            "a zombie's append is refused under the tombstone (Retired)",
            |_, _, t, _| {
                matches!(
                    t,
                    FAct::Append {
                        answer: Answer::Retired,
                        ..
                    }
                )
            },
        ),
        sometimes(
            "a worker seals after retention removed its durable pause",
            |_, a, t, _| matches!(t, FAct::Seal(_)) && a.retired,
        ),
    ]
}
