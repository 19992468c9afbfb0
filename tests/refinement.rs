//! Refinement: random sequences of adapter operations, driven by hand on one
//! thread, agree step by step with the core table.
//!
//! The reference is the core [`step`] plus one line per operation saying
//! which event that operation feeds (SPEC §1's cancel-safety table). After
//! every operation the adapter's state must equal the reference state, its
//! version must have moved exactly when the reference moved, and every
//! future's answer must be the one the core's waiter query gives. Every case
//! ends with no waker registered.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

use baton::gate::core::{self, Config, Event, Outcome, State, StateKind, Ticket, Wait, step};
use baton::{
    CancelSignal, HandoffGate, HandoffIntent, HandoffPause, HandoffReservation, HeldHandoff,
    PendingSeal,
};
use common::{intent, intent_named, poll_once, source};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestRunner};
use std::cell::RefCell;
use std::collections::BTreeMap;

type Pause = HandoffPause<u8>;
type Boxed<T> = Pin<Box<dyn Future<Output = T>>>;

const SLOTS: usize = 3;

#[derive(Clone, Copy, Debug)]
enum IntentChoice {
    Valid,
    Invalid,
    OtherRoot,
}

#[derive(Clone, Copy, Debug)]
enum Preflight {
    Prepared,
    Failed,
    Mismatched,
    Stalls,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Reserve(usize, IntentChoice),
    PollReady(usize),
    Commit(usize),
    PollWait(usize),
    DropHandle(usize),
    StartBoundary(Preflight),
    PollBoundary,
    DropBoundary,
    FireCancel,
    Seal { prepared: bool },
    Close,
    DropGate,
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let intent = prop_oneof![
        6 => Just(IntentChoice::Valid),
        1 => Just(IntentChoice::Invalid),
        1 => Just(IntentChoice::OtherRoot),
    ];
    let preflight = prop_oneof![
        4 => Just(Preflight::Prepared),
        1 => Just(Preflight::Failed),
        1 => Just(Preflight::Mismatched),
        1 => Just(Preflight::Stalls),
    ];
    // Weighted so that sequences commonly reach Committed and Sealed before
    // a close: the test asserts every state kind is reached.
    prop_oneof![
        12 => (slot.clone(), intent).prop_map(|(s, i)| Op::Reserve(s, i)),
        16 => slot.clone().prop_map(Op::PollReady),
        12 => slot.clone().prop_map(Op::Commit),
        8 => slot.clone().prop_map(Op::PollWait),
        4 => slot.prop_map(Op::DropHandle),
        12 => preflight.prop_map(Op::StartBoundary),
        16 => Just(Op::PollBoundary),
        2 => Just(Op::DropBoundary),
        2 => Just(Op::FireCancel),
        8 => any::<bool>().prop_map(|prepared| Op::Seal { prepared }),
        1 => Just(Op::Close),
        1 => Just(Op::DropGate),
    ]
}

fn pause(intent: HandoffIntent, execution: u8) -> Pause {
    HandoffPause { intent, execution }
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

/// What a requester's slot holds.
enum Handle {
    Empty,
    Reserved(HandoffReservation<u8>),
    Readying(Ticket, Boxed<Option<HeldHandoff<u8>>>),
    Held(HeldHandoff<u8>),
    Pending(PendingSeal<u8>),
    Waiting(Ticket, Boxed<Option<Pause>>),
}

/// Where the worker's boundary future is, in the reference's terms.
#[derive(Clone, Copy, Debug)]
enum Phase {
    Fresh(Preflight),
    Preflight(Ticket),
    Waiting(Ticket),
}

struct Reference {
    config: Config,
    state: State<u8>,
}

impl Reference {
    /// Feeds `event`; returns whether the state moved and the outcome.
    fn feed(&mut self, event: Event<u8>) -> Outcome<u8> {
        let outcome = step(&self.config, &self.state, event);
        if let Outcome::Moved(next) = &outcome {
            self.state = next.clone();
        }
        outcome
    }
}

fn run(ops: &[Op], reached: &mut dyn FnMut(StateKind)) -> Result<(), TestCaseError> {
    let mut gate = Some(Rc::new(HandoffGate::<u8>::new(source(), "run".into())));
    let requester = gate.as_ref().unwrap().requester();
    let mut reference = Reference {
        config: Config::new(source(), "run".into()),
        state: State::initial(),
    };
    let mut handles: Vec<Handle> = (0..SLOTS).map(|_| Handle::Empty).collect();
    let mut cancel = CancelSignal::new();
    let mut boundary: Option<(Phase, Boxed<Option<Pause>>)> = None;

    for (index, &op) in ops.iter().enumerate() {
        let version = requester.version();
        let mut moved = false;
        let mut feed = |reference: &mut Reference, event| {
            let outcome = reference.feed(event);
            moved |= matches!(outcome, Outcome::Moved(_));
            outcome
        };
        match op {
            Op::Reserve(slot, choice) => {
                if !matches!(handles[slot], Handle::Empty) {
                    continue;
                }
                let intent = intent_for(choice, index);
                let expected = feed(&mut reference, Event::Reserve(intent.clone()));
                match (requester.reserve(intent), expected) {
                    (Ok(reservation), Outcome::Moved(State::Requested { ticket, .. })) => {
                        prop_assert_eq!(reservation.ticket(), ticket);
                        handles[slot] = Handle::Reserved(reservation);
                    }
                    (Err(error), Outcome::Refused(expected)) => prop_assert_eq!(error, expected),
                    (actual, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "reserve: {actual:?} vs {expected:?}"
                        )));
                    }
                }
            }
            Op::PollReady(slot) => {
                let handle = std::mem::replace(&mut handles[slot], Handle::Empty);
                let (ticket, mut future) = match handle {
                    Handle::Reserved(r) => (r.ticket(), Box::pin(r.ready()) as Boxed<_>),
                    Handle::Readying(t, f) => (t, f),
                    other => {
                        handles[slot] = other;
                        continue;
                    }
                };
                match (
                    poll_once(future.as_mut()),
                    core::ready(&reference.state, ticket),
                ) {
                    (Poll::Pending, Wait::Pending) => {
                        handles[slot] = Handle::Readying(ticket, future)
                    }
                    (Poll::Ready(Some(held)), Wait::Resolved(p)) => {
                        prop_assert_eq!(held.preview(), &**p, "S7");
                        handles[slot] = Handle::Held(held);
                    }
                    (Poll::Ready(None), Wait::Gone) => {}
                    (actual, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "ready: {:?} vs {expected:?}",
                            actual.map(|h| h.map(|h| h.ticket()))
                        )));
                    }
                }
            }
            Op::Commit(slot) => {
                if !matches!(handles[slot], Handle::Held(_)) {
                    continue;
                }
                let Handle::Held(held) = std::mem::replace(&mut handles[slot], Handle::Empty)
                else {
                    unreachable!("checked above");
                };
                let ticket = held.ticket();
                let canceled = cancel.is_canceled();
                let expected = feed(&mut reference, Event::Commit { ticket, canceled });
                match (held.commit(), expected) {
                    (Some(pending), Outcome::Moved(_)) => handles[slot] = Handle::Pending(pending),
                    (None, Outcome::Refused(_)) => {
                        // The refused held handle drops: `Cancel(T)`.
                        let _ = feed(&mut reference, Event::Cancel(ticket));
                    }
                    (actual, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "commit: {:?} vs {expected:?}",
                            actual.is_some()
                        )));
                    }
                }
            }
            Op::PollWait(slot) => {
                let handle = std::mem::replace(&mut handles[slot], Handle::Empty);
                let (ticket, mut future) = match handle {
                    Handle::Pending(p) => (p.ticket(), Box::pin(p.wait()) as Boxed<_>),
                    Handle::Waiting(t, f) => (t, f),
                    other => {
                        handles[slot] = other;
                        continue;
                    }
                };
                match (
                    poll_once(future.as_mut()),
                    core::seal(&reference.state, ticket),
                ) {
                    (Poll::Pending, Wait::Pending) => {
                        handles[slot] = Handle::Waiting(ticket, future)
                    }
                    (Poll::Ready(Some(sealed)), Wait::Resolved(p)) => {
                        prop_assert_eq!(&sealed, &**p, "S5")
                    }
                    (Poll::Ready(None), Wait::Gone) => {}
                    (actual, expected) => {
                        return Err(TestCaseError::fail(format!(
                            "wait: {actual:?} vs {expected:?}"
                        )));
                    }
                }
            }
            Op::DropHandle(slot) => {
                let released = match std::mem::replace(&mut handles[slot], Handle::Empty) {
                    Handle::Reserved(r) => Some(r.ticket()),
                    Handle::Readying(t, _) => Some(t),
                    Handle::Held(h) => Some(h.ticket()),
                    Handle::Empty | Handle::Pending(_) | Handle::Waiting(..) => None,
                };
                if let Some(ticket) = released {
                    let _ = feed(&mut reference, Event::Cancel(ticket));
                }
            }
            Op::StartBoundary(preflight) => {
                let Some(worker) = gate.as_ref() else {
                    continue;
                };
                if boundary.is_some() {
                    continue;
                }
                cancel = CancelSignal::new();
                // The future owns a clone: the gate drops (closes) only once
                // both the harness and the future let go of it.
                let worker = Rc::clone(worker);
                let signal = cancel.clone();
                let future = Box::pin(async move {
                    worker
                        .boundary(&signal, move |intent| async move {
                            match preflight {
                                Preflight::Prepared => Some(pause(intent, 1)),
                                Preflight::Failed => None,
                                Preflight::Mismatched => Some(pause(intent_named("mismatched"), 1)),
                                Preflight::Stalls => std::future::pending().await,
                            }
                        })
                        .await
                });
                boundary = Some((Phase::Fresh(preflight), future));
            }
            Op::PollBoundary => {
                let Some((phase, mut future)) = boundary.take() else {
                    continue;
                };
                let polled = poll_once(future.as_mut());
                // The reference: what this poll does, by the boundary's phase.
                let mut phase = phase;
                let expected: Poll<Option<Pause>> = loop {
                    match phase {
                        Phase::Fresh(preflight) => match core::observe(&reference.state) {
                            None => break Poll::Ready(None),
                            Some((ticket, intent)) => {
                                let intent = intent.clone();
                                let pause = match preflight {
                                    Preflight::Prepared => Some(pause(intent, 1)),
                                    Preflight::Failed => None,
                                    Preflight::Mismatched => {
                                        Some(pause(intent_named("mismatched"), 1))
                                    }
                                    Preflight::Stalls => {
                                        phase = Phase::Preflight(ticket);
                                        break Poll::Pending;
                                    }
                                };
                                let canceled = cancel.is_canceled();
                                let _ = feed(
                                    &mut reference,
                                    Event::Preflight {
                                        ticket,
                                        pause,
                                        canceled,
                                    },
                                );
                                if !matches!(reference.state, State::Held { ticket: t, .. } if t == ticket)
                                {
                                    break Poll::Ready(None);
                                }
                                phase = Phase::Waiting(ticket);
                            }
                        },
                        Phase::Preflight(_) => break Poll::Pending,
                        Phase::Waiting(ticket) => match core::boundary(&reference.state, ticket) {
                            Wait::Resolved(p) => break Poll::Ready(Some((**p).clone())),
                            Wait::Gone => break Poll::Ready(None),
                            Wait::Pending if cancel.is_canceled() => {
                                let _ = feed(&mut reference, Event::Cancel(ticket));
                                let after =
                                    core::boundary(&reference.state, ticket).decided().flatten();
                                break Poll::Ready(after.map(|p| (**p).clone()));
                            }
                            Wait::Pending => break Poll::Pending,
                        },
                    }
                };
                prop_assert_eq!(&polled, &expected, "boundary poll in {:?}", phase);
                if polled.is_pending() {
                    boundary = Some((phase, future));
                }
            }
            Op::DropBoundary => {
                if let Some((phase, future)) = boundary.take() {
                    drop(future);
                    if let Phase::Preflight(ticket) | Phase::Waiting(ticket) = phase {
                        let _ = feed(&mut reference, Event::Cancel(ticket));
                    }
                }
            }
            Op::FireCancel => cancel.cancel(),
            Op::Seal { prepared } => {
                let Some(worker) = gate.as_ref() else {
                    continue;
                };
                let offered = match reference.state.pause() {
                    Some(p) if prepared => (**p).clone(),
                    _ => pause(intent(), 2),
                };
                let expected = feed(&mut reference, Event::Seal(offered.clone()));
                prop_assert_eq!(
                    worker.sealed(&offered),
                    matches!(expected, Outcome::Moved(_))
                );
            }
            Op::Close => {
                let Some(worker) = gate.as_ref() else {
                    continue;
                };
                worker.close();
                let _ = feed(&mut reference, Event::Close);
            }
            Op::DropGate => {
                if let Some((phase, future)) = boundary.take() {
                    drop(future);
                    if let Phase::Preflight(ticket) | Phase::Waiting(ticket) = phase {
                        let _ = feed(&mut reference, Event::Cancel(ticket));
                    }
                }
                if gate.take().is_some() {
                    let _ = feed(&mut reference, Event::Close);
                }
            }
        }
        prop_assert_eq!(
            &requester.state(),
            &reference.state,
            "after op {} {:?}",
            index,
            op
        );
        reached(reference.state.kind());
        prop_assert_eq!(
            requester.version() != version,
            moved,
            "version moved iff the core moved, op {} {:?}",
            index,
            op
        );
    }
    drop(boundary);
    drop(handles);
    prop_assert_eq!(requester.waiter_count(), 0, "no waker left behind");
    prop_assert_eq!(cancel.waiter_count(), 0);
    Ok(())
}

/// The number of generated cases; the closing note cites it.
const CASES: u32 = 2000;

/// The adapter refines the core table (SPEC §5 "refinement"), and the
/// generated sequences really reach every state kind, so the agreement is
/// not vacuous.
#[test]
fn the_adapter_agrees_with_the_core_table_step_by_step() {
    let config = ProptestConfig {
        cases: CASES,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/refinement.proptest-regressions",
        ))),
        ..ProptestConfig::default()
    };
    let reached = RefCell::new(BTreeMap::<StateKind, usize>::new());
    let mut runner = TestRunner::new(config);
    let result = runner.run(&prop::collection::vec(op(), 1..60), |ops| {
        run(&ops, &mut |kind| {
            *reached.borrow_mut().entry(kind).or_default() += 1
        })
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    let reached = reached.into_inner();
    println!("states reached after an operation, over {CASES} cases: {reached:?}");
    for kind in StateKind::ALL {
        assert!(
            reached.get(&kind).copied().unwrap_or(0) > 0,
            "{kind:?} never reached"
        );
    }
}
