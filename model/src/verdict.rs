//! What an exploration reports: traces, verdicts, options and totals.

use std::time::Duration;

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
    /// Stop searching after this long; the exploration is then incomplete
    /// and proves nothing (every verdict is skipped).
    pub time_limit: Option<Duration>,
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
    /// Whether every reachable state was explored (no time limit hit).
    pub complete: bool,
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
