//! What a log holds for one Run, as every store reads it back.

use crate::facts::{HandoffPause, Invocation};

use super::epoch::Epoch;

/// One durable pause row as read back: the pause and the invocation that
/// appended it (the source the pause hands off).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Appended<P> {
    /// The worker's invocation that appended the pause.
    pub source: Invocation,
    /// The pause, as stored.
    pub pause: HandoffPause<P>,
}

/// One durable finish row as read back: the outcome and the invocation that
/// recorded it (the Run that finished).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Finished<P> {
    /// The worker's invocation that finished the Run.
    pub source: Invocation,
    /// The Run's outcome, as stored.
    pub outcome: P,
}

/// What the canonical log holds about one Run: the Run asked about, its
/// owner epoch, the durable pause rows read back for it in log order, its
/// finish if any, and whether its root Run is retired.
///
/// A **Run** here is the source Run `run_id` within the logical Run
/// `root_run_id`: each Run may be handed off at most once, so a chain of
/// handoffs (A → B → C, all within root Run A) is one row per hop.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunFacts<P> {
    /// The logical Run.
    pub root_run_id: String,
    /// The Run asked about: the one whose worker may have crashed.
    pub run_id: String,
    /// The Run's current owner epoch ([`Epoch::NONE`] if never claimed).
    pub epoch: Epoch,
    /// The pauses the log holds for this Run, in log order.
    pub pauses: Vec<Appended<P>>,
    /// The Run's finish, if it finished.
    pub finished: Option<Finished<P>>,
    /// Whether the root Run is retired (then the log holds nothing else
    /// about the Run).
    pub retired: bool,
}

impl<P> RunFacts<P> {
    /// The facts of a Run the log holds nothing for: never claimed, no
    /// pause.
    pub fn empty(root_run_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self {
            root_run_id: root_run_id.into(),
            run_id: run_id.into(),
            epoch: Epoch::NONE,
            pauses: Vec::new(),
            finished: None,
            retired: false,
        }
    }
}

/// Which id of a Run is at fault, named as on the wire: of the Run asked
/// about, or of the source invocation an append hands off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunField {
    /// `root_run_id`: the logical Run.
    RootRunId,
    /// `run_id`: the Run within it.
    RunId,
    /// `session_id` of the appending source.
    SessionId,
    /// `turn_id` of the appending source.
    TurnId,
    /// `invocation_id` of the appending source.
    InvocationId,
}

impl RunField {
    /// The field's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RootRunId => "root_run_id",
            Self::RunId => "run_id",
            Self::SessionId => "session_id",
            Self::TurnId => "turn_id",
            Self::InvocationId => "invocation_id",
        }
    }
}

impl std::fmt::Display for RunField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
