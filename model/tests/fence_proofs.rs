//! The fence proven without bounds by an SMT solver (z3), issue 61: the
//! encoding agrees with the Rust rules on every input of the grid, the
//! real rules' invariant is inductive and keeps every promise on one
//! server, a synchronous and an asynchronous standby (G5 for a root of any
//! number of Runs), and every broken
//! variant of the bounded model's self-test breaks a promise in a history
//! the solver finds and the test prints. Without z3 on the PATH the tests
//! say so in one line and pass, unless `BATON_REQUIRE_SOLVER=1` (as in
//! `.ci/run`), where they fail.

use baton_model::fence::proof::agree::{agree, agree_on};
use baton_model::fence::proof::encode::Encoding;
use baton_model::fence::proof::system::{Copy as LogCopy, Mode, System, step};
use baton_model::fence::proof::{asynchronous_losses, prove, shortest_break};
use baton_model::fence::{Replication, VARIANTS};
use baton_model::smt;

fn solver_or_skip() -> Option<easy_smt::Context> {
    smt::solver_or_skip("fence proofs")
}

#[test]
fn the_encoding_answers_as_the_rust_rules_on_every_input_of_the_grid() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    let agreement = agree(&mut ctx).expect("the solver");
    for d in agreement.disagreements.iter().take(20) {
        eprintln!(
            "{}: {}: rust {} encoding {}",
            d.rule, d.input, d.rust, d.encoding
        );
    }
    assert!(
        agreement.disagreements.is_empty(),
        "{} disagreements",
        agreement.disagreements.len()
    );
    assert_eq!(agreement.inputs, 78_020, "inputs compared");
}

#[test]
fn the_agreement_fails_when_a_rule_changes_without_its_encoding() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    for variant in VARIANTS {
        let changed = [(variant.name, variant.rules, Encoding::REAL)];
        let agreement = agree_on(&mut ctx, &changed, false).expect("the solver");
        assert!(
            !agreement.disagreements.is_empty(),
            "{}: the real encoding agrees with the broken rule",
            variant.name
        );
        eprintln!(
            "{}: {} of {} inputs disagree with the real encoding, e.g. {:?}",
            variant.name,
            agreement.disagreements.len(),
            agreement.inputs,
            agreement.disagreements[0]
        );
    }
}

#[test]
fn r3_r6_to_r10_g1_to_g5_are_proven_for_any_number_of_claims_workers_failovers_and_runs() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    for mode in Mode::ALL {
        for o in prove(&mut ctx, Encoding::REAL, mode).expect("the solver") {
            eprintln!(
                "{:?} {:>9} {} in {:?}",
                mode,
                o.what,
                if o.holds { "proven" } else { "NOT PROVEN" },
                o.time
            );
            assert!(o.holds, "{} on {:?}", o.what, mode);
        }
    }
}

#[test]
fn an_asynchronous_failover_is_seen_to_lose_what_spec_says_it_may_g2_r7() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    let losses = asynchronous_losses(&mut ctx, 6).expect("the solver");
    for history in &losses {
        eprintln!("the real rules {history}");
    }
    let broken: Vec<&str> = losses
        .iter()
        .flat_map(|h| h.breaks.iter().copied())
        .collect();
    assert_eq!(broken, ["G2", "R7"]);
}

#[test]
fn every_broken_variant_breaks_a_promise_in_a_history_the_solver_finds() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    for variant in VARIANTS {
        let encoding = Encoding::of(variant.name).expect("an encoding");
        let mode = match variant.setup.replication {
            Replication::Single => Mode::Single,
            Replication::Synchronous => Mode::Synchronous,
            Replication::Asynchronous => Mode::Asynchronous,
        };
        let history = shortest_break(&mut ctx, encoding, mode, 6)
            .expect("the solver")
            .unwrap_or_else(|| panic!("{}: no broken promise within 6 steps", variant.name));
        eprintln!("{} {history}", variant.name);
        let proofs = prove(&mut ctx, encoding, mode).expect("the solver");
        assert!(
            proofs.iter().any(|o| !o.holds),
            "{}: every obligation proven",
            variant.name
        );
    }
}

/// The proofs are not vacuous: from a state the invariant admits, every
/// step of the real rules changes the state on every mode it runs on.
#[test]
fn every_step_of_the_real_rules_changes_a_state_the_invariant_admits() {
    let Some(mut ctx) = solver_or_skip() else {
        return;
    };
    for mode in Mode::ALL {
        let system = System::new(Encoding::REAL, mode);
        let last = if mode == Mode::Single {
            step::SUCCESSOR_FINISH
        } else {
            step::FAILOVER
        };
        for kind in step::CLAIM..=last {
            let fires = smt::reachable_step(&mut ctx, &system, |c, s, x, _, n| {
                let changed = |a: &LogCopy, b: &LogCopy| {
                    c.not(c.and_many([
                        c.eq(a.epoch, b.epoch),
                        c.eq(a.fate, b.fate),
                        c.eq(a.successor, b.successor),
                        c.eq(a.removed, b.removed),
                    ]))
                };
                c.and(
                    c.eq(x.kind, c.numeral(kind)),
                    c.or_many([
                        changed(&s.log, &n.log),
                        changed(&s.standby, &n.standby),
                        c.not(c.eq(s.term, n.term)),
                    ]),
                )
            })
            .expect("the solver");
            let name = step::NAMES[usize::try_from(kind).expect("a step")];
            assert!(fires, "{mode:?}: {name} never changes an admitted state");
        }
    }
}
