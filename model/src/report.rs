//! What `cargo run --release -p baton-model` prints: per machine and
//! configuration the states, transitions, depth, time and speed, each
//! property ✓/✗ (with its counterexample, also written as JSON), and the
//! checker's self-test on the broken variants (the gate's, and the durable
//! system's: [`durable_self_test`]). The ledger's section is
//! [`crate::ledger::report`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::explore::{Exploration, Options, Trace, Verdict, explore};
use crate::gate::codec::StepFn;
use crate::gate::durable::{self, Variant as DurableVariant};
use crate::gate::system::{Setup, Step, Sys};
use crate::gate::variants::{VARIANTS, Variant};
use crate::gate::{GateModel, Named, props};
use crate::trace::{Recorded, render};

/// One checked configuration.
pub struct Checked {
    /// The configuration's name.
    pub name: String,
    /// Its actors.
    pub setup: Setup,
    /// Whether symmetry reduction was on.
    pub symmetry: bool,
    /// What exploration found.
    pub exploration: Exploration<Sys, Step>,
    /// The model explored (its core remembers the transitions taken).
    pub model: GateModel,
}

/// Checks the handoff system `named` against every property.
pub fn check(named: &Named, symmetry: bool) -> Checked {
    check_step(named, symmetry, baton::gate::core::step::<u8>)
}

/// Checks the handoff system `named` around `step` (the real one or a
/// broken variant) against every property.
pub fn check_step(named: &Named, symmetry: bool, step: StepFn) -> Checked {
    check_model(named, symmetry, GateModel::with_step(named.setup, step))
}

/// Checks `model` (configured as `named`) against every property of its
/// configuration ([`crate::gate::properties`]).
pub fn check_model(named: &Named, symmetry: bool, model: GateModel) -> Checked {
    let options = Options {
        symmetry,
        liveness: !symmetry,
        time_limit: None,
    };
    let exploration = explore(&model, &crate::gate::properties(&model.setup), options);
    Checked {
        name: named.name.into(),
        setup: named.setup,
        symmetry,
        exploration,
        model,
    }
}

/// The Mermaid diagram of the core transitions the CI configuration takes
/// (what `--diagram` prints and docs/guide/checking.md embeds).
pub fn diagram() -> String {
    let model = GateModel::new(crate::gate::CI.setup);
    let _ = explore(&model, &[], Options::default());
    crate::diagram::mermaid(&model.core.explored())
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// States per second of the breadth-first search.
pub fn speed(e: &Exploration<Sys, Step>) -> f64 {
    e.states as f64 / e.search.as_secs_f64().max(1e-9)
}

/// The report's block for one configuration; counterexamples in full.
pub fn format(checked: &Checked) -> String {
    let e = &checked.exploration;
    let mut out = format!(
        "handoff gate · {}{}\n  {} states · {} transitions · max depth {} · {:.2} s ({:.2} s search) · {} states/s\n",
        checked.name,
        if checked.symmetry { " · symmetry" } else { "" },
        thousands(e.states as u64),
        thousands(e.transitions),
        e.max_depth,
        e.elapsed.as_secs_f64(),
        e.search.as_secs_f64(),
        thousands(speed(e) as u64),
    );
    verdict_lines(&mut out, &e.verdicts, |t| {
        render(checked.setup.requesters, t)
    });
    out
}

/// One line per property, ✓/✗/–, with a shortest witness's length or a
/// counterexample rendered in full.
pub fn verdict_lines<S, A>(
    out: &mut String,
    verdicts: &[(&'static str, Verdict<S, A>)],
    render: impl Fn(&Trace<S, A>) -> String,
) {
    for (name, verdict) in verdicts {
        let mark = match verdict {
            Verdict::Holds | Verdict::Reached(_) => "✓",
            Verdict::Unreached | Verdict::Violated(_) => "✗",
            Verdict::Skipped(_) => "–",
        };
        let _ = write!(out, "  {mark} {name}");
        match verdict {
            Verdict::Reached(t) => {
                let n = t.steps.len();
                let _ = writeln!(out, " (in {n} step{})", if n == 1 { "" } else { "s" });
            }
            Verdict::Violated(t) => {
                let _ = writeln!(out, "\n{}", render(t));
            }
            Verdict::Skipped(why) => {
                let _ = writeln!(out, " ({why})");
            }
            Verdict::Holds | Verdict::Unreached => out.push('\n'),
        }
    }
}

/// How a counterexample was found: its length, or its lasso's shape.
pub fn trace_shape<S, A>(t: &Trace<S, A>) -> String {
    match t.loop_start {
        Some(start) => format!(
            "lasso: {start}-step prefix + {}-step loop",
            t.steps.len() - start
        ),
        None => format!("{} steps", t.steps.len()),
    }
}

/// Where counterexamples are written: `target/model-counterexamples/`.
pub fn counterexample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/model-counterexamples")
}

/// Writes every violation of `checked` as JSON into `dir`; the paths.
pub fn write_counterexamples(
    checked: &Checked,
    variant: &str,
    dir: &Path,
) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (name, verdict) in &checked.exploration.verdicts {
        if let Verdict::Violated(trace) = verdict {
            std::fs::create_dir_all(dir)?;
            let id: String = name.split(' ').next().unwrap_or("property").into();
            let path = dir.join(format!(
                "{variant}-{}-{}.json",
                slug(&checked.name),
                slug(&id)
            ));
            std::fs::write(
                &path,
                Recorded::new(variant, checked.setup, name, trace).to_json(),
            )?;
            written.push(path);
        }
    }
    Ok(written)
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').into()
}

/// A broken variant checked on a configuration.
pub struct Caught {
    /// The variant.
    pub variant: Variant,
    /// The properties it violated, in report order.
    pub violated: Vec<&'static str>,
    /// The counterexample of the property expected to catch it.
    pub trace: Option<Recorded>,
}

/// Runs the checker on every broken variant of `step` in `setup`.
pub fn self_test(setup: Setup) -> Vec<Caught> {
    VARIANTS
        .iter()
        .map(|&variant| {
            let model = GateModel::with_step(setup, variant.step);
            let e = explore(
                &model,
                &props::properties(),
                Options {
                    symmetry: false,
                    liveness: true,
                    time_limit: None,
                },
            );
            let violated = e
                .verdicts
                .iter()
                .filter(|(_, v)| matches!(v, Verdict::Violated(_)))
                .map(|(n, _)| *n)
                .collect();
            let trace = match e.verdict(variant.caught_by) {
                Some(Verdict::Violated(t)) => {
                    Some(Recorded::new(variant.name, setup, variant.caught_by, t))
                }
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

/// One variant's line in a self-test block.
pub struct SelfTestRow<'a> {
    /// The variant's name.
    pub name: &'a str,
    /// The bug it plants.
    pub bug: &'a str,
    /// The property expected to catch it.
    pub caught_by: &'a str,
    /// Its counterexample's shape, or `None` if it was not caught.
    pub how: Option<String>,
    /// The other properties it violated (their ids).
    pub also: Vec<&'a str>,
}

/// A self-test block: `title · n/m <what> caught`, then a line per variant
/// (✓ or ✗, what caught it and how) and the other properties it violated.
pub fn format_self_test_block(title: &str, what: &str, rows: &[SelfTestRow<'_>]) -> String {
    let n = rows.iter().filter(|row| row.how.is_some()).count();
    let mut out = format!("{title} · {n}/{} {what} caught\n", rows.len());
    for row in rows {
        let (mark, how) = match &row.how {
            Some(how) => ("✓", how.as_str()),
            None => ("✗", "NOT CAUGHT"),
        };
        let _ = writeln!(
            out,
            "  {mark} {}: {} — by {} ({how})",
            row.name, row.bug, row.caught_by
        );
        if !row.also.is_empty() {
            let _ = writeln!(out, "      also violated: {}", row.also.join(", "));
        }
    }
    out
}

/// The report's self-test block.
pub fn format_self_test(caught: &[Caught]) -> String {
    let rows: Vec<_> = caught
        .iter()
        .map(|c| SelfTestRow {
            name: c.variant.name,
            bug: c.variant.bug,
            caught_by: c.variant.caught_by,
            how: c.trace.as_ref().map(|t| trace_shape(&t.trace())),
            also: Vec::new(),
        })
        .collect();
    format_self_test_block("checker self-test", "broken variants of step", &rows)
}

/// A broken durable variant checked on a configuration.
pub struct CaughtDurable {
    /// The variant.
    pub variant: DurableVariant,
    /// The properties it violated, in report order.
    pub violated: Vec<&'static str>,
    /// The counterexample of the property expected to catch it.
    pub trace: Option<Recorded>,
}

/// The durable system `setup` running `variant`'s worker protocol and
/// reconciliation around the real `step`.
pub fn durable_model(variant: &DurableVariant, setup: Setup) -> GateModel {
    GateModel::durable(variant, setup)
}

/// Runs the checker on every broken durable variant in `setup`.
pub fn durable_self_test(setup: Setup) -> Vec<CaughtDurable> {
    durable::VARIANTS
        .iter()
        .map(|&variant| {
            let model = durable_model(&variant, setup);
            let e = explore(
                &model,
                &crate::gate::properties(&model.setup),
                Options {
                    symmetry: false,
                    liveness: true,
                    time_limit: None,
                },
            );
            let violated = e
                .verdicts
                .iter()
                .filter(|(_, v)| matches!(v, Verdict::Violated(_)))
                .map(|(n, _)| *n)
                .collect();
            let trace = match e.verdict(variant.caught_by) {
                Some(Verdict::Violated(t)) => Some(Recorded::new(
                    variant.name,
                    model.setup,
                    variant.caught_by,
                    t,
                )),
                Some(_) | None => None,
            };
            CaughtDurable {
                variant,
                violated,
                trace,
            }
        })
        .collect()
}

/// The report's durable self-test block: each variant, what caught it and
/// how long its shortest trace is, and every other property it violated.
pub fn format_durable_self_test(caught: &[CaughtDurable]) -> String {
    let rows: Vec<_> = caught
        .iter()
        .map(|c| SelfTestRow {
            name: c.variant.name,
            bug: c.variant.bug,
            caught_by: c.variant.caught_by,
            how: c.trace.as_ref().map(|t| trace_shape(&t.trace())),
            also: c
                .violated
                .iter()
                .filter(|n| **n != c.variant.caught_by)
                .map(|n| n.split(' ').next().unwrap_or(n))
                .collect(),
        })
        .collect();
    format_self_test_block("durable checker self-test", "broken variants", &rows)
}
