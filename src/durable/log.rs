//! The canonical log of handoffs: the [`HandoffLog`] trait, its error, the
//! pure rule every implementation applies to an append, and [`MemoryLog`].

use std::error::Error as StdError;

use thiserror::Error;

use super::reconcile::{Appended, RunFacts};
use crate::facts::{HandoffPause, IdError, IntentError, Invocation, check_id};
use crate::sync::{Mutex, lock};

/// The canonical facts a runtime keeps about handoffs.
///
/// A **Run** here is the source Run `run_id` within the logical Run
/// `root_run_id`; the log holds at most one pause per Run. Implementations
/// apply the same rules (checked by [`MemoryLog`] and `SqliteLog`'s tests):
///
/// - [`append`](Self::append) returns `Ok` only once the pause is durable
///   (for a store on disk: on disk), and every `Err` except
///   [`LogError::Storage`] means nothing was written;
/// - appending the identical row again (same source, same pause) is an
///   idempotent `Ok(`[`Receipt::AlreadyDurable`]`)`, so a worker may retry
///   an append whose outcome it did not learn;
/// - [`facts`](Self::facts) reads back exactly what was appended, whole.
pub trait HandoffLog<P> {
    /// Appends `pause`, which hands off the Run executing as `source` within
    /// the logical Run `root_run_id`, and returns once it is durable.
    ///
    /// # Errors
    ///
    /// [`LogError::InvalidPause`] (bad input) and
    /// [`LogError::AlreadyHandedOff`] (another pause is durable for this
    /// Run) write nothing. [`LogError::Storage`] leaves the outcome unknown
    /// until the facts are read back: reconcile, never guess.
    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError>;

    /// Reads what the log holds about the Run `run_id` within `root_run_id`,
    /// for [`reconcile`](super::reconcile()).
    ///
    /// # Errors
    ///
    /// [`LogError::InvalidRun`] for an invalid id; [`LogError::Corrupt`]
    /// for a stored row that does not decode; [`LogError::Storage`].
    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError>;
}

/// What a successful [`HandoffLog::append`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "an append's receipt says whether it wrote"]
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
    /// Bad input: a Run id asked about is invalid (`field` is `root_run_id`
    /// or `run_id`).
    #[error("invalid {field}: {error}")]
    InvalidRun {
        /// `"root_run_id"` or `"run_id"`.
        field: &'static str,
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
    /// The store records a schema version this version of baton does not
    /// know (a newer baton wrote it, or it is not baton's store).
    #[error("unknown schema version {found} (this baton knows version {expected})")]
    UnknownSchema {
        /// The version found.
        found: i64,
        /// The version this baton writes and reads.
        expected: i64,
    },
    /// A stored row does not decode, or its columns disagree with its
    /// pause: the store was altered outside baton.
    #[error("a stored pause of Run {run_id:?} is corrupt: {reason}")]
    Corrupt {
        /// The Run whose row is corrupt.
        run_id: String,
        /// What is wrong.
        reason: String,
    },
    /// The pause could not be encoded as JSON (a payload whose `Serialize`
    /// fails). Nothing was written.
    #[error("the pause does not encode as JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// The storage itself failed (I/O, locking, a full disk). For an append,
    /// whether the pause became durable is unknown: read the facts back.
    #[error("storage failed: {0}")]
    Storage(#[source] Box<dyn StdError + Send + Sync>),
}

/// What an append does, given the row already durable for its Run (if any).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AppendStep {
    /// No row yet: write this one.
    Write,
    /// The identical row is durable: write nothing, `Ok(AlreadyDurable)`.
    Idempotent,
}

/// The pure rule of every [`HandoffLog::append`]: check the input, then
/// decide against the existing row. Bad input is refused before the store is
/// consulted.
pub(crate) fn check_append<P>(
    root_run_id: &str,
    source: &Invocation,
    pause: &HandoffPause<P>,
) -> Result<(), LogError> {
    check_run(root_run_id, &source.run_id)?;
    pause
        .intent
        .validate_for(source, root_run_id)
        .map_err(LogError::InvalidPause)
}

/// Decides an append against the row already durable for its Run.
pub(crate) fn append_step<P: PartialEq>(
    root_run_id: &str,
    existing: Option<&Appended<P>>,
    new: (&Invocation, &HandoffPause<P>),
) -> Result<AppendStep, LogError> {
    match existing {
        None => Ok(AppendStep::Write),
        Some(row) if row.source == *new.0 && row.pause == *new.1 => Ok(AppendStep::Idempotent),
        Some(row) => Err(LogError::AlreadyHandedOff {
            root_run_id: root_run_id.to_owned(),
            run_id: row.source.run_id.clone(),
        }),
    }
}

/// Checks the ids of a Run asked about.
pub(crate) fn check_run(root_run_id: &str, run_id: &str) -> Result<(), LogError> {
    check_id(root_run_id).map_err(|error| LogError::InvalidRun {
        field: "root_run_id",
        error,
    })?;
    check_id(run_id).map_err(|error| LogError::InvalidRun {
        field: "run_id",
        error,
    })
}

/// A [`HandoffLog`] in memory, for tests and examples: "durable" means
/// "in this process". Same rules as every log.
pub struct MemoryLog<P> {
    rows: Mutex<Vec<(String, Appended<P>)>>,
}

impl<P> MemoryLog<P> {
    /// An empty log.
    pub fn new() -> Self {
        Self {
            rows: Mutex::new(Vec::new()),
        }
    }

    /// The number of pauses held, over every Run.
    pub fn len(&self) -> usize {
        lock(&self.rows).len()
    }

    /// Whether the log holds no pause.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<P> Default for MemoryLog<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P> std::fmt::Debug for MemoryLog<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLog")
            .field("len", &self.len())
            .finish()
    }
}

impl<P: PartialEq + Clone> HandoffLog<P> for MemoryLog<P> {
    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        check_append(root_run_id, source, pause)?;
        let mut rows = lock(&self.rows);
        let existing = rows
            .iter()
            .find(|(root, row)| root == root_run_id && row.source.run_id == source.run_id)
            .map(|(_, row)| row);
        match append_step(root_run_id, existing, (source, pause))? {
            AppendStep::Write => {
                rows.push((
                    root_run_id.to_owned(),
                    Appended {
                        source: source.clone(),
                        pause: pause.clone(),
                    },
                ));
                Ok(Receipt::Written)
            }
            AppendStep::Idempotent => Ok(Receipt::AlreadyDurable),
        }
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        check_run(root_run_id, run_id)?;
        let rows = lock(&self.rows);
        Ok(RunFacts {
            root_run_id: root_run_id.to_owned(),
            run_id: run_id.to_owned(),
            pauses: rows
                .iter()
                .filter(|(root, row)| root == root_run_id && row.source.run_id == run_id)
                .map(|(_, row)| row.clone())
                .collect(),
        })
    }
}
