//! How the adapter keeps a child: shared, so that `arrive` can ask it
//! outside the ledger's lock.

use super::BoxedChild;
use crate::ledger::Child;

/// A child as the ledger keeps it: shared, so that `arrive` can ask it
/// [`Child::is_being_ended`] outside the ledger's lock (a child may then
/// call back into the ledger). A plain `std` `Arc`: only its count is
/// shared, never a lock.
#[derive(Clone)]
pub(super) struct Shared(std::sync::Arc<BoxedChild>);

impl Shared {
    /// The ledger's handle on `child`.
    pub(super) fn new(child: BoxedChild) -> Self {
        Self(std::sync::Arc::new(child))
    }

    /// The child as the caller gave it, or, while an `arrive` still asks
    /// it, a box that forwards to it.
    pub(super) fn into_boxed(self) -> BoxedChild {
        std::sync::Arc::try_unwrap(self.0).unwrap_or_else(|shared| Box::new(Shared(shared)))
    }

    /// Whether `a` and `b` are the same adopted child.
    pub(super) fn same(a: &Shared, b: &Shared) -> bool {
        std::sync::Arc::ptr_eq(&a.0, &b.0)
    }
}

impl Child for Shared {
    fn begin_ending(&self) {
        self.0.begin_ending();
    }

    fn is_being_ended(&self) -> bool {
        self.0.is_being_ended()
    }
}
