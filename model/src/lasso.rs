//! Liveness by lasso search over the stored graph.
//!
//! An obligation (one bit of [`crate::explore::Check::Eventually`]) is
//! violated by a *fair* infinite run that keeps the bit set forever. Every
//! such run ends in a strongly connected set of states that all have the bit
//! set; conversely a strongly connected component `C` of the bit's subgraph
//! holds a fair cycle iff it has a cycle and every fairness class enabled in
//! **all** of `C`'s states is taken by some edge inside `C` (weak fairness:
//! a cycle through every edge of `C` is then fair). A run may also stutter
//! forever in a state where no fair class is enabled.
//!
//! The counterexample is a lasso: a shortest prefix to the component, then a
//! fair loop inside it (or "stutters forever").

use std::collections::VecDeque;

use crate::paths::path_to;
use crate::space::{Fairness, Graph, Model};
use crate::verdict::Trace;

const UNSEEN: u32 = u32::MAX;

/// An edge `(from, to, class)` of the stored graph.
type Edge = (u32, u32, Fairness);

fn class_bit(fairness: Fairness) -> u64 {
    match fairness {
        Fairness::Optional => 0,
        Fairness::Fair(n) => 1u64 << n,
    }
}

fn out<S>(graph: &Graph<S>, v: u32) -> &[(u32, Fairness)] {
    let (a, b) = (
        graph.edge_start[v as usize],
        graph.edge_start[v as usize + 1],
    );
    &graph.edges[a as usize..b as usize]
}

/// The fairness classes enabled in `v`.
fn enabled<S>(graph: &Graph<S>, v: u32) -> u64 {
    out(graph, v)
        .iter()
        .fold(0, |acc, &(_, f)| acc | class_bit(f))
}

/// A violation: the lowest state id of the bad set (so the shortest prefix)
/// and the loop as edges `(from, to, class)`.
struct Bad {
    entry: u32,
    cycle: Vec<Edge>,
}

/// Finds a fair lasso on which some obligation bit of `obligations` stays
/// set forever; the one with the shortest prefix.
pub(crate) fn find<M: Model>(
    model: &M,
    graph: &Graph<M::Key>,
    obligations: fn(&M, &M::State) -> u64,
) -> Option<Trace<M::State, M::Action>> {
    let masks: Vec<u64> = graph
        .states
        .iter()
        .map(|&k| obligations(model, &model.unpack(k)))
        .collect();
    let bits = masks.iter().fold(0, |a, m| a | m);
    let mut best: Option<Bad> = None;
    for bit in (0..64).filter(|b| bits & (1u64 << b) != 0) {
        let inside = |v: u32| masks[v as usize] & (1u64 << bit) != 0;
        if let Some(bad) = search(graph, &inside) {
            if best.as_ref().is_none_or(|b| bad.entry < b.entry) {
                best = Some(bad);
            }
        }
    }
    best.map(|bad| lasso(model, graph, bad))
}

/// Tarjan's algorithm (iterative) on the subgraph `inside`, stopping at the
/// first fair component or stuttering state; the lowest entry wins.
fn search<S>(graph: &Graph<S>, inside: &dyn Fn(u32) -> bool) -> Option<Bad> {
    let n = graph.states.len();
    let mut best: Option<Bad> = None;
    for v in 0..n as u32 {
        if inside(v) && enabled(graph, v) == 0 {
            best = Some(Bad {
                entry: v,
                cycle: Vec::new(),
            });
            break;
        }
    }
    let (mut index, mut low) = (vec![UNSEEN; n], vec![0u32; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut calls) = (Vec::new(), Vec::<(u32, u32)>::new());
    let mut counter = 0u32;
    let mut member = vec![false; n];
    for root in 0..n as u32 {
        if !inside(root) || index[root as usize] != UNSEEN {
            continue;
        }
        index[root as usize] = counter;
        low[root as usize] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        calls.push((root, graph.edge_start[root as usize]));
        while let Some(&mut (v, ref mut pos)) = calls.last_mut() {
            if *pos < graph.edge_start[v as usize + 1] {
                let w = graph.edges[*pos as usize].0;
                *pos += 1;
                if !inside(w) {
                    continue;
                }
                if index[w as usize] == UNSEEN {
                    index[w as usize] = counter;
                    low[w as usize] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w as usize] = true;
                    calls.push((w, graph.edge_start[w as usize]));
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(u, _)) = calls.last() {
                low[u as usize] = low[u as usize].min(low[v as usize]);
            }
            if low[v as usize] != index[v as usize] {
                continue;
            }
            let mut component = Vec::new();
            loop {
                let w = stack.pop().expect("v is on the stack");
                on_stack[w as usize] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if let Some(cycle) = fair_cycle(graph, &component, &mut member) {
                let entry = *component.iter().min().expect("non-empty");
                if best.as_ref().is_none_or(|b| entry < b.entry) {
                    best = Some(Bad { entry, cycle });
                }
            }
        }
    }
    best
}

/// A fair cycle through the component's lowest state, if it has one.
fn fair_cycle<S>(graph: &Graph<S>, component: &[u32], member: &mut [bool]) -> Option<Vec<Edge>> {
    for &v in component {
        member[v as usize] = true;
    }
    let internal = |v: u32| out(graph, v).iter().filter(|(w, _)| member[*w as usize]);
    let mut always = u64::MAX;
    let mut taken = 0u64;
    let mut has_cycle = component.len() > 1;
    for &v in component {
        always &= enabled(graph, v);
        for &(w, f) in internal(v) {
            taken |= class_bit(f);
            has_cycle |= w == v;
        }
    }
    let result = (has_cycle && always & !taken == 0).then(|| {
        let entry = *component.iter().min().expect("non-empty");
        build_loop(graph, component, member, entry, always)
    });
    for &v in component {
        member[v as usize] = false;
    }
    result
}

/// A loop from `entry` back to it inside the component (`member`) that
/// takes an edge of every class in `always` and visits, for every other
/// class enabled somewhere in the component, a state where it is disabled.
fn build_loop<S>(
    graph: &Graph<S>,
    component: &[u32],
    member: &[bool],
    entry: u32,
    always: u64,
) -> Vec<Edge> {
    let somewhere = component.iter().fold(0, |a, &v| a | enabled(graph, v));
    let mut cycle: Vec<Edge> = Vec::new();
    let mut at = entry;
    for class in (0..64).filter(|c| somewhere & (1u64 << c) != 0) {
        let bit = 1u64 << class;
        let done = if always & bit != 0 {
            cycle.iter().any(|&(_, _, f)| class_bit(f) == bit)
        } else {
            enabled(graph, at) & bit == 0
                || cycle.iter().any(|&(_, w, _)| enabled(graph, w) & bit == 0)
        };
        if done {
            continue;
        }
        let goal = |v: u32| {
            if always & bit != 0 {
                out(graph, v)
                    .iter()
                    .find(|(w, f)| member[*w as usize] && class_bit(*f) == bit)
                    .map(|&(w, f)| (v, w, f))
            } else {
                (enabled(graph, v) & bit == 0).then_some((v, v, Fairness::Optional))
            }
        };
        let (path, last) = walk(graph, member, at, goal);
        cycle.extend(path);
        at = last.1;
        if last.0 != last.1 || always & bit != 0 {
            cycle.push(last);
        }
    }
    if cycle.is_empty() {
        let &(w, f) = out(graph, entry)
            .iter()
            .find(|(w, _)| member[*w as usize])
            .expect("a component with a cycle has an internal edge");
        cycle.push((entry, w, f));
        at = w;
    }
    let (path, _) = walk(graph, member, at, |v| {
        (v == entry).then_some((v, v, Fairness::Optional))
    });
    cycle.extend(path);
    cycle
}

/// Breadth-first inside the component from `from` to the first state where
/// `goal` answers; the edges walked and the answer.
fn walk<S>(
    graph: &Graph<S>,
    member: &[bool],
    from: u32,
    goal: impl Fn(u32) -> Option<Edge>,
) -> (Vec<Edge>, Edge) {
    let mut came: std::collections::HashMap<u32, (u32, Fairness)> = Default::default();
    let mut queue = VecDeque::from([from]);
    came.insert(from, (UNSEEN, Fairness::Optional));
    while let Some(v) = queue.pop_front() {
        if let Some(hit) = goal(v) {
            let mut path = Vec::new();
            let mut at = v;
            while at != from {
                let (p, f) = came[&at];
                path.push((p, at, f));
                at = p;
            }
            path.reverse();
            return (path, hit);
        }
        for &(w, f) in out(graph, v) {
            if member[w as usize] && !came.contains_key(&w) {
                came.insert(w, (v, f));
                queue.push_back(w);
            }
        }
    }
    unreachable!("a strongly connected component reaches every goal it contains")
}

/// Turns a violation into a trace: the shortest prefix, then the loop with
/// each edge's action recovered from the model.
fn lasso<M: Model>(model: &M, graph: &Graph<M::Key>, bad: Bad) -> Trace<M::State, M::Action> {
    let path = path_to(graph, bad.entry);
    let state = |id: u32| model.unpack(graph.states[id as usize]);
    let mut edges: Vec<Edge> = path
        .windows(2)
        .map(|w| (w[0], w[1], Fairness::Optional))
        .collect();
    let loop_start = edges.len();
    edges.extend(bad.cycle);
    let mut successors = Vec::new();
    let steps = edges
        .into_iter()
        .map(|(from, to, fairness)| {
            successors.clear();
            model.successors(&state(from), &mut successors);
            let target = state(to);
            let s = successors
                .drain(..)
                .filter(|s| s.next == target)
                .min_by_key(|s| s.fairness != fairness)
                .expect("a stored edge has an action");
            (s.action, s.next)
        })
        .collect();
    Trace {
        initial: state(path[0]),
        steps,
        loop_start: Some(loop_start),
    }
}
