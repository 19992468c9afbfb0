//! The inputs of `log_table`: operation sequences on the handoff log,
//! each pick named relative to what the log holds, and the pause each
//! append's pick describes.

use arbitrary::Arbitrary;

use super::log_ghost::{Payload, id_fault};
use baton::durable::Epoch;
use baton::facts::{HandoffIntent, HandoffPause, Invocation, MAX_ID_BYTES};

/// The most operations one input may hold; longer inputs are rejected.
pub const MAX_OPS: usize = 48;

ops_input!();

/// The names `IdPick::Name` and `RunPick::Slot` choose from.
const NAMES: [&str; 4] = ["root-a", "root-b", "run-0", "run-1"];

/// An id, mostly invalid unless it is a `Name`.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum IdPick {
    /// `root-a`, `root-b`, `run-0` or `run-1` (`n % 4`).
    Name(u8),
    /// `""`.
    Empty,
    /// [`MAX_ID_BYTES`] bytes: the longest valid id.
    Longest,
    /// One byte over [`MAX_ID_BYTES`].
    TooLong,
    /// `run-0` with a control character (NUL, LF, DEL, U+0085 or U+009F).
    Control(u8),
    /// Exactly this text.
    Raw(String),
}

impl IdPick {
    pub(super) fn id(&self) -> String {
        match self {
            IdPick::Name(n) => NAMES[usize::from(*n) % 4].to_owned(),
            IdPick::Empty => String::new(),
            IdPick::Longest => "r".repeat(MAX_ID_BYTES),
            IdPick::TooLong => "r".repeat(MAX_ID_BYTES + 1),
            IdPick::Control(n) => {
                let c = ['\0', '\n', '\u{7f}', '\u{85}', '\u{9f}'][usize::from(*n) % 5];
                format!("run-{c}0")
            }
            IdPick::Raw(text) => text.clone(),
        }
    }
}

/// Which Run an operation names.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum RunPick {
    /// One of four valid Runs (`n % 4`): `run-0` or `run-1` within `root-a`
    /// or `root-b`.
    Slot(u8),
    /// These ids (the root Run's, the Run's).
    Ids(IdPick, IdPick),
}

impl RunPick {
    pub(super) fn ids(&self) -> (String, String) {
        match self {
            RunPick::Slot(n) => {
                let n = usize::from(*n) % 4;
                (NAMES[n / 2].to_owned(), NAMES[2 + n % 2].to_owned())
            }
            RunPick::Ids(root, run) => (root.id(), run.id()),
        }
    }
}

/// The epoch an append carries, relative to what the log issued the Run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum EpochPick {
    /// The last one issued (its claim's reply may have been lost).
    Current,
    /// The `n`-th newest epoch a worker saw (0 if none).
    Held(u8),
    /// `n + 1` before the last one issued (saturating at 0).
    Stale(u8),
    /// `n + 1` after the last one issued: never issued.
    Ahead(u8),
    /// [`Epoch::NONE`](baton::durable::Epoch::NONE).
    Zero,
    /// `u64::MAX`.
    Max,
}

/// A field of the intent, for [`Flaw`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum FieldPick {
    /// `handoff_id`
    HandoffId,
    /// `host_epoch`
    HostEpoch,
    /// `root_run_id`
    RootRunId,
    /// `successor_run_id`
    SuccessorRunId,
    /// `successor_invocation_id`
    SuccessorInvocationId,
    /// `claim_id`
    ClaimId,
}

/// What is wrong with an append's intent, if anything.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum Flaw {
    /// Nothing: a valid handoff of its source.
    None,
    /// The field is this id instead (mostly invalid).
    Field(FieldPick, IdPick),
    /// The successor Run is the source's.
    SuccessorIsSourceRun,
    /// The successor invocation is the source's.
    SuccessorIsSourceInvocation,
}

/// The pause an append carries.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub struct PausePick {
    /// `handoff_id` is `h{n % 3}`.
    pub handoff: u8,
    /// What is wrong with the intent.
    pub flaw: Flaw,
    /// The payload: `p{n % 3}`, or this text.
    pub payload: Result<u8, String>,
}

/// The worker appending: its invocation `invocation-{n % 2}`, and its
/// session id (`session`, or this text: the log refuses an invalid one).
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub struct SourcePick {
    /// Which invocation of the Run.
    pub invocation: u8,
    /// The session id, if not `session`.
    pub session: Option<String>,
}

/// One operation on the log.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// `claim(run)`; `lost`: no worker sees the epoch it issues.
    Claim {
        /// The Run.
        run: RunPick,
        /// Whether the reply is lost.
        lost: bool,
    },
    /// `append(root, source, epoch, pause)`; `lost`: the worker never sees
    /// the answer, and [`Op::Retry`] sends it again.
    Append {
        /// The Run (the source's `run_id`) within its root Run.
        run: RunPick,
        /// The worker.
        source: SourcePick,
        /// The epoch it carries.
        epoch: EpochPick,
        /// The pause.
        pause: PausePick,
        /// Whether the reply is lost.
        lost: bool,
    },
    /// The last append whose reply was lost, sent again unchanged.
    Retry,
    /// `facts(run)`.
    Facts(RunPick),
    /// The stores restart: SQLite's file is closed and opened again.
    Reopen,
    /// `finish(root, source, epoch, outcome)`; `lost`: the worker never
    /// sees the answer, and [`Op::Retry`] sends it again.
    Finish {
        /// The Run (the source's `run_id`) within its root Run.
        run: RunPick,
        /// The worker.
        source: SourcePick,
        /// The epoch it carries.
        epoch: EpochPick,
        /// The outcome: `o{n % 3}`, or this text.
        outcome: Result<u8, String>,
        /// Whether the reply is lost.
        lost: bool,
    },
    /// `retire(root)`: the root Run of this Run (or this id).
    Retire(RunPick),
}

/// The outcome `pick` describes.
pub(super) fn make_outcome(pick: &Result<u8, String>) -> Payload {
    match pick {
        Ok(n) => format!("o{}", n % 3),
        Err(text) => text.clone(),
    }
}

/// The pause `pick` describes, for `source` within `root`.
pub(super) fn make_pause(
    root: &str,
    source: &Invocation,
    pick: &PausePick,
) -> HandoffPause<Payload> {
    let mut intent = HandoffIntent {
        handoff_id: format!("h{}", pick.handoff % 3),
        host_epoch: "host".into(),
        root_run_id: root.to_owned(),
        // The other Run of the set, so that a successor can be claimed,
        // finished and its root retired (G1, G5).
        successor_run_id: if source.run_id == "run-0" {
            "run-1"
        } else {
            "run-0"
        }
        .into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    };
    match &pick.flaw {
        Flaw::None => {}
        Flaw::Field(field, id) => {
            let slot = match field {
                FieldPick::HandoffId => &mut intent.handoff_id,
                FieldPick::HostEpoch => &mut intent.host_epoch,
                FieldPick::RootRunId => &mut intent.root_run_id,
                FieldPick::SuccessorRunId => &mut intent.successor_run_id,
                FieldPick::SuccessorInvocationId => &mut intent.successor_invocation_id,
                FieldPick::ClaimId => &mut intent.claim_id,
            };
            *slot = id.id();
        }
        Flaw::SuccessorIsSourceRun => intent.successor_run_id = source.run_id.clone(),
        Flaw::SuccessorIsSourceInvocation => {
            intent.successor_invocation_id = source.invocation_id.clone();
        }
    }
    let payload = match &pick.payload {
        Ok(n) => format!("p{}", n % 3),
        Err(text) => text.clone(),
    };
    HandoffPause::new(intent, payload)
}

/// An operation with every pick resolved: what is sent to the stores.
#[derive(Clone, Debug)]
pub enum Call {
    /// `claim(root, run)`.
    Claim(String, String),
    /// `append(root, source, epoch, pause)`.
    Append(String, Invocation, Epoch, HandoffPause<Payload>),
    /// `facts(root, run)`.
    Facts(String, String),
    /// Close and reopen.
    Reopen,
    /// `finish(root, source, epoch, outcome)`.
    Finish(String, Invocation, Epoch, Payload),
    /// `retire(root)`.
    Retire(String),
}

impl Call {
    /// The Run the call names, if its ids are valid.
    pub(super) fn run(&self) -> Option<(&str, &str)> {
        let (root, run) = match self {
            Call::Claim(root, run) | Call::Facts(root, run) => (root.as_str(), run.as_str()),
            Call::Append(root, source, ..) | Call::Finish(root, source, ..) => {
                (root.as_str(), source.run_id.as_str())
            }
            Call::Reopen | Call::Retire(_) => return None,
        };
        (id_fault(root).is_none() && id_fault(run).is_none()).then_some((root, run))
    }
}
