//! The adapter under test, its handles and futures, and the reference they
//! are compared with; [`Driven::apply`] performs one operation on both.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
// The harness's wakers are real `Waker`s, so their flag is an atomic; this
// is test scaffolding, not a synchronisation point of the library.
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use super::{
    Handle, IntentChoice, Mismatch, Op, Phase, Reference, boundary_poll, intent_for, pause, prepare,
};
use baton::facts::HandoffPause;
use baton::gate::core::Refusal;
use baton::gate::core::{self, Event, Outcome, State, Wait};
use baton::gate::{CommitError, ReadyError, WaitError};
use baton::{CancelSignal, HandoffGate, HandoffRequester};

/// A waker that remembers it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A boxed future and the flag of the waker it was last polled with.
pub(super) struct Flagged<T> {
    future: Pin<Box<dyn Future<Output = T>>>,
    flag: Arc<Flag>,
}

impl<T> Flagged<T> {
    fn new(future: impl Future<Output = T> + 'static) -> Self {
        Self {
            future: Box::pin(future),
            flag: Arc::default(),
        }
    }

    /// Polls once. `decided`: the reference says the answer is decided, so
    /// if this future was left pending before, it must have been woken.
    fn poll(&mut self, polled_before: bool, decided: bool) -> Result<Poll<T>, Mismatch> {
        if polled_before && decided && !self.flag.0.load(Ordering::Relaxed) {
            return Err("lost wake-up: decided, but never woken".into());
        }
        self.flag.0.store(false, Ordering::Relaxed);
        let waker = Waker::from(Arc::clone(&self.flag));
        Ok(self.future.as_mut().poll(&mut Context::from_waker(&waker)))
    }
}

/// Everything one run drives.
pub(super) struct Driven {
    pub(super) requester: HandoffRequester<u8>,
    pub(super) gate: Option<Rc<HandoffGate<u8>>>,
    pub(super) reference: Reference,
    pub(super) handles: [Handle; 3],
    pub(super) cancel: CancelSignal,
    pub(super) boundary: Option<(Phase, Flagged<super::Boundary>)>,
}

fn differ<T>(
    what: &str,
    actual: impl std::fmt::Debug,
    expected: impl std::fmt::Debug,
) -> Result<T, Mismatch> {
    Err(format!("{what}: adapter {actual:?}, core {expected:?}"))
}

impl Driven {
    /// Performs `op` (the `index`-th) on the adapter and the reference.
    pub(super) fn apply(&mut self, index: usize, op: Op) -> Result<(), Mismatch> {
        let reference = &mut self.reference;
        match op {
            Op::Reserve(slot, choice) => {
                let handle = &mut self.handles[slot as usize];
                if matches!(handle, Handle::Empty) {
                    self.reserve(slot as usize, choice, index)?;
                }
            }
            Op::PollReady(slot) => {
                let handle = &mut self.handles[slot as usize];
                let (ticket, mut future, before) = match std::mem::replace(handle, Handle::Empty) {
                    Handle::Reserved(r) => (r.ticket(), Flagged::new(r.ready()), false),
                    Handle::Readying(t, f) => (t, f, true),
                    other => {
                        *handle = other;
                        return Ok(());
                    }
                };
                let expected = core::ready(&reference.state, ticket);
                match (
                    future.poll(before, !matches!(expected, Wait::Pending))?,
                    expected,
                ) {
                    (Poll::Pending, Wait::Pending) => *handle = Handle::Readying(ticket, future),
                    (Poll::Ready(Ok(held)), Wait::Resolved(p)) if held.preview() == &**p => {
                        *handle = Handle::Held(held);
                    }
                    (Poll::Ready(Err(error)), Wait::Gone)
                        if error == ReadyError::from(reference.state.kind().gone()) => {}
                    (actual, expected) => {
                        let actual = actual.map(|h| h.map(|h| h.preview().clone()));
                        return differ("ready (S7)", actual, expected);
                    }
                }
            }
            Op::Commit(slot) => {
                let handle = &mut self.handles[slot as usize];
                if !matches!(handle, Handle::Held(_)) {
                    return Ok(());
                }
                let Handle::Held(held) = std::mem::replace(handle, Handle::Empty) else {
                    unreachable!("checked above");
                };
                let ticket = held.ticket();
                let canceled = self.cancel.is_canceled();
                let expected = reference.feed(Event::Commit { ticket, canceled });
                let refusal = |refused: &Refusal| match refused {
                    Refusal::Canceled => CommitError::Canceled,
                    _ => CommitError::from(reference.state.kind().gone()),
                };
                match (held.commit(), expected) {
                    (Ok(pending), Outcome::Moved(_)) => *handle = Handle::Pending(pending),
                    // The refused held handle drops: `Cancel(T)`.
                    (Err(error), Outcome::Refused(refused)) if error == refusal(&refused) => {
                        drop(reference.feed(Event::Cancel(ticket)));
                    }
                    (actual, expected) => return differ("commit (S3)", actual, expected),
                }
            }
            Op::PollWait(slot) => {
                let handle = &mut self.handles[slot as usize];
                let (ticket, mut future, before) = match std::mem::replace(handle, Handle::Empty) {
                    Handle::Pending(p) => (p.ticket(), Flagged::new(p.wait()), false),
                    Handle::Waiting(t, f) => (t, f, true),
                    other => {
                        *handle = other;
                        return Ok(());
                    }
                };
                let expected = core::seal(&reference.state, ticket);
                match (
                    future.poll(before, !matches!(expected, Wait::Pending))?,
                    expected,
                ) {
                    (Poll::Pending, Wait::Pending) => *handle = Handle::Waiting(ticket, future),
                    (Poll::Ready(Ok(sealed)), Wait::Resolved(p)) if *sealed == **p => {}
                    (Poll::Ready(Err(WaitError::Closed)), Wait::Gone) => {}
                    (actual, expected) => return differ("wait (S5)", actual, expected),
                }
            }
            Op::DropHandle(slot) => {
                let released =
                    match std::mem::replace(&mut self.handles[slot as usize], Handle::Empty) {
                        Handle::Reserved(r) => Some(r.ticket()),
                        Handle::Readying(t, _) => Some(t),
                        Handle::Held(h) => Some(h.ticket()),
                        Handle::Empty | Handle::Pending(_) | Handle::Waiting(..) => None,
                    };
                if let Some(ticket) = released {
                    let _ = reference.feed(Event::Cancel(ticket));
                }
            }
            Op::StartBoundary(preflight) => {
                let Some(worker) = self.gate.as_ref() else {
                    return Ok(());
                };
                if self.boundary.is_some() {
                    return Ok(());
                }
                self.cancel = CancelSignal::new();
                // The future owns a clone: the gate drops (closes) only once
                // both the harness and the future let go of it.
                let (worker, signal) = (Rc::clone(worker), self.cancel.clone());
                let future = async move {
                    let preflight = |intent| async move {
                        match prepare(preflight, intent) {
                            Some(pause) => pause,
                            None => std::future::pending().await,
                        }
                    };
                    worker.boundary(&signal, preflight).await
                };
                self.boundary = Some((Phase::Fresh(preflight), Flagged::new(future)));
            }
            Op::PollBoundary => {
                let Some((phase, mut future)) = self.boundary.take() else {
                    return Ok(());
                };
                let decided = match phase {
                    Phase::Fresh(_) => false,
                    Phase::Preflight(_) => false,
                    Phase::Waiting(ticket) => {
                        self.cancel.is_canceled()
                            || !matches!(core::boundary(&reference.state, ticket), Wait::Pending)
                    }
                };
                let polled = future.poll(!matches!(phase, Phase::Fresh(_)), decided)?;
                let (expected, phase) = boundary_poll(reference, &self.cancel, phase);
                if polled != expected {
                    return differ(&format!("boundary in {phase:?} (S7)"), polled, expected);
                }
                if polled.is_pending() {
                    self.boundary = Some((phase, future));
                }
            }
            Op::DropBoundary => self.drop_boundary(),
            Op::FireCancel => self.cancel.cancel(),
            Op::Seal { prepared } => {
                let Some(worker) = self.gate.as_ref() else {
                    return Ok(());
                };
                let offered = match reference.state.pause() {
                    Some(p) if prepared => HandoffPause::clone(p),
                    _ => pause(super::intent_named("handoff"), 2),
                };
                let expected = reference.feed(Event::Seal(std::sync::Arc::new(offered.clone())));
                let sealed = worker.sealed(&offered);
                if sealed != matches!(expected, Outcome::Moved(_)) {
                    return differ("sealed (S5)", sealed, expected);
                }
            }
            Op::Close => {
                if let Some(worker) = self.gate.as_ref() {
                    worker.close();
                    let _ = reference.feed(Event::Close);
                }
            }
            Op::DropGate => {
                self.drop_boundary();
                if self.gate.take().is_some() {
                    let _ = self.reference.feed(Event::Close);
                }
            }
        }
        Ok(())
    }

    fn reserve(&mut self, slot: usize, choice: IntentChoice, index: usize) -> Result<(), Mismatch> {
        let intent = intent_for(choice, index);
        let expected = self
            .reference
            .feed(Event::Reserve(std::sync::Arc::new(intent.clone())));
        match (self.requester.reserve(intent), expected) {
            (Ok(reservation), Outcome::Moved(State::Requested { ticket, .. }))
                if reservation.ticket() == ticket =>
            {
                self.handles[slot] = Handle::Reserved(reservation);
            }
            (Err(error), Outcome::Refused(expected))
                if Refusal::Reserve(error.clone()) == expected => {}
            (actual, expected) => return differ("reserve (S1, S9)", actual, expected),
        }
        Ok(())
    }

    /// Drops the boundary future: `Cancel(T)` during preflight or while held.
    fn drop_boundary(&mut self) {
        if let Some((phase, future)) = self.boundary.take() {
            drop(future);
            if let Phase::Preflight(ticket) | Phase::Waiting(ticket) = phase {
                let _ = self.reference.feed(Event::Cancel(ticket));
            }
        }
    }
}
