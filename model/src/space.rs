//! What the explorer explores: a [`Model`] (its states, its successors and
//! their fairness, its properties), and the reachable graph it stores,
//! which the liveness search ([`crate::lasso`]) and the rebuilding of
//! traces (`paths`) read.

use std::fmt::Debug;
use std::hash::Hash;

/// Whether a transition must eventually be taken when it stays enabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fairness {
    /// May never happen (an actor that may stop, an outside event).
    Optional,
    /// Belongs to fairness class `n` (< 64): under weak fairness, a class
    /// that stays enabled forever is taken infinitely often.
    Fair(u8),
}

/// One transition offered by [`Model::successors`].
#[derive(Clone, Debug)]
pub struct Successor<A, S> {
    /// What happened (for traces and transition properties).
    pub action: A,
    /// The state after it.
    pub next: S,
    /// Its fairness class.
    pub fairness: Fairness,
}

/// A finite transition system.
pub trait Model {
    /// A global state, stored whole.
    type State: Clone + Eq + Hash + Debug;
    /// A transition label.
    type Action: Clone + Debug;
    /// A state packed small for the visited set; [`Model::pack`] must be
    /// injective (and [`Model::unpack`] its inverse): the table compares
    /// whole keys, so the search is exact.
    type Key: Copy + Eq + Hash + Default + Debug;

    /// `state` packed.
    fn pack(&self, state: &Self::State) -> Self::Key;

    /// The state `key` packs.
    fn unpack(&self, key: Self::Key) -> Self::State;

    /// The initial states.
    fn initial_states(&self) -> Vec<Self::State>;

    /// Appends every transition enabled in `state` to `out`.
    fn successors(&self, state: &Self::State, out: &mut Vec<Successor<Self::Action, Self::State>>);

    /// The representative of `state`'s symmetry class (identity unless the
    /// model reduces symmetry). Every property must be invariant under it.
    fn canonical(&self, state: Self::State) -> Self::State {
        state
    }
}

/// A state predicate.
pub type StateCheck<M> = fn(&M, &<M as Model>::State) -> bool;
/// A transition predicate: `(before, action, after)`.
pub type StepCheck<M> =
    fn(&M, &<M as Model>::State, &<M as Model>::Action, &<M as Model>::State) -> bool;
/// The obligations outstanding in a state, one bit each.
pub type Obligations<M> = fn(&M, &<M as Model>::State) -> u64;

/// What a property asserts.
pub enum Check<M: Model> {
    /// Holds in every reachable state.
    Always(StateCheck<M>),
    /// Holds on every reachable transition.
    AlwaysStep(StepCheck<M>),
    /// Holds on at least one reachable transition (coverage: the situation
    /// is really reached, so no invariant passes vacuously).
    Sometimes(StepCheck<M>),
    /// Holds in every state that can no longer change (all its transitions,
    /// if any, are self-loops).
    Terminal(StateCheck<M>),
    /// Liveness: no fair infinite run keeps an obligation bit set forever.
    Eventually(Obligations<M>),
}

impl<M: Model> Clone for Check<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M: Model> Copy for Check<M> {}

/// A named property.
pub struct Property<M: Model> {
    /// Its name, with its SPEC id.
    pub name: &'static str,
    /// What it asserts.
    pub check: Check<M>,
}

impl<M: Model> Property<M> {
    /// Whether the property is about infinite runs.
    pub fn is_liveness(&self) -> bool {
        matches!(self.check, Check::Eventually(_))
    }
}

/// The stored reachable graph: states, parents and (for liveness) edges.
pub(crate) struct Graph<K> {
    /// Every state, packed, by id (breadth-first order).
    pub(crate) states: Vec<K>,
    pub(crate) parent: Vec<u32>,
    /// `edges[edge_start[i]..edge_start[i + 1]]` leave state `i`.
    pub(crate) edge_start: Vec<u32>,
    pub(crate) edges: Vec<(u32, Fairness)>,
}

/// The parent of an initial state.
pub(crate) const ROOT: u32 = u32::MAX;

/// Where a violation or witness was first seen.
pub(crate) enum Found<A, S> {
    State(u32),
    Step(u32, A, S),
}
