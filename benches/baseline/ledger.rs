//! The original ledger: one `HashMap` of entries scanned and sorted on every
//! take, a `HashSet` of delivered ids that grows forever, `Notify` for
//! arrivals.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

#[derive(Clone, Debug)]
pub struct Live {
    pub task_id: String,
    pub capsule: String,
    pub version: String,
    pub child_session_id: String,
    pub child_workdir: String,
    pub started: Instant,
    pub arrived: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Delivered,
    AlreadyDelivered,
    NotOutstanding,
}

#[derive(Default)]
struct Inner {
    task_id: Option<String>,
    entries: HashMap<String, Live>,
    delivered: HashSet<String>,
}

#[derive(Default)]
pub struct Ledger {
    inner: Mutex<Inner>,
    arrival: Notify,
}

/// A residue row, cloned under the lock as the original did.
#[derive(Clone, Debug)]
pub struct Row {
    pub delegation_id: String,
    pub capsule: String,
    pub version: String,
    pub child_session_id: String,
    pub child_workdir: String,
}

impl Ledger {
    pub fn scope_task(&self, task: &str) {
        let mut inner = self.inner.lock().unwrap();
        inner.task_id = Some(task.to_owned());
        inner.entries.clear();
    }

    pub fn register(&self, id: String, live: Live) -> bool {
        let mut inner = self.inner.lock().unwrap();
        if inner.task_id.as_deref() != Some(live.task_id.as_str()) {
            return false;
        }
        inner.entries.insert(id, live);
        true
    }

    pub fn arrive(&self, id: &str) -> Arrival {
        let mut inner = self.inner.lock().unwrap();
        if inner.delivered.contains(id) {
            return Arrival::AlreadyDelivered;
        }
        let Some(entry) = inner.entries.get_mut(id) else {
            return Arrival::NotOutstanding;
        };
        if entry.arrived {
            return Arrival::AlreadyDelivered;
        }
        entry.arrived = true;
        drop(inner);
        self.arrival.notify_one();
        Arrival::Delivered
    }

    pub fn counts(&self) -> (usize, usize) {
        let inner = self.inner.lock().unwrap();
        let arrived = inner.entries.values().filter(|e| e.arrived).count();
        (inner.entries.len() - arrived, arrived)
    }

    pub async fn wait_for_arrival(&self) {
        self.arrival.notified().await;
    }

    pub fn take_arrived(&self) -> Vec<(String, Live)> {
        self.take_where(|e| e.arrived)
    }

    pub fn take_overdue(&self, bound: Duration, now: Instant) -> Vec<(String, Live)> {
        self.take_where(|e| {
            !e.arrived && e.started.checked_add(bound).is_some_and(|due| due <= now)
        })
    }

    pub fn next_overdue(&self, bound: Duration) -> Option<Instant> {
        let inner = self.inner.lock().unwrap();
        inner
            .entries
            .values()
            .filter(|e| !e.arrived)
            .filter_map(|e| e.started.checked_add(bound))
            .min()
    }

    fn take_where(&self, take: impl Fn(&Live) -> bool) -> Vec<(String, Live)> {
        let mut inner = self.inner.lock().unwrap();
        let ids: Vec<String> = inner
            .entries
            .iter()
            .filter(|(_, e)| take(e))
            .map(|(id, _)| id.clone())
            .collect();
        let mut taken: Vec<(String, Live)> = ids
            .into_iter()
            .filter_map(|id| {
                let entry = inner.entries.remove(&id)?;
                if entry.arrived {
                    inner.delivered.insert(id.clone());
                }
                Some((id, entry))
            })
            .collect();
        taken.sort_by(|a, b| a.0.cmp(&b.0));
        taken
    }

    pub fn live(&self) -> Vec<Row> {
        // As the original: clones every row under the lock, sorts after.
        let mut rows: Vec<Row> = self
            .inner
            .lock()
            .unwrap()
            .entries
            .iter()
            .map(|(id, e)| Row {
                delegation_id: id.clone(),
                capsule: e.capsule.clone(),
                version: e.version.clone(),
                child_session_id: e.child_session_id.clone(),
                child_workdir: e.child_workdir.clone(),
            })
            .collect();
        rows.sort_by(|a, b| a.delegation_id.cmp(&b.delegation_id));
        rows
    }
}

pub fn shared() -> Arc<Ledger> {
    Arc::new(Ledger::default())
}
