//! The ledger proven without bounds by z3 (issue 61): its encoding agrees
//! with the Rust table on every state and event of the grid, D1–D6 are
//! proven for any number of delegations, scopes, waits and events, and
//! each of the six broken variants breaks a promise in a history the
//! solver finds. Without z3 the tests say so in one line and pass, unless
//! `BATON_REQUIRE_SOLVER=1` (as in `.ci/run`).

use baton_model::ledger::proof::agree::{agree, agree_on, every_table};
use baton_model::ledger::proof::codes::{Table, answer, event};
use baton_model::ledger::proof::system::System;
use baton_model::ledger::proof::{prove, shortest_break};
use baton_model::smt;

fn solver_or_skip() -> Option<easy_smt::Context> {
    smt::solver_or_skip("ledger proofs")
}

#[test]
fn the_encoding_answers_as_the_rust_table_on_every_state_and_event_of_the_grid() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    let a = agree(&mut ctx).expect("the solver");
    for d in a.disagreements.iter().take(20) {
        eprintln!("{d}");
    }
    assert!(
        a.disagreements.is_empty(),
        "{} disagreements",
        a.disagreements.len()
    );
    assert_eq!(a.cases, 68_976, "cases compared");
}

#[test]
fn the_agreement_fails_when_the_table_changes_without_its_encoding() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    for (name, step, indexed, _) in every_table().into_iter().skip(2) {
        let a = agree_on(&mut ctx, &[(name, step, indexed, Table::Real)]).expect("the solver");
        eprintln!(
            "{name}: {} of {} cases disagree with the real encoding",
            a.disagreements.len(),
            a.cases
        );
        assert!(!a.disagreements.is_empty(), "{name}");
    }
}

#[test]
fn d1_to_d6_are_proven_for_any_number_of_delegations_scopes_and_waits() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    for o in prove(&mut ctx, Table::Real).expect("the solver") {
        eprintln!(
            "{:>9} {} in {:?}",
            o.what,
            if o.holds { "proven" } else { "NOT PROVEN" },
            o.time
        );
        assert!(o.holds, "{}", o.what);
    }
}

#[test]
fn every_broken_variant_of_the_table_breaks_a_promise_in_a_history_the_solver_finds() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    // Each variant, the promise it breaks and the length of the shortest
    // history that breaks it (as docs/SPEC.md says).
    let expected = [
        ("f_double_delivery", "D1", 4),
        ("g_scope_drop_forgets_children", "D3", 4),
        ("h_arrival_without_wake_up", "D6", 3),
        ("o_coalescing_wakes_one_of_two", "D6", 7),
        ("v_register_ignores_the_task", "D2", 2),
        ("w_older_scope_end_empties_the_ledger", "D5", 1),
    ];
    for ((name, _, _, table), (named, promise, events)) in
        every_table().into_iter().skip(2).zip(expected)
    {
        assert_eq!(name, named);
        let history = shortest_break(&mut ctx, table, 8)
            .expect("the solver")
            .unwrap_or_else(|| panic!("{name}: no promise broken within 8 steps"));
        eprintln!("{name}: {history}");
        assert!(history.breaks.contains(&promise), "{name}: {history}");
        assert_eq!(history.steps.len(), events, "{name}: {history}");
        let proofs = prove(&mut ctx, table).expect("the solver");
        assert!(
            proofs.iter().any(|o| !o.holds),
            "{name}: every obligation proven"
        );
    }
}

/// The proofs are not vacuous: from a state the invariant admits, every
/// event changes the ledger, and every answer of the table is given.
#[test]
fn every_event_changes_the_ledger_and_every_answer_is_given_from_a_state_the_invariant_admits() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    let system = System { table: Table::Real };
    for kind in event::SCOPE_TASK..=event::TAKE_ALL {
        let moves = smt::reachable_step(&mut ctx, &system, |c, s, x, _, n| {
            let changed = s
                .ledger
                .fields()
                .into_iter()
                .zip(n.ledger.fields())
                .map(|(a, b)| c.not(c.eq(a, b)));
            c.and(c.eq(x.kind, c.numeral(kind)), c.or_many(changed))
        })
        .expect("the solver");
        assert!(
            moves,
            "{} never changes the ledger",
            event::NAMES[usize::try_from(kind).expect("an event")]
        );
    }
    for (code, name) in answer::NAMES.iter().enumerate() {
        let code = i64::try_from(code).expect("a code");
        let given = smt::reachable_step(&mut ctx, &system, |c, _, _, a, _| {
            c.eq(a.code, c.numeral(code))
        })
        .expect("the solver");
        assert!(given, "{name} is never given");
    }
}
