//! The ledger's section of the report: per configuration the states,
//! transitions, depth, time and speed, each property ✓/✗ with its
//! counterexample, and the checker's self-test on the broken variants.

use super::state::{LStep, LSys, Setup};
use super::variants::{VARIANTS, Variant};
use super::{LedgerModel, Named, StepFn, full, props, show};
use crate::explore::{Exploration, Options, Trace, Verdict, explore};
use crate::report::{SelfTestRow, format_self_test_block, thousands, trace_shape, verdict_lines};

/// The configuration the self-test runs the broken variants on: two
/// delegations with one child each, two scopes, one tick, two waiters —
/// enough for each variant's shortest trace (the tests find the same
/// lengths on the CI configuration). Two delegations since issue 22: the
/// coalescing variant needs two arrivals in one scope.
pub const SELF_TEST: Setup = full(2, 1, 2, 1);

/// One checked configuration.
pub struct Checked {
    /// The configuration.
    pub named: Named,
    /// What exploration found.
    pub exploration: Exploration<LSys, LStep>,
    /// The model explored (its table of ledgers renders the traces).
    pub model: LedgerModel,
}

/// Explores `model` against every property, liveness included.
pub fn explore_all(model: &LedgerModel) -> Exploration<LSys, LStep> {
    explore(
        model,
        &props::properties(),
        Options {
            symmetry: false,
            liveness: true,
            time_limit: None,
        },
    )
}

/// Checks the ledger system `named` around `step`.
pub fn check_step(named: Named, step: StepFn) -> Checked {
    let model = LedgerModel::with_step(named.setup, step);
    let exploration = explore_all(&model);
    Checked {
        named,
        exploration,
        model,
    }
}

/// Checks the ledger system `named` around the real `step`.
pub fn check(named: Named) -> Checked {
    check_step(named, baton::ledger::core::step)
}

/// The report's block for one configuration.
pub fn format(checked: &Checked) -> String {
    let e = &checked.exploration;
    let speed = e.states as f64 / e.search.as_secs_f64().max(1e-9);
    let mut out = format!(
        "delegation ledger · {}\n  {} states · {} transitions · {} ledgers · max depth {} · {:.2} s ({:.2} s search) · {} states/s\n",
        checked.named.name,
        thousands(e.states as u64),
        thousands(e.transitions),
        thousands(checked.model.ledgers() as u64),
        e.max_depth,
        e.elapsed.as_secs_f64(),
        e.search.as_secs_f64(),
        thousands(speed as u64),
    );
    verdict_lines(&mut out, &e.verdicts, |t| show::render(&checked.model, t));
    out
}

/// A broken variant checked on a configuration.
pub struct Caught {
    /// The variant.
    pub variant: Variant,
    /// The properties it violated, in report order.
    pub violated: Vec<&'static str>,
    /// The counterexample of the property expected to catch it, rendered.
    pub trace: Option<(Trace<LSys, LStep>, String)>,
}

/// Runs the checker on every broken variant of the ledger's `step`.
pub fn self_test(setup: Setup) -> Vec<Caught> {
    VARIANTS
        .iter()
        .map(|&variant| {
            let model = LedgerModel::with_step(setup, variant.step);
            let e = explore_all(&model);
            let violated = e
                .verdicts
                .iter()
                .filter(|(_, v)| matches!(v, Verdict::Violated(_)))
                .map(|(n, _)| *n)
                .collect();
            let trace = match e.verdict(variant.caught_by) {
                Some(Verdict::Violated(t)) => Some((t.clone(), show::render(&model, t))),
                Some(_) | None => None,
            };
            Caught {
                variant,
                violated,
                trace,
            }
        })
        .collect()
}

/// The report's self-test block for the ledger.
pub fn format_self_test(caught: &[Caught]) -> String {
    let rows: Vec<_> = caught
        .iter()
        .map(|c| SelfTestRow {
            name: c.variant.name,
            bug: c.variant.bug,
            caught_by: c.variant.caught_by,
            how: c.trace.as_ref().map(|(t, _)| trace_shape(t)),
            also: Vec::new(),
        })
        .collect();
    format_self_test_block("ledger checker self-test", "broken variants of step", &rows)
}
