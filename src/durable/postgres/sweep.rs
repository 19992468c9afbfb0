//! `PostgresLog`'s retention by age (SPEC §6.1, G5): the candidates a
//! batch looks at, read through the finish-time index, and the batch's
//! retirements in one transaction, each root under the same locks as
//! `retire`.

use std::time::SystemTime;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::types::Type;

use super::{
    Answer, Conn, Failure, Op, Param, PostgresLog, RootRead, RootStep, Which, abort, commit,
    corrupt, in_runtime, retirement, unavailable, unexpected,
};
use crate::durable::log::LogError;
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
    /// # Cancel safety
    ///
    /// Dropping the future ends the batch: its transaction commits whole
    /// (if its commit was sent) or not at all, as a dropped
    /// `retire_async`'s, and the log's next operation waits until that is
    /// settled; the same batch may be sent again.
    ///
    /// # Errors
    ///
    /// [`LogError::Unavailable`] if the candidates could not be read, or
    /// the batch's transaction failed before its commit (nothing retired:
    /// send it again); [`LogError::Corrupt`] naming a root's Run that does
    /// not decode (nothing retired); [`LogError::OutcomeUnknown`] if the
    /// commit was sent and its reply lost (the batch retired every root it
    /// would have, or none: send it again, it finds only what is left).
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
        let Answer::Swept(steps) = self
            .execute(Op::Sweep {
                roots: &roots,
                before,
            })
            .await?
        else {
            return unexpected();
        };
        if steps.len() != roots.len() {
            return unexpected();
        }
        for (root_run_id, step) in roots.iter().zip(steps) {
            sweep.count(root_run_id, step);
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

/// One attempt at a sweep's batch (`Op::Sweep`), one transaction: for
/// each root in turn, the reads of `retire` (the root Run's row locked,
/// then every Run of it, then their pauses: [`RootRead`]) and the rule of
/// a sweep on them ([`retirement`] with the cut-off); for a root it
/// retires, the statement that retires it; then `COMMIT` (one flush for
/// the batch). A failure before the commit rolls the whole batch back.
pub(super) async fn batch<P>(
    conn: &Conn<'_>,
    roots: &[String],
    before: SystemTime,
) -> Result<Answer<P>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let client = conn.client;
    let read = RootRead::prepare(conn).await?;
    let retire = conn.statement(Which::RetireRoot).await?;
    if let Err(error) = client.batch_execute(&conn.sql.begin_write).await {
        return Err(abort(client, error.into()).await);
    }
    let mut steps = Vec::with_capacity(roots.len());
    for root_run_id in roots {
        let root_run_id = root_run_id.as_str();
        let step = match read
            .read(client, root_run_id)
            .await
            .and_then(|rows| retirement::<P>(root_run_id, rows, Some(before)))
        {
            Ok(RootStep::Swept(step)) => step,
            Ok(RootStep::Named(_)) => {
                let failure = unavailable("a sweep's rule answered as retire's").into();
                return Err(abort(client, failure).await);
            }
            Err(failure) => return Err(abort(client, failure).await),
        };
        if let SweepStep::Retire { .. } = step {
            let params: [Param<'_>; 1] = [&root_run_id];
            match retire.execute(client, &params).await {
                Ok(1) => {}
                Ok(_) => {
                    let failure =
                        corrupt(root_run_id, "the root Run's row changed under its lock").into();
                    return Err(abort(client, failure).await);
                }
                Err(error) => return Err(abort(client, error.into()).await),
            }
        }
        steps.push(step);
    }
    commit(client, None::<std::future::Ready<_>>).await?;
    Ok(Answer::Swept(steps))
}
