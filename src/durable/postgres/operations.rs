//! The log's operations, as [`AsyncHandoffLog`]: each one checked, then
//! run by [`execute`](PostgresLog::execute) (`attempts.rs`).

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::PostgresLog;
use super::op::{Answer, Op, unexpected};
use crate::durable::contract::{
    AsyncHandoffLog, Claim, Epoch, LogError, Receipt, Retirement, RunFacts, check_append,
    check_finish, check_root, check_run, encode_checked,
};
use crate::facts::{HandoffPause, Invocation};

/// Each operation is one transaction on a connection of the log's pool (see
/// the type's docs), within its timeout.
impl<P> AsyncHandoffLog<P> for PostgresLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    async fn claim_async(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        check_run(root_run_id, run_id)?;
        match self
            .execute(Op::Claim {
                root_run_id,
                run_id,
            })
            .await?
        {
            Answer::Claim(claim) => Ok(claim),
            _ => unexpected(),
        }
    }

    async fn append_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        check_append(root_run_id, source, pause)?;
        let json = encode_checked(pause)?;
        match self
            .execute(Op::Append {
                root_run_id,
                source,
                epoch,
                pause,
                json,
            })
            .await?
        {
            Answer::Receipt(receipt) => Ok(receipt),
            _ => unexpected(),
        }
    }

    /// One transaction, in two flights, as a takeover's claim: the Run's
    /// row lock (its epoch and its finish), its pause and its root Run's
    /// tombstone read, then [`finish_step`](crate::durable::finish_step)'s write (the finish, on the
    /// Run's row) and `COMMIT`.
    async fn finish_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        check_finish(root_run_id, source)?;
        let json = encode_checked(outcome)?;
        match self
            .execute(Op::Finish {
                root_run_id,
                source,
                epoch,
                outcome,
                json,
            })
            .await?
        {
            Answer::Receipt(receipt) => Ok(receipt),
            _ => unexpected(),
        }
    }

    /// One transaction, in two flights: the root Run's row locked
    /// exclusively (made if missing), every Run of it locked, and their
    /// pauses read; then, if [`retire_step`](crate::durable::retire_step) retires it, one statement that
    /// deletes the Runs' rows and their pauses and marks the root's row
    /// retired (its tombstone), and `COMMIT`. Needs `DELETE` on the tables.
    async fn retire_async(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        check_root(root_run_id)?;
        match self.execute(Op::Retire { root_run_id }).await? {
            Answer::Retire(retirement) => Ok(retirement),
            _ => unexpected(),
        }
    }

    async fn facts_async(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        check_run(root_run_id, run_id)?;
        match self
            .execute(Op::Facts {
                root_run_id,
                run_id,
            })
            .await?
        {
            Answer::Facts(facts) => Ok(facts),
            _ => unexpected(),
        }
    }
}
