//! [`MemoryLog`]: the canonical log in memory, a store like the others —
//! the contract's traits over the pure rules, each operation under one
//! lock.

use std::time::SystemTime;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::contract::{
    Appended, AsyncHandoffLog, Claim, Epoch, Finished, HandoffLog, LogError, Receipt, Retirement,
    RunFacts, check_append, check_finish, check_root, check_run, encode_checked,
};
use super::fence::{AppendStep, Fate, append_step, claim_step, finish_step, retire_step};
use crate::facts::{HandoffPause, Invocation};
use crate::sync::{Mutex, lock};

/// A [`HandoffLog`] in memory, for tests and examples: "durable" means
/// "in this process". Same rules as every log, each operation under one
/// lock (its transaction).
pub struct MemoryLog<P> {
    held: Mutex<Held<P>>,
}

/// Everything a [`MemoryLog`] holds: the Runs, and the retired root Runs'
/// tombstones.
struct Held<P> {
    runs: Vec<Record<P>>,
    retired: Vec<String>,
}

/// What a [`MemoryLog`] holds for one Run.
struct Record<P> {
    root_run_id: String,
    run_id: String,
    epoch: Epoch,
    pause: Option<Appended<P>>,
    finished: Option<Finished<P>>,
    /// When its fate became final (its pause or its finish was written).
    ended_at: Option<SystemTime>,
}

impl<P> Record<P> {
    fn fate(&self) -> Fate<'_, P> {
        match (&self.pause, &self.finished) {
            (Some(pause), _) => Fate::HandedOff(pause),
            (None, Some(finished)) => Fate::Finished(finished),
            (None, None) => Fate::Open,
        }
    }
}

impl<P> Held<P> {
    fn position(&self, root_run_id: &str, run_id: &str) -> Option<usize> {
        self.runs
            .iter()
            .position(|run| run.root_run_id == root_run_id && run.run_id == run_id)
    }

    fn is_retired(&self, root_run_id: &str) -> bool {
        self.retired.iter().any(|root| root == root_run_id)
    }

    /// Every Run of the root with its fate, as `retire_step` reads them.
    fn fates_of<'a>(
        &'a self,
        root_run_id: &'a str,
    ) -> impl Iterator<Item = (&'a str, Fate<'a, P>)> {
        self.runs
            .iter()
            .filter(move |run| run.root_run_id == root_run_id)
            .map(|run| (run.run_id.as_str(), run.fate()))
    }

    /// Retires the root: its Runs go, its tombstone stays.
    fn remove(&mut self, root_run_id: &str) {
        self.runs.retain(|run| run.root_run_id != root_run_id);
        self.retired.push(root_run_id.to_owned());
    }

    /// The Run's epoch and fate, as the write rules read them.
    fn fate_of(&self, root_run_id: &str, run_id: &str) -> (Epoch, Fate<'_, P>) {
        if self.is_retired(root_run_id) {
            return (Epoch::NONE, Fate::Retired);
        }
        match self.position(root_run_id, run_id) {
            Some(at) => (self.runs[at].epoch, self.runs[at].fate()),
            None => (Epoch::NONE, Fate::Open),
        }
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> RunFacts<P>
    where
        P: Clone,
    {
        let mut facts = RunFacts::empty(root_run_id, run_id);
        facts.retired = self.is_retired(root_run_id);
        if let Some(at) = self.position(root_run_id, run_id) {
            let record = &self.runs[at];
            facts.epoch = record.epoch;
            facts.pauses.extend(record.pause.clone());
            facts.finished.clone_from(&record.finished);
        }
        facts
    }
}

impl<P> MemoryLog<P> {
    /// An empty log.
    pub fn new() -> Self {
        Self {
            held: Mutex::new(Held {
                runs: Vec::new(),
                retired: Vec::new(),
            }),
        }
    }

    /// The number of pauses held, over every Run.
    pub fn len(&self) -> usize {
        lock(&self.held)
            .runs
            .iter()
            .filter(|run| run.pause.is_some())
            .count()
    }

    /// Whether the log holds no pause.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the log keeps (R10): the number of Runs it holds a record for,
    /// and the number of retired root Runs' tombstones.
    pub fn rows(&self) -> (usize, usize) {
        let held = lock(&self.held);
        (held.runs.len(), held.retired.len())
    }
}

impl<P> Default for MemoryLog<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P> std::fmt::Debug for MemoryLog<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (runs, retired) = self.rows();
        f.debug_struct("MemoryLog")
            .field("len", &self.len())
            .field("runs", &runs)
            .field("retired", &retired)
            .finish()
    }
}

impl<P> HandoffLog<P> for MemoryLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned,
{
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        check_run(root_run_id, run_id)?;
        let mut held = lock(&self.held);
        let step = claim_step(&held.facts(root_run_id, run_id))?;
        if let Some(epoch) = step.write {
            match held.position(root_run_id, run_id) {
                Some(at) => held.runs[at].epoch = epoch,
                None => held.runs.push(Record {
                    root_run_id: root_run_id.to_owned(),
                    run_id: run_id.to_owned(),
                    epoch,
                    pause: None,
                    finished: None,
                    ended_at: None,
                }),
            }
        }
        Ok(step.answer)
    }

    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        check_append(root_run_id, source, pause)?;
        encode_checked(pause)?;
        let mut held = lock(&self.held);
        let (current, fate) = held.fate_of(root_run_id, &source.run_id);
        let step = append_step(root_run_id, current, fate, epoch, (source, pause))?;
        // `append_step` writes only under an issued epoch, so the Run has a
        // record.
        if let (AppendStep::Write, Some(at)) = (step, held.position(root_run_id, &source.run_id)) {
            held.runs[at].pause = Some(Appended {
                source: source.clone(),
                pause: pause.clone(),
            });
            held.runs[at].ended_at = Some(SystemTime::now());
        }
        Ok(step.receipt())
    }

    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        check_finish(root_run_id, source)?;
        encode_checked(outcome)?;
        let mut held = lock(&self.held);
        let (current, fate) = held.fate_of(root_run_id, &source.run_id);
        let step = finish_step(root_run_id, current, fate, epoch, (source, outcome))?;
        if let (AppendStep::Write, Some(at)) = (step, held.position(root_run_id, &source.run_id)) {
            held.runs[at].finished = Some(Finished {
                source: source.clone(),
                outcome: outcome.clone(),
            });
            held.runs[at].ended_at = Some(SystemTime::now());
        }
        Ok(step.receipt())
    }

    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        check_root(root_run_id)?;
        let mut held = lock(&self.held);
        let retired = held.is_retired(root_run_id);
        let step = retire_step(root_run_id, retired, held.fates_of(root_run_id))?;
        if let Retirement::Retired { .. } = step {
            held.remove(root_run_id);
        }
        Ok(step)
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        check_run(root_run_id, run_id)?;
        Ok(lock(&self.held).facts(root_run_id, run_id))
    }
}

impl<P> AsyncHandoffLog<P> for MemoryLog<P>
where
    P: PartialEq + Clone + serde::Serialize + serde::de::DeserializeOwned + Send + Sync,
{
    async fn claim_async(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        HandoffLog::claim(self, root_run_id, run_id)
    }

    async fn append_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        HandoffLog::append(self, root_run_id, source, epoch, pause)
    }

    async fn finish_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        HandoffLog::finish(self, root_run_id, source, epoch, outcome)
    }

    async fn retire_async(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        HandoffLog::retire(self, root_run_id)
    }

    async fn facts_async(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        HandoffLog::facts(self, root_run_id, run_id)
    }
}

mod sweep;

#[cfg(test)]
mod edge_tests {
    use super::*;

    /// R6 at the edge, where every store agrees: `MemoryLog` issues its
    /// last epoch at [`Epoch::LAST`] (`i64::MAX`, where `SqliteLog` and
    /// `PostgresLog` stop, their column being a signed 64-bit integer),
    /// then refuses the next claim and writes nothing, as they do.
    #[test]
    fn r6_memory_issues_its_last_epoch_where_the_sql_stores_do() {
        let log: MemoryLog<u32> = MemoryLog::new();
        assert!(matches!(log.claim("root", "run"), Ok(Claim::Owner(e)) if e == Epoch::new(1)));
        // The largest a SQL store's bigint holds, less one.
        let sql_max = i64::MAX.unsigned_abs();
        lock(&log.held).runs[0].epoch = Epoch::new(sql_max - 1);
        assert!(matches!(log.claim("root", "run"), Ok(Claim::Owner(e)) if e.get() == sql_max));
        assert!(matches!(
            log.claim("root", "run"),
            Err(LogError::EpochsExhausted)
        ));
        assert_eq!(log.facts("root", "run").unwrap().epoch, Epoch::LAST);
    }
}
