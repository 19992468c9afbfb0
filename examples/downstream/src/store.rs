//! The runtime's own canonical log: [`MapLog`], a map under one lock, the
//! store of `baton::durable::HandoffLog`'s docs, generic over the payload.
//! It runs each operation as one transaction around baton's shared pure
//! rule (`claim_step`, `append_step`, `finish_step`, `retire_step`), so it
//! decides as every baton store
//! does — and the test kit holds it to the same contract: its contract
//! suite (`tests/log_contract.rs`) and its log fuzz body (the fuzz target
//! `my_log`).
//!
//! With the cargo feature `planted-store-bug` its append skips the fence:
//! it hands `append_step` the epoch the append carries as the Run's
//! current one, so a zombie's append under a superseded epoch is written
//! (R6, R7). Both checks must catch it (`scripts/downstream` shows them).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use baton::durable::{
    AppendStep, Appended, Claim, Epoch, Fate, Finished, HandoffLog, LogError, Receipt, Retirement,
    RunFacts, RunField, append_step, check_append, check_finish, claim_step, finish_step,
    retire_step,
};
use baton::facts::check_id;
use baton::{HandoffPause, Invocation};

/// What the log holds for one Run: its epoch, its pause row, its finish
/// row.
struct Run<P> {
    epoch: Epoch,
    pause: Option<Appended<P>>,
    finished: Option<Finished<P>>,
}

impl<P> Default for Run<P> {
    fn default() -> Self {
        Run {
            epoch: Epoch::NONE,
            pause: None,
            finished: None,
        }
    }
}

impl<P> Run<P> {
    fn fate(&self) -> Fate<'_, P> {
        match (&self.pause, &self.finished) {
            (Some(pause), _) => Fate::HandedOff(pause),
            (None, Some(finished)) => Fate::Finished(finished),
            (None, None) => Fate::Open,
        }
    }
}

/// The Runs by (root, run), and the retired root Runs' tombstones.
struct Held<P> {
    runs: HashMap<(String, String), Run<P>>,
    retired: HashSet<String>,
}

impl<P> Held<P> {
    /// The Run's epoch and fate, as the write rules read them.
    fn fate_of(&self, key: &(String, String)) -> (Epoch, Fate<'_, P>) {
        if self.retired.contains(&key.0) {
            return (Epoch::NONE, Fate::Retired);
        }
        self.runs
            .get(key)
            .map_or((Epoch::NONE, Fate::Open), |run| (run.epoch, run.fate()))
    }
}

/// A [`HandoffLog`] in memory: one map under one lock (its transaction).
pub struct MapLog<P>(Mutex<Held<P>>);

impl<P> Default for MapLog<P> {
    fn default() -> Self {
        MapLog(Mutex::new(Held {
            runs: HashMap::new(),
            retired: HashSet::new(),
        }))
    }
}

impl<P> MapLog<P> {
    /// The transaction: the map, locked (a panic while it was held left
    /// nothing half-written: every write is one assignment).
    fn held(&self) -> MutexGuard<'_, Held<P>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The Run's key, its ids checked.
fn run_ids(root_run_id: &str, run_id: &str) -> Result<(String, String), LogError> {
    check_id(root_run_id).map_err(|error| LogError::InvalidRun {
        field: RunField::RootRunId,
        error,
    })?;
    check_id(run_id).map_err(|error| LogError::InvalidRun {
        field: RunField::RunId,
        error,
    })?;
    Ok((root_run_id.to_owned(), run_id.to_owned()))
}

/// What `held` holds for the Run `key`.
fn facts_of<P: Clone>(held: &Held<P>, key: &(String, String)) -> RunFacts<P> {
    let mut facts = RunFacts::empty(&key.0, &key.1);
    facts.retired = held.retired.contains(&key.0);
    if let Some(run) = held.runs.get(key) {
        facts.epoch = run.epoch;
        facts.pauses.extend(run.pause.clone());
        facts.finished.clone_from(&run.finished);
    }
    facts
}

impl<P: Clone + PartialEq> HandoffLog<P> for MapLog<P> {
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        let key = run_ids(root_run_id, run_id)?;
        let mut held = self.held();
        let step = claim_step(&facts_of(&held, &key))?;
        if let Some(epoch) = step.write {
            held.runs.entry(key).or_default().epoch = epoch;
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
        let key = (root_run_id.to_owned(), source.run_id.clone());
        let mut held = self.held();
        let (current, fate) = held.fate_of(&key);
        // The planted bug: the append's own epoch taken for the Run's.
        let current = if cfg!(feature = "planted-store-bug") && current != Epoch::NONE {
            epoch
        } else {
            current
        };
        let step = append_step(root_run_id, current, fate, epoch, (source, pause))?;
        if step == AppendStep::Write {
            let row = Appended {
                source: source.clone(),
                pause: pause.clone(),
            };
            held.runs.entry(key).or_default().pause = Some(row);
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
        let key = (root_run_id.to_owned(), source.run_id.clone());
        let mut held = self.held();
        let (current, fate) = held.fate_of(&key);
        let step = finish_step(root_run_id, current, fate, epoch, (source, outcome))?;
        if step == AppendStep::Write {
            let row = Finished {
                source: source.clone(),
                outcome: outcome.clone(),
            };
            held.runs.entry(key).or_default().finished = Some(row);
        }
        Ok(step.receipt())
    }

    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        check_id(root_run_id).map_err(|error| LogError::InvalidRun {
            field: RunField::RootRunId,
            error,
        })?;
        let mut held = self.held();
        let Held { runs, retired } = &mut *held;
        let of_root = runs
            .iter()
            .filter(|((root, _), _)| root == root_run_id)
            .map(|((_, run_id), run)| (run_id.as_str(), run.fate()));
        let step = retire_step(root_run_id, retired.contains(root_run_id), of_root)?;
        if let Retirement::Retired { .. } = step {
            runs.retain(|(root, _), _| root != root_run_id);
            retired.insert(root_run_id.to_owned());
        }
        Ok(step)
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        let key = run_ids(root_run_id, run_id)?;
        Ok(facts_of(&self.held(), &key))
    }
}
