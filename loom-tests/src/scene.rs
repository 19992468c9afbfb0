//! baton's loom scenes: the test kit's recording [`Scene`] over the
//! fixtures' gate, and the set-ups the models start from.
//!
//! [`Scene`]: baton_testkit::scene::Scene

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use baton::{HandoffReservation, HeldHandoff, PendingSeal};
pub use baton_testkit::scene::started;

use crate::fixtures::{self, Gate, Pause, Preflight};

/// The scene of the fixtures' gate.
pub type Scene = baton_testkit::scene::Scene<u8>;
/// A reservation of the gate under test.
pub type Reservation = HandoffReservation<u8>;
/// A held handoff of the gate under test.
pub type Held = HeldHandoff<u8>;
/// A committed handoff of the gate under test.
pub type Pending = PendingSeal<u8>;

/// A fresh gate, and a scene recording operations on it.
pub fn scene() -> (Arc<Scene>, Gate) {
    let gate = fixtures::gate();
    (Scene::new(&gate), gate)
}

impl baton_testkit::scene::Preflight<u8> for Preflight {
    fn run(self, intent: Arc<baton::HandoffIntent>) -> Option<Pause> {
        Preflight::run(self, intent)
    }
}

/// A future already polled once and waiting, ready to move to a thread.
pub type Waiting<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Set-up: `reserve("a")` granted ticket 0; the gate is `Requested`.
pub fn requested() -> (Arc<Scene>, Arc<Gate>, Reservation) {
    let (scene, gate) = scene();
    let reservation = scene
        .reserve(fixtures::intent("a"))
        .expect("a fresh gate grants");
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
