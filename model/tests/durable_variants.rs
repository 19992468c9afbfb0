//! The checker must catch a worker that seals before it appends (issue 9):
//! the broken protocol is reported by R2 with a shortest trace, and by R4
//! and R1 too, while the correct append-then-seal protocol passes on the
//! same configuration. A reconciliation that resumes a handed-off Run (a
//! wrapper around the real `reconcile`) is caught by R3 and R1.

use baton_model::explore::{Exploration, Options, Trace, Verdict, explore};
use baton_model::gate::durable::props::{R1, R2, R3, R4, R5};
use baton_model::gate::durable::{self, VARIANTS};
use baton_model::gate::system::{Act, CrashPoint, Decided, Setup, Step, Sys};
use baton_model::gate::{GateModel, properties};
use baton_model::report::{durable_model, durable_self_test};
use baton_model::trace::{Recorded, Replay, acts, render, replay};

/// Two requesters with two reservations each, the worker with crashes, the
/// restart, the closer, cancellation and bad input (the report runs the
/// same self-test on the durable CI configuration and finds the same
/// lengths).
const SMALL: Setup = baton_model::gate::durable_full(2, 2);

fn explore_all(model: &GateModel) -> Exploration<Sys, Step> {
    explore(
        model,
        &properties(&model.setup),
        Options {
            symmetry: false,
            liveness: true,
            time_limit: None,
        },
    )
}

fn seal_before_append() -> Exploration<Sys, Step> {
    let v = durable::by_name("i_seal_before_append").expect("the variant");
    explore_all(&durable_model(&v, SMALL))
}

fn violated(e: &Exploration<Sys, Step>, name: &str) -> Trace<Sys, Step> {
    match e.verdict(name) {
        Some(Verdict::Violated(t)) => {
            println!("{name}:\n{}", render(SMALL.requesters, t));
            t.clone()
        }
        other => panic!("{name} not violated: {other:?}"),
    }
}

/// The committed handoff every trace below starts with, up to the
/// worker's check in `append_then_seal` that the gate is committed.
const COMMITTED: [Act; 7] = [
    Act::Reserve(0),
    Act::Observe,
    Act::PreflightOk,
    Act::ReadyWakes(0),
    Act::Commit(0),
    Act::BoundaryWakes,
    Act::CheckCommitted,
];

#[test]
fn a_worker_that_seals_before_it_appends_is_caught_by_r2_in_9_steps() {
    let e = seal_before_append();
    let t = violated(&e, R2);
    let mut expected = COMMITTED.to_vec();
    expected.extend([Act::Seal, Act::SealWakes(0)]);
    assert_eq!(acts(&t), expected);
    assert_eq!(t.steps.last().map(|(_, s)| s.log), Some(None));
}

#[test]
fn the_seal_before_the_append_is_caught_by_r4_in_8_steps_and_by_r1_once_reconciled() {
    let e = seal_before_append();
    let mut sealed = COMMITTED.to_vec();
    sealed.push(Act::Seal);
    assert_eq!(acts(&violated(&e, R4)), sealed);
    // The worker dies (or its append fails) with the seal given out; the
    // log holds nothing, so reconciliation resumes a Run handed off.
    let t = violated(&e, R1);
    assert_eq!(t.steps.len(), 10);
    assert_eq!(acts(&t)[..8], sealed[..]);
    assert!(matches!(
        acts(&t)[8],
        Act::Crash(CrashPoint::AfterSealBeforeAppend) | Act::AppendFails
    ));
    assert_eq!(acts(&t)[9], Act::Reconcile(Decided::Resumable));
    // Reconciliation itself is right: it matches the (empty) log.
    assert_eq!(e.verdict(R3), Some(&Verdict::Holds));
}

#[test]
fn the_correct_append_then_seal_protocol_passes_on_the_same_configuration() {
    let e = explore_all(&GateModel::new(SMALL));
    for r in [R1, R2, R3, R4, R5] {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}

#[test]
fn every_durable_variant_is_caught_by_its_expected_property() {
    let results = durable_self_test(SMALL);
    assert_eq!(results.len(), VARIANTS.len());
    for c in &results {
        assert!(
            c.trace.is_some() && c.violated.contains(&c.variant.caught_by),
            "{} not caught by {}",
            c.variant.name,
            c.variant.caught_by
        );
    }
}

#[test]
fn the_seal_before_append_trace_replays_through_json_and_diverges_under_the_correct_protocol() {
    let results = durable_self_test(SMALL);
    let recorded = results[0].trace.clone().expect("caught");
    let again: Recorded = serde_json::from_str(&recorded.to_json()).expect("round trip");
    assert_eq!(again, recorded);
    assert_eq!(replay(&again, &again.variant).0, Replay::Same);
    let correct = Recorded {
        setup: SMALL,
        ..again
    };
    assert!(matches!(
        replay(&correct, "real").0,
        Replay::Diverged { at: 7, .. }
    ));
}

#[test]
fn a_reconciliation_that_resumes_a_handed_off_run_is_caught_by_r3_in_9_steps_and_by_r1() {
    let v = durable::by_name("j_reconcile_resumes_a_handed_off_run").expect("the variant");
    let e = explore_all(&durable_model(&v, SMALL));
    let t = violated(&e, R3);
    let mut expected = COMMITTED.to_vec();
    // The shortest: the append fails after writing the row (a storage
    // error), the gate closes unsealed, and the log says HandedOff.
    expected.extend([Act::AppendFailsWritten, Act::Reconcile(Decided::Resumable)]);
    assert_eq!(acts(&t), expected);
    assert_eq!(violated(&e, R1).steps.len(), 9);
    for r in [R2, R4, R5] {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}
