//! Retention a fleet can run (SPEC §6.1, G5): retiring, in bounded
//! batches, every root Run whose work ended before a given time, without
//! naming each root. [`sweep_step`] is the pure rule a store applies to each
//! root a batch looks at; [`Sweep`] and [`SweepCursor`] are what a batch
//! answers and where the next one goes on from.
//!
//! A batch looks at the roots that have a finished Run whose end is before
//! the cut-off, oldest end first (each store keeps an index on the finish
//! time, so a batch reads only what it looks at), at most `limit` of them,
//! after the cursor it was given. For each it applies the one-root rule
//! ([`retire_step`]) under the same locks as `retire`, and also requires
//! the root's latest end (of any Run of it, handed off or finished) to be
//! before the cut-off. A root whose work has not ended, or ended after the
//! cut-off, is kept; the cursor moves past it, so a batch always makes
//! progress and a pass over every candidate ends.
//!
//! A chain of handoffs ends in a finish, so every root whose work ended is
//! found through a finished Run — except a root whose Runs only ever handed
//! off to one another (a cycle back to a Run already handed off), which is
//! retired by name.

use std::collections::HashSet;
use std::time::SystemTime;

use super::contract::{LogError, Retirement};

use super::fence::{Fate, retire_step};

/// Where a sweep goes on from: the end time and the root Run of the last
/// candidate a batch looked at. Batches look at candidates in the order
/// of this pair.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SweepCursor {
    /// The end time of the finished Run the batch looked at last.
    pub ended_at: SystemTime,
    /// Its root Run.
    pub root_run_id: String,
}

/// What one batch of a sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[must_use = "a sweep says where the next batch goes on from"]
pub struct Sweep {
    /// The root Runs retired by this batch (each now a tombstone).
    pub retired: usize,
    /// Their ids, in the order the batch retired them (for an operator's
    /// audit log, or a checker's history).
    pub roots: Vec<String>,
    /// The Runs their retirement removed.
    pub runs: usize,
    /// The root Runs the batch looked at and kept: their work has not
    /// ended (a Run, or a successor a pause names, is not final), or it
    /// ended at or after the cut-off.
    pub kept: usize,
    /// Where the next batch goes on from; `None` once the batch looked at
    /// the last candidate there was.
    pub next: Option<SweepCursor>,
}

/// What a sweep does with one root Run it looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SweepStep {
    /// The root's work ended before the cut-off: retire it, as `retire`
    /// does (its rows go, one tombstone stays); this many Runs are removed.
    Retire {
        /// How many Runs are removed.
        runs: usize,
    },
    /// Its work has not ended, or ended at or after the cut-off: keep it,
    /// writing nothing.
    Keep,
    /// It is retired already (another sweep or `retire` came first):
    /// nothing to do, and not counted.
    Gone,
}

/// The rule of a sweep for one root Run, from what the log holds under it
/// read inside the retiring transaction (as [`retire_step`] reads it) and
/// the latest end time of its Runs (`None` if none of them is final).
///
/// ```
/// use std::time::{Duration, SystemTime};
///
/// use baton::durable::{Fate, SweepStep, sweep_step};
///
/// let cut_off = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
/// let late = cut_off + Duration::from_secs(1);
/// assert_eq!(sweep_step::<u32>("root", false, [("run", Fate::Open)], None, cut_off)?, SweepStep::Keep);
/// assert_eq!(sweep_step::<u32>("root", true, [], None, cut_off)?, SweepStep::Gone);
/// assert_eq!(sweep_step::<u32>("root", false, [], Some(late), cut_off)?, SweepStep::Keep);
/// # Ok::<(), baton::durable::LogError>(())
/// ```
///
/// # Errors
///
/// What [`retire_step`] refuses other than a root whose work has not
/// ended (`RunOpen`, `NothingToRetire`: kept): none today, but a store's
/// own errors (`Corrupt`) stop the batch before this rule is reached.
pub fn sweep_step<'a, P: 'a>(
    root_run_id: &str,
    retired: bool,
    runs: impl IntoIterator<Item = (&'a str, Fate<'a, P>)>,
    latest_end: Option<SystemTime>,
    before: SystemTime,
) -> Result<SweepStep, LogError> {
    if retired {
        return Ok(SweepStep::Gone);
    }
    match latest_end {
        Some(ended_at) if ended_at < before => {}
        _ => return Ok(SweepStep::Keep),
    }
    match retire_step(root_run_id, retired, runs) {
        Ok(Retirement::Retired { runs }) => Ok(SweepStep::Retire { runs }),
        Ok(Retirement::AlreadyRetired) => Ok(SweepStep::Gone),
        Err(LogError::RunOpen { .. } | LogError::NothingToRetire { .. }) => Ok(SweepStep::Keep),
        Err(error) => Err(error),
    }
}

impl Sweep {
    /// Counts what `step` did to the root `root_run_id`.
    pub(crate) fn count(&mut self, root_run_id: &str, step: SweepStep) {
        match step {
            SweepStep::Retire { runs } => {
                self.retired += 1;
                self.runs += runs;
                self.roots.push(root_run_id.to_owned());
            }
            SweepStep::Keep => self.kept += 1,
            SweepStep::Gone => {}
        }
    }
}

/// The candidates a batch looks at, from `(end time, root Run)` pairs of
/// finished Runs ended before the cut-off and after `from`, in order:
/// each root once (its first pair), at most `limit` pairs read, and where
/// the next batch goes on from (`None` if fewer than `limit` were given,
/// so none is left).
pub(crate) fn candidates(
    pairs: Vec<(SystemTime, String)>,
    limit: usize,
) -> (Vec<String>, Option<SweepCursor>) {
    let next = (pairs.len() >= limit && limit > 0).then(|| {
        let (ended_at, root_run_id) = pairs[pairs.len() - 1].clone();
        SweepCursor {
            ended_at,
            root_run_id,
        }
    });
    let mut seen = HashSet::with_capacity(pairs.len());
    let roots = pairs
        .into_iter()
        .map(|(_, root)| root)
        .filter(|root| seen.insert(root.clone()))
        .collect();
    (roots, next)
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
