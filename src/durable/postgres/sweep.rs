//! `PostgresLog`'s retention by age (SPEC §6.1, G5): the candidates a
//! batch looks at, read through the finish-time index, and the batch's
//! retirements in one transaction of a few statements over all its roots,
//! each root under the same locks as `retire`.

use std::collections::HashMap;
use std::time::SystemTime;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Row};

use super::PostgresLog;
use super::connect::in_runtime;
use super::decide::{RootStep, retirement};
use super::end::{abort, commit};
use super::failure::{Failure, column, unavailable};
use super::flight::{flight2, flight3};
use super::op::{Answer, Op, unexpected};
use super::read::{RootRead, RootRows};
use super::sql::{Conn, Layout, Param, Which};
use crate::durable::contract::LogError;
use crate::durable::row::corrupt;
use crate::durable::sweep::{Sweep, SweepCursor, SweepStep, candidates};

impl<P> PostgresLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    /// One batch of retention by age (SPEC §6.1, G5): looks at up to
    /// `limit` root Runs that have a Run finished before `before`, oldest
    /// end first, after `from` (the previous batch's
    /// [`next`](Sweep::next); `None` to start), and retires each whose
    /// work ended before `before` ([`sweep_step`](crate::durable::sweep_step)),
    /// all in one transaction on one connection (one commit, so one flush
    /// of the server's log, for the batch), each root under exactly the
    /// locks of
    /// [`retire_async`](crate::durable::AsyncHandoffLog::retire_async), so
    /// a claim, an append or a finish racing it is ordered with it as with
    /// `retire`; the others are kept. Call it again with the answer's
    /// `next` until that is `None`. The batch holds the row locks of the
    /// roots it looked at until its commit: keep `limit` to what a claim
    /// of one of those (ended) roots may wait for (hundreds).
    ///
    /// The candidates are read through the index on the finishes' end
    /// time, so a batch reads what it looks at, however many roots the
    /// database holds (retired or not). The end of a Run is the server's
    /// `now()` in the transaction that wrote its pause or its finish.
    ///
    /// **On tables distributed by root Run** (Citus,
    /// [`is_distributed`](Self::is_distributed)) the batch reads its
    /// candidates across all shards, then retires each root in a
    /// transaction of its own on its shard (Citus refuses row locks over
    /// several shards in one statement), under the same locks.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future ends the batch: its transaction commits whole
    /// (if its commit was sent) or not at all, as a dropped
    /// `retire_async`'s, and the log's next operation waits until that is
    /// settled; the same batch may be sent again. Distributed by root Run,
    /// the roots before the one in progress stay retired.
    ///
    /// # Errors
    ///
    /// [`LogError::Unavailable`] if the candidates could not be read, or
    /// the batch's transaction failed before its commit (nothing retired:
    /// send it again); [`LogError::Corrupt`] naming a root's Run that does
    /// not decode (nothing retired); [`LogError::OutcomeUnknown`] if the
    /// commit was sent and its reply lost (the batch retired every root it
    /// would have, or none: send it again, it finds only what is left);
    /// distributed by root Run, also when a root's transaction failed after
    /// earlier roots of the batch were retired (some are: send it again).
    pub async fn retire_ended_async(
        &self,
        before: SystemTime,
        from: Option<&SweepCursor>,
        limit: usize,
    ) -> Result<Sweep, LogError> {
        in_runtime()?;
        let pairs = self.ended_before(before, from, limit).await?;
        let (roots, next) = candidates(pairs, limit);
        let mut sweep = Sweep {
            next,
            ..Sweep::default()
        };
        if roots.is_empty() {
            return Ok(sweep);
        }
        // Distributed by root Run, each root is a batch of its own: one
        // transaction on its own shard, as `retire_async`'s.
        let batches: Vec<&[String]> = match self.sql.layout {
            Layout::OneServer => vec![&roots],
            Layout::ByRootRun => roots.chunks(1).collect(),
        };
        let mut retired = 0;
        for batch in batches {
            let answered = self
                .execute(Op::Sweep {
                    roots: batch,
                    before,
                })
                .await;
            let Answer::Swept(steps) = answered.map_err(|error| match retired {
                0 => error,
                // Roots of this batch are retired already (each its own
                // transaction): the batch is not "nothing retired".
                _ => LogError::OutcomeUnknown(
                    format!(
                        "a distributed sweep's batch failed after retiring {retired} of its \
                         roots, each in a transaction of its own: {error}"
                    )
                    .into(),
                ),
            })?
            else {
                return unexpected();
            };
            retired += steps
                .iter()
                .filter(|step| matches!(step, SweepStep::Retire { .. }))
                .count();
            if steps.len() != batch.len() {
                return unexpected();
            }
            for (root_run_id, step) in batch.iter().zip(steps) {
                sweep.count(root_run_id, step);
            }
        }
        Ok(sweep)
    }

    /// The `(end, root Run)` pairs of finished Runs ended before `before`,
    /// after `from`, oldest first, at most `limit`: one read, outside any
    /// transaction, by the partial index `baton_run_by_end`, as an unnamed
    /// statement (so it runs behind PgBouncer too), within the log's
    /// timeout.
    async fn ended_before(
        &self,
        before: SystemTime,
        from: Option<&SweepCursor>,
        limit: usize,
    ) -> Result<Vec<(SystemTime, String)>, LogError> {
        let s = self.schema.prefix();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let read = async {
            let client = self.pool.get().await.map_err(unavailable)?;
            let rows = match from {
                None => {
                    let text = format!(
                        "SELECT ended_at, root_run_id FROM {s}baton_run \
                         WHERE outcome IS NOT NULL AND ended_at < $1 \
                         ORDER BY ended_at, root_run_id LIMIT $2"
                    );
                    client
                        .query_typed(&text, &[(&before, Type::TIMESTAMPTZ), (&limit, Type::INT8)])
                        .await
                }
                Some(from) => {
                    let text = format!(
                        "SELECT ended_at, root_run_id FROM {s}baton_run \
                         WHERE outcome IS NOT NULL AND ended_at < $1 \
                         AND (ended_at, root_run_id) > ($2, $3) \
                         ORDER BY ended_at, root_run_id LIMIT $4"
                    );
                    client
                        .query_typed(
                            &text,
                            &[
                                (&before, Type::TIMESTAMPTZ),
                                (&from.ended_at, Type::TIMESTAMPTZ),
                                (&from.root_run_id, Type::TEXT),
                                (&limit, Type::INT8),
                            ],
                        )
                        .await
                }
            }
            .map_err(unavailable)?;
            rows.iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect::<Result<Vec<_>, tokio_postgres::Error>>()
                .map_err(unavailable)
        };
        tokio::time::timeout(self.timeout, read)
            .await
            .unwrap_or_else(|_| {
                Err(unavailable(format!(
                    "the sweep's read of its candidates did not finish within {:?}",
                    self.timeout
                )))
            })
    }
}

/// One attempt at a sweep's batch (`Op::Sweep`), one transaction, in two
/// flights whatever its size: `BEGIN`, the batch's root Runs' rows locked
/// (each made if missing, in the roots' order), then every Run of them
/// locked, then their pauses read — `retire`'s reads ([`RootRead`]) over
/// the whole batch, in the same order, so nothing is written under a root
/// between them — and the rule of a sweep on each root's rows
/// ([`retirement`] with the cut-off); then one statement that retires
/// every root the rule retires, and `COMMIT` (one flush for the batch).
/// A failure before the commit rolls the whole batch back.
///
/// [`RootRead`]: super::read::RootRead
pub(super) async fn batch<P>(
    conn: &Conn<'_>,
    roots: &[String],
    before: SystemTime,
) -> Result<Answer<P>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    if conn.sql.layout == Layout::ByRootRun {
        // One root a batch, on its own shard (see `retire_ended_async`).
        let [root_run_id] = roots else {
            return Err(unavailable("a distributed sweep's batch holds one root Run").into());
        };
        return one_root(conn, root_run_id, Some(before)).await;
    }
    let client = conn.client;
    let lock_roots = conn.statement(Which::LockRoots).await?;
    let lock_runs = conn.statement(Which::LockRunsOf).await?;
    let read_pauses = conn.statement(Which::ReadPausesOf).await?;
    let retire = conn.statement(Which::RetireRoots).await?;
    let all: Vec<&str> = roots.iter().map(String::as_str).collect();
    let params: [Param<'_>; 1] = [&all];
    let (begun, (locked, runs, pauses)) = flight2(
        client.batch_execute(&conn.sql.begin_write),
        flight3(
            lock_roots.query(client, &params),
            lock_runs.query(client, &params),
            read_pauses.query(client, &params),
        ),
    )
    .await;
    let decided = begun.map_err(Failure::from).and_then(|()| {
        let rows = by_root(roots, locked?, runs?, pauses?)?;
        roots
            .iter()
            .zip(rows)
            .map(
                |(root_run_id, rows)| match retirement::<P>(root_run_id, rows, Some(before))? {
                    RootStep::Swept(step) => Ok(step),
                    RootStep::Named(_) => {
                        Err(unavailable("a sweep's rule answered as retire's").into())
                    }
                },
            )
            .collect::<Result<Vec<SweepStep>, Failure>>()
    });
    let steps = match decided {
        Ok(steps) => steps,
        Err(failure) => return Err(abort(client, failure).await),
    };
    let retiring: Vec<&str> = roots
        .iter()
        .zip(&steps)
        .filter(|(_, step)| matches!(step, SweepStep::Retire { .. }))
        .map(|(root_run_id, _)| root_run_id.as_str())
        .collect();
    if retiring.is_empty() {
        commit(conn, None::<std::future::Ready<_>>).await?;
    } else {
        let params: [Param<'_>; 1] = [&retiring];
        let count = commit(conn, Some(retire.execute(client, &params))).await?;
        if count != retiring.len() as u64 {
            return Err(corrupt(retiring[0], "a root Run's row changed under its lock").into());
        }
    }
    Ok(Answer::Swept(steps))
}

/// The batch's rows, each root's as `retire` reads them ([`RootRows`]), in
/// the order of `roots`: the locked root rows (`retired`, then the root
/// Run), the Runs' and the pauses' rows (each with its root Run last).
fn by_root(
    roots: &[String],
    locked: Vec<Row>,
    runs: Vec<Row>,
    pauses: Vec<Row>,
) -> Result<Vec<RootRows>, Failure> {
    let mut rows: HashMap<String, RootRows> = HashMap::with_capacity(roots.len());
    for row in locked {
        let root_run_id: String = column(&row, 1, "")?;
        let retired = column(&row, 0, &root_run_id)?;
        rows.insert(
            root_run_id,
            RootRows {
                retired,
                runs: Vec::new(),
                pauses: Vec::new(),
            },
        );
    }
    for (found, at, pause) in runs
        .into_iter()
        .map(|row| (row, 7, false))
        .chain(pauses.into_iter().map(|row| (row, 9, true)))
    {
        let root_run_id: String = column(&found, at, "")?;
        let Some(root) = rows.get_mut(&root_run_id) else {
            return Err(corrupt(&root_run_id, "a row of a root Run the batch did not lock").into());
        };
        if pause {
            root.pauses.push(found);
        } else {
            root.runs.push(found);
        }
    }
    roots
        .iter()
        .map(|root_run_id| {
            rows.remove(root_run_id)
                .ok_or_else(|| corrupt(root_run_id, "the root Run's row was not returned").into())
        })
        .collect()
}

/// One root Run's retirement, one transaction in two flights: `BEGIN`
/// and the root's reads under its locks ([`RootRead`]), then (if the rule
/// retires it) its removal and `COMMIT`. By name ([`retire_step`]) without
/// `before`; with it, a sweep's rule ([`sweep_step`]) on that root alone,
/// as a sweep runs on tables distributed by root Run (one shard per
/// transaction).
///
/// [`retire_step`]: crate::durable::retire_step
/// [`sweep_step`]: crate::durable::sweep_step
pub(super) async fn one_root<P>(
    conn: &Conn<'_>,
    root_run_id: &str,
    before: Option<SystemTime>,
) -> Result<Answer<P>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let client: &Client = conn.client;
    let read = RootRead::prepare(conn).await?;
    let (begun, rows) = flight2(
        client.batch_execute(&conn.sql.begin_write),
        read.read(client, root_run_id),
    )
    .await;
    let decided = begun
        .map_err(Failure::from)
        .and(rows)
        .and_then(|rows| retirement::<P>(root_run_id, rows, before));
    let step = match decided {
        Ok(step) => step,
        Err(failure) => return Err(abort(client, failure).await),
    };
    if step.removes() {
        let retire = match conn.statement(Which::RetireRoot).await {
            Ok(retire) => retire,
            Err(failure) => return Err(abort(client, failure).await),
        };
        let params: [Param<'_>; 1] = [&root_run_id];
        if commit(conn, Some(retire.execute(client, &params))).await? != 1 {
            return Err(corrupt(root_run_id, "the root Run's row changed under its lock").into());
        }
    } else {
        commit(conn, None::<std::future::Ready<_>>).await?;
    }
    Ok(step.answer())
}
