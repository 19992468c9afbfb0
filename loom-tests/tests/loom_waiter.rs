#![cfg(loom)]
//! The waiter cell's wake/store order, looked at directly (SPEC §1 and §2,
//! L1 and D6): a waiting future is woken only once the change it waits for
//! is visible, and never misses it. Each model polls a waiting future with a
//! [`WakeProbe`] while another thread makes the change; the probe checks, at
//! the wake-up itself, that the change can be seen (`probe::race_wake`).
//!
//! The other wake-up models (`loom_gate_wakeups.rs`, `loom_ledger_wakeups.rs`,
//! `loom_cancel.rs`) see a missed wake-up only as a hang that loom reports
//! as a deadlock, and a wake-up sent before its change not at all when the
//! woken future happens to be re-polled late enough. All models are
//! exhaustive.

use std::pin::pin;
use std::sync::Arc;
use std::time::Instant;

use baton::CancelSignal;
use baton::gate::core::StateKind;
use baton::ledger::Arrival;
use baton_testkit::loom::{Coverage, model};
use baton_testkit::loom::{WakeProbe, race_wake};
use loom_tests::ledger::scoped;
use loom_tests::scene::{committed, held};

/// S5: the requester's `wait()` is woken by the seal only once the gate is
/// `Sealed`, and always.
#[test]
fn a_pending_seal_is_woken_once_sealed_never_before_never_missed() {
    model("probe: wait() ∥ seal", Coverage::Exhaustive, || {
        let (scene, gate, pending, pause) = committed();
        let requester = scene.requester().clone();
        let probe = WakeProbe::new(move || requester.state().kind() == StateKind::Sealed);
        let waiting = pin!(pending.wait());
        let sealed = race_wake(
            &probe,
            waiting,
            move || assert!(gate.sealed(&pause)),
            "S5: wait() resolves with the sealed pause",
        );
        assert!(sealed.is_ok(), "S5");
        assert_eq!(scene.requester().waiter_count(), 0);
    });
}

/// S7: the worker's waiting `boundary` is woken by the commit only once the
/// gate is `Committed`, and always.
#[test]
fn a_held_boundary_is_woken_once_committed_never_before_never_missed() {
    model("probe: boundary ∥ commit", Coverage::Exhaustive, || {
        let (scene, _gate, held, mut boundary) = held();
        let requester = scene.requester().clone();
        let probe = WakeProbe::new(move || requester.state().kind() == StateKind::Committed);
        let handed = race_wake(
            &probe,
            boundary.as_mut(),
            move || assert!(held.commit().is_ok(), "nothing canceled"),
            "S7: the held boundary returns the committed pause",
        );
        assert!(handed.is_some(), "S7");
        assert_eq!(scene.requester().waiter_count(), 0);
    });
}

/// D6: a pending `wait_for_arrival` is woken by an arrival only once the
/// arrival is counted, and always.
#[test]
fn a_wait_for_arrival_is_woken_once_arrived_never_before_never_missed() {
    let started = Instant::now();
    model(
        "probe: wait_for_arrival ∥ arrive",
        Coverage::Exhaustive,
        move || {
            let (ledger, _scope, _children) = scoped(&["dlg_a"], started);
            let probe = {
                let ledger = Arc::clone(&ledger);
                WakeProbe::new(move || ledger.counts().arrived == 1)
            };
            let waiting = pin!(ledger.wait_for_arrival());
            let arriving = Arc::clone(&ledger);
            race_wake(
                &probe,
                waiting,
                move || assert_eq!(arriving.arrive("dlg_a"), Arrival::Delivered),
                "D6: a pending wait resolves after the arrival",
            );
            assert_eq!(ledger.waiter_count(), 0);
        },
    );
}

/// §3: a pending `canceled()` is woken by `cancel()` only once the signal
/// reads canceled, and always.
#[test]
fn a_canceled_future_is_woken_once_canceled_never_before_never_missed() {
    model("probe: canceled() ∥ cancel", Coverage::Exhaustive, || {
        let signal = CancelSignal::new();
        let probe = {
            let signal = signal.clone();
            WakeProbe::new(move || signal.is_canceled())
        };
        let canceling = signal.clone();
        race_wake(
            &probe,
            pin!(signal.canceled()),
            move || canceling.cancel(),
            "§3: canceled() resolves after cancel()",
        );
        assert_eq!(signal.waiter_count(), 0);
    });
}
