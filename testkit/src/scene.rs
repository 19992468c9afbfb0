//! A gate whose every operation is recorded, for the linearizability check:
//! a loom scene (or any concurrent test) around baton's handles.
//!
//! Each operation ticks one logical clock when it is invoked and when it
//! returns, and appends `(invoked, returned, operation with its result)` to a
//! log. The clock and the log are `std` types on purpose: loom does not see
//! them, so they add no interleavings, and since loom runs one thread at a
//! time, their order is the execution's order. [`Scene::finish`] then asks
//! [`linearize`] for a sequential order of
//! the real core's steps explaining the log, and checks that no waker was
//! left behind. Outside loom the clock is still one order of the calls'
//! invocations and returns, which is all the check needs.
//!
//! ```
//! use std::sync::Arc;
//! use baton::{HandoffGate, HandoffIntent, HandoffPause, Invocation};
//! use baton_testkit::scene::Scene;
//!
//! # fn main() {
//! let source = Invocation {
//!     session_id: "s".into(), turn_id: "t".into(), run_id: "run".into(), invocation_id: "i".into(),
//! };
//! let gate = Arc::new(HandoffGate::<u8>::new(source, "run".into()));
//! let scene = Scene::new(&gate);
//! scene.begin();
//! let intent = HandoffIntent {
//!     handoff_id: "h".into(), host_epoch: "e".into(), root_run_id: "run".into(),
//!     successor_run_id: "run-2".into(), successor_invocation_id: "i-2".into(), claim_id: "c".into(),
//! };
//! let reservation = scene.reserve(intent).expect("a fresh gate grants");
//! let ticket = reservation.ticket();
//! scene.release(ticket, reservation);
//! scene.finish(); // linearizable, and no waker left
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Waker};

use std::fmt::Debug;
use std::hash::Hash;

use baton::gate::core::{Config, State, Ticket};
use baton::{
    CancelSignal, GateError, HandoffGate, HandoffIntent, HandoffPause, HandoffRequester,
    HandoffReservation, HeldHandoff, PendingSeal,
};

use crate::linearize::{Call, GateOp, GateSpec, World, linearize};

/// What a recorded `boundary`'s worker does with the intent it is given:
/// prepare a pause, or not. Any `FnOnce(Arc<HandoffIntent>) ->
/// Option<HandoffPause<P>>` is one.
pub trait Preflight<P>: Send + 'static {
    /// The pause for `intent`, or `None` (the preflight failed).
    fn run(self, intent: Arc<HandoffIntent>) -> Option<HandoffPause<P>>;
}

impl<P, F> Preflight<P> for F
where
    F: FnOnce(Arc<HandoffIntent>) -> Option<HandoffPause<P>> + Send + 'static,
{
    fn run(self, intent: Arc<HandoffIntent>) -> Option<HandoffPause<P>> {
        self(intent)
    }
}

/// A gate's requester, the Run's cancel signal, and the log of every
/// operation on them. Shared between threads by `std::sync::Arc` (which
/// loom does not see: fewer interleavings, none of them baton's).
#[derive(Debug)]
pub struct Scene<P: PartialEq> {
    requester: HandoffRequester<P>,
    config: Config,
    cancel: CancelSignal,
    clock: AtomicU64,
    log: Mutex<Log<P>>,
}

#[derive(Debug)]
struct Log<P> {
    /// The state when the recorded history began.
    initial: World<P>,
    /// The clock when it began.
    begun: u64,
    calls: Vec<Call<GateOp<P>>>,
}

/// Polls `future` once, with a waker that does nothing, and asserts it is
/// pending: a future already waiting when the threads start.
pub fn started<F: Future>(future: F) -> Pin<Box<F>> {
    let mut future = Box::pin(future);
    let polled = future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
    assert!(polled.is_pending(), "the future was meant to wait");
    future
}

impl<P> Scene<P>
where
    P: Clone + Eq + Hash + Debug + Send + Sync + 'static,
{
    /// A scene recording operations on `gate` (fresh, or as the set-up left
    /// it: [`begin`](Self::begin) marks where the history starts), with a
    /// cancel signal of its own for the Run. Under loom, create it inside
    /// the model, as the gate.
    pub fn new(gate: &HandoffGate<P>) -> Arc<Self> {
        Arc::new(Self {
            requester: gate.requester(),
            config: Config::new(gate.source().clone(), gate.root_run_id().to_owned()),
            cancel: CancelSignal::new(),
            clock: AtomicU64::new(1),
            log: Mutex::new(Log {
                initial: World::initial(),
                begun: 0,
                calls: Vec::new(),
            }),
        })
    }

    /// The gate's requester (for set-up that is not recorded).
    pub fn requester(&self) -> &HandoffRequester<P> {
        &self.requester
    }

    /// The Run's cancellation, which `boundary` reads.
    pub fn cancel(&self) -> &CancelSignal {
        &self.cancel
    }

    /// A snapshot of the gate's state.
    pub fn state(&self) -> State<P> {
        self.requester.state()
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    fn log(&self) -> MutexGuard<'_, Log<P>> {
        self.log.lock().expect("the log is never poisoned")
    }

    fn record(&self, invoked: u64, op: GateOp<P>) {
        let returned = self.tick();
        self.log().calls.push(Call {
            invoked,
            returned,
            op,
        });
    }

    /// Ends the set-up: the state now is the history's initial state, and
    /// only what happens from here on is recorded.
    pub fn begin(&self) {
        let initial = World {
            gate: self.state(),
            canceled: self.cancel.is_canceled(),
        };
        let begun = self.tick();
        let mut log = self.log();
        log.initial = initial;
        log.begun = begun;
        log.calls.clear();
    }

    /// `requester.reserve(intent)`.
    pub fn reserve(&self, intent: HandoffIntent) -> Result<HandoffReservation<P>, GateError> {
        let invoked = self.tick();
        let reserved = self.requester.reserve(intent.clone());
        let result = match &reserved {
            Ok(reservation) => Ok(reservation.ticket()),
            Err(error) => Err(error.clone()),
        };
        self.record(invoked, GateOp::Reserve { intent, result });
        reserved
    }

    /// `reservation.ready()`, recorded when it resolves.
    pub fn ready(
        self: &Arc<Self>,
        reservation: HandoffReservation<P>,
    ) -> impl Future<Output = Option<HeldHandoff<P>>> + Send + 'static {
        let scene = Arc::clone(self);
        let ticket = reservation.ticket();
        async move {
            let invoked = scene.tick();
            // The checker's operations carry `Option`s: the errors' reasons
            // are checked against the core by the `gate_adapter` fuzz target.
            let held = reservation.ready().await.ok();
            let pause = held.as_ref().map(|held| held.preview().clone());
            scene.record(
                invoked,
                GateOp::Ready {
                    ticket,
                    held: pause,
                },
            );
            held
        }
    }

    /// Drops `owner` — a reservation, a held handoff, or a future owning
    /// one — whose ticket is `ticket`: `Cancel(ticket)`.
    pub fn release<T>(&self, ticket: Ticket, owner: T) {
        let invoked = self.tick();
        drop(owner);
        self.record(invoked, GateOp::Release { ticket });
    }

    /// `held.commit()`.
    pub fn commit(&self, held: HeldHandoff<P>) -> Option<PendingSeal<P>> {
        let invoked = self.tick();
        let ticket = held.ticket();
        let pending = held.commit().ok();
        let committed = pending.is_some();
        self.record(invoked, GateOp::Commit { ticket, committed });
        pending
    }

    /// `pending.wait()`, recorded when it resolves.
    pub fn wait(
        self: &Arc<Self>,
        pending: PendingSeal<P>,
    ) -> impl Future<Output = Option<HandoffPause<P>>> + Send + 'static {
        let scene = Arc::clone(self);
        let ticket = pending.ticket();
        async move {
            let invoked = scene.tick();
            // Recorded and returned by value: the checker compares pauses.
            let sealed = pending.wait().await.ok().map(|p| HandoffPause::clone(&p));
            let op = GateOp::Wait {
                ticket,
                sealed: sealed.clone(),
            };
            scene.record(invoked, op);
            sealed
        }
    }

    /// `gate.boundary(cancel, preflight)`, recorded when it resolves. If it
    /// was first polled before [`begin`](Self::begin) (its pause already
    /// held then), only its waiting part is recorded.
    pub fn boundary(
        self: &Arc<Self>,
        gate: Arc<HandoffGate<P>>,
        preflight: impl Preflight<P>,
    ) -> impl Future<Output = Option<HandoffPause<P>>> + Send + 'static {
        let scene = Arc::clone(self);
        async move {
            let invoked = scene.tick();
            let mut seen = None;
            let result = gate
                .boundary(&scene.cancel, |intent| {
                    let pause = preflight.run(std::sync::Arc::clone(&intent));
                    seen = Some((HandoffIntent::clone(&intent), pause.clone()));
                    std::future::ready(pause)
                })
                .await
                .ok()
                .flatten()
                .map(|p| HandoffPause::clone(&p));
            let (begun, held) = {
                let log = scene.log();
                (log.begun, log.initial.gate.ticket())
            };
            let op = match held {
                Some(ticket) if invoked < begun => GateOp::Resumed {
                    ticket,
                    result: result.clone(),
                },
                Some(_) | None => GateOp::Boundary {
                    preflight: seen,
                    result: result.clone(),
                },
            };
            scene.record(invoked, op);
            result
        }
    }

    /// `gate.sealed(pause)`.
    pub fn seal(&self, gate: &HandoffGate<P>, pause: &HandoffPause<P>) -> bool {
        let invoked = self.tick();
        let sealed = gate.sealed(pause);
        let pause = pause.clone();
        self.record(invoked, GateOp::Seal { pause, sealed });
        sealed
    }

    /// `gate.close()`.
    pub fn close(&self, gate: &HandoffGate<P>) {
        let invoked = self.tick();
        gate.close();
        self.record(invoked, GateOp::Close);
    }

    /// Drops the worker's gate: `Close`.
    pub fn drop_gate(&self, gate: HandoffGate<P>) {
        let invoked = self.tick();
        drop(gate);
        self.record(invoked, GateOp::Close);
    }

    /// Fires the Run's cancellation.
    pub fn fire(&self) {
        let invoked = self.tick();
        self.cancel.cancel();
        self.record(invoked, GateOp::Fire);
    }

    /// What every model ends with, once its threads are joined: no waker
    /// left registered on the gate or the cancel signal (SPEC §1, cancel
    /// safety: "a dropped future also frees its waker slot"), and the
    /// recorded history, closed by a snapshot of the final state, explained
    /// by some sequential order of core steps that respects real-time order
    /// (SPEC §5: linearizable).
    ///
    /// # Panics
    ///
    /// If either does not hold; a history that is not linearizable is
    /// printed.
    pub fn finish(&self) {
        assert_eq!(
            self.requester.waiter_count(),
            0,
            "a waker was left on the gate"
        );
        assert_eq!(
            self.cancel.waiter_count(),
            0,
            "a waker was left on the cancel signal"
        );
        let invoked = self.tick();
        let last = World {
            gate: self.state(),
            canceled: self.cancel.is_canceled(),
        };
        self.record(invoked, GateOp::Snapshot(last));
        let log = self.log();
        let spec = GateSpec::new(self.config.clone());
        assert!(
            linearize(&spec, log.initial.clone(), &log.calls).is_some(),
            "not linearizable: no order of core steps explains, from {:?}, {:#?}",
            log.initial,
            log.calls
        );
    }
}
