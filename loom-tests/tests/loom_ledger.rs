#![cfg(loom)]
//! The delegation ledger's adapter (SPEC §2) under every interleaving of one
//! or two operations per actor, for each pair (and one triple) of operations
//! that can race: an arrival against a take or the scope's end, an adoption
//! against the scope's end, a registration against a scope change, a scope's
//! drop against a newer scope. (Waits are in `loom_ledger_wakeups.rs`.) All
//! models are exhaustive and end with no waker left behind.
//!
//! The ledger is shared by a `std::sync::Arc` and its children count their
//! endings in `std` atomics (see `loom_tests::ledger`): loom sees only the
//! ledger's own lock, so every interleaving explored is one of its.

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::ledger::{Arrival, Counts, Delegations, RegisterError};
use baton_testkit::loom::{Coverage, model};
use loom::thread;
use loom_tests::ledger::{Counted, TASK_A, TASK_B, delegation, live_ids, scoped};

/// D1 / D4: an arrival racing `take_arrived` is delivered once and taken
/// once, and the taker's `counts()` accounts for the entry it did not take.
#[test]
fn an_arrival_racing_take_arrived_is_delivered_once_and_taken_once() {
    let started = Instant::now();
    model("arrive ∥ take_arrived", Coverage::Exhaustive, move || {
        let (ledger, _scope, children) = scoped(&["dlg_a"], started);
        let arriver = {
            let ledger = Arc::clone(&ledger);
            thread::spawn(move || ledger.arrive("dlg_a"))
        };
        let taken = ledger.take_arrived();
        let Counts {
            outstanding,
            arrived,
        } = ledger.counts();
        assert_eq!(
            taken.len() + outstanding + arrived,
            1,
            "D4: the entry is either taken or counted, once"
        );
        assert_eq!(arriver.join().unwrap(), Arrival::Delivered, "D1");
        let rest = ledger.take_arrived();
        let all: Vec<_> = taken
            .iter()
            .chain(&rest)
            .map(|taken| (taken.id().to_owned(), taken.arrived()))
            .collect();
        assert_eq!(
            all,
            [("dlg_a".to_owned(), true)],
            "D1: taken exactly once, as arrived"
        );
        assert_eq!(
            ledger.counts(),
            Counts {
                outstanding: 0,
                arrived: 0
            },
            "D4"
        );
        assert_eq!(
            ledger.arrive("dlg_a"),
            Arrival::AlreadyDelivered,
            "D1: never delivered again"
        );
        drop((taken, rest));
        assert_eq!(children[0].ended(), 0, "D3: an arrived child is not ended");
        assert_eq!(ledger.waiter_count(), 0);
    });
}

/// D1: of two arrivals of one delegation racing `take_arrived`, exactly one
/// is `Delivered` and the other `AlreadyDelivered`, even when the entry was
/// taken in between.
#[test]
fn two_arrivals_racing_take_arrived_deliver_the_outcome_exactly_once() {
    let started = Instant::now();
    model(
        "arrive ∥ arrive ∥ take_arrived",
        Coverage::Exhaustive,
        move || {
            let (ledger, _scope, _children) = scoped(&["dlg_a"], started);
            let arrivers: Vec<_> = (0..2)
                .map(|_| {
                    let ledger = Arc::clone(&ledger);
                    thread::spawn(move || ledger.arrive("dlg_a"))
                })
                .collect();
            let mut taken = ledger.take_arrived().len();
            let mut arrivals: Vec<_> = arrivers.into_iter().map(|a| a.join().unwrap()).collect();
            arrivals.sort_by_key(|arrival| *arrival != Arrival::Delivered);
            assert_eq!(
                arrivals,
                [Arrival::Delivered, Arrival::AlreadyDelivered],
                "D1: delivered exactly once"
            );
            taken += ledger.take_arrived().len();
            assert_eq!(taken, 1, "D1: taken exactly once");
            assert_eq!(ledger.waiter_count(), 0);
        },
    );
}

/// D1 / D3: an arrival racing `take_overdue` is either delivered, and the
/// entry is not overdue any more, or refused because the entry was taken as
/// overdue, and its child ended exactly once.
#[test]
fn an_arrival_racing_take_overdue_is_delivered_or_its_child_ended_never_both() {
    let started = Instant::now();
    model("arrive ∥ take_overdue", Coverage::Exhaustive, move || {
        let (ledger, _scope, children) = scoped(&["dlg_a"], started);
        let arriver = {
            let ledger = Arc::clone(&ledger);
            thread::spawn(move || ledger.arrive("dlg_a"))
        };
        // Each taken delegation is dropped here: one not arrived ends its child.
        let overdue: Vec<_> = (ledger.take_overdue(Duration::ZERO, started).into_iter())
            .map(|taken| taken.id().to_owned())
            .collect();
        let arrival = arriver.join().unwrap();
        match arrival {
            Arrival::Delivered => {
                assert!(overdue.is_empty(), "D1: an arrived entry is not overdue");
                assert_eq!(
                    ledger.counts(),
                    Counts {
                        outstanding: 0,
                        arrived: 1
                    },
                    "D4"
                );
                assert_eq!(children[0].ended(), 0, "D3: an arrived child is not ended");
            }
            Arrival::NotOutstanding => {
                assert_eq!(overdue, ["dlg_a"]);
                assert_eq!(
                    ledger.counts(),
                    Counts {
                        outstanding: 0,
                        arrived: 0
                    },
                    "D4"
                );
                assert_eq!(children[0].ended(), 1, "D3: the overdue child ended once");
            }
            other => panic!("D1: {other:?}"),
        }
        assert_eq!(ledger.waiter_count(), 0);
    });
}

/// D3 / D5: after a scope drop racing an arrival the ledger is empty, the
/// child not arrived is ended exactly once, and the arrived one never.
#[test]
fn an_arrival_racing_the_scope_drop_leaves_nothing_and_ends_only_children_not_arrived() {
    let started = Instant::now();
    model("arrive ∥ scope drop", Coverage::Exhaustive, move || {
        let (ledger, scope, children) = scoped(&["dlg_a", "dlg_b"], started);
        let arriver = {
            let ledger = Arc::clone(&ledger);
            thread::spawn(move || ledger.arrive("dlg_a"))
        };
        drop(scope);
        let arrival = arriver.join().unwrap();
        assert!(
            matches!(arrival, Arrival::Delivered | Arrival::NotOutstanding),
            "{arrival:?}"
        );
        assert_eq!(
            ledger.counts(),
            Counts {
                outstanding: 0,
                arrived: 0
            },
            "D5: empty after the scope"
        );
        assert!(live_ids(&ledger).is_empty(), "D5");
        assert_eq!(ledger.remembered(), 0, "D5: its memory went with it");
        assert_eq!(ledger.task_id(), None);
        let arrived = usize::from(arrival == Arrival::Delivered);
        assert_eq!(
            children[0].ended(),
            1 - arrived,
            "D3: ended exactly once unless arrived"
        );
        assert_eq!(children[1].ended(), 1, "D3: ended exactly once");
        assert_eq!(ledger.arrive("dlg_b"), Arrival::NotOutstanding);
        assert_eq!(ledger.waiter_count(), 0);
    });
}

/// D3: a child adopted racing the scope's drop is ended exactly once: by
/// the drop if adopted first, by `adopt` itself if the entry is gone.
#[test]
fn a_child_adopted_racing_the_scope_drop_is_ended_exactly_once() {
    let started = Instant::now();
    model("adopt ∥ scope drop", Coverage::Exhaustive, move || {
        let ledger = Arc::new(Delegations::new());
        let scope = ledger.scope_task(TASK_A).unwrap();
        ledger
            .register("dlg_a", delegation(TASK_A, started))
            .expect("in scope");
        let child = Counted::new();
        let adopter = {
            let (ledger, child) = (Arc::clone(&ledger), Arc::clone(&child));
            thread::spawn(move || ledger.adopt("dlg_a", child.handle()))
        };
        drop(scope);
        adopter.join().unwrap();
        assert_eq!(child.ended(), 1, "D3: ended exactly once");
        assert_eq!(
            ledger.counts(),
            Counts {
                outstanding: 0,
                arrived: 0
            },
            "D5"
        );
        assert_eq!(ledger.waiter_count(), 0);
    });
}

/// D2 / D3: a registration for the scoped task racing a change to another
/// task is refused, or kept only until the change takes it; it never leaks
/// into the new scope, and its child is ended exactly once.
#[test]
fn a_registration_racing_a_scope_change_never_leaks_into_the_new_scope() {
    let started = Instant::now();
    model(
        "register+adopt ∥ scope change",
        Coverage::Exhaustive,
        move || {
            let ledger = Arc::new(Delegations::new());
            let old = ledger.scope_task(TASK_A).unwrap();
            let child = Counted::new();
            let registrant = {
                let (ledger, child) = (Arc::clone(&ledger), Arc::clone(&child));
                thread::spawn(move || {
                    let registered = ledger.register("dlg_a", delegation(TASK_A, started));
                    ledger.adopt("dlg_a", child.handle());
                    registered
                })
            };
            let new = ledger.scope_task(TASK_B).unwrap();
            match registrant.join().unwrap() {
                Ok(()) => {}
                Err(RegisterError::OtherTask { scoped, found }) => {
                    assert_eq!((scoped.as_str(), found.as_str()), (TASK_B, TASK_A), "D2");
                }
                Err(error) => panic!("D2: {error:?}"),
            }
            assert!(
                live_ids(&ledger).is_empty(),
                "D2: never kept in the new scope"
            );
            assert_eq!(
                ledger.counts(),
                Counts {
                    outstanding: 0,
                    arrived: 0
                },
                "D4"
            );
            assert_eq!(child.ended(), 1, "D3: its child is ended exactly once");
            drop((old, new));
            assert_eq!(child.ended(), 1, "D3: and only once");
            assert_eq!(ledger.waiter_count(), 0);
        },
    );
}

/// D2: a registration for the next task racing the scope change to it is
/// kept exactly when it lands after the change, and refused before.
#[test]
fn a_registration_for_the_next_task_is_kept_only_once_it_is_in_scope() {
    let started = Instant::now();
    model(
        "register(next) ∥ scope change",
        Coverage::Exhaustive,
        move || {
            let ledger = Arc::new(Delegations::new());
            let old = ledger.scope_task(TASK_A).unwrap();
            let registrant = {
                let ledger = Arc::clone(&ledger);
                thread::spawn(move || ledger.register("dlg_b", delegation(TASK_B, started)))
            };
            let new = ledger.scope_task(TASK_B).unwrap();
            let registered = registrant.join().unwrap();
            match &registered {
                Ok(()) => {}
                Err(RegisterError::OtherTask { scoped, found }) => {
                    assert_eq!((scoped.as_str(), found.as_str()), (TASK_A, TASK_B), "D2");
                }
                Err(error) => panic!("D2: {error:?}"),
            }
            let kept: &[&str] = if registered.is_ok() { &["dlg_b"] } else { &[] };
            assert_eq!(live_ids(&ledger), kept, "D2: kept iff registered in scope");
            drop((old, new));
            assert!(live_ids(&ledger).is_empty(), "D5");
            assert_eq!(ledger.waiter_count(), 0);
        },
    );
}

/// Scope identity: an older scope's drop racing a registration in the newer
/// scope changes nothing: the registration is kept, its child untouched.
#[test]
fn a_stale_scope_drop_racing_a_registration_in_the_newer_scope_changes_nothing() {
    let started = Instant::now();
    model(
        "stale scope drop ∥ register",
        Coverage::Exhaustive,
        move || {
            let ledger = Arc::new(Delegations::new());
            let old = ledger.scope_task(TASK_A).unwrap();
            let new = ledger.scope_task(TASK_B).unwrap();
            let dropper = thread::spawn(move || drop(old));
            let child = Counted::new();
            assert_eq!(
                ledger.register("dlg_b", delegation(TASK_B, started)),
                Ok(()),
                "a stale drop never ends the newer scope"
            );
            ledger.adopt("dlg_b", child.handle());
            dropper.join().unwrap();
            assert_eq!(ledger.task_id().as_deref(), Some(TASK_B));
            assert_eq!(live_ids(&ledger), ["dlg_b"], "D2: kept in its scope");
            assert_eq!(child.ended(), 0, "the stale drop ended nothing");
            drop(new);
            assert_eq!(child.ended(), 1, "D3: its own scope's end ends it");
            assert_eq!(ledger.waiter_count(), 0);
        },
    );
}

/// Scope identity / D3: a scope's drop racing the next `scope_task` ends
/// the old scope's child exactly once (by whichever comes first) and leaves
/// the new scope and its delegation alone.
#[test]
fn a_scope_drop_racing_the_next_scope_ends_the_old_children_once_and_spares_the_new() {
    let started = Instant::now();
    model(
        "scope drop ∥ scope change+register",
        Coverage::Exhaustive,
        move || {
            let (ledger, old, children) = scoped(&["dlg_a"], started);
            let dropper = thread::spawn(move || drop(old));
            let new = ledger.scope_task(TASK_B).unwrap();
            let child = Counted::new();
            assert_eq!(
                ledger.register("dlg_b", delegation(TASK_B, started)),
                Ok(()),
                "the old scope's drop never ends the newer scope"
            );
            ledger.adopt("dlg_b", child.handle());
            dropper.join().unwrap();
            assert_eq!(
                live_ids(&ledger),
                ["dlg_b"],
                "D2: the newer scope keeps its delegation"
            );
            assert_eq!(children[0].ended(), 1, "D3: the old child ended once");
            assert_eq!(child.ended(), 0, "the new child untouched");
            drop(new);
            assert_eq!(child.ended(), 1, "D3");
            assert_eq!(ledger.waiter_count(), 0);
        },
    );
}

/// D1 / D3: an arrival racing an `adopt` that replaces the entry's child
/// (the arrival asks the child outside the lock, so it may ask the one
/// replaced, and then asks the new one) is delivered exactly once, the
/// replaced child is ended exactly once, and the new one is never.
#[test]
fn an_arrival_racing_a_replacing_adopt_is_delivered_once_and_ends_only_the_replaced_child() {
    let started = Instant::now();
    model(
        "arrive ∥ adopt (replace)",
        Coverage::Exhaustive,
        move || {
            let (ledger, _scope, children) = scoped(&["dlg_a"], started);
            let replacement = Counted::new();
            let adopter = {
                let (ledger, replacement) = (Arc::clone(&ledger), Arc::clone(&replacement));
                thread::spawn(move || ledger.adopt("dlg_a", replacement.handle()))
            };
            let arrival = ledger.arrive("dlg_a");
            adopter.join().unwrap();
            assert_eq!(
                arrival,
                Arrival::Delivered,
                "D1: a child replaced is ended by adopt, not by arrive's asking"
            );
            assert_eq!(ledger.arrive("dlg_a"), Arrival::AlreadyDelivered, "D1");
            assert_eq!(children[0].ended(), 1, "D3: the replaced child ended once");
            assert_eq!(replacement.ended(), 0, "the new child keeps running");
            assert_eq!(ledger.waiter_count(), 0);
        },
    );
}
