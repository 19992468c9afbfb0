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
//! Scale **[beyond seed]**: entries are kept ordered by id, with two indexes
//! — not-arrived entries by start time, arrived entries by id — so
//! `take_overdue` costs O(k log n) for k taken, `next_overdue` O(log n),
//! `take_arrived` O(k log n) and `counts` O(1). A third view, the live
//! data by id, is a persistent map ([`Live`]): `live()` shares it in O(1),
//! and a change made while a caller still holds it copies only the path it
//! touches.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::facts::{IdError, check_id};

mod event;
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
    entries: BTreeMap<DelegationId, Entry<D, C, T>>,
    /// Not-arrived entries by start time, then id.
    waiting: BTreeSet<(T, DelegationId)>,
    /// Arrived entries still in the ledger, by id.
    arrived: BTreeSet<DelegationId>,
    /// Ids delivered and taken in this scope; dropped with the scope.
    delivered: BTreeSet<DelegationId>,
    /// Every entry's data by id, shared with the callers of `live()`.
    live: Live<D>,
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
    /// An empty ledger with no task in scope.
    pub fn new() -> Self {
        Self {
            scope: None,
            scopes_issued: 0,
            entries: BTreeMap::new(),
            waiting: BTreeSet::new(),
            arrived: BTreeSet::new(),
            delivered: BTreeSet::new(),
            live: Live::new(),
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
    /// current scope's **[beyond seed]**.
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
        self.waiting.clear();
        self.arrived.clear();
        self.delivered.clear();
        self.live.clear();
        self.permit = false;
        self.given = 0;
        std::mem::take(&mut self.entries)
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
        check_id(id).map_err(RegisterError::InvalidId)?;
        let scope = self.scope.as_ref().ok_or(RegisterError::NoTaskInScope)?;
        if scope.task != task {
            return Err(RegisterError::OtherTask {
                scoped: scope.task.clone(),
                found: task.to_owned(),
            });
        }
        if self.entries.contains_key(id) || self.delivered.contains(id) {
            return Err(RegisterError::DuplicateId);
        }
        let id: DelegationId = Arc::from(id);
        self.waiting.insert((started, Arc::clone(&id)));
        let data = Arc::new(data);
        self.live.insert(Arc::clone(&id), Arc::clone(&data));
        let entry = Entry {
            data,
            started,
            arrived: false,
            child: None,
        };
        self.entries.insert(id, entry);
        Ok(())
    }

    /// Gives delegation `id` its launched child. A child replaced, or given
    /// to an id that is not live, comes back to be ended (D3).
    pub fn adopt(&mut self, id: &str, child: C) -> Adoption<C> {
        match self.entries.get_mut(id) {
            Some(entry) => match entry.child.replace(child) {
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
        let (id, entry) = self.entries.remove_entry(id)?;
        Some(self.account(id, entry))
    }

    /// Removes an entry's index rows; remembers an arrived one as delivered.
    fn account(&mut self, id: DelegationId, entry: Entry<D, C, T>) -> Taken<D, C, T> {
        self.live.remove(&id);
        if entry.arrived {
            self.arrived.remove(&id);
            self.delivered.insert(Arc::clone(&id));
        } else {
            self.waiting.remove(&(entry.started, Arc::clone(&id)));
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
        let being_ended = self.arrival_child(id).is_some_and(Child::is_being_ended);
        self.arrive_decided(id, being_ended)
    }

    /// The child whose ending would refuse an arrival for `id` now: the
    /// child of a live entry not arrived yet. A caller that must not ask it
    /// under a lock (the adapter) asks it outside, then calls
    /// [`arrive_decided`](Self::arrive_decided).
    pub fn arrival_child(&self, id: &str) -> Option<&C> {
        if self.delivered.contains(id) {
            return None;
        }
        self.entries
            .get(id)
            .filter(|entry| !entry.arrived)
            .and_then(|entry| entry.child.as_ref())
    }

    /// [`arrive`](Self::arrive) with the answer of
    /// [`arrival_child`](Self::arrival_child)`(id)`'s
    /// [`is_being_ended`](Child::is_being_ended) given: `being_ended` is
    /// read only if there is such a child.
    pub fn arrive_decided(&mut self, id: &str, being_ended: bool) -> Arrival {
        if self.delivered.contains(id) {
            return Arrival::AlreadyDelivered;
        }
        let Some((id, entry)) = self.entries.get_key_value(id) else {
            return Arrival::NotOutstanding;
        };
        if entry.arrived {
            return Arrival::AlreadyDelivered;
        }
        if entry.child.is_some() && being_ended {
            return Arrival::BeingEnded;
        }
        let (id, started) = (Arc::clone(id), entry.started);
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.arrived = true;
        }
        self.waiting.remove(&(started, Arc::clone(&id)));
        self.arrived.insert(id);
        self.wake_one();
        Arrival::Delivered
    }

    /// The entries not yet arrived, and the arrived ones not yet taken
    /// (D4). O(1).
    pub fn counts(&self) -> Counts {
        Counts {
            outstanding: self.waiting.len(),
            arrived: self.arrived.len(),
        }
    }

    /// Takes every arrived entry, in id order; each is remembered as
    /// delivered.
    pub fn take_arrived(&mut self) -> Vec<Taken<D, C, T>> {
        let ids = std::mem::take(&mut self.arrived).into_iter().collect();
        self.take_arrived_ids(ids)
    }

    fn take_arrived_ids(&mut self, ids: Vec<DelegationId>) -> Vec<Taken<D, C, T>> {
        // Already sorted (from a BTreeSet); `account` removes from `arrived`.
        ids.into_iter()
            .filter_map(|id| {
                let (id, entry) = self.entries.remove_entry(&id)?;
                Some(self.account(id, entry))
            })
            .collect()
    }

    /// Takes the not-arrived entries with `started + bound <= now`, in id
    /// order. Their children must be ended ([`Taken::child_to_end`]).
    pub fn take_overdue(&mut self, bound: Duration, now: T) -> Vec<Taken<D, C, T>> {
        let Some(latest) = Moment::checked_sub(now, bound) else {
            return Vec::new();
        };
        let mut ids = Vec::new();
        for (started, id) in &self.waiting {
            if *started > latest {
                break;
            }
            ids.push(Arc::clone(id));
        }
        self.take_ids(ids)
    }

    /// When the next not-arrived entry becomes overdue under `bound`.
    pub fn next_overdue(&self, bound: Duration) -> Option<T> {
        let (started, _) = self.waiting.first()?;
        Moment::checked_add(*started, bound)
    }

    /// Takes every entry, in id order; arrived ones are remembered as
    /// delivered.
    pub fn take_all(&mut self) -> Vec<Taken<D, C, T>> {
        self.waiting.clear();
        let arrived = std::mem::take(&mut self.arrived);
        self.delivered.extend(arrived);
        self.live.clear();
        std::mem::take(&mut self.entries)
            .into_iter()
            .map(|(id, entry)| Taken { id, entry })
            .collect()
    }

    /// The live delegations in id order, as a snapshot that shares the
    /// ledger's own map: O(1), so a caller holding a lock around the ledger
    /// holds it for one reference count, whatever the number of entries.
    pub fn live(&self) -> Live<D> {
        self.live.clone()
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
