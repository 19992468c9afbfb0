//! An operation of [`SqliteLog`](super::SqliteLog) as a value, and what it
//! answers: what its blocking, async and caller's-transaction forms all
//! run, through one body (`SqliteLog::locked`).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::durable::contract::{
    Claim, Epoch, LogError, Receipt, Retirement, check_append, check_finish, check_root, check_run,
    encode_checked,
};
use crate::facts::{HandoffPause, Invocation};

/// A write of the log, its arguments borrowed.
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
    },
    Finish {
        root_run_id: &'a str,
        source: &'a Invocation,
        epoch: Epoch,
        outcome: &'a P,
    },
    Retire {
        root_run_id: &'a str,
    },
}

impl<P: PartialEq + Serialize + DeserializeOwned> Op<'_, P> {
    /// The checks of the input, and the JSON of what the operation writes
    /// (G2: it reads back equal; empty for a claim and a retirement, which
    /// write none): nothing is read or written before they pass.
    pub(super) fn checked(&self) -> Result<String, LogError> {
        match *self {
            Op::Claim {
                root_run_id,
                run_id,
            } => check_run(root_run_id, run_id).map(|()| String::new()),
            Op::Append {
                root_run_id,
                source,
                pause,
                ..
            } => {
                check_append(root_run_id, source, pause)?;
                encode_checked(pause)
            }
            Op::Finish {
                root_run_id,
                source,
                outcome,
                ..
            } => {
                check_finish(root_run_id, source)?;
                encode_checked(outcome)
            }
            Op::Retire { root_run_id } => check_root(root_run_id).map(|()| String::new()),
        }
    }
}

/// What a write answered.
pub(super) enum Answer<P> {
    Claim(Claim<P>),
    /// An append's or a finish's.
    Receipt(Receipt),
    Retirement(Retirement),
}

impl<P> Answer<P> {
    pub(super) fn claim(self) -> Result<Claim<P>, LogError> {
        match self {
            Answer::Claim(claim) => Ok(claim),
            Answer::Receipt(_) | Answer::Retirement(_) => Err(another_kind()),
        }
    }

    pub(super) fn receipt(self) -> Result<Receipt, LogError> {
        match self {
            Answer::Receipt(receipt) => Ok(receipt),
            Answer::Claim(_) | Answer::Retirement(_) => Err(another_kind()),
        }
    }

    pub(super) fn retirement(self) -> Result<Retirement, LogError> {
        match self {
            Answer::Retirement(retirement) => Ok(retirement),
            Answer::Claim(_) | Answer::Receipt(_) => Err(another_kind()),
        }
    }
}

/// An operation answered with another operation's kind of answer: a slip
/// in the log's own code, reported rather than panicking.
fn another_kind() -> LogError {
    LogError::Unavailable("the log answered an operation with another's kind of answer".into())
}
