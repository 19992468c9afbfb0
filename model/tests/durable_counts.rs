//! Pinned sizes of the durable handoff system's state space (the gate plus
//! the durable log, crashes of the worker at every point and the restart
//! that reconciles, issue 9), and every property passing on them. A change
//! in a count is a behaviour change of the gate core, of reconciliation or
//! of the model: explain it in the commit that changes the number.
//!
//! The gate's own configurations (`gate_counts.rs`) keep their counts: the
//! durable fields never change there.

use baton_model::explore::{Check, Exploration, Options, Property, Verdict, explore};
use baton_model::gate::durable::props::{R1, R2, R3, R4, R5};
use baton_model::gate::system::{Owner, Setup, Step, Sys};
use baton_model::gate::{DURABLE_CI, GateModel, durable_full, full, properties};

fn check(setup: Setup) -> Exploration<Sys, Step> {
    let model = GateModel::new(setup);
    explore(
        &model,
        &properties(&setup),
        Options {
            symmetry: false,
            liveness: true,
            time_limit: None,
        },
    )
}

/// Every invariant (S1–S9, R1–R4, terminal) and liveness property (L1–L3,
/// R5) holds; coverage is asserted where the configuration can reach it.
fn assert_invariants_hold(e: &Exploration<Sys, Step>) {
    for (name, verdict) in &e.verdicts {
        match verdict {
            Verdict::Violated(trace) => panic!("{name} violated:\n{trace:?}"),
            Verdict::Holds | Verdict::Reached(_) | Verdict::Unreached | Verdict::Skipped(_) => {}
        }
    }
    for r in [R1, R2, R3, R4, R5] {
        assert_eq!(e.verdict(r), Some(&Verdict::Holds), "{r}");
    }
}

#[test]
fn one_requester_with_one_reservation_and_crashes_has_exactly_207_states_and_r1_to_r5_hold() {
    let e = check(durable_full(1, 1));
    assert_eq!((e.states, e.transitions, e.max_depth), (207, 1_108, 14));
    assert_invariants_hold(&e);
}

#[test]
fn two_requesters_with_one_reservation_each_and_crashes_have_exactly_2240_states() {
    let e = check(durable_full(2, 1));
    assert_eq!((e.states, e.transitions, e.max_depth), (2_240, 14_527, 20));
    assert_invariants_hold(&e);
}

#[test]
fn three_requesters_with_one_reservation_each_and_crashes_have_exactly_27964_states() {
    let e = check(durable_full(3, 1));
    assert_eq!(
        (e.states, e.transitions, e.max_depth),
        (27_964, 216_120, 26)
    );
    assert_invariants_hold(&e);
}

#[test]
fn every_crash_point_and_every_decision_is_reached_so_r1_to_r5_do_not_hold_vacuously() {
    let e = check(durable_full(2, 2));
    assert_eq!((e.states, e.transitions, e.max_depth), (10_852, 74_692, 24));
    for (name, verdict) in &e.verdicts {
        assert!(verdict.passed(), "{name}: {verdict:?}");
    }
}

#[test]
fn the_durable_ci_configuration_has_exactly_412862_states_and_every_property_passes() {
    let e = check(DURABLE_CI.setup);
    assert_eq!(
        (e.states, e.transitions, e.max_depth),
        (412_862, 3_435_892, 32)
    );
    for (name, verdict) in &e.verdicts {
        assert!(verdict.passed(), "{name}: {verdict:?}");
    }
}

#[test]
fn without_the_closer_the_durable_ci_configuration_still_passes_l1_to_l3_and_r5() {
    let e = check(Setup {
        closer: false,
        ..DURABLE_CI.setup
    });
    assert_eq!(
        (e.states, e.transitions, e.max_depth),
        (196_076, 1_519_329, 31)
    );
    for (name, verdict) in &e.verdicts {
        assert!(verdict.passed(), "{name}: {verdict:?}");
    }
}

#[test]
fn the_durable_fields_never_change_in_a_gate_configuration() {
    // The extension is a separate configuration: with `durable` off, every
    // reachable state keeps an empty log and an undecided owner, and the
    // gate's pinned counts stand (gate_counts.rs).
    let setup = full(2, 2);
    let model = GateModel::new(setup);
    let untouched = Property {
        name: "the log stays empty and the owner undecided",
        check: Check::Always(|_, s: &Sys| s.log.is_none() && s.owner == Owner::Undecided),
    };
    let e = explore(&model, &[untouched], Options::default());
    assert_eq!((e.states, e.transitions), (5_288, 35_128));
    assert_eq!(e.verdicts[0].1, Verdict::Holds);
    assert!(properties(&setup).iter().all(|p| !p.name.starts_with('R')));
}
