//! The runtime's own canonical log: [`MapLog`], a map under one lock, the
//! store of `baton::durable::HandoffLog`'s docs, generic over the payload.
//! It runs each operation as one transaction around baton's shared pure
//! rule (`claim_step`, `append_step`), so it decides as every baton store
//! does — and the test kit holds it to the same contract: its contract
//! suite (`tests/log_contract.rs`) and its log fuzz body (the fuzz target
//! `my_log`).
//!
//! With the cargo feature `planted-store-bug` its append skips the fence:
//! it hands `append_step` the epoch the append carries as the Run's
//! current one, so a zombie's append under a superseded epoch is written
//! (R6, R7). Both checks must catch it (`scripts/downstream` shows them).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use baton::durable::{
    AppendStep, Appended, Claim, Epoch, HandoffLog, LogError, Receipt, RunFacts, RunField,
    append_step, check_append, claim_step,
};
use baton::facts::check_id;
use baton::{HandoffPause, Invocation};

/// Per Run (root, run): its epoch and its pause row.
type Runs<P> = HashMap<(String, String), (Epoch, Option<Appended<P>>)>;

/// A [`HandoffLog`] in memory: one map under one lock (its transaction).
pub struct MapLog<P>(Mutex<Runs<P>>);

impl<P> Default for MapLog<P> {
    fn default() -> Self {
        MapLog(Mutex::new(HashMap::new()))
    }
}

impl<P> MapLog<P> {
    /// The transaction: the map, locked (a panic while it was held left
    /// nothing half-written: every write is one assignment).
    fn runs(&self) -> MutexGuard<'_, Runs<P>> {
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

/// What `runs` holds for the Run `key`.
fn facts_of<P: Clone>(runs: &Runs<P>, key: &(String, String)) -> RunFacts<P> {
    let mut facts = RunFacts::empty(&key.0, &key.1);
    if let Some((epoch, pause)) = runs.get(key) {
        facts.epoch = *epoch;
        facts.pauses.extend(pause.clone());
    }
    facts
}

impl<P: Clone + PartialEq> HandoffLog<P> for MapLog<P> {
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        let key = run_ids(root_run_id, run_id)?;
        let mut runs = self.runs();
        let step = claim_step(&facts_of(&runs, &key))?;
        if let Some(epoch) = step.write {
            runs.entry(key).or_insert((Epoch::NONE, None)).0 = epoch;
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
        let mut runs = self.runs();
        let (current, existing) = runs
            .get(&key)
            .map_or((Epoch::NONE, None), |(epoch, row)| (*epoch, row.as_ref()));
        // The planted bug: the append's own epoch taken for the Run's.
        let current = if cfg!(feature = "planted-store-bug") && current != Epoch::NONE {
            epoch
        } else {
            current
        };
        let step = append_step(root_run_id, current, existing, epoch, (source, pause))?;
        if step == AppendStep::Write {
            let row = Appended {
                source: source.clone(),
                pause: pause.clone(),
            };
            runs.entry(key).or_insert((Epoch::NONE, None)).1 = Some(row);
        }
        Ok(step.receipt())
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        let key = run_ids(root_run_id, run_id)?;
        Ok(facts_of(&self.runs(), &key))
    }
}
