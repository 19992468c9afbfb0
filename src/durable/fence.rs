//! The fencing rule (SPEC §6): what a log does on `claim` and `append`,
//! given what it holds for the Run. Pure functions, so that every store
//! ([`MemoryLog`](super::MemoryLog), `SqliteLog`, `PostgresLog`) applies the *same* rule
//! inside one transaction of its own, and tests pin it cell by cell.
//!
//! | what the log holds for the Run | `claim` | `append(epoch e, row)` |
//! |---|---|---|
//! | epoch `c`, no pause (`Open`) | epoch := `c + 1`; answers [`Claim::Owner`]`(c + 1)`: every older epoch is fenced (at `c` = [`Epoch::LAST`]: [`LogError::EpochsExhausted`], nothing written) | `e == c`: write the row, [`Receipt::Written`] |
//! | epoch `c`, pause `p` (`HandedOff`) | answers [`Claim::HandedOff`]`(p)`, writes nothing: a handed-off Run is never resumed | `e == c` and the row is `p`'s: [`Receipt::AlreadyDurable`]; another row: [`LogError::AlreadyHandedOff`] |
//! | any | contradictory facts: [`LogError::Contradictory`], nothing written | `e < c`: [`LogError::Fenced`]; `e == 0` or `e > c`: [`LogError::EpochNotIssued`]; nothing written |
//!
//! Epochs only grow, and only `claim` grows them, and only while the Run is
//! open: so once a pause is durable no epoch is issued, and once a newer
//! epoch is issued no older epoch's append succeeds (R1, R6, R7).

use super::log::{LogError, Receipt};
use super::reconcile::{Appended, Decision, RunFacts, reconcile};
use crate::facts::{HandoffPause, Invocation};

/// An owner epoch of one Run: its fencing token. [`claim`](super::HandoffLog::claim)
/// issues them in increasing order, `1` first; [`Epoch::NONE`] (`0`) is the
/// epoch of a Run never claimed, and never a valid epoch to append with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Epoch(u64);

impl Epoch {
    /// The epoch of a Run never claimed.
    pub const NONE: Epoch = Epoch(0);

    /// The epoch numbered `value` (as stored by a log).
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// Its number.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The last epoch a claim ever issues, in every store: `i64::MAX`, the
    /// largest a SQL store's `bigint` holds, so that `MemoryLog`,
    /// `SqliteLog` and `PostgresLog` run out at the same claim.
    pub const LAST: Epoch = Epoch(i64::MAX as u64);

    /// The epoch a claim issues after this one; `None` from
    /// [`Epoch::LAST`] on (the Run's epochs are spent).
    pub const fn next(self) -> Option<Epoch> {
        if self.0 >= Self::LAST.0 {
            None
        } else {
            Some(Epoch(self.0 + 1))
        }
    }
}

impl std::fmt::Display for Epoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// What a [`claim`](super::HandoffLog::claim) answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[must_use = "a claim is what the owner must act on"]
pub enum Claim<P> {
    /// The Run is open and now belongs to this epoch: start (or resume) its
    /// worker with it. Every older epoch's append is refused from now on.
    Owner(Epoch),
    /// A pause is durable: the handoff is final, the successor owns the Run,
    /// and nobody may resume it. Nothing was written.
    HandedOff(HandoffPause<P>),
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
    match reconcile(facts).map_err(LogError::Contradictory)? {
        Decision::HandedOff(pause) => Ok(ClaimStep {
            answer: Claim::HandedOff(pause),
            write: None,
        }),
        Decision::Resumable => {
            let next = facts.epoch.next().ok_or(LogError::EpochsExhausted)?;
            Ok(ClaimStep {
                answer: Claim::Owner(next),
                write: Some(next),
            })
        }
    }
}

/// What an append does, when its epoch is the Run's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendStep {
    /// No pause yet: write this one.
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
/// its pause row, if any), read inside the appending transaction. The
/// input's own validity (ids, intent) is checked before, by the store.
///
/// # Errors
///
/// [`LogError::EpochNotIssued`] if `epoch` is [`Epoch::NONE`] or newer than
/// `current`; [`LogError::Fenced`] if it is older; at `current`,
/// [`LogError::AlreadyHandedOff`] if `existing` is another row than `new`.
pub fn append_step<P: PartialEq>(
    root_run_id: &str,
    current: Epoch,
    existing: Option<&Appended<P>>,
    epoch: Epoch,
    new: (&Invocation, &HandoffPause<P>),
) -> Result<AppendStep, LogError> {
    if epoch == Epoch::NONE || epoch > current {
        return Err(LogError::EpochNotIssued { epoch, current });
    }
    if epoch < current {
        return Err(LogError::Fenced { epoch, current });
    }
    match existing {
        None => Ok(AppendStep::Write),
        Some(row) if row.source == *new.0 && row.pause == *new.1 => Ok(AppendStep::Idempotent),
        Some(row) => Err(LogError::AlreadyHandedOff {
            root_run_id: root_run_id.to_owned(),
            run_id: row.source.run_id.clone(),
        }),
    }
}

#[cfg(test)]
#[path = "fence_tests.rs"]
mod tests;
