//! The fenced handoff's section of the report: per configuration the
//! states, transitions, depth and time, each property ✓/✗ with its
//! counterexample, and the checker's self-test on the broken rules.

use std::fmt::Write as _;

use baton::durable::timeline_floor;

use super::{FAct, FSys, FenceModel, Named, Succ, VARIANTS, Variant, expand, props};
use crate::explore::{Exploration, Options, Trace, Verdict, explore};
use crate::report::{SelfTestRow, format_self_test_block, thousands, trace_shape, verdict_lines};

/// One checked configuration.
pub struct Checked {
    /// The configuration.
    pub named: Named,
    /// What exploration found.
    pub exploration: Exploration<FSys, FAct>,
}

/// Explores `model` against every property, liveness included.
pub fn explore_all(model: &FenceModel) -> Exploration<FSys, FAct> {
    explore(
        model,
        &props::properties(&model.setup),
        Options {
            symmetry: false,
            liveness: true,
            time_limit: None,
        },
    )
}

/// Checks the fenced handoff `named` around the real rule.
pub fn check(named: Named) -> Checked {
    Checked {
        named,
        exploration: explore_all(&FenceModel::new(named.setup)),
    }
}

/// A trace, one step a line.
pub fn render(t: &Trace<FSys, FAct>) -> String {
    let mut out = format!("    initial: {:?}\n", t.initial);
    for (n, (act, state)) in t.steps.iter().enumerate() {
        if t.loop_start == Some(n) {
            out.push_str("    -- loop --\n");
        }
        let _ = writeln!(
            out,
            "    {:>2}. {act:?}\n        → log epoch {} pause {}{}{}{} · owner {:?} · workers {:?} · epochs [{}]{}{}",
            n + 1,
            shown(state.epoch),
            match state.pause {
                0 => "none".to_owned(),
                w => format!("of worker {}", w - 1),
            },
            match state.finish {
                0 => String::new(),
                w => format!(" finish of worker {}", w - 1),
            },
            match (state.succ_epoch, state.succ_finish) {
                (0, false) => String::new(),
                (e, f) => format!(
                    " · successor epoch {}{}",
                    shown(e),
                    if f { " finished" } else { "" }
                ),
            },
            if state.retired { " · tombstone" } else { "" },
            state.owner,
            state.phase,
            state.held.map(shown).join(", "),
            match state.succ {
                Succ::Unnamed => String::new(),
                succ => format!(" · successor {succ:?}"),
            },
            match (state.failed_over, state.standby == state.log()) {
                (true, _) => " · failed over".to_owned(),
                (false, true) => String::new(),
                (false, false) => format!(" · standby {:?}", state.standby),
            }
        );
    }
    out
}

/// An epoch as a trace shows it: 1, 2, … on the first term, `2^40+1`, …
/// after the failover (the state keeps them [`compact`](super::compact)).
fn shown(epoch: u8) -> String {
    match expand(epoch).get().checked_sub(timeline_floor(2).get()) {
        Some(n) => format!("2^40+{n}"),
        None => epoch.to_string(),
    }
}

/// The report's block for one configuration.
pub fn format(checked: &Checked) -> String {
    let e = &checked.exploration;
    let mut out = format!(
        "fenced handoff (SPEC §6: zombies, wrong suspicions, lost replies, crashes) · {}\n  {} states · {} transitions · max depth {} · {:.2} s\n",
        checked.named.name,
        thousands(e.states as u64),
        thousands(e.transitions),
        e.max_depth,
        e.elapsed.as_secs_f64(),
    );
    verdict_lines(&mut out, &e.verdicts, render);
    out
}

/// A broken rule checked on a configuration.
pub struct Caught {
    /// The variant.
    pub variant: Variant,
    /// The properties it violated, in report order.
    pub violated: Vec<&'static str>,
    /// The counterexample of the property expected to catch it.
    pub trace: Option<Trace<FSys, FAct>>,
}

/// Runs the checker on every broken rule, each on its configuration
/// ([`super::SELF_TEST`] for the handoff's, [`super::SELF_TEST_FATES`] for
/// the finish's and retention's).
pub fn self_test() -> Vec<Caught> {
    VARIANTS
        .iter()
        .map(|&variant| {
            let model = FenceModel::with_rules(variant.setup, variant.rules);
            let e = explore_all(&model);
            let violated = e
                .verdicts
                .iter()
                .filter(|(_, v)| matches!(v, Verdict::Violated(_)))
                .map(|(n, _)| *n)
                .collect();
            let trace = match e.verdict(variant.caught_by) {
                Some(Verdict::Violated(t)) => Some(t.clone()),
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

/// The report's self-test block for the fenced handoff.
pub fn format_self_test(caught: &[Caught]) -> String {
    let rows: Vec<_> = caught
        .iter()
        .map(|c| SelfTestRow {
            name: c.variant.name,
            bug: c.variant.bug,
            caught_by: c.variant.caught_by,
            how: c.trace.as_ref().map(trace_shape),
            also: c
                .violated
                .iter()
                .copied()
                .filter(|n| *n != c.variant.caught_by)
                .map(|n| n.split(' ').next().unwrap_or(n))
                .collect(),
        })
        .collect();
    format_self_test_block(
        "fenced handoff checker self-test",
        "broken claim, append, finish and retire rules",
        &rows,
    )
}
