//! The collector: a task's child delegations, each outcome delivered once.

use std::collections::HashMap;
use std::time::Instant;

use baton::facts::IdError;
use baton::ledger::{Arrival, Delegation, DelegationScope, Delegations, RegisterError};

use crate::invariant;
use crate::sync::{Mutex, lock};

/// A child's outcome as delivered to the parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The child reported this result.
    Done(u32),
    /// The child had not reported when the task shut down; it was ended.
    Ended,
}

/// One outcome delivered to the parent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Delivery {
    /// The child delegation's id.
    pub child: String,
    /// Its outcome.
    pub outcome: Outcome,
}

/// The child delegations of one task. Share it (`Arc`) between the
/// children's reporting threads and the parent.
pub struct Collector {
    ledger: Delegations,
    task: String,
    /// The accepted reports not yet delivered, and the task's scope until
    /// shutdown. Its lock spans every ledger call, so a spawn, a report, a
    /// take and the scope's end never come between each other.
    inner: Mutex<Inner>,
}

struct Inner {
    results: HashMap<String, u32>,
    scope: Option<DelegationScope>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("task", &self.task)
            .field("counts", &self.ledger.counts())
            .finish_non_exhaustive()
    }
}

impl Collector {
    /// A collector for the children of `task`.
    ///
    /// # Errors
    ///
    /// [`IdError`] for an invalid task id.
    pub fn new(task: &str) -> Result<Self, IdError> {
        let ledger = Delegations::new();
        let scope = ledger.scope_task(task)?;
        Ok(Self {
            ledger,
            task: task.to_owned(),
            inner: Mutex::new(Inner {
                results: HashMap::new(),
                scope: Some(scope),
            }),
        })
    }

    /// Records that child `id` was launched.
    ///
    /// # Errors
    ///
    /// The ledger's refusal: an invalid or duplicate id, or the task was
    /// shut down.
    pub fn spawn(&self, id: &str) -> Result<(), RegisterError> {
        let _inner = lock(&self.inner);
        self.ledger.register(
            id,
            Delegation {
                task_id: self.task.clone(),
                capsule: "child".into(),
                version: "0.1.0".into(),
                child_session_id: format!("session-{id}"),
                child_workdir: format!("/tmp/{id}"),
                started: Instant::now(),
            },
        )
    }

    /// Child `id` reports `result` (perhaps again, on a retry). `true` if
    /// this report was accepted: the first for a live child.
    pub fn report(&self, id: &str, result: u32) -> bool {
        let mut inner = lock(&self.inner);
        let accepted = self.ledger.arrive(id) == Arrival::Delivered;
        if accepted {
            inner.results.insert(id.to_owned(), result);
        }
        accepted
    }

    /// Delivers the outcomes reported since the last delivery.
    pub fn collect(&self) -> Vec<Delivery> {
        let mut inner = lock(&self.inner);
        self.ledger
            .take_arrived()
            .into_iter()
            .map(|taken| deliver(&mut inner.results, taken.id(), taken.arrived()))
            .collect()
    }

    /// Shuts the task down: delivers every outcome reported and not yet
    /// delivered, and `Ended` for every child that had not reported (the
    /// ledger ends it), then ends the task's scope: later spawns are
    /// refused and later reports ignored.
    pub fn shutdown(&self) -> Vec<Delivery> {
        let mut inner = lock(&self.inner);
        let delivered = self
            .ledger
            .take_all()
            .into_iter()
            .map(|taken| deliver(&mut inner.results, taken.id(), taken.arrived()))
            .collect();
        drop(inner.scope.take());
        delivered
    }

    /// The delegations still outstanding or arrived and not delivered.
    pub fn live(&self) -> usize {
        self.ledger.live().len()
    }
}

/// The delivery of child `id`, taken from the ledger, `arrived` or not.
fn deliver(results: &mut HashMap<String, u32>, id: &str, arrived: bool) -> Delivery {
    let outcome =
        if arrived {
            // Recorded under the same lock as the arrival: never missing.
            Outcome::Done(results.remove(id).unwrap_or_else(|| {
                panic!("{}: {id} arrived with no report recorded", invariant::C3)
            }))
        } else {
            Outcome::Ended
        };
    Delivery {
        child: id.to_owned(),
        outcome,
    }
}
