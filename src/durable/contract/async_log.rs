//! The canonical log's async trait, [`AsyncHandoffLog`].

use std::future::Future;

use crate::facts::{HandoffPause, Invocation};

use super::answer::{Claim, Receipt, Retirement};
use super::epoch::Epoch;
use super::error::LogError;
use super::facts::RunFacts;

/// The async form of [`HandoffLog`](crate::durable::HandoffLog): the same five operations, the same
/// rule and the same errors (see each method's blocking twin), awaited
/// instead of waited for. A store whose operations block (`SqliteLog`: a
/// transaction and an fsync) runs that work off the executor, so the other
/// tasks of a runtime — even a `current_thread` one — go on meanwhile.
///
/// The methods are named `*_async` so that a type implementing both traits
/// (`MemoryLog` and `SqliteLog` do; `PostgresLog` implements only this
/// one) can have both in scope without ambiguity.
///
/// The futures are `Send`; they borrow their arguments (and the log), so
/// they are not `'static`: to spawn one, move owned arguments and a shared
/// log (`Arc`) into an `async move` block that awaits it. `MemoryLog`'s and
/// `SqliteLog`'s are runtime-agnostic: they need no tokio runtime (nor any
/// other), and `SqliteLog`'s are woken from its own thread. `PostgresLog`'s
/// need a tokio runtime (see its docs).
///
/// ```
/// use baton::durable::{AsyncHandoffLog, Claim, Epoch, MemoryLog};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), baton::durable::LogError> {
/// let log = MemoryLog::<u32>::new();
/// assert_eq!(log.claim_async("root", "run").await?, Claim::Owner(Epoch::new(1)));
/// // A takeover: epoch 2 fences epoch 1.
/// assert_eq!(log.claim_async("root", "run").await?, Claim::Owner(Epoch::new(2)));
/// assert_eq!(log.facts_async("root", "run").await?.epoch, Epoch::new(2));
/// # Ok(())
/// # }
/// ```
///
/// # Cancel safety
///
/// Dropping one of these futures never leaves the log half-written: each
/// operation is one transaction, which commits whole or not at all. But a
/// dropped operation is not undone either: once the future has been polled
/// it may have been handed to the store, and it may still commit after the
/// drop. For an append that is the case of a lost reply (SPEC §6): the
/// pause may be durable although nobody was told. Resolve it as one:
/// append the identical row again under the same epoch (idempotent:
/// [`Receipt::AlreadyDurable`] if it had committed), or read
/// [`facts_async`](Self::facts_async), or let the owner's claim decide
/// ([`Claim::HandedOff`] if it had committed). A dropped claim may likewise
/// have issued an epoch, fencing older ones: claim again. A future dropped
/// before its first poll does nothing.
pub trait AsyncHandoffLog<P> {
    /// [`HandoffLog::claim`](crate::durable::HandoffLog::claim), awaited: starts or takes over the Run, in one
    /// transaction.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a dropped claim may still issue a new epoch (see
    /// the trait's docs). Claiming again is always safe.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::claim`](crate::durable::HandoffLog::claim).
    fn claim_async(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> impl Future<Output = Result<Claim<P>, LogError>> + Send;

    /// [`HandoffLog::append`](crate::durable::HandoffLog::append), awaited: resolves once `pause` is durable
    /// under `epoch`, or refused.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a dropped append may still commit, the outcome of a
    /// lost reply (see the trait's docs); the identical append again is
    /// idempotent.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::append`](crate::durable::HandoffLog::append).
    fn append_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> impl Future<Output = Result<Receipt, LogError>> + Send;

    /// [`HandoffLog::finish`](crate::durable::HandoffLog::finish), awaited: resolves once the Run's finish is
    /// durable under `epoch`, or refused.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe, as [`append_async`](Self::append_async): a dropped
    /// finish may still commit; the identical finish again is idempotent.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::finish`](crate::durable::HandoffLog::finish).
    fn finish_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> impl Future<Output = Result<Receipt, LogError>> + Send;

    /// [`HandoffLog::retire`](crate::durable::HandoffLog::retire), awaited: retires the root Run once every Run
    /// of it is final.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a dropped retirement may still commit; retiring
    /// again is idempotent ([`Retirement::AlreadyRetired`]).
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::retire`](crate::durable::HandoffLog::retire).
    fn retire_async(
        &self,
        root_run_id: &str,
    ) -> impl Future<Output = Result<Retirement, LogError>> + Send;

    /// [`HandoffLog::facts`](crate::durable::HandoffLog::facts), awaited: what the log holds about the Run.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    ///
    /// # Errors
    ///
    /// As [`HandoffLog::facts`](crate::durable::HandoffLog::facts).
    fn facts_async(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> impl Future<Output = Result<RunFacts<P>, LogError>> + Send;
}
