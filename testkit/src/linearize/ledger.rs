//! The delegation ledger's specification: each operation is one call of
//! the real core's [`step`].

use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use baton::ledger::core::{Child, Event, Ledger, Moment, Outcome, step};

use super::Spec;

/// One ledger operation of a recorded history: the core event it amounts
/// to and the outcome the runtime observed.
///
/// Each of `Delegations`'s methods decides under one lock (an `arrive`
/// whose entry has a child also takes it before, to find the child, and
/// changes nothing then), so each is one event: `register` is
/// [`Event::Register`], `arrive` [`Event::Arrive`], `take_arrived`
/// [`Event::TakeArrived`], and a `wait_for_arrival` is a
/// [`Event::BeginWait`] on its first poll, a [`Event::PollWait`] on each
/// later one and a [`Event::DropWait`] if it is dropped pending: record
/// each poll as its own operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerOp<D, C, T> {
    /// The event the call fed the ledger.
    pub event: Event<D, C, T>,
    /// What it returned.
    pub outcome: Outcome<D, C, T>,
}

/// The delegation ledger's specification over
/// [`step`]: an operation takes one atomic step,
/// which must return exactly the outcome it was observed to return (D1–D6
/// then hold of the history, since they hold of every sequence of steps).
///
/// ```
/// use baton::ledger::core::{Child, Event, Ledger, Outcome, ScopeToken};
/// use baton_testkit::linearize::{Call, LedgerOp, LedgerSpec, linearize};
/// use std::time::Duration;
///
/// #[derive(Clone, Debug, PartialEq, Eq, Hash)]
/// struct Kid;
/// impl Child for Kid {
///     fn begin_ending(&self) {}
///     fn is_being_ended(&self) -> bool { false }
/// }
///
/// // Two threads scope the same ledger at overlapping times, and each saw
/// // the first token: no sequential order explains that.
/// let mut scratch = Ledger::<(), Kid>::new();
/// let Ok((first, _)) = scratch.scope_task("task".into()) else { unreachable!() };
/// let scoped = |invoked, returned| Call {
///     invoked,
///     returned,
///     op: LedgerOp {
///         event: Event::ScopeTask("task".into()),
///         outcome: Outcome::Scoped(first, Vec::new()),
///     },
/// };
/// let spec = LedgerSpec::<(), Kid, Duration>::new();
/// assert!(linearize(&spec, Ledger::new(), &[scoped(1, 3)]).is_some());
/// assert!(linearize(&spec, Ledger::new(), &[scoped(1, 3), scoped(2, 4)]).is_none());
/// ```
pub struct LedgerSpec<D, C, T> {
    types: PhantomData<Types<D, C, T>>,
}

/// The specification's type parameters, held by no value: the spec is
/// `Send` and `Sync` whatever they are.
type Types<D, C, T> = fn() -> (D, C, T);

impl<D, C, T> LedgerSpec<D, C, T> {
    /// The specification.
    pub fn new() -> Self {
        Self { types: PhantomData }
    }
}

impl<D, C, T> Default for LedgerSpec<D, C, T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D, C, T> Debug for LedgerSpec<D, C, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LedgerSpec")
    }
}

impl<D, C, T> Spec for LedgerSpec<D, C, T>
where
    D: Clone + Eq + Hash + Debug,
    C: Child + Clone + Eq + Hash + Debug,
    T: Moment,
{
    type State = Ledger<D, C, T>;
    type Op = LedgerOp<D, C, T>;
    /// Whether the operation has taken its step.
    type Pc = bool;

    fn start(&self, _: &Self::Op) -> bool {
        false
    }

    fn is_done(&self, _: &Self::Op, taken: &bool) -> bool {
        *taken
    }

    fn steps(&self, op: &Self::Op, taken: &bool, state: &Self::State) -> Vec<(bool, Self::State)> {
        if *taken {
            return Vec::new();
        }
        let mut next = state.clone();
        if step(&mut next, op.event.clone()) == op.outcome {
            vec![(true, next)]
        } else {
            Vec::new()
        }
    }
}
