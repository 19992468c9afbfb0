//! An operation as a value ([`Op`]) and what it answered ([`Answer`]):
//! what the async and the caller's-transaction forms both run.

use std::time::SystemTime;

use crate::durable::contract::{Claim, Epoch, LogError, Receipt, Retirement, RunFacts};
use crate::durable::sweep::SweepStep;
use crate::facts::{HandoffPause, Invocation};

use super::failure::unavailable;

/// What one operation does inside its transaction.
pub(super) enum Op<'a, P> {
    Claim {
        root_run_id: &'a str,
        run_id: &'a str,
    },
    Append {
        root_run_id: &'a str,
        source: &'a Invocation,
        epoch: Epoch,
        pause: &'a HandoffPause<P>,
        json: String,
    },
    Finish {
        root_run_id: &'a str,
        source: &'a Invocation,
        epoch: Epoch,
        outcome: &'a P,
        json: String,
    },
    /// `retire(root)`.
    Retire { root_run_id: &'a str },
    /// A batch of a sweep: each of `roots` looked at against the cut-off
    /// `before`, all in one transaction.
    Sweep {
        roots: &'a [String],
        before: SystemTime,
    },
    Facts {
        root_run_id: &'a str,
        run_id: &'a str,
    },
}

impl<P> Op<'_, P> {
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(super) fn name(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "claim",
            Op::Append { .. } => "append",
            Op::Finish { .. } => "finish",
            Op::Retire { .. } => "retire",
            Op::Sweep { .. } => "sweep",
            Op::Facts { .. } => "facts",
        }
    }

    /// The Run the operation is about (a retirement's: the root Run, and
    /// no Run id).
    pub(super) fn run(&self) -> (&str, &str) {
        match *self {
            Op::Claim {
                root_run_id,
                run_id,
            }
            | Op::Facts {
                root_run_id,
                run_id,
            } => (root_run_id, run_id),
            Op::Append {
                root_run_id,
                source,
                ..
            }
            | Op::Finish {
                root_run_id,
                source,
                ..
            } => (root_run_id, source.run_id.as_str()),
            Op::Retire { root_run_id } => (root_run_id, ""),
            // A batch: its first root, for the events.
            Op::Sweep { roots, .. } => (roots.first().map_or("", String::as_str), ""),
        }
    }
}

/// What an operation answered.
pub(super) enum Answer<P> {
    Claim(Claim<P>),
    /// An append's or a finish's.
    Receipt(Receipt),
    Retire(Retirement),
    /// A sweep's batch: its look at each root, in the batch's order.
    Swept(Vec<SweepStep>),
    Facts(RunFacts<P>),
}

pub(super) fn unexpected<T>() -> Result<T, LogError> {
    Err(unavailable(
        "the log answered another operation's kind of answer",
    ))
}
