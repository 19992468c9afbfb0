//! The runtime's own locks: loom's under `--cfg loom`, so that loom explores
//! every order of the runtime's steps around baton's (which switch the same
//! way), else std's.

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;

/// Locks `mutex`; the runtime never panics while holding one of its locks.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> crate::sync::Guard<'_, T> {
    mutex
        .lock()
        .expect("the runtime's locks are never poisoned")
}

#[cfg(loom)]
pub(crate) type Guard<'a, T> = loom::sync::MutexGuard<'a, T>;
#[cfg(not(loom))]
pub(crate) type Guard<'a, T> = std::sync::MutexGuard<'a, T>;
