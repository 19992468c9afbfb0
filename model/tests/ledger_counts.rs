//! Pinned sizes of the ledger system's state space, every property passing
//! on them, and the packed form losing nothing. A change in a count is a
//! behaviour change of the ledger core or of the model: explain it in the
//! commit that changes the number.

use std::collections::HashSet;

use baton::ledger::core::Ledger;
use baton_model::explore::{Exploration, Model, Verdict};
use baton_model::ledger::report::explore_all;
use baton_model::ledger::state::{LStep, LSys, Setup};
use baton_model::ledger::{CI, LedgerModel, full};

fn check(setup: Setup) -> (Exploration<LSys, LStep>, usize) {
    let model = LedgerModel::new(setup);
    let e = explore_all(&model);
    (e, model.ledgers())
}

/// Every invariant (D1–D6 and SPEC §2's answers) and D6's liveness hold;
/// coverage is asserted where the configuration can reach it.
fn assert_invariants_hold(e: &Exploration<LSys, LStep>) {
    for (name, verdict) in &e.verdicts {
        match verdict {
            Verdict::Violated(trace) => panic!("{name} violated:\n{trace:?}"),
            Verdict::Skipped(why) => panic!("{name} skipped: {why}"),
            Verdict::Holds | Verdict::Reached(_) | Verdict::Unreached => {}
        }
    }
}

// Issue 22 (`notify_one`): the system has two waiters (with one, two
// arrivals can never meet two pending waits) and the core counts pending
// waits and the wake-ups given to them, so more distinct ledgers are
// reached. Before: 480 / 12,624 / 89,826 states with one waiter and the
// coalescing rule; the new core with one waiter: 480 / 13,544 / 96,829
// (`the_ci_configuration_with_one_waiter_…` pins it); with two: below.

#[test]
fn one_delegation_with_one_child_two_scopes_one_tick_has_exactly_960_states_and_d1_to_d6_hold() {
    let (e, ledgers) = check(full(1, 1, 2, 1));
    assert_eq!(
        (e.states, e.transitions, e.max_depth, ledgers),
        (960, 12_888, 13, 99)
    );
    assert_invariants_hold(&e);
}

#[test]
fn two_delegations_with_one_child_each_have_exactly_28008_states_and_d1_to_d6_hold() {
    let (e, ledgers) = check(full(2, 1, 2, 1));
    assert_eq!(
        (e.states, e.transitions, e.max_depth, ledgers),
        (28_008, 501_508, 19, 1_159)
    );
    assert_invariants_hold(&e);
}

/// Issue 22: the ledger answers every event the same with its indexes kept
/// (past 32 entries, which no configuration reaches) or not. Kept from the
/// first entry, the same system reaches the same states — the same count,
/// the same transitions, the same number of distinct ledgers — and D1–D6
/// hold: the kept-index mode, under the model.
#[test]
fn with_its_indexes_kept_from_the_first_entry_the_ledger_has_the_same_28008_states() {
    let model = LedgerModel::with_initial(
        full(2, 1, 2, 1),
        baton::ledger::core::step,
        Ledger::keeping_indexes_above(0),
    );
    let e = explore_all(&model);
    assert_eq!(
        (e.states, e.transitions, e.max_depth, model.ledgers()),
        (28_008, 501_508, 19, 1_159)
    );
    assert_invariants_hold(&e);
}

#[test]
fn the_ci_configuration_has_exactly_200661_states_and_every_property_passes() {
    let (e, ledgers) = check(CI.setup);
    assert_eq!(
        (e.states, e.transitions, e.max_depth, ledgers),
        (200_661, 3_727_399, 24, 2_263)
    );
    for (name, verdict) in &e.verdicts {
        assert!(verdict.passed(), "{name}: {verdict:?}");
    }
}

/// The cost of the second waiter: the CI configuration with one.
#[test]
fn the_ci_configuration_with_one_waiter_has_exactly_96829_states_and_d1_to_d6_hold() {
    let setup = Setup {
        waiters: 1,
        ..CI.setup
    };
    let (e, ledgers) = check(setup);
    assert_eq!(
        (e.states, e.transitions, e.max_depth, ledgers),
        (96_829, 1_653_398, 23, 1_476)
    );
    assert_invariants_hold(&e);
}

#[test]
fn without_the_waiter_or_bad_input_the_ledger_still_keeps_d1_to_d5() {
    let setup = Setup {
        waiters: 0,
        bad_input: false,
        ..full(2, 1, 2, 1)
    };
    let (e, _) = check(setup);
    assert_eq!((e.states, e.transitions), (3_632, 50_336));
    assert_invariants_hold(&e);
}

#[test]
fn packing_a_reachable_ledger_state_loses_nothing() {
    let model = LedgerModel::new(full(2, 2, 2, 1));
    let mut seen = HashSet::new();
    let mut todo = model.initial_states();
    let mut successors = Vec::new();
    while let Some(s) = todo.pop() {
        if !seen.insert(s) {
            continue;
        }
        assert_eq!(model.unpack(model.pack(&s)), s);
        successors.clear();
        model.successors(&s, &mut successors);
        todo.extend(successors.iter().map(|x| x.next));
    }
    assert_eq!(seen.len(), 200_661);
    let keys: HashSet<_> = seen.iter().map(|s| model.pack(s)).collect();
    assert_eq!(keys.len(), seen.len(), "distinct states pack distinctly");
}
