//! The cancel signal (SPEC §3) and the `Cancellation` interface.

mod common;

use std::pin::pin;
use std::str::FromStr;

use baton::cancel::UnknownPhase;
use baton::{CancelSignal, Cancellation, Phase};
use common::{poll_once, within};

#[test]
fn the_phase_defaults_to_turn_and_the_first_phase_noted_wins() {
    let signal = CancelSignal::new();
    assert_eq!(signal.phase(), Phase::Turn);
    signal.note_phase(Phase::Delegation);
    signal.clone().note_phase(Phase::Shell);
    assert_eq!(signal.phase(), Phase::Delegation);
    signal.cancel();
    signal.note_phase(Phase::DoneCheck);
    assert_eq!(
        signal.phase(),
        Phase::Delegation,
        "cancellation does not reset the phase"
    );
}

#[test]
fn every_phase_round_trips_through_its_wire_word() {
    let words = [
        "queued",
        "turn",
        "inference",
        "input",
        "delegation",
        "member_call",
        "harness",
        "plan",
        "background_wait",
        "shell",
        "done_check",
    ];
    assert_eq!(Phase::ALL.len(), words.len());
    for (phase, word) in Phase::ALL.into_iter().zip(words) {
        assert_eq!(phase.as_str(), word);
        assert_eq!(phase.to_string(), word);
        assert_eq!(Phase::from_str(word), Ok(phase));
        assert_eq!(
            serde_json::to_string(&phase).unwrap(),
            format!("\"{word}\"")
        );
        assert_eq!(
            serde_json::from_str::<Phase>(&format!("\"{word}\"")).unwrap(),
            phase
        );
    }
    let unknown: UnknownPhase = Phase::from_str("Turn").unwrap_err();
    assert_eq!(unknown.text(), "Turn");
    assert_eq!(unknown.to_string(), r#"unknown phase "Turn""#);
    assert!(serde_json::from_str::<Phase>("\"nap\"").is_err());
}

#[test]
fn cancel_is_one_way_and_shared_by_clones() {
    let signal = CancelSignal::default();
    let clone = signal.clone();
    assert!(!signal.is_canceled());
    clone.cancel();
    clone.cancel();
    assert!(signal.is_canceled());
}

#[test]
fn canceled_resolves_at_once_when_already_canceled() {
    let signal = CancelSignal::new();
    signal.cancel();
    assert!(poll_once(pin!(signal.canceled())).is_ready());
    assert_eq!(signal.waiter_count(), 0);
}

#[test]
fn canceled_waits_until_cancel_and_a_dropped_waiter_leaves_no_waker() {
    let signal = CancelSignal::new();
    let mut first = Box::pin(signal.canceled());
    let mut second = Box::pin(signal.canceled());
    assert!(poll_once(first.as_mut()).is_pending());
    assert!(poll_once(second.as_mut()).is_pending());
    assert_eq!(signal.waiter_count(), 2);
    drop(second);
    assert_eq!(signal.waiter_count(), 1);
    signal.cancel();
    assert!(poll_once(first.as_mut()).is_ready());
    assert_eq!(signal.waiter_count(), 0);
}

#[test]
fn noting_a_phase_wakes_nobody() {
    let signal = CancelSignal::new();
    let mut waiter = Box::pin(signal.canceled());
    assert!(poll_once(waiter.as_mut()).is_pending());
    signal.note_phase(Phase::Plan);
    assert!(poll_once(waiter.as_mut()).is_pending());
}

#[tokio::test]
async fn a_cancel_from_another_task_wakes_the_waiter() {
    let signal = CancelSignal::new();
    let firing = signal.clone();
    let task = tokio::spawn(async move {
        tokio::task::yield_now().await;
        firing.cancel();
    });
    let canceled = Cancellation::canceled(&signal);
    within("the cancel from another task wakes the waiter", canceled).await;
    assert!(Cancellation::is_canceled(&signal));
    within("the canceling task ends", task).await.unwrap();
}

/// The gate accepts tokio-util's token as its cancellation (S3 with a
/// foreign cancellation).
#[cfg(feature = "tokio-util")]
#[tokio::test]
async fn a_cancellation_token_cancels_a_held_handoff() {
    use tokio_util::sync::CancellationToken;
    let gate = common::gate();
    let token = CancellationToken::new();
    let reservation = gate.requester().reserve(common::intent()).unwrap();
    let mut boundary = pin!(gate.boundary(&token, common::prepared));
    assert!(poll_once(boundary.as_mut()).is_pending());
    let held = within(common::HELD, reservation.ready()).await.unwrap();
    token.cancel();
    assert!(
        matches!(held.commit(), Err(baton::CommitError::Canceled)),
        "S3: no commit once canceled"
    );
    let promise = "L1: the boundary resolves once the refused commit released the Run";
    assert_eq!(within(promise, boundary).await, Ok(None));
    assert_eq!(gate.waiter_count(), 0);
}

/// A waker that counts its wake-ups.
#[derive(Default)]
struct Count(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn cancel_wakes_the_waiting_future_and_noting_a_phase_does_not() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering::SeqCst;
    use std::task::{Context, Waker};
    let signal = CancelSignal::new();
    let count = Arc::new(Count::default());
    let waker = Waker::from(Arc::clone(&count));
    let mut waiter = Box::pin(signal.canceled());
    assert!(
        waiter
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    signal.note_phase(Phase::Plan);
    assert_eq!(count.0.load(SeqCst), 0, "a phase wakes nobody");
    signal.cancel();
    assert_eq!(count.0.load(SeqCst), 1, "the cancel wakes the waiter");
    assert!(
        waiter
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready()
    );
}
