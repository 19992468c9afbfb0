//! The visited set: an open-addressing table of whole packed states.
//!
//! Each slot holds a state's key and its id side by side, so a lookup reads
//! one cache line (linear probing) and compares keys exactly — no
//! fingerprints. On the large configurations the explorer is bound by this
//! one random memory access per transition.

use std::hash::{BuildHasher, Hash};

use rustc_hash::FxBuildHasher;

const EMPTY: u32 = u32::MAX;

/// Keys with ids `0..len`, in insertion order of ids.
pub(crate) struct Visited<K> {
    slots: Vec<(K, u32)>,
    /// `64 - log2(slots.len())`: the slot is the hash's top bits.
    shift: u32,
    len: usize,
}

impl<K: Copy + Eq + Hash + Default> Visited<K> {
    pub(crate) fn new() -> Self {
        Self {
            slots: vec![(K::default(), EMPTY); 1024],
            shift: 64 - 10,
            len: 0,
        }
    }

    fn hash(key: &K) -> u64 {
        FxBuildHasher.hash_one(key)
    }

    /// The id of `key`, inserting it as `len` if new; `true` if it was new.
    pub(crate) fn insert(&mut self, key: K) -> (u32, bool) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = (Self::hash(&key) >> self.shift) as usize;
        loop {
            let (k, id) = self.slots[at];
            if id == EMPTY {
                let id = u32::try_from(self.len).expect("fewer than 2^32 - 1 states");
                assert_ne!(id, EMPTY, "fewer than 2^32 - 1 states");
                self.slots[at] = (key, id);
                self.len += 1;
                return (id, true);
            }
            if k == key {
                return (id, false);
            }
            at = (at + 1) & mask;
        }
    }

    /// Reads the first slot of each key, so that the cache misses of a
    /// batch of lookups overlap; the inserts that follow then hit the cache.
    pub(crate) fn warm(&self, keys: impl Iterator<Item = K>) {
        let mut any = 0u32;
        for key in keys {
            any ^= self.slots[(Self::hash(&key) >> self.shift) as usize].1;
        }
        std::hint::black_box(any);
    }

    fn grow(&mut self) {
        let size = 2 * self.slots.len();
        let old = std::mem::replace(&mut self.slots, vec![(K::default(), EMPTY); size]);
        self.shift -= 1;
        let mask = self.slots.len() - 1;
        for (key, id) in old.into_iter().filter(|&(_, id)| id != EMPTY) {
            let mut at = (Self::hash(&key) >> self.shift) as usize;
            while self.slots[at].1 != EMPTY {
                at = (at + 1) & mask;
            }
            self.slots[at] = (key, id);
        }
    }
}
