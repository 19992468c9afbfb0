//! The ghost reference for `log_table`: the canonical handoff log re-derived
//! from SPEC §6 for the fuzzer, independently of `durable::fence`,
//! `durable::reconcile` and every store.
//!
//! The ghost is the SPEC's table read literally: per Run an epoch (a plain
//! `u64`) and a fate (no row: `Open`; a pause: `HandedOff`; an outcome:
//! `Finished`), in an unsorted list scanned in full, and the retired root
//! Runs (§6.1). It validates ids and intents with its own reading
//! of the rules (SPEC §1's intent rules, checked field by field in
//! declaration order, as `LogError`'s docs promise), so a store that checks
//! less, or in another order, answers differently.

use std::sync::Arc;

use baton::durable::{
    Appended, Claim, Epoch, Finished, LogError, Receipt, ReconcileError, Retirement, RunFacts,
};
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
    /// [`LogError::AlreadyFinished`].
    AlreadyFinished {
        /// The root Run.
        root_run_id: String,
        /// The Run.
        run_id: String,
    },
    /// [`LogError::Retired`].
    Retired {
        /// The root Run.
        root_run_id: String,
    },
    /// [`LogError::RunOpen`].
    RunOpen {
        /// The root Run.
        root_run_id: String,
        /// The Run not final yet whose id is least.
        run_id: String,
    },
    /// [`LogError::NothingToRetire`].
    NothingToRetire {
        /// The root Run.
        root_run_id: String,
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
            LogError::AlreadyFinished {
                root_run_id,
                run_id,
            } => Refusal::AlreadyFinished {
                root_run_id,
                run_id,
            },
            LogError::Retired { root_run_id } => Refusal::Retired { root_run_id },
            LogError::RunOpen {
                root_run_id,
                run_id,
            } => Refusal::RunOpen {
                root_run_id,
                run_id,
            },
            LogError::NothingToRetire { root_run_id } => Refusal::NothingToRetire { root_run_id },
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
    /// `finish`.
    Finished(Result<Receipt, Refusal>),
    /// `retire`.
    Retired(Result<Retirement, Refusal>),
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
    /// The durable pause (`HandedOff`), or none.
    row: Option<Appended<Payload>>,
    /// The durable outcome (`Finished`), or none.
    finished: Option<Finished<Payload>>,
}

/// The log as the ghost keeps it.
#[derive(Clone, Debug, Default)]
pub struct Ghost {
    runs: Vec<Run>,
    /// The retired root Runs.
    retired: Vec<String>,
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
                    finished: None,
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
        if self.is_retired(root_run_id) {
            return Answer::Claimed(Ok(Claim::Retired));
        }
        let run = self.find_or_add(root_run_id, run_id);
        if let Some(finished) = &run.finished {
            return Answer::Claimed(Ok(Claim::Finished(finished.outcome.clone())));
        }
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
        if let Some(refusal) = self.fence(root_run_id, &source.run_id, epoch) {
            return Answer::Appended(Err(refusal));
        }
        let run = self.find_or_add(root_run_id, &source.run_id);
        Answer::Appended(if run.finished.is_some() {
            Err(Refusal::AlreadyFinished {
                root_run_id: root_run_id.to_owned(),
                run_id: source.run_id.clone(),
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

    fn is_retired(&self, root_run_id: &str) -> bool {
        self.retired.iter().any(|root| root == root_run_id)
    }

    /// What every write checks after its input: the root Run is not
    /// retired, and the epoch is the Run's current one (never issued:
    /// zero or newer; stale: older).
    fn fence(&self, root_run_id: &str, run_id: &str, epoch: Epoch) -> Option<Refusal> {
        if self.is_retired(root_run_id) {
            return Some(Refusal::Retired {
                root_run_id: root_run_id.to_owned(),
            });
        }
        let current = self.find(root_run_id, run_id).map_or(0, |run| run.epoch);
        let asked = epoch.get();
        let current = Epoch::new(current);
        if asked == 0 || epoch > current {
            Some(Refusal::EpochNotIssued { epoch, current })
        } else if epoch < current {
            Some(Refusal::Fenced { epoch, current })
        } else {
            None
        }
    }

    /// `finish`: bad input first; then the fence as an append's; then the
    /// fate (open: write; the identical outcome from the same source:
    /// idempotent; another outcome: already finished; a pause: already
    /// handed off).
    pub fn finish(
        &mut self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &Payload,
    ) -> Answer {
        if let Some(refusal) = run_fault(root_run_id, &source.run_id) {
            return Answer::Finished(Err(refusal));
        }
        if let Some(refusal) = source_fault(source) {
            return Answer::Finished(Err(refusal));
        }
        if let Some(refusal) = self.fence(root_run_id, &source.run_id, epoch) {
            return Answer::Finished(Err(refusal));
        }
        let run = self.find_or_add(root_run_id, &source.run_id);
        Answer::Finished(match (&run.row, &run.finished) {
            (Some(row), _) => Err(Refusal::AlreadyHandedOff {
                root_run_id: root_run_id.to_owned(),
                run_id: row.source.run_id.clone(),
            }),
            (None, Some(done)) if done.source == *source && done.outcome == *outcome => {
                Ok(Receipt::AlreadyDurable)
            }
            (None, Some(_)) => Err(Refusal::AlreadyFinished {
                root_run_id: root_run_id.to_owned(),
                run_id: source.run_id.clone(),
            }),
            (None, None) => {
                run.finished = Some(Finished {
                    source: source.clone(),
                    outcome: outcome.clone(),
                });
                Ok(Receipt::Written)
            }
        })
    }

    /// `retire`: an invalid root id; already retired; no Run of the root
    /// held (nothing to retire); a Run that is not final — one claimed with
    /// no fate, or a successor a pause of the root names that is not
    /// claimed or has no fate — refuses, naming the least such id; else
    /// every Run of the root goes and its tombstone stays.
    pub fn retire(&mut self, root_run_id: &str) -> Answer {
        if let Some(error) = id_fault(root_run_id) {
            return Answer::Retired(Err(Refusal::InvalidRun {
                field: "root_run_id",
                error,
            }));
        }
        if self.is_retired(root_run_id) {
            return Answer::Retired(Ok(Retirement::AlreadyRetired));
        }
        // A Run never claimed (epoch 0) is not in any store.
        let of_root = || {
            self.runs
                .iter()
                .filter(|run| run.root_run_id == root_run_id && run.epoch > 0)
        };
        if of_root().next().is_none() {
            return Answer::Retired(Err(Refusal::NothingToRetire {
                root_run_id: root_run_id.to_owned(),
            }));
        }
        let ended = |run: &Run| run.row.is_some() || run.finished.is_some();
        let mut not_final: Vec<String> = of_root()
            .filter(|run| !ended(run))
            .map(|run| run.run_id.clone())
            .collect();
        for run in of_root() {
            if let Some(row) = &run.row {
                let successor = &row.pause.intent.successor_run_id;
                if !of_root().any(|other| &other.run_id == successor && ended(other)) {
                    not_final.push(successor.clone());
                }
            }
        }
        if let Some(run_id) = not_final.into_iter().min() {
            return Answer::Retired(Err(Refusal::RunOpen {
                root_run_id: root_run_id.to_owned(),
                run_id,
            }));
        }
        let runs = of_root().count();
        self.runs.retain(|run| run.root_run_id != root_run_id);
        self.retired.push(root_run_id.to_owned());
        Answer::Retired(Ok(Retirement::Retired { runs }))
    }

    /// `facts`: the Run's epoch, its pause and its outcome, if any, or the
    /// tombstone of its root Run.
    pub fn facts(&self, root_run_id: &str, run_id: &str) -> Answer {
        if let Some(refusal) = run_fault(root_run_id, run_id) {
            return Answer::Facts(Err(refusal));
        }
        let mut facts = RunFacts::empty(root_run_id, run_id);
        facts.retired = self.is_retired(root_run_id);
        if let Some(run) = self.find(root_run_id, run_id) {
            facts.epoch = Epoch::new(run.epoch);
            facts.pauses.extend(run.row.clone());
            facts.finished.clone_from(&run.finished);
        }
        Answer::Facts(Ok(facts))
    }
}
