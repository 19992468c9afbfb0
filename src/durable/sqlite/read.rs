//! The SQLite log's reads: a Run's facts (under the write lock, or as
//! one snapshot), a root's Runs, and the stored rows decoded.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::durable::contract::{Appended, Epoch, Finished, LogError, RunFacts, check_run};
use crate::durable::row::{checked_row, corrupt, decoded_outcome};
use crate::facts::Invocation;
use crate::sync::{Mutex, lock};

use super::SqliteLog;
use super::error::storage;
#[cfg(test)]
use super::inside;

/// Whether a root Run is retired: its tombstone, found by primary key
/// (so a claim's or a write's cost does not grow with the number of
/// retired roots).
pub(super) const RETIRED: &str =
    "SELECT EXISTS (SELECT 1 FROM retired_root WHERE root_run_id = ?1)";

/// Every Run the log holds a row for under a root Run, each once: an
/// epoch, a pause (a version-1 file's has no epoch) or a finish. Each
/// table is searched by the leading column of its primary key.
pub(super) const RUNS_OF: &str = "SELECT run_id FROM run_epoch WHERE root_run_id = ?1 \
     UNION SELECT run_id FROM handoff_pause WHERE root_run_id = ?1 \
     UNION SELECT run_id FROM run_finish WHERE root_run_id = ?1 \
     ORDER BY run_id";

/// Every Run the log holds a row for, each once (as [`RUNS_OF`], over
/// every root), and the retired roots' tombstones: what it keeps (R10).
const ROWS: &str = "SELECT \
     (SELECT count(*) FROM (SELECT root_run_id, run_id FROM run_epoch \
      UNION SELECT root_run_id, run_id FROM handoff_pause \
      UNION SELECT root_run_id, run_id FROM run_finish)), \
     (SELECT count(*) FROM retired_root)";

impl<P> SqliteLog<P> {
    /// What the log keeps (R10), counted as [`MemoryLog::rows`] counts
    /// it: the number of Runs it holds a record for (an epoch, a pause or
    /// a finish), and the number of retired root Runs' tombstones. One
    /// read of one snapshot, which scans the tables: for tests and an
    /// operator's checks, not a worker's path.
    ///
    /// # Errors
    ///
    /// [`LogError::Unavailable`] if the file cannot be read.
    ///
    /// [`MemoryLog::rows`]: crate::durable::MemoryLog::rows
    pub fn rows(&self) -> Result<(usize, usize), LogError> {
        let connection = lock(&self.connection);
        let (runs, retired): (i64, i64) = connection
            .query_row(ROWS, [], |row| Ok((row.get(0)?, row.get(1)?)))
            .map_err(storage)?;
        // `count(*)` is never negative.
        let count = |n: i64| usize::try_from(n).unwrap_or_default();
        Ok((count(runs), count(retired)))
    }

    /// The Run's current epoch ([`Epoch::NONE`] if never claimed).
    pub(super) fn epoch(
        connection: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Epoch, LogError> {
        let stored: Option<i64> = connection
            .query_row(
                "SELECT epoch FROM run_epoch WHERE root_run_id = ?1 AND run_id = ?2",
                params![root_run_id, run_id],
                |row| row.get(0),
            )
            .optional()
            .map_err(storage)?;
        match stored.map(u64::try_from) {
            None => Ok(Epoch::NONE),
            Some(Ok(epoch)) if epoch > 0 => Ok(Epoch::new(epoch)),
            Some(_) => Err(corrupt(run_id, "the stored epoch is not positive")),
        }
    }

    /// Whether the root Run is retired: its tombstone, by primary key.
    pub(super) fn is_retired(connection: &Connection, root_run_id: &str) -> Result<bool, LogError> {
        connection
            .query_row(RETIRED, params![root_run_id], |row| row.get(0))
            .map_err(storage)
    }

    /// Everything the log holds for a Run, read on `connection` (inside the
    /// caller's transaction, so the tombstone, the epoch, the pause and
    /// the finish agree).
    pub(super) fn facts_in(
        connection: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<RunFacts<P>, LogError>
    where
        P: DeserializeOwned,
    {
        let mut facts = RunFacts::empty(root_run_id, run_id);
        facts.retired = Self::is_retired(connection, root_run_id)?;
        facts.epoch = Self::epoch(connection, root_run_id, run_id)?;
        facts
            .pauses
            .extend(Self::read(connection, root_run_id, run_id)?);
        facts.finished = Self::read_finish(connection, root_run_id, run_id)?;
        Ok(facts)
    }

    /// The finish stored for a Run, its outcome decoded.
    pub(super) fn read_finish(
        connection: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Option<Finished<P>>, LogError>
    where
        P: DeserializeOwned,
    {
        let row = connection
            .query_row(
                "SELECT session_id, turn_id, invocation_id, outcome \
                 FROM run_finish WHERE root_run_id = ?1 AND run_id = ?2",
                params![root_run_id, run_id],
                |row| {
                    Ok((
                        Invocation {
                            session_id: row.get(0)?,
                            turn_id: row.get(1)?,
                            run_id: run_id.to_owned(),
                            invocation_id: row.get(2)?,
                        },
                        row.get::<_, String>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(storage)?;
        let Some((source, json)) = row else {
            return Ok(None);
        };
        let outcome = decoded_outcome(run_id, &json)?;
        Ok(Some(Finished { source, outcome }))
    }

    /// Every Run the log holds a row for under the root Run ([`RUNS_OF`]).
    pub(super) fn runs_of(
        connection: &Connection,
        root_run_id: &str,
    ) -> Result<Vec<String>, LogError> {
        let mut statement = connection.prepare(RUNS_OF).map_err(storage)?;
        statement
            .query_map(params![root_run_id], |row| row.get(0))
            .map_err(storage)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(storage)
    }

    /// The row stored for a Run, decoded and checked against its columns.
    pub(super) fn read(
        connection: &Connection,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Option<Appended<P>>, LogError>
    where
        P: DeserializeOwned,
    {
        let row = connection
            .query_row(
                "SELECT session_id, turn_id, invocation_id, handoff_id, \
                        successor_run_id, successor_invocation_id, pause \
                 FROM handoff_pause WHERE root_run_id = ?1 AND run_id = ?2",
                params![root_run_id, run_id],
                |row| {
                    Ok((
                        Invocation {
                            session_id: row.get(0)?,
                            turn_id: row.get(1)?,
                            run_id: run_id.to_owned(),
                            invocation_id: row.get(2)?,
                        },
                        [row.get::<_, String>(3)?, row.get(4)?, row.get(5)?],
                        row.get::<_, String>(6)?,
                    ))
                },
            )
            .optional()
            .map_err(storage)?;
        let Some((source, columns, json)) = row else {
            return Ok(None);
        };
        checked_row(root_run_id, source, columns, &json).map(Some)
    }
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
    /// What a retirement reads under the write lock: whether the root is
    /// retired, and the facts of every Run of it.
    pub(super) fn root_facts(
        tx: &Connection,
        root_run_id: &str,
    ) -> Result<(bool, Vec<RunFacts<P>>), LogError> {
        let retired = Self::is_retired(tx, root_run_id)?;
        let mut runs = Vec::new();
        if !retired {
            for run_id in Self::runs_of(tx, root_run_id)? {
                runs.push(Self::facts_in(tx, root_run_id, &run_id)?);
            }
        }
        Ok((retired, runs))
    }

    pub(super) fn facts_on(
        connection: &Mutex<Connection>,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<RunFacts<P>, LogError> {
        check_run(root_run_id, run_id)?;
        let mut connection = lock(connection);
        // One read transaction: the epoch and the pause of one snapshot
        // (WAL: taken by the first read, kept while writers commit).
        let transaction = connection.transaction().map_err(storage)?;
        let mut facts = RunFacts::empty(root_run_id, run_id);
        facts.epoch = Self::epoch(&transaction, root_run_id, run_id)?;
        #[cfg(test)]
        inside::between_reads();
        facts
            .pauses
            .extend(Self::read(&transaction, root_run_id, run_id)?);
        facts.finished = Self::read_finish(&transaction, root_run_id, run_id)?;
        facts.retired = Self::is_retired(&transaction, root_run_id)?;
        Ok(facts)
    }
}
