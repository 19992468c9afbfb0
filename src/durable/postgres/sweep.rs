//! `PostgresLog`'s retention by age (SPEC §6.1, G5): the candidates a
//! batch looks at, read through the finish-time index, and each root's
//! retirement in a transaction of its own, under the same locks as
//! `retire`.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;
use std::time::SystemTime;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::types::Type;

use super::{Answer, Op, PostgresLog, in_runtime, unavailable, unexpected};
use crate::durable::log::LogError;
use crate::durable::sweep::{Sweep, SweepCursor, candidates};

impl<P> PostgresLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    /// One batch of retention by age (SPEC §6.1, G5): looks at up to
    /// `limit` root Runs that have a Run finished before `before`, oldest
    /// end first, after `from` (the previous batch's
    /// [`next`](Sweep::next); `None` to start), and retires each whose
    /// work ended before `before` ([`sweep_step`](crate::durable::sweep_step)),
    /// each in a transaction of its own (up to half the pool's connections
    /// at once, so the other half stays for the live Runs) under exactly
    /// the locks of
    /// [`retire_async`](crate::durable::AsyncHandoffLog::retire_async), so
    /// a claim, an append or a finish racing it is ordered with it as with
    /// `retire`; the others are kept. Call it again with the answer's
    /// `next` until that is `None`.
    ///
    /// The candidates are read through the index on the finishes' end
    /// time, so a batch reads what it looks at, however many roots the
    /// database holds (retired or not). The end of a Run is the server's
    /// `now()` in the transaction that wrote its pause or its finish.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future ends the batch: each root whose transaction
    /// committed stays retired, a root whose retirement was in flight is
    /// retired or left whole (its transaction commits or not, as a dropped
    /// `retire_async`'s), and nothing else changed; the same batch may be
    /// sent again.
    ///
    /// # Errors
    ///
    /// [`LogError::Unavailable`] if the candidates could not be read
    /// (nothing retired), and any error of one root's retirement, which
    /// ends the batch: the roots it retired before stay retired, and the
    /// same batch may be sent again (it finds only what is left).
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
        // Up to half the pool's connections at once (the other half stays
        // for the live Runs' operations), each root its own transaction.
        let parallel = (self.pool.status().max_size / 2).max(1);
        for chunk in roots.chunks(parallel) {
            let looks = chunk.iter().map(|root_run_id| {
                self.execute(Op::Retire {
                    root_run_id,
                    before: Some(before),
                })
            });
            for (root_run_id, answer) in chunk.iter().zip(join_all(looks.collect()).await) {
                match answer? {
                    Answer::Swept(step) => sweep.count(root_run_id, step),
                    _ => return unexpected(),
                }
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

/// Runs `futures` concurrently on the calling task, and answers their
/// outputs in their order once all are ready.
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(ready) => *output = Some(ready),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
