//! The one synchronisation shim: `loom` under `cfg(loom)`, `std` otherwise.
//!
//! Nothing else in the crate imports `std::sync` primitives, so the code that
//! runs in production is exactly the code that loom explores, apart from the
//! reference count of [`Arc`], whose only job is to free the state once.
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

/// Locks `mutex`, ignoring poison: no user code runs while a baton lock is
/// held except `Cancellation::is_canceled`, and the state behind the lock
/// is only ever replaced whole, so a poisoned lock still holds a valid state.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
