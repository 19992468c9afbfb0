//! The fencing rule (SPEC §6): what a log does on `claim` and `append`,
//! given what it holds for the Run. Pure functions, so that every store
//! ([`MemoryLog`](super::MemoryLog), `SqliteLog`, `PostgresLog`) applies the *same* rule
//! inside one transaction of its own, and tests pin it cell by cell.
//!
//! | what the log holds for the Run | `claim` | `append(epoch e, row)` |
//! |---|---|---|
//! | epoch `c`, no pause (`Open`) | epoch := `c + 1`; answers [`Claim::Owner`]`(c + 1)`: every older epoch is fenced (at `c` = [`Epoch::LAST`]: [`LogError::EpochsExhausted`], nothing written) | `e == c`: write the row, [`Receipt::Written`] |
//! | epoch `c`, pause `p` (`HandedOff`) | answers [`Claim::HandedOff`]`(p)`, writes nothing: a handed-off Run is never resumed | `e == c` and the row is `p`'s: [`Receipt::AlreadyDurable`]; another row: [`LogError::AlreadyHandedOff`] |
//! | epoch `c`, outcome `o` (`Finished`) | answers [`Claim::Finished`]`(o)`, writes nothing: a finished Run is never resumed | any pause: [`LogError::AlreadyFinished`] |
//! | the root Run is retired | answers [`Claim::Retired`], writes nothing | [`LogError::Retired`] |
//! | any | contradictory facts: [`LogError::Contradictory`], nothing written | `e < c`: [`LogError::Fenced`]; `e == 0` or `e > c`: [`LogError::EpochNotIssued`]; nothing written |
//!
//! `finish(epoch e, outcome)` ([`finish_step`]) is fenced exactly as an
//! append: under the current epoch of an open Run it writes the outcome;
//! the identical record again is idempotent; a handed-off Run refuses it
//! with [`LogError::AlreadyHandedOff`], another outcome with
//! [`LogError::AlreadyFinished`].
//!
//! `retire(root)` ([`retire_step`]) removes every row of a root Run whose
//! work has ended — every Run of it final, and every successor a durable
//! pause of it names claimed and final too — and keeps one tombstone for
//! the root: a claim under
//! it answers [`Claim::Retired`] and every write is refused with
//! [`LogError::Retired`], so no removed Run is resumed and no epoch is
//! issued again under a removed Run id (R9).
//!
//! Epochs only grow, and only `claim` grows them, and only while the Run is
//! open: so once a fate is final no epoch is issued, and once a newer
//! epoch is issued no older epoch's write succeeds (R1, R6, R7, R8).

use super::contract::{Appended, Claim, Epoch, Finished, LogError, Receipt, Retirement, RunFacts};
use super::reconcile::{Decision, reconcile};
use crate::facts::{HandoffPause, Invocation};

/// The fate a log holds for one Run, as the write rules ([`append_step`],
/// [`finish_step`], [`retire_step`]) read it inside their transaction.
#[derive(Debug, PartialEq, Eq)]
pub enum Fate<'a, P> {
    /// Claimed or not, no final fate: the Run may still be handed off or
    /// finished.
    Open,
    /// This pause is durable.
    HandedOff(&'a Appended<P>),
    /// This finish is durable.
    Finished(&'a Finished<P>),
    /// The Run's root Run is retired (its rows are gone).
    Retired,
}

impl<P> Clone for Fate<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Fate<'_, P> {}

impl<P> Fate<'_, P> {
    /// Whether the fate is final (handed off, finished or retired).
    pub const fn is_final(&self) -> bool {
        !matches!(self, Fate::Open)
    }
}

/// What a store does for a `claim`: the answer, and the epoch to write with
/// it (`None`: write nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimStep<P> {
    /// What the claim answers.
    pub answer: Claim<P>,
    /// The Run's new epoch, to write in the same transaction (`None`:
    /// write nothing).
    pub write: Option<Epoch>,
}

/// The rule of `claim`, from the facts read inside the claiming
/// transaction: [`reconcile`] decides, and an open Run's epoch advances.
/// Every store calls it, and the model checker (`baton-model`) explores
/// it with zombie workers and lost replies.
///
/// # Errors
///
/// [`LogError::Contradictory`] for facts [`reconcile`] refuses;
/// [`LogError::EpochsExhausted`] past the last epoch.
pub fn claim_step<P: PartialEq + Clone>(facts: &RunFacts<P>) -> Result<ClaimStep<P>, LogError> {
    claim_step_above(facts, Epoch::NONE)
}

/// [`claim_step`], with every new epoch above `floor`: an open Run's next
/// epoch is the greater of its epoch's successor and `floor`'s. A store
/// whose server may lose claims it acknowledged (a PostgreSQL primary
/// failing over to an asynchronous standby) passes a floor above every
/// epoch its earlier servers could have answered, so that no epoch is
/// answered to two claims (G4; docs/SPEC.md §6, "Replication and
/// failover"); every other store passes [`Epoch::NONE`], which is
/// [`claim_step`].
///
/// # Errors
///
/// As [`claim_step`].
pub fn claim_step_above<P: PartialEq + Clone>(
    facts: &RunFacts<P>,
    floor: Epoch,
) -> Result<ClaimStep<P>, LogError> {
    match reconcile(facts).map_err(LogError::Contradictory)? {
        Decision::HandedOff(pause) => Ok(ClaimStep {
            answer: Claim::HandedOff(pause),
            write: None,
        }),
        Decision::Finished(outcome) => Ok(ClaimStep {
            answer: Claim::Finished(outcome),
            write: None,
        }),
        Decision::Retired => Ok(ClaimStep {
            answer: Claim::Retired,
            write: None,
        }),
        Decision::Resumable => {
            let next = facts
                .epoch
                .max(floor)
                .next()
                .ok_or(LogError::EpochsExhausted)?;
            Ok(ClaimStep {
                answer: Claim::Owner(next),
                write: Some(next),
            })
        }
    }
}

/// The floor of the epochs a claim answers on a server whose timeline is
/// `timeline` (the floor [`claim_step_above`] takes): `(timeline − 1) ·
/// 2^40`, so that every epoch answered on a timeline is below every epoch
/// answered on a later one (a Run is claimed fewer than 2^40 times on one
/// timeline), and a fresh cluster's (timeline 1) is [`Epoch::NONE`]. A
/// PostgreSQL promotion begins a later timeline, so no epoch the old
/// primary answered — even one its asynchronous standby never received —
/// is answered again (G4; docs/SPEC.md §6, "Replication and failover").
/// `PostgresLog` calls it with the timeline its claim read, and the model
/// checker (`baton-model`) with the term of its failover.
///
/// ```
/// use baton::durable::{Epoch, timeline_floor};
///
/// assert_eq!(timeline_floor(1), Epoch::NONE);
/// assert_eq!(timeline_floor(2), Epoch::new(1 << 40));
/// assert!(timeline_floor(3) > timeline_floor(2));
/// assert_eq!(timeline_floor(u32::MAX), Epoch::LAST);
/// ```
pub fn timeline_floor(timeline: u32) -> Epoch {
    u64::from(timeline.saturating_sub(1))
        .checked_mul(1 << 40)
        .map_or(Epoch::LAST, |floor| {
            Epoch::new(floor.min(Epoch::LAST.get()))
        })
}

/// What an append (or a finish) does, when its epoch is the Run's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendStep {
    /// The Run is open: write this row.
    Write,
    /// The identical row is durable: write nothing, `Ok(AlreadyDurable)`.
    Idempotent,
}

impl AppendStep {
    /// The receipt an append that carried out this step returns.
    pub const fn receipt(self) -> Receipt {
        match self {
            AppendStep::Write => Receipt::Written,
            AppendStep::Idempotent => Receipt::AlreadyDurable,
        }
    }
}

/// The rule of `append`, from what the log holds for the Run (its epoch and
/// its [`Fate`]), read inside the appending transaction. The input's own
/// validity (ids, intent) is checked before, by the store.
///
/// # Errors
///
/// [`LogError::Retired`] under a retired root Run; [`LogError::EpochNotIssued`]
/// if `epoch` is [`Epoch::NONE`] or newer than `current`;
/// [`LogError::Fenced`] if it is older; at `current`,
/// [`LogError::AlreadyHandedOff`] if another pause is durable and
/// [`LogError::AlreadyFinished`] if the Run finished.
pub fn append_step<P: PartialEq>(
    root_run_id: &str,
    current: Epoch,
    fate: Fate<'_, P>,
    epoch: Epoch,
    new: (&Invocation, &HandoffPause<P>),
) -> Result<AppendStep, LogError> {
    fence(root_run_id, current, fate, epoch)?;
    match fate {
        Fate::Open => Ok(AppendStep::Write),
        Fate::HandedOff(row) if row.source == *new.0 && row.pause == *new.1 => {
            Ok(AppendStep::Idempotent)
        }
        Fate::HandedOff(_) => Err(handed_off(root_run_id, &new.0.run_id)),
        Fate::Finished(_) => Err(finished(root_run_id, &new.0.run_id)),
        Fate::Retired => Err(retired(root_run_id)),
    }
}

/// The rule of `finish`, from what the log holds for the Run, read inside
/// the finishing transaction: fenced exactly as [`append_step`] (R8).
///
/// # Errors
///
/// As [`append_step`]'s: [`LogError::Retired`], [`LogError::EpochNotIssued`],
/// [`LogError::Fenced`]; at `current`, [`LogError::AlreadyHandedOff`] if a
/// pause is durable and [`LogError::AlreadyFinished`] if another outcome
/// (or another source's) is.
pub fn finish_step<P: PartialEq>(
    root_run_id: &str,
    current: Epoch,
    fate: Fate<'_, P>,
    epoch: Epoch,
    new: (&Invocation, &P),
) -> Result<AppendStep, LogError> {
    fence(root_run_id, current, fate, epoch)?;
    match fate {
        Fate::Open => Ok(AppendStep::Write),
        Fate::Finished(row) if row.source == *new.0 && row.outcome == *new.1 => {
            Ok(AppendStep::Idempotent)
        }
        Fate::Finished(_) => Err(finished(root_run_id, &new.0.run_id)),
        Fate::HandedOff(_) => Err(handed_off(root_run_id, &new.0.run_id)),
        Fate::Retired => Err(retired(root_run_id)),
    }
}

/// The fence every write passes first: not under a retired root, and only
/// under the Run's current epoch.
fn fence<P>(
    root_run_id: &str,
    current: Epoch,
    fate: Fate<'_, P>,
    epoch: Epoch,
) -> Result<(), LogError> {
    if let Fate::Retired = fate {
        return Err(retired(root_run_id));
    }
    if epoch == Epoch::NONE || epoch > current {
        return Err(LogError::EpochNotIssued { epoch, current });
    }
    if epoch < current {
        return Err(LogError::Fenced { epoch, current });
    }
    Ok(())
}

/// The refusals of a write by a final fate (`Retired` is [`fence`]'s, the
/// others at the current epoch).
fn handed_off(root_run_id: &str, run_id: &str) -> LogError {
    LogError::AlreadyHandedOff {
        root_run_id: root_run_id.to_owned(),
        run_id: run_id.to_owned(),
    }
}

fn finished(root_run_id: &str, run_id: &str) -> LogError {
    LogError::AlreadyFinished {
        root_run_id: root_run_id.to_owned(),
        run_id: run_id.to_owned(),
    }
}

fn retired(root_run_id: &str) -> LogError {
    LogError::Retired {
        root_run_id: root_run_id.to_owned(),
    }
}

/// The rule of `retire`, from what the log holds under the root Run, read
/// inside the retiring transaction: whether its root is retired already,
/// and every Run of it with its [`Fate`]. A root is retired only once its
/// work has ended (G5, R9, R10): the log holds at least one Run of it,
/// every Run of it is final, and every successor a durable pause of it
/// names is a Run of it that is itself final — so a chain of handoffs
/// ends in a finish (or in a handoff whose successor is final), and a
/// handoff whose successor has not yet been claimed, or is still running,
/// keeps its root (G1). Then the store removes their rows and writes one
/// tombstone for the root, in the same transaction.
///
/// # Errors
///
/// [`LogError::NothingToRetire`] if the log holds no Run of the root (a
/// mistyped id, or a root not yet claimed: retiring it would refuse its
/// first claim for good); [`LogError::RunOpen`] naming the Run that is not
/// final — an open Run of the root, or a successor named by a durable
/// pause that is open or not claimed yet — whose id is least (so every
/// store names the same one, whatever order it read the Runs in). Nothing
/// is written.
pub fn retire_step<'a, P: 'a>(
    root_run_id: &str,
    retired: bool,
    runs: impl IntoIterator<Item = (&'a str, Fate<'a, P>)>,
) -> Result<Retirement, LogError> {
    if retired {
        return Ok(Retirement::AlreadyRetired);
    }
    let runs: Vec<(&str, Fate<'a, P>)> = runs.into_iter().collect();
    if runs.is_empty() {
        return Err(LogError::NothingToRetire {
            root_run_id: root_run_id.to_owned(),
        });
    }
    let is_final = |run_id: &str| {
        runs.iter()
            .any(|(id, fate)| *id == run_id && fate.is_final())
    };
    let open = runs
        .iter()
        .filter(|(_, fate)| !fate.is_final())
        .map(|(run_id, _)| *run_id);
    let waiting = runs
        .iter()
        .filter_map(|(_, fate)| match fate {
            Fate::HandedOff(row) => Some(row.pause.intent.successor_run_id.as_str()),
            _ => None,
        })
        .filter(|successor| !is_final(successor));
    if let Some(run_id) = open.chain(waiting).min() {
        return Err(LogError::RunOpen {
            root_run_id: root_run_id.to_owned(),
            run_id: run_id.to_owned(),
        });
    }
    Ok(Retirement::Retired { runs: runs.len() })
}

#[cfg(test)]
#[path = "fence_tests.rs"]
mod tests;
