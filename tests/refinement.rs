//! Refinement (SPEC §5): random sequences of adapter operations, driven by
//! hand on one thread, agree step by step with the core table.
//!
//! The harness is [`baton::fuzzing::gate_adapter::run`], the body of the
//! `gate_adapter` fuzz target: after every operation the adapter's state
//! equals the core's, its version moves exactly when the core moves, every
//! future answers what the core's waiter query says, no pending future
//! misses its wake-up, and every case ends with no waker registered. Here
//! proptest generates the sequences, weighted to reach every state.
#![cfg(feature = "fuzzing")]

use std::cell::RefCell;
use std::collections::BTreeMap;

use baton::fuzzing::gate_adapter::{IntentChoice, Op, Preflight, Slot, run};
use baton::gate::core::StateKind;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestRunner};

fn op() -> impl Strategy<Value = Op> {
    let slot = (0..Slot::ALL.len()).prop_map(|i| Slot::ALL[i]);
    let intent = prop_oneof![
        6 => Just(IntentChoice::Valid),
        1 => Just(IntentChoice::Invalid),
        1 => Just(IntentChoice::OtherRoot),
    ];
    let preflight = prop_oneof![
        4 => Just(Preflight::Prepared),
        1 => Just(Preflight::Failed),
        1 => Just(Preflight::Mismatched),
        1 => Just(Preflight::Stalls),
    ];
    // Weighted so that sequences commonly reach Committed and Sealed before
    // a close: the test asserts every state kind is reached.
    prop_oneof![
        12 => (slot.clone(), intent).prop_map(|(s, i)| Op::Reserve(s, i)),
        16 => slot.clone().prop_map(Op::PollReady),
        12 => slot.clone().prop_map(Op::Commit),
        8 => slot.clone().prop_map(Op::PollWait),
        4 => slot.prop_map(Op::DropHandle),
        12 => preflight.prop_map(Op::StartBoundary),
        16 => Just(Op::PollBoundary),
        2 => Just(Op::DropBoundary),
        2 => Just(Op::FireCancel),
        8 => any::<bool>().prop_map(|prepared| Op::Seal { prepared }),
        1 => Just(Op::Close),
        1 => Just(Op::DropGate),
    ]
}

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
    let result = runner.run(&prop::collection::vec(op(), 1..60), |ops| {
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
