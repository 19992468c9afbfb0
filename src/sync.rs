//! The one synchronisation shim: `loom` under `cfg(loom)`, `std` otherwise.
//!
//! Nothing else in the crate imports `std::sync` primitives, so the code that
//! runs in production is exactly the code that loom explores.

#[cfg(loom)]
pub(crate) use loom::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicU8, Ordering},
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicU8, Ordering},
};

/// Locks `mutex`, ignoring poison: no user code runs while a baton lock is
/// held except `Cancellation::is_canceled`, and the state behind the lock
/// is only ever replaced whole, so a poisoned lock still holds a valid state.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
