//! An exact breadth-first explorer.
//!
//! Every reachable state is stored whole (no fingerprints: a proof must not
//! have a probabilistic hole) with a parent pointer, so every counterexample
//! is rebuilt as a **shortest** trace from an initial state. Invariants are
//! checked on every state and on every transition, `sometimes` properties on
//! every transition, terminal checks on every state that can no longer
//! change. Liveness runs afterwards on the stored graph ([`crate::lasso`]).

use std::time::Instant;

use crate::lasso;
use crate::paths::rebuild;
pub use crate::space::{
    Check, Fairness, Model, Obligations, Property, StateCheck, StepCheck, Successor,
};
use crate::space::{Found, Graph, ROOT};
pub use crate::verdict::{Exploration, Options, Trace, Verdict};
use crate::visited::Visited;

/// A successor to insert: its packed form and state (`None`: a self-loop),
/// and its fairness.
type Move<M> = (Option<(<M as Model>::Key, <M as Model>::State)>, Fairness);

/// States expanded together, so that the visited-set lookups of all their
/// successors overlap in memory.
const BATCH: usize = 32;

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
    let mut graph = Graph {
        states: Vec::new(),
        parent: Vec::new(),
        edge_start: vec![0],
        edges: Vec::new(),
    };
    let mut visited = Visited::new();
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

    let insert = |visited: &mut Visited<M::Key>, graph: &mut Graph<M::Key>, key, parent| {
        let (id, new) = visited.insert(key);
        if new {
            graph.states.push(key);
            graph.parent.push(parent);
        }
        (id, new)
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
        let state = canon(state);
        let (id, new) = insert(&mut visited, &mut graph, model.pack(&state), ROOT);
        if new {
            check_state(&mut found, id, &state);
        }
    }
    let mut successors = Vec::new();
    // One batch: each expanded state with its id, whether it is frozen and
    // where its moves end; the moves are `(packed target, fairness)`, with
    // `None` for a self-loop.
    let mut expanded: Vec<(u32, M::State, bool, usize)> = Vec::with_capacity(BATCH);
    let mut moves: Vec<Move<M>> = Vec::new();
    let (mut head, mut layer_end, mut depth) = (0usize, graph.states.len(), 0usize);
    let mut complete = true;
    while head < graph.states.len() {
        if options
            .time_limit
            .is_some_and(|limit| start.elapsed() > limit)
        {
            complete = false;
            break;
        }
        if head == layer_end {
            depth += 1;
            layer_end = graph.states.len();
        }
        let batch_end = layer_end.min(head + BATCH);
        for at in head..batch_end {
            let here = u32::try_from(at).expect("state ids fit u32");
            let state = model.unpack(graph.states[at]);
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
                if next == state {
                    moves.push((None, fairness));
                } else {
                    frozen = false;
                    let next = canon(next);
                    moves.push((Some((model.pack(&next), next)), fairness));
                }
            }
            expanded.push((here, state, frozen, moves.len()));
        }
        // Touch every target's slot before inserting any: the loads are
        // independent, so their cache misses overlap instead of queueing.
        visited.warm(
            moves
                .iter()
                .filter_map(|(m, _)| m.as_ref().map(|(key, _)| *key)),
        );
        let mut from = 0;
        for (here, state, frozen, end) in expanded.drain(..) {
            for (to, fairness) in &moves[from..end] {
                let id = match to {
                    None => here,
                    Some((key, next)) => {
                        let (id, new) = insert(&mut visited, &mut graph, *key, here);
                        if new {
                            check_state(&mut found, id, next);
                        }
                        id
                    }
                };
                if liveness {
                    graph.edges.push((id, *fairness));
                }
            }
            from = end;
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
        }
        moves.clear();
        head = batch_end;
    }
    let search = start.elapsed();

    let verdicts = properties
        .iter()
        .zip(found)
        .map(|(p, found)| {
            let verdict = match (&p.check, found) {
                _ if !complete => Verdict::Skipped("time limit: exploration incomplete"),
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
        complete,
        verdicts,
    }
}
