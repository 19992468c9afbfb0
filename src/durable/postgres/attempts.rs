//! Running an operation on a pooled connection: its tries, its timeout,
//! and how each failure is answered.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio_postgres::error::SqlState;

use crate::durable::contract::LogError;

use super::PostgresLog;
use super::assumed::Assumed;
use super::connect::in_runtime;
use super::failure::{Failure, unavailable};
use super::group::{Group, Grouped};
use super::lease::Lease;
use super::op::{Answer, Op};
use super::sql::Conn;
use super::transaction::transaction;

/// How many times one operation runs its transaction when the server
/// answers a serialization failure (SQLSTATE 40001), a deadlock (40P01),
/// or the connection is lost before the commit was sent.
pub(super) const ATTEMPTS: u32 = 8;

/// The operations: each one transaction on a connection of the pool.
impl<P> PostgresLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    /// Runs `op` as one transaction, again after a serialization failure,
    /// a deadlock or a connection lost before the commit; all of it within
    /// the log's timeout.
    pub(super) async fn execute(&self, op: Op<'_, P>) -> Result<Answer<P>, LogError> {
        in_runtime()?;
        let deadline = Instant::now() + self.timeout;
        let mut assume = true;
        // Held until the operation is done, if it took one.
        let mut _slot = None;
        if let Some(group) = &self.group {
            match self.grouped(group, &op, deadline).await {
                Grouped::Answered(answer) => return answer,
                Grouped::Alone(slot) => _slot = slot,
                Grouped::Transaction => assume = false,
            }
        }
        let mut held: Option<Lease> = None;
        let mut tried = 0;
        let answer = tokio::time::timeout_at(deadline, async {
            self.settling.done().await;
            self.attempts(&mut held, &mut tried, &op, assume).await
        })
        .await;
        let answer = answer.unwrap_or_else(|_| {
            store_event!(
                warn,
                op = op.name(),
                root_run_id = op.run().0,
                run_id = op.run().1,
                timeout_ms = self.timeout.as_millis() as u64,
                sent = held.is_some(),
                "timed out"
            );
            let Some(lease) = held.take() else {
                // Between tries, each ended without a commit sent: a
                // server error rolled it back, or it was lost before.
                return Err(unavailable(if tried == 0 {
                    format!(
                        "the operation did not start within {:?} (no connection); nothing was sent",
                        self.timeout
                    )
                } else {
                    format!(
                        "the operation did not finish within {:?}: {tried} tries, each ended \
                         before its commit; nothing was committed",
                        self.timeout
                    )
                }));
            };
            // Timed out mid-way: the connection may be inside a
            // transaction, a statement in flight. Settled (cancelled,
            // rolled back) before the log's next operation runs.
            lease.time_out();
            Err(LogError::OutcomeUnknown(
                format!(
                    "the operation did not finish within {:?}; its outcome is unknown",
                    self.timeout
                )
                .into(),
            ))
        });
        match op {
            Op::Facts { .. } => answer.map_err(LogError::of_a_read),
            Op::Claim { .. }
            | Op::Append { .. }
            | Op::Finish { .. }
            | Op::Retire { .. }
            | Op::Sweep { .. } => answer,
        }
    }

    /// `op` in the log's group commit, if it has a write on the facts it
    /// usually finds ([`Assumed`]); else to run alone, with no slot.
    async fn grouped(&self, group: &Arc<Group>, op: &Op<'_, P>, deadline: Instant) -> Grouped<P> {
        let timeline = self.sql.timeline.load(Ordering::Relaxed);
        let Some(assumed) = Assumed::of(op, self.sql.layout, timeline) else {
            return Grouped::Alone(None);
        };
        // As alone: after every settling (the time up: answered alone).
        if tokio::time::timeout_at(deadline, self.settling.done())
            .await
            .is_err()
        {
            return Grouped::Alone(None);
        }
        group.run(assumed, deadline).await
    }

    /// The tries of `op`, counted in `tried` as each gets its connection;
    /// with `assume`, each first tries its write on the facts it usually
    /// finds (see [`transaction`]).
    pub(super) async fn attempts(
        &self,
        held: &mut Option<Lease>,
        tried: &mut u32,
        op: &Op<'_, P>,
        assume: bool,
    ) -> Result<Answer<P>, LogError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= ATTEMPTS;
            let object = self.pool.get().await.map_err(|error| {
                store_event!(warn, error = %error, "no connection");
                unavailable(error)
            })?;
            *tried = attempt;
            let lease = held.insert(Lease::new(object, &self.settling, self.timeout));
            let outcome = match Conn::leased(lease, &self.sql, self.prepared) {
                // Boxed: the transaction's future is large (its flights of
                // statements), and the caller's stack need not hold it.
                Some(conn) => Box::pin(transaction(&conn, op, assume)).await,
                None => Err(Failure::Raced), // not reached: the lease was just made
            };
            let Some(lease) = held.take() else {
                return Err(unavailable("the operation's connection went missing"));
            };
            let why = match outcome {
                Ok(answer) => {
                    lease.release();
                    return Ok(answer);
                }
                Err(Failure::Answer(error)) => {
                    lease.release();
                    return Err(error);
                }
                Err(Failure::Unknown(error)) => {
                    lease.discard();
                    store_event!(
                        warn,
                        op = op.name(),
                        root_run_id = op.run().0,
                        run_id = op.run().1,
                        error = %error,
                        "outcome unknown"
                    );
                    return Err(LogError::OutcomeUnknown(Box::new(error)));
                }
                Err(Failure::Server { error, retry }) => {
                    lease.release();
                    if !retry || last {
                        return Err(unavailable(error));
                    }
                    if error.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED) {
                        "deadlock"
                    } else {
                        "serialization failure"
                    }
                }
                Err(Failure::Raced) => {
                    lease.release();
                    if last {
                        return Err(unavailable("a Run's first claims kept racing"));
                    }
                    "first claims raced"
                }
                Err(Failure::Lost(error)) => {
                    lease.discard();
                    if last {
                        return Err(unavailable(error));
                    }
                    "connection lost before the commit"
                }
            };
            store_event!(
                debug,
                op = op.name(),
                root_run_id = op.run().0,
                run_id = op.run().1,
                attempt,
                why,
                "retry"
            );
            let _ = why;
            // A little more each time: contention clears, a server restarts.
            tokio::time::sleep(Duration::from_millis(u64::from(attempt) * 5)).await;
        }
    }
}
