//! The durable system's properties, each named by its id and the sentence
//! it encodes:
//!
//! - **R1** a Run is never both resumed and handed off (issue 9; the seed:
//!   "never resume the old worker") — a Run reconciled `Resumable` has no
//!   durable pause, no seal, and no requester told `Some`;
//! - **R2** a `Some` from the requester's `wait()` implies the pause is
//!   durable (issue 9) — the log holds exactly the pause it committed;
//! - **R3** after any crash, reconciliation's decision matches the log
//!   (issue 9): `HandedOff(p)` exactly when `p`'s row exists, `Resumable`
//!   exactly when none does, never an error on the facts the protocol
//!   writes ("a typed error for contradictory facts (never a guess)"), and
//!   only once the old worker is gone;
//! - **R4** the gate is `Sealed` only once its pause is durable (SPEC §1:
//!   a handoff "is final only when the pause has been durably appended to
//!   the runtime's canonical log and the worker seals it");
//! - **R5** a Run whose worker is gone is eventually reconciled (the seed:
//!   "the owner must reconcile canonical facts"; liveness, with the restart
//!   fair).
//!
//! Plus `sometimes` coverage: every crash point and every decision is
//! reached. The gate's own S1–S9, L1–L3 and coverage
//! ([`crate::gate::props`]) are checked alongside, unchanged.

use crate::explore::{Check, Property};
use crate::gate::GateModel;
use crate::gate::codec::{Gate, Out};
use crate::gate::predicate::sometimes;
use crate::gate::state::{Act, CrashPoint, Decided, Owner, Phase, Step, Sys, Worker};

type M = GateModel;

/// R1's name.
pub const R1: &str = "R1 a Run is never both resumed and handed off";
/// R2's name.
pub const R2: &str = "R2 a Some from wait() implies the pause is durable";
/// R3's name.
pub const R3: &str =
    "R3 reconciliation matches the log: HandedOff(p) exactly when p's row exists, else Resumable";
/// R4's name.
pub const R4: &str = "R4 the gate is Sealed only once its pause is durable";
/// R5's name.
pub const R5: &str = "R5 a Run whose worker is gone is eventually reconciled";

fn told_sealed(m: &M, s: &Sys) -> bool {
    (0..m.setup.requesters).any(|r| s.req[r as usize].phase == Phase::Done { sealed: true })
}

/// The durable properties R1–R5 and their coverage, in report order.
pub fn durable() -> Vec<Property<M>> {
    vec![
        Property {
            name: R1,
            check: Check::Always(|m: &M, s: &Sys| match s.owner {
                Owner::Resumed => {
                    s.log.is_none() && !matches!(s.gate, Gate::Sealed { .. }) && !told_sealed(m, s)
                }
                Owner::Undecided | Owner::Successor | Owner::Operator => true,
            }),
        },
        Property {
            name: R2,
            check: Check::AlwaysStep(|_: &M, a: &Sys, t: &Step, b: &Sys| match t.act {
                Act::SealWakes(r) => match (a.req[r as usize].phase, b.req[r as usize].phase) {
                    (Phase::Sealing { pause, .. }, Phase::Done { sealed: true }) => {
                        a.log == Some(pause)
                    }
                    _ => true,
                },
                _ => true,
            }),
        },
        Property {
            name: R3,
            check: Check::AlwaysStep(|_: &M, a: &Sys, t: &Step, b: &Sys| match t.act {
                Act::Reconcile(decided) => {
                    let matches_log = match (decided, a.log) {
                        (Decided::HandedOff(p), Some(row)) => {
                            p == row && b.owner == Owner::Successor
                        }
                        (Decided::Resumable, None) => b.owner == Owner::Resumed,
                        (Decided::HandedOff(_), None)
                        | (Decided::Resumable, Some(_))
                        | (Decided::Contradiction, _) => false,
                    };
                    matches_log && a.worker == Worker::Done && a.owner == Owner::Undecided
                }
                _ => a.owner == b.owner && a.log.is_none_or(|row| b.log == Some(row)),
            }),
        },
        Property {
            name: R4,
            check: Check::Always(|_: &M, s: &Sys| match s.gate {
                Gate::Sealed { pause, .. } => s.log == Some(pause),
                Gate::Running { .. }
                | Gate::Requested { .. }
                | Gate::Held { .. }
                | Gate::Committed { .. }
                | Gate::Closed => true,
            }),
        },
        Property {
            name: R5,
            check: Check::Eventually(|_: &M, s: &Sys| {
                u64::from(s.worker == Worker::Done && s.owner == Owner::Undecided)
            }),
        },
        sometimes(
            "crashed: running, no committed pause in hand",
            |_, _, t, _| t.act == Act::Crash(CrashPoint::Running),
        ),
        sometimes(
            "crashed: before the append (committed pause in hand)",
            |_, _, t, _| t.act == Act::Crash(CrashPoint::BeforeAppend),
        ),
        sometimes(
            "crashed: after the append, before the seal",
            |_, _, t, _| t.act == Act::Crash(CrashPoint::AfterAppendBeforeSeal),
        ),
        sometimes("crashed: after the seal", |_, _, t, _| {
            t.act == Act::Crash(CrashPoint::AfterSeal)
        }),
        sometimes("append failed: closed without sealing", |_, _, t, _| {
            t.act == Act::AppendFails && matches!(t.outcome, Some(Out::Moved(Gate::Closed)))
        }),
        sometimes(
            "append failed after writing the row (storage error): closed without sealing",
            |_, _, t, _| {
                t.act == Act::AppendFailsWritten
                    && matches!(t.outcome, Some(Out::Moved(Gate::Closed)))
            },
        ),
        sometimes(
            "reconciled: HandedOff (the successor owns the Run)",
            |_, _, t, _| matches!(t.act, Act::Reconcile(Decided::HandedOff(_))),
        ),
        sometimes(
            "reconciled: Resumable (a new worker resumes the Run)",
            |_, _, t, _| t.act == Act::Reconcile(Decided::Resumable),
        ),
        sometimes(
            "reconciled: HandedOff though the gate closed unsealed (wait() gives None)",
            |_, a, t, _| {
                matches!(t.act, Act::Reconcile(Decided::HandedOff(_))) && a.gate == Gate::Closed
            },
        ),
        sometimes(
            "reconciled: Resumable while a committed requester still waits (it gets None)",
            |m, a, t, _| {
                t.act == Act::Reconcile(Decided::Resumable)
                    && (0..m.setup.requesters)
                        .any(|r| matches!(a.req[r as usize].phase, Phase::Sealing { .. }))
            },
        ),
        sometimes(
            "reached: a requester told Some after the worker is gone (crashed or exited after the seal)",
            |_, a, t, b| {
                matches!(t.act, Act::SealWakes(r) if b.req[r as usize].phase == Phase::Done { sealed: true })
                    && a.worker == Worker::Done
            },
        ),
    ]
}

/// Coverage only the closer can reach: it closes the gate between the
/// commit and the worker's check, so `append_then_seal` appends nothing.
pub fn with_closer() -> Vec<Property<M>> {
    vec![sometimes(
        "not committed: the gate closed before the check, nothing appended",
        |_, _, t, _| t.act == Act::NotCommitted,
    )]
}

/// Every property of a durable configuration: the gate's (S1–S9, L1–L3,
/// coverage), then R1–R5 and the durable coverage ([`with_closer`]'s too
/// when the configuration has the closer).
pub fn properties(closer: bool) -> Vec<Property<M>> {
    let mut all = crate::gate::props::properties();
    all.extend(durable());
    if closer {
        all.extend(with_closer());
    }
    all
}
