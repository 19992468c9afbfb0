//! Rebuilding shortest traces from the stored graph's parent pointers.

use crate::space::{Found, Graph, Model, ROOT};
use crate::verdict::Trace;

/// The ids on the parent path from an initial state to `id`, inclusive.
pub(crate) fn path_to<S>(graph: &Graph<S>, id: u32) -> Vec<u32> {
    let mut path = vec![id];
    let mut at = id;
    while graph.parent[at as usize] != ROOT {
        at = graph.parent[at as usize];
        path.push(at);
    }
    path.reverse();
    path
}

/// Rebuilds a concrete trace along the stored path to `found`: each stored
/// state is a representative, so the concrete successor whose representative
/// is the next stored state is taken (without symmetry: the state itself).
/// A step finding ends with a concrete step satisfying `last`.
pub(crate) fn rebuild<M: Model>(
    model: &M,
    graph: &Graph<M::Key>,
    found: Found<M::Action, M::State>,
    symmetry: bool,
    last: impl Fn(&M::State, &M::Action, &M::State) -> bool,
) -> Trace<M::State, M::Action> {
    let canon = |s: M::State| if symmetry { model.canonical(s) } else { s };
    let (end, step) = match found {
        Found::State(id) => (id, None),
        Found::Step(id, action, next) => (id, Some((action, next))),
    };
    let path = path_to(graph, end);
    let first = &model.unpack(graph.states[path[0] as usize]);
    let initial = model
        .initial_states()
        .into_iter()
        .find(|s| canon(s.clone()) == *first)
        .expect("the path starts at an initial state");
    let mut trace = Trace {
        initial,
        steps: Vec::new(),
        loop_start: None,
    };
    let mut here = trace.initial.clone();
    let mut successors = Vec::new();
    for &id in &path[1..] {
        let target = &model.unpack(graph.states[id as usize]);
        successors.clear();
        model.successors(&here, &mut successors);
        let s = successors
            .drain(..)
            .find(|s| canon(s.next.clone()) == *target)
            .expect("a stored parent reaches its child");
        here = s.next.clone();
        trace.steps.push((s.action, s.next));
    }
    if let Some((action, next)) = step {
        if symmetry {
            successors.clear();
            model.successors(&here, &mut successors);
            let s = successors
                .drain(..)
                .find(|s| last(&here, &s.action, &s.next))
                .expect("a symmetric copy of the finding step exists");
            trace.steps.push((s.action, s.next));
        } else {
            trace.steps.push((action, next));
        }
    }
    trace
}
