//! Sending a batch: its one transaction, and what each of its operations
//! is answered.

use tokio::time::Instant;

use crate::durable::postgres::assumed::Write;
use crate::durable::postgres::failure::{Failure, unavailable};
use crate::durable::postgres::flight::{Request, flight_all};
use crate::durable::postgres::lease::Lease;
use crate::durable::postgres::sql::Conn;

use super::{Group, Reply, Waiting};

impl Group {
    /// Sends `batch` and answers each of its operations.
    pub(super) async fn send(&self, batch: Vec<Waiting>) {
        let deadline = batch.iter().map(|waiting| waiting.deadline).min();
        let deadline = deadline.unwrap_or_else(Instant::now);
        let writes: Vec<&Write> = batch.iter().map(|waiting| &waiting.write).collect();
        let mut held: Option<Lease> = None;
        let sent = tokio::time::timeout_at(deadline, async {
            let object = self.pool.get().await.map_err(|error| {
                store_event!(warn, error = %error, "no connection for a group commit");
                Failure::Answer(unavailable(error))
            })?;
            let lease = held.insert(Lease::new(object, &self.settling, self.timeout));
            match Conn::leased(lease, &self.sql, self.prepared) {
                Some(conn) => Box::pin(transaction(&conn, &writes)).await,
                None => Err(Failure::Raced), // not reached: the lease was just made
            }
        })
        .await;
        let replies: Vec<Reply> = match sent {
            Ok(Ok(written)) => {
                if let Some(lease) = held.take() {
                    lease.release();
                }
                written.into_iter().map(Reply::Committed).collect()
            }
            Ok(Err(failure)) => {
                let (reply, clean) = match failure {
                    Failure::Unknown(error) => {
                        store_event!(warn, error = %error, "group commit: outcome unknown");
                        let why = format!("the group commit's outcome is unknown: {error}");
                        (Reply::Unknown(why), false)
                    }
                    Failure::Lost(_) => (Reply::RolledBack, false),
                    Failure::Server { .. } | Failure::Raced | Failure::Answer(_) => {
                        (Reply::RolledBack, true)
                    }
                };
                match held.take() {
                    Some(lease) if clean => lease.release(),
                    Some(lease) => lease.discard(),
                    None => {}
                }
                batch.iter().map(|_| reply.again()).collect()
            }
            Err(_) => {
                let reply = match held.take() {
                    Some(lease) => {
                        // Settled (cancelled, rolled back) before the
                        // log's next operation runs.
                        lease.time_out();
                        Reply::Unknown(format!(
                            "the operation did not finish within {:?} (in a group commit); \
                             its outcome is unknown",
                            self.timeout
                        ))
                    }
                    None => Reply::NotSent,
                };
                batch.iter().map(|_| reply.again()).collect()
            }
        };
        {
            let mut counts = self
                .counts
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            counts.batches += 1;
            counts.writes += batch.len() as u64;
            match replies.first() {
                Some(Reply::RolledBack) => counts.rolled_back += 1,
                Some(Reply::Unknown(_)) => counts.unknown += 1,
                _ => {}
            }
        }
        let tickets: Vec<u64> = batch.iter().map(|waiting| waiting.ticket).collect();
        for (waiting, reply) in batch.into_iter().zip(replies) {
            let _ = waiting.reply.send(reply);
        }
        let mut state = self.state();
        for ticket in tickets {
            state.sent.remove(&ticket);
        }
    }
}

impl Reply {
    fn again(&self) -> Self {
        match self {
            Reply::Committed(count) => Reply::Committed(*count),
            Reply::RolledBack => Reply::RolledBack,
            Reply::Unknown(why) => Reply::Unknown(why.clone()),
            Reply::NotSent => Reply::NotSent,
        }
    }
}

/// One batch's transaction, in one flight: `BEGIN` (with its `SET LOCAL`
/// timeouts, a lock waited for at most [`BATCH_LOCK_WAIT`](crate::durable::postgres::sql::BATCH_LOCK_WAIT)), each write's
/// statements, `COMMIT`. The count of rows each
/// write's deciding statement affected, if it committed.
async fn transaction(conn: &Conn<'_>, writes: &[&Write]) -> Result<Vec<u64>, Failure> {
    let client = conn.client;
    let mut statements = Vec::with_capacity(writes.len());
    for write in writes {
        let (lock, decides) = write.statements();
        let lock = match lock {
            Some(lock) => Some(conn.statement(lock).await?),
            None => None,
        };
        statements.push((lock, conn.statement(decides).await?));
    }
    let params: Vec<_> = writes.iter().map(|write| write.params()).collect();
    let mut requests: Vec<Request<'_, Result<Option<u64>, tokio_postgres::Error>>> =
        Vec::with_capacity(writes.len() * 2 + 2);
    requests.push(Box::pin(async {
        client
            .batch_execute(&conn.sql.begin_batch)
            .await
            .map(|()| None)
    }));
    for ((lock, decides), params) in statements.iter().zip(&params) {
        if let Some(lock) = lock {
            requests.push(Box::pin(async move {
                lock.query_opt(client, &params[..2]).await.map(|_| None)
            }));
        }
        requests.push(Box::pin(async move {
            decides.execute(client, params).await.map(Some)
        }));
    }
    requests.push(Box::pin(async {
        client.batch_execute("COMMIT").await.map(|()| None)
    }));
    let mut answers = flight_all(requests).await;
    let committed = answers.pop().unwrap_or(Ok(None));
    let mut counts = Vec::with_capacity(writes.len());
    let mut failed = None;
    for answer in answers {
        match answer {
            Ok(Some(count)) => counts.push(count),
            Ok(None) => {}
            Err(error) => {
                failed.get_or_insert(error);
            }
        }
    }
    match (failed, committed) {
        (None, Ok(_)) => Ok(counts),
        // A statement failed on the server: the transaction was aborted,
        // and the COMMIT sent after it rolled back.
        (Some(error), Ok(_)) if error.code().is_some() => Err(error.into()),
        (Some(error), Ok(_)) | (_, Err(error)) => Err(match Failure::from(error) {
            // A serialization failure or a deadlock at the commit: nothing
            // committed.
            retry @ Failure::Server { retry: true, .. } => retry,
            // Anything else once the commit was sent: it may have
            // committed.
            Failure::Server { error, .. } | Failure::Lost(error) | Failure::Unknown(error) => {
                Failure::Unknown(error)
            }
            other @ (Failure::Answer(_) | Failure::Raced) => other,
        }),
    }
}
