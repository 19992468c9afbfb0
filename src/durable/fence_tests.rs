//! The fencing rule, cell by cell (SPEC §6, R1 R6 R7), written from the
//! table in the module doc, independently of the code.

use super::*;
use crate::durable::ReconcileError;
use crate::durable::tests::{pause, source};

fn row(handoff_id: &str) -> Appended<u32> {
    Appended {
        source: source(),
        pause: pause(handoff_id),
    }
}

fn facts(epoch: u64, pauses: &[&str]) -> RunFacts<u32> {
    let mut facts = RunFacts::empty("root", "run");
    facts.epoch = Epoch::new(epoch);
    facts.pauses = pauses.iter().map(|id| row(id)).collect();
    facts
}

#[test]
fn a_claim_of_an_open_run_advances_its_epoch_and_fences_the_older() {
    for current in [0, 1, 7] {
        let step = claim_step(&facts(current, &[])).unwrap();
        let next = Epoch::new(current + 1);
        assert_eq!(step.answer, Claim::Owner(next));
        assert_eq!(step.write, Some(next), "the new epoch is written");
    }
}

#[test]
fn r1_a_claim_of_a_handed_off_run_answers_the_pause_and_writes_nothing() {
    for current in [0, 1, 7] {
        let step = claim_step(&facts(current, &["h"])).unwrap();
        assert_eq!(step.answer, Claim::HandedOff(pause("h")));
        assert_eq!(step.write, None, "R1: no epoch issued once handed off");
    }
    let step = claim_step(&facts(2, &["h", "h"])).unwrap();
    assert_eq!(
        step.answer,
        Claim::HandedOff(pause("h")),
        "one fact read twice"
    );
}

#[test]
fn a_claim_on_contradictory_facts_is_refused_and_writes_nothing() {
    assert!(matches!(
        claim_step(&facts(1, &["h", "other"])),
        Err(LogError::Contradictory(ReconcileError::ConflictingPauses {
            count: 2
        }))
    ));
    let mut other_run = facts(1, &["h"]);
    other_run.pauses[0].source.run_id = "another-run".into();
    assert!(matches!(
        claim_step(&other_run),
        Err(LogError::Contradictory(ReconcileError::OtherRun { .. }))
    ));
}

#[test]
fn a_claim_past_the_last_epoch_is_refused() {
    for spent in [Epoch::LAST.get(), Epoch::LAST.get() + 1, u64::MAX] {
        assert!(matches!(
            claim_step(&facts(spent, &[])),
            Err(LogError::EpochsExhausted)
        ));
        assert_eq!(Epoch::new(spent).next(), None);
    }
    assert_eq!(Epoch::LAST.get(), i64::MAX as u64);
    let before_last = Epoch::new(Epoch::LAST.get() - 1);
    assert_eq!(before_last.next(), Some(Epoch::LAST));
    assert_eq!(Epoch::new(41).next(), Some(Epoch::new(42)));
}

/// `append(epoch)` against a Run at epoch 3.
fn append_at_3(epoch: u64, existing: Option<&str>, new: &str) -> Result<AppendStep, LogError> {
    let existing = existing.map(row);
    let new = row(new);
    append_step(
        "root",
        Epoch::new(3),
        existing.as_ref(),
        Epoch::new(epoch),
        (&new.source, &new.pause),
    )
}

#[test]
fn an_append_under_the_current_epoch_writes_once_then_is_idempotent() {
    assert_eq!(append_at_3(3, None, "h").unwrap(), AppendStep::Write);
    assert_eq!(
        append_at_3(3, Some("h"), "h").unwrap(),
        AppendStep::Idempotent
    );
    assert!(matches!(
        append_at_3(3, Some("h"), "other"),
        Err(LogError::AlreadyHandedOff { root_run_id, run_id }) if root_run_id == "root" && run_id == "run"
    ));
    let mut from_another_invocation = row("h");
    from_another_invocation.source.invocation_id = "invocation-2".into();
    let existing = row("h");
    assert!(
        matches!(
            append_step(
                "root",
                Epoch::new(3),
                Some(&existing),
                Epoch::new(3),
                (
                    &from_another_invocation.source,
                    &from_another_invocation.pause
                ),
            ),
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "the identical row means the same source too"
    );
}

#[test]
fn r6_r7_an_append_under_an_older_epoch_is_fenced_whatever_the_log_holds() {
    for existing in [None, Some("h"), Some("other")] {
        for epoch in [1, 2] {
            assert!(
                matches!(
                    append_at_3(epoch, existing, "h"),
                    Err(LogError::Fenced { epoch: e, current }) if e == Epoch::new(epoch) && current == Epoch::new(3)
                ),
                "epoch {epoch} with {existing:?}"
            );
        }
    }
}

#[test]
fn an_append_under_an_epoch_never_issued_is_bad_input() {
    for existing in [None, Some("h")] {
        for epoch in [0, 4, Epoch::LAST.get(), Epoch::LAST.get() + 1, u64::MAX] {
            assert!(
                matches!(
                    append_at_3(epoch, existing, "h"),
                    Err(LogError::EpochNotIssued { epoch: e, current }) if e == Epoch::new(epoch) && current == Epoch::new(3)
                ),
                "epoch {epoch} with {existing:?}"
            );
        }
    }
    // A Run never claimed has issued nothing: not even epoch 0 appends.
    let new = row("h");
    assert!(matches!(
        append_step(
            "root",
            Epoch::NONE,
            None,
            Epoch::NONE,
            (&new.source, &new.pause)
        ),
        Err(LogError::EpochNotIssued { .. })
    ));
}

#[test]
fn each_step_answers_its_receipt_and_epochs_order_and_print_as_numbers() {
    assert_eq!(AppendStep::Write.receipt(), Receipt::Written);
    assert_eq!(AppendStep::Idempotent.receipt(), Receipt::AlreadyDurable);
    assert!(Epoch::NONE < Epoch::new(1));
    assert_eq!(Epoch::default(), Epoch::NONE);
    assert_eq!(Epoch::new(12).get(), 12);
    assert_eq!(Epoch::new(12).to_string(), "12");
}
