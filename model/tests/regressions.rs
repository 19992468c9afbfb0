//! Every trace in `model/regressions/*.json` is replayed through `step`:
//! under its broken variant it still violates its property; under the real
//! core it either diverges from the recorded run or keeps every invariant.

use std::path::Path;

use baton_model::explore::{Check, Model, Successor};
use baton_model::gate::system::{Step, Sys};
use baton_model::gate::{GateModel, props, variants};
use baton_model::trace::{Recorded, Replay, replay};

fn recorded() -> Vec<(String, Recorded)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut all: Vec<_> = std::fs::read_dir(&dir)
        .expect("model/regressions exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            let r: Recorded =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.display().to_string(), r)
        })
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// Whether `property` fails somewhere on `trace` (safety), or the lasso
/// closes and keeps an obligation set throughout its loop (liveness).
fn violates(model: &GateModel, property: &str, r: &Recorded) -> bool {
    let properties = props::properties();
    let p = properties
        .iter()
        .find(|p| p.name == property)
        .expect("a known property");
    let mut before = r.initial;
    let mut states = vec![r.initial];
    let mut hit = false;
    for (step, after) in &r.steps {
        hit |= match p.check {
            Check::Always(check) => !check(model, after),
            Check::AlwaysStep(check) => !check(model, &before, step, after),
            Check::Sometimes(_) | Check::Terminal(_) | Check::Eventually(_) => false,
        };
        before = *after;
        states.push(*after);
    }
    match (p.check, r.loop_start) {
        (Check::Eventually(obligations), Some(start)) => {
            let cycle = &states[start..];
            let closes = cycle.first() == cycle.last() || start == r.steps.len();
            let kept = cycle
                .iter()
                .fold(u64::MAX, |acc, s| acc & obligations(model, s));
            closes && kept != 0
        }
        _ => hit,
    }
}

#[test]
fn every_regression_trace_still_exposes_its_broken_variant() {
    let all = recorded();
    assert!(all.len() >= 5, "the five variants' traces are checked in");
    for (path, r) in &all {
        let (outcome, _) = replay(r, &r.variant);
        assert_eq!(outcome, Replay::Same, "{path}");
        let model = GateModel::with_step(r.setup, variants::by_name(&r.variant).expect("known"));
        assert!(
            violates(&model, &r.property, r),
            "{path} no longer violates {}",
            r.property
        );
    }
}

#[test]
fn under_the_real_core_every_regression_trace_diverges_or_keeps_s1_to_s9() {
    for (path, r) in &recorded() {
        let (outcome, taken) = replay(r, "real");
        let model = GateModel::new(r.setup);
        let properties = props::properties();
        let mut before = taken.initial;
        for (step, after) in &taken.steps {
            for p in &properties {
                let ok = match p.check {
                    Check::Always(check) => check(&model, after),
                    Check::AlwaysStep(check) => check(&model, &before, step, after),
                    Check::Sometimes(_) | Check::Terminal(_) | Check::Eventually(_) => true,
                };
                assert!(ok, "{path}: {} fails under the real core", p.name);
            }
            before = *after;
        }
        assert!(
            matches!(outcome, Replay::Diverged { .. }),
            "{path}: the real core behaves like the broken variant"
        );
    }
}

#[test]
fn a_regression_trace_round_trips_through_json() {
    for (path, r) in &recorded() {
        let again: Recorded = serde_json::from_str(&r.to_json()).expect("round trip");
        assert_eq!(&again, r, "{path}");
        let model = GateModel::new(r.setup);
        let mut successors: Vec<Successor<Step, Sys>> = Vec::new();
        model.successors(&model.initial_states()[0], &mut successors);
        assert!(!successors.is_empty());
    }
}
