//! `gate_adapter`: operation sequences through the async adapter, driven by
//! hand on one thread, agreeing step by step with the core table.
//!
//! The reference is [`core::step`] plus one line per operation saying which
//! event that operation feeds (SPEC §1's cancel-safety table). After every
//! operation the adapter's state must equal the reference state, its version
//! must have moved exactly when the reference moved, every future's answer
//! must be the one the core's waiter query gives, and a future left pending
//! must have been woken before its answer is decided (no lost wake-up). Every
//! sequence ends with no waker registered.
//!
//! The same [`run`] drives `tests/refinement.rs` (proptest, stable) and the
//! `gate_adapter` fuzz target.
//!
//! # What it cannot reach
//!
//! Everything runs on one thread, and every adapter method is a critical
//! section that returns before the next operation starts. So the fuzzer
//! chooses the order of whole operations and of future polls and drops,
//! never an interleaving *inside* one: a cancellation cannot land between a
//! commit's read of the cancel bit and its change of state, nor a reader of
//! the lock-free kind copy run between the two, nor a drop race a wake-up.
//! A deterministic scheduler over logical threads would not change that:
//! the adapter has no await point inside those sections, so only real
//! threads preempted inside them can interleave there. That is loom's job:
//! `loom-tests/tests/loom_gate_races.rs` (e.g. `commit ∥ fire; reserve`,
//! `commit ∥ fire; boundary`), `loom_gate_wakeups.rs` and
//! `loom_gate_handoff.rs` explore every interleaving of those sections,
//! each execution checked for linearizability against the same core table,
//! and `loom_waiter.rs` checks every wake-up against the change it is for.
//! What this target adds is length and breadth: sequences of up to
//! [`MAX_OPS`] operations over three requesters, far past what loom can
//! enumerate.

use std::rc::Rc;
use std::task::Poll;

use arbitrary::Arbitrary;

use super::{Rejected, intent_named, source};
use baton::facts::{HandoffIntent, HandoffPause};
use baton::gate::core::{self, Config, Event, Outcome, State, StateKind, Ticket, Wait, step};
use baton::gate::{BoundaryError, ReadyError, WaitError};
use baton::{CancelSignal, HandoffGate, HandoffReservation, HeldHandoff, PendingSeal};

mod driven;

use driven::{Driven, Flagged};

/// The most operations one input may hold; longer inputs are rejected.
pub const MAX_OPS: usize = 96;

/// One of the three requester slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Slot {
    /// The first requester.
    A,
    /// The second requester.
    B,
    /// The third requester.
    C,
}

impl Slot {
    /// Every slot.
    pub const ALL: [Slot; 3] = [Slot::A, Slot::B, Slot::C];
}

/// Which intent a reserve offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum IntentChoice {
    /// A valid intent, unique to the operation.
    Valid,
    /// One with an empty `claim_id` (S9).
    Invalid,
    /// One naming another root Run (S9).
    OtherRoot,
}

/// What the worker's preflight does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Preflight {
    /// Prepares the pause for the requested intent.
    Prepared,
    /// Fails (`None`).
    Failed,
    /// Prepares a pause for another intent.
    Mismatched,
    /// Never finishes.
    Stalls,
}

/// One operation on the adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// `requester.reserve(intent)` into an empty slot.
    Reserve(Slot, IntentChoice),
    /// Polls the slot's `ready()` future (made from its reservation).
    PollReady(Slot),
    /// `held.commit()` of the slot's held handoff.
    Commit(Slot),
    /// Polls the slot's `wait()` future (made from its pending seal).
    PollWait(Slot),
    /// Drops whatever handle or future the slot holds.
    DropHandle(Slot),
    /// Makes the worker's `boundary` future (one at a time), with a fresh
    /// cancel signal.
    StartBoundary(Preflight),
    /// Polls the worker's `boundary` future.
    PollBoundary,
    /// Drops the worker's `boundary` future.
    DropBoundary,
    /// Fires the boundary's cancel signal.
    FireCancel,
    /// `gate.sealed(pause)`, with the stored pause or another one.
    Seal {
        /// Offer the stored pause (if any).
        prepared: bool,
    },
    /// `gate.close()`.
    Close,
    /// Drops the boundary future, then the worker's gate.
    DropGate,
}

ops_input!();

/// The `gate_adapter` target: runs `input` through the adapter. Panics if
/// the adapter and the core disagree.
pub fn gate_adapter(input: Ops) -> Result<(), Rejected> {
    if input.0.len() > MAX_OPS {
        return Err(Rejected);
    }
    if let Err(mismatch) = run(&input.0, &mut |_| {}) {
        panic!("{mismatch}\n{input:#?}");
    }
    Ok(())
}

type Pause = HandoffPause<u8>;

fn pause(intent: impl Into<std::sync::Arc<HandoffIntent>>, execution: u8) -> Pause {
    HandoffPause::new(intent, execution)
}

fn intent_for(choice: IntentChoice, n: usize) -> HandoffIntent {
    let valid = intent_named(&format!("handoff-{n}"));
    match choice {
        IntentChoice::Valid => valid,
        IntentChoice::Invalid => HandoffIntent {
            claim_id: String::new(),
            ..valid
        },
        IntentChoice::OtherRoot => HandoffIntent {
            root_run_id: "other".into(),
            ..valid
        },
    }
}

/// What a preflight prepares for `intent` (`None`: it stalls).
fn prepare(preflight: Preflight, intent: std::sync::Arc<HandoffIntent>) -> Option<Option<Pause>> {
    match preflight {
        Preflight::Prepared => Some(Some(pause(intent, 1))),
        Preflight::Failed => Some(None),
        Preflight::Mismatched => Some(Some(pause(intent_named("mismatched"), 1))),
        Preflight::Stalls => None,
    }
}

/// What a requester's slot holds.
enum Handle {
    Empty,
    Reserved(HandoffReservation<u8>),
    Readying(Ticket, Flagged<Result<HeldHandoff<u8>, ReadyError>>),
    Held(HeldHandoff<u8>),
    Pending(PendingSeal<u8>),
    Waiting(Ticket, Flagged<Result<std::sync::Arc<Pause>, WaitError>>),
}

/// Where the worker's boundary future is, in the reference's terms.
#[derive(Clone, Copy, Debug)]
enum Phase {
    Fresh(Preflight),
    Preflight(Ticket),
    Waiting(Ticket),
}

/// The core state and what the operations fed it.
struct Reference {
    config: Config,
    state: State<u8>,
    /// Whether the current operation moved the state.
    moved: bool,
}

impl Reference {
    fn feed(&mut self, event: Event<u8>) -> Outcome<u8> {
        let outcome = step(&self.config, &self.state, event);
        if let Outcome::Moved(next) = &outcome {
            self.state = next.clone();
            self.moved = true;
        }
        outcome
    }
}

/// A disagreement between the adapter and the core.
pub type Mismatch = String;

/// Runs `ops` through the adapter and the reference side by side, calling
/// `reached` with the state kind after each operation.
///
/// # Errors
///
/// The first disagreement, naming the operation and both sides.
pub fn run(ops: &[Op], reached: &mut dyn FnMut(StateKind)) -> Result<(), Mismatch> {
    let gate = Rc::new(HandoffGate::<u8>::new(source(), super::ROOT_RUN.into()));
    let mut driven = Driven {
        requester: gate.requester(),
        gate: Some(gate),
        reference: Reference {
            config: Config::new(source(), super::ROOT_RUN.into()),
            state: State::initial(),
            moved: false,
        },
        handles: Slot::ALL.map(|_| Handle::Empty),
        cancel: CancelSignal::new(),
        boundary: None,
    };
    for (index, &op) in ops.iter().enumerate() {
        let version = driven.requester.version();
        driven.reference.moved = false;
        driven
            .apply(index, op)
            .map_err(|mismatch| format!("op {index} Op::{op:?}: {mismatch}"))?;
        let (actual, expected) = (driven.requester.state(), &driven.reference.state);
        if actual != *expected {
            return Err(format!(
                "after op {index} Op::{op:?}: adapter {actual:?}, core {expected:?}"
            ));
        }
        if (driven.requester.version() != version) != driven.reference.moved {
            return Err(format!(
                "op {index} Op::{op:?}: the version moved iff the core moved"
            ));
        }
        reached(expected.kind());
    }
    let (requester, cancel) = (driven.requester.clone(), driven.cancel.clone());
    drop(driven);
    if requester.waiter_count() != 0 || cancel.waiter_count() != 0 {
        return Err(format!(
            "wakers left behind: gate {}, cancel {}",
            requester.waiter_count(),
            cancel.waiter_count()
        ));
    }
    Ok(())
}

/// What a boundary future resolves with.
type Boundary = Result<Option<std::sync::Arc<Pause>>, BoundaryError>;

/// A boundary's answer with no pause, in the reference's state: keep
/// running (`Ok(None)`) unless the gate is sealed or closed.
fn nothing(reference: &Reference) -> Boundary {
    match reference.state.kind().gone() {
        core::Gone::Released => Ok(None),
        core::Gone::HandedOff => Err(BoundaryError::HandedOff),
        core::Gone::Closed => Err(BoundaryError::Closed),
    }
}

/// The reference's answer for a boundary future in `phase` being polled:
/// feeds what the poll feeds and returns the expected poll and next phase.
fn boundary_poll(
    reference: &mut Reference,
    cancel: &CancelSignal,
    mut phase: Phase,
) -> (Poll<Boundary>, Phase) {
    loop {
        match phase {
            Phase::Fresh(preflight) => {
                let (ticket, intent) = match core::begin(&reference.state) {
                    core::Begin::Requested(ticket, intent) => (ticket, intent),
                    core::Begin::Committed(p) => {
                        return (Poll::Ready(Ok(Some(std::sync::Arc::clone(p)))), phase);
                    }
                    core::Begin::Nothing => return (Poll::Ready(nothing(reference)), phase),
                };
                let Some(pause) = prepare(preflight, std::sync::Arc::clone(intent)) else {
                    return (Poll::Pending, Phase::Preflight(ticket));
                };
                let canceled = cancel.is_canceled();
                let _ = reference.feed(Event::Preflight {
                    ticket,
                    pause,
                    canceled,
                });
                if !matches!(reference.state, State::Held { ticket: t, .. } if t == ticket) {
                    return (Poll::Ready(nothing(reference)), phase);
                }
                phase = Phase::Waiting(ticket);
            }
            Phase::Preflight(_) => return (Poll::Pending, phase),
            Phase::Waiting(ticket) => {
                let answer = match core::boundary(&reference.state, ticket) {
                    Wait::Resolved(p) => Poll::Ready(Ok(Some(std::sync::Arc::clone(p)))),
                    Wait::Gone => Poll::Ready(nothing(reference)),
                    Wait::Pending if cancel.is_canceled() => {
                        let _ = reference.feed(Event::Cancel(ticket));
                        Poll::Ready(match core::boundary(&reference.state, ticket) {
                            Wait::Resolved(p) => Ok(Some(std::sync::Arc::clone(p))),
                            Wait::Pending | Wait::Gone => nothing(reference),
                        })
                    }
                    Wait::Pending => Poll::Pending,
                };
                return (answer, phase);
            }
        }
    }
}
