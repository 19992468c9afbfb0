//! Refinement (SPEC §5): random sequences of adapter operations, driven by
//! hand on one thread, agree step by step with the core table.
//!
//! The harness is [`baton_testkit::fuzz::gate_adapter::run`], the body of the
//! `gate_adapter` fuzz target: after every operation the adapter's state
//! equals the core's, its version moves exactly when the core moves, every
//! future answers what the core's waiter query says, no pending future
//! misses its wake-up, and every case ends with no waker registered. Here
//! proptest generates the sequences, weighted to reach every state.
#![cfg(not(loom))] // the kit's fuzz bodies drive baton outside a loom model

use std::cell::RefCell;
use std::collections::BTreeMap;

use baton::gate::core::StateKind;
use baton_testkit::fuzz::gate_adapter::run;
use baton_testkit::strategies::gate_adapter_op;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestRunner};

/// The number of generated cases; the closing note cites it.
const CASES: u32 = 2000;

/// The adapter refines the core table (SPEC §5 "refinement"), and the
/// generated sequences really reach every state kind, so the agreement is
/// not vacuous.
#[test]
fn the_adapter_agrees_with_the_core_table_step_by_step() {
    let config = ProptestConfig {
        cases: CASES,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/refinement.proptest-regressions",
        ))),
        ..ProptestConfig::default()
    };
    let reached = RefCell::new(BTreeMap::<StateKind, usize>::new());
    let mut runner = TestRunner::new(config);
    let result = runner.run(&prop::collection::vec(gate_adapter_op(), 1..60), |ops| {
        run(&ops, &mut |kind| {
            *reached.borrow_mut().entry(kind).or_default() += 1
        })
        .map_err(TestCaseError::fail)
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    let reached = reached.into_inner();
    println!("states reached after an operation, over {CASES} cases: {reached:?}");
    for kind in StateKind::ALL {
        assert!(
            reached.get(&kind).copied().unwrap_or(0) > 0,
            "{kind:?} never reached"
        );
    }
}
