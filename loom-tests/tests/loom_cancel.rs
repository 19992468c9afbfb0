#![cfg(loom)]
//! The cancel signal (SPEC §3) under every interleaving: `canceled()` never
//! misses the `cancel()` it races, and a dropped waiter leaves no waker.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};

use baton::CancelSignal;
use baton_testkit::loom::{Coverage, model};
use loom::future::block_on;
use loom::thread;

/// §3 / L1: a `canceled()` waiter racing `cancel()` always resolves (a lost
/// wake-up would be reported by loom as a deadlock), and frees its waker.
#[test]
fn a_canceled_waiter_racing_cancel_always_resolves() {
    model("canceled ∥ cancel", Coverage::Exhaustive, || {
        let signal = CancelSignal::new();
        let waiter = {
            let signal = signal.clone();
            thread::spawn(move || block_on(signal.canceled()))
        };
        signal.cancel();
        waiter.join().unwrap();
        assert_eq!(signal.waiter_count(), 0);
    });
}

/// §3 / L1: one `cancel()` resolves every waiter, however they interleave.
#[test]
fn one_cancel_resolves_two_racing_waiters() {
    model(
        "canceled ∥ canceled ∥ cancel",
        Coverage::Exhaustive,
        || {
            let signal = CancelSignal::new();
            let waiters: Vec<_> = (0..2)
                .map(|_| {
                    let signal = signal.clone();
                    thread::spawn(move || block_on(signal.canceled()))
                })
                .collect();
            signal.cancel();
            for waiter in waiters {
                waiter.join().unwrap();
            }
            assert_eq!(signal.waiter_count(), 0);
        },
    );
}

/// §1 cancel safety: a `canceled()` future polled, then dropped while
/// `cancel()` runs, leaves no waker behind.
#[test]
fn a_canceled_future_dropped_racing_cancel_leaves_no_waker() {
    model("drop canceled() ∥ cancel", Coverage::Exhaustive, || {
        let signal = CancelSignal::new();
        let dropper = {
            let signal = signal.clone();
            thread::spawn(move || {
                let mut waiting = pin!(signal.canceled());
                let _ = waiting
                    .as_mut()
                    .poll(&mut Context::from_waker(Waker::noop()));
            })
        };
        signal.cancel();
        dropper.join().unwrap();
        assert_eq!(signal.waiter_count(), 0);
    });
}

/// §3: `is_canceled()` answering `true` is final for waiters too: a
/// `canceled()` polled after it resolves at the first poll, however the
/// check races `cancel()`.
#[test]
fn a_signal_seen_canceled_resolves_canceled_at_once() {
    model(
        "is_canceled → canceled ∥ cancel",
        Coverage::Exhaustive,
        || {
            let signal = CancelSignal::new();
            let checker = {
                let signal = signal.clone();
                thread::spawn(move || {
                    if signal.is_canceled() {
                        let mut waiting = pin!(signal.canceled());
                        let polled = waiting
                            .as_mut()
                            .poll(&mut Context::from_waker(Waker::noop()));
                        assert!(polled.is_ready(), "canceled() pending after is_canceled()");
                    }
                })
            };
            signal.cancel();
            assert!(signal.is_canceled());
            checker.join().unwrap();
            assert_eq!(signal.waiter_count(), 0);
        },
    );
}

/// §3: a `cancel()` that finds the signal already fired returns at once,
/// and that is enough: after either of two racing `cancel()` calls
/// returns, a new `canceled()` resolves at the first poll (one already
/// waiting is the next scene's).
#[test]
fn after_either_racing_cancel_returns_canceled_resolves_at_once() {
    model(
        "cancel ∥ cancel, then canceled",
        Coverage::Exhaustive,
        || {
            let signal = CancelSignal::new();
            let other = {
                let signal = signal.clone();
                thread::spawn(move || {
                    signal.cancel();
                    let mut waiting = pin!(signal.canceled());
                    let polled = waiting
                        .as_mut()
                        .poll(&mut Context::from_waker(Waker::noop()));
                    assert!(
                        polled.is_ready(),
                        "canceled() pending after cancel() returned"
                    );
                })
            };
            signal.cancel();
            let mut waiting = pin!(signal.canceled());
            let polled = waiting
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()));
            assert!(
                polled.is_ready(),
                "canceled() pending after cancel() returned"
            );
            other.join().unwrap();
        },
    );
}

/// §3: once either of two racing `cancel()` calls returns, a `canceled()`
/// future that was already waiting resolves at its next poll, even while
/// the other cancel has yet to take the lock and wake it.
#[test]
fn a_waiting_future_resolves_at_its_next_poll_once_any_cancel_returned() {
    model(
        "canceled() waiting; cancel ∥ cancel, then poll",
        Coverage::Exhaustive,
        || {
            let signal = CancelSignal::new();
            let mut waiting = pin!(signal.canceled());
            let mut context = Context::from_waker(Waker::noop());
            assert!(waiting.as_mut().poll(&mut context).is_pending());
            let other = {
                let signal = signal.clone();
                thread::spawn(move || signal.cancel())
            };
            signal.cancel();
            assert!(
                waiting.as_mut().poll(&mut context).is_ready(),
                "a waiting canceled() missed a finished cancel()"
            );
            other.join().unwrap();
            assert_eq!(signal.waiter_count(), 0);
        },
    );
}
