#![cfg(loom)]
//! No lost wake-up (SPEC §1, L1): every waiter of the handoff gate —
//! `ready`, `boundary`, `wait` — resolves whenever its condition is decided,
//! by each event that can decide it, in every interleaving. A waiter that
//! missed its wake-up would sleep forever, and loom reports that as a
//! deadlock. (`CancelSignal::canceled` is in `loom_cancel.rs`.) All models
//! are exhaustive, and end with `Scene::finish`.

use std::sync::Arc;

use baton::gate::core::{State, StateKind, Ticket};
use baton_testkit::loom::{Coverage, model};
use loom::future::block_on;
use loom::thread;
use loom_tests::fixtures::{Preflight, intent};
use loom_tests::scene::{committed, held, requested};

/// S7: a waiting reservation wakes when the worker holds its pause, and
/// resolves with that pause.
#[test]
fn a_waiting_reservation_wakes_when_its_pause_is_held() {
    model("ready ∥ boundary(prepare)", Coverage::Exhaustive, || {
        let (scene, gate, reservation) = requested();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || {
                let held = block_on(scene.ready(reservation)).map(|held| {
                    let intent = baton::HandoffIntent::clone(&held.preview().intent);
                    scene.release(held.ticket(), held);
                    intent
                });
                assert_eq!(held, Some(intent("a")), "S7: its own pause");
            })
        };
        block_on(scene.boundary(Arc::clone(&gate), Preflight::Prepare));
        requester.join().unwrap();
        scene.finish();
    });
}

/// S8: a waiting reservation wakes when the worker's preflight fails, and
/// resolves with nothing.
#[test]
fn a_waiting_reservation_wakes_when_the_preflight_fails() {
    model("ready ∥ boundary(fail)", Coverage::Exhaustive, || {
        let (scene, gate, reservation) = requested();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || block_on(scene.ready(reservation)).is_some())
        };
        block_on(scene.boundary(Arc::clone(&gate), Preflight::Fail));
        assert!(!requester.join().unwrap(), "S8: released");
        scene.finish();
    });
}

/// L1: a waiting reservation wakes when the worker drops its gate.
#[test]
fn a_waiting_reservation_wakes_when_the_worker_drops_the_gate() {
    model("ready ∥ worker drop", Coverage::Exhaustive, || {
        let (scene, gate, reservation) = requested();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || block_on(scene.ready(reservation)).is_some())
        };
        scene.drop_gate(Arc::into_inner(gate).expect("the only handle"));
        assert!(!requester.join().unwrap(), "L1: closed, never held");
        scene.finish();
    });
}

/// S7: the waiting worker wakes when its held handoff is committed, and
/// returns that pause.
#[test]
fn a_waiting_boundary_wakes_when_committed() {
    model("boundary ∥ commit", Coverage::Exhaustive, || {
        let (scene, _gate, held, boundary) = held();
        scene.begin();
        let worker = thread::spawn(move || block_on(boundary));
        assert!(scene.commit(held).is_some());
        let handed = worker.join().unwrap();
        assert_eq!(
            handed.map(|p| baton::HandoffIntent::clone(&p.intent)),
            Some(intent("a")),
            "S7: its own commit"
        );
        scene.finish();
    });
}

/// S8: the waiting worker wakes when the requester drops its held handoff,
/// and keeps the Run.
#[test]
fn a_waiting_boundary_wakes_when_the_held_handoff_is_dropped() {
    model("boundary ∥ held drop", Coverage::Exhaustive, || {
        let (scene, _gate, held, boundary) = held();
        scene.begin();
        let worker = thread::spawn(move || block_on(boundary));
        scene.release(Ticket::new(0), held);
        assert!(worker.join().unwrap().is_none(), "S8: released");
        scene.finish();
    });
}

/// S8: the waiting worker wakes when the Run is canceled, and releases it.
#[test]
fn a_waiting_boundary_wakes_when_the_run_is_canceled() {
    model("boundary ∥ fire", Coverage::Exhaustive, || {
        let (scene, _gate, held, boundary) = held();
        scene.begin();
        let worker = thread::spawn(move || block_on(boundary));
        scene.fire();
        let handed = worker.join().unwrap();
        assert!(
            handed.is_none() && scene.state().kind() == StateKind::Running,
            "S8"
        );
        drop(held);
        scene.finish();
    });
}

/// L1: the waiting worker wakes when the gate is closed.
#[test]
fn a_waiting_boundary_wakes_when_the_gate_is_closed() {
    model("boundary ∥ close", Coverage::Exhaustive, || {
        let (scene, gate, held, boundary) = held();
        scene.begin();
        let worker = thread::spawn(move || block_on(boundary));
        scene.close(&gate);
        assert!(worker.join().unwrap().is_none(), "L1: closed, no handoff");
        drop(held);
        scene.finish();
    });
}

/// S5: a pending seal wakes when the worker seals, with the sealed pause.
#[test]
fn a_pending_seal_wakes_when_sealed() {
    model("wait ∥ seal", Coverage::Exhaustive, || {
        let (scene, gate, pending, pause) = committed();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || block_on(scene.wait(pending)))
        };
        assert!(scene.seal(&gate, &pause));
        assert_eq!(
            requester.join().unwrap(),
            Some(pause),
            "S5: the sealed pause"
        );
        scene.finish();
    });
}

/// S5: a pending seal wakes when the gate is closed, with nothing: a close
/// is never a seal.
#[test]
fn a_pending_seal_wakes_when_the_gate_is_closed() {
    model("wait ∥ close", Coverage::Exhaustive, || {
        let (scene, gate, pending, _) = committed();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || block_on(scene.wait(pending)))
        };
        scene.close(&gate);
        assert!(requester.join().unwrap().is_none(), "S5: no forged seal");
        scene.finish();
    });
}

/// S5 / L1: a pending seal wakes when the worker drops its gate unsealed,
/// with nothing.
#[test]
fn a_pending_seal_wakes_when_the_worker_drops_the_gate() {
    model("wait ∥ worker drop", Coverage::Exhaustive, || {
        let (scene, gate, pending, _) = committed();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || block_on(scene.wait(pending)))
        };
        scene.drop_gate(Arc::into_inner(gate).expect("the only handle"));
        assert!(requester.join().unwrap().is_none(), "S5: no forged seal");
        assert_eq!(scene.state(), State::Closed);
        scene.finish();
    });
}
