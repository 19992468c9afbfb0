//! The ledger's entries by id: an insertion-ordered hash map
//! (`indexmap`), since every event finds its entry by id and only takes and
//! snapshots want id order (they sort what they return, O(k log k) for k
//! entries).
//!
//! Why that map and not the entries in a hash table's own buckets: a
//! register touches the bucket of a new, random id, and in a table of
//! 100k entries of 64 bytes (8 MB) that bucket is nearly never in the
//! core's cache. `IndexMap` keeps 8-byte buckets (an entry's position; 1
//! MB at 100k, which the core's cache holds) and the entries themselves in
//! a dense vector, where a new one goes to the end and a removal moves the
//! last one into its place (`swap_remove`, O(1)): a register and take of
//! one delegation touches the cache's lines, not the 8 MB. A scan of a
//! small ledger walks that vector. Measured in issue 22.
//!
//! Each entry also carries the number of its registration, which orders
//! the not-arrived index after the start time (a cheaper tie-break than
//! the id). The numbers and positions are bookkeeping: two tables with
//! the same entries are equal, and hash equally, whatever their numbers
//! and order.

use foldhash::fast::RandomState;
use indexmap::IndexMap;
use std::hash::{BuildHasher, Hash, Hasher};

use super::{DelegationId, Entry, Taken};

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
    map: IndexMap<DelegationId, Slot<D, C, T>, RandomState>,
    /// The next registration's number.
    next_seq: u64,
}

impl<D, C, T> Entries<D, C, T> {
    pub(super) fn new() -> Self {
        Self {
            map: IndexMap::default(),
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

    /// Removes an entry (the last one takes its position); a table left at
    /// under a quarter of its capacity gives the rest back (amortized
    /// O(1): a hash map never shrinks by itself, so a ledger that once held
    /// 100k entries would keep their room until its scope ended).
    pub(super) fn remove(&mut self, id: &str) -> Option<(DelegationId, Slot<D, C, T>)> {
        let removed = self.map.swap_remove_entry(id)?;
        self.give_room_back();
        Some(removed)
    }

    /// Removes every entry `take` accepts, in one pass over the entries
    /// (no list of ids, no second lookup per entry), in no order;
    /// `expected` is how many the caller expects, room reserved at once.
    pub(super) fn extract(
        &mut self,
        expected: usize,
        mut take: impl FnMut(&Slot<D, C, T>) -> bool,
    ) -> Vec<Taken<D, C, T>> {
        let mut taken = Vec::with_capacity(expected);
        // From the last position down: `swap_remove_index` moves the last
        // entry, one already seen, into the position it empties.
        for at in (0..self.map.len()).rev() {
            if self.map.get_index(at).is_some_and(|(_, slot)| take(slot)) {
                if let Some((id, slot)) = self.map.swap_remove_index(at) {
                    taken.push(Taken {
                        id,
                        entry: slot.entry,
                    });
                }
            }
        }
        if !taken.is_empty() {
            self.give_room_back();
        }
        taken
    }

    /// Gives room back once under a quarter of the capacity is used.
    fn give_room_back(&mut self) {
        if self.map.capacity() > SHRINK_ABOVE && self.map.len() * 4 < self.map.capacity() {
            self.map.shrink_to(self.map.len() * 2);
        }
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Entries, Entry, SHRINK_ABOVE};

    type Table = Entries<(), (), u32>;

    fn id(i: usize) -> String {
        format!("d{i:04}")
    }

    fn filled(n: usize) -> Table {
        let mut entries = Entries::new();
        for i in 0..n {
            let entry = Entry {
                data: Arc::new(()),
                started: 0,
                arrived: false,
                child: None,
            };
            entries.insert(Arc::from(id(i)), entry);
        }
        entries
    }

    /// Removes `id` and checks the table's room against the rule: above
    /// [`SHRINK_ABOVE`], a table left at under a quarter of its room gives
    /// the rest back, keeping room for twice its entries (so the next
    /// shrink or growth is far off); else it keeps its room, which a
    /// removal alone leaves as it was or one less (hashbrown counts a
    /// tombstone against it). Whether it shrank.
    fn remove_checked(entries: &mut Table, id: &str) -> bool {
        let (before, len) = (entries.map.capacity(), entries.len() - 1);
        assert!(entries.remove(id).is_some(), "{id}");
        assert_eq!(entries.len(), len);
        let after = entries.map.capacity();
        let shrank = after + 1 < before;
        if shrank {
            assert!(
                before > SHRINK_ABOVE && len * 4 < before && after >= 2 * len,
                "{len}: {before} -> {after}"
            );
        } else {
            assert!(
                after <= SHRINK_ABOVE || len * 4 >= after,
                "{len} entries in room for {after}: the room is given back"
            );
        }
        shrank
    }

    /// SPEC §2's scale: a table that once held many entries gives their
    /// room back as it empties (a hash table never shrinks by itself), one
    /// that never grew past [`SHRINK_ABOVE`] keeps its room, and each
    /// removal shrinks exactly when the rule says.
    #[test]
    fn a_grown_table_gives_its_room_back_below_a_quarter_and_a_small_one_keeps_it() {
        // Each just past a growth (room for about twice its entries):
        // every one shrinks before it holds 32 entries, whatever its
        // hashes (each removal takes at most one from the room).
        for n in [113, 225, 449] {
            let mut entries = filled(n);
            let grown = entries.map.capacity();
            assert!(grown > SHRINK_ABOVE, "{grown}");
            let shrinks = (1..n)
                .rev()
                .filter(|&i| remove_checked(&mut entries, &id(i)))
                .count();
            assert!(shrinks > 0 && entries.map.capacity() < grown, "{n}");
            assert!(entries.contains(&id(0)) && entries.len() == 1);
        }
        // Removals behind the rule's back (straight from the map) leave 20
        // entries in room for 224 (tombstones take at most one each of the
        // 93, so over 128 is left), as long probe sequences can leave a
        // table between shrinks: the next removal gives back all but room
        // for twice its entries, not just the least that holds them.
        let mut sparse = filled(113);
        for i in (20..113).rev() {
            assert!(sparse.map.swap_remove(id(i).as_str()).is_some());
        }
        assert!(remove_checked(&mut sparse, &id(19)), "it shrinks");
        let mut small = filled(100);
        let room = small.map.capacity();
        assert!(room <= SHRINK_ABOVE, "{room}");
        for i in (1..100).rev() {
            assert!(!remove_checked(&mut small, &id(i)));
        }
    }

    /// The same rule for a take in one pass: a grown table that a take
    /// leaves under a quarter full gives its room back; a take of nothing
    /// or of a few keeps it. What is taken is exactly what was accepted.
    #[test]
    fn a_take_in_one_pass_gives_room_back_as_removals_do() {
        let mut entries = filled(449);
        let grown = entries.map.capacity();
        let few = entries.extract(0, |slot| slot.seq < 3);
        assert_eq!(few.len(), 3);
        assert!(entries.extract(0, |_| false).is_empty());
        // Kept, less the tombstones: hashbrown marks a removed bucket
        // deleted, not empty, unless its probe group still has an empty
        // slot, and counts each such tombstone against the capacity. Which
        // buckets those are follows the per-process hash seed, so each of
        // the three removals costs one unit of room or none (the test
        // compared the room exactly: 895 against 896 in 12 of 400 runs,
        // issue 37).
        let kept = entries.map.capacity();
        assert!(
            kept <= grown && grown - kept <= few.len(),
            "a few taken: the room is kept ({grown} -> {kept})"
        );
        let mut most = entries.extract(0, |slot| slot.seq >= 20);
        most.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(most.len(), 429);
        assert_eq!(&*most[0].id, id(20).as_str());
        assert_eq!(entries.len(), 17);
        // Given back by the rule, not only lost to tombstones (each of the
        // 429 removals may cost one unit of room, which alone would leave
        // the room under `grown`): at most four times its entries.
        assert!(
            entries.map.capacity() <= 4 * entries.len() && entries.map.capacity() >= 34,
            "{grown} -> {}",
            entries.map.capacity()
        );
    }
}
