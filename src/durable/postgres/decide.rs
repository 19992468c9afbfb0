//! The pure rules applied to what was read: the write (or refusal)
//! each operation's rule decides, and its parameters.

use std::time::SystemTime;

use serde::de::DeserializeOwned;

use crate::durable::contract::{Appended, Epoch, Finished, Retirement, RunFacts};

use crate::durable::fence::{
    AppendStep, Fate, append_step, claim_step_above, finish_step, retire_step, timeline_floor,
};
use crate::durable::row::corrupt;
use crate::durable::sweep::{SweepStep, sweep_step};
use crate::facts::{HandoffPause, Invocation};

use super::failure::{Failure, column, epoch_of, stored, unavailable};
use super::op::{Answer, Op};
use super::read::{RootRows, decode_finish, decode_pause};
use super::sql::{Layout, Param, Which};

/// What a retirement decided for its root: by name ([`retire_step`]), or
/// in a sweep ([`sweep_step`]).
pub(super) enum RootStep {
    Named(Retirement),
    Swept(SweepStep),
}

impl RootStep {
    /// Whether the root's rows go (and its tombstone is written).
    pub(super) fn removes(&self) -> bool {
        matches!(
            self,
            RootStep::Named(Retirement::Retired { .. }) | RootStep::Swept(SweepStep::Retire { .. })
        )
    }

    pub(super) fn answer<P>(self) -> Answer<P> {
        match self {
            RootStep::Named(retirement) => Answer::Retire(retirement),
            RootStep::Swept(step) => Answer::Swept(vec![step]),
        }
    }
}

/// The rule of `retire` ([`retire_step`]), or with `before` a sweep's
/// ([`sweep_step`], the latest end of the root's Runs read with them), on
/// what a retirement read: each Run's fate from its pause (first, as every
/// store reads it) or its finish.
pub(super) fn retirement<P>(
    root_run_id: &str,
    rows: RootRows,
    before: Option<SystemTime>,
) -> Result<RootStep, Failure>
where
    P: PartialEq + DeserializeOwned,
{
    let mut latest: Option<SystemTime> = None;
    for (row, at) in rows
        .runs
        .iter()
        .map(|row| (row, 6))
        .chain(rows.pauses.iter().map(|row| (row, 8)))
    {
        let ended: Option<SystemTime> = column(row, at, root_run_id)?;
        latest = latest.max(ended);
    }
    let mut pauses: Vec<(String, Appended<P>)> = Vec::with_capacity(rows.pauses.len());
    for row in &rows.pauses {
        let run_id: String = column(row, 0, root_run_id)?;
        if let Some(pause) = decode_pause(Some(row), 1, root_run_id, &run_id)? {
            pauses.push((run_id, pause));
        }
    }
    let mut runs: Vec<(String, Option<Finished<P>>)> = Vec::with_capacity(rows.runs.len());
    for row in &rows.runs {
        let run_id: String = column(row, 0, root_run_id)?;
        epoch_of(row, 1, &run_id)?;
        let finished = decode_finish(row, 2, &run_id)?;
        runs.push((run_id, finished));
    }
    let fates = runs.iter().map(|(run_id, finished)| {
        let pause = pauses.iter().find(|(of, _)| of == run_id);
        let fate = match (pause, finished) {
            (Some((_, pause)), _) => Fate::HandedOff(pause),
            (None, Some(finished)) => Fate::Finished(finished),
            (None, None) => Fate::Open,
        };
        (run_id.as_str(), fate)
    });
    Ok(match before {
        None => RootStep::Named(retire_step(root_run_id, rows.retired, fates)?),
        Some(before) => RootStep::Swept(sweep_step(
            root_run_id,
            rows.retired,
            fates,
            latest,
            before,
        )?),
    })
}

/// The Run's fate as the write rules read it: retired, handed off (the
/// pause first, as every store reads it), finished, or open.
pub(super) fn fate_of<P>(facts: &RunFacts<P>) -> Fate<'_, P> {
    if facts.retired {
        Fate::Retired
    } else if let Some(pause) = facts.pauses.first() {
        Fate::HandedOff(pause)
    } else if let Some(finished) = &facts.finished {
        Fate::Finished(finished)
    } else {
        Fate::Open
    }
}

/// What a claim, an append or a finish writes, once the rule decided.
#[derive(Clone, Copy)]
pub(super) enum Write {
    /// A takeover: the Run's epoch, from `old` (under its row lock).
    UpdateEpoch { new: i64, old: i64 },
    /// A Run's first claim: its row, under a live root Run, on the
    /// server's timeline `timeline`.
    InsertRun { new: i64, timeline: i64 },
    /// The pause, at the Run's epoch `at`.
    InsertPause { at: i64 },
    /// The finish, at the Run's epoch `at` (under its row lock).
    Finish { at: i64 },
}

impl Write {
    pub(super) fn which(self) -> Which {
        match self {
            Write::UpdateEpoch { .. } => Which::UpdateEpoch,
            Write::InsertRun { .. } => Which::InsertRun,
            Write::InsertPause { .. } => Which::InsertPause,
            Write::Finish { .. } => Which::FinishRun,
        }
    }

    /// The statement's parameters, from the operation's input, for the
    /// statements of `layout`.
    pub(super) fn params<'a, P>(&'a self, op: &'a Op<'a, P>, layout: Layout) -> Vec<Param<'a>> {
        match (self, op) {
            (
                Write::UpdateEpoch { new, old },
                Op::Claim {
                    root_run_id,
                    run_id,
                },
            ) => {
                let params: [Param<'a>; 4] = [root_run_id, run_id, new, old];
                params.to_vec()
            }
            (
                Write::InsertRun { new, timeline },
                Op::Claim {
                    root_run_id,
                    run_id,
                },
            ) => {
                let params: [Param<'a>; 4] = [root_run_id, run_id, new, timeline];
                match layout {
                    Layout::OneServer => params.to_vec(),
                    // Its timeline was read in the same transaction, on
                    // the root's server (see `Sql::new`): not sent again.
                    Layout::ByRootRun => params[..3].to_vec(),
                }
            }
            (
                Write::InsertPause { at },
                Op::Append {
                    root_run_id,
                    source,
                    pause,
                    json,
                    ..
                },
            ) => pause_params(root_run_id, source, pause, json, at).to_vec(),
            (
                Write::Finish { at },
                Op::Finish {
                    root_run_id,
                    source,
                    json,
                    ..
                },
            ) => finish_params(root_run_id, source, json, at).to_vec(),
            // Not reached: `decide` makes each write for its operation.
            _ => Vec::new(),
        }
    }

    /// What the write's count of affected rows means: a first claim that
    /// inserted nothing lost the race for the Run's row (or met a
    /// retirement), to run again; a write under the Run's row lock that
    /// wrote nothing means the store was altered under baton.
    pub(super) fn check(self, count: u64, run_id: &str) -> Result<(), Failure> {
        match (self, count) {
            (_, 1) | (Write::InsertPause { .. }, _) => Ok(()),
            (Write::InsertRun { .. }, _) => Err(Failure::Raced),
            (Write::UpdateEpoch { .. } | Write::Finish { .. }, _) => {
                Err(corrupt(run_id, "the Run's row changed under its row lock").into())
            }
        }
    }
}

/// [`timeline_floor`] of the timeline the server reported (a PostgreSQL
/// `TimeLineID`, read as a `bigint`): one outside `1..=u32::MAX` cannot be
/// a timeline, and is read as the nearest one.
pub(super) fn floor_of(timeline: i64) -> Epoch {
    timeline_floor(u32::try_from(timeline.max(1)).unwrap_or(u32::MAX))
}

/// The rule on the facts read inside the transaction, on the server's
/// `timeline` (read in it; `None` for a read of the facts): the answer,
/// and what to write (`None`: nothing).
pub(super) fn decide<P>(
    op: &Op<'_, P>,
    facts: RunFacts<P>,
    locked: bool,
    timeline: Option<i64>,
) -> Result<(Answer<P>, Option<Write>), Failure>
where
    P: PartialEq + Clone,
{
    match *op {
        Op::Facts { .. } => Ok((Answer::Facts(facts), None)),
        Op::Retire { .. } | Op::Sweep { .. } => {
            Err(unavailable("a retirement has its own transaction").into())
        }
        Op::Claim { .. } => {
            let timeline = timeline.ok_or_else(|| unavailable("a claim read no timeline"))?;
            let step = claim_step_above(&facts, floor_of(timeline))?;
            let Some(epoch) = step.write else {
                return Ok((Answer::Claim(step.answer), None));
            };
            let new = stored(epoch)?;
            let write = if locked {
                Write::UpdateEpoch {
                    new,
                    old: stored(facts.epoch)?,
                }
            } else {
                Write::InsertRun { new, timeline }
            };
            Ok((Answer::Claim(step.answer), Some(write)))
        }
        Op::Append {
            root_run_id,
            source,
            epoch,
            pause,
            ..
        } => {
            let step = append_step(
                root_run_id,
                facts.epoch,
                fate_of(&facts),
                epoch,
                (source, pause),
            )?;
            let write = (step == AppendStep::Write)
                .then(|| stored(epoch).map(|at| Write::InsertPause { at }))
                .transpose()?;
            Ok((Answer::Receipt(step.receipt()), write))
        }
        Op::Finish {
            root_run_id,
            source,
            epoch,
            outcome,
            ..
        } => {
            let step = finish_step(
                root_run_id,
                facts.epoch,
                fate_of(&facts),
                epoch,
                (source, outcome),
            )?;
            let write = (step == AppendStep::Write)
                .then(|| stored(epoch).map(|at| Write::Finish { at }))
                .transpose()?;
            Ok((Answer::Receipt(step.receipt()), write))
        }
    }
}

/// The seven parameters of a finish (`FinishRun`): the Run's key, the
/// source's ids, the outcome's JSON text and the epoch it is written at.
pub(super) fn finish_params<'a>(
    root_run_id: &'a &'a str,
    source: &'a Invocation,
    json: &'a String,
    at: &'a i64,
) -> [Param<'a>; 7] {
    [
        root_run_id,
        &source.run_id,
        &source.session_id,
        &source.turn_id,
        &source.invocation_id,
        json,
        at,
    ]
}

/// The ten parameters of a pause's row, in `baton_handoff_pause`'s column
/// order, as both of its inserts (`InsertPause` and `AppendIfCurrent`)
/// bind them: the Run's key, the source's and the intent's ids, the pause's
/// JSON text and the epoch it is appended under.
pub(super) fn pause_params<'a, P>(
    root_run_id: &'a &'a str,
    source: &'a Invocation,
    pause: &'a HandoffPause<P>,
    json: &'a String,
    at: &'a i64,
) -> [Param<'a>; 10] {
    let intent = &pause.intent;
    [
        root_run_id,
        &source.run_id,
        &source.session_id,
        &source.turn_id,
        &source.invocation_id,
        &intent.handoff_id,
        &intent.successor_run_id,
        &intent.successor_invocation_id,
        json,
        at,
    ]
}
