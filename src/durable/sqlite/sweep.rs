//! `SqliteLog`'s retention by age (SPEC §6.1, G5): one batch of a sweep
//! in one `BEGIN IMMEDIATE` transaction, and the times it keeps.

use crate::sync::{Arc, Mutex};
use std::future::Future;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::SqliteLog;
use super::error::storage;
use super::schema::micros;
use super::write::fates_of;
use crate::durable::contract::LogError;
use crate::durable::sweep::{Sweep, SweepCursor, SweepStep, candidates, sweep_step};

/// The time `micros` stores.
fn time_of(micros: i64) -> SystemTime {
    let span = Duration::from_micros(micros.unsigned_abs());
    if micros >= 0 {
        SystemTime::UNIX_EPOCH + span
    } else {
        SystemTime::UNIX_EPOCH - span
    }
}

/// The finishes a batch looks at: ended before the cut-off and after the
/// cursor, oldest first, by the index on `(ended_at, root_run_id)`.
pub(super) const CANDIDATES: &str = "SELECT ended_at, root_run_id FROM run_finish \
     WHERE ended_at < ?1 AND (ended_at, root_run_id) > (?2, ?3) \
     ORDER BY ended_at, root_run_id LIMIT ?4";

/// The latest end of any Run of a root (its pauses and its finishes).
const LATEST_END: &str = "SELECT max(ended_at) FROM ( \
     SELECT ended_at FROM handoff_pause WHERE root_run_id = ?1 \
     UNION ALL SELECT ended_at FROM run_finish WHERE root_run_id = ?1)";

impl<P> SqliteLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    /// One batch of retention by age (SPEC §6.1, G5): looks at up to
    /// `limit` root Runs that have a Run finished before `before`, oldest
    /// end first, after `from` (the previous batch's
    /// [`next`](Sweep::next); `None` to start), and retires each whose
    /// work ended before `before` ([`sweep_step`]) exactly as
    /// [`retire`](crate::durable::HandoffLog::retire) would, in one
    /// `BEGIN IMMEDIATE` transaction (so no claim, append or finish comes
    /// between what it reads and what it removes); the others are kept.
    /// Call it again with the answer's `next` until that is `None`. A
    /// batch reads the finishes it looks at through their index, however
    /// many roots the file holds, and holds the write lock for its
    /// duration: keep `limit` to what a writer may wait for (hundreds).
    ///
    /// The end of a Run is when its pause or finish was written, by the
    /// writing process's clock.
    ///
    /// # Errors
    ///
    /// As [`retire`](crate::durable::HandoffLog::retire)'s, for the whole
    /// batch (nothing is retired): [`LogError::Corrupt`] naming a root's
    /// Run that does not decode, [`LogError::Unavailable`] (retry), and
    /// [`LogError::OutcomeUnknown`] if its commit failed (retry: a batch
    /// again finds what it did not retire).
    pub fn retire_ended(
        &self,
        before: SystemTime,
        from: Option<&SweepCursor>,
        limit: usize,
    ) -> Result<Sweep, LogError> {
        Self::sweep_on(&self.connection, before, from.cloned(), limit)
    }

    /// [`retire_ended`](Self::retire_ended) on the log's thread, for async
    /// code: the same batch, awaited.
    ///
    /// # Cancel safety
    ///
    /// The batch is one transaction on the log's thread: dropping the
    /// future after it was sent leaves it to commit (every root it retires)
    /// or not (none), unseen; the same batch may be sent again.
    ///
    /// # Errors
    ///
    /// As [`retire_ended`](Self::retire_ended)'s.
    pub fn retire_ended_async(
        &self,
        before: SystemTime,
        from: Option<&SweepCursor>,
        limit: usize,
    ) -> impl Future<Output = Result<Sweep, LogError>> + Send + use<P> {
        let connection = Arc::clone(&self.connection);
        let from = from.cloned();
        self.thread
            .run(move || Self::sweep_on(&connection, before, from, limit))
    }

    fn sweep_on(
        connection: &Mutex<Connection>,
        before: SystemTime,
        from: Option<SweepCursor>,
        limit: usize,
    ) -> Result<Sweep, LogError> {
        Self::immediate(connection, |tx| {
            let (at, root) = from.map_or((i64::MIN, String::new()), |from| {
                (micros(from.ended_at), from.root_run_id)
            });
            let limit_sql = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut statement = tx.prepare(CANDIDATES).map_err(storage)?;
            let pairs = statement
                .query_map(params![micros(before), at, root, limit_sql], |row| {
                    Ok((time_of(row.get(0)?), row.get(1)?))
                })
                .map_err(storage)?
                .collect::<Result<Vec<(SystemTime, String)>, _>>()
                .map_err(storage)?;
            let (roots, next) = candidates(pairs, limit);
            let mut sweep = Sweep {
                next,
                ..Sweep::default()
            };
            for root in roots {
                let (retired, runs) = Self::root_facts(tx, &root)?;
                let latest: Option<i64> = tx
                    .query_row(LATEST_END, params![root], |row| row.get(0))
                    .map_err(storage)?;
                let step = sweep_step(
                    &root,
                    retired,
                    fates_of(&runs)?,
                    latest.map(time_of),
                    before,
                )?;
                if let SweepStep::Retire { .. } = step {
                    Self::remove_root(tx, &root)?;
                }
                sweep.count(&root, step);
            }
            let wrote = sweep.retired > 0;
            Ok((sweep, wrote))
        })
    }
}
