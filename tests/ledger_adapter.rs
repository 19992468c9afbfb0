//! The ledger adapter against SPEC §2, the seed's scenarios and the seed's
//! measured defects (each test here fails on the seed's behaviour).

mod common;

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use baton::ledger::{Arrival, BoxedChild, Child, Counts, Delegation, Delegations, RegisterError};
use common::{poll_once, within};

/// `ledger.arrive(id)` on a thread of its own, failing the test if it has
/// not returned within 10 s: an arrival that deadlocks or loops (asking a
/// child again and again) fails its test instead of hanging the binary.
fn arrive(ledger: &Delegations, id: &str) -> Arrival {
    let (sender, answer) = std::sync::mpsc::channel();
    let (ledger, id) = (ledger.clone(), id.to_owned());
    std::thread::spawn(move || {
        let _ = sender.send(ledger.arrive(&id));
    });
    answer
        .recv_timeout(Duration::from_secs(10))
        .expect("L1: arrive returns (it did not within 10 s)")
}

fn delegation(task: &str, started: Instant) -> Delegation {
    Delegation {
        task_id: task.into(),
        capsule: "worker".into(),
        version: "0.1.0".into(),
        child_session_id: "ses_child".into(),
        child_workdir: "/tmp/child".into(),
        started,
    }
}

/// A child that counts how often it was asked to end.
#[derive(Default)]
struct Counted {
    ended: AtomicUsize,
    ending: AtomicBool,
}

/// The ledger's handle on a [`Counted`] the test keeps too.
struct Handle(Arc<Counted>);

impl Child for Handle {
    fn begin_ending(&self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
        self.0.ending.store(true, Ordering::SeqCst);
    }
    fn is_being_ended(&self) -> bool {
        self.0.ending.load(Ordering::SeqCst)
    }
}

fn counted() -> Arc<Counted> {
    Arc::default()
}

fn ended(child: &Arc<Counted>) -> usize {
    child.ended.load(Ordering::SeqCst)
}

#[test]
fn a_registered_delegation_is_live_until_it_is_taken() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    assert!(ledger.live().is_empty());
    ledger
        .register("dlg_one", delegation("tsk_a", Instant::now()))
        .unwrap();
    let live = ledger.live();
    let (id, registered) = live.iter().next().expect("one live");
    assert_eq!(
        (live.len(), &**id, &*registered.capsule),
        (1, "dlg_one", "worker")
    );
    let taken = ledger.take_all();
    assert_eq!(
        taken.iter().map(|t| t.id()).collect::<Vec<_>>(),
        ["dlg_one"]
    );
    assert!(ledger.live().is_empty());
    assert!(ledger.take_all().is_empty());
}

/// A snapshot is a value of its own: it can move to another thread, and
/// what the ledger does afterwards does not reach it.
#[test]
fn a_live_snapshot_is_send_and_outlives_the_entries_it_lists() {
    fn assert_clone_send_sync<T: Clone + Send + Sync>(_: &T) {}
    let ledger = Delegations::new();
    let scope = ledger.scope_task("tsk_a").unwrap();
    ledger
        .register("dlg_one", delegation("tsk_a", Instant::now()))
        .unwrap();
    let live = ledger.live();
    assert_clone_send_sync(&live);
    drop(scope);
    assert!(ledger.live().is_empty(), "D5: the scope's end took it");
    let ids = std::thread::spawn(move || {
        live.iter()
            .map(|(id, d)| format!("{id} {}", d.capsule))
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    assert_eq!(ids, ["dlg_one worker"]);
}

/// D2: only the scoped task's delegations are kept.
#[test]
fn d2_a_delegation_is_kept_only_while_its_task_is_in_scope() {
    let ledger = Delegations::new();
    let now = Instant::now();
    assert_eq!(
        ledger.register("dlg_early", delegation("tsk_a", now)),
        Err(RegisterError::NoTaskInScope)
    );
    let scope = ledger.scope_task("tsk_b").unwrap();
    assert_eq!(ledger.task_id().as_deref(), Some("tsk_b"));
    assert!(matches!(
        ledger.register("dlg_other", delegation("tsk_a", now)),
        Err(RegisterError::OtherTask { .. })
    ));
    ledger
        .register("dlg_mine", delegation("tsk_b", now))
        .unwrap();
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 0
        }
    );
    drop(scope);
    assert_eq!(ledger.task_id(), None);
    assert!(
        ledger.live().is_empty(),
        "D5: the scope's end takes what is left"
    );
    assert_eq!(arrive(&ledger, "dlg_mine"), Arrival::NotOutstanding);
}

/// Seed defect (1): dropping an *older* scope after a newer `scope_task`
/// cleared the newer task's scope and ended its delegations.
#[test]
fn dropping_an_older_scope_leaves_the_newer_task_and_its_children_alone() {
    let ledger = Delegations::new();
    let older = ledger.scope_task("tsk_a").unwrap();
    let newer = ledger.scope_task("tsk_b").unwrap();
    ledger
        .register("dlg_b", delegation("tsk_b", Instant::now()))
        .unwrap();
    let child = counted();
    ledger.adopt("dlg_b", Box::new(Handle(Arc::clone(&child))));
    drop(older);
    assert_eq!(ledger.task_id().as_deref(), Some("tsk_b"));
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 0
        }
    );
    assert_eq!(ended(&child), 0, "D3: the newer task's child keeps running");
    drop(newer);
    assert_eq!(ended(&child), 1, "its own scope's end ends it");
}

/// Seed defect (2): the delivered set grew forever.
#[test]
fn the_delivered_memory_belongs_to_the_scope_and_is_freed_with_it() {
    let ledger = Delegations::new();
    let scope = ledger.scope_task("tsk_a").unwrap();
    for n in 0..100 {
        let id = format!("dlg_{n}");
        ledger
            .register(&id, delegation("tsk_a", Instant::now()))
            .unwrap();
        assert_eq!(arrive(&ledger, &id), Arrival::Delivered);
    }
    assert_eq!(ledger.take_arrived().len(), 100);
    assert_eq!(ledger.remembered(), 100);
    assert_eq!(
        arrive(&ledger, "dlg_7"),
        Arrival::AlreadyDelivered,
        "D1 within the scope"
    );
    drop(scope);
    assert_eq!(ledger.remembered(), 0);
}

/// Seed defect (3): `register` with a duplicate id silently replaced (and
/// orphaned) a live entry.
#[test]
fn registering_a_live_id_again_is_a_typed_error_and_keeps_the_entry_and_its_child() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    let started = Instant::now();
    ledger
        .register("dlg_a", delegation("tsk_a", started))
        .unwrap();
    let child = counted();
    ledger.adopt("dlg_a", Box::new(Handle(Arc::clone(&child))));
    let later = delegation("tsk_a", started + Duration::from_secs(1));
    assert_eq!(
        ledger.register("dlg_a", later),
        Err(RegisterError::DuplicateId)
    );
    assert_eq!(ledger.live().get("dlg_a").map(|d| d.started), Some(started));
    assert_eq!(ended(&child), 0);
    let mut taken = ledger.take_all();
    assert!(
        taken[0].take_child().is_some(),
        "the original child is still there"
    );
}

#[test]
fn the_set_delivers_each_outcome_once_and_refuses_one_nobody_waits_for() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    for id in ["dlg_a", "dlg_b"] {
        ledger
            .register(id, delegation("tsk_a", Instant::now()))
            .unwrap();
    }
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::Delivered);
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::AlreadyDelivered);
    assert_eq!(arrive(&ledger, "dlg_nobody"), Arrival::NotOutstanding);
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 1
        }
    );
    let arrived = ledger.take_arrived();
    assert_eq!(
        arrived.iter().map(|t| t.id()).collect::<Vec<_>>(),
        ["dlg_a"]
    );
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 0
        }
    );
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::AlreadyDelivered);
    let left = ledger.take_all();
    assert_eq!(left.iter().map(|t| t.id()).collect::<Vec<_>>(), ["dlg_b"]);
    assert_eq!(arrive(&ledger, "dlg_b"), Arrival::NotOutstanding);
}

#[test]
fn an_arrival_from_a_child_being_ended_is_refused() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    ledger
        .register("dlg_a", delegation("tsk_a", Instant::now()))
        .unwrap();
    let child = counted();
    child.ending.store(true, Ordering::SeqCst);
    ledger.adopt("dlg_a", Box::new(Handle(Arc::clone(&child))));
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::BeingEnded);
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 0
        }
    );
}

#[test]
fn the_backstop_takes_only_an_outstanding_delegation_past_its_bound() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    let now = Instant::now();
    let old = now
        .checked_sub(Duration::from_secs(120))
        .expect("the clock runs for 2 minutes");
    let older = now.checked_sub(Duration::from_secs(600)).unwrap_or(old);
    ledger
        .register("dlg_old", delegation("tsk_a", old))
        .unwrap();
    ledger
        .register("dlg_new", delegation("tsk_a", now))
        .unwrap();
    ledger
        .register("dlg_arrived", delegation("tsk_a", older))
        .unwrap();
    assert_eq!(arrive(&ledger, "dlg_arrived"), Arrival::Delivered);
    let child = counted();
    ledger.adopt("dlg_old", Box::new(Handle(Arc::clone(&child))));
    let bound = Duration::from_secs(60);
    assert_eq!(ledger.next_overdue(bound), Some(old + bound));
    let overdue = ledger.take_overdue(bound, now);
    assert_eq!(
        overdue.iter().map(|t| t.id()).collect::<Vec<_>>(),
        ["dlg_old"]
    );
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 1
        }
    );
    assert_eq!(ended(&child), 0, "taken, not yet ended");
    drop(overdue);
    assert_eq!(
        ended(&child),
        1,
        "D3: a taken delegation not arrived ends its child when dropped"
    );
}

#[test]
fn d3_adopting_for_an_id_that_is_not_live_or_replacing_a_child_ends_that_child() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    let stray = counted();
    ledger.adopt("dlg_missing", Box::new(Handle(Arc::clone(&stray))));
    assert_eq!(ended(&stray), 1);
    ledger
        .register("dlg_a", delegation("tsk_a", Instant::now()))
        .unwrap();
    let (first, second) = (counted(), counted());
    ledger.adopt("dlg_a", Box::new(Handle(Arc::clone(&first))));
    ledger.adopt("dlg_a", Box::new(Handle(Arc::clone(&second))));
    assert_eq!((ended(&first), ended(&second)), (1, 0));
}

#[test]
fn d3_a_scope_change_ends_children_not_arrived_and_spares_arrived_ones() {
    let ledger = Delegations::new();
    let _first = ledger.scope_task("tsk_a").unwrap();
    let (running, done) = (counted(), counted());
    for (id, child) in [("dlg_running", &running), ("dlg_done", &done)] {
        ledger
            .register(id, delegation("tsk_a", Instant::now()))
            .unwrap();
        ledger.adopt(id, Box::new(Handle(Arc::clone(child))));
    }
    assert_eq!(arrive(&ledger, "dlg_done"), Arrival::Delivered);
    let _second = ledger.scope_task("tsk_b").unwrap();
    assert_eq!((ended(&running), ended(&done)), (1, 0));
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 0,
            arrived: 0
        },
        "D5"
    );
}

#[test]
fn a_taken_child_is_the_callers_to_end() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    ledger
        .register("dlg_a", delegation("tsk_a", Instant::now()))
        .unwrap();
    let child = counted();
    ledger.adopt("dlg_a", Box::new(Handle(Arc::clone(&child))));
    let mut taken = ledger.discard("dlg_a").expect("live");
    let own = taken.take_child();
    drop(taken);
    assert_eq!(ended(&child), 0);
    assert!(own.is_some());
    assert!(ledger.discard("dlg_a").is_none());
}

/// D6: an arrival is never lost; Notify semantics.
#[tokio::test]
async fn d6_each_arrival_wakes_the_wait_for_the_next_one() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    for id in ["dlg_a", "dlg_b"] {
        ledger
            .register(id, delegation("tsk_a", Instant::now()))
            .unwrap();
    }
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::Delivered);
    let promise = "D6: an arrival nobody was waiting for resolves the next wait";
    within(promise, ledger.wait_for_arrival()).await;
    assert!(
        poll_once(pin!(ledger.wait_for_arrival())).is_pending(),
        "an arrival already woken for does not resolve the wait again"
    );
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 1
        },
        "the arrived delegation stays in the set"
    );
    let door = ledger.clone();
    let waiting = tokio::spawn(async move {
        let promise = "D6: the arrival wakes the pending wait";
        within(promise, door.wait_for_arrival()).await;
    });
    tokio::task::yield_now().await;
    assert_eq!(arrive(&ledger, "dlg_b"), Arrival::Delivered);
    within(
        "D6: the arrival wakes the pending wait (its task ends)",
        waiting,
    )
    .await
    .unwrap();
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 0,
            arrived: 2
        }
    );
    assert_eq!(ledger.waiter_count(), 0);
}

/// A ledger with `tsk_a` in scope and these delegations registered.
fn scoped_with(ids: &[&str]) -> (Delegations, baton::ledger::DelegationScope) {
    let ledger = Delegations::new();
    let scope = ledger.scope_task("tsk_a").unwrap();
    for id in ids {
        ledger
            .register(id, delegation("tsk_a", Instant::now()))
            .unwrap();
    }
    (ledger, scope)
}

/// D6 (`notify_one`, issue 22): two pending waits, then two arrivals:
/// both resolve. (Before, the second arrival coalesced into the first's
/// wake-up and the second wait stayed pending.)
#[tokio::test]
async fn d6_two_arrivals_wake_both_of_two_pending_waits() {
    let (ledger, _scope) = scoped_with(&["dlg_a", "dlg_b"]);
    let waits: Vec<_> = (0..2)
        .map(|_| {
            let ledger = ledger.clone();
            tokio::spawn(async move { ledger.wait_for_arrival().await })
        })
        .collect();
    within("both waits become pending", async {
        while ledger.waiter_count() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::Delivered);
    assert_eq!(arrive(&ledger, "dlg_b"), Arrival::Delivered);
    for wait in waits {
        within("D6: each arrival wakes one pending wait", wait)
            .await
            .unwrap();
    }
    assert_eq!(ledger.waiter_count(), 0);
    assert!(
        poll_once(pin!(ledger.wait_for_arrival())).is_pending(),
        "two arrivals, two wake-ups, both taken: no permit left"
    );
}

/// With no wait pending, arrivals coalesce into one stored permit, and each
/// wait resolves at most once for it.
#[test]
fn d6_with_no_wait_pending_arrivals_coalesce_into_one_permit() {
    let (ledger, _scope) = scoped_with(&["dlg_a", "dlg_b"]);
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::Delivered);
    assert_eq!(arrive(&ledger, "dlg_b"), Arrival::Delivered);
    assert!(poll_once(pin!(ledger.wait_for_arrival())).is_ready());
    assert!(
        poll_once(pin!(ledger.wait_for_arrival())).is_pending(),
        "two arrivals before any wait are one permit"
    );
    assert_eq!(ledger.waiter_count(), 0, "a dropped wait leaves no waker");
}

/// D6: a pending wait that was woken for an arrival and is dropped before
/// it resolves passes the wake-up on, here to the stored permit: the next
/// wait resolves at once. A wait dropped without one consumes nothing.
#[test]
fn d6_a_woken_wait_dropped_passes_its_wake_up_to_the_next_wait() {
    let (ledger, _scope) = scoped_with(&["dlg_a"]);
    let mut unwoken = Box::pin(ledger.wait_for_arrival());
    assert!(poll_once(unwoken.as_mut()).is_pending());
    drop(unwoken);
    let mut woken = Box::pin(ledger.wait_for_arrival());
    assert!(poll_once(woken.as_mut()).is_pending());
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::Delivered);
    drop(woken);
    assert_eq!(ledger.waiter_count(), 0);
    assert!(
        poll_once(pin!(ledger.wait_for_arrival())).is_ready(),
        "D6: the dropped wait's wake-up is the next wait's"
    );
}

/// D6: wake-ups given to pending waits that are dropped stay with a wait
/// that became pending after the arrival, and it is woken for them (it
/// was not woken by the arrival itself).
#[test]
fn d6_woken_waits_dropped_pass_their_wake_up_to_a_later_pending_wait_and_wake_it() {
    let (ledger, _scope) = scoped_with(&["dlg_a"]);
    let mut first = Box::pin(ledger.wait_for_arrival());
    let mut second = Box::pin(ledger.wait_for_arrival());
    assert!(poll_once(first.as_mut()).is_pending() && poll_once(second.as_mut()).is_pending());
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::Delivered);
    let wakes = Arc::new(Wakes::default());
    let waker = Waker::from(Arc::clone(&wakes));
    let mut cx = Context::from_waker(&waker);
    let mut later = Box::pin(ledger.wait_for_arrival());
    assert!(later.as_mut().poll(&mut cx).is_pending());
    drop(first);
    drop(second);
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        1,
        "D6: the later wait is woken for the wake-up it inherits"
    );
    assert!(later.as_mut().poll(&mut cx).is_ready());
    assert_eq!(ledger.waiter_count(), 0);
}

/// Diagnostics: the ledger, a scope and a taken delegation each `Debug`
/// as what identifies them and their counts (D4).
#[test]
fn the_ledger_its_scope_and_a_taken_delegation_debug_as_their_state() {
    let ledger = Delegations::new();
    assert_eq!(
        format!("{ledger:?}"),
        "Delegations { task_id: None, outstanding: 0, arrived: 0 }"
    );
    let scope = ledger.scope_task("tsk_a").unwrap();
    assert_eq!(
        format!("{scope:?}"),
        format!("DelegationScope {{ token: {:?} }}", scope.token())
    );
    for id in ["dlg_a", "dlg_b"] {
        ledger
            .register(id, delegation("tsk_a", Instant::now()))
            .unwrap();
    }
    ledger.adopt("dlg_b", Box::new(Handle(counted())));
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::Delivered);
    assert_eq!(
        format!("{ledger:?}"),
        r#"Delegations { task_id: Some("tsk_a"), outstanding: 1, arrived: 1 }"#
    );
    let taken = ledger.take_all();
    assert_eq!(
        taken
            .iter()
            .map(|t| (t.id(), t.arrived()))
            .collect::<Vec<_>>(),
        [("dlg_a", true), ("dlg_b", false)]
    );
    assert_eq!(
        taken.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>(),
        [
            r#"TakenDelegation { id: "dlg_a", arrived: true, has_child: false }"#,
            r#"TakenDelegation { id: "dlg_b", arrived: false, has_child: true }"#,
        ]
    );
    drop(scope);
}

/// A waker that counts its wake-ups.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// D6: a `Delivered` arrival wakes the pending wait itself; the wait does
/// not merely find the permit when something else happens to poll it.
#[test]
fn d6_a_delivered_arrival_wakes_the_pending_wait() {
    let ledger = Delegations::new();
    let _scope = ledger.scope_task("tsk_a").unwrap();
    ledger
        .register("dlg_a", delegation("tsk_a", Instant::now()))
        .unwrap();
    let wakes = Arc::new(Wakes::default());
    let waker = Waker::from(Arc::clone(&wakes));
    let mut wait = Box::pin(ledger.wait_for_arrival());
    let mut cx = Context::from_waker(&waker);
    assert!(wait.as_mut().poll(&mut cx).is_pending());
    assert_eq!(arrive(&ledger, "dlg_x"), Arrival::NotOutstanding);
    assert_eq!(wakes.0.load(Ordering::SeqCst), 0, "nothing delivered");
    assert_eq!(arrive(&ledger, "dlg_a"), Arrival::Delivered);
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the delivery wakes it");
    assert!(wait.as_mut().poll(&mut cx).is_ready());
}

/// A child that, asked whether it is being ended, calls back into the
/// ledger that holds it.
struct Reentrant(Delegations);

impl Child for Reentrant {
    fn begin_ending(&self) {}
    fn is_being_ended(&self) -> bool {
        self.0.counts().outstanding == usize::MAX
    }
}

/// Issue 22: `Child::is_being_ended` used to run under the ledger's lock,
/// so a child calling back into the ledger deadlocked its own arrival. It
/// is asked outside the lock now. The whole ledger lives on another thread
/// so that, were it to deadlock, this test fails after 3 s instead of
/// hanging on the scope's drop.
#[test]
fn a_child_asked_whether_it_is_being_ended_may_call_back_into_the_ledger() {
    let (sender, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (ledger, _scope) = scoped_with(&["dlg_a"]);
        ledger.adopt("dlg_a", Box::new(Reentrant(ledger.clone())));
        let arrival = ledger.arrive("dlg_a");
        let _ = sender.send((arrival, ledger.counts()));
        drop(ledger.take_all());
    });
    assert_eq!(
        answers.recv_timeout(Duration::from_secs(3)),
        Ok((
            Arrival::Delivered,
            Counts {
                outstanding: 0,
                arrived: 1
            }
        )),
        "arrive did not return within 3 s"
    );
}

/// Issue 22: a task id is checked as delegation ids are (`scope_task("")`
/// and `scope_task("t\n")` were accepted); a refusal leaves the current
/// scope and its delegations alone.
#[test]
fn scope_task_refuses_an_invalid_task_id_and_keeps_the_current_scope() {
    use baton::facts::IdError;
    let (ledger, scope) = scoped_with(&["dlg_a"]);
    for (task, error) in [("", IdError::Empty), ("t\n", IdError::ControlCharacter)] {
        assert_eq!(ledger.scope_task(task).map(|_| ()), Err(error));
    }
    let long = "t".repeat(257);
    assert_eq!(
        ledger.scope_task(long).map(|_| ()),
        Err(IdError::TooLong(257))
    );
    assert_eq!(ledger.task_id().as_deref(), Some("tsk_a"));
    assert_eq!(
        ledger.counts(),
        Counts {
            outstanding: 1,
            arrived: 0
        }
    );
    drop(scope);
}

/// Issue 22: `discard` hands the delegation back like every take (D3):
/// dropping it ends a child that has not arrived, one that arrived is left
/// alone, and a caller that closes the child itself takes it first (the
/// `#[must_use]` on `discard` and `TakenDelegation` says so at compile
/// time; the doctest on `discard` checks the lint fires).
#[test]
fn a_discarded_delegation_dropped_ends_its_child_unless_it_arrived() {
    let (ledger, _scope) = scoped_with(&["dlg_running", "dlg_done"]);
    let (running, done) = (counted(), counted());
    ledger.adopt("dlg_running", Box::new(Handle(Arc::clone(&running))));
    ledger.adopt("dlg_done", Box::new(Handle(Arc::clone(&done))));
    assert_eq!(arrive(&ledger, "dlg_done"), Arrival::Delivered);
    drop(ledger.discard("dlg_running"));
    drop(ledger.discard("dlg_done"));
    assert_eq!(
        (ended(&running), ended(&done)),
        (1, 0),
        "D3: the discarded child not arrived is ended, the arrived one is not"
    );
}

/// A child that, asked whether it is being ended, first has the ledger
/// replace it (an `adopt` from inside the question), then says yes.
struct ReplacedWhileAsked {
    ledger: Delegations,
    replacement: std::sync::Mutex<Option<BoxedChild>>,
}

impl Child for ReplacedWhileAsked {
    fn begin_ending(&self) {}
    fn is_being_ended(&self) -> bool {
        if let Some(next) = self.replacement.lock().unwrap().take() {
            self.ledger.adopt("dlg_a", next);
        }
        true
    }
}

/// A child that is never being ended.
struct Running;

impl Child for Running {
    fn begin_ending(&self) {}
    fn is_being_ended(&self) -> bool {
        false
    }
}

/// D1/D3: an arrival decides on the answer of the child the entry has when
/// it decides. The question is asked outside the lock, so the child can be
/// replaced meanwhile (here from inside the question itself, so the order
/// is fixed by construction): the old child's "being ended" must not refuse
/// the new child's outcome; the new child is asked, and the outcome is
/// delivered.
#[test]
fn d1_an_arrival_asks_again_when_the_child_was_replaced_while_it_was_asked() {
    let (sender, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (ledger, _scope) = scoped_with(&["dlg_a"]);
        ledger.adopt(
            "dlg_a",
            Box::new(ReplacedWhileAsked {
                ledger: ledger.clone(),
                replacement: std::sync::Mutex::new(Some(Box::new(Running))),
            }),
        );
        let _ = sender.send(ledger.arrive("dlg_a"));
        drop(ledger.take_all());
    });
    assert_eq!(
        answers.recv_timeout(Duration::from_secs(3)),
        Ok(Arrival::Delivered),
        "the replacement, not being ended, is the child the arrival decides on"
    );
}
