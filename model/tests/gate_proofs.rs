//! The gate proven without bounds by z3 (issue 61): its encoding agrees
//! with the Rust table on every state and event of the grid (and its waiter
//! queries with the Rust ones), S1–S9 (S7 for a waiter holding any ticket)
//! are proven for any number of requesters, tickets, intents and pauses,
//! and each of the five broken variants breaks a promise in a history the
//! solver finds. Without z3 the tests say so in one line and pass, unless
//! `BATON_REQUIRE_SOLVER=1` (as in `.ci/run`).

use baton::gate::core::{boundary, ready, seal};
use baton_model::gate::proof::agree::{agree, agree_on, agree_queries_on, every_table};
use baton_model::gate::proof::encode::{Table, event, outcome};
use baton_model::gate::proof::system::System;
use baton_model::gate::proof::{prove, shortest_break};
use baton_model::smt;

fn solver_or_skip() -> Option<easy_smt::Context> {
    smt::solver_or_skip("gate proofs")
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
    assert_eq!(a.cases, 42_720 + 1_068, "cases compared");
}

#[test]
fn the_agreement_fails_when_the_table_changes_without_its_encoding() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    for (name, step, _) in every_table().into_iter().skip(1) {
        let a = agree_on(&mut ctx, &[(name, step, Table::Real)]).expect("the solver");
        eprintln!(
            "{name}: {} of {} cases disagree with the real encoding",
            a.disagreements.len(),
            a.cases
        );
        assert!(!a.disagreements.is_empty(), "{name}");
    }
}

#[test]
fn s7_the_agreement_fails_when_a_waiters_query_changes_without_its_encoding() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    for (what, queries) in [
        ("ready answering as boundary", [boundary, boundary, seal]),
        ("boundary answering as seal", [ready, seal, seal]),
        ("seal answering as ready", [ready, boundary, ready]),
    ] {
        let a = agree_queries_on(&mut ctx, queries).expect("the solver");
        eprintln!(
            "{what}: {} of {} cases disagree",
            a.disagreements.len(),
            a.cases
        );
        assert!(!a.disagreements.is_empty(), "{what}");
    }
}

#[test]
fn s1_to_s9_are_proven_for_any_number_of_requesters_tickets_and_pauses() {
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
    for (name, _, table) in every_table().into_iter().skip(1) {
        let history = shortest_break(&mut ctx, table, 6)
            .expect("the solver")
            .unwrap_or_else(|| panic!("{name}: no promise broken within 6 steps"));
        eprintln!("{name}: {history}");
        let proofs = prove(&mut ctx, table).expect("the solver");
        assert!(
            proofs.iter().any(|o| !o.holds),
            "{name}: every obligation proven"
        );
    }
}

/// The proofs are not vacuous: from a state the invariant admits, every
/// event moves the gate somewhere, and every outcome of the table is given.
#[test]
fn every_event_moves_and_every_outcome_is_given_from_a_state_the_invariant_admits() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    let system = System { table: Table::Real };
    for kind in event::RESERVE..=event::CLOSE {
        let moves = smt::reachable_step(&mut ctx, &system, |c, _, x, a, _| {
            c.and(
                c.eq(x.kind, c.numeral(kind)),
                c.eq(*a, c.numeral(outcome::MOVED)),
            )
        })
        .expect("the solver");
        assert!(
            moves,
            "{} never moves the gate",
            event::NAMES[usize::try_from(kind).expect("an event")]
        );
    }
    for (code, name) in outcome::NAMES.iter().enumerate() {
        let code = i64::try_from(code).expect("a code");
        let given =
            smt::reachable_step(&mut ctx, &system, |c, _, _, a, _| c.eq(*a, c.numeral(code)))
                .expect("the solver");
        assert!(given, "{name} is never given");
    }
}
