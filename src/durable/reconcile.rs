//! The pure reconciliation core: what an owner decides about a Run whose
//! worker exited without confirming its seal, from the canonical facts alone.
//!
//! SPEC §1: a handoff is final once its pause is durably appended to the
//! canonical log. So after a crash the owner never asks the old worker (it may
//! be dead, or alive and wrong); it reads what the log holds about the Run and
//! calls [`reconcile`], whose doc holds the decision table.
//!
//! Contradictory facts are an error, never a guess: resuming a Run that may
//! have been handed off would run it twice, and handing off on a pause the
//! log contradicts would forge authority.

use super::contract::{Appended, Epoch, ReconcileError, RunFacts, RunField};

use crate::facts::{HandoffPause, IntentError, check_id};

/// What the owner of a Run does after its worker exited without confirming
/// the seal.
///
/// Exhaustive on purpose, like the gate's and the ledger's core enums: it is
/// the answer of the pure rule every store applies and the model checker
/// explores (SPEC §6), so a new kind of decision must fail to compile at
/// every place that acts on one until each has decided what it means.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[must_use = "a decision is what the owner must act on"]
pub enum Decision<P> {
    /// A pause is durable: the handoff is final and the successor owns the
    /// Run. The old worker must never resume; no new worker may either.
    HandedOff(HandoffPause<P>),
    /// No pause is durable: no handoff happened, and a *new* worker may
    /// resume the Run from its canonical state.
    Resumable,
    /// The Run finished with this outcome: nobody may resume it.
    Finished(P),
    /// The Run's root Run is retired: nobody may resume it.
    Retired,
}

/// Decides what the owner of a Run does, from the canonical facts alone.
/// Pure: no I/O, no clock. Rows are checked in log order; the first fault
/// is returned.
///
/// | facts read back (`RunFacts::pauses`) | decision |
/// |---|---|
/// | the query itself names an invalid Run id | `Err(InvalidRun)` |
/// | none | `Ok(Resumable)`: a *new* worker may resume from canonical state |
/// | one pause, of this Run | `Ok(HandedOff(pause))`: the successor owns the Run; never resume the old worker |
/// | the same pause repeated | `Ok(HandedOff(pause))`: one fact read twice |
/// | a pause appended by another Run | `Err(OtherRun)` |
/// | a pause for another root Run | `Err(OtherRootRun)` |
/// | a pause whose successor is its own source | `Err(SuccessorIsSource)` |
/// | a pause with an invalid id | `Err(InvalidPause)` |
/// | two different pauses | `Err(ConflictingPauses)` |
/// | a finish, no pause | `Ok(Finished(outcome))`: the Run is over; never resume it |
/// | a finish appended by another Run | `Err(OtherRun)` |
/// | a finish and a pause | `Err(TwoFates)` |
/// | the root Run retired, nothing else | `Ok(Retired)`: never resume it |
/// | the root Run retired, and an epoch, a pause or a finish | `Err(TwoFates)` |
///
/// # Errors
///
/// [`ReconcileError`] when the facts contradict each other or the Run asked
/// about.
///
/// ```
/// use baton::durable::{reconcile, Appended, Decision, RunFacts};
/// use baton::{HandoffIntent, HandoffPause, Invocation};
///
/// let mut facts = RunFacts::<u32>::empty("run-a", "run-a");
/// assert_eq!(reconcile(&facts), Ok(Decision::Resumable));
///
/// let source = Invocation {
///     session_id: "session".into(),
///     turn_id: "turn".into(),
///     run_id: "run-a".into(),
///     invocation_id: "invocation-a1".into(),
/// };
/// let intent = HandoffIntent {
///     handoff_id: "handoff-1".into(),
///     host_epoch: "epoch-9".into(),
///     root_run_id: "run-a".into(),
///     successor_run_id: "run-b".into(),
///     successor_invocation_id: "invocation-b1".into(),
///     claim_id: "claim-1".into(),
/// };
/// let pause = HandoffPause::new(intent, 7);
/// facts.pauses.push(Appended { source, pause: pause.clone() });
/// assert_eq!(reconcile(&facts), Ok(Decision::HandedOff(pause)));
/// ```
pub fn reconcile<P: PartialEq + Clone>(facts: &RunFacts<P>) -> Result<Decision<P>, ReconcileError> {
    check_run(RunField::RootRunId, &facts.root_run_id)?;
    check_run(RunField::RunId, &facts.run_id)?;
    for row in &facts.pauses {
        check_row(facts, row)?;
    }
    if let Some(finished) = &facts.finished {
        if finished.source.run_id != facts.run_id {
            return Err(ReconcileError::OtherRun {
                expected: facts.run_id.clone(),
                found: finished.source.run_id.clone(),
            });
        }
    }
    let two_fates = || ReconcileError::TwoFates {
        run_id: facts.run_id.clone(),
    };
    if facts.retired {
        let rows =
            facts.epoch != Epoch::NONE || !facts.pauses.is_empty() || facts.finished.is_some();
        return if rows {
            Err(two_fates())
        } else {
            Ok(Decision::Retired)
        };
    }
    match (&facts.finished, facts.pauses.as_slice()) {
        (Some(_), [_, ..]) => Err(two_fates()),
        (Some(finished), []) => Ok(Decision::Finished(finished.outcome.clone())),
        (None, []) => Ok(Decision::Resumable),
        (None, [first, rest @ ..]) => {
            let distinct = 1 + count_distinct_after(first, rest);
            match distinct {
                1 => Ok(Decision::HandedOff(first.pause.clone())),
                count => Err(ReconcileError::ConflictingPauses { count }),
            }
        }
    }
}

fn check_run(field: RunField, id: &str) -> Result<(), ReconcileError> {
    check_id(id).map_err(|error| ReconcileError::InvalidRun { field, error })
}

/// One row on its own: of this Run, of this root Run, a valid intent that
/// does not hand the Run to itself.
fn check_row<P>(facts: &RunFacts<P>, row: &Appended<P>) -> Result<(), ReconcileError> {
    if row.source.run_id != facts.run_id {
        return Err(ReconcileError::OtherRun {
            expected: facts.run_id.clone(),
            found: row.source.run_id.clone(),
        });
    }
    row.pause
        .intent
        .validate_for(&row.source, &facts.root_run_id)
        .map_err(|error| match error {
            IntentError::OtherRootRun { expected, found } => {
                ReconcileError::OtherRootRun { expected, found }
            }
            IntentError::SuccessorIsSource(field) => ReconcileError::SuccessorIsSource(field),
            error @ (IntentError::Empty(_)
            | IntentError::TooLong { .. }
            | IntentError::ControlCharacter(_)) => ReconcileError::InvalidPause(error),
        })
}

/// How many rows of `rest` carry a pause different from `first`'s and from
/// every earlier one (quadratic; a Run has a handful of rows at most).
fn count_distinct_after<P: PartialEq>(first: &Appended<P>, rest: &[Appended<P>]) -> usize {
    let mut seen: Vec<&HandoffPause<P>> = vec![&first.pause];
    for row in rest {
        if !seen.contains(&&row.pause) {
            seen.push(&row.pause);
        }
    }
    seen.len() - 1
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
