//! The SQLite log's writes: each operation's reads, rule and write, on a
//! connection that holds the write lock.

use std::time::SystemTime;

use rusqlite::{Connection, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::durable::contract::{
    Claim, Epoch, LogError, Receipt, ReconcileError, Retirement, RunFacts,
};
use crate::durable::fence::{AppendStep, Fate, append_step, claim_step, finish_step, retire_step};
use crate::facts::{HandoffPause, Invocation};

use super::SqliteLog;
use super::error::storage;
#[cfg(test)]
use super::inside;
use super::schema::micros;

/// The Run's epoch and [`Fate`] in `facts`, as the write rules read them:
/// [`Fate::Retired`] under a tombstone, else its pause or its finish.
/// A pause and a finish both stored (never written by baton) are
/// [`LogError::Contradictory`]: no write decides on them.
pub(super) fn fate_of<P>(facts: &RunFacts<P>) -> Result<(Epoch, Fate<'_, P>), LogError> {
    if facts.retired {
        return Ok((facts.epoch, Fate::Retired));
    }
    match (facts.pauses.first(), &facts.finished) {
        (Some(_), Some(_)) => Err(LogError::Contradictory(ReconcileError::TwoFates {
            run_id: facts.run_id.clone(),
        })),
        (Some(pause), None) => Ok((facts.epoch, Fate::HandedOff(pause))),
        (None, Some(finished)) => Ok((facts.epoch, Fate::Finished(finished))),
        (None, None) => Ok((facts.epoch, Fate::Open)),
    }
}

/// Every Run's fate, as `retire_step` reads them.
pub(super) fn fates_of<P>(runs: &[RunFacts<P>]) -> Result<Vec<(&str, Fate<'_, P>)>, LogError> {
    runs.iter()
        .map(|facts| fate_of(facts).map(|(_, fate)| (facts.run_id.as_str(), fate)))
        .collect()
}

/// Each operation's one body (the store's own, and the caller's
/// transaction's), on a connection that holds the write lock from before
/// its first read: the reads, the rule, the write. Each answers, beside
/// the rule's answer, whether it wrote (the store's own commits only
/// then). The operations on the log's connection, called on the caller's
/// thread by the blocking forms and on the log's thread by the async
/// ones, wrap each in a `BEGIN IMMEDIATE` transaction of their own.
impl<P> SqliteLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    pub(super) fn claim_locked(
        tx: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<(Claim<P>, bool), LogError> {
        let facts = Self::facts_in(tx, root_run_id, run_id)?;
        #[cfg(test)]
        inside::reached();
        let step = claim_step(&facts)?;
        let Some(epoch) = step.write else {
            return Ok((step.answer, false));
        };
        let stored = i64::try_from(epoch.get()).map_err(|_| LogError::EpochsExhausted)?;
        tx.execute(
            "INSERT INTO run_epoch (root_run_id, run_id, epoch) VALUES (?1, ?2, ?3) \
             ON CONFLICT (root_run_id, run_id) DO UPDATE SET epoch = excluded.epoch",
            params![root_run_id, run_id, stored],
        )
        .map_err(storage)?;
        Ok((step.answer, true))
    }

    /// `json`: the pause, encoded.
    pub(super) fn append_locked(
        tx: &Connection,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
        json: &str,
    ) -> Result<(Receipt, bool), LogError> {
        let held = Self::facts_in(tx, root_run_id, &source.run_id)?;
        #[cfg(test)]
        inside::reached();
        let (current, fate) = fate_of(&held)?;
        let step = append_step(root_run_id, current, fate, epoch, (source, pause))?;
        if step != AppendStep::Write {
            return Ok((step.receipt(), false));
        }
        let intent = &pause.intent;
        // `append_step` wrote only under the current epoch, which was
        // read from the table, so it fits an i64.
        let stored = i64::try_from(epoch.get()).map_err(|_| LogError::EpochsExhausted)?;
        tx.execute(
            "INSERT INTO handoff_pause (root_run_id, run_id, session_id, turn_id, \
                 invocation_id, handoff_id, successor_run_id, \
                 successor_invocation_id, pause, epoch, ended_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                root_run_id,
                source.run_id,
                source.session_id,
                source.turn_id,
                source.invocation_id,
                intent.handoff_id,
                intent.successor_run_id,
                intent.successor_invocation_id,
                json,
                stored,
                micros(SystemTime::now()),
            ],
        )
        .map_err(storage)?;
        Ok((step.receipt(), true))
    }

    /// `json`: the outcome, encoded.
    pub(super) fn finish_locked(
        tx: &Connection,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
        json: &str,
    ) -> Result<(Receipt, bool), LogError> {
        let held = Self::facts_in(tx, root_run_id, &source.run_id)?;
        #[cfg(test)]
        inside::reached();
        let (current, fate) = fate_of(&held)?;
        let step = finish_step(root_run_id, current, fate, epoch, (source, outcome))?;
        if step != AppendStep::Write {
            return Ok((step.receipt(), false));
        }
        // `finish_step` wrote only under the current epoch, which was
        // read from the table, so it fits an i64.
        let stored = i64::try_from(epoch.get()).map_err(|_| LogError::EpochsExhausted)?;
        tx.execute(
            "INSERT INTO run_finish (root_run_id, run_id, session_id, turn_id, \
                 invocation_id, outcome, epoch, ended_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                root_run_id,
                source.run_id,
                source.session_id,
                source.turn_id,
                source.invocation_id,
                json,
                stored,
                micros(SystemTime::now()),
            ],
        )
        .map_err(storage)?;
        Ok((step.receipt(), true))
    }

    pub(super) fn retire_locked(
        tx: &Connection,
        root_run_id: &str,
    ) -> Result<(Retirement, bool), LogError> {
        let (retired, runs) = Self::root_facts(tx, root_run_id)?;
        #[cfg(test)]
        inside::reached();
        let step = retire_step(root_run_id, retired, fates_of(&runs)?)?;
        let Retirement::Retired { .. } = step else {
            return Ok((step, false));
        };
        Self::remove_root(tx, root_run_id)?;
        Ok((step, true))
    }

    /// A retirement's writes: the root's tombstone, then the removal of
    /// every row of it.
    pub(super) fn remove_root(tx: &Connection, root_run_id: &str) -> Result<(), LogError> {
        // The tombstone first: should a later statement fail in a caller's
        // transaction that is then committed against the rules above, the
        // root is still retired (claims answer Retired, writes are
        // refused), never a root whose epochs are gone without it.
        tx.execute(
            "INSERT INTO retired_root (root_run_id) VALUES (?1)",
            params![root_run_id],
        )
        .map_err(storage)?;
        for table in ["handoff_pause", "run_finish", "run_epoch"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE root_run_id = ?1"),
                params![root_run_id],
            )
            .map_err(storage)?;
        }
        Ok(())
    }
}
