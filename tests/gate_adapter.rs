//! The async adapter against SPEC §1: the seed's scenarios, its measured
//! defect, every error, and every row of the cancel-safety table. Every test
//! ends with no waker left registered.

mod common;

use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use baton::gate::core::{State, StateKind, Ticket};
use baton::{
    BoundaryError, CancelSignal, CommitError, GateError, HandoffIntent, IntentError, ReadyError,
    WaitError,
};
use common::*;

fn kind(gate: &Gate) -> StateKind {
    gate.state().kind()
}

/// The seed's test, ported: failed preflight releases; cancellation prevents
/// commit; a stale held handle dropped later does not release a newer
/// reservation with the same intent (S2); close is not a seal (S5).
#[tokio::test]
async fn the_seed_scenario_holds_with_tickets_instead_of_pointer_identity() {
    let gate = gate();
    let requester = gate.requester();
    let cancel = CancelSignal::new();

    let reservation = requester.reserve(intent()).unwrap();
    let (result, held) = within(
        "S8: a failed preflight resolves the boundary and ready with None",
        async { tokio::join!(gate.boundary(&cancel, failed), reservation.ready()) },
    )
    .await;
    assert_eq!(result, Ok(None), "S8: failed preflight releases the Run");
    assert!(
        matches!(held, Err(ReadyError::Released)),
        "S8: ready says the worker released the Run"
    );
    assert_eq!(kind(&gate), StateKind::Running);

    let reservation = requester.reserve(intent()).unwrap();
    let promise = "L1: the boundary resolves once cancellation refused the commit";
    let (result, ()) = within(promise, async {
        tokio::join!(gate.boundary(&cancel, prepared), async {
            let held = reservation.ready().await.unwrap();
            cancel.cancel();
            assert!(
                matches!(held.commit(), Err(CommitError::Canceled)),
                "S3: cancellation prevents commit"
            );
        })
    })
    .await;
    assert_eq!(result, Ok(None));

    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let promise = "L1: cancellation while held resolves the boundary";
    let (result, stale) = within(promise, async {
        tokio::join!(gate.boundary(&cancel, prepared), async {
            let held = reservation.ready().await.unwrap();
            cancel.cancel();
            held
        })
    })
    .await;
    assert_eq!(result, Ok(None));

    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let before = requester.version();
    drop(stale);
    assert_eq!(
        requester.version(),
        before,
        "S2: the stale held handle changed nothing"
    );
    let (result, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
    let paused = result.expect("committed");
    gate.close();
    let sealed = within("L1: close ends the pending seal", pending.wait()).await;
    assert_eq!(sealed, Err(WaitError::Closed), "S5: close is not a seal");
    assert_eq!(
        requester.reserve(Arc::clone(&paused.intent)).map(|_| ()),
        Err(GateError::Closed)
    );
    assert_eq!(gate.waiter_count(), 0);
}

/// The seed's measured defect: a worker that dropped its gate without
/// `close()` left `ready()` and `wait()` pending forever. Here the drop
/// closes, and both resolve `None` (L1).
#[tokio::test]
async fn a_worker_that_drops_its_gate_resolves_ready_and_wait_with_none() {
    let gate = gate();
    let requester = gate.requester();
    let reservation = requester.reserve(intent()).unwrap();
    let mut ready = pin!(reservation.ready());
    assert!(poll_once(ready.as_mut()).is_pending());
    assert_eq!(requester.waiter_count(), 1);
    drop(gate);
    assert!(matches!(
        within("L1: the worker's drop ends the pending ready", ready).await,
        Err(ReadyError::Closed)
    ));
    assert_eq!(requester.state(), State::Closed);

    let gate = common::gate();
    let requester = gate.requester();
    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
    assert!(paused.is_some());
    let mut wait = pin!(pending.wait());
    assert!(poll_once(wait.as_mut()).is_pending());
    drop(gate);
    assert_eq!(
        within("L1: the worker's exit ends the pending seal", wait).await,
        Err(WaitError::Closed)
    );
    assert_eq!(requester.waiter_count(), 0);
}

#[tokio::test]
async fn a_full_handoff_seals_and_the_requester_receives_the_sealed_pause() {
    let gate = gate();
    let requester = gate.requester();
    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let (paused, pending) = within(COMMIT_AT_BOUNDARY, async {
        tokio::join!(gate.boundary(&cancel, prepared), async {
            let held = reservation.ready().await.unwrap();
            assert_eq!(held.preview(), &pause_for(intent()), "S7: its own pause");
            held.commit().unwrap()
        })
    })
    .await;
    let paused = paused.unwrap().expect("committed");
    assert!(
        !gate.sealed(&pause_for(intent_named("forged"))),
        "S5: no forged seal"
    );
    assert!(gate.sealed(&paused));
    assert!(!gate.sealed(&paused), "S6: sealing twice changes nothing");
    assert_eq!(within(SEALED, pending.wait()).await, Ok(paused));
    gate.close();
    assert_eq!(
        kind(&gate),
        StateKind::Sealed,
        "S6: close leaves a sealed gate sealed"
    );
    assert_eq!(
        requester.reserve(intent()).map(|_| ()),
        Err(GateError::HandedOff)
    );
    assert_eq!(gate.waiter_count(), 0);
}

#[test]
fn s1_a_second_reserve_is_busy_and_retryable_while_the_first_is_live() {
    let gate = gate();
    let requester = gate.requester();
    let first = requester.reserve(intent()).unwrap();
    let second = requester.reserve(intent_named("other")).unwrap_err();
    assert_eq!(second, GateError::Busy);
    assert!(second.is_retryable());
    drop(first);
    assert!(requester.reserve(intent_named("other")).is_ok());
}

#[tokio::test]
async fn reserve_after_commit_is_handed_off_and_final() {
    let gate = gate();
    let requester = gate.requester();
    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let (_, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
    let error = requester.reserve(intent_named("late")).unwrap_err();
    assert_eq!(error, GateError::HandedOff);
    assert!(!error.is_retryable());
    drop(pending);
    assert_eq!(
        kind(&gate),
        StateKind::Committed,
        "dropping a PendingSeal changes nothing"
    );
}

#[test]
fn reserve_on_a_closed_gate_is_closed_and_final() {
    let gate = gate();
    gate.close();
    let error = gate.requester().reserve(intent()).unwrap_err();
    assert_eq!(error, GateError::Closed);
    assert!(!error.is_retryable());
}

/// S9: bad input changes nothing, in every state it can meet.
#[test]
fn s9_invalid_intents_are_invalid_input_and_change_nothing() {
    let gate = gate();
    let requester = gate.requester();
    type Expected = fn(&IntentError) -> bool;
    let bad: [(HandoffIntent, Expected); 4] = [
        (
            HandoffIntent {
                handoff_id: String::new(),
                ..intent()
            },
            |e| matches!(e, IntentError::Empty(_)),
        ),
        (
            HandoffIntent {
                claim_id: "x".repeat(257),
                ..intent()
            },
            |e| matches!(e, IntentError::TooLong { .. }),
        ),
        (
            HandoffIntent {
                successor_run_id: "run".into(),
                ..intent()
            },
            |e| matches!(e, IntentError::SuccessorIsSource(_)),
        ),
        (
            HandoffIntent {
                root_run_id: "other".into(),
                ..intent()
            },
            |e| matches!(e, IntentError::OtherRootRun { .. }),
        ),
    ];
    let check = |label: &str| {
        for (intent, expected) in &bad {
            let before = (requester.state(), requester.version());
            match requester.reserve(intent.clone()) {
                Err(GateError::InvalidInput(error)) => {
                    assert!(expected(&error), "{label}: {error}")
                }
                other => panic!("{label}: expected InvalidInput, got {other:?}"),
            }
            assert_eq!((requester.state(), requester.version()), before, "{label}");
        }
    };
    check("running");
    let live = requester.reserve(intent()).unwrap();
    check("requested");
    drop(live);
    gate.close();
    check("closed");
}

#[test]
fn tickets_of_successive_reservations_are_distinct_and_increasing() {
    let gate = gate();
    let requester = gate.requester();
    let tickets: Vec<Ticket> = (0..5)
        .map(|_| requester.reserve(intent()).unwrap().ticket())
        .collect();
    assert!(tickets.windows(2).all(|w| w[0] < w[1]), "{tickets:?}");
}

// ---- The cancel-safety table, one test per row. ----

/// Row: `HandoffReservation` dropped → `Cancel(T)`.
#[test]
fn dropping_a_reservation_releases_the_run() {
    let gate = gate();
    let reservation = gate.requester().reserve(intent()).unwrap();
    assert_eq!(kind(&gate), StateKind::Requested);
    drop(reservation);
    assert_eq!(kind(&gate), StateKind::Running);
}

/// Row: the `ready()` future dropped → `Cancel(T)`.
#[test]
fn dropping_a_pending_ready_future_releases_the_run_and_its_waker() {
    let gate = gate();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let mut ready = Box::pin(reservation.ready());
    assert!(poll_once(ready.as_mut()).is_pending());
    assert_eq!(gate.waiter_count(), 1);
    drop(ready);
    assert_eq!(kind(&gate), StateKind::Running);
    assert_eq!(gate.waiter_count(), 0);
}

/// Row: `HeldHandoff` dropped without `commit` → `Cancel(T)`; the worker's
/// boundary resolves `None` and the Run continues.
#[tokio::test]
async fn dropping_a_held_handoff_releases_the_run_and_the_boundary_returns_none() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let promise = "L1: the boundary resolves once the held handoff is dropped";
    let (result, ()) = within(promise, async {
        tokio::join!(gate.boundary(&cancel, prepared), async {
            drop(reservation.ready().await.unwrap());
        })
    })
    .await;
    assert_eq!(result, Ok(None));
    assert_eq!(kind(&gate), StateKind::Running);
    assert_eq!(gate.waiter_count(), 0);
}

/// Row: `boundary` future dropped during preflight → `Cancel(T)`.
#[tokio::test]
async fn dropping_the_boundary_during_preflight_releases_the_run() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    {
        let mut boundary = pin!(gate.boundary(&cancel, |_| std::future::pending()));
        assert!(poll_once(boundary.as_mut()).is_pending());
        assert_eq!(kind(&gate), StateKind::Requested);
    }
    assert_eq!(kind(&gate), StateKind::Running);
    let promise = "L1: ready resolves once the dropped boundary released the Run";
    assert!(matches!(
        within(promise, reservation.ready()).await,
        Err(ReadyError::Released)
    ));
    assert_eq!(gate.waiter_count(), 0);
}

/// Row: `boundary` future dropped while Held → `Cancel(T)`.
#[tokio::test]
async fn dropping_the_boundary_while_held_releases_the_run_and_commit_fails() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let held = {
        let mut boundary = pin!(gate.boundary(&cancel, prepared));
        assert!(poll_once(boundary.as_mut()).is_pending());
        assert_eq!(kind(&gate), StateKind::Held);
        assert_eq!(gate.waiter_count(), 1);
        within(HELD, reservation.ready()).await.unwrap()
    };
    assert_eq!(kind(&gate), StateKind::Running);
    assert!(matches!(held.commit(), Err(CommitError::Released)));
    assert_eq!(gate.waiter_count(), 0);
}

/// Row: a panicking preflight releases the Run while the panic propagates.
#[tokio::test]
async fn a_panicking_preflight_releases_the_run_while_the_panic_propagates() {
    let gate = std::sync::Arc::new(gate());
    let reservation = gate.requester().reserve(intent()).unwrap();
    let worker = std::sync::Arc::clone(&gate);
    let task = tokio::spawn(async move {
        let cancel = CancelSignal::new();
        worker
            .boundary(&cancel, |_| async { panic!("preflight failed hard") })
            .await
    });
    let panicked = within("the panicking worker's task ends", task)
        .await
        .unwrap_err();
    assert!(panicked.is_panic());
    assert_eq!(kind(&gate), StateKind::Running);
    let promise = "L1: ready resolves once the panicking preflight released the Run";
    assert!(matches!(
        within(promise, reservation.ready()).await,
        Err(ReadyError::Released)
    ));
    assert_eq!(gate.waiter_count(), 0);
}

/// Row: `boundary` future dropped once Committed → nothing; the worker still
/// seals (or closes).
#[tokio::test]
async fn dropping_the_boundary_once_committed_changes_nothing() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let pending = {
        let mut boundary = pin!(gate.boundary(&cancel, prepared));
        assert!(poll_once(boundary.as_mut()).is_pending());
        within(HELD, reservation.ready())
            .await
            .unwrap()
            .commit()
            .unwrap()
    };
    assert_eq!(
        kind(&gate),
        StateKind::Committed,
        "S4: the commit is irreversible"
    );
    assert!(gate.sealed(&pause_for(intent())));
    let sealed = within(SEALED, pending.wait()).await;
    assert_eq!(sealed.as_deref(), Ok(&pause_for(intent())));
    assert_eq!(gate.waiter_count(), 0);
}

/// Row: `boundary` future dropped once Committed → the next boundary learns
/// of the commit: it returns the committed pause at once, without preflight
/// or any event, so a worker that merely keeps reaching boundaries ends the
/// handoff (L3).
#[tokio::test]
async fn a_boundary_after_a_lost_committed_boundary_returns_the_committed_pause() {
    let gate = gate();
    let requester = gate.requester();
    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let pending = {
        let mut boundary = pin!(gate.boundary(&cancel, prepared));
        assert!(poll_once(boundary.as_mut()).is_pending());
        within(HELD, reservation.ready())
            .await
            .unwrap()
            .commit()
            .unwrap()
    };
    let version = requester.version();
    let mut next = pin!(
        gate.boundary(&cancel, |_| -> std::future::Ready<Option<Pause>> {
            panic!("preflight must not run once committed")
        })
    );
    let Poll::Ready(Ok(Some(pause))) = poll_once(next.as_mut()) else {
        panic!("the first poll returns the committed pause");
    };
    assert_eq!(*pause, pause_for(intent()));
    assert_eq!(
        (kind(&gate), requester.version()),
        (StateKind::Committed, version),
        "learning of the commit changes nothing"
    );
    assert!(gate.sealed(&pause));
    let sealed = within(SEALED, pending.wait()).await;
    assert_eq!(sealed.as_deref(), Ok(&pause_for(intent())));
    assert_eq!(gate.waiter_count(), 0);
}

/// Row: `PendingSeal` or its `wait()` future dropped → nothing.
#[tokio::test]
async fn dropping_a_pending_seal_or_its_wait_future_changes_nothing() {
    let gate = gate();
    let requester = gate.requester();
    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let (_, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
    let version = requester.version();
    let mut wait = Box::pin(pending.wait());
    assert!(poll_once(wait.as_mut()).is_pending());
    drop(wait);
    assert_eq!(
        (kind(&gate), requester.version()),
        (StateKind::Committed, version)
    );
    assert_eq!(
        gate.waiter_count(),
        0,
        "the dropped future took its waker with it"
    );
}

/// Row: `HandoffGate` dropped → `Close`.
#[test]
fn dropping_the_gate_closes_it() {
    let gate = gate();
    let requester = gate.requester();
    drop(gate);
    assert_eq!(requester.state(), State::Closed);
    assert_eq!(requester.reserve(intent()).unwrap_err(), GateError::Closed);
}

// ---- Cancellation. ----

/// S3: once the Run is canceled, commit is refused even before the worker's
/// boundary has noticed (the gate reads the bit at commit time).
#[tokio::test]
async fn s3_commit_reads_the_cancel_bit_at_the_moment_it_commits() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let mut boundary = pin!(gate.boundary(&cancel, prepared));
    assert!(poll_once(boundary.as_mut()).is_pending());
    let held = within(HELD, reservation.ready()).await.unwrap();
    cancel.cancel();
    assert_eq!(kind(&gate), StateKind::Held, "the boundary has not run yet");
    assert!(matches!(held.commit(), Err(CommitError::Canceled)), "S3");
    assert_eq!(
        kind(&gate),
        StateKind::Running,
        "the refused held handle released the Run"
    );
    let promise = "L1: the boundary resolves once the refused commit released the Run";
    assert_eq!(within(promise, boundary).await, Ok(None));
    assert_eq!(gate.waiter_count(), 0);
}

#[tokio::test]
async fn cancellation_while_held_releases_the_run_from_the_boundary() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let mut boundary = pin!(gate.boundary(&cancel, prepared));
    assert!(poll_once(boundary.as_mut()).is_pending());
    let held = within(HELD, reservation.ready()).await.unwrap();
    cancel.cancel();
    let promise = "L1: cancellation while held resolves the boundary";
    assert_eq!(within(promise, boundary).await, Ok(None));
    assert_eq!(kind(&gate), StateKind::Running);
    assert!(matches!(held.commit(), Err(CommitError::Released)));
    assert_eq!(cancel.waiter_count() + gate.waiter_count(), 0);
}

#[tokio::test]
async fn a_commit_that_wins_the_race_with_cancellation_stands() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let mut boundary = pin!(gate.boundary(&cancel, prepared));
    assert!(poll_once(boundary.as_mut()).is_pending());
    let pending = within(HELD, reservation.ready())
        .await
        .unwrap()
        .commit()
        .unwrap();
    cancel.cancel();
    assert_eq!(
        within(COMMITTED, boundary).await,
        Ok(Some(Arc::new(pause_for(intent())))),
        "S4: no way back after commit"
    );
    drop(pending);
    assert_eq!(gate.waiter_count(), 0);
}

#[tokio::test]
async fn cancellation_already_fired_at_preflight_releases_the_run() {
    let gate = gate();
    let cancel = CancelSignal::new();
    cancel.cancel();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let (result, held) = within(
        "S8: a fired cancel resolves the boundary and ready with None",
        async { tokio::join!(gate.boundary(&cancel, prepared), reservation.ready()) },
    )
    .await;
    assert_eq!(result, Ok(None), "S8");
    assert!(matches!(held, Err(ReadyError::Released)), "S8");
    assert_eq!(kind(&gate), StateKind::Running);
}

#[tokio::test]
async fn a_pause_for_another_intent_releases_the_run() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let mismatched = |_| std::future::ready(Some(pause_for(intent_named("other"))));
    let (result, held) = within(
        "S8: a mismatched pause resolves the boundary and ready with None",
        async { tokio::join!(gate.boundary(&cancel, mismatched), reservation.ready()) },
    )
    .await;
    assert_eq!(result, Ok(None), "S8");
    assert!(matches!(held, Err(ReadyError::Released)), "S8");
    assert_eq!(kind(&gate), StateKind::Running);
}

#[tokio::test]
async fn a_boundary_with_no_request_returns_at_once_without_running_preflight() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let boundary = gate.boundary(&cancel, |_| -> std::future::Ready<Option<Pause>> {
        panic!("preflight must not run")
    });
    let result = within("a boundary with no request returns at once", boundary).await;
    assert_eq!(result, Ok(None));
    assert_eq!(gate.requester().version(), 0);
}

#[tokio::test]
async fn the_boundary_is_send_so_workers_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let gate = gate();
    let cancel = CancelSignal::new();
    let boundary = gate.boundary(&cancel, prepared);
    assert_send(&boundary);
    let reservation = gate.requester().reserve(intent()).unwrap();
    let ready = reservation.ready();
    assert_send(&ready);
    drop((boundary, ready));
    fn assert_clone_send_sync<T: Clone + Send + Sync>() {}
    assert_clone_send_sync::<baton::HandoffRequester<baton::HandoffExecution>>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_requesters_on_a_multi_thread_runtime_hand_off_exactly_once() {
    let runtime = tokio::runtime::Handle::current();
    let gate = std::sync::Arc::new(gate());
    let cancel = CancelSignal::new();
    let mut tasks = Vec::new();
    for n in 0..8 {
        let requester = gate.requester();
        tasks.push(runtime.spawn(async move {
            loop {
                match requester.reserve(intent_named(&format!("h{n}"))) {
                    Ok(reservation) => match within(HELD, reservation.ready()).await {
                        Ok(held) => return held.commit().ok().map(|pending| (n, pending)),
                        Err(_) => continue,
                    },
                    Err(GateError::Busy) => tokio::task::yield_now().await,
                    Err(_) => return None,
                }
            }
        }));
    }
    let promise = "L2: one requester's reservation reaches the boundary and commits";
    let paused = within(promise, async {
        loop {
            if let Some(paused) = gate.boundary(&cancel, prepared).await.expect("open") {
                break paused;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(gate.sealed(&paused));
    let mut winners = Vec::new();
    for task in tasks {
        let outcome = within(
            "L2: each requester's reservation is held, released or closed (its task ends)",
            task,
        )
        .await;
        if let Some((n, pending)) = outcome.unwrap() {
            assert_eq!(within(SEALED, pending.wait()).await.as_ref(), Ok(&paused));
            winners.push(n);
        }
    }
    assert_eq!(winners.len(), 1, "S1: exactly one handoff: {winners:?}");
    assert_eq!(gate.waiter_count(), 0);
}

#[test]
fn the_gate_and_its_requesters_name_the_root_run() {
    let gate = gate();
    assert_eq!(gate.root_run_id(), "run");
    assert_eq!(gate.requester().root_run_id(), "run");
}

/// Diagnostics: every handle's `Debug` names what identifies it — the
/// gate and its requesters their root Run, the handoff handles their ticket.
#[tokio::test]
async fn every_handle_debugs_with_its_root_run_or_ticket() {
    let gate = gate();
    let requester = gate.requester();
    assert_eq!(
        format!("{gate:?}"),
        r#"HandoffGate { root_run_id: "run", .. }"#
    );
    assert_eq!(
        format!("{requester:?}"),
        r#"HandoffRequester { root_run_id: "run", .. }"#
    );
    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let ticket = reservation.ticket();
    assert_eq!(
        format!("{reservation:?}"),
        format!("HandoffReservation {{ ticket: {ticket:?}, .. }}")
    );
    let mut boundary = pin!(gate.boundary(&cancel, prepared));
    assert!(poll_once(boundary.as_mut()).is_pending());
    let held = within(HELD, reservation.ready()).await.unwrap();
    assert_eq!(
        format!("{held:?}"),
        format!("HeldHandoff {{ ticket: {ticket:?}, .. }}")
    );
    let pending = held.commit().unwrap();
    assert_eq!(
        format!("{pending:?}"),
        format!("PendingSeal {{ ticket: {ticket:?}, .. }}")
    );
    let pause = within(COMMITTED, boundary)
        .await
        .unwrap()
        .expect("committed");
    assert!(gate.sealed(&pause));
    assert_eq!(within(SEALED, pending.wait()).await, Ok(pause));
}

/// A payload that counts its clones on the current thread.
#[derive(Debug, PartialEq)]
struct CountsClones(u32);

thread_local! {
    static CLONES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Clone for CountsClones {
    fn clone(&self) -> Self {
        CLONES.with(|clones| clones.set(clones.get() + 1));
        Self(self.0)
    }
}

/// One pause from preflight to seal (S5 without a copy): the intent a
/// requester reserves is the one its preflight receives; the pause
/// `boundary` returns, the one the requester previews, the one `sealed`
/// seals and the one `wait` returns are a single allocation; neither the
/// ids nor the runtime's payload are ever copied.
#[tokio::test]
async fn a_handoff_shares_one_intent_and_one_pause_from_reserve_to_seal() {
    let gate = baton::HandoffGate::<CountsClones>::new(source(), "run".into());
    let cancel = CancelSignal::new();
    let clones = || CLONES.with(std::cell::Cell::get);
    let before = clones();
    let reserved = Arc::new(intent());
    let reservation = gate.requester().reserve(Arc::clone(&reserved)).unwrap();
    let (paused, (previewed, pending)) = within(COMMIT_AT_BOUNDARY, async {
        tokio::join!(
            gate.boundary(&cancel, |intent| {
                assert!(Arc::ptr_eq(&intent, &reserved), "preflight got a copy");
                std::future::ready(Some(baton::HandoffPause::new(intent, CountsClones(7))))
            }),
            async {
                let held = reservation.ready().await.unwrap();
                let previewed: *const _ = held.preview();
                (previewed, held.commit().unwrap())
            }
        )
    })
    .await;
    let paused = paused.expect("open").expect("committed");
    assert!(
        Arc::ptr_eq(&paused.intent, &reserved),
        "the pause's intent was copied"
    );
    assert!(
        std::ptr::eq(previewed, Arc::as_ptr(&paused)),
        "preview is a copy"
    );
    assert!(gate.sealed(&paused));
    let sealed = within(SEALED, pending.wait()).await.expect("S5: sealed");
    assert!(Arc::ptr_eq(&sealed, &paused), "wait returned a copy");
    assert_eq!(clones(), before, "the payload was cloned");
}

// ---- Typed answers: each handle says why it got no handoff. ----

/// S7 / L1: a `ready()` first polled after its request was let go and
/// another reservation handed the Run off says `HandedOff`, not merely
/// "released".
#[tokio::test]
async fn ready_says_handed_off_when_another_reservation_handed_the_run_off() {
    let gate = gate();
    let requester = gate.requester();
    let cancel = CancelSignal::new();
    let first = requester.reserve(intent_named("first")).unwrap();
    let mut late = pin!(first.ready());
    // The worker's preflight fails for the first request: released.
    assert_eq!(
        within(
            "a failed preflight resolves the boundary",
            gate.boundary(&cancel, failed)
        )
        .await,
        Ok(None)
    );
    let second = requester.reserve(intent()).unwrap();
    let (paused, pending) = commit_at_boundary(&gate, &cancel, second).await;
    assert!(gate.sealed(&paused.expect("committed")));
    assert!(matches!(
        poll_once(late.as_mut()),
        Poll::Ready(Err(ReadyError::HandedOff))
    ));
    assert!(within(SEALED, pending.wait()).await.is_ok());
    assert_eq!(gate.waiter_count(), 0);
}

/// S6 / L1: once the gate is sealed or closed, `boundary` says so instead
/// of "no handoff asked", so the worker knows to stop using it.
#[tokio::test]
async fn a_boundary_on_a_sealed_or_closed_gate_says_which() {
    let gate = gate();
    let requester = gate.requester();
    let cancel = CancelSignal::new();
    let reservation = requester.reserve(intent()).unwrap();
    let (paused, _pending) = commit_at_boundary(&gate, &cancel, reservation).await;
    assert!(gate.sealed(&paused.expect("committed")));
    assert_eq!(
        gate.boundary(&cancel, prepared).await,
        Err(BoundaryError::HandedOff)
    );

    let gate = common::gate();
    gate.close();
    assert_eq!(
        gate.boundary(&cancel, prepared).await,
        Err(BoundaryError::Closed)
    );
}

/// S3 / L1: a held handoff whose gate the worker closed fails its commit
/// with `Closed`; a requester's whole path (`ready()?.commit()`) carries
/// the reason through `?`.
#[tokio::test]
async fn a_commit_after_the_worker_closed_the_gate_says_closed() {
    let gate = gate();
    let cancel = CancelSignal::new();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let mut boundary = pin!(gate.boundary(&cancel, prepared));
    assert!(poll_once(boundary.as_mut()).is_pending());
    let held = within(HELD, reservation.ready()).await.unwrap();
    gate.close();
    assert!(matches!(held.commit(), Err(CommitError::Closed)));
    assert_eq!(
        within("L1: close resolves the held boundary", boundary).await,
        Err(BoundaryError::Closed)
    );

    let gate = common::gate();
    let reservation = gate.requester().reserve(intent()).unwrap();
    drop(gate);
    let path = async { reservation.ready().await?.commit() };
    assert!(matches!(
        within("L1: the dropped gate ends the requester's path", path).await,
        Err(CommitError::Closed)
    ));
}

/// A payload whose `PartialEq` takes the gate's lock (through a requester's
/// `waiter_count`) and is not reflexive: equal to every other value, never
/// to itself (as `f64::NAN` is the other way round).
#[derive(Debug)]
struct Reentrant {
    requester: Arc<std::sync::OnceLock<baton::HandoffRequester<Reentrant>>>,
    compared: Arc<std::sync::atomic::AtomicUsize>,
}

impl PartialEq for Reentrant {
    fn eq(&self, other: &Self) -> bool {
        if let Some(requester) = self.requester.get() {
            let _ = requester.waiter_count();
        }
        self.compared
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        !std::ptr::eq(self, other)
    }
}

/// S5: `sealed` knows the pause `boundary` returned by pointer, calling no
/// `PartialEq` (this payload is not equal to itself, and its `PartialEq`
/// takes the gate's lock: called under it, a deadlock); another pause equal
/// by value (here, a payload that does not call back) seals the gate's own
/// `Arc`. The first failed before: `sealed` compared by value under the
/// lock, so it deadlocked.
#[test]
fn s5_sealed_knows_its_own_pause_by_pointer_and_seals_its_own_arc() {
    fn committed(
        copy: bool,
    ) -> (
        bool,
        Arc<baton::HandoffPause<Reentrant>>,
        Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let gate = baton::HandoffGate::<Reentrant>::new(source(), "run".into());
        let requester = Arc::new(std::sync::OnceLock::new());
        if !copy {
            let _ = requester.set(gate.requester());
        }
        let compared = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let payload = || Reentrant {
            requester: Arc::clone(&requester),
            compared: Arc::clone(&compared),
        };
        let cancel = CancelSignal::new();
        let reservation = gate.requester().reserve(intent()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (paused, _pending) = runtime.block_on(async {
            tokio::join!(
                gate.boundary(&cancel, |intent| std::future::ready(Some(
                    baton::HandoffPause::new(intent, payload())
                ))),
                async { reservation.ready().await.unwrap().commit().unwrap() }
            )
        });
        let paused = paused.unwrap().expect("committed");
        let sealed = if copy {
            gate.sealed(&baton::HandoffPause::new(intent(), payload()))
        } else {
            gate.sealed(&paused)
        };
        assert!(
            matches!(gate.state(), State::Sealed { pause, .. } if Arc::ptr_eq(&pause, &paused))
                == sealed
        );
        (sealed, paused, compared)
    }

    /// `committed(copy)` on a thread of its own: a deadlock fails the test.
    fn returns(copy: bool) -> (bool, usize) {
        let (done, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (sealed, _, compared) = committed(copy);
            let _ = done.send((sealed, compared.load(std::sync::atomic::Ordering::Relaxed)));
        });
        outcome
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("sealed returns: its own pause needs no payload code under the gate's lock")
    }

    let (sealed, compared) = returns(false);
    assert!(sealed, "S5: the pause boundary returned seals by pointer");
    assert_eq!(compared, 0, "its own pause: no PartialEq called");
    let (sealed, compared) = returns(true);
    assert!(sealed, "S5: an equal pause seals the gate's own");
    assert_eq!(compared, 1, "compared once");
}
