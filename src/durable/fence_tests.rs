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

/// G4 across a failover: with a floor, an open Run's next epoch is above
/// it (and above its own), whatever epoch the facts hold; a final Run
/// still writes nothing; the floor at the last epoch exhausts.
#[test]
fn g4_a_claim_above_a_floor_answers_an_epoch_above_it_and_above_the_runs() {
    for (current, floor, next) in [(0, 0, 1), (7, 0, 8), (2, 100, 101), (200, 100, 201)] {
        let step = claim_step_above(&facts(current, &[]), Epoch::new(floor)).unwrap();
        assert_eq!(
            step.answer,
            Claim::Owner(Epoch::new(next)),
            "{current} above {floor}"
        );
        assert_eq!(step.write, Some(Epoch::new(next)));
    }
    let step = claim_step_above(&facts(2, &["h"]), Epoch::new(100)).unwrap();
    assert_eq!(
        (step.answer, step.write),
        (Claim::HandedOff(pause("h")), None)
    );
    assert!(matches!(
        claim_step_above(&facts(1, &[]), Epoch::LAST),
        Err(LogError::EpochsExhausted)
    ));
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

/// The fate of a Run whose pause row is `existing`, if any.
fn fate(existing: Option<&Appended<u32>>) -> Fate<'_, u32> {
    existing.map_or(Fate::Open, Fate::HandedOff)
}

/// `append(epoch)` against a Run at epoch 3.
fn append_at_3(epoch: u64, existing: Option<&str>, new: &str) -> Result<AppendStep, LogError> {
    let existing = existing.map(row);
    let new = row(new);
    append_step(
        "root",
        Epoch::new(3),
        fate(existing.as_ref()),
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
                Fate::HandedOff(&existing),
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
            Fate::Open,
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

fn finished(outcome: u32) -> Finished<u32> {
    Finished {
        source: source(),
        outcome,
    }
}

/// `finish(epoch, outcome)` against a Run at epoch 3 whose fate is `fate`.
fn finish_at_3(epoch: u64, fate: Fate<'_, u32>, outcome: u32) -> Result<AppendStep, LogError> {
    finish_step(
        "root",
        Epoch::new(3),
        fate,
        Epoch::new(epoch),
        (&source(), &outcome),
    )
}

#[test]
fn r8_a_finish_under_the_current_epoch_writes_once_then_is_idempotent() {
    assert_eq!(finish_at_3(3, Fate::Open, 7).unwrap(), AppendStep::Write);
    let done = finished(7);
    assert_eq!(
        finish_at_3(3, Fate::Finished(&done), 7).unwrap(),
        AppendStep::Idempotent
    );
    assert!(matches!(
        finish_at_3(3, Fate::Finished(&done), 8),
        Err(LogError::AlreadyFinished { root_run_id, run_id }) if root_run_id == "root" && run_id == "run"
    ));
    let mut other_source = source();
    other_source.invocation_id = "invocation-2".into();
    assert!(
        matches!(
            finish_step(
                "root",
                Epoch::new(3),
                Fate::Finished(&done),
                Epoch::new(3),
                (&other_source, &7)
            ),
            Err(LogError::AlreadyFinished { .. })
        ),
        "the identical record means the same source too"
    );
}

#[test]
fn r8_a_run_has_one_final_fate_a_finish_and_a_pause_refuse_each_other() {
    let handed_off = row("h");
    assert!(matches!(
        finish_at_3(3, Fate::HandedOff(&handed_off), 7),
        Err(LogError::AlreadyHandedOff { .. })
    ));
    let done = finished(7);
    let new = row("h");
    assert!(matches!(
        append_step(
            "root",
            Epoch::new(3),
            Fate::Finished(&done),
            Epoch::new(3),
            (&new.source, &new.pause)
        ),
        Err(LogError::AlreadyFinished { .. })
    ));
}

#[test]
fn r8_a_claim_of_a_finished_run_answers_its_outcome_and_issues_no_epoch() {
    for current in [1, 7] {
        let mut facts = facts(current, &[]);
        facts.finished = Some(finished(7));
        let step = claim_step(&facts).unwrap();
        assert_eq!(step.answer, Claim::Finished(7));
        assert_eq!(step.write, None, "R8: no epoch issued once finished");
    }
    let mut both = facts(2, &["h"]);
    both.finished = Some(finished(7));
    assert!(matches!(
        claim_step(&both),
        Err(LogError::Contradictory(ReconcileError::TwoFates { .. }))
    ));
}

#[test]
fn r6_r7_r8_a_finish_is_fenced_exactly_as_an_append() {
    let done = finished(7);
    let handed_off = row("h");
    for fate in [
        Fate::Open,
        Fate::Finished(&done),
        Fate::HandedOff(&handed_off),
    ] {
        for epoch in [1, 2] {
            assert!(
                matches!(finish_at_3(epoch, fate, 7), Err(LogError::Fenced { epoch: e, current }) if e == Epoch::new(epoch) && current == Epoch::new(3)),
                "epoch {epoch} with {fate:?}"
            );
        }
        for epoch in [0, 4, u64::MAX] {
            assert!(
                matches!(
                    finish_at_3(epoch, fate, 7),
                    Err(LogError::EpochNotIssued { .. })
                ),
                "epoch {epoch} with {fate:?}"
            );
        }
    }
}

#[test]
fn r9_under_a_retired_root_every_write_is_refused_and_a_claim_resumes_nothing() {
    let new = row("h");
    for epoch in [0, 1, 3, 4] {
        for current in [Epoch::NONE, Epoch::new(3)] {
            assert!(matches!(
                append_step("root", current, Fate::Retired, Epoch::new(epoch), (&new.source, &new.pause)),
                Err(LogError::Retired { root_run_id }) if root_run_id == "root"
            ));
            assert!(matches!(
                finish_step(
                    "root",
                    current,
                    Fate::Retired,
                    Epoch::new(epoch),
                    (&new.source, &7)
                ),
                Err(LogError::Retired { .. })
            ));
        }
    }
    let mut retired = RunFacts::<u32>::empty("root", "run");
    retired.retired = true;
    let step = claim_step(&retired).unwrap();
    assert_eq!(
        (step.answer, step.write),
        (Claim::Retired, None),
        "R9: never resumed"
    );
    retired.epoch = Epoch::new(1);
    assert!(matches!(
        claim_step(&retired),
        Err(LogError::Contradictory(ReconcileError::TwoFates { .. }))
    ));
}

#[test]
fn r9_r10_g5_a_root_retires_only_once_every_run_of_it_is_final() {
    // `row` hands Run "run" off to "successor-run".
    let handed_off = row("h");
    let done = finished(7);
    let runs = [
        ("run", Fate::HandedOff(&handed_off)),
        ("successor-run", Fate::Finished(&done)),
    ];
    assert_eq!(
        retire_step("root", false, runs).unwrap(),
        Retirement::Retired { runs: 2 }
    );
    let open = [
        ("a", Fate::Finished(&done)),
        ("c", Fate::Open),
        ("b", Fate::Open),
    ];
    assert!(
        matches!(
            retire_step("root", false, open),
            Err(LogError::RunOpen { root_run_id, run_id }) if root_run_id == "root" && run_id == "b"
        ),
        "the least open Run id, in any order of reading"
    );
    assert_eq!(
        retire_step::<u32>("root", true, []).unwrap(),
        Retirement::AlreadyRetired
    );
    assert!(Fate::<u32>::Retired.is_final() && !Fate::<u32>::Open.is_final());
}

#[test]
fn g5_a_root_the_log_holds_nothing_for_has_not_ended() {
    assert!(matches!(
        retire_step::<u32>("root", false, []),
        Err(LogError::NothingToRetire { root_run_id }) if root_run_id == "root"
    ));
}

#[test]
fn g1_g5_a_handoff_keeps_its_root_until_its_successor_is_final() {
    let handed_off = row("h");
    let done = finished(7);
    let refused = |runs: &[(&str, Fate<'_, u32>)]| match retire_step("root", false, runs.to_vec()) {
        Err(LogError::RunOpen { run_id, .. }) => run_id,
        other => panic!("G1: expected RunOpen, got {other:?}"),
    };
    // Not claimed yet: the log holds nothing for the successor.
    assert_eq!(
        refused(&[("run", Fate::HandedOff(&handed_off))]),
        "successor-run"
    );
    // Claimed, still running.
    assert_eq!(
        refused(&[
            ("run", Fate::HandedOff(&handed_off)),
            ("successor-run", Fate::Open),
        ]),
        "successor-run"
    );
    // A finished Run beside it does not stand in for the successor.
    assert_eq!(
        refused(&[
            ("other", Fate::Finished(&done)),
            ("run", Fate::HandedOff(&handed_off)),
        ]),
        "successor-run"
    );
    // The least id among open Runs and waiting successors.
    assert_eq!(
        refused(&[("run", Fate::HandedOff(&handed_off)), ("z", Fate::Open)]),
        "successor-run"
    );
    assert_eq!(
        refused(&[("run", Fate::HandedOff(&handed_off)), ("a", Fate::Open)]),
        "a"
    );
}
