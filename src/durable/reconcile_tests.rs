//! Every row of the reconciliation table, each test named for its case.

use std::sync::Arc;

use super::*;
use crate::durable::tests::{pause, source};
use crate::facts::{Field, IdError};

fn row(pause: HandoffPause<u32>) -> Appended<u32> {
    Appended {
        source: source(),
        pause,
    }
}

fn facts(rows: Vec<Appended<u32>>) -> RunFacts<u32> {
    RunFacts {
        root_run_id: "root".into(),
        run_id: "run".into(),
        epoch: Epoch::new(1),
        pauses: rows,
        finished: None,
        retired: false,
    }
}

#[test]
fn no_durable_pause_is_resumable_by_a_new_worker() {
    assert_eq!(reconcile(&facts(vec![])), Ok(Decision::Resumable));
}

#[test]
fn one_durable_pause_is_handed_off_and_never_resumed() {
    assert_eq!(
        reconcile(&facts(vec![row(pause("h"))])),
        Ok(Decision::HandedOff(pause("h")))
    );
}

#[test]
fn the_same_pause_read_twice_is_one_fact_and_handed_off() {
    assert_eq!(
        reconcile(&facts(vec![row(pause("h")), row(pause("h"))])),
        Ok(Decision::HandedOff(pause("h")))
    );
}

#[test]
fn two_different_pauses_for_one_run_are_a_contradiction_not_a_guess() {
    assert_eq!(
        reconcile(&facts(vec![row(pause("h1")), row(pause("h2"))])),
        Err(ReconcileError::ConflictingPauses { count: 2 })
    );
    let mut other_payload = pause("h1");
    other_payload.execution = 2;
    assert_eq!(
        reconcile(&facts(vec![
            row(pause("h1")),
            row(pause("h1")),
            row(other_payload),
            row(pause("h3")),
        ])),
        Err(ReconcileError::ConflictingPauses { count: 3 }),
        "a different payload under the same intent is a different pause"
    );
}

#[test]
fn a_pause_appended_by_another_run_is_a_contradiction() {
    let mut other = row(pause("h"));
    other.source.run_id = "other-run".into();
    assert_eq!(
        reconcile(&facts(vec![other])),
        Err(ReconcileError::OtherRun {
            expected: "run".into(),
            found: "other-run".into()
        })
    );
}

#[test]
fn a_pause_for_another_root_run_is_a_contradiction() {
    let mut other = pause("h");
    Arc::make_mut(&mut other.intent).root_run_id = "other-root".into();
    assert_eq!(
        reconcile(&facts(vec![row(other)])),
        Err(ReconcileError::OtherRootRun {
            expected: "root".into(),
            found: "other-root".into()
        })
    );
}

#[test]
fn a_pause_whose_successor_run_is_its_source_is_a_contradiction() {
    let mut itself = pause("h");
    Arc::make_mut(&mut itself.intent).successor_run_id = "run".into();
    assert_eq!(
        reconcile(&facts(vec![row(itself)])),
        Err(ReconcileError::SuccessorIsSource(Field::SuccessorRunId))
    );
}

#[test]
fn a_pause_whose_successor_invocation_is_its_source_is_a_contradiction() {
    let mut itself = pause("h");
    Arc::make_mut(&mut itself.intent).successor_invocation_id = "invocation".into();
    assert_eq!(
        reconcile(&facts(vec![row(itself)])),
        Err(ReconcileError::SuccessorIsSource(
            Field::SuccessorInvocationId
        ))
    );
}

#[test]
fn a_pause_with_an_invalid_id_is_a_contradiction() {
    let mut empty = pause("h");
    Arc::make_mut(&mut empty.intent).claim_id.clear();
    assert_eq!(
        reconcile(&facts(vec![row(empty)])),
        Err(ReconcileError::InvalidPause(IntentError::Empty(
            Field::ClaimId
        )))
    );
    let mut control = pause("h");
    Arc::make_mut(&mut control.intent).host_epoch = "epoch\n".into();
    assert_eq!(
        reconcile(&facts(vec![row(control)])),
        Err(ReconcileError::InvalidPause(IntentError::ControlCharacter(
            Field::HostEpoch
        )))
    );
}

#[test]
fn a_bad_row_after_a_good_one_is_still_a_contradiction() {
    let mut other = pause("h");
    Arc::make_mut(&mut other.intent).root_run_id = "other-root".into();
    assert!(matches!(
        reconcile(&facts(vec![row(pause("h")), row(other)])),
        Err(ReconcileError::OtherRootRun { .. })
    ));
}

#[test]
fn a_query_for_an_invalid_run_id_is_refused_even_with_no_rows() {
    let mut query = facts(vec![]);
    query.run_id.clear();
    assert_eq!(
        reconcile(&query),
        Err(ReconcileError::InvalidRun {
            field: RunField::RunId,
            error: IdError::Empty
        })
    );
    let mut query = facts(vec![]);
    query.root_run_id = "root\u{7f}".into();
    assert_eq!(
        reconcile(&query),
        Err(ReconcileError::InvalidRun {
            field: RunField::RootRunId,
            error: IdError::ControlCharacter
        })
    );
}

#[test]
fn a_chain_of_handoffs_is_one_row_per_hop() {
    // Hop 2 of root Run `root`: the successor of hop 1 hands off again.
    let mut hop = row(pause("h2"));
    hop.source.run_id = "successor-run".into();
    hop.source.invocation_id = "successor-invocation".into();
    Arc::make_mut(&mut hop.pause.intent).successor_run_id = "third-run".into();
    Arc::make_mut(&mut hop.pause.intent).successor_invocation_id = "third-invocation".into();
    let mut query = facts(vec![hop.clone()]);
    query.run_id = "successor-run".into();
    assert_eq!(reconcile(&query), Ok(Decision::HandedOff(hop.pause)));
}

#[test]
fn reconcile_is_pure_the_same_facts_give_the_same_decision() {
    let facts = facts(vec![row(pause("h"))]);
    assert_eq!(reconcile(&facts), reconcile(&facts));
}
