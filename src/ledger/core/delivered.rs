//! The ids delivered and taken in a scope: a hash set, since the delivered
//! memory only answers "was this id delivered?" and grows with every
//! arrival of a long scope (a B-tree keyed by ascending ids walked its
//! whole right spine for every new id).

use std::collections::HashSet;

use foldhash::fast::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

use super::DelegationId;

/// A set of delivered ids. Equal sets hash equally whatever their order
/// of insertion (the model checker keeps whole states in hash tables).
#[derive(Clone, Default)]
pub(super) struct Delivered(HashSet<DelegationId, RandomState>);

impl Delivered {
    pub(super) fn contains(&self, id: &str) -> bool {
        !self.0.is_empty() && self.0.contains(id)
    }

    pub(super) fn insert(&mut self, id: DelegationId) {
        self.0.insert(id);
    }

    /// Forgets every id and frees the table (a hash set's `clear` keeps
    /// its capacity: a scope's delivered memory goes with the scope).
    pub(super) fn clear(&mut self) {
        self.0 = HashSet::default();
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl Extend<DelegationId> for Delivered {
    fn extend<I: IntoIterator<Item = DelegationId>>(&mut self, ids: I) {
        self.0.extend(ids);
    }
}

impl PartialEq for Delivered {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Delivered {}

impl Hash for Delivered {
    /// The number of ids and the wrapping sum of each id's hash under a
    /// fixed hasher: independent of the set's order, which a process's
    /// random hash seed decides.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let fixed = std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default();
        let sum = self
            .0
            .iter()
            .fold(0u64, |sum, id| sum.wrapping_add(fixed.hash_one(id)));
        self.0.len().hash(state);
        sum.hash(state);
    }
}

impl std::fmt::Debug for Delivered {
    /// In id order.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut all: Vec<_> = self.0.iter().collect();
        all.sort_unstable();
        f.debug_set().entries(all).finish()
    }
}
