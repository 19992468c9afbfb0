//! A waker that checks, at the moment it is woken, that what its future
//! waits for is already visible: the waiter cell's wake/store order, looked
//! at directly instead of through its side effects.
//!
//! A cell that wakes a waiter before the change it is woken for can be seen
//! makes the waiter re-poll, find nothing, and register again, relying on a
//! later wake-up that may never come; one that forgets the wake-up leaves it
//! asleep. Under `block_on` either shows only as a hang (which loom reports
//! as a deadlock) and only in the interleavings where it matters. A
//! [`WakeProbe`] names both: at each wake-up it runs a check on the woken
//! thread, right then, and records whether the change was visible; a test
//! then asserts it was woken at all.
//!
//! The check runs inside `Waker::wake`, so it must not take a lock the
//! waking code may hold: a cell that wakes under its own lock then deadlocks
//! in the check, which loom reports too (another defect caught).
//!
//! Counts are `std` atomics: loom does not see them, and runs one thread at
//! a time, so they are exact.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// A waker that runs a visibility check each time it is woken.
pub struct WakeProbe {
    check: Box<dyn Fn() -> bool + Send + Sync>,
    woken: AtomicUsize,
    too_early: AtomicUsize,
}

impl std::fmt::Debug for WakeProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WakeProbe")
            .field("woken", &self.woken())
            .field("too_early", &self.too_early.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl WakeProbe {
    /// A probe whose wake-ups must each find `visible()` true.
    pub fn new(visible: impl Fn() -> bool + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            check: Box::new(visible),
            woken: AtomicUsize::new(0),
            too_early: AtomicUsize::new(0),
        })
    }

    /// Polls `future` once with this probe as its waker.
    pub fn poll<F: Future + ?Sized>(self: &Arc<Self>, future: Pin<&mut F>) -> Poll<F::Output> {
        let waker = Waker::from(Arc::clone(self));
        future.poll(&mut Context::from_waker(&waker))
    }

    /// How many times it was woken.
    pub fn woken(&self) -> usize {
        self.woken.load(Ordering::SeqCst)
    }

    /// Asserts that every wake-up so far found the change visible.
    ///
    /// # Panics
    ///
    /// If one did not; the message names `promise`.
    pub fn assert_never_early(&self, promise: &str) {
        assert_eq!(
            self.too_early.load(Ordering::SeqCst),
            0,
            "{promise}: woken before the change it was woken for was visible"
        );
    }

    /// Asserts that it was woken, and never too early.
    ///
    /// # Panics
    ///
    /// If it was not woken (a missed wake-up) or was woken too early; the
    /// message names `promise`.
    pub fn assert_woken(&self, promise: &str) {
        self.assert_never_early(promise);
        assert!(
            self.woken() > 0,
            "{promise}: the change happened but the waiting future was never woken"
        );
    }
}

impl Wake for WakeProbe {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.fetch_add(1, Ordering::SeqCst);
        if !(self.check)() {
            self.too_early.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Polls `future` once with `probe` as its waker on this loom thread while
/// `change` runs on another, then checks the waker's side of the race: if
/// that first poll was pending, the change must have woken it (never
/// missed), at a moment the change was visible (never early), and the next
/// poll must resolve. Returns the future's output.
///
/// # Panics
///
/// If any of those fails; the message names `promise`.
pub fn race_wake<F, C>(
    probe: &Arc<WakeProbe>,
    mut future: Pin<&mut F>,
    change: C,
    promise: &str,
) -> F::Output
where
    F: Future + ?Sized,
    C: FnOnce() + Send + 'static,
{
    let changer = loom::thread::spawn(change);
    let first = probe.poll(future.as_mut());
    changer.join().expect("the change does not panic");
    match first {
        Poll::Ready(output) => {
            probe.assert_never_early(promise);
            output
        }
        Poll::Pending => {
            probe.assert_woken(promise);
            match probe.poll(future) {
                Poll::Ready(output) => output,
                Poll::Pending => panic!("{promise}: woken, yet still pending after the change"),
            }
        }
    }
}
