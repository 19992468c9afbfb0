//! The one synchronisation shim: `loom` under `cfg(loom)`, `std` otherwise.
//!
//! Nothing else in the crate imports `std::sync` primitives, so the code that
//! runs in production is exactly the code that loom explores, apart from the
//! reference count of [`Arc`], whose only job is to free the state once, and
//! [`Mirror`]'s accesses, read-modify-writes under loom so that loom orders
//! them as the machines do and explores every order of them.
//!
//! [`Arc`] is the handles' shared state (a gate's, a ledger's, a cancel
//! signal's), which never hands out a `Weak`. Outside loom it is
//! `triomphe::Arc`: std's `Arc` without the weak count, so the last handle
//! frees the state with one atomic read-modify-write instead of two. Under
//! loom it is loom's, which checks that the state is freed. The `Arc`s of
//! baton's API (intents, pauses, delegations) are std's.

#[cfg(loom)]
pub(crate) use loom::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicU8, Ordering},
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicU8, Ordering},
};
#[cfg(not(loom))]
pub(crate) use triomphe::Arc;

/// The job queue of `SqliteLog`'s thread (`durable::offload`): real I/O,
/// outside loom's model, but imported here like every other primitive.
#[cfg(all(feature = "sqlite", loom))]
pub(crate) use loom::sync::mpsc;
#[cfg(all(feature = "sqlite", not(loom)))]
pub(crate) use std::sync::mpsc;

/// Locks `mutex`, ignoring poison: the state behind a baton lock is only
/// ever replaced whole, so a poisoned lock still holds a valid state. User
/// code that runs while a baton lock is held, all of it documented where the
/// user supplies it: `Cancellation::is_canceled` (under the gate's lock,
/// as a preflight's pause is fed and at a commit), the payload's `PartialEq` when
/// `HandoffGate::sealed` is given a pause other than the gate's own `Arc`,
/// and the `Drop` of a payload whose last `Arc` the gate releases as it
/// leaves a state. (`Child::is_being_ended` is asked outside the ledger's
/// lock.) None of
/// them may call back into the object whose lock it runs under: that
/// deadlocks.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A `u8` stored only under a lock, as a copy of what the lock guards, and
/// loaded without it (a `Release` store in the critical section, an
/// `Acquire` load).
///
/// A reader takes the copy for the guarded state at the moment it loads
/// it, so a load must not return a value that a store had replaced before
/// the loading operation began.
///
/// That makes the copy the state's *kind* at the load, and no more: an
/// answer read from it is sound only if no step leaving that kind takes
/// effect before it is stored. A step decided on something that changes
/// without the lock (the gate's commit reads the worker's cancel bit) takes
/// effect at that read, earlier than its store of the new kind, so a copy
/// read in between is already stale. The gate therefore answers from the
/// copy only in the kinds `StateKind::copy_may_answer` allows. Rust's memory model does not speak of real
/// time; on the machines, the store becomes visible no later than the
/// unlock that follows it in the critical section, so no later than a
/// reader taking the lock could see the change. loom's linearizability
/// check (loom-tests) takes loom's execution
/// order for real time, so under loom both accesses are read-modify-writes
/// (a load writes back what it read, a store is a swap), because of two
/// limits of loom:
///
/// - a plain load in loom may read any store not yet overwritten in a
///   *partial* modification order, so it could return a value replaced
///   before the load began: with plain accesses the check found a `Busy`
///   returned after a `Close` had returned. A read-modify-write reads the
///   newest value, and when every access is one, the newest is the one
///   executed last.
/// - loom checks a write for a conflict only against the *last* access to
///   the atomic when it picks the orders to try next, so when that access
///   is the writing thread's own load, another thread's earlier load is
///   never tried after the write (`loom-tests/tests/loom_tool_limits.rs`
///   pins this on two threads). With plain loads the scene
///   `requester ∥ worker` fell from 1.59 M executions to 43, none of them
///   reaching a seal (measured when this was written, at 16c225d; with
///   read-modify-writes it ran 380,735 executions, exhaustive, in the
///   loom step of `.ci/run` at c53a0a2). A read-modify-write is ordered
///   against every other access, as the lock beside it is. (`CancelSignal`'s bits keep plain
///   loads; `src/cancel.rs` says why loom misses nothing there.)
#[derive(Debug)]
pub(crate) struct Mirror(AtomicU8);

impl Mirror {
    pub(crate) fn new(value: u8) -> Self {
        Self(AtomicU8::new(value))
    }

    /// The copy, read without the lock.
    pub(crate) fn load(&self) -> u8 {
        #[cfg(loom)]
        return self.0.fetch_or(0, Ordering::AcqRel);
        #[cfg(not(loom))]
        self.0.load(Ordering::Acquire)
    }

    /// Replaces the copy. Call only under the lock it mirrors.
    pub(crate) fn store(&self, value: u8) {
        #[cfg(loom)]
        self.0.swap(value, Ordering::AcqRel);
        #[cfg(not(loom))]
        self.0.store(value, Ordering::Release);
    }
}
