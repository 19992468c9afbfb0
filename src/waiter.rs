//! The waiter cell: one mutex over `{state, version, waker slots}`.
//!
//! Every adapter in baton is this cell plus RAII handles. `update` changes the
//! state under the lock and wakes every registered waiter *after* unlocking;
//! [`WaitUntil`] evaluates its query and registers its waker under the *same*
//! lock, so no change can slip between the check and the registration (the
//! classic lost wake-up), and it frees its slot in `Drop`, so a dropped future
//! leaves nothing behind.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use smallvec::SmallVec;

use crate::sync::{Mutex, MutexGuard, lock};

/// Waiters a cell keeps without allocating: a gate has two at once in its
/// usual life (the worker's boundary and a requester's `ready` or `wait`), a
/// ledger or a cancel signal fewer. More spill to the heap.
const INLINE_WAITERS: usize = 2;

/// Wakers one update collects on the stack before it spills to the heap.
const INLINE_WAKES: usize = 4;

/// A state guarded by one lock, with wakers for futures waiting on it.
#[derive(Debug)]
pub(crate) struct WatchCell<S> {
    inner: Mutex<Inner<S>>,
}

/// `repr(C)`, in the order of how often an update touches a field: what
/// every update reads or writes first, right after the lock word (the
/// gate's `Shared` keeps them in its first 64 bytes), the wakers last.
#[derive(Debug)]
#[repr(C)]
struct Inner<S> {
    /// Bumped on every accepted change; diagnostics and tests only.
    version: u64,
    /// Number of slots held by live futures.
    waiters: usize,
    state: S,
    /// One slot per pending `WaitUntil`; `None` once woken, until re-polled.
    slots: SmallVec<[Option<Waker>; INLINE_WAITERS]>,
    /// Slot indices free for reuse.
    free: SmallVec<[usize; INLINE_WAITERS]>,
}

impl<S> WatchCell<S> {
    pub(crate) fn new(state: S) -> Self {
        Self {
            inner: Mutex::new(Inner {
                state,
                version: 0,
                slots: SmallVec::new(),
                free: SmallVec::new(),
                waiters: 0,
            }),
        }
    }

    /// Runs `f` on the state; if it returns `changed == true`, bumps the
    /// version and wakes every waiter after the lock is released.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut S) -> (bool, R)) -> R {
        let mut inner = lock(&self.inner);
        let (changed, result) = f(&mut inner.state);
        if !changed {
            return result;
        }
        wake_all(inner);
        result
    }

    /// Reads the state under the lock.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&S) -> R) -> R {
        f(&lock(&self.inner).state)
    }

    /// The number of accepted changes so far.
    pub(crate) fn version(&self) -> u64 {
        lock(&self.inner).version
    }

    /// The number of futures currently registered (pending, not yet dropped).
    pub(crate) fn waiter_count(&self) -> usize {
        lock(&self.inner).waiters
    }

    /// A future that resolves with `query(state)` as soon as that is `Some`.
    ///
    /// The query runs under the lock and may consume from the state (the
    /// ledger's stored wake-up): such a change wakes nobody, so it must
    /// never be one another waiter is waiting for.
    pub(crate) fn wait_until<T, Q>(&self, query: Q) -> WaitUntil<'_, S, Q>
    where
        Q: FnMut(&mut S) -> Option<T>,
    {
        self.wait_until_or_leave(query, stay as fn(&mut S) -> bool)
    }

    /// Like [`wait_until`](Self::wait_until), for a state that counts its
    /// pending waiters (the ledger's waits): when the future is dropped
    /// while pending (its last query answered `None`), `leave` runs on the
    /// state under the lock, and if it answers `true` the change is
    /// accepted and every other waiter woken, as by [`update`](Self::update).
    pub(crate) fn wait_until_or_leave<T, Q, L>(&self, query: Q, leave: L) -> WaitUntil<'_, S, Q, L>
    where
        Q: FnMut(&mut S) -> Option<T>,
        L: FnMut(&mut S) -> bool,
    {
        WaitUntil {
            cell: self,
            query,
            leave,
            slot: None,
        }
    }
}

/// The `leave` of a plain [`WatchCell::wait_until`]: the state does not
/// know its waiters, so a dropped one changes nothing.
fn stay<S>(_: &mut S) -> bool {
    false
}

/// Accepts a change: bumps the version, then wakes every registered waiter
/// after releasing the lock.
fn wake_all<S>(mut inner: MutexGuard<'_, Inner<S>>) {
    if let Some(woken) = inner.accept() {
        drop(inner);
        wake(woken);
    }
}

/// Wakes what [`Inner::accept`] took, with the lock released.
#[inline(always)]
fn wake(woken: Woken) {
    for waker in woken {
        waker.wake();
    }
}

/// The wakers one accepted change takes, to wake once the lock is released.
type Woken = SmallVec<[Waker; INLINE_WAKES]>;

impl<S> Inner<S> {
    /// Accepts a change: bumps the version and takes every registered
    /// waker, for the caller to wake once it has released the lock (`None`:
    /// nobody waits).
    #[inline(always)]
    fn accept(&mut self) -> Option<Woken> {
        self.version = self.version.wrapping_add(1);
        if self.waiters == 0 {
            return None;
        }
        Some(self.slots.iter_mut().filter_map(Option::take).collect())
    }

    fn register(&mut self, slot: &mut Option<usize>, waker: &Waker) {
        match *slot {
            Some(index) => match &mut self.slots[index] {
                Some(current) if current.will_wake(waker) => {}
                entry => *entry = Some(waker.clone()),
            },
            None => {
                let index = match self.free.pop() {
                    Some(index) => {
                        self.slots[index] = Some(waker.clone());
                        index
                    }
                    None => {
                        self.slots.push(Some(waker.clone()));
                        self.slots.len() - 1
                    }
                };
                self.waiters += 1;
                *slot = Some(index);
            }
        }
    }

    fn release(&mut self, slot: &mut Option<usize>) {
        if let Some(index) = slot.take() {
            self.slots[index] = None;
            self.free.push(index);
            self.waiters -= 1;
        }
    }
}

/// Future returned by [`WatchCell::wait_until`] and
/// [`WatchCell::wait_until_or_leave`]. Cancel-safe: dropping it frees its
/// waker slot and, if it was pending, tells the state by `leave`.
#[must_use = "futures do nothing unless polled"]
pub(crate) struct WaitUntil<'a, S, Q, L = fn(&mut S) -> bool>
where
    L: FnMut(&mut S) -> bool,
{
    cell: &'a WatchCell<S>,
    query: Q,
    leave: L,
    slot: Option<usize>,
}

// The future holds no self-references: moving it is always fine.
impl<S, Q, L: FnMut(&mut S) -> bool> Unpin for WaitUntil<'_, S, Q, L> {}

impl<S, Q, L, T> WaitUntil<'_, S, Q, L>
where
    Q: FnMut(&mut S) -> Option<T>,
    L: FnMut(&mut S) -> bool,
{
    /// Polls this future with `change` applied first, under the same lock:
    /// if `change` answers `true` the change is accepted and every *other*
    /// waiter woken, as by [`WatchCell::update`]; then the query decides,
    /// and if it is still `None` this future registers, still under that
    /// lock. A step and the wait on its result in one critical section
    /// (`boundary`'s preflight and its first wait), where an `update` and a
    /// first `poll` would take the lock twice.
    pub(crate) fn poll_after(
        &mut self,
        cx: &mut Context<'_>,
        change: impl FnOnce(&mut S) -> bool,
    ) -> Poll<T> {
        let mut inner = lock(&self.cell.inner);
        // Before this future registers: the change does not wake it.
        let woken = if change(&mut inner.state) {
            inner.accept()
        } else {
            None
        };
        let decided = (self.query)(&mut inner.state);
        // BROKEN ON PURPOSE, only under `--cfg baton_loom_broken` (the loom
        // suite's self-test, `loom-tests/tests/loom_self_test.rs`): unlocks
        // between the query and the registration, so an update in between
        // wakes nobody — the lost wake-up one lock prevents.
        #[cfg(baton_loom_broken)]
        let mut inner = {
            drop(inner);
            lock(&self.cell.inner)
        };
        let poll = match decided {
            Some(value) => {
                inner.release(&mut self.slot);
                Poll::Ready(value)
            }
            None => {
                inner.register(&mut self.slot, cx.waker());
                Poll::Pending
            }
        };
        drop(inner);
        if let Some(woken) = woken {
            wake(woken);
        }
        poll
    }
}

impl<S, Q, L, T> Future for WaitUntil<'_, S, Q, L>
where
    Q: FnMut(&mut S) -> Option<T>,
    L: FnMut(&mut S) -> bool,
{
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.get_mut().poll_after(cx, |_| false)
    }
}

impl<S, Q, L: FnMut(&mut S) -> bool> Drop for WaitUntil<'_, S, Q, L> {
    fn drop(&mut self) {
        if self.slot.is_none() {
            return;
        }
        let mut inner = lock(&self.cell.inner);
        inner.release(&mut self.slot);
        if (self.leave)(&mut inner.state) {
            wake_all(inner);
        }
    }
}

// Two attributes rather than `all(test, not(loom))`: cargo-mutants skips a
// module only when it sees a plain `#[cfg(test)]`.
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::within::poll_once;
    use std::pin::pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Count {
        fn get(&self) -> usize {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn a_pending_waiter_holds_one_slot_and_frees_it_on_drop() {
        let cell = WatchCell::new(0u32);
        let mut wait = cell.wait_until(|s| (*s > 0).then_some(*s));
        assert!(poll_once(Pin::new(&mut wait)).is_pending());
        assert!(
            poll_once(Pin::new(&mut wait)).is_pending(),
            "re-poll reuses its slot"
        );
        assert_eq!(cell.waiter_count(), 1);
        drop(wait);
        assert_eq!(cell.waiter_count(), 0);
    }

    #[test]
    fn an_update_wakes_and_the_waiter_resolves_with_the_new_state() {
        let cell = WatchCell::new(0u32);
        let mut wait = cell.wait_until(|s| (*s > 0).then_some(*s));
        assert!(poll_once(Pin::new(&mut wait)).is_pending());
        cell.update(|s| {
            *s = 7;
            (true, ())
        });
        assert_eq!(cell.version(), 1);
        assert_eq!(poll_once(Pin::new(&mut wait)), Poll::Ready(7));
        assert_eq!(cell.waiter_count(), 0, "a resolved waiter frees its slot");
    }

    #[test]
    fn an_unchanged_update_does_not_bump_the_version() {
        let cell = WatchCell::new(0u32);
        cell.update(|_| (false, ()));
        assert_eq!(cell.version(), 0);
    }

    #[test]
    fn freed_slots_are_reused_so_the_slot_list_stays_bounded() {
        let cell = WatchCell::new(0u32);
        for _ in 0..100 {
            let mut wait = pin!(cell.wait_until(|s| (*s > 0).then_some(())));
            let _ = wait.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        }
        assert_eq!(lock(&cell.inner).slots.len(), 1);
        assert_eq!(cell.waiter_count(), 0);
    }

    #[test]
    fn a_waiter_repolled_with_another_waker_wakes_the_new_one() {
        let cell = WatchCell::new(0u32);
        let (old, new) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let mut wait = cell.wait_until(|s| (*s > 0).then_some(*s));
        let poll_with = |wait: &mut WaitUntil<'_, u32, _>, count: &Arc<Count>| {
            Pin::new(wait).poll(&mut Context::from_waker(&Waker::from(Arc::clone(count))))
        };
        assert!(poll_with(&mut wait, &old).is_pending());
        assert!(
            poll_with(&mut wait, &new).is_pending(),
            "moved to another task"
        );
        assert_eq!(cell.waiter_count(), 1, "still one slot");
        cell.update(|s| {
            *s = 1;
            (true, ())
        });
        assert_eq!(
            (old.get(), new.get()),
            (0, 1),
            "the current waker, not the stale one"
        );
    }

    #[test]
    fn an_update_wakes_every_waiter_once_and_an_unchanged_one_wakes_nobody() {
        let cell = WatchCell::new(0u32);
        let counts = [Arc::new(Count::default()), Arc::new(Count::default())];
        let mut waits: Vec<_> = counts
            .iter()
            .map(|_| cell.wait_until(|s| (*s > 1).then_some(())))
            .collect();
        for (wait, count) in waits.iter_mut().zip(&counts) {
            let waker = Waker::from(Arc::clone(count));
            assert!(
                Pin::new(wait)
                    .poll(&mut Context::from_waker(&waker))
                    .is_pending()
            );
        }
        cell.update(|_| (false, ()));
        assert_eq!(counts.each_ref().map(|c| c.get()), [0, 0]);
        cell.update(|s| {
            *s = 1;
            (true, ())
        });
        assert_eq!(counts.each_ref().map(|c| c.get()), [1, 1]);
        cell.update(|s| {
            *s = 2;
            (true, ())
        });
        assert_eq!(
            counts.each_ref().map(|c| c.get()),
            [1, 1],
            "a woken waiter is not woken again until it polls"
        );
        assert_eq!(cell.read(|s| *s), 2);
        assert_eq!(
            cell.update(|s| (false, *s + 1)),
            3,
            "update returns f's result"
        );
    }

    /// `poll_after`: the change and the registration under one lock. The
    /// change wakes every waiter registered before it, never the future
    /// that made it (not registered yet), and bumps the version; the
    /// query then sees the changed state, and an unanswered one registers.
    #[test]
    fn poll_after_wakes_the_other_waiters_not_its_own_and_the_query_sees_the_change() {
        let cell = WatchCell::new(0u32);
        let (other, own) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let mut waiting = cell.wait_until(|s| (*s > 0).then_some(*s));
        let other_waker = Waker::from(Arc::clone(&other));
        assert!(
            Pin::new(&mut waiting)
                .poll(&mut Context::from_waker(&other_waker))
                .is_pending()
        );
        let mut changing = cell.wait_until(|s| (*s > 1).then_some(*s));
        let own_waker = Waker::from(Arc::clone(&own));
        let mut cx = Context::from_waker(&own_waker);
        let polled = changing.poll_after(&mut cx, |s| {
            *s = 1;
            true
        });
        assert!(polled.is_pending(), "the query saw 1: not > 1");
        assert_eq!(
            (other.get(), own.get()),
            (1, 0),
            "the other woken, not its own"
        );
        assert_eq!((cell.version(), cell.waiter_count()), (1, 2));
        cell.update(|s| {
            *s = 2;
            (true, ())
        });
        assert_eq!(
            own.get(),
            1,
            "registered under that lock: the next change wakes it"
        );
        assert_eq!(poll_once(Pin::new(&mut changing)), Poll::Ready(2));
        assert_eq!(poll_once(Pin::new(&mut waiting)), Poll::Ready(2));
        let polled = cell.wait_until(|s| Some(*s)).poll_after(&mut cx, |_| false);
        assert_eq!(
            polled,
            Poll::Ready(2),
            "an unchanged state, answered at once"
        );
        assert_eq!(cell.version(), 2, "an unchanged step bumps nothing");
    }
}
