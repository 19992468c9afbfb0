//! The handoff system with the durable log, crashes and the restart
//! (issue 9, "Proof under crashes → Model").
//!
//! SPEC §1: a handoff "is final only when the pause has been durably
//! appended to the runtime's canonical log and the worker seals it"; the
//! seed: a worker that exits without confirming the seal is never resumed —
//! "the owner must reconcile canonical facts". With [`Setup::durable`] on,
//! the handoff system of [`super::system`] gains:
//!
//! - **the durable log** ([`Sys::log`]): the pause row appended for the Run,
//!   abstractly (at most one per Run: the schema's uniqueness constraint;
//!   an append is atomic — a row is there or it is not, never half-written);
//! - **the worker's end**: once `boundary` returned the committed pause, it
//!   runs the real `append_then_seal`'s steps ([`Durable::AppendThenSeal`]):
//!   checks the gate is committed to the pause, appends it, seals it, then
//!   exits. If the gate is no longer committed it appends nothing; if the
//!   append fails it closes without sealing — and a storage failure may
//!   have written the row all the same. Its gate's drop feeds `Close`, as
//!   the real `HandoffGate`'s `Drop` does;
//! - **crashes at every point**: the worker's process may die while running,
//!   in preflight or awaiting its boundary, before the append, after the
//!   append before the seal, and after the seal. A crash drops the worker's
//!   side as the adapter would (`Close` through the real `step`), so every
//!   requester's wait resolves by the gate's rules: `Some` only if Sealed;
//! - **the restart**: once the old worker is gone (crashed or exited), the
//!   owner reads the log and calls `reconcile` — the real
//!   `baton::durable::reconcile`, through [`super::codec::Core::reconcile`]
//!   — which hands off (the successor owns the Run) or resumes with a
//!   *new* worker. The model stops at that decision: a new worker runs a
//!   fresh gate, which is this system again from its initial state.
//!
//! Modelling assumptions, stated: crash detection is exact (the restart
//! runs only after the old worker is gone), and the restart is fair (it
//! eventually runs, R5). Zombies — a worker that only paused, a wrong
//! suspicion, a lost reply — are [`crate::fence`]'s model, around the log's
//! real claim and append rules (SPEC §6, R1–R7); this one keeps the gate's
//! whole protocol with crash-stop workers.
//! Crashes, like the closer, are never forced.
//!
//! [`props`] holds R1–R5 and the durable coverage; [`VARIANTS`] the broken
//! worker protocol (seal before append) and reconciliation (resume a
//! handed-off Run) the checker must catch.

pub mod props;

use baton::durable::{Decision, ReconcileError, RunFacts};

use super::codec::{Core, Ev, Gate, ReconcileFn};
use super::state::{
    Act, CrashPoint, Decided, Durable, Owner, RESTART, Setup, Step, Sys, WORKER, Worker, pause,
};
use crate::explore::Fairness;

/// Feeds one core event to the gate; the step and the state after it.
pub(super) type Feed<'a> = &'a dyn Fn(Act, Ev) -> (Step, Sys);
/// Offers one transition.
pub(super) type Push<'a> = &'a mut dyn FnMut((Step, Sys), Fairness);

/// A step that feeds the core nothing.
fn quiet(s: &Sys, act: Act) -> (Step, Sys) {
    (
        Step {
            act,
            event: None,
            outcome: None,
        },
        *s,
    )
}

/// `(step, next)` with the worker at `w`.
fn at((step, mut next): (Step, Sys), w: Worker) -> (Step, Sys) {
    next.worker = w;
    (step, next)
}

/// The worker's end once `boundary` returned the committed pause — the
/// real `baton::durable::append_then_seal`, step by step: check that the
/// gate is committed to the pause (else `NotCommitted`: nothing appended),
/// append it (a failure closes the gate without a seal; a storage failure
/// may have written the row all the same), seal it (`sealed` is `false` if
/// the gate closed meanwhile), then exit. [`Durable::SealThenAppend`] swaps
/// the append and the seal.
pub(super) fn worker(protocol: Durable, s: &Sys, feed: Feed<'_>, push: Push<'_>) {
    let fair = Fairness::Fair(WORKER);
    // The log takes the pause unless it holds another one for the Run (a
    // typed error that writes nothing: the append fails); the same pause
    // again is idempotent. An append is one atomic step.
    let append = |pause: u8, then: Worker| {
        (s.log.is_none_or(|row| row == pause)).then(|| {
            let (step, mut next) = quiet(s, Act::Append);
            next.log = Some(pause);
            at((step, next), then)
        })
    };
    let fails = |pause: u8, push: Push<'_>| {
        push(at(feed(Act::AppendFails, Ev::Close), Worker::Done), fair);
        if s.log.is_none_or(|row| row == pause) {
            let (step, mut next) = feed(Act::AppendFailsWritten, Ev::Close);
            next.log = Some(pause);
            push(at((step, next), Worker::Done), fair);
        }
    };
    match (protocol, s.worker) {
        (Durable::AppendThenSeal | Durable::SealThenAppend, Worker::Sealing { pause }) => {
            let committed = matches!(s.gate, Gate::Committed { pause: p, .. } if p == pause);
            if committed {
                push(
                    at(quiet(s, Act::CheckCommitted), Worker::Checked { pause }),
                    fair,
                );
            } else {
                push(at(feed(Act::NotCommitted, Ev::Close), Worker::Done), fair);
            }
            let forged = feed(
                Act::SealForged,
                Ev::Seal {
                    pause: pause::forged(pause),
                },
            );
            push(at(forged, Worker::Sealing { pause }), Fairness::Optional);
        }
        (Durable::AppendThenSeal, Worker::Checked { pause }) => {
            if let Some(t) = append(pause, Worker::Appended { pause }) {
                push(t, fair);
            }
            fails(pause, push);
        }
        (Durable::AppendThenSeal, Worker::Appended { pause }) => {
            push(
                at(feed(Act::Seal, Ev::Seal { pause }), Worker::Exiting),
                fair,
            );
        }
        (Durable::SealThenAppend, Worker::Checked { pause }) => {
            let sealed = feed(Act::Seal, Ev::Seal { pause });
            push(at(sealed, Worker::SealedUnappended { pause }), fair);
        }
        (Durable::SealThenAppend, Worker::SealedUnappended { pause }) => {
            if let Some(t) = append(pause, Worker::Exiting) {
                push(t, fair);
            }
            fails(pause, push);
        }
        (Durable::AppendThenSeal | Durable::SealThenAppend, Worker::Exiting) => {
            push(at(feed(Act::Exit, Ev::Close), Worker::Done), fair);
        }
        // Not reached: the other order's phases, the phases before the
        // commit (the gate model's), and the end.
        (Durable::Off, _)
        | (Durable::AppendThenSeal, Worker::SealedUnappended { .. })
        | (Durable::SealThenAppend, Worker::Appended { .. })
        | (
            _,
            Worker::Running | Worker::Preflight { .. } | Worker::Awaiting { .. } | Worker::Done,
        ) => {}
    }
}

/// Where a live worker is, as a crash point; `None` once it is gone.
pub fn crash_point(worker: Worker) -> Option<CrashPoint> {
    match worker {
        Worker::Running | Worker::Preflight { .. } | Worker::Awaiting { .. } => {
            Some(CrashPoint::Running)
        }
        Worker::Sealing { .. } | Worker::Checked { .. } => Some(CrashPoint::BeforeAppend),
        Worker::Appended { .. } => Some(CrashPoint::AfterAppendBeforeSeal),
        Worker::SealedUnappended { .. } => Some(CrashPoint::AfterSealBeforeAppend),
        Worker::Exiting => Some(CrashPoint::AfterSeal),
        Worker::Done => None,
    }
}

/// A crash of the live worker (never forced), and the restart once it is
/// gone (fair, class [`RESTART`]).
pub(super) fn crash_and_restart(core: &Core, s: &Sys, feed: Feed<'_>, push: Push<'_>) {
    if let Some(point) = crash_point(s.worker) {
        let crashed = feed(Act::Crash(point), Ev::Close);
        push(at(crashed, Worker::Done), Fairness::Optional);
    }
    if s.worker == Worker::Done && s.owner == Owner::Undecided {
        let decided = core.reconcile(s.log);
        let (step, mut next) = quiet(s, Act::Reconcile(decided));
        next.owner = match decided {
            Decided::HandedOff(_) => Owner::Successor,
            Decided::Resumable => Owner::Resumed,
            Decided::Contradiction => Owner::Operator,
        };
        push((step, next), Fairness::Fair(RESTART));
    }
}

/// A broken worker protocol or reconciliation, and the property expected
/// to catch it.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Its name.
    pub name: &'static str,
    /// What is broken.
    pub bug: &'static str,
    /// The worker's order of append and seal.
    pub protocol: Durable,
    /// A reconciliation in place of the real one, if broken there.
    pub reconcile: Option<ReconcileFn>,
    /// The property that must report it.
    pub caught_by: &'static str,
}

impl Variant {
    /// `setup` running this variant's protocol.
    pub fn setup(&self, setup: Setup) -> Setup {
        Setup {
            durable: self.protocol,
            ..setup
        }
    }
}

/// (j) Reconciliation resumes a Run whose pause is durable: a thin wrapper
/// that rewrites the real `reconcile`'s `HandedOff` into `Resumable`.
fn reconcile_resumes_a_handed_off_run(
    facts: &RunFacts<u8>,
) -> Result<Decision<u8>, ReconcileError> {
    match baton::durable::reconcile(facts) {
        Ok(Decision::HandedOff(_)) => Ok(Decision::Resumable),
        decided
        @ (Ok(Decision::Resumable | Decision::Finished(_) | Decision::Retired) | Err(_)) => decided,
    }
}

/// The broken variants of the durable system: (i) issue 9's "seal before
/// append" in the worker, (j) a reconciliation that resumes a handed-off
/// Run.
pub const VARIANTS: [Variant; 2] = [
    Variant {
        name: "i_seal_before_append",
        bug: "the worker seals before it appends the pause durably",
        protocol: Durable::SealThenAppend,
        reconcile: None,
        caught_by: props::R2,
    },
    Variant {
        name: "j_reconcile_resumes_a_handed_off_run",
        bug: "reconciliation answers Resumable although a pause is durable",
        protocol: Durable::AppendThenSeal,
        reconcile: Some(reconcile_resumes_a_handed_off_run),
        caught_by: props::R3,
    },
];

/// The variant called `name`.
pub fn by_name(name: &str) -> Option<Variant> {
    VARIANTS.iter().find(|v| v.name == name).copied()
}
