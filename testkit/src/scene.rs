//! A gate whose every operation is recorded, for the linearizability check.
//!
//! Each operation ticks one logical clock when it is invoked and when it
//! returns, and appends `(invoked, returned, operation with its result)` to a
//! log. The clock and the log are `std` types on purpose: loom does not see
//! them, so they add no interleavings, and since loom runs one thread at a
//! time, their order is the execution's order. [`Scene::finish`] then asks
//! `baton::gate::linearize` for a sequential order of core steps explaining
//! the log, and checks that no waker was left behind.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Waker};

use baton::gate::core::{State, Ticket};
use baton::{
    CancelSignal, GateError, HandoffIntent, HandoffRequester, HandoffReservation, HeldHandoff,
    PendingSeal,
};
use baton_testkit::linearize::{Call, GateOp, GateSpec, World, linearize};

use crate::fixtures::{self, Gate, Pause, Preflight};

/// A requester of the gate under test.
pub type Requester = HandoffRequester<u8>;
/// A reservation of the gate under test.
pub type Reservation = HandoffReservation<u8>;
/// A held handoff of the gate under test.
pub type Held = HeldHandoff<u8>;
/// A committed handoff of the gate under test.
pub type Pending = PendingSeal<u8>;

/// A gate's requester, the Run's cancel signal, and the log of every
/// operation on them. Shared between loom threads by `std::sync::Arc`.
#[derive(Debug)]
pub struct Scene {
    requester: Requester,
    cancel: CancelSignal,
    clock: AtomicU64,
    log: Mutex<Log>,
}

#[derive(Debug)]
struct Log {
    /// The state when the recorded history began.
    initial: World<u8>,
    /// The clock when it began.
    begun: u64,
    calls: Vec<Call<GateOp<u8>>>,
}

/// A fresh gate, and a scene recording operations on it.
pub fn scene() -> (Arc<Scene>, Gate) {
    let gate = fixtures::gate();
    let scene = Scene {
        requester: gate.requester(),
        cancel: CancelSignal::new(),
        clock: AtomicU64::new(1),
        log: Mutex::new(Log {
            initial: World::initial(),
            begun: 0,
            calls: Vec::new(),
        }),
    };
    (Arc::new(scene), gate)
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

impl Scene {
    /// The gate's requester (for set-up that is not recorded).
    pub fn requester(&self) -> &Requester {
        &self.requester
    }

    /// The Run's cancellation, which `boundary` reads.
    pub fn cancel(&self) -> &CancelSignal {
        &self.cancel
    }

    /// A snapshot of the gate's state.
    pub fn state(&self) -> State<u8> {
        self.requester.state()
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().expect("the log is never poisoned")
    }

    fn record(&self, invoked: u64, op: GateOp<u8>) {
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

    /// `requester.reserve(intent(name))`.
    pub fn reserve(&self, name: &str) -> Result<Reservation, GateError> {
        let invoked = self.tick();
        let intent = fixtures::intent(name);
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
        reservation: Reservation,
    ) -> impl Future<Output = Option<Held>> + Send + 'static {
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
    pub fn commit(&self, held: Held) -> Option<Pending> {
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
        pending: Pending,
    ) -> impl Future<Output = Option<Pause>> + Send + 'static {
        let scene = Arc::clone(self);
        let ticket = pending.ticket();
        async move {
            let invoked = scene.tick();
            // Recorded and returned by value: the checker compares pauses.
            let sealed = pending.wait().await.ok().map(|p| Pause::clone(&p));
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
        gate: Arc<Gate>,
        preflight: Preflight,
    ) -> impl Future<Output = Option<Pause>> + Send + 'static {
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
                .map(|p| Pause::clone(&p));
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
    pub fn seal(&self, gate: &Gate, pause: &Pause) -> bool {
        let invoked = self.tick();
        let sealed = gate.sealed(pause);
        let pause = pause.clone();
        self.record(invoked, GateOp::Seal { pause, sealed });
        sealed
    }

    /// `gate.close()`.
    pub fn close(&self, gate: &Gate) {
        let invoked = self.tick();
        gate.close();
        self.record(invoked, GateOp::Close);
    }

    /// Drops the worker's gate: `Close`.
    pub fn drop_gate(&self, gate: Gate) {
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
    /// safety: "dropping a waiting future removes its waker"), and the
    /// recorded history, closed by a snapshot of the final state, explained
    /// by some sequential order of core steps that respects real-time order
    /// (SPEC §5: linearizable).
    ///
    /// # Panics
    ///
    /// If either does not hold; the history is printed.
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
        let spec = GateSpec::new(fixtures::config());
        assert!(
            linearize(&spec, log.initial.clone(), &log.calls).is_some(),
            "not linearizable: no order of core steps explains, from {:?}, {:#?}",
            log.initial,
            log.calls
        );
    }
}

/// A future already polled once and waiting, ready to move to a thread.
pub type Waiting<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Set-up: `reserve("a")` granted ticket 0; the gate is `Requested`.
pub fn requested() -> (Arc<Scene>, Arc<Gate>, Reservation) {
    let (scene, gate) = scene();
    let reservation = scene.reserve("a").expect("a fresh gate grants");
    (scene, Arc::new(gate), reservation)
}

/// Set-up: the pause for `"a"` is held for ticket 0; the requester has its
/// [`Held`] handoff and the worker's `boundary` is waiting.
pub fn held() -> (Arc<Scene>, Arc<Gate>, Held, Waiting<Option<Pause>>) {
    let (scene, gate, reservation) = requested();
    let boundary: Waiting<_> = started(scene.boundary(Arc::clone(&gate), Preflight::Prepare));
    let held = loom::future::block_on(scene.ready(reservation)).expect("the pause is held");
    (scene, gate, held, boundary)
}

/// Set-up: ticket 0 is committed; the requester has its [`Pending`] seal
/// and the worker's `boundary` returned the pause to seal.
pub fn committed() -> (Arc<Scene>, Arc<Gate>, Pending, Pause) {
    let (scene, gate, held, boundary) = held();
    let pending = scene.commit(held).expect("nothing canceled");
    let pause = loom::future::block_on(boundary).expect("the worker sees the commit");
    (scene, gate, pending, pause)
}
