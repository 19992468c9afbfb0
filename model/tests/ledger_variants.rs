//! The checker must catch bugs in the ledger too: each broken variant of
//! its `step` (a thin wrapper around the real one) is reported by the
//! expected property with a shortest trace of the expected acts.

use baton_model::explore::{Trace, Verdict};
use baton_model::ledger::report::{SELF_TEST, explore_all, self_test};
use baton_model::ledger::show::{acts, render};
use baton_model::ledger::state::{Act, LStep, LSys, Setup};
use baton_model::ledger::variants::{VARIANTS, Variant};
use baton_model::ledger::{CI, LedgerModel};

fn variant(name: &str) -> Variant {
    *VARIANTS
        .iter()
        .find(|v| v.name.starts_with(name))
        .expect("a variant")
}

/// The trace the expected property gives for `name` in `setup`.
fn caught(name: &str, setup: Setup) -> Trace<LSys, LStep> {
    let v = variant(name);
    let model = LedgerModel::with_step(setup, v.step);
    let e = explore_all(&model);
    match e.verdict(v.caught_by) {
        Some(Verdict::Violated(t)) => {
            println!("{}:\n{}", v.name, render(&model, t));
            t.clone()
        }
        other => panic!("{} not caught by {}: {other:?}", v.name, v.caught_by),
    }
}

#[test]
fn a_double_delivery_is_caught_by_d1_in_4_steps() {
    for setup in [SELF_TEST, CI.setup] {
        let t = caught("f_", setup);
        assert_eq!(
            acts(&t),
            [
                Act::ScopeTask,
                Act::Register(0, 0),
                Act::Arrive(0),
                Act::Arrive(0)
            ]
        );
    }
}

#[test]
fn a_scope_drop_that_forgets_to_end_a_child_is_caught_by_d3_in_4_steps() {
    for setup in [SELF_TEST, CI.setup] {
        let t = caught("g_", setup);
        assert_eq!(
            acts(&t),
            [
                Act::ScopeTask,
                Act::Register(0, 0),
                Act::Adopt(0),
                Act::DropScope(0)
            ]
        );
    }
}

#[test]
fn an_arrival_with_no_stored_wake_up_is_caught_by_d6_in_3_steps() {
    for setup in [SELF_TEST, CI.setup] {
        let t = caught("h_", setup);
        assert_eq!(
            acts(&t),
            [Act::ScopeTask, Act::Register(0, 0), Act::Arrive(0)]
        );
    }
}

/// Issue 22: the old coalescing rule (an arrival while a wake-up is
/// outstanding stores nothing more) wakes only one of two pending waits.
#[test]
fn the_old_coalescing_rule_waking_one_of_two_pending_waits_is_caught_by_d6_in_7_steps() {
    for setup in [SELF_TEST, CI.setup] {
        let t = caught("o_", setup);
        assert_eq!(
            acts(&t),
            [
                Act::ScopeTask,
                Act::Register(0, 0),
                Act::Register(1, 0),
                Act::StartWait(0),
                Act::Arrive(0),
                Act::StartWait(1),
                Act::Arrive(1),
            ]
        );
    }
}

#[test]
fn d2_a_registration_that_ignores_its_task_is_caught_in_2_steps() {
    for setup in [SELF_TEST, CI.setup] {
        let t = caught("v_", setup);
        assert_eq!(acts(&t), [Act::ScopeTask, Act::Register(0, 1)]);
    }
}

#[test]
fn d5_an_older_scopes_end_that_empties_the_ledger_is_caught_in_3_steps() {
    for setup in [SELF_TEST, CI.setup] {
        let t = caught("w_", setup);
        assert_eq!(
            acts(&t),
            [Act::ScopeTask, Act::ScopeTask, Act::DropScope(0)]
        );
    }
}

#[test]
fn every_ledger_variant_is_caught_by_its_expected_property() {
    for c in self_test(SELF_TEST) {
        assert!(
            c.trace.is_some() && c.violated.contains(&c.variant.caught_by),
            "{}: {:?}",
            c.variant.name,
            c.violated
        );
    }
}

#[test]
fn an_arrival_with_no_stored_wake_up_also_leaves_a_wait_pending_forever_caught_as_a_lasso() {
    let v = variant("h_");
    let model = LedgerModel::with_step(SELF_TEST, v.step);
    let e = explore_all(&model);
    let Some(Verdict::Violated(t)) =
        e.verdict("D6 a wait that stays pending while a wake-up is given resolves")
    else {
        panic!("expected a D6 lasso");
    };
    println!("{}", render(&model, t));
    let start = t.loop_start.expect("a lasso");
    assert!(acts(t)[..start].contains(&Act::Arrive(0)));
    assert!(
        acts(t)[start..]
            .iter()
            .all(|a| matches!(a, Act::PollWait(_)))
    );
}
