//! The canonical log of handoffs: the [`HandoffLog`] trait, its error, the
//! pure rule every implementation applies to an append, and [`MemoryLog`].

use std::error::Error as StdError;
use std::time::SystemTime;

use serde::Serialize;
use serde::de::DeserializeOwned;
use thiserror::Error;

use super::fence::{
    AppendStep, Claim, Epoch, Fate, Retirement, append_step, claim_step, finish_step, retire_step,
};
use super::reconcile::{Appended, Finished, ReconcileError, RunFacts, RunField};
use crate::facts::{HandoffPause, IdError, IntentError, Invocation, check_id};
use crate::sync::{Mutex, lock};

/// The canonical facts a runtime keeps about handoffs, and the only
/// authority on who may continue a Run (SPEC §6).
///
/// A **Run** here is the source Run `run_id` within the logical Run
/// `root_run_id`. Per Run the log keeps an owner [`Epoch`] (a fencing
/// token) and at most one final fate (a pause or a finish), and per
/// retired root Run a tombstone. Implementations apply the same pure rule
/// ([`claim_step`], [`append_step`], [`finish_step`], [`retire_step`])
/// inside one transaction per operation,
/// as [`claim`](Self::claim)'s and [`append`](Self::append)'s docs say;
/// [`MemoryLog`], `SqliteLog` and `PostgresLog` are checked by one shared
/// contract suite (the test kit's `log_contract`, run by baton's
/// `tests/log_contract`):
///
/// - [`claim`](Self::claim) starts or takes over a Run: if a pause is
///   durable it answers [`Claim::HandedOff`], if a finish is
///   [`Claim::Finished`], under a retired root [`Claim::Retired`], and
///   changes nothing; else it
///   advances the epoch and answers [`Claim::Owner`], and every older
///   epoch is fenced from then on;
/// - [`append`](Self::append) writes only under the Run's current epoch,
///   while no pause is durable; it returns `Ok` only once the pause is
///   durable, and every `Err` except [`LogError::OutcomeUnknown`] means
///   nothing was written;
/// - appending the identical row again under the same epoch is an
///   idempotent `Ok(`[`Receipt::AlreadyDurable`]`)`, so a worker may retry
///   an append whose reply it did not get;
/// - [`finish`](Self::finish) is fenced exactly as an append, and
///   [`retire`](Self::retire) removes a root Run whose work has ended
///   (every Run of it final, and every successor its pauses name too);
/// - [`facts`](Self::facts) reads back exactly what was appended or
///   finished, whole, with the Run's epoch and whether its root is retired.
///
/// Failure model: workers may crash, or pause and go on later (zombies);
/// the owner may suspect a live worker; a reply may be lost. None of these
/// can make a Run both handed off and resumed, because the decision is the
/// log's, made in one transaction: the owner claims before anyone resumes.
///
/// # Implementing a store
///
/// A store holds, per Run, an epoch and at most one final fate (a pause or
/// a finish), and per retired root Run one tombstone; it runs each
/// operation as one transaction around the shared pure rule
/// ([`claim_step`], [`append_step`], [`finish_step`], [`retire_step`]), so
/// it decides exactly as every other store (and as the model checker
/// proved). Here a map under one lock:
///
/// ```
/// use std::collections::{HashMap, HashSet};
/// use std::sync::Mutex;
///
/// use baton::durable::{
///     AppendStep, Appended, Claim, Epoch, Fate, Finished, HandoffLog, LogError, Receipt,
///     Retirement, RunFacts, RunField, append_step, check_append, check_finish, claim_step,
///     finish_step, retire_step,
/// };
/// use baton::facts::check_id;
/// use baton::{HandoffPause, Invocation};
///
/// /// Per Run: its epoch, its pause row, its finish row.
/// #[derive(Default)]
/// struct Run {
///     epoch: Epoch,
///     pause: Option<Appended<u32>>,
///     finished: Option<Finished<u32>>,
/// }
///
/// impl Run {
///     fn fate(&self) -> Fate<'_, u32> {
///         match (&self.pause, &self.finished) {
///             (Some(pause), _) => Fate::HandedOff(pause),
///             (None, Some(finished)) => Fate::Finished(finished),
///             (None, None) => Fate::Open,
///         }
///     }
/// }
///
/// /// The Runs by (root, run), and the retired roots.
/// #[derive(Default)]
/// struct MapLog(Mutex<(HashMap<(String, String), Run>, HashSet<String>)>);
///
/// fn run_ids(root_run_id: &str, run_id: &str) -> Result<(String, String), LogError> {
///     check_id(root_run_id)
///         .map_err(|error| LogError::InvalidRun { field: RunField::RootRunId, error })?;
///     check_id(run_id).map_err(|error| LogError::InvalidRun { field: RunField::RunId, error })?;
///     Ok((root_run_id.to_owned(), run_id.to_owned()))
/// }
///
/// impl HandoffLog<u32> for MapLog {
///     fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<u32>, LogError> {
///         let key = run_ids(root_run_id, run_id)?;
///         let mut held = self.0.lock().unwrap(); // the transaction
///         let step = claim_step(&facts_of(&held, &key))?;
///         if let Some(epoch) = step.write {
///             held.0.entry(key).or_default().epoch = epoch;
///         }
///         Ok(step.answer)
///     }
///
///     fn append(
///         &self,
///         root_run_id: &str,
///         source: &Invocation,
///         epoch: Epoch,
///         pause: &HandoffPause<u32>,
///     ) -> Result<Receipt, LogError> {
///         check_append(root_run_id, source, pause)?; // every id, then the intent
///         let key = (root_run_id.to_owned(), source.run_id.clone());
///         let mut held = self.0.lock().unwrap();
///         let (current, fate) = fate_of(&held, &key);
///         let step = append_step(root_run_id, current, fate, epoch, (source, pause))?;
///         if step == AppendStep::Write {
///             let row = Appended { source: source.clone(), pause: pause.clone() };
///             held.0.entry(key).or_default().pause = Some(row);
///         }
///         Ok(step.receipt())
///     }
///
///     fn finish(
///         &self,
///         root_run_id: &str,
///         source: &Invocation,
///         epoch: Epoch,
///         outcome: &u32,
///     ) -> Result<Receipt, LogError> {
///         check_finish(root_run_id, source)?;
///         let key = (root_run_id.to_owned(), source.run_id.clone());
///         let mut held = self.0.lock().unwrap();
///         let (current, fate) = fate_of(&held, &key);
///         let step = finish_step(root_run_id, current, fate, epoch, (source, outcome))?;
///         if step == AppendStep::Write {
///             let row = Finished { source: source.clone(), outcome: *outcome };
///             held.0.entry(key).or_default().finished = Some(row);
///         }
///         Ok(step.receipt())
///     }
///
///     fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
///         check_id(root_run_id)
///             .map_err(|error| LogError::InvalidRun { field: RunField::RootRunId, error })?;
///         let mut held = self.0.lock().unwrap();
///         let (runs, retired) = &mut *held;
///         let of_root = runs.iter().filter(|((root, _), _)| root == root_run_id);
///         let step = retire_step(
///             root_run_id,
///             retired.contains(root_run_id),
///             of_root.map(|((_, run_id), run)| (run_id.as_str(), run.fate())),
///         )?;
///         if let Retirement::Retired { .. } = step {
///             runs.retain(|(root, _), _| root != root_run_id);
///             retired.insert(root_run_id.to_owned());
///         }
///         Ok(step)
///     }
///
///     fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<u32>, LogError> {
///         let key = run_ids(root_run_id, run_id)?;
///         Ok(facts_of(&self.0.lock().unwrap(), &key))
///     }
/// }
///
/// type Held = (HashMap<(String, String), Run>, HashSet<String>);
///
/// fn fate_of<'a>(held: &'a Held, key: &(String, String)) -> (Epoch, Fate<'a, u32>) {
///     if held.1.contains(&key.0) {
///         return (Epoch::NONE, Fate::Retired);
///     }
///     held.0.get(key).map_or((Epoch::NONE, Fate::Open), |run| (run.epoch, run.fate()))
/// }
///
/// fn facts_of(held: &Held, key: &(String, String)) -> RunFacts<u32> {
///     let mut facts = RunFacts::empty(&key.0, &key.1);
///     facts.retired = held.1.contains(&key.0);
///     if let Some(run) = held.0.get(key) {
///         facts.epoch = run.epoch;
///         facts.pauses.extend(run.pause.clone());
///         facts.finished.clone_from(&run.finished);
///     }
///     facts
/// }
///
/// let log = MapLog::default();
/// let Claim::Owner(first) = log.claim("root", "run")? else { unreachable!() };
/// let Claim::Owner(second) = log.claim("root", "run")? else { unreachable!() };
/// assert!(second > first, "a takeover fences the older epoch");
/// assert!(matches!(log.claim("", "run"), Err(LogError::InvalidRun { .. })));
///
/// let source = Invocation {
///     session_id: "session".into(),
///     turn_id: "turn".into(),
///     run_id: "run".into(),
///     invocation_id: "invocation".into(),
/// };
/// assert!(matches!(log.retire("root"), Err(LogError::RunOpen { .. })), "R9: open Runs stay");
/// assert!(matches!(log.finish("root", &source, first, &7), Err(LogError::Fenced { .. })));
/// assert_eq!(log.finish("root", &source, second, &7)?, Receipt::Written);
/// assert_eq!(log.claim("root", "run")?, Claim::Finished(7), "R8: never resumed");
/// assert_eq!(log.retire("root")?, Retirement::Retired { runs: 1 });
/// assert_eq!(log.claim("root", "run")?, Claim::Retired, "R9: never resumed after retention");
/// # Ok::<(), LogError>(())
/// ```
pub trait HandoffLog<P> {
    /// Starts or takes over the Run `run_id` within `root_run_id`, in one
    /// transaction: [`Claim::HandedOff`] if a pause is durable,
    /// [`Claim::Finished`] if a finish is, [`Claim::Retired`] under a
    /// retired root Run (nothing is written: a final Run is never
    /// resumed), else the Run's epoch
    /// advances and [`Claim::Owner`] carries the new one. Give it to the
    /// worker that runs the Run now; every older epoch's append is refused
    /// with [`LogError::Fenced`] from now on.
    ///
    /// # Errors
    ///
    /// Nothing is written for: [`LogError::InvalidRun`] (an invalid id),
    /// [`LogError::Contradictory`] (facts that contradict each other),
    /// [`LogError::EpochsExhausted`] (the Run's epoch is already
    /// [`Epoch::LAST`]) and [`LogError::Corrupt`] (a stored row that does
    /// not decode). [`LogError::Unavailable`]: nothing written, claim again.
    /// [`LogError::OutcomeUnknown`]: the claim's outcome is unknown; claim
    /// again, which is always safe, its new epoch fencing the one that may
    /// have been issued.
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError>;

    /// Appends `pause`, which hands off the Run executing as `source` within
    /// the logical Run `root_run_id`, under the owner `epoch` its worker
    /// holds, and returns once it is durable.
    ///
    /// # Errors
    ///
    /// Nothing is written for: [`LogError::InvalidRun`] (an invalid id of
    /// the Run or of `source`), [`LogError::InvalidPause`] (an invalid
    /// intent), [`LogError::Encode`] (the pause does not encode),
    /// [`LogError::EpochNotIssued`] (an epoch no claim of this Run issued),
    /// [`LogError::Fenced`] (a newer epoch owns the Run: the worker must
    /// stop), [`LogError::AlreadyHandedOff`] (another pause is durable) and
    /// [`LogError::Corrupt`] (a stored row that does not decode).
    /// [`LogError::Unavailable`]: nothing written, the same append may be
    /// sent again. [`LogError::OutcomeUnknown`] leaves the outcome unknown
    /// until the facts are read back, or the append is retried
    /// (idempotent).
    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError>;

    /// Records that the Run executing as `source` within `root_run_id`
    /// finished with `outcome`, under the owner `epoch` its worker holds,
    /// and returns once it is durable. Fenced exactly as
    /// [`append`](Self::append) ([`finish_step`]): from then on a claim of
    /// the Run answers [`Claim::Finished`] and issues no epoch (R8).
    ///
    /// # Errors
    ///
    /// Nothing is written for: [`LogError::InvalidRun`] (an invalid id),
    /// [`LogError::Encode`] (the outcome does not encode),
    /// [`LogError::EpochNotIssued`], [`LogError::Fenced`] (a newer epoch
    /// owns the Run: stop), [`LogError::AlreadyHandedOff`] (a pause is
    /// durable), [`LogError::AlreadyFinished`] (another outcome is),
    /// [`LogError::Retired`] (the root Run is retired) and
    /// [`LogError::Corrupt`]. [`LogError::Unavailable`] and
    /// [`LogError::OutcomeUnknown`] as for [`append`](Self::append): the
    /// identical finish may be sent again.
    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError>;

    /// Retires the root Run `root_run_id` once its work has ended
    /// ([`retire_step`]: the log holds a Run of it, every Run of it is
    /// final, and so is every successor a durable pause of it names, so no
    /// handoff is lost to retention: G1, G5): removes their rows and keeps one tombstone for
    /// the root, in one transaction. From then on a claim of any Run under
    /// it answers [`Claim::Retired`] and every write is refused with
    /// [`LogError::Retired`]: no removed Run is resumed, and no epoch is
    /// issued again under a removed Run id (R9). The log then holds the
    /// open Runs and one tombstone per retired root (R10).
    ///
    /// # Errors
    ///
    /// Nothing is written for: [`LogError::InvalidRun`] (an invalid id),
    /// [`LogError::RunOpen`] (a Run of the root, or a successor one of its
    /// pauses names, is not final yet), [`LogError::NothingToRetire`] (the
    /// log holds no Run of the root) and
    /// [`LogError::Corrupt`]. [`LogError::Unavailable`]: nothing written,
    /// retire again. [`LogError::OutcomeUnknown`]: retire again (it is
    /// idempotent: [`Retirement::AlreadyRetired`]).
    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError>;

    /// Reads what the log holds about the Run `run_id` within `root_run_id`:
    /// its epoch, pauses and finish, and whether its root Run is retired,
    /// for [`reconcile`](super::reconcile()).
    ///
    /// # Errors
    ///
    /// [`LogError::InvalidRun`] for an invalid id; [`LogError::Corrupt`]
    /// for a stored row that does not decode; [`LogError::Unavailable`] (a
    /// read writes nothing, so its failures are never
    /// [`LogError::OutcomeUnknown`]).
    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError>;
}

/// What a successful [`HandoffLog::append`] did. It may grow (a store
/// could one day say more about how the pause became durable), so a match
/// on it needs a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "an append's receipt says whether it wrote"]
#[non_exhaustive]
pub enum Receipt {
    /// The pause is now durable; this call wrote it.
    Written,
    /// The identical row was already durable; nothing was written.
    AlreadyDurable,
}

/// Why a [`HandoffLog`] refused or failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LogError {
    /// Bad input: the pause is not a valid handoff of its source within the
    /// root Run (see [`HandoffIntent::validate_for`](crate::HandoffIntent::validate_for)).
    /// Nothing was written.
    #[error("invalid pause: {0}")]
    InvalidPause(IntentError),
    /// Bad input: an id of the Run asked about (`field` is `root_run_id` or
    /// `run_id`) or of an append's source (`session_id`, `turn_id`,
    /// `invocation_id`) is invalid. Nothing was written.
    #[error("invalid {field}: {error}")]
    InvalidRun {
        /// Which id.
        field: RunField,
        /// What is wrong with it.
        error: IdError,
    },
    /// Final refusal: a different pause is already durable for this Run; it
    /// was handed off once and for all. Nothing was written.
    #[error("Run {run_id:?} of root Run {root_run_id:?} is already handed off by another pause")]
    AlreadyHandedOff {
        /// The root Run.
        root_run_id: String,
        /// The Run.
        run_id: String,
    },
    /// Final refusal: the Run finished; it takes no pause and no other
    /// outcome. Nothing was written.
    #[error("Run {run_id:?} of root Run {root_run_id:?} has already finished")]
    AlreadyFinished {
        /// The root Run.
        root_run_id: String,
        /// The Run.
        run_id: String,
    },
    /// Final refusal: the root Run was retired (every Run of it was final
    /// and its rows are gone), so nothing under it is written again.
    /// Nothing was written.
    #[error("root Run {root_run_id:?} is retired")]
    Retired {
        /// The root Run.
        root_run_id: String,
    },
    /// A retirement refused: a Run of the root Run has no final fate yet
    /// (it is neither handed off nor finished), or a durable pause of the
    /// root names a successor that is not final yet (not claimed, or still
    /// running): the root's work has not ended (G5). Nothing was written;
    /// retire again once that Run is final.
    #[error("Run {run_id:?} of root Run {root_run_id:?} is not final yet")]
    RunOpen {
        /// The root Run.
        root_run_id: String,
        /// The Run that is not final (an open Run, or a successor a
        /// durable pause names) whose id is least.
        run_id: String,
    },
    /// A retirement refused: the log holds no Run of this root Run, so its
    /// work has not ended (it may be a mistyped id, or a root whose first
    /// claim has not happened yet: retiring it would refuse that claim for
    /// good). Nothing was written.
    #[error("the log holds no Run of root Run {root_run_id:?}: nothing to retire")]
    NothingToRetire {
        /// The root Run.
        root_run_id: String,
    },
    /// Fenced: the Run's current epoch is newer than the append's, so a
    /// newer owner claimed it (the worker was taken for dead). Nothing was
    /// written; the worker must stop: its Run belongs to `current`.
    #[error("epoch {epoch} is fenced: the Run now belongs to epoch {current}")]
    Fenced {
        /// The epoch the append carried.
        epoch: Epoch,
        /// The Run's current epoch.
        current: Epoch,
    },
    /// Bad input: no claim of this Run issued `epoch` (it is
    /// [`Epoch::NONE`], or newer than the Run's current epoch). Nothing was
    /// written.
    #[error("epoch {epoch} was never issued for this Run (its current epoch is {current})")]
    EpochNotIssued {
        /// The epoch the append carried.
        epoch: Epoch,
        /// The Run's current epoch.
        current: Epoch,
    },
    /// The Run's epochs are spent: its epoch is [`Epoch::LAST`], in every
    /// store. Nothing was written.
    #[error("the Run's epochs are exhausted")]
    EpochsExhausted,
    /// The facts the log holds for the Run contradict each other: a claim
    /// refuses to decide on them. Nothing was written; an operator must look.
    #[error("the Run's facts are contradictory")]
    Contradictory(#[source] ReconcileError),
    /// The store records a schema version this version of baton does not
    /// know (a newer baton wrote it, or it is not baton's store).
    #[error("unknown schema version {found} (this baton knows version {expected})")]
    UnknownSchema {
        /// The version found.
        found: i64,
        /// The version this baton writes and reads.
        expected: i64,
    },
    /// What was opened is not a log and cannot become one: a directory, a
    /// file that is not a database, or a database that cannot be durable
    /// (an in-memory one, whose journal is in memory). A permanent error:
    /// opening it again fails the same way, so fix the path or the
    /// configuration (the cause is the [`source`](StdError::source)).
    /// Nothing was written.
    #[error("not a durable log: {reason}")]
    NotALog {
        /// What was found instead.
        reason: String,
        /// The store's own error, if it gave one.
        #[source]
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
    /// What the store holds for the Run cannot be what baton wrote, so
    /// nothing is decided on it and nothing is written; an operator must
    /// look (`reason` says what was found). Baton itself writes only rows
    /// that read back (G2: a payload that would not is refused with
    /// [`Encode`](Self::Encode)), so each way to this error is outside the
    /// log's own writes:
    ///
    /// - a row altered outside baton: a pause or an outcome whose JSON does
    ///   not decode, a pause whose key columns disagree with its JSON, an
    ///   outcome not stored whole, an epoch that is not positive;
    /// - the payload type changed under the rows: a runtime reading with
    ///   a `P` whose `Deserialize` refuses what an earlier `P` (another
    ///   version of the runtime, or another log on the same store) wrote;
    /// - on PostgreSQL, a row that changed under the row lock the log
    ///   holds, or a write that touched more rows than its key names (a
    ///   trigger or rule of the operator's on baton's tables).
    #[error("a stored row of Run {run_id:?} is corrupt: {reason}")]
    Corrupt {
        /// The Run whose row is corrupt.
        run_id: String,
        /// What is wrong.
        reason: String,
    },
    /// The pause (or the outcome) could not be encoded as JSON (a payload
    /// whose `Serialize` fails), or its encoding does not decode back to an
    /// equal value (an `f64` NaN or infinity becomes `null`; a map with
    /// non-string keys; a `Serialize` and `Deserialize` that disagree), so
    /// the store could not read back what it would acknowledge (G2; see
    /// [`encode_checked`]). Nothing was written, on every store: sending
    /// the same payload again fails the same way.
    #[error("the pause or outcome does not encode as JSON that reads back equal")]
    Encode(#[source] serde_json::Error),
    /// The store failed **before anything could be written**: it could not
    /// be reached (connection refused, TLS or authentication failed, no
    /// runtime), it refused the operation, or the operation's transaction
    /// ended without a commit being sent (locked out past the busy timeout,
    /// a connection lost mid-transaction). Nothing was written, so running
    /// the same operation again is safe (it may fail the same way). The
    /// store's error is the [`source`](StdError::source).
    #[error("storage unavailable; nothing was written")]
    Unavailable(#[source] Box<dyn StdError + Send + Sync>),
    /// The store failed **once the write may have been sent**: the commit
    /// (or a one-statement write) was in flight when the connection was
    /// lost, the operation outlived its timeout, or the thread running it
    /// ended without an answer. The write may or may not be durable: read
    /// the facts back, or send the identical append or finish again
    /// (idempotent), or retire again; a
    /// claim is claimed again (a new epoch fences the unknown one). The
    /// store's error is the [`source`](StdError::source).
    #[error("storage failed; the outcome is unknown")]
    OutcomeUnknown(#[source] Box<dyn StdError + Send + Sync>),
}

impl LogError {
    /// Whether the operation's outcome is unknown
    /// ([`OutcomeUnknown`](Self::OutcomeUnknown)): the only error after
    /// which the write may have happened. Every other error means nothing
    /// was written.
    ///
    /// ```
    /// use baton::durable::LogError;
    ///
    /// assert!(LogError::OutcomeUnknown("the reply was lost".into()).outcome_unknown());
    /// assert!(!LogError::Unavailable("connection refused".into()).outcome_unknown());
    /// ```
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, LogError::OutcomeUnknown(_))
    }

    /// The error of an operation that writes nothing (a read of the
    /// facts): its failure is never an unknown outcome.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn of_a_read(self) -> Self {
        match self {
            LogError::OutcomeUnknown(error) => LogError::Unavailable(error),
            other => other,
        }
    }
}

/// The pure checks of every [`HandoffLog::append`]'s input, made before
/// the store is consulted: the Run's ids, the source's other ids (each as
/// [`check_id`] wants it, so no store meets text it cannot hold), then the
/// intent against the source ([`HandoffIntent::validate_for`]).
///
/// A store of your own calls it first, so that it refuses bad input as
/// baton's stores do.
///
/// # Errors
///
/// [`LogError::InvalidRun`] naming the first invalid id (`root_run_id`,
/// `run_id`, `session_id`, `turn_id`, `invocation_id`), else
/// [`LogError::InvalidPause`].
///
/// [`HandoffIntent::validate_for`]: crate::facts::HandoffIntent::validate_for
pub fn check_append<P>(
    root_run_id: &str,
    source: &Invocation,
    pause: &HandoffPause<P>,
) -> Result<(), LogError> {
    check_finish(root_run_id, source)?;
    pause
        .intent
        .validate_for(source, root_run_id)
        .map_err(LogError::InvalidPause)
}

/// The pure checks of every [`HandoffLog::finish`]'s input, made before the
/// store is consulted: the Run's ids and the source's other ids, each as
/// [`check_id`] wants it.
///
/// # Errors
///
/// [`LogError::InvalidRun`] naming the first invalid id (`root_run_id`,
/// `run_id`, `session_id`, `turn_id`, `invocation_id`).
pub fn check_finish(root_run_id: &str, source: &Invocation) -> Result<(), LogError> {
    check_run(root_run_id, &source.run_id)?;
    for (field, id) in [
        (RunField::SessionId, &source.session_id),
        (RunField::TurnId, &source.turn_id),
        (RunField::InvocationId, &source.invocation_id),
    ] {
        check_id(id).map_err(|error| LogError::InvalidRun { field, error })?;
    }
    Ok(())
}

/// Encodes a pause or an outcome as JSON, as every store writes it, and
/// checks that the encoding decodes back to an equal value (G2: what a
/// store acknowledges reads back equal). Every store — [`MemoryLog`]
/// included, so that all keep one behaviour — calls it before anything is
/// written, and a store of your own should too.
///
/// ```
/// use baton::durable::{LogError, encode_checked};
///
/// assert_eq!(encode_checked(&vec![1.5_f64])?, "[1.5]");
/// // NaN encodes as `null`, which does not read back as a number.
/// assert!(matches!(encode_checked(&f64::NAN), Err(LogError::Encode(_))));
/// assert!(matches!(encode_checked(&Some(f64::INFINITY)), Err(LogError::Encode(_))));
/// # Ok::<(), LogError>(())
/// ```
///
/// # Errors
///
/// [`LogError::Encode`] if the value does not encode, or its encoding does
/// not decode, or decodes to a value that is not equal to it.
pub fn encode_checked<T>(value: &T) -> Result<String, LogError>
where
    T: Serialize + DeserializeOwned + PartialEq,
{
    let json = serde_json::to_string(value).map_err(LogError::Encode)?;
    let read_back: T = serde_json::from_str(&json).map_err(LogError::Encode)?;
    if read_back != *value {
        return Err(LogError::Encode(
            <serde_json::Error as serde::ser::Error>::custom(
                "the encoding decodes to a value that is not equal to the one encoded",
            ),
        ));
    }
    Ok(json)
}

/// Checks the id of a root Run to retire.
pub(crate) fn check_root(root_run_id: &str) -> Result<(), LogError> {
    check_id(root_run_id).map_err(|error| LogError::InvalidRun {
        field: RunField::RootRunId,
        error,
    })
}

/// Checks the ids of a Run asked about.
pub(crate) fn check_run(root_run_id: &str, run_id: &str) -> Result<(), LogError> {
    check_id(root_run_id).map_err(|error| LogError::InvalidRun {
        field: RunField::RootRunId,
        error,
    })?;
    check_id(run_id).map_err(|error| LogError::InvalidRun {
        field: RunField::RunId,
        error,
    })
}

/// A [`HandoffLog`] in memory, for tests and examples: "durable" means
/// "in this process". Same rules as every log, each operation under one
/// lock (its transaction).
pub struct MemoryLog<P> {
    held: Mutex<Held<P>>,
}

/// Everything a [`MemoryLog`] holds: the Runs, and the retired root Runs'
/// tombstones.
struct Held<P> {
    runs: Vec<Record<P>>,
    retired: Vec<String>,
}

/// What a [`MemoryLog`] holds for one Run.
struct Record<P> {
    root_run_id: String,
    run_id: String,
    epoch: Epoch,
    pause: Option<Appended<P>>,
    finished: Option<Finished<P>>,
    /// When its fate became final (its pause or its finish was written).
    ended_at: Option<SystemTime>,
}

impl<P> Record<P> {
    fn fate(&self) -> Fate<'_, P> {
        match (&self.pause, &self.finished) {
            (Some(pause), _) => Fate::HandedOff(pause),
            (None, Some(finished)) => Fate::Finished(finished),
            (None, None) => Fate::Open,
        }
    }
}

impl<P> Held<P> {
    fn position(&self, root_run_id: &str, run_id: &str) -> Option<usize> {
        self.runs
            .iter()
            .position(|run| run.root_run_id == root_run_id && run.run_id == run_id)
    }

    fn is_retired(&self, root_run_id: &str) -> bool {
        self.retired.iter().any(|root| root == root_run_id)
    }

    /// Every Run of the root with its fate, as `retire_step` reads them.
    fn fates_of<'a>(
        &'a self,
        root_run_id: &'a str,
    ) -> impl Iterator<Item = (&'a str, Fate<'a, P>)> {
        self.runs
            .iter()
            .filter(move |run| run.root_run_id == root_run_id)
            .map(|run| (run.run_id.as_str(), run.fate()))
    }

    /// Retires the root: its Runs go, its tombstone stays.
    fn remove(&mut self, root_run_id: &str) {
        self.runs.retain(|run| run.root_run_id != root_run_id);
        self.retired.push(root_run_id.to_owned());
    }

    /// The Run's epoch and fate, as the write rules read them.
    fn fate_of(&self, root_run_id: &str, run_id: &str) -> (Epoch, Fate<'_, P>) {
        if self.is_retired(root_run_id) {
            return (Epoch::NONE, Fate::Retired);
        }
        match self.position(root_run_id, run_id) {
            Some(at) => (self.runs[at].epoch, self.runs[at].fate()),
            None => (Epoch::NONE, Fate::Open),
        }
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> RunFacts<P>
    where
        P: Clone,
    {
        let mut facts = RunFacts::empty(root_run_id, run_id);
        facts.retired = self.is_retired(root_run_id);
        if let Some(at) = self.position(root_run_id, run_id) {
            let record = &self.runs[at];
            facts.epoch = record.epoch;
            facts.pauses.extend(record.pause.clone());
            facts.finished.clone_from(&record.finished);
        }
        facts
    }
}

impl<P> MemoryLog<P> {
    /// An empty log.
    pub fn new() -> Self {
        Self {
            held: Mutex::new(Held {
                runs: Vec::new(),
                retired: Vec::new(),
            }),
        }
    }

    /// The number of pauses held, over every Run.
    pub fn len(&self) -> usize {
        lock(&self.held)
            .runs
            .iter()
            .filter(|run| run.pause.is_some())
            .count()
    }

    /// Whether the log holds no pause.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the log keeps (R10): the number of Runs it holds a record for,
    /// and the number of retired root Runs' tombstones.
    pub fn rows(&self) -> (usize, usize) {
        let held = lock(&self.held);
        (held.runs.len(), held.retired.len())
    }
}

impl<P> Default for MemoryLog<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P> std::fmt::Debug for MemoryLog<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (runs, retired) = self.rows();
        f.debug_struct("MemoryLog")
            .field("len", &self.len())
            .field("runs", &runs)
            .field("retired", &retired)
            .finish()
    }
}

impl<P> HandoffLog<P> for MemoryLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        check_run(root_run_id, run_id)?;
        let mut held = lock(&self.held);
        let step = claim_step(&held.facts(root_run_id, run_id))?;
        if let Some(epoch) = step.write {
            match held.position(root_run_id, run_id) {
                Some(at) => held.runs[at].epoch = epoch,
                None => held.runs.push(Record {
                    root_run_id: root_run_id.to_owned(),
                    run_id: run_id.to_owned(),
                    epoch,
                    pause: None,
                    finished: None,
                    ended_at: None,
                }),
            }
        }
        Ok(step.answer)
    }

    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        check_append(root_run_id, source, pause)?;
        encode_checked(pause)?;
        let mut held = lock(&self.held);
        let (current, fate) = held.fate_of(root_run_id, &source.run_id);
        let step = append_step(root_run_id, current, fate, epoch, (source, pause))?;
        // `append_step` writes only under an issued epoch, so the Run has a
        // record.
        if let (AppendStep::Write, Some(at)) = (step, held.position(root_run_id, &source.run_id)) {
            held.runs[at].pause = Some(Appended {
                source: source.clone(),
                pause: pause.clone(),
            });
            held.runs[at].ended_at = Some(SystemTime::now());
        }
        Ok(step.receipt())
    }

    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        check_finish(root_run_id, source)?;
        encode_checked(outcome)?;
        let mut held = lock(&self.held);
        let (current, fate) = held.fate_of(root_run_id, &source.run_id);
        let step = finish_step(root_run_id, current, fate, epoch, (source, outcome))?;
        if let (AppendStep::Write, Some(at)) = (step, held.position(root_run_id, &source.run_id)) {
            held.runs[at].finished = Some(Finished {
                source: source.clone(),
                outcome: outcome.clone(),
            });
            held.runs[at].ended_at = Some(SystemTime::now());
        }
        Ok(step.receipt())
    }

    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        check_root(root_run_id)?;
        let mut held = lock(&self.held);
        let retired = held.is_retired(root_run_id);
        let step = retire_step(root_run_id, retired, held.fates_of(root_run_id))?;
        if let Retirement::Retired { .. } = step {
            held.remove(root_run_id);
        }
        Ok(step)
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        check_run(root_run_id, run_id)?;
        Ok(lock(&self.held).facts(root_run_id, run_id))
    }
}

#[path = "memory_sweep.rs"]
mod memory_sweep;

#[cfg(test)]
mod edge_tests {
    use super::*;

    /// R6 at the edge, where every store agrees: `MemoryLog` issues its
    /// last epoch at [`Epoch::LAST`] (`i64::MAX`, where `SqliteLog` and
    /// `PostgresLog` stop, their column being a signed 64-bit integer),
    /// then refuses the next claim and writes nothing, as they do.
    #[test]
    fn r6_memory_issues_its_last_epoch_where_the_sql_stores_do() {
        let log: MemoryLog<u32> = MemoryLog::new();
        assert!(matches!(log.claim("root", "run"), Ok(Claim::Owner(e)) if e == Epoch::new(1)));
        // The largest a SQL store's bigint holds, less one.
        let sql_max = i64::MAX.unsigned_abs();
        lock(&log.held).runs[0].epoch = Epoch::new(sql_max - 1);
        assert!(matches!(log.claim("root", "run"), Ok(Claim::Owner(e)) if e.get() == sql_max));
        assert!(matches!(
            log.claim("root", "run"),
            Err(LogError::EpochsExhausted)
        ));
        assert_eq!(log.facts("root", "run").unwrap().epoch, Epoch::LAST);
    }
}
