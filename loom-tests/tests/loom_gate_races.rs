#![cfg(loom)]
//! The handoff gate's adapter (SPEC §1) under every interleaving of one
//! operation per actor, for each pair (and triple) of operations that can
//! race. All models are exhaustive. Every model ends with `Scene::finish`:
//! no waker left behind, and the recorded history linearizable against the
//! core table.
//!
//! A history is only as telling as its observers. Where a step is decided
//! on something that changes outside the gate's lock (the cancel bit, read
//! by the preflight and the commit), the thread that changes it also
//! observes the gate right after (`…; reserve`, `…; boundary`): an answer
//! that fits neither "before the fire" nor "after it" then shows as a
//! history no order explains. Without such an observer, `commit ∥ fire ∥
//! boundary` passed while a reserve after the fire could answer `Busy` for
//! a commit that had already taken effect. The preflight's decision on the
//! bit needs no such scene: one that reads the bit clear moves `Requested`
//! to `Held`, whose lock-free answers are the same, which the table test
//! `the_copy_answers_only_kinds_whose_bit_decided_steps_keep_its_answers`
//! checks against `step`. (A `preflight ∥ fire; reserve` scene was written
//! and passes, but the boundary's interval spans the fire and the reserve,
//! so every history it records has an explaining order whatever the
//! preflight does with the bit: a scene that cannot fail is not kept.)

use std::sync::Arc;

use baton::GateError;
use baton::gate::core::{State, StateKind, Ticket};
use baton_testkit::loom::{Coverage, model};
use loom::future::block_on;
use loom::thread;
use loom_tests::fixtures::{self, Preflight};
use loom_tests::scene::{self, committed, held, requested, started};

/// S1: of two racing reserves exactly one is granted; the other is `Busy`.
#[test]
fn two_racing_reserves_grant_exactly_one() {
    model("reserve ∥ reserve", Coverage::Exhaustive, || {
        let (scene, _gate) = scene::scene();
        scene.begin();
        let other = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || scene.reserve(fixtures::intent("b")))
        };
        let mine = scene.reserve(fixtures::intent("a"));
        let other = other.join().unwrap();
        let granted = [&mine, &other].iter().filter(|r| r.is_ok()).count();
        assert_eq!(granted, 1, "S1: exactly one reserve is granted");
        assert!(
            [&mine, &other]
                .iter()
                .any(|r| matches!(r, Err(GateError::Busy)))
        );
        scene.finish();
    });
}

/// S6 / L1: a reserve racing `close` is refused `Closed` or granted and
/// then closed out: the gate ends `Closed` and the reservation is never held.
#[test]
fn a_reserve_racing_close_is_refused_or_closed_out() {
    model("reserve ∥ close", Coverage::Exhaustive, || {
        let (scene, gate) = scene::scene();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || scene.reserve(fixtures::intent("a")))
        };
        scene.close(&gate);
        let held = match requester.join().unwrap() {
            Ok(reservation) => block_on(scene.ready(reservation)).is_some(),
            Err(error) => {
                assert_eq!(error, GateError::Closed);
                false
            }
        };
        assert!(
            scene.state() == State::Closed && !held,
            "S6: closed, never held"
        );
        scene.finish();
    });
}

/// S8: a reservation dropped while the worker's boundary runs its preflight
/// (or waits on the held pause) leaves the Run running; the boundary
/// returns nothing.
#[test]
fn a_reservation_dropped_during_the_boundary_leaves_the_run_running() {
    model(
        "reservation drop ∥ boundary",
        Coverage::Exhaustive,
        || {
            let (scene, gate, reservation) = requested();
            scene.begin();
            let requester = {
                let scene = Arc::clone(&scene);
                thread::spawn(move || scene.release(Ticket::new(0), reservation))
            };
            let handed = block_on(scene.boundary(Arc::clone(&gate), Preflight::Prepare));
            requester.join().unwrap();
            assert!(handed.is_none(), "S8: released, no handoff");
            assert_eq!(scene.state().kind(), StateKind::Running, "S8: released");
            scene.finish();
        },
    );
}

/// S3 / S4: a commit racing the cancellation succeeds only with the bit
/// still clear, and then the waiting worker returns the commit; otherwise
/// the worker lets go.
#[test]
fn a_commit_racing_the_cancellation_is_seen_by_the_worker_iff_it_succeeds() {
    model("commit ∥ fire ∥ boundary", Coverage::Exhaustive, || {
        let (scene, _gate, held, boundary) = held();
        scene.begin();
        let worker = thread::spawn(move || block_on(boundary));
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || scene.commit(held).is_some())
        };
        scene.fire();
        let committed = requester.join().unwrap();
        let handed = worker.join().unwrap();
        assert_eq!(
            committed,
            handed.is_some(),
            "S3/S4: the worker returns the commit iff it happened"
        );
        scene.finish();
    });
}

/// S3, observed by the canceler: the thread that fires the Run's
/// cancellation then reserves. The commit either took effect before the
/// fire — then the reserve sees it (`HandedOff`) — or after, and then the
/// set bit refused it. A reserve answering `Busy` while the commit succeeds
/// fits no order: the commit read the bit before the fire, so it took
/// effect before the reserve, which must have seen `Committed`.
#[test]
fn a_reserve_after_the_fire_sees_the_commit_or_the_commit_is_refused() {
    model("commit ∥ fire; reserve", Coverage::Exhaustive, || {
        let (scene, _gate, held, boundary) = held();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || scene.commit(held).is_some())
        };
        scene.fire();
        let reserved = scene.reserve(fixtures::intent("b"));
        let committed = requester.join().unwrap();
        assert!(
            !(committed && reserved.as_ref().is_err_and(|e| *e == GateError::Busy)),
            "S3: the commit succeeded, yet a reserve after the fire found the handoff still held"
        );
        if let Ok(reservation) = reserved {
            scene.release(reservation.ticket(), reservation);
        }
        let handed = block_on(boundary);
        assert_eq!(committed, handed.is_some(), "S3/S4");
        scene.finish();
    });
}

/// S3 / L3, observed by the worker: after the fire, the worker reaches
/// another boundary while its first one still waits on the held pause. If
/// the commit succeeded it took effect before the fire (it read the bit
/// clear), so that boundary must return the committed pause; "no handoff
/// asked" fits no order.
#[test]
fn a_boundary_after_the_fire_returns_a_commit_that_succeeded() {
    model("commit ∥ fire; boundary", Coverage::Exhaustive, || {
        let (scene, gate, held, boundary) = held();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || scene.commit(held).is_some())
        };
        scene.fire();
        let again = block_on(scene.boundary(Arc::clone(&gate), Preflight::Prepare));
        let committed = requester.join().unwrap();
        assert!(
            !committed || again.is_some(),
            "S3/L3: the commit succeeded, yet a boundary after the fire found no handoff"
        );
        let handed = block_on(boundary);
        assert_eq!(committed, handed.is_some(), "S3/S4");
        scene.finish();
    });
}

/// S5: a commit racing `close` is never sealed: the requester's wait
/// resolves `None`, and the gate ends `Closed`.
#[test]
fn a_commit_racing_close_is_never_sealed() {
    model(
        "commit ∥ close ∥ boundary",
        Coverage::Exhaustive,
        || {
            let (scene, gate, held, boundary) = held();
            scene.begin();
            let worker = thread::spawn(move || block_on(boundary));
            let requester = {
                let scene = Arc::clone(&scene);
                thread::spawn(move || scene.commit(held).and_then(|p| block_on(scene.wait(p))))
            };
            scene.close(&gate);
            let sealed = requester.join().unwrap();
            worker.join().unwrap();
            assert!(
                sealed.is_none() && scene.state() == State::Closed,
                "S5: no seal"
            );
            scene.finish();
        },
    );
}

/// S5 / S6: a seal racing `close` ends in exactly one terminal state, and
/// the requester's wait returns the pause iff the seal won.
#[test]
fn a_seal_racing_close_ends_in_one_terminal_state() {
    model("seal ∥ close ∥ wait", Coverage::Exhaustive, || {
        let (scene, gate, pending, pause) = committed();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || block_on(scene.wait(pending)))
        };
        let worker = {
            let (scene, gate) = (Arc::clone(&scene), Arc::clone(&gate));
            thread::spawn(move || scene.seal(&gate, &pause))
        };
        scene.close(&gate);
        let sealed = worker.join().unwrap();
        let waited = requester.join().unwrap();
        let kind = if sealed {
            StateKind::Sealed
        } else {
            StateKind::Closed
        };
        assert!(
            waited.is_some() == sealed && scene.state().kind() == kind,
            "S5/S6"
        );
        scene.finish();
    });
}

/// S8: the cancellation racing a reservation's `ready` and the worker's
/// boundary always ends with the Run released (`Running`), never handed off.
#[test]
fn the_cancellation_racing_ready_releases_the_run() {
    model("ready ∥ fire ∥ boundary", Coverage::Exhaustive, || {
        let (scene, gate, reservation) = requested();
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || {
                if let Some(held) = block_on(scene.ready(reservation)) {
                    scene.release(Ticket::new(0), held);
                }
            })
        };
        let worker = {
            let boundary = scene.boundary(Arc::clone(&gate), Preflight::Prepare);
            thread::spawn(move || block_on(boundary))
        };
        scene.fire();
        requester.join().unwrap();
        let handed = worker.join().unwrap();
        assert!(
            handed.is_none() && scene.state().kind() == StateKind::Running,
            "S8"
        );
        scene.finish();
    });
}

/// S2: a stale reservation's drop never releases a newer one: after the
/// worker's failed preflight released ticket 0 and `b` was granted, `b`
/// stays live whenever the drop of `a` lands.
#[test]
fn a_stale_release_never_releases_a_newer_reservation() {
    model(
        "stale drop ∥ boundary; reserve",
        Coverage::Exhaustive,
        || {
            let (scene, gate, stale) = requested();
            scene.begin();
            let requester = {
                let scene = Arc::clone(&scene);
                thread::spawn(move || scene.release(Ticket::new(0), stale))
            };
            assert!(block_on(scene.boundary(Arc::clone(&gate), Preflight::Fail)).is_none());
            let newer = scene
                .reserve(fixtures::intent("b"))
                .expect("ticket 0 is released by now");
            requester.join().unwrap();
            assert!(
                matches!(scene.state(), State::Requested { ticket, .. } if ticket == newer.ticket()),
                "S2: the stale drop released the newer reservation"
            );
            scene.finish();
        },
    );
}

/// Cancel safety: a waiting `ready()` future dropped while the worker's
/// boundary runs releases the Run (S8) and leaves no waker.
#[test]
fn a_ready_future_dropped_racing_the_boundary_releases_and_leaves_no_waker() {
    model("drop ready() ∥ boundary", Coverage::Exhaustive, || {
        let (scene, gate, reservation) = requested();
        let waiting = started(scene.ready(reservation));
        scene.begin();
        let requester = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || scene.release(Ticket::new(0), waiting))
        };
        let handed = block_on(scene.boundary(Arc::clone(&gate), Preflight::Prepare));
        requester.join().unwrap();
        assert!(
            handed.is_none() && scene.state().kind() == StateKind::Running,
            "S8"
        );
        scene.finish();
    });
}

/// S4: the worker's boundary future dropped while held, racing a commit,
/// releases the Run only if the commit has not happened: a commit is never
/// undone.
#[test]
fn a_held_boundary_dropped_racing_commit_never_undoes_the_commit() {
    model("drop boundary ∥ commit", Coverage::Exhaustive, || {
        let (scene, _gate, held, boundary) = held();
        scene.begin();
        let worker = {
            let scene = Arc::clone(&scene);
            thread::spawn(move || scene.release(Ticket::new(0), boundary))
        };
        let committed = scene.commit(held).is_some();
        worker.join().unwrap();
        let kind = if committed {
            StateKind::Committed
        } else {
            StateKind::Running
        };
        assert_eq!(scene.state().kind(), kind, "S4: a commit is never undone");
        scene.finish();
    });
}

/// Cancel safety: a waiting `wait()` future dropped while the worker seals
/// changes nothing: the seal lands, and no waker is left.
#[test]
fn a_wait_future_dropped_racing_the_seal_changes_nothing() {
    model("drop wait() ∥ seal", Coverage::Exhaustive, || {
        let (scene, gate, pending, pause) = committed();
        let waiting = started(scene.wait(pending));
        scene.begin();
        let requester = thread::spawn(move || drop(waiting));
        let sealed = scene.seal(&gate, &pause);
        requester.join().unwrap();
        assert!(
            sealed && scene.state().kind() == StateKind::Sealed,
            "the seal lands"
        );
        scene.finish();
    });
}
