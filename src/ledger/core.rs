//! The delegation ledger as pure functions over one value, [`Ledger`].
//!
//! Each method is one event of SPEC §2 and decides it completely; [`step`]
//! dispatches an [`Event`] to them (for the model checker and the fuzzer).
//! No locks, no clock: `now` and `started` are [`Moment`]s the caller reads
//! from its monotonic clock (`Instant` in the adapter, a `Duration` since
//! some origin in the model), and children are only *returned* to be ended —
//! the core never ends anything itself.
//!
//! [`Event`] and [`Outcome`] are exhaustive (not `#[non_exhaustive]`) on
//! purpose: they are the ledger's table, and every match on them, here and
//! in the model checker and fuzzers, must fail to compile when an event is
//! added until its cells are decided. A new variant is a breaking change.
//! The answers a caller only reads ([`Arrival`], [`RegisterError`]) may
//! grow and are `#[non_exhaustive]`.
//!
//! Scale: entries are kept in a hash table by id
//! (`entries.rs`); what a take or a snapshot returns is sorted by id. Past
//! [`Ledger::KEEP_ABOVE`] entries, two indexes — not-arrived entries by
//! start time, arrived entries by id — make `take_overdue` cost O(k log n)
//! for k taken, `next_overdue` O(log n) and `take_arrived` O(k log n); a
//! third view, the live data by id, is a persistent map ([`Live`]), built
//! by the first `live()` that needs it: `live()` then shares it in O(1),
//! and a change made while a caller still holds it copies only the path it
//! touches. With fewer entries (a task's usual
//! handful) the ledger scans them instead, which costs less than keeping
//! the indexes (`index.rs`). `counts` is O(1) either way.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use crate::facts::{IdError, check_id};
use delivered::Delivered;
use entries::{Entries, Slot};
use index::{Index, Kept};

mod delivered;
mod entries;
mod event;
mod index;
mod types;
mod wait;

pub use event::{Event, Outcome, step};
pub use types::{
    Adoption, Arrival, Child, DelegationId, Entry, Live, LiveIter, Moment, RegisterError,
    ScopeToken, Taken,
};
pub use wait::Waited;

/// What `counts()` answers (D4): the entries not yet arrived, and the
/// arrived ones not yet taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// Entries whose outcome has not arrived.
    pub outstanding: usize,
    /// Entries whose outcome arrived and that were not taken yet.
    pub arrived: usize,
}

/// What [`Ledger::scope_task`] returns: the new scope's token, and the
/// entries the previous scope left (their children not arrived must be
/// ended).
pub type Scoped<D, C, T = Duration> = (ScopeToken, Vec<Taken<D, C, T>>);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Scope {
    task: String,
    token: ScopeToken,
}

/// The ledger: the task in scope, its delegations, the delivered memory,
/// and the waits for arrivals (the pending ones, the wake-ups given to
/// them, the one stored permit: see [`begin_wait`](Ledger::begin_wait)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ledger<D, C, T = Duration> {
    scope: Option<Scope>,
    scopes_issued: u64,
    entries: Entries<D, C, T>,
    /// How many entries have arrived.
    arrived: usize,
    /// The indexes, kept past `keep_above` entries (`index.rs`).
    index: Index<D, T>,
    /// The number of entries past which the indexes are kept.
    keep_above: usize,
    /// Ids delivered and taken in this scope; dropped with the scope.
    delivered: Delivered,
    /// One stored wake-up for the next wait (Notify's permit).
    permit: bool,
    /// Waits pending (`begin_wait` answered `Pending`, neither resolved
    /// nor dropped since).
    pending: usize,
    /// Wake-ups given to pending waits and not yet taken: `<= pending`.
    given: usize,
}

impl<D, C, T: Moment> Default for Ledger<D, C, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D, C, T: Moment> Ledger<D, C, T> {
    /// The number of entries past which a ledger keeps its indexes (and
    /// below half of which it drops them again): with fewer, scanning the
    /// entries costs less than keeping the indexes up to date.
    pub const KEEP_ABOVE: usize = 32;

    /// An empty ledger with no task in scope.
    pub fn new() -> Self {
        Self::keeping_indexes_above(Self::KEEP_ABOVE)
    }

    /// An empty ledger that keeps its indexes once it holds more than
    /// `keep_above` entries, and drops them once it holds `keep_above / 2`
    /// or fewer: what [`new`](Self::new) does with [`KEEP_ABOVE`]. It
    /// answers every event the same whatever `keep_above` is; tests and
    /// fuzzers lower it to check both ways of answering.
    ///
    /// [`KEEP_ABOVE`]: Self::KEEP_ABOVE
    pub fn keeping_indexes_above(keep_above: usize) -> Self {
        Self {
            scope: None,
            scopes_issued: 0,
            entries: Entries::new(),
            arrived: 0,
            index: Index(None),
            keep_above,
            delivered: Delivered::default(),
            permit: false,
            pending: 0,
            given: 0,
        }
    }

    /// The task in scope and its token.
    pub fn scope(&self) -> Option<(&str, ScopeToken)> {
        self.scope
            .as_ref()
            .map(|scope| (scope.task.as_str(), scope.token))
    }

    /// Scopes `task`: takes every entry of the previous scope (their
    /// children not arrived must be ended: [`Taken::child_to_end`]), forgets
    /// its delivered memory, and returns the new scope's token.
    ///
    /// # Errors
    ///
    /// An [`IdError`] if `task` is not an acceptable identifier (checked as
    /// delegation ids are); the ledger is then unchanged.
    pub fn scope_task(&mut self, task: String) -> Result<Scoped<D, C, T>, IdError> {
        check_id(&task)?;
        let token = ScopeToken::new(self.scopes_issued);
        self.scopes_issued = self.scopes_issued.saturating_add(1);
        let left = self.clear();
        self.scope = Some(Scope { task, token });
        Ok((token, left))
    }

    /// Ends the scope `token`: like [`scope_task`](Self::scope_task) without
    /// a new task. `None` (and nothing changes) if `token` is not the
    /// current scope's.
    pub fn end_scope(&mut self, token: ScopeToken) -> Option<Vec<Taken<D, C, T>>> {
        if self.scope.as_ref().is_none_or(|scope| scope.token != token) {
            return None;
        }
        self.scope = None;
        Some(self.clear())
    }

    /// Empties the scope. The wake-ups its arrivals stored or gave go with
    /// the arrivals (taken with the scope); the pending waits stay pending.
    fn clear(&mut self) -> Vec<Taken<D, C, T>> {
        self.index = Index(None);
        self.arrived = 0;
        self.delivered.clear();
        self.permit = false;
        self.given = 0;
        self.entries
            .take_sorted()
            .into_iter()
            .map(|(id, entry)| Taken { id, entry })
            .collect()
    }

    /// Registers delegation `id` of `task`, started at `started`.
    ///
    /// # Errors
    ///
    /// A [`RegisterError`]; the ledger is then unchanged.
    pub fn register(
        &mut self,
        id: &str,
        task: &str,
        data: D,
        started: T,
    ) -> Result<(), RegisterError> {
        self.admit(id, task)?;
        self.insert(id, data, started);
        Ok(())
    }

    /// [`register`](Self::register) for data that names its own task:
    /// `task_of(&data)` is the task (so a caller need not copy it out of
    /// the data it moves in).
    ///
    /// # Errors
    ///
    /// A [`RegisterError`]; the ledger is then unchanged.
    pub fn register_with(
        &mut self,
        id: &str,
        data: D,
        task_of: fn(&D) -> &str,
        started: T,
    ) -> Result<(), RegisterError> {
        self.admit(id, task_of(&data))?;
        self.insert(id, data, started);
        Ok(())
    }

    /// Whether delegation `id` of `task` may be registered now.
    fn admit(&self, id: &str, task: &str) -> Result<(), RegisterError> {
        check_id(id).map_err(RegisterError::InvalidId)?;
        let scope = self.scope.as_ref().ok_or(RegisterError::NoTaskInScope)?;
        if scope.task != task {
            return Err(RegisterError::OtherTask {
                scoped: scope.task.clone(),
                found: task.to_owned(),
            });
        }
        if self.entries.contains(id) || self.delivered.contains(id) {
            return Err(RegisterError::DuplicateId);
        }
        Ok(())
    }

    /// Adds an admitted delegation.
    fn insert(&mut self, id: &str, data: D, started: T) {
        let id: DelegationId = Arc::from(id);
        let data = Arc::new(data);
        let entry = |data| Entry {
            data,
            started,
            arrived: false,
            child: None,
        };
        let Some(kept) = self.index.0.as_deref_mut() else {
            // No index: the table takes the id and the data as they are.
            self.entries.insert(id, entry(data));
            if self.entries.len() > self.keep_above {
                self.index = Index(Some(Box::new(Index::build(&self.entries))));
            }
            return;
        };
        if let Some(map) = kept.live_mut() {
            map.insert(Arc::clone(&id), Arc::clone(&data));
        }
        let seq = self.entries.insert(Arc::clone(&id), entry(data));
        kept.waiting.insert((started, seq), id);
    }

    /// The indexes, if kept.
    fn kept(&mut self) -> Option<&mut Kept<D, T>> {
        self.index.0.as_deref_mut()
    }

    /// Gives delegation `id` its launched child. A child replaced, or given
    /// to an id that is not live, comes back to be ended (D3).
    pub fn adopt(&mut self, id: &str, child: C) -> Adoption<C> {
        match self.entries.get_mut(id) {
            Some(slot) => match slot.entry.child.replace(child) {
                Some(earlier) => Adoption::Replaced(earlier),
                None => Adoption::Adopted,
            },
            None => Adoption::NotLive(child),
        }
    }

    /// Removes delegation `id`; an arrived entry is remembered as
    /// delivered. A child not arrived must be ended, or kept running by
    /// its caller ([`Taken::child_to_end`]), like every entry taken.
    pub fn discard(&mut self, id: &str) -> Option<Taken<D, C, T>> {
        let (id, slot) = self.entries.remove(id)?;
        Some(self.account(id, slot))
    }

    /// Removes an entry's index rows; remembers an arrived one as delivered.
    fn account(&mut self, id: DelegationId, slot: Slot<D, C, T>) -> Taken<D, C, T> {
        let Slot { entry, seq } = slot;
        if let Some(kept) = self.kept() {
            if let Some(map) = kept.live_mut() {
                map.remove(&id);
            }
            if entry.arrived {
                kept.arrived.remove(&id);
            } else {
                kept.waiting.remove(&(entry.started, seq));
            }
        }
        if entry.arrived {
            self.arrived -= 1;
            self.delivered.insert(Arc::clone(&id));
        }
        if self.entries.len() <= self.keep_above / 2 {
            self.index = Index(None);
        }
        Taken { id, entry }
    }

    /// Takes each entry `ids` names (ids must be live), in id order.
    fn take_ids(&mut self, mut ids: Vec<DelegationId>) -> Vec<Taken<D, C, T>> {
        ids.sort_unstable();
        ids.into_iter().filter_map(|id| self.discard(&id)).collect()
    }

    /// Delivers delegation `id`'s outcome: [`Arrival::Delivered`] once, and
    /// then one wake-up: to a pending wait that has none, else the stored
    /// permit (D1, D6; [`begin_wait`](Self::begin_wait)).
    pub fn arrive(&mut self, id: &str) -> Arrival
    where
        C: Child,
    {
        let Ok(arrival) =
            self.arrive_asking(id, |child| Ok::<_, Infallible>(child.is_being_ended()));
        arrival
    }

    /// The child whose ending would refuse an arrival for `id` now: the
    /// child of a live entry not arrived yet, the one
    /// [`arrive_asking`](Self::arrive_asking) asks.
    pub fn arrival_child(&self, id: &str) -> Option<&C> {
        // A live id is never a delivered one (`register` refuses those).
        self.entries
            .get(id)
            .filter(|entry| !entry.arrived)
            .and_then(|entry| entry.child.as_ref())
    }

    /// [`arrive`](Self::arrive) with the answer of
    /// [`arrival_child`](Self::arrival_child)`(id)`'s
    /// [`is_being_ended`](Child::is_being_ended) known beforehand (for a
    /// ledger whose children are not [`Child`]): `being_ended` is read
    /// only if there is such a child.
    pub fn arrive_decided(&mut self, id: &str, being_ended: bool) -> Arrival {
        let Ok(arrival) = self.arrive_asking(id, |_| Ok::<_, Infallible>(being_ended));
        arrival
    }

    /// [`arrive`](Self::arrive) in one lookup of `id`, with `ask` in place
    /// of [`is_being_ended`](Child::is_being_ended): it is called only on
    /// [`arrival_child`](Self::arrival_child)`(id)`, and its `Err` returns
    /// at once, with nothing changed. A caller that must not ask a child
    /// under its lock (the adapter) answers `Err` for a child it has not
    /// asked yet, asks it outside, and comes back with the answer.
    pub fn arrive_asking<E>(
        &mut self,
        id: &str,
        ask: impl FnOnce(&C) -> Result<bool, E>,
    ) -> Result<Arrival, E> {
        // A live id is never a delivered one, so the delivered memory is
        // asked only for an id that is not live.
        let Some(Slot { entry, seq }) = self.entries.get_mut(id) else {
            return Ok(if self.delivered.contains(id) {
                Arrival::AlreadyDelivered
            } else {
                Arrival::NotOutstanding
            });
        };
        if entry.arrived {
            return Ok(Arrival::AlreadyDelivered);
        }
        if let Some(child) = &entry.child {
            if ask(child)? {
                return Ok(Arrival::BeingEnded);
            }
        }
        entry.arrived = true;
        let key = (entry.started, *seq);
        self.arrived += 1;
        if let Some(kept) = self.kept() {
            if let Some(id) = kept.waiting.remove(&key) {
                kept.arrived.insert(id);
            }
        }
        self.wake_one();
        Ok(Arrival::Delivered)
    }

    /// The entries not yet arrived, and the arrived ones not yet taken
    /// (D4). O(1).
    pub fn counts(&self) -> Counts {
        Counts {
            outstanding: self.entries.len() - self.arrived,
            arrived: self.arrived,
        }
    }

    /// Takes every arrived entry, in id order; each is remembered as
    /// delivered.
    pub fn take_arrived(&mut self) -> Vec<Taken<D, C, T>> {
        if self.arrived == 0 {
            return Vec::new();
        }
        match self.kept() {
            // Already in id order; `account` removes each from the index.
            Some(kept) => {
                let ids = std::mem::take(&mut kept.arrived);
                ids.into_iter()
                    .filter_map(|id| {
                        let (id, slot) = self.entries.remove(&id)?;
                        Some(self.account(id, slot))
                    })
                    .collect()
            }
            None => self.take_scanned(self.arrived, |slot| slot.entry.arrived),
        }
    }

    /// Takes, in one pass over the entries, every one `take` accepts, in
    /// id order (for a ledger that keeps no index); `expected` is how many
    /// the caller expects. Arrived ones are remembered as delivered.
    fn take_scanned(
        &mut self,
        expected: usize,
        take: impl FnMut(&Slot<D, C, T>) -> bool,
    ) -> Vec<Taken<D, C, T>> {
        debug_assert!(
            self.index.0.is_none(),
            "a scan is for a ledger with no index"
        );
        let mut taken = self.entries.extract(expected, take);
        for taken in &taken {
            if taken.entry.arrived {
                self.arrived -= 1;
                self.delivered.insert(Arc::clone(&taken.id));
            }
        }
        taken.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        taken
    }

    /// Takes the not-arrived entries with `started + bound <= now`, in id
    /// order. Their children must be ended ([`Taken::child_to_end`]).
    pub fn take_overdue(&mut self, bound: Duration, now: T) -> Vec<Taken<D, C, T>> {
        let Some(latest) = Moment::checked_sub(now, bound) else {
            return Vec::new();
        };
        let Some(kept) = &self.index.0 else {
            return self.take_scanned(0, |slot| {
                !slot.entry.arrived && slot.entry.started <= latest
            });
        };
        let ids = kept
            .waiting
            .iter()
            .take_while(|((started, _), _)| *started <= latest)
            .map(|(_, id)| Arc::clone(id))
            .collect();
        self.take_ids(ids)
    }

    /// When the next not-arrived entry becomes overdue under `bound`.
    pub fn next_overdue(&self, bound: Duration) -> Option<T> {
        let first = match &self.index.0 {
            Some(kept) => kept
                .waiting
                .first_key_value()
                .map(|((started, _), _)| *started),
            None => self
                .entries
                .iter()
                .filter(|(_, slot)| !slot.entry.arrived)
                .map(|(_, slot)| slot.entry.started)
                .min(),
        }?;
        Moment::checked_add(first, bound)
    }

    /// Takes every entry, in id order; arrived ones are remembered as
    /// delivered.
    pub fn take_all(&mut self) -> Vec<Taken<D, C, T>> {
        self.index = Index(None);
        self.arrived = 0;
        let arrived = self
            .entries
            .iter()
            .filter(|(_, slot)| slot.entry.arrived)
            .map(|(id, _)| Arc::clone(id));
        self.delivered.extend(arrived);
        self.entries
            .take_sorted()
            .into_iter()
            .map(|(id, entry)| Taken { id, entry })
            .collect()
    }

    /// The live delegations in id order, as a snapshot: O(1) whatever the
    /// number of entries, but for the first `live()` of a large ledger, so
    /// a caller holding a lock around the ledger holds it briefly. A ledger
    /// that keeps its indexes shares its own map (one reference count); a
    /// smaller one copies its ids and data handles (at most as many as it
    /// keeps indexes above, [`KEEP_ABOVE`](Self::KEEP_ABOVE) by default)
    /// into one allocation. A large ledger builds that map at its first
    /// `live()` (since it began keeping its indexes), O(n) once, and keeps
    /// it up to date from then on (O(log n) a change), so a ledger nobody
    /// takes snapshots of does not pay for it.
    pub fn live(&self) -> Live<D> {
        match &self.index.0 {
            Some(kept) => Live::kept(
                kept.live
                    .get_or_init(|| index::live_map(&self.entries))
                    .clone(),
            ),
            None => {
                let mut rows: Vec<_> = self
                    .entries
                    .iter()
                    .map(|(id, slot)| (Arc::clone(id), Arc::clone(&slot.entry.data)))
                    .collect();
                rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                Live::few(rows)
            }
        }
    }

    /// The entry for `id`, if live.
    pub fn entry(&self, id: &str) -> Option<&Entry<D, C, T>> {
        self.entries.get(id)
    }

    /// The number of ids remembered as delivered in this scope.
    pub fn delivered_len(&self) -> usize {
        self.delivered.len()
    }
}
