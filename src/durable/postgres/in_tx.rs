//! The log's writes inside a transaction the caller owns: a Run's claim,
//! its pause or its finish committed (or rolled back) together with the
//! runtime's own rows.

use std::sync::atomic::Ordering;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::{Client, Transaction};

use super::PostgresLog;
use super::attempts::ATTEMPTS;
use super::decide::{decide, retirement};
use super::failure::{Failure, unavailable};
use super::op::{Answer, Op, unexpected};
use super::read::{Reading, RootRead, RunRead};
use super::replication::{NoSynchronousStandby, PostgresReplication};
use super::sql::{Conn, Which};
use crate::durable::contract::{
    Claim, Epoch, LogError, Receipt, Retirement, check_append, check_finish, check_root, check_run,
    encode_checked,
};
use crate::facts::{HandoffPause, Invocation};

/// The isolation level the caller's transaction must have.
const READ_COMMITTED: &str = "read committed";

/// # Inside the caller's transaction
///
/// `claim_in`, `append_in`, `finish_in` and `retire_in` apply the very rule
/// of [`claim_async`](crate::durable::AsyncHandoffLog::claim_async) and its
/// siblings to the log's tables, with the statements of those, but on the
/// caller's [`Transaction`] (tokio-postgres's, on a connection of the
/// caller's, which must reach the log's database and see its schema):
/// they send no `BEGIN`, `COMMIT` or `ROLLBACK`, set nothing (no `SET
/// LOCAL`: the caller's timeouts apply, not the log's, and the log's
/// [`timeout`](PostgresLog::timeout) does not bound them), prepare
/// nothing (every statement is sent by its text: they run behind PgBouncer
/// in transaction pooling mode), and run nothing again. So a Run's claim,
/// its pause or its finish becomes durable exactly when, and only if, the
/// caller's own rows of the same transaction do.
///
/// **Locks, and what holds after a commit or a rollback.** Each method takes
/// the locks a write needs in the caller's transaction — the Run's row
/// `FOR UPDATE`; a new Run's root Run row `FOR SHARE`; a retirement's root
/// Run row and every Run of it, exclusively — and reads the facts after
/// them, so what the rule decided stays true until the transaction ends,
/// whoever else claims, appends, finishes or retires meanwhile (they wait
/// for the caller's commit or rollback). What the method answered holds
/// **if the caller commits**: the write (the epoch issued, the pause, the
/// finish, the retirement) is durable with the caller's rows; a commit
/// that fails, or whose reply is lost, leaves both unknown together, as
/// [`LogError::OutcomeUnknown`] does. **If the caller rolls back** (or its
/// transaction fails), nothing was written, as if the method had never
/// run: an epoch it answered was never issued, and **the next claim
/// answers the same epoch number again** — so a claim's epoch is the
/// Run's only once the caller's commit succeeded, and is handed to a
/// worker only then (SPEC G4 holds for committed claims only; §6.1 says
/// why no rollback-proof number is kept). Hold the transaction briefly:
/// every other operation on the Run (and, for a new Run or a retirement,
/// on its root Run) waits for it.
///
/// **Isolation.** The caller's transaction must be `READ COMMITTED`
/// (PostgreSQL's default): the rule reads the facts after taking the
/// locks, in statements of their own, which only see what committed
/// before them at that level; at `REPEATABLE READ` or `SERIALIZABLE` a
/// read would see the transaction's older snapshot, and a claim could
/// resume a Run handed off meanwhile. Each method checks the level, in
/// the same round trip as its first reads, and answers
/// [`LogError::WrongTransaction`] (naming the level, nothing written; a
/// permanent error: running it again at that level never helps) at any
/// other.
///
/// **Errors.** A refusal ([`LogError::Fenced`], [`LogError::Retired`], …)
/// and a bad input write nothing and leave the caller's transaction as it
/// was, usable: the caller may go on and commit its own rows, or roll
/// back. [`LogError::Unavailable`] carries the server's error as its
/// source when the server failed a statement — among them a serialization
/// failure (SQLSTATE 40001), a deadlock (40P01) or a lock or statement
/// timeout: the server has then aborted the caller's transaction, which
/// only rolls back. Those the pool's forms run again by themselves; here
/// **running again is the caller's**: roll back, and run the whole
/// transaction again (its own statements too). Nothing baton wrote in it
/// survives a rollback, so that is always safe. A lost connection is
/// [`LogError::Unavailable`] too (the caller's transaction never
/// committed). [`LogError::OutcomeUnknown`] is never answered: the commit
/// is the caller's.
impl<P> PostgresLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    /// [`claim_async`](crate::durable::AsyncHandoffLog::claim_async) inside
    /// the caller's transaction `tx` (see [above](#inside-the-callers-transaction)):
    /// the Run's row is locked (a new Run's root Run row held `FOR SHARE`)
    /// until `tx` ends. If `tx` commits, the answer holds and a new epoch
    /// is issued with the caller's rows; if it rolls back, nothing was
    /// issued: the next claim answers the same epoch number, so give the
    /// epoch to a worker only after the commit succeeded (G4).
    ///
    /// ```no_run
    /// use baton::durable::{Claim, PostgresLog, tokio_postgres};
    ///
    /// # async fn run(log: &PostgresLog<u32>, client: &mut tokio_postgres::Client)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// let tx = client.transaction().await?; // READ COMMITTED, the default
    /// let Claim::Owner(epoch) = log.claim_in(&tx, "root-run", "run").await? else {
    ///     return Ok(()); // final already: never resume it (tx rolls back on drop)
    /// };
    /// tx.execute(
    ///     "INSERT INTO my_jobs (run_id, epoch) VALUES ('run', $1)",
    ///     &[&i64::try_from(epoch.get())?],
    /// )
    /// .await?;
    /// tx.commit().await?; // the epoch and the job row, or neither
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::claim`](crate::durable::HandoffLog::claim), and
    /// [`LogError::Unavailable`] and [`LogError::WrongTransaction`] as the
    /// [section above](#inside-the-callers-transaction)
    /// says; never [`LogError::OutcomeUnknown`].
    pub async fn claim_in(
        &self,
        tx: &Transaction<'_>,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<Claim<P>, LogError> {
        check_run(root_run_id, run_id)?;
        match self
            .in_transaction(
                tx,
                Op::Claim {
                    root_run_id,
                    run_id,
                },
            )
            .await?
        {
            Answer::Claim(claim) => Ok(claim),
            _ => unexpected(),
        }
    }

    /// [`append_async`](crate::durable::AsyncHandoffLog::append_async)
    /// inside the caller's transaction `tx` (see
    /// [above](#inside-the-callers-transaction)): under the Run's row lock,
    /// held until `tx` ends. The pause is durable once `tx` commits, and
    /// only then; a rollback leaves the Run open, at the same epoch.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::append`](crate::durable::HandoffLog::append), and
    /// [`LogError::Unavailable`] and [`LogError::WrongTransaction`] as the
    /// [section above](#inside-the-callers-transaction)
    /// says; never [`LogError::OutcomeUnknown`].
    pub async fn append_in(
        &self,
        tx: &Transaction<'_>,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        check_append(root_run_id, source, pause)?;
        let json = encode_checked(pause)?;
        let op = Op::Append {
            root_run_id,
            source,
            epoch,
            pause,
            json,
        };
        match self.in_transaction(tx, op).await? {
            Answer::Receipt(receipt) => Ok(receipt),
            _ => unexpected(),
        }
    }

    /// [`finish_async`](crate::durable::AsyncHandoffLog::finish_async)
    /// inside the caller's transaction `tx` (see
    /// [above](#inside-the-callers-transaction)): under the Run's row lock,
    /// held until `tx` ends. The finish is durable once `tx` commits, and
    /// only then; a rollback leaves the Run open, at the same epoch.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::finish`](crate::durable::HandoffLog::finish), and
    /// [`LogError::Unavailable`] and [`LogError::WrongTransaction`] as the
    /// [section above](#inside-the-callers-transaction)
    /// says; never [`LogError::OutcomeUnknown`].
    pub async fn finish_in(
        &self,
        tx: &Transaction<'_>,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        check_finish(root_run_id, source)?;
        let json = encode_checked(outcome)?;
        let op = Op::Finish {
            root_run_id,
            source,
            epoch,
            outcome,
            json,
        };
        match self.in_transaction(tx, op).await? {
            Answer::Receipt(receipt) => Ok(receipt),
            _ => unexpected(),
        }
    }

    /// [`retire_async`](crate::durable::AsyncHandoffLog::retire_async)
    /// inside the caller's transaction `tx` (see
    /// [above](#inside-the-callers-transaction)): the root Run's row and
    /// every Run of it stay locked until `tx` ends, so no Run of it is
    /// claimed, handed off or finished meanwhile. The Runs' rows are gone
    /// and the tombstone written once `tx` commits, and only then.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::retire`](crate::durable::HandoffLog::retire), and
    /// [`LogError::Unavailable`] and [`LogError::WrongTransaction`] as the
    /// [section above](#inside-the-callers-transaction)
    /// says; never [`LogError::OutcomeUnknown`].
    pub async fn retire_in(
        &self,
        tx: &Transaction<'_>,
        root_run_id: &str,
    ) -> Result<Retirement, LogError> {
        check_root(root_run_id)?;
        let retire = Op::Retire { root_run_id };
        match self.in_transaction(tx, retire).await? {
            Answer::Retire(retirement) => Ok(retirement),
            _ => unexpected(),
        }
    }

    /// Runs `op`'s reads, rule and write on the caller's transaction. A
    /// Run's first claim that inserted nothing (another first claim's row
    /// committed while it waited, or a retirement) reads again: at `READ
    /// COMMITTED` each statement sees what committed before it.
    async fn in_transaction(
        &self,
        tx: &Transaction<'_>,
        op: Op<'_, P>,
    ) -> Result<Answer<P>, LogError> {
        let client: &Client = tx.client();
        let conn = Conn {
            client,
            cache: None,
            sql: &self.sql,
        };
        let mut checked = false;
        for _ in 0..ATTEMPTS {
            match Box::pin(attempt(&conn, &op, &mut checked)).await {
                Ok(answer) => return Ok(answer),
                Err(Failure::Answer(error)) => return Err(error),
                Err(Failure::Raced) => continue,
                Err(
                    Failure::Server { error, .. } | Failure::Lost(error) | Failure::Unknown(error),
                ) => return Err(unavailable(error)),
            }
        }
        Err(unavailable("a Run's first claims kept racing"))
    }
}

/// One try of `op` on the caller's transaction: its reads (with, the first
/// time, the check of the isolation level and, if the log requires a
/// synchronous standby, of the server's replication, in the same flight),
/// the rule, its write.
async fn attempt<P>(
    conn: &Conn<'_>,
    op: &Op<'_, P>,
    checked: &mut bool,
) -> Result<Answer<P>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let client = conn.client;
    let isolation = async {
        if *checked {
            return Ok(None);
        }
        // With the requirement of a synchronous standby, the server's
        // replication as the caller's session sees it, in the same read.
        let text = match conn.sql.guard {
            None => "SELECT current_setting('transaction_isolation')",
            Some(_) => {
                "SELECT current_setting('transaction_isolation'), \
                        current_setting('synchronous_commit'), \
                        current_setting('synchronous_standby_names')"
            }
        };
        client.query_typed_one(text, &[]).await.map(|row| {
            let replication = match (row.try_get(1), row.try_get(2)) {
                (Ok(synchronous_commit), Ok(synchronous_standby_names)) => {
                    Some(PostgresReplication {
                        synchronous_commit,
                        synchronous_standby_names,
                    })
                }
                _ => None,
            };
            Some((row.try_get::<_, String>(0).ok(), replication))
        })
    };
    type Found = Option<(Option<String>, Option<PostgresReplication>)>;
    let level = |found: Result<Found, tokio_postgres::Error>| -> Result<(), Failure> {
        let (level, replication) = found?.unwrap_or((None, None));
        if let Some(level) = level.filter(|level| level != READ_COMMITTED) {
            return Err(Failure::Answer(LogError::WrongTransaction {
                reason: format!(
                    "it is {level}, and PostgresLog's writes inside it need READ COMMITTED"
                ),
            }));
        }
        match replication {
            Some(found) if !found.waits_for_a_standby() => Err(Failure::Answer(
                LogError::Unavailable(Box::new(NoSynchronousStandby { found })),
            )),
            _ => Ok(()),
        }
    };
    if let Op::Retire { root_run_id, .. } = *op {
        let read = RootRead::prepare(conn).await?;
        let (found, rows) = super::flight2(isolation, read.read(client, root_run_id)).await;
        level(found)?;
        *checked = true;
        let step = retirement::<P>(root_run_id, rows?, None)?;
        if step.removes() {
            let retire = conn.statement(Which::RetireRoot).await?;
            let params: [super::Param<'_>; 1] = [&root_run_id];
            if retire.execute(client, &params).await? != 1 {
                return Err(super::corrupt(
                    root_run_id,
                    "the root Run's row changed under its lock",
                )
                .into());
            }
        }
        return Ok(step.answer());
    }
    let (root_run_id, run_id) = op.run();
    let read = RunRead::prepare(conn, Reading::of(op)).await?;
    let (found, facts) =
        super::flight2(isolation, read.read::<P>(client, root_run_id, run_id)).await;
    level(found)?;
    *checked = true;
    let (locked, facts, timeline) = facts?;
    if let Some(timeline) = timeline {
        conn.sql.timeline.store(timeline, Ordering::Relaxed);
    }
    let (answer, write) = decide(op, facts, locked, timeline)?;
    if let Some(write) = write {
        let statement = conn.statement(write.which()).await?;
        let params = write.params(op, conn.sql.layout);
        let count = statement.execute(client, &params).await?;
        write.check(count, run_id)?;
    }
    Ok(answer)
}
