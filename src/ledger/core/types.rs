//! The ledger's vocabulary: ids, tokens, clocks, children, entries and
//! what each event answers.

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::facts::IdError;

/// A delegation's id, shared between the ledger's map and its indexes.
pub type DelegationId = Arc<str>;

/// Identifies one `scope_task`: a scope's end takes effect only with the
/// token of the scope that is current (SPEC §2: a scope has identity).
///
/// Its number is private so that its representation may change; read it
/// with [`get`](Self::get).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScopeToken(u64);

impl ScopeToken {
    /// The token numbered `number`. A ledger issues its own tokens; this
    /// names one for a model or a test (a stale or a made-up scope end).
    pub const fn new(number: u64) -> ScopeToken {
        ScopeToken(number)
    }

    /// The token's number: a ledger's first scope is 0, each next one 1
    /// more.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// A point on a monotonic clock: `std::time::Instant`, or a `Duration`
/// since an origin of the caller's choosing.
pub trait Moment: Copy + Ord + std::hash::Hash + std::fmt::Debug {
    /// `self + by`, or `None` past the end of the clock.
    fn checked_add(self, by: Duration) -> Option<Self>;
    /// `self - by`, or `None` before its start.
    fn checked_sub(self, by: Duration) -> Option<Self>;
}

impl Moment for Duration {
    fn checked_add(self, by: Duration) -> Option<Self> {
        Duration::checked_add(self, by)
    }
    fn checked_sub(self, by: Duration) -> Option<Self> {
        Duration::checked_sub(self, by)
    }
}

impl Moment for std::time::Instant {
    fn checked_add(self, by: Duration) -> Option<Self> {
        std::time::Instant::checked_add(&self, by)
    }
    fn checked_sub(self, by: Duration) -> Option<Self> {
        std::time::Instant::checked_sub(&self, by)
    }
}

/// A launched child (a process, a session) that can be asked to end.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::time::Instant;
///
/// use baton::ledger::{Arrival, Child, Delegation, Delegations};
///
/// /// A child session: ending it only raises a flag its runner watches.
/// struct Session(Arc<AtomicBool>);
///
/// impl Child for Session {
///     fn begin_ending(&self) {
///         self.0.store(true, Ordering::SeqCst); // must not block
///     }
///     fn is_being_ended(&self) -> bool {
///         self.0.load(Ordering::SeqCst)
///     }
/// }
///
/// let ledger = Delegations::new();
/// let scope = ledger.scope_task("task-1")?;
/// # let delegation = Delegation {
/// #     task_id: "task-1".into(), capsule: "researcher".into(), version: "1.0.0".into(),
/// #     child_session_id: "session-child".into(), child_workdir: "/tmp/child".into(),
/// #     started: Instant::now(),
/// # };
/// ledger.register("child-1", delegation).unwrap();
/// let ended = Arc::new(AtomicBool::new(false));
/// ledger.adopt("child-1", Box::new(Session(Arc::clone(&ended))));
/// drop(scope); // D3: the scope's end begins ending every child not arrived
/// assert!(ended.load(Ordering::SeqCst));
/// assert_eq!(ledger.arrive("child-1"), Arrival::NotOutstanding);
/// # Ok::<(), baton::facts::IdError>(())
/// ```
pub trait Child {
    /// Begins ending the child. Must not block; called outside every lock.
    fn begin_ending(&self);
    /// Whether the child is being ended (by the ledger or anyone else).
    ///
    /// An arrival asks it, so that an outcome from a child being ended is
    /// refused. [`Delegations`] asks it outside its lock: it may call back
    /// into the ledger; it should not block (the arrival waits for it).
    ///
    /// [`Delegations`]: crate::ledger::Delegations
    fn is_being_ended(&self) -> bool;
}

impl<T: Child + ?Sized> Child for Box<T> {
    fn begin_ending(&self) {
        (**self).begin_ending();
    }
    fn is_being_ended(&self) -> bool {
        (**self).is_being_ended()
    }
}

/// One delegation in the ledger.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry<D, C, T = Duration> {
    /// The caller's description of the delegation.
    pub data: Arc<D>,
    /// When it started, on the caller's clock.
    pub started: T,
    /// Whether its outcome was delivered (and not yet taken).
    pub arrived: bool,
    /// Its launched child, once adopted.
    pub child: Option<C>,
}

/// An entry removed from the ledger, with its id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Taken<D, C, T = Duration> {
    /// The delegation's id.
    pub id: DelegationId,
    /// The entry as it was.
    pub entry: Entry<D, C, T>,
}

impl<D, C, T> Taken<D, C, T> {
    /// The child to end because its task let go of it before it arrived
    /// (D3), if any.
    pub fn child_to_end(&self) -> Option<&C> {
        self.entry.child.as_ref().filter(|_| !self.entry.arrived)
    }
}

/// What `arrive` decided (SPEC §2).
///
/// `#[non_exhaustive]`: a later version may tell more cases apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Arrival {
    /// The outcome is delivered now, the first and only time (D1).
    Delivered,
    /// It was delivered before (and maybe already taken).
    AlreadyDelivered,
    /// Nobody waits for this id.
    NotOutstanding,
    /// Its child is being ended: the outcome is not accepted.
    BeingEnded,
}

/// Why `register` refused (SPEC §2). The ledger is
/// unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// The id is not an acceptable identifier.
    #[error("invalid delegation id: {0}")]
    InvalidId(IdError),
    /// No task is in scope.
    #[error("no task is in scope")]
    NoTaskInScope,
    /// The delegation belongs to another task than the one in scope (D2).
    #[error("delegation of task {found:?}, but task {scoped:?} is in scope")]
    OtherTask {
        /// The task in scope.
        scoped: String,
        /// The delegation's task.
        found: String,
    },
    /// The id is live, or was delivered, in this scope: never replaced.
    #[error("delegation id is already in use in this scope")]
    DuplicateId,
}

/// What `adopt` did with the child.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[must_use = "a returned child must be ended"]
pub enum Adoption<C> {
    /// The entry keeps the child.
    Adopted,
    /// The entry keeps the child; this earlier child must be ended.
    Replaced(C),
    /// The id is not live: this child must be ended at once.
    NotLive(C),
}

/// The live delegations at one moment, in id order: what
/// [`Ledger::live`](super::Ledger::live) returns.
///
/// A snapshot never changes once taken. Taking it costs O(1) whatever the
/// number of entries, but for a large ledger's first: a ledger with few
/// entries (at most [`Ledger::KEEP_ABOVE`](super::Ledger::KEEP_ABOVE) by
/// default) copies their ids and data handles into one allocation; a
/// larger one shares its own persistent map, which its first snapshot
/// builds in O(n), and a later change to the ledger copies only the path
/// of the tree it touches (O(log n)) while a snapshot is still held, and
/// nothing once none is.
pub struct Live<D> {
    rows: Rows<D>,
}

/// A snapshot's rows: copied from a small ledger, or its shared map.
enum Rows<D> {
    /// Sorted by id.
    Few(Arc<[(DelegationId, Arc<D>)]>),
    Kept(imbl::OrdMap<DelegationId, Arc<D>>),
}

/// Iterates a [`Live`] snapshot in id order.
pub struct LiveIter<'a, D> {
    inner: RowsIter<'a, D>,
}

enum RowsIter<'a, D> {
    Few(std::slice::Iter<'a, (DelegationId, Arc<D>)>),
    Kept(imbl::ordmap::Iter<'a, DelegationId, Arc<D>, imbl::shared_ptr::DefaultSharedPtr>),
}

impl<D> Live<D> {
    pub(super) fn new() -> Self {
        Self::kept(imbl::OrdMap::new())
    }

    /// A snapshot of `rows`, sorted by id.
    pub(super) fn few(rows: Vec<(DelegationId, Arc<D>)>) -> Self {
        Self {
            rows: Rows::Few(rows.into()),
        }
    }

    /// A snapshot sharing `map`.
    pub(super) fn kept(map: imbl::OrdMap<DelegationId, Arc<D>>) -> Self {
        Self {
            rows: Rows::Kept(map),
        }
    }

    /// The number of live delegations.
    pub fn len(&self) -> usize {
        match &self.rows {
            Rows::Few(rows) => rows.len(),
            Rows::Kept(map) => map.len(),
        }
    }

    /// Whether no delegation is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The data of delegation `id`, if it is live. O(log n).
    pub fn get(&self, id: &str) -> Option<&Arc<D>> {
        match &self.rows {
            Rows::Few(rows) => rows
                .binary_search_by(|(row, _)| (**row).cmp(id))
                .ok()
                .map(|at| &rows[at].1),
            Rows::Kept(map) => map.get(id),
        }
    }

    /// The live delegations' ids and data, in id order.
    pub fn iter(&self) -> LiveIter<'_, D> {
        LiveIter {
            inner: match &self.rows {
                Rows::Few(rows) => RowsIter::Few(rows.iter()),
                Rows::Kept(map) => RowsIter::Kept(map.iter()),
            },
        }
    }
}

impl<D> Clone for Live<D> {
    /// Another handle on the same snapshot. O(1).
    fn clone(&self) -> Self {
        Self {
            rows: match &self.rows {
                Rows::Few(rows) => Rows::Few(Arc::clone(rows)),
                Rows::Kept(map) => Rows::Kept(map.clone()),
            },
        }
    }
}

impl<D> Default for Live<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: PartialEq> PartialEq for Live<D> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<D: Eq> Eq for Live<D> {}

impl<D: std::hash::Hash> std::hash::Hash for Live<D> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.len().hash(state);
        for row in self {
            row.hash(state);
        }
    }
}

impl<D: std::fmt::Debug> std::fmt::Debug for Live<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a, D> Iterator for LiveIter<'a, D> {
    type Item = (&'a DelegationId, &'a Arc<D>);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            RowsIter::Few(rows) => rows.next().map(|(id, data)| (id, data)),
            RowsIter::Kept(map) => map.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.inner {
            RowsIter::Few(rows) => rows.size_hint(),
            RowsIter::Kept(map) => map.size_hint(),
        }
    }
}

impl<D> DoubleEndedIterator for LiveIter<'_, D> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            RowsIter::Few(rows) => rows.next_back().map(|(id, data)| (id, data)),
            RowsIter::Kept(map) => map.next_back(),
        }
    }
}

impl<D> ExactSizeIterator for LiveIter<'_, D> {}

impl<D> std::iter::FusedIterator for LiveIter<'_, D> {}

impl<'a, D> IntoIterator for &'a Live<D> {
    type Item = (&'a DelegationId, &'a Arc<D>);
    type IntoIter = LiveIter<'a, D>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
