//! The ledger's indexes, kept only when there are enough entries to pay
//! for them.
//!
//! With few entries (at most [`Ledger::KEEP_ABOVE`], the usual task's
//! handful) a take or `next_overdue` scans the entries, which costs less
//! than keeping three ordered indexes up to date on every register,
//! arrival and take. Past it, the ledger keeps them — not-arrived entries
//! by start time, arrived entries by id, and (once a `live()` asked for
//! it) the live data in a persistent map — so that takes cost O(k log n)
//! and `live()` O(1) after its first call (SPEC §2). It drops
//! them again at half that, so a ledger that hovers at the threshold does
//! not rebuild them at every step.
//!
//! The indexes are a function of the entries: two ledgers with equal
//! entries are equal whether or not they keep them ([`Index`]'s `Eq` and
//! `Hash` see nothing), so the model checker counts the same states.
//!
//! [`Ledger::KEEP_ABOVE`]: super::Ledger::KEEP_ABOVE

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use super::DelegationId;
use super::entries::Entries;

/// The indexes of a ledger that keeps them.
#[derive(Clone, Debug)]
pub(super) struct Kept<D, T> {
    /// Not-arrived entries' ids by start time, then registration number.
    pub(super) waiting: std::collections::BTreeMap<(T, u64), DelegationId>,
    /// Arrived entries still in the ledger, by id.
    pub(super) arrived: BTreeSet<DelegationId>,
    /// Every entry's data by id, shared with the callers of `live()`:
    /// built by the first `live()` and kept from then on, so a ledger
    /// nobody takes snapshots of does not pay for it.
    pub(super) live: OnceLock<LiveMap<D>>,
}

/// The live data by id, as `live()` shares it.
pub(super) type LiveMap<D> = imbl::OrdMap<DelegationId, Arc<D>>;

impl<D, T> Kept<D, T> {
    /// The snapshot map, if some `live()` built it.
    pub(super) fn live_mut(&mut self) -> Option<&mut LiveMap<D>> {
        self.live.get_mut()
    }
}

/// The snapshot map of `entries`, built at once.
pub(super) fn live_map<D, C, T>(entries: &Entries<D, C, T>) -> LiveMap<D> {
    entries
        .iter()
        .map(|(id, slot)| (Arc::clone(id), Arc::clone(&slot.entry.data)))
        .collect()
}

/// The ledger's indexes, or `None` while it scans its entries instead.
#[derive(Clone, Debug)]
pub(super) struct Index<D, T>(pub(super) Option<Box<Kept<D, T>>>);

impl<D, T: Ord + Copy> Index<D, T> {
    /// The indexes of `entries`, built at once.
    pub(super) fn build<C>(entries: &Entries<D, C, T>) -> Kept<D, T> {
        let mut waiting = std::collections::BTreeMap::new();
        let mut arrived = BTreeSet::new();
        for (id, slot) in entries.iter() {
            if slot.entry.arrived {
                arrived.insert(Arc::clone(id));
            } else {
                waiting.insert((slot.entry.started, slot.seq), Arc::clone(id));
            }
        }
        Kept {
            waiting,
            arrived,
            live: OnceLock::new(),
        }
    }
}

impl<D, T> PartialEq for Index<D, T> {
    /// Always: the indexes are a function of the entries.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<D, T> Eq for Index<D, T> {}

impl<D, T> std::hash::Hash for Index<D, T> {
    /// Nothing: the indexes are a function of the entries.
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::{Arrival, Ledger};

    type Core = Ledger<u32, (), Duration>;

    /// Every answer of a ledger that keeps its indexes from its first entry
    /// equals one that never does, across the switches both ways (the
    /// indexes change how, never what, a ledger answers).
    #[test]
    fn keeping_the_indexes_changes_no_answer() {
        let mut ledgers = [
            Core::keeping_indexes_above(0),
            Core::keeping_indexes_above(6),
            Core::keeping_indexes_above(usize::MAX),
        ];
        for ledger in &mut ledgers {
            ledger.scope_task("t".into()).unwrap();
        }
        let mut seen: [Vec<String>; 3] = Default::default();
        for round in 0..40u32 {
            for (ledger, seen) in ledgers.iter_mut().zip(&mut seen) {
                let id = format!("d{:02}", (round * 7) % 23);
                let at = Duration::from_secs(u64::from(round % 5));
                seen.push(format!("{:?}", ledger.register(&id, "t", round, at)));
                let other = format!("d{:02}", (round * 3) % 23);
                let arrival = ledger.arrive_decided(&other, false);
                seen.push(format!("{arrival:?}"));
                if arrival == Arrival::Delivered && round % 3 == 0 {
                    seen.push(format!("{:?}", ids(ledger.take_arrived())));
                }
                if round % 4 == 0 {
                    let now = Duration::from_secs(u64::from(round % 7));
                    let overdue = ledger.take_overdue(Duration::from_secs(2), now);
                    seen.push(format!("{:?}", ids(overdue)));
                }
                if round % 9 == 8 {
                    seen.push(format!("{:?}", ids(ledger.take_all())));
                }
                seen.push(format!("{:?}", ledger.next_overdue(Duration::from_secs(1))));
                seen.push(format!("{:?}", ledger.counts()));
                seen.push(format!("{:?}", ledger.live()));
                seen.push(format!("{}", ledger.delivered_len()));
            }
        }
        assert_eq!(seen[0], seen[2]);
        assert_eq!(seen[1], seen[2]);
    }

    /// SPEC §2's scale: a ledger keeps its indexes once it holds more than
    /// `keep_above` entries, and drops them once it holds `keep_above / 2`
    /// or fewer (not at every step around one threshold); a take of every
    /// entry, or a new scope, drops them at once.
    #[test]
    fn the_indexes_are_kept_past_keep_above_entries_and_dropped_at_half_of_it() {
        let kept = |ledger: &Core| ledger.index.0.is_some();
        for keep_above in [0, 1, 6, 7] {
            let mut ledger = Core::keeping_indexes_above(keep_above);
            ledger.scope_task("t".into()).unwrap();
            for n in 1..=keep_above + 3 {
                ledger
                    .register(&format!("d{n:02}"), "t", 0, Duration::ZERO)
                    .unwrap();
                assert_eq!(kept(&ledger), n > keep_above, "{n} of {keep_above}: up");
            }
            for n in (0..keep_above + 3).rev() {
                assert!(ledger.discard(&format!("d{:02}", n + 1)).is_some());
                assert_eq!(
                    kept(&ledger),
                    n > keep_above / 2,
                    "{n} of {keep_above}: down"
                );
            }
            for n in 1..=keep_above + 1 {
                ledger
                    .register(&format!("e{n:02}"), "t", 0, Duration::ZERO)
                    .unwrap();
            }
            assert!(kept(&ledger), "built again past {keep_above}");
            if keep_above % 2 == 0 {
                assert_eq!(ledger.arrive_decided("e01", false), Arrival::Delivered);
                assert_eq!(ids(ledger.take_arrived()), ["e01"]);
                assert_eq!(kept(&ledger), keep_above / 2 < keep_above);
                drop(ledger.take_all());
            } else {
                drop(ledger.scope_task("u".into()).unwrap());
            }
            assert!(!kept(&ledger), "nothing left to index");
            assert_eq!(ledger.counts(), Default::default());
        }
        assert_eq!(Core::new(), Core::keeping_indexes_above(Core::KEEP_ABOVE));
        let mut ledger = Core::new();
        ledger.scope_task("t".into()).unwrap();
        for n in 0..=Core::KEEP_ABOVE {
            assert!(!kept(&ledger), "{n}");
            ledger
                .register(&format!("d{n:02}"), "t", 0, Duration::ZERO)
                .unwrap();
        }
        assert!(kept(&ledger), "past KEEP_ABOVE");
    }

    /// SPEC §2's scale: a ledger that keeps its indexes builds its
    /// snapshot map only when a `live()` first asks for it (a ledger
    /// nobody takes snapshots of does not pay for it), then keeps it up to
    /// date: every later snapshot lists the entries as they are, and one
    /// already taken does not change.
    #[test]
    fn the_snapshot_map_is_built_by_the_first_live_and_kept_up_to_date() {
        let built = |ledger: &Core| {
            let kept = ledger.index.0.as_ref().expect("indexes kept");
            kept.live.get().is_some()
        };
        let mut ledger = Core::keeping_indexes_above(2);
        ledger.scope_task("t".into()).unwrap();
        for n in 0..4 {
            ledger
                .register(&format!("d{n}"), "t", n, Duration::ZERO)
                .unwrap();
        }
        assert!(!built(&ledger), "no live() yet");
        let first = ledger.live();
        assert!(built(&ledger), "built by the first live()");
        assert_eq!(first.len(), 4);
        ledger.register("d4", "t", 4, Duration::ZERO).unwrap();
        assert!(ledger.discard("d0").is_some());
        assert_eq!(ledger.arrive_decided("d1", false), Arrival::Delivered);
        assert_eq!(ids(ledger.take_arrived()), ["d1"]);
        let rows = |live: &super::super::Live<u32>| {
            live.iter()
                .map(|(id, data)| format!("{id}={data}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(rows(&ledger.live()), ["d2=2", "d3=3", "d4=4"]);
        assert_eq!(rows(&first), ["d0=0", "d1=1", "d2=2", "d3=3"]);
    }

    fn ids(taken: Vec<super::super::Taken<u32, (), Duration>>) -> Vec<String> {
        taken.iter().map(|taken| taken.id.to_string()).collect()
    }
}
