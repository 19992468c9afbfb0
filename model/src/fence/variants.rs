//! The fenced handoff's broken rules, each a wrapper around a real rule
//! (or, for the design before fencing, `reconcile`), and the property that
//! must catch it: the checker's self-test ([`super::report::self_test`]).

use baton::durable::{
    AppendStep, Claim, ClaimStep, Decision, Epoch, Fate, LogError, Retirement, RunFacts,
    append_step, claim_step, claim_step_above, finish_step, reconcile, retire_step,
};
use baton::{HandoffPause, Invocation};

use super::{
    Rules, SELF_TEST, SELF_TEST_FAILOVER, SELF_TEST_FATES, Setup, props, retire_with_tombstone,
};

/// A broken rule, and the property expected to catch it.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Its name.
    pub name: &'static str,
    /// What is broken.
    pub bug: &'static str,
    /// The rules, one of them broken.
    pub rules: Rules,
    /// The configuration the self-test checks it on.
    pub setup: Setup,
    /// The property that must report it.
    pub caught_by: &'static str,
}

/// (k) The owner decides by reading: `reconcile` on the facts, no epoch
/// written — the design before fencing.
fn claim_by_reading(facts: &RunFacts<u8>, floor: Epoch) -> Result<ClaimStep<u8>, LogError> {
    let next = facts
        .epoch
        .max(floor)
        .next()
        .ok_or(LogError::EpochsExhausted)?;
    let answer = match reconcile(facts).map_err(LogError::Contradictory)? {
        Decision::HandedOff(pause) => Claim::HandedOff(pause),
        Decision::Finished(outcome) => Claim::Finished(outcome),
        Decision::Retired => Claim::Retired,
        Decision::Resumable => Claim::Owner(next),
    };
    Ok(ClaimStep {
        answer,
        write: None,
    })
}

/// (k, l) An append that ignores the epoch: the real rule asked as if the
/// worker held the current epoch.
fn append_ignoring_the_epoch(
    root_run_id: &str,
    current: Epoch,
    fate: Fate<'_, u8>,
    _epoch: Epoch,
    new: (&Invocation, &HandoffPause<u8>),
) -> Result<AppendStep, LogError> {
    let current = current.max(Epoch::new(1));
    append_step(root_run_id, current, fate, current, new)
}

/// (m) A claim that does not advance the epoch once one was issued: the
/// real rule, whose `Owner` answer is rewritten to the current epoch.
fn claim_without_advancing(facts: &RunFacts<u8>, floor: Epoch) -> Result<ClaimStep<u8>, LogError> {
    let step = claim_step_above(facts, floor)?;
    Ok(match step.answer {
        Claim::Owner(_) if facts.epoch > Epoch::NONE => ClaimStep {
            answer: Claim::Owner(facts.epoch),
            write: None,
        },
        Claim::Owner(_) | Claim::HandedOff(_) | Claim::Finished(_) | Claim::Retired => step,
    })
}

/// (n) A claim that resumes a handed-off Run: the real rule, whose
/// `HandedOff` answer is rewritten into a new epoch.
fn claim_resuming_a_handed_off_run(
    facts: &RunFacts<u8>,
    floor: Epoch,
) -> Result<ClaimStep<u8>, LogError> {
    let step = claim_step_above(facts, floor)?;
    Ok(match step.answer {
        Claim::HandedOff(_) => {
            let next = facts
                .epoch
                .max(floor)
                .next()
                .ok_or(LogError::EpochsExhausted)?;
            ClaimStep {
                answer: Claim::Owner(next),
                write: Some(next),
            }
        }
        Claim::Owner(_) | Claim::Finished(_) | Claim::Retired => step,
    })
}

/// (t) A claim of a final Run that writes: the real rule, whose answer
/// for a handed-off or finished Run (right) still advances the epoch (a
/// write no answer asked for).
fn claim_of_a_final_run_writes_an_epoch(
    facts: &RunFacts<u8>,
    floor: Epoch,
) -> Result<ClaimStep<u8>, LogError> {
    let step = claim_step_above(facts, floor)?;
    Ok(match step.answer {
        Claim::HandedOff(_) | Claim::Finished(_) => ClaimStep {
            write: facts.epoch.next(),
            ..step
        },
        Claim::Owner(_) | Claim::Retired => step,
    })
}

/// (u) Epochs that restart from the surviving row after a failover: the
/// claim rule without the server's floor, [`claim_step`] — `PostgresLog`
/// before issue 49, whose new primary answered `c + 1` on what its
/// asynchronous standby had received, an epoch the old primary may have
/// answered already.
fn claim_ignoring_the_floor(
    facts: &RunFacts<u8>,
    _floor: Epoch,
) -> Result<ClaimStep<u8>, LogError> {
    claim_step(facts)
}

/// (p) Retention deletes the Run's rows and keeps no tombstone: the real
/// rule, whose removal forgets the root, so the next claim finds nothing
/// and issues epoch 1 again.
fn retire_without_a_tombstone(
    root_run_id: &str,
    retired: bool,
    runs: &[(&str, Fate<'_, u8>)],
) -> Result<(Retirement, bool), LogError> {
    Ok((
        retire_step(root_run_id, retired, runs.iter().copied())?,
        false,
    ))
}

/// (q) A finish that ignores the epoch: the real rule asked as if the
/// worker held the current epoch.
fn finish_ignoring_the_epoch(
    root_run_id: &str,
    current: Epoch,
    fate: Fate<'_, u8>,
    _epoch: Epoch,
    new: (&Invocation, &u8),
) -> Result<AppendStep, LogError> {
    let current = current.max(Epoch::new(1));
    finish_step(root_run_id, current, fate, current, new)
}

/// (r) Retention that drops a Run still open: the real rule, whose
/// `RunOpen` is ignored (the rows go, the tombstone stays).
fn retire_ignoring_open_runs(
    root_run_id: &str,
    retired: bool,
    runs: &[(&str, Fate<'_, u8>)],
) -> Result<(Retirement, bool), LogError> {
    match retire_with_tombstone(root_run_id, retired, runs) {
        Err(LogError::RunOpen { .. }) => Ok((Retirement::Retired { runs: runs.len() }, true)),
        other => other,
    }
}

/// (s) Retention that counts a handed-off Run as ended while its
/// successor is not claimed yet — the rule before issue 43 (commit
/// 0228575): the real rule, whose `RunOpen` is ignored when every Run the
/// log holds is final, i.e. when the Run it names is a successor a durable
/// pause names that the log holds no Run of. A claimed successor still
/// open is a Run of the root, which the old rule refused too.
fn retire_counting_a_handoff_as_ended(
    root_run_id: &str,
    retired: bool,
    runs: &[(&str, Fate<'_, u8>)],
) -> Result<(Retirement, bool), LogError> {
    match retire_with_tombstone(root_run_id, retired, runs) {
        Err(LogError::RunOpen { .. }) if runs.iter().all(|(_, fate)| fate.is_final()) => {
            Ok((Retirement::Retired { runs: runs.len() }, true))
        }
        other => other,
    }
}

/// The broken rules of the fenced handoff.
pub const VARIANTS: [Variant; 10] = [
    Variant {
        name: "k_owner_decides_by_reading",
        bug: "the design before fencing: the owner reads the log and resumes; appends carry no epoch",
        rules: Rules {
            claim: claim_by_reading,
            append: append_ignoring_the_epoch,
            ..Rules::REAL
        },
        setup: SELF_TEST,
        caught_by: props::R1,
    },
    Variant {
        name: "l_append_ignores_the_epoch",
        bug: "an append is written whatever epoch it carries",
        rules: Rules {
            append: append_ignoring_the_epoch,
            ..Rules::REAL
        },
        setup: SELF_TEST,
        caught_by: props::R7,
    },
    Variant {
        name: "m_claim_does_not_advance_the_epoch",
        bug: "a takeover reissues the current epoch instead of a new one",
        rules: Rules {
            claim: claim_without_advancing,
            ..Rules::REAL
        },
        setup: SELF_TEST,
        caught_by: props::R1,
    },
    Variant {
        name: "n_claim_resumes_a_handed_off_run",
        bug: "a claim issues a new epoch although a pause is durable",
        rules: Rules {
            claim: claim_resuming_a_handed_off_run,
            ..Rules::REAL
        },
        setup: SELF_TEST,
        caught_by: props::R3,
    },
    Variant {
        name: "t_claim_of_a_final_run_writes_an_epoch",
        bug: "a claim that answers HandedOff (or Finished) still advances the epoch",
        rules: Rules {
            claim: claim_of_a_final_run_writes_an_epoch,
            ..Rules::REAL
        },
        setup: SELF_TEST,
        caught_by: props::G3,
    },
    Variant {
        name: "p_retention_deletes_and_reissues_epoch_1",
        bug: "retention deletes the Run's rows without a tombstone: the next claim issues epoch 1 again",
        rules: Rules {
            retire: retire_without_a_tombstone,
            ..Rules::REAL
        },
        setup: SELF_TEST_FATES,
        caught_by: props::R9,
    },
    Variant {
        name: "q_finish_ignores_the_epoch",
        bug: "a finish is written whatever epoch it carries",
        rules: Rules {
            finish: finish_ignoring_the_epoch,
            ..Rules::REAL
        },
        setup: SELF_TEST_FATES,
        caught_by: props::R8,
    },
    Variant {
        name: "r_retention_drops_an_open_run",
        bug: "retention removes a Run still open (RunOpen ignored)",
        rules: Rules {
            retire: retire_ignoring_open_runs,
            ..Rules::REAL
        },
        setup: SELF_TEST_FATES,
        caught_by: props::R10,
    },
    Variant {
        name: "s_retention_counts_a_handoff_as_ended",
        bug: "retention counts a handed-off Run as ended while its successor is not claimed yet (the rule before issue 43)",
        rules: Rules {
            retire: retire_counting_a_handoff_as_ended,
            ..Rules::REAL
        },
        setup: SELF_TEST_FATES,
        caught_by: props::G1,
    },
    Variant {
        name: "u_epochs_restart_from_the_surviving_row",
        bug: "after a failover to an asynchronous standby, a claim answers the surviving epoch + 1, not above the new term's floor",
        rules: Rules {
            claim: claim_ignoring_the_floor,
            ..Rules::REAL
        },
        setup: SELF_TEST_FAILOVER,
        caught_by: props::G4,
    },
];

/// The variant called `name`.
pub fn by_name(name: &str) -> Option<Variant> {
    VARIANTS.iter().find(|v| v.name == name).copied()
}
