//! The ghost reference for `log_table`: the canonical handoff log re-derived
//! from SPEC §6 for the fuzzer, independently of `durable::fence`,
//! `durable::reconcile` and every store.
//!
//! The ghost is the SPEC's table read literally: per Run an epoch (a plain
//! `u64`) and a fate (no row: `Open`; a row: `HandedOff`), in an unsorted
//! list scanned in full. It validates ids and intents with its own reading
//! of the rules (SPEC §1's intent rules, checked field by field in
//! declaration order, as `LogError`'s docs promise), so a store that checks
//! less, or in another order, answers differently.

use std::sync::Arc;

use baton::durable::{Appended, Claim, Epoch, LogError, Receipt, ReconcileError, RunFacts};
use baton::facts::MAX_ID_BYTES;
use baton::facts::{Field, HandoffIntent, HandoffPause, IdError, IntentError, Invocation};

/// The payload of every fuzzed pause: text, so that the SQLite store's JSON
/// encoding sees escapes, non-ASCII and control characters.
pub type Payload = String;

/// A [`LogError`] in a form that compares: its variant and its
/// deterministic fields (the sources of `Encode`, `Unavailable` and
/// `OutcomeUnknown`, never expected, are kept as their messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// [`LogError::InvalidPause`].
    InvalidPause(IntentError),
    /// [`LogError::InvalidRun`].
    InvalidRun {
        /// `"root_run_id"` or `"run_id"`, or an append source's
        /// `"session_id"`, `"turn_id"` or `"invocation_id"`.
        field: &'static str,
        /// What is wrong with it.
        error: IdError,
    },
    /// [`LogError::AlreadyHandedOff`].
    AlreadyHandedOff {
        /// The root Run.
        root_run_id: String,
        /// The Run.
        run_id: String,
    },
    /// [`LogError::Fenced`].
    Fenced {
        /// The append's epoch.
        epoch: Epoch,
        /// The Run's.
        current: Epoch,
    },
    /// [`LogError::EpochNotIssued`].
    EpochNotIssued {
        /// The append's epoch.
        epoch: Epoch,
        /// The Run's.
        current: Epoch,
    },
    /// [`LogError::EpochsExhausted`].
    EpochsExhausted,
    /// [`LogError::Contradictory`] (never expected: one row per Run).
    Contradictory(ReconcileError),
    /// [`LogError::UnknownSchema`] (never expected).
    UnknownSchema {
        /// The version found.
        found: i64,
        /// The version expected.
        expected: i64,
    },
    /// [`LogError::Corrupt`] (never expected: nothing alters the store).
    Corrupt {
        /// The Run.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// [`LogError::Encode`] (never expected: text always encodes).
    Encode(String),
    /// [`LogError::Unavailable`] (never expected).
    Unavailable(String),
    /// [`LogError::OutcomeUnknown`] (never expected).
    OutcomeUnknown(String),
    /// A [`LogError`] variant this ghost does not know (never expected).
    Unknown(String),
}

impl From<LogError> for Refusal {
    fn from(error: LogError) -> Self {
        match error {
            LogError::InvalidPause(error) => Refusal::InvalidPause(error),
            LogError::InvalidRun { field, error } => Refusal::InvalidRun {
                field: field.as_str(),
                error,
            },
            LogError::AlreadyHandedOff {
                root_run_id,
                run_id,
            } => Refusal::AlreadyHandedOff {
                root_run_id,
                run_id,
            },
            LogError::Fenced { epoch, current } => Refusal::Fenced { epoch, current },
            LogError::EpochNotIssued { epoch, current } => {
                Refusal::EpochNotIssued { epoch, current }
            }
            LogError::EpochsExhausted => Refusal::EpochsExhausted,
            LogError::Contradictory(error) => Refusal::Contradictory(error),
            LogError::UnknownSchema { found, expected } => {
                Refusal::UnknownSchema { found, expected }
            }
            LogError::Corrupt { run_id, reason } => Refusal::Corrupt { run_id, reason },
            LogError::Encode(error) => Refusal::Encode(error.to_string()),
            LogError::Unavailable(error) => Refusal::Unavailable(error.to_string()),
            LogError::OutcomeUnknown(error) => Refusal::OutcomeUnknown(error.to_string()),
            // `LogError` is non-exhaustive: a variant of a newer baton that
            // this ghost does not know is never what it expects.
            other => Refusal::Unknown(other.to_string()),
        }
    }
}

/// One operation's answer, from a store or from the ghost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `claim`.
    Claimed(Result<Claim<Payload>, Refusal>),
    /// `append`.
    Appended(Result<Receipt, Refusal>),
    /// `facts`.
    Facts(Result<RunFacts<Payload>, Refusal>),
    /// The store was closed and opened again (SQLite; the memory log is
    /// "durable in this process" and stays as it is).
    Reopened(Result<(), Refusal>),
    /// A retry with no lost append to retry: nothing was asked.
    NothingToRetry,
}

/// What the ghost holds for one Run.
#[derive(Clone, Debug)]
struct Run {
    root_run_id: String,
    run_id: String,
    /// The current epoch (0: never claimed).
    epoch: u64,
    /// The durable pause (`HandedOff`), or none (`Open`).
    row: Option<Appended<Payload>>,
}

/// The log as the ghost keeps it.
#[derive(Clone, Debug, Default)]
pub struct Ghost {
    runs: Vec<Run>,
}

/// The ghost's reading of "a valid id": non-empty, at most
/// [`MAX_ID_BYTES`] bytes, no control character — faults in that order.
pub fn id_fault(id: &str) -> Option<IdError> {
    if id.is_empty() {
        Some(IdError::Empty)
    } else if id.len() > MAX_ID_BYTES {
        Some(IdError::TooLong(id.len()))
    } else if id.chars().any(char::is_control) {
        Some(IdError::ControlCharacter)
    } else {
        None
    }
}

/// The refusal for a Run asked about with an invalid id, root Run first.
fn run_fault(root_run_id: &str, run_id: &str) -> Option<Refusal> {
    [("root_run_id", root_run_id), ("run_id", run_id)]
        .into_iter()
        .find_map(|(field, id)| id_fault(id).map(|error| Refusal::InvalidRun { field, error }))
}

/// The refusal for an append whose source has an invalid id besides its
/// Run's, in the order session, turn, invocation.
fn source_fault(source: &Invocation) -> Option<Refusal> {
    [
        ("session_id", source.session_id.as_str()),
        ("turn_id", source.turn_id.as_str()),
        ("invocation_id", source.invocation_id.as_str()),
    ]
    .into_iter()
    .find_map(|(field, id)| id_fault(id).map(|error| Refusal::InvalidRun { field, error }))
}

/// Why `intent` is not a handoff of `source` within `root_run_id`: the
/// first invalid field in declaration order, then a successor equal to the
/// source (Run, then invocation), then another root Run.
fn intent_fault(
    intent: &HandoffIntent,
    source: &Invocation,
    root_run_id: &str,
) -> Option<IntentError> {
    let fields = [
        (Field::HandoffId, &intent.handoff_id),
        (Field::HostEpoch, &intent.host_epoch),
        (Field::RootRunId, &intent.root_run_id),
        (Field::SuccessorRunId, &intent.successor_run_id),
        (
            Field::SuccessorInvocationId,
            &intent.successor_invocation_id,
        ),
        (Field::ClaimId, &intent.claim_id),
    ];
    for (field, id) in fields {
        match id_fault(id) {
            Some(IdError::Empty) => return Some(IntentError::Empty(field)),
            Some(IdError::TooLong(len)) => return Some(IntentError::TooLong { field, len }),
            Some(IdError::ControlCharacter) => return Some(IntentError::ControlCharacter(field)),
            Some(other) => unreachable!("`id_fault` gives no {other:?}"),
            None => {}
        }
    }
    if intent.successor_run_id == source.run_id {
        Some(IntentError::SuccessorIsSource(Field::SuccessorRunId))
    } else if intent.successor_invocation_id == source.invocation_id {
        Some(IntentError::SuccessorIsSource(Field::SuccessorInvocationId))
    } else if intent.root_run_id != root_run_id {
        Some(IntentError::OtherRootRun {
            expected: root_run_id.to_owned(),
            found: intent.root_run_id.clone(),
        })
    } else {
        None
    }
}

impl Ghost {
    fn find(&self, root_run_id: &str, run_id: &str) -> Option<&Run> {
        self.runs
            .iter()
            .find(|run| run.root_run_id == root_run_id && run.run_id == run_id)
    }

    fn find_or_add(&mut self, root_run_id: &str, run_id: &str) -> &mut Run {
        let index = match self
            .runs
            .iter()
            .position(|run| run.root_run_id == root_run_id && run.run_id == run_id)
        {
            Some(index) => index,
            None => {
                self.runs.push(Run {
                    root_run_id: root_run_id.to_owned(),
                    run_id: run_id.to_owned(),
                    epoch: 0,
                    row: None,
                });
                self.runs.len() - 1
            }
        };
        &mut self.runs[index]
    }

    /// `claim`: a handed-off Run answers its pause and changes nothing; an
    /// open one gets the next epoch.
    pub fn claim(&mut self, root_run_id: &str, run_id: &str) -> Answer {
        if let Some(refusal) = run_fault(root_run_id, run_id) {
            return Answer::Claimed(Err(refusal));
        }
        let run = self.find_or_add(root_run_id, run_id);
        Answer::Claimed(match &run.row {
            Some(row) => Ok(Claim::HandedOff(row.pause.clone())),
            None => match run.epoch.checked_add(1) {
                Some(next) => {
                    run.epoch = next;
                    Ok(Claim::Owner(Epoch::new(next)))
                }
                None => Err(Refusal::EpochsExhausted),
            },
        })
    }

    /// `append`: bad input first; then the epoch (never issued, stale),
    /// then the fate (open: write; the identical row: idempotent; another
    /// row: already handed off).
    pub fn append(
        &mut self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<Payload>,
    ) -> Answer {
        if let Some(refusal) = run_fault(root_run_id, &source.run_id) {
            return Answer::Appended(Err(refusal));
        }
        if let Some(refusal) = source_fault(source) {
            return Answer::Appended(Err(refusal));
        }
        if let Some(error) = intent_fault(&pause.intent, source, root_run_id) {
            return Answer::Appended(Err(Refusal::InvalidPause(error)));
        }
        let run = self.find_or_add(root_run_id, &source.run_id);
        let (asked, current) = (epoch.get(), run.epoch);
        Answer::Appended(if asked == 0 || asked > current {
            Err(Refusal::EpochNotIssued {
                epoch,
                current: Epoch::new(current),
            })
        } else if asked < current {
            Err(Refusal::Fenced {
                epoch,
                current: Epoch::new(current),
            })
        } else {
            match &run.row {
                None => {
                    run.row = Some(Appended {
                        source: source.clone(),
                        pause: HandoffPause {
                            intent: Arc::clone(&pause.intent),
                            execution: pause.execution.clone(),
                        },
                    });
                    Ok(Receipt::Written)
                }
                Some(row) if row.source == *source && row.pause == *pause => {
                    Ok(Receipt::AlreadyDurable)
                }
                Some(row) => Err(Refusal::AlreadyHandedOff {
                    root_run_id: root_run_id.to_owned(),
                    run_id: row.source.run_id.clone(),
                }),
            }
        })
    }

    /// `facts`: the Run's epoch and its row, if any.
    pub fn facts(&self, root_run_id: &str, run_id: &str) -> Answer {
        if let Some(refusal) = run_fault(root_run_id, run_id) {
            return Answer::Facts(Err(refusal));
        }
        let mut facts = RunFacts::empty(root_run_id, run_id);
        if let Some(run) = self.find(root_run_id, run_id) {
            facts.epoch = Epoch::new(run.epoch);
            facts.pauses.extend(run.row.clone());
        }
        Answer::Facts(Ok(facts))
    }
}
