#![cfg(loom)]
//! No lost wake-up in the delegation ledger (SPEC §2, D6): a
//! `wait_for_arrival` racing the arrivals it waits for resolves in every
//! interleaving (loom reports a waiter that missed its wake-up as a
//! deadlock), and a wait dropped while racing one consumes nothing it did
//! not return. (The other races of the ledger are in `loom_ledger.rs`.) All
//! models are exhaustive and end with no waker left behind.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Instant;

use baton::ledger::{Arrival, Delegations};
use loom::future::block_on;
use loom::thread;
use loom_tests::ledger::scoped;
use loom_tests::run::{Coverage, model};

/// Whether a fresh `wait_for_arrival`, polled once, resolves at once: a
/// wake-up is stored. The future is dropped after the poll.
fn a_wake_up_is_stored(ledger: &Delegations) -> bool {
    pin!(ledger.wait_for_arrival())
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_ready()
}

/// D6: a `wait_for_arrival` racing an arrival always resolves (a lost
/// wake-up would be reported by loom as a deadlock), consuming the one
/// stored wake-up.
#[test]
fn a_wait_racing_an_arrival_always_resolves() {
    let started = Instant::now();
    model(
        "wait_for_arrival ∥ arrive",
        Coverage::Exhaustive,
        move || {
            let (ledger, _scope, _children) = scoped(&["dlg_a"], started);
            let waiter = {
                let ledger = Arc::clone(&ledger);
                thread::spawn(move || block_on(ledger.wait_for_arrival()))
            };
            assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
            waiter.join().unwrap();
            assert!(
                !a_wake_up_is_stored(&ledger),
                "D6: one arrival, one wake-up, consumed by the wait"
            );
            assert_eq!(ledger.waiter_count(), 0, "the wait freed its waker");
        },
    );
}

/// D6: a wait racing two arrivals always resolves, whichever lands first
/// and however the two coalesce.
#[test]
fn a_wait_racing_two_arrivals_always_resolves() {
    let started = Instant::now();
    model(
        "wait_for_arrival ∥ arrive ∥ arrive",
        Coverage::Exhaustive,
        move || {
            let (ledger, _scope, _children) = scoped(&["dlg_a", "dlg_b"], started);
            let waiter = {
                let ledger = Arc::clone(&ledger);
                thread::spawn(move || block_on(ledger.wait_for_arrival()))
            };
            let arriver = {
                let ledger = Arc::clone(&ledger);
                thread::spawn(move || ledger.arrive("dlg_b"))
            };
            assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
            assert_eq!(arriver.join().unwrap(), Arrival::Delivered);
            waiter.join().unwrap();
            assert_eq!(ledger.counts(), (0, 2), "D4");
            assert_eq!(ledger.waiter_count(), 0, "the wait freed its waker");
        },
    );
}

/// D6: a wait dropped after one poll racing an arrival leaves no waker, and
/// unless that poll resolved it, the arrival's wake-up is still stored for
/// the next wait.
#[test]
fn a_wait_dropped_racing_an_arrival_consumes_nothing_it_did_not_return() {
    let started = Instant::now();
    model("dropped wait ∥ arrive", Coverage::Exhaustive, move || {
        let (ledger, _scope, _children) = scoped(&["dlg_a"], started);
        let waiter = {
            let ledger = Arc::clone(&ledger);
            thread::spawn(move || a_wake_up_is_stored(&ledger))
        };
        assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
        let resolved = waiter.join().unwrap();
        assert_eq!(ledger.waiter_count(), 0, "the dropped wait left no waker");
        assert_eq!(
            a_wake_up_is_stored(&ledger),
            !resolved,
            "D6: the wake-up is returned once, by the wait that resolved"
        );
    });
}
