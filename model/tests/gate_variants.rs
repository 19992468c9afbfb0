//! The checker must catch bugs: each broken variant of the gate's `step`
//! (a thin wrapper around the real one) is reported by the expected
//! property with a shortest trace of the expected length.

use baton::gate::core::{self, Begin, State};
use baton_model::explore::{Check, Exploration, Options, Verdict, explore};
use baton_model::gate::codec::Core;
use baton_model::gate::system::{Act, Setup, Step, Sys};
use baton_model::gate::variants::{VARIANTS, Variant};
use baton_model::gate::{GateModel, full, props};
use baton_model::report::self_test;
use baton_model::trace::{acts, render};

/// Two requesters with two reservations each, the worker, the closer,
/// cancellation and bad input: enough for every shortest trace (the report
/// runs the same self-test on the CI configuration and finds the same
/// lengths).
const SMALL: Setup = full(2, 2);

fn variant(name: &str) -> Variant {
    *VARIANTS
        .iter()
        .find(|v| v.name.starts_with(name))
        .expect("a variant")
}

/// The trace the expected property gives for `name` in `setup`.
fn caught(
    name: &str,
    setup: Setup,
) -> baton_model::explore::Trace<baton_model::gate::system::Sys, baton_model::gate::system::Step> {
    let v = variant(name);
    let model = GateModel::with_step(setup, v.step);
    let e = explore(
        &model,
        &props::properties(),
        Options {
            symmetry: false,
            liveness: true,
            time_limit: None,
        },
    );
    match e.verdict(v.caught_by) {
        Some(Verdict::Violated(t)) => {
            println!("{}:\n{}", v.name, render(setup.requesters, t));
            t.clone()
        }
        other => panic!("{} not caught by {}: {other:?}", v.name, v.caught_by),
    }
}

#[test]
fn a_cancel_that_ignores_its_ticket_is_caught_by_s2_in_5_steps() {
    let t = caught("a_", SMALL);
    assert_eq!(
        acts(&t),
        [
            Act::Reserve(0),
            Act::Observe,
            Act::DropReservation(0),
            Act::Reserve(0),
            Act::DropBoundary
        ]
    );
}

#[test]
fn a_close_that_overrides_sealed_is_caught_by_s6_in_8_steps() {
    let t = caught("b_", SMALL);
    assert_eq!(t.steps.len(), 8);
    assert_eq!(acts(&t).last(), Some(&Act::Close));
}

#[test]
fn a_commit_that_ignores_the_cancel_bit_is_caught_by_s3_in_6_steps() {
    let t = caught("c_", SMALL);
    assert_eq!(t.steps.len(), 6);
    assert!(acts(&t).contains(&Act::Cancel));
    assert_eq!(acts(&t).last(), Some(&Act::Commit(0)));
}

#[test]
fn a_failed_preflight_that_rerequests_is_a_livelock_caught_by_l2_as_a_lasso() {
    let t = caught("d_", SMALL);
    assert_eq!(t.loop_start, Some(1));
    assert_eq!(
        acts(&t),
        [Act::Reserve(0), Act::Observe, Act::PreflightFails]
    );
}

#[test]
fn the_rerequest_livelock_is_caught_only_by_the_lasso_search() {
    let v = variant("d_");
    let model = GateModel::with_step(SMALL, v.step);
    let properties = props::properties();
    let e = explore(
        &model,
        &properties,
        Options {
            symmetry: false,
            liveness: true,
            time_limit: None,
        },
    );
    for (p, (name, verdict)) in properties.iter().zip(&e.verdicts) {
        let is_invariant = matches!(
            p.check,
            Check::Always(_) | Check::AlwaysStep(_) | Check::Terminal(_)
        );
        if is_invariant {
            assert_eq!(*verdict, Verdict::Holds, "{name}");
        }
    }
}

#[test]
fn a_fair_closer_would_excuse_the_livelock_so_liveness_is_checked_with_an_unfair_one() {
    let v = variant("d_");
    let setup = Setup {
        fair_closer: true,
        ..SMALL
    };
    let model = GateModel::with_step(setup, v.step);
    let e = explore(
        &model,
        &props::properties(),
        Options {
            symmetry: false,
            liveness: true,
            time_limit: None,
        },
    );
    assert_eq!(e.verdict(v.caught_by), Some(&Verdict::Holds));
}

#[test]
fn a_seal_that_accepts_another_pause_is_caught_by_s5_in_7_steps() {
    let t = caught("e_", SMALL);
    assert_eq!(t.steps.len(), 7);
    assert_eq!(acts(&t).last(), Some(&Act::SealForged));
}

#[test]
fn every_variant_is_caught_by_its_expected_property() {
    let results = self_test(SMALL);
    assert!(
        results
            .iter()
            .all(|c| c.trace.is_some() && c.violated.contains(&c.variant.caught_by))
    );
}

const L3: &str = "L3 a committed handoff ends Sealed or Closed";

fn with_liveness(model: &GateModel) -> Exploration<Sys, Step> {
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

/// The adapter before `core::begin`: a boundary that began in `Committed`
/// saw no request (`core::observe` is `None` there) and returned `None`.
fn begin_blind_to_the_commit(state: &State<u8>) -> Begin<'_, u8> {
    match core::begin(state) {
        Begin::Committed(_) => Begin::Nothing,
        begun @ (Begin::Nothing | Begin::Requested(..)) => begun,
    }
}

#[test]
fn a_worker_that_merely_reaches_boundaries_after_losing_its_committed_boundary_ends_the_handoff() {
    // With and without the closer (which could excuse a stuck handoff), and
    // with no actor that exits on its own: the worker's only fair move in
    // Committed is to reach a boundary, which returns the committed pause.
    for closer in [true, false] {
        let setup = Setup { closer, ..SMALL };
        let e = with_liveness(&GateModel::new(setup));
        assert_eq!(e.verdict(L3), Some(&Verdict::Holds), "closer: {closer}");
        let witness =
            "reached: a boundary after a lost committed boundary returns the committed pause";
        let Some(Verdict::Reached(t)) = e.verdict(witness) else {
            panic!("{witness}: not reached");
        };
        let acts = acts(t);
        let lost = acts.iter().position(|a| *a == Act::DropBoundary);
        let commit = acts.iter().position(|a| matches!(a, Act::Commit(_)));
        assert!(commit < lost && lost.is_some(), "{acts:?}");
        assert_eq!(acts.last(), Some(&Act::BoundaryFindsCommit));
    }
}

#[test]
fn a_boundary_blind_to_the_commit_leaves_it_committed_forever_caught_by_l3_as_a_lasso() {
    // The finding that led to `core::begin`: a worker whose committed
    // `boundary` future was dropped keeps running, its later boundaries see
    // nothing, and nobody seals or closes (without the closer).
    let setup = Setup {
        closer: false,
        ..SMALL
    };
    let model = GateModel {
        setup,
        core: Core::new(setup.requesters, core::step::<u8>).with_begin(begin_blind_to_the_commit),
    };
    let Some(Verdict::Violated(t)) = with_liveness(&model).verdict(L3).cloned() else {
        panic!("expected an L3 lasso");
    };
    println!("{}", render(setup.requesters, &t));
    let start = t.loop_start.expect("a lasso");
    assert!(acts(&t)[..start].contains(&Act::DropBoundary));
    assert!(!acts(&t).contains(&Act::BoundaryFindsCommit));
}
