//! How a log refuses or fails: [`LogError`], and [`ReconcileError`] for
//! facts that contradict each other.

use std::error::Error as StdError;

use thiserror::Error;

use crate::facts::{Field, IdError, IntentError};

use super::epoch::Epoch;
use super::facts::RunField;

/// Why a [`HandoffLog`](crate::durable::HandoffLog) refused or failed.
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
    /// Final refusal: the Run was handed off once and for all (a pause is
    /// durable for it), and this append's pause is a different one, or
    /// this is a finish. Nothing was written.
    #[error("Run {run_id:?} of root Run {root_run_id:?} is already handed off")]
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
    /// (an in-memory one, whose journal is in memory; with
    /// `PostgresOptions::require_synchronous_standby`, a PostgreSQL server
    /// that acknowledges a commit before any standby has it). A permanent error:
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
    /// API misuse, permanent: a `*_in` form (`PostgresLog::claim_in` and
    /// its siblings, `SqliteLog::claim_in` and its siblings) was given a
    /// transaction its rule cannot run in — a PostgreSQL transaction at
    /// another isolation level than `READ COMMITTED`, a SQLite transaction
    /// that holds no write lock (one not begun `IMMEDIATE`). Nothing was
    /// written and the caller's transaction is unchanged; the same call in
    /// the same kind of transaction fails the same way, so running it again
    /// never helps: begin the transaction as `reason` says.
    #[error("the caller's transaction cannot hold the log's writes: {reason}")]
    WrongTransaction {
        /// What the transaction is, and what it must be.
        reason: String,
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
    /// [`encode_checked`](crate::durable::encode_checked)). Nothing was written, on every store: sending
    /// the same payload again fails the same way.
    #[error("the pause or outcome does not encode as JSON that reads back equal")]
    Encode(#[source] serde_json::Error),
    /// The store failed **before anything could be written**: it could not
    /// be reached (connection refused, TLS or authentication failed, no
    /// runtime), it refused the operation, or the operation's transaction
    /// ended without a commit being sent (locked out past the busy timeout,
    /// a connection lost mid-transaction). Nothing was written, so running
    /// the same operation again is safe; it helps when the cause passes (a
    /// lost connection, a timeout, a busy lock, a failover), not when the
    /// cause is the deployment's (a role without a privilege, a wrong
    /// password, a closed log, no synchronous standby under
    /// `require_synchronous_standby`), which fails the same way until an
    /// operator acts: retry with a bound and a back-off, and report the
    /// cause. Misuse of a caller's transaction is not this error but the
    /// permanent [`WrongTransaction`](Self::WrongTransaction). The store's
    /// error, which names the cause, is the [`source`](StdError::source):
    /// print the chain (`{:#}` in `anyhow`, or walk `source()`).
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

/// The facts contradict each other or the Run asked about. Reconciliation
/// refuses to guess; an operator must look.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// The query names an invalid Run id (the field is `root_run_id` or
    /// `run_id`), so no fact could be about it.
    #[error("the Run asked about has an invalid {field}: {error}")]
    InvalidRun {
        /// Which of the two ids.
        field: RunField,
        /// What is wrong with it.
        error: IdError,
    },
    /// A row was appended by another Run than the one asked about.
    #[error("a pause was appended by Run {found:?}, not by Run {expected:?}")]
    OtherRun {
        /// The Run asked about.
        expected: String,
        /// The row's source Run.
        found: String,
    },
    /// A row's pause names another logical Run than the one asked about.
    #[error("a pause names root Run {found:?}, not root Run {expected:?}")]
    OtherRootRun {
        /// The root Run asked about.
        expected: String,
        /// The pause's `root_run_id`.
        found: String,
    },
    /// A row's pause hands the Run to itself (the field is
    /// `successor_run_id` or `successor_invocation_id`).
    #[error("a pause's {0} equals its source's")]
    SuccessorIsSource(Field),
    /// A row's pause is not a valid intent (an empty, over-long or
    /// control-character id).
    #[error("a pause is invalid: {0}")]
    InvalidPause(IntentError),
    /// The log holds more than one final fate for the Run: a pause and a
    /// finish, or rows of a Run whose root Run is retired.
    #[error("the log holds more than one final fate for Run {run_id:?}")]
    TwoFates {
        /// The Run asked about.
        run_id: String,
    },
    /// The log holds two different pauses for one Run: two handoffs cannot
    /// both be final.
    #[error("the log holds {count} different pauses for one Run")]
    ConflictingPauses {
        /// How many distinct pauses were read back.
        count: usize,
    },
}
