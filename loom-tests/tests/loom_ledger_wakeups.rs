#![cfg(loom)]
//! No lost wake-up in the delegation ledger (SPEC §2, D6): a
//! `wait_for_arrival` racing the arrivals it waits for resolves in every
//! interleaving (loom reports a waiter that missed its wake-up as a
//! deadlock), a wait dropped while racing one consumes nothing it did
//! not return, and `notify_one` holds: two pending waits and two arrivals
//! resolve both, and a woken wait dropped passes its wake-up on. (The other races of the ledger are in `loom_ledger.rs`.) All
//! models are exhaustive and end with no waker left behind.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Instant;

use baton::ledger::{Arrival, Counts, Delegations};
use baton_testkit::loom::{Coverage, model};
use loom::future::block_on;
use loom::thread;
use loom_tests::ledger::scoped;

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
            assert_eq!(
                ledger.counts(),
                Counts {
                    outstanding: 0,
                    arrived: 2
                },
                "D4"
            );
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

/// Polls `wait` once with a waker that does nothing: it is pending after.
fn pend<F: Future + Unpin>(wait: &mut F) {
    assert!(
        Pin::new(wait)
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending(),
        "nothing has arrived yet"
    );
}

/// D6 (`notify_one`, issue 22): two waits pending before two racing
/// arrivals both resolve, in every interleaving (the old rule coalesced
/// the second arrival into the first's wake-up, and loom would report the
/// second wait's hang as a deadlock).
#[test]
fn two_pending_waits_racing_two_arrivals_both_resolve() {
    let started = Instant::now();
    model(
        "2 pending waits ∥ arrive ∥ arrive",
        Coverage::Exhaustive,
        move || {
            let (ledger, _scope, _children) = scoped(&["dlg_a", "dlg_b"], started);
            let mut first = Box::pin(ledger.wait_for_arrival());
            let mut second = Box::pin(ledger.wait_for_arrival());
            pend(&mut first);
            pend(&mut second);
            let arrivers = ["dlg_a", "dlg_b"].map(|id| {
                let ledger = Arc::clone(&ledger);
                thread::spawn(move || ledger.arrive(id))
            });
            block_on(first);
            block_on(second);
            for arriver in arrivers {
                assert_eq!(arriver.join().unwrap(), Arrival::Delivered);
            }
            assert!(
                !a_wake_up_is_stored(&ledger),
                "D6: two arrivals, two wake-ups, both taken by the two waits"
            );
            assert_eq!(ledger.waiter_count(), 0, "the waits freed their wakers");
        },
    );
}

/// D6: a pending wait woken for an arrival and dropped (racing the other
/// pending wait's poll) passes its wake-up on: the other wait resolves in
/// every interleaving, and nothing is left stored.
#[test]
fn a_woken_wait_dropped_passes_its_wake_up_on_to_the_other_pending_wait() {
    let started = Instant::now();
    model(
        "woken wait dropped ∥ the other wait",
        Coverage::Exhaustive,
        move || {
            let (ledger, _scope, _children) = scoped(&["dlg_a"], started);
            let dropper = {
                let ledger = Arc::clone(&ledger);
                thread::spawn(move || {
                    let mut wait = Box::pin(ledger.wait_for_arrival());
                    pend(&mut wait);
                    while ledger.counts().arrived != 1 {
                        thread::yield_now();
                    }
                    drop(wait);
                })
            };
            let mut other = Box::pin(ledger.wait_for_arrival());
            pend(&mut other);
            while ledger.waiter_count() < 2 {
                thread::yield_now();
            }
            assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
            block_on(other);
            dropper.join().unwrap();
            assert!(
                !a_wake_up_is_stored(&ledger),
                "D6: one arrival, one wake-up, taken once"
            );
            assert_eq!(ledger.waiter_count(), 0, "the waits freed their wakers");
        },
    );
}

/// D6: the only pending wait, woken for an arrival and dropped before it
/// resolves, passes its wake-up on to the stored permit: the next wait
/// resolves at once.
#[test]
fn a_lone_woken_wait_dropped_passes_its_wake_up_on_to_the_next_wait() {
    let started = Instant::now();
    model(
        "woken wait dropped ∥ arrive",
        Coverage::Exhaustive,
        move || {
            let (ledger, _scope, _children) = scoped(&["dlg_a"], started);
            let dropper = {
                let ledger = Arc::clone(&ledger);
                thread::spawn(move || {
                    let mut wait = Box::pin(ledger.wait_for_arrival());
                    pend(&mut wait);
                    while ledger.counts().arrived != 1 {
                        thread::yield_now();
                    }
                    drop(wait);
                })
            };
            while ledger.waiter_count() < 1 {
                thread::yield_now();
            }
            assert_eq!(ledger.arrive("dlg_a"), Arrival::Delivered);
            dropper.join().unwrap();
            assert_eq!(ledger.waiter_count(), 0, "the dropped wait left no waker");
            assert!(
                a_wake_up_is_stored(&ledger),
                "D6: the dropped wait's wake-up is the next wait's"
            );
        },
    );
}
