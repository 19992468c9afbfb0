//! An exact breadth-first explorer.
//!
//! Every reachable state is stored whole (no fingerprints: a proof must not
//! have a probabilistic hole) with a parent pointer, so every counterexample
//! is rebuilt as a **shortest** trace from an initial state. Invariants are
//! checked on every state and on every transition, `sometimes` properties on
//! every transition, terminal checks on every state that can no longer
//! change. Liveness runs afterwards on the stored graph ([`crate::lasso`]).

use std::fmt::Debug;
use std::hash::{BuildHasher, Hash};
use std::time::{Duration, Instant};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use crate::lasso;
use crate::paths::rebuild;

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

/// A trace from an initial state; a lasso if `loop_start` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace<S, A> {
    /// Where the trace starts.
    pub initial: S,
    /// Each action with the state after it.
    pub steps: Vec<(A, S)>,
    /// For a liveness counterexample: `steps[loop_start..]` repeats forever,
    /// returning to the state before `steps[loop_start]`. Equal to
    /// `steps.len()` when the run stutters there forever.
    pub loop_start: Option<usize>,
}

/// What exploration found for one property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict<S, A> {
    /// The invariant or liveness property holds.
    Holds,
    /// The `sometimes` situation is reached; a shortest witness.
    Reached(Trace<S, A>),
    /// The `sometimes` situation is never reached.
    Unreached,
    /// Violated; a shortest counterexample (for liveness: shortest prefix).
    Violated(Trace<S, A>),
    /// Not checked, for this reason.
    Skipped(&'static str),
}

impl<S, A> Verdict<S, A> {
    /// Whether this verdict is a pass.
    pub fn passed(&self) -> bool {
        matches!(self, Verdict::Holds | Verdict::Reached(_))
    }
}

/// How to explore.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Store states by their symmetry representative.
    pub symmetry: bool,
    /// Keep the graph and check liveness (not with symmetry: obligations
    /// name actors, which symmetry permutes).
    pub liveness: bool,
}

/// The result of an exploration.
#[derive(Debug)]
pub struct Exploration<S, A> {
    /// Unique states stored.
    pub states: usize,
    /// Transitions taken (self-loops included).
    pub transitions: u64,
    /// Length of the longest shortest path from an initial state.
    pub max_depth: usize,
    /// Wall time, liveness included.
    pub elapsed: Duration,
    /// Wall time of the breadth-first search alone.
    pub search: Duration,
    /// One verdict per property, in the order given.
    pub verdicts: Vec<(&'static str, Verdict<S, A>)>,
}

impl<S, A> Exploration<S, A> {
    /// The verdict of the property called `name`.
    pub fn verdict(&self, name: &str) -> Option<&Verdict<S, A>> {
        self.verdicts
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    /// Whether every property passed.
    pub fn all_passed(&self) -> bool {
        self.verdicts
            .iter()
            .all(|(_, v)| v.passed() || matches!(v, Verdict::Skipped(_)))
    }
}

/// The stored reachable graph: states, parents and (for liveness) edges.
pub(crate) struct Graph<S> {
    pub(crate) states: Vec<S>,
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

/// Explores every state reachable in `model` and checks `properties`.
pub fn explore<M: Model>(
    model: &M,
    properties: &[Property<M>],
    options: Options,
) -> Exploration<M::State, M::Action> {
    let start = Instant::now();
    let liveness = options.liveness && !options.symmetry;
    let canon = |s: M::State| {
        if options.symmetry {
            model.canonical(s)
        } else {
            s
        }
    };
    let hasher = FxBuildHasher;
    let mut graph = Graph {
        states: Vec::new(),
        parent: Vec::new(),
        edge_start: vec![0],
        edges: Vec::new(),
    };
    // Each entry keeps its state inline (next to its id) so a lookup compares
    // without touching `graph.states` and a resize never rehashes from it.
    let mut index: HashTable<(M::State, u32)> = HashTable::new();
    let mut found: Vec<Option<Found<M::Action, M::State>>> =
        properties.iter().map(|_| None).collect();
    let mut transitions = 0u64;
    // Transition properties not yet decided, in property order.
    let mut open_steps: Vec<usize> = (0..properties.len())
        .filter(|&n| {
            matches!(
                properties[n].check,
                Check::AlwaysStep(_) | Check::Sometimes(_)
            )
        })
        .collect();

    let mut insert = |graph: &mut Graph<M::State>, state: M::State, parent: u32| -> (u32, bool) {
        let hash = hasher.hash_one(&state);
        match index.entry(hash, |(s, _)| *s == state, |(s, _)| hasher.hash_one(s)) {
            hashbrown::hash_table::Entry::Occupied(e) => (e.get().1, false),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let id = u32::try_from(graph.states.len()).expect("more than 2^32 states");
                e.insert((state.clone(), id));
                graph.states.push(state);
                graph.parent.push(parent);
                (id, true)
            }
        }
    };
    let check_state =
        |found: &mut Vec<Option<Found<M::Action, M::State>>>, id: u32, s: &M::State| {
            for (slot, p) in found.iter_mut().zip(properties) {
                if let (None, Check::Always(check)) = (&slot, &p.check) {
                    if !check(model, s) {
                        *slot = Some(Found::State(id));
                    }
                }
            }
        };

    for state in model.initial_states() {
        let (id, new) = insert(&mut graph, canon(state), ROOT);
        if new {
            let s = graph.states[id as usize].clone();
            check_state(&mut found, id, &s);
        }
    }
    let mut successors = Vec::new();
    let (mut head, mut layer_end, mut depth) = (0usize, graph.states.len(), 0usize);
    while head < graph.states.len() {
        if head == layer_end {
            depth += 1;
            layer_end = graph.states.len();
        }
        let here = u32::try_from(head).expect("state ids fit u32");
        let state = graph.states[head].clone();
        successors.clear();
        model.successors(&state, &mut successors);
        let mut frozen = true;
        for Successor {
            action,
            next,
            fairness,
        } in successors.drain(..)
        {
            transitions += 1;
            let mut i = 0;
            while i < open_steps.len() {
                let n = open_steps[i];
                let hit = match properties[n].check {
                    Check::AlwaysStep(check) => !check(model, &state, &action, &next),
                    Check::Sometimes(check) => check(model, &state, &action, &next),
                    Check::Always(_) | Check::Terminal(_) | Check::Eventually(_) => false,
                };
                if hit {
                    found[n] = Some(Found::Step(here, action.clone(), next.clone()));
                    open_steps.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            let stays = next == state;
            let (id, new) = if stays {
                (here, false)
            } else {
                insert(&mut graph, canon(next), here)
            };
            if new {
                let s = graph.states[id as usize].clone();
                check_state(&mut found, id, &s);
            }
            frozen &= stays;
            if liveness {
                graph.edges.push((id, fairness));
            }
        }
        if liveness {
            graph
                .edge_start
                .push(u32::try_from(graph.edges.len()).expect("edges fit u32"));
        }
        if frozen {
            for (slot, p) in found.iter_mut().zip(properties) {
                if let (None, Check::Terminal(check)) = (&slot, &p.check) {
                    if !check(model, &state) {
                        *slot = Some(Found::State(here));
                    }
                }
            }
        }
        head += 1;
    }
    let search = start.elapsed();

    let verdicts = properties
        .iter()
        .zip(found)
        .map(|(p, found)| {
            let verdict = match (&p.check, found) {
                (Check::Eventually(obligations), _) if liveness => {
                    match lasso::find(model, &graph, *obligations) {
                        Some(trace) => Verdict::Violated(trace),
                        None => Verdict::Holds,
                    }
                }
                (Check::Eventually(_), _) => Verdict::Skipped(if options.symmetry {
                    "liveness is not checked under symmetry"
                } else {
                    "liveness not requested"
                }),
                (Check::Sometimes(_), None) => Verdict::Unreached,
                (Check::Sometimes(check), Some(f)) => {
                    Verdict::Reached(rebuild(model, &graph, f, options.symmetry, |a, b, c| {
                        check(model, a, b, c)
                    }))
                }
                (Check::AlwaysStep(check), Some(f)) => {
                    Verdict::Violated(rebuild(model, &graph, f, options.symmetry, |a, b, c| {
                        !check(model, a, b, c)
                    }))
                }
                (Check::Always(_) | Check::Terminal(_), Some(f)) => {
                    Verdict::Violated(rebuild(model, &graph, f, options.symmetry, |_, _, _| true))
                }
                (Check::Always(_) | Check::AlwaysStep(_) | Check::Terminal(_), None) => {
                    Verdict::Holds
                }
            };
            (p.name, verdict)
        })
        .collect();
    Exploration {
        states: graph.states.len(),
        transitions,
        max_depth: depth,
        elapsed: start.elapsed(),
        search,
        verdicts,
    }
}
