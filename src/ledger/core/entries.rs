//! The ledger's entries by id: a hash table, since every event finds its
//! entry by id and only takes and snapshots want id order (they sort what
//! they return, O(k log k) for k entries).
//!
//! Each entry also carries the number of its registration, which orders
//! the not-arrived index after the start time (a cheaper tie-break than
//! the id). The numbers are bookkeeping: two tables with the same entries
//! are equal, and hash equally, whatever their numbers and their order.

use std::collections::HashMap;

use foldhash::fast::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

use super::{DelegationId, Entry};

/// The capacity below which a table keeps its room when it empties.
const SHRINK_ABOVE: usize = 128;

/// An entry and the number of its registration.
#[derive(Clone, Debug)]
pub(super) struct Slot<D, C, T> {
    pub(super) entry: Entry<D, C, T>,
    pub(super) seq: u64,
}

/// The entries by id.
#[derive(Clone)]
pub(super) struct Entries<D, C, T> {
    map: HashMap<DelegationId, Slot<D, C, T>, RandomState>,
    /// The next registration's number.
    next_seq: u64,
}

impl<D, C, T> Entries<D, C, T> {
    pub(super) fn new() -> Self {
        Self {
            map: HashMap::default(),
            next_seq: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.map.contains_key(id)
    }

    pub(super) fn get(&self, id: &str) -> Option<&Entry<D, C, T>> {
        self.map.get(id).map(|slot| &slot.entry)
    }

    pub(super) fn get_mut(&mut self, id: &str) -> Option<&mut Slot<D, C, T>> {
        self.map.get_mut(id)
    }

    /// Adds an entry whose id is not in the table; returns its number.
    pub(super) fn insert(&mut self, id: DelegationId, entry: Entry<D, C, T>) -> u64 {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.map.insert(id, Slot { entry, seq });
        seq
    }

    /// Removes an entry; a table left at under a quarter of its capacity
    /// gives the rest back (amortized O(1): a hash table never shrinks by
    /// itself, so a ledger that once held 100k entries would keep their
    /// room until its scope ended).
    pub(super) fn remove(&mut self, id: &str) -> Option<(DelegationId, Slot<D, C, T>)> {
        let removed = self.map.remove_entry(id)?;
        if self.map.capacity() > SHRINK_ABOVE && self.map.len() * 4 < self.map.capacity() {
            self.map.shrink_to(self.map.len() * 2);
        }
        Some(removed)
    }

    /// The entries in no order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&DelegationId, &Slot<D, C, T>)> {
        self.map.iter()
    }

    /// Empties the table; its entries in id order.
    pub(super) fn take_sorted(&mut self) -> Vec<(DelegationId, Entry<D, C, T>)> {
        // Taken, not drained: the table's room is freed with its entries.
        let mut all: Vec<_> = std::mem::take(&mut self.map)
            .into_iter()
            .map(|(id, slot)| (id, slot.entry))
            .collect();
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

impl<D: PartialEq, C: PartialEq, T: PartialEq> PartialEq for Entries<D, C, T> {
    fn eq(&self, other: &Self) -> bool {
        self.map.len() == other.map.len()
            && self
                .map
                .iter()
                .all(|(id, slot)| other.get(id) == Some(&slot.entry))
    }
}

impl<D: Eq, C: Eq, T: Eq> Eq for Entries<D, C, T> {}

impl<D: Hash, C: Hash, T: Hash> Hash for Entries<D, C, T> {
    /// The number of entries and the wrapping sum of each (id, entry)'s
    /// hash under a fixed hasher: independent of the table's order.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let fixed = std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default();
        let sum = self.map.iter().fold(0u64, |sum, (id, slot)| {
            sum.wrapping_add(fixed.hash_one((id, &slot.entry)))
        });
        self.map.len().hash(state);
        sum.hash(state);
    }
}

impl<D: std::fmt::Debug, C: std::fmt::Debug, T: std::fmt::Debug> std::fmt::Debug
    for Entries<D, C, T>
{
    /// In id order, without the numbers.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut all: Vec<_> = self.map.iter().collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        f.debug_map()
            .entries(all.into_iter().map(|(id, slot)| (id, &slot.entry)))
            .finish()
    }
}
