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

use thiserror::Error;

use super::fence::Epoch;
use crate::facts::{Field, HandoffPause, IdError, IntentError, Invocation, check_id};

/// One durable pause row as read back: the pause and the invocation that
/// appended it (the source the pause hands off).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Appended<P> {
    /// The worker's invocation that appended the pause.
    pub source: Invocation,
    /// The pause, as stored.
    pub pause: HandoffPause<P>,
}

/// One durable finish row as read back: the outcome and the invocation that
/// recorded it (the Run that finished).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Finished<P> {
    /// The worker's invocation that finished the Run.
    pub source: Invocation,
    /// The Run's outcome, as stored.
    pub outcome: P,
}

/// What the canonical log holds about one Run: the Run asked about, its
/// owner epoch, the durable pause rows read back for it in log order, its
/// finish if any, and whether its root Run is retired.
///
/// A **Run** here is the source Run `run_id` within the logical Run
/// `root_run_id`: each Run may be handed off at most once, so a chain of
/// handoffs (A → B → C, all within root Run A) is one row per hop.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunFacts<P> {
    /// The logical Run.
    pub root_run_id: String,
    /// The Run asked about: the one whose worker may have crashed.
    pub run_id: String,
    /// The Run's current owner epoch ([`Epoch::NONE`] if never claimed).
    pub epoch: Epoch,
    /// The pauses the log holds for this Run, in log order.
    pub pauses: Vec<Appended<P>>,
    /// The Run's finish, if it finished.
    pub finished: Option<Finished<P>>,
    /// Whether the root Run is retired (then the log holds nothing else
    /// about the Run).
    pub retired: bool,
}

impl<P> RunFacts<P> {
    /// The facts of a Run the log holds nothing for: never claimed, no
    /// pause.
    pub fn empty(root_run_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self {
            root_run_id: root_run_id.into(),
            run_id: run_id.into(),
            epoch: Epoch::NONE,
            pauses: Vec::new(),
            finished: None,
            retired: false,
        }
    }
}

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

/// Which id of a Run is at fault, named as on the wire: of the Run asked
/// about, or of the source invocation an append hands off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunField {
    /// `root_run_id`: the logical Run.
    RootRunId,
    /// `run_id`: the Run within it.
    RunId,
    /// `session_id` of the appending source.
    SessionId,
    /// `turn_id` of the appending source.
    TurnId,
    /// `invocation_id` of the appending source.
    InvocationId,
}

impl RunField {
    /// The field's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RootRunId => "root_run_id",
            Self::RunId => "run_id",
            Self::SessionId => "session_id",
            Self::TurnId => "turn_id",
            Self::InvocationId => "invocation_id",
        }
    }
}

impl std::fmt::Display for RunField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The facts contradict each other or the Run asked about. Reconciliation
/// refuses to guess; an operator must look.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// The query names an invalid Run id (the field is `root_run_id` or
    /// `run_id`), so no fact could be about it.
    #[error("the Run asked about has an invalid {field}: {error}")]
    InvalidRun {
        /// Which of the two ids.
        field: RunField,
        /// What is wrong with it.
        error: IdError,
    },
    /// A row was appended by another Run than the one asked about.
    #[error("a pause was appended by Run {found:?}, not by Run {expected:?}")]
    OtherRun {
        /// The Run asked about.
        expected: String,
        /// The row's source Run.
        found: String,
    },
    /// A row's pause names another logical Run than the one asked about.
    #[error("a pause names root Run {found:?}, not root Run {expected:?}")]
    OtherRootRun {
        /// The root Run asked about.
        expected: String,
        /// The pause's `root_run_id`.
        found: String,
    },
    /// A row's pause hands the Run to itself (the field is
    /// `successor_run_id` or `successor_invocation_id`).
    #[error("a pause's {0} equals its source's")]
    SuccessorIsSource(Field),
    /// A row's pause is not a valid intent (an empty, over-long or
    /// control-character id).
    #[error("a pause is invalid: {0}")]
    InvalidPause(IntentError),
    /// The log holds more than one final fate for the Run: a pause and a
    /// finish, or rows of a Run whose root Run is retired.
    #[error("the log holds more than one final fate for Run {run_id:?}")]
    TwoFates {
        /// The Run asked about.
        run_id: String,
    },
    /// The log holds two different pauses for one Run: two handoffs cannot
    /// both be final.
    #[error("the log holds {count} different pauses for one Run")]
    ConflictingPauses {
        /// How many distinct pauses were read back.
        count: usize,
    },
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
