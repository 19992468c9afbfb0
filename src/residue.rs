//! The residue report (SPEC §4): a snapshot of work still running when a
//! task ends, as an A2A `Artifact` with one JSON data part per item.

use serde::{Deserialize, Serialize};

use crate::ledger::Delegations;

pub mod a2a;

/// The residue artifact's id and name.
pub const RESIDUE_ARTIFACT: &str = "residue";

/// Shell work started detached from the task, still running.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DetachedWork {
    /// The work's id.
    pub work_id: String,
    /// The program run.
    pub binary: String,
    /// The command line.
    pub command: String,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_at_ms: u64,
}

/// One piece of work still running. Serialised with the original runtime's
/// field names and a `kind` of `detached_shell` or `delegation`.
///
/// `#[non_exhaustive]`: a later version may report other kinds of work.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResidueItem {
    /// Detached shell work.
    DetachedShell {
        /// The work's id.
        work_id: String,
        /// The program run.
        binary: String,
        /// The command line.
        command: String,
        /// When it started, in milliseconds since the Unix epoch.
        started_at_ms: u64,
    },
    /// A live delegation.
    Delegation {
        /// The delegation's id.
        delegation_id: String,
        /// The capsule it runs.
        capsule: String,
        /// The capsule's version.
        version: String,
        /// The child's session.
        child_session_id: String,
        /// The child's working directory.
        child_workdir: String,
    },
}

impl ResidueItem {
    /// The item's id (work id or delegation id).
    pub fn id(&self) -> &str {
        match self {
            Self::DetachedShell { work_id, .. } => work_id,
            Self::Delegation { delegation_id, .. } => delegation_id,
        }
    }

    /// The item's JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        // A struct of strings and integers always serialises.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// A snapshot of work still running: detached shell work sorted by id, then
/// live delegations sorted by id.
///
/// ```
/// use std::time::Instant;
///
/// use baton::ledger::{Delegation, Delegations};
/// use baton::residue::{DetachedWork, Residue};
///
/// let ledger = Delegations::new();
/// # let _scope = ledger.scope_task("task-1").unwrap();
/// # ledger.register("child-1", Delegation {
/// #     task_id: "task-1".into(), capsule: "researcher".into(), version: "1.0.0".into(),
/// #     child_session_id: "session-child".into(), child_workdir: "/tmp/child".into(),
/// #     started: Instant::now(),
/// # }).unwrap();
/// let shell = DetachedWork {
///     work_id: "work-1".into(),
///     binary: "sleep".into(),
///     command: "sleep 60".into(),
///     started_at_ms: 1_700_000_000_000,
/// };
/// let residue = Residue::snapshot([shell], &ledger);
/// assert_eq!(residue.detached_work_ids(), ["work-1"]);
/// assert_eq!(residue.delegation_ids(), ["child-1"]);
/// let artifact = residue.into_artifact().expect("work is still running");
/// assert_eq!(artifact.parts.len(), 2); // one data part per item
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Residue {
    items: Vec<ResidueItem>,
}

impl Residue {
    /// Takes the snapshot.
    pub fn snapshot(
        detached: impl IntoIterator<Item = DetachedWork>,
        delegations: &Delegations,
    ) -> Self {
        let mut work: Vec<DetachedWork> = detached.into_iter().collect();
        work.sort_by(|a, b| a.work_id.cmp(&b.work_id));
        let mut items: Vec<ResidueItem> = work
            .into_iter()
            .map(|work| ResidueItem::DetachedShell {
                work_id: work.work_id,
                binary: work.binary,
                command: work.command,
                started_at_ms: work.started_at_ms,
            })
            .collect();
        // `live()` is already in id order; its strings are copied here,
        // outside the ledger's lock.
        let live = delegations.live();
        items.extend(live.iter().map(|(id, delegation)| ResidueItem::Delegation {
            delegation_id: id.to_string(),
            capsule: delegation.capsule.clone(),
            version: delegation.version.clone(),
            child_session_id: delegation.child_session_id.clone(),
            child_workdir: delegation.child_workdir.clone(),
        }));
        Self { items }
    }

    /// The items, in report order.
    pub fn items(&self) -> &[ResidueItem] {
        &self.items
    }

    /// Whether nothing is left running.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The ids of the detached work, in report order.
    pub fn detached_work_ids(&self) -> Vec<&str> {
        self.ids(|item| matches!(item, ResidueItem::DetachedShell { .. }))
    }

    /// The ids of the live delegations, in report order.
    pub fn delegation_ids(&self) -> Vec<&str> {
        self.ids(|item| matches!(item, ResidueItem::Delegation { .. }))
    }

    fn ids(&self, keep: fn(&ResidueItem) -> bool) -> Vec<&str> {
        self.items
            .iter()
            .filter(|item| keep(item))
            .map(ResidueItem::id)
            .collect()
    }

    /// `None` when nothing is left, else the A2A artifact `residue` with one
    /// `application/json` data part per item.
    pub fn into_artifact(self) -> Option<a2a::Artifact> {
        if self.items.is_empty() {
            return None;
        }
        let parts = self
            .items
            .iter()
            .map(|item| a2a::Part::data(item.to_json()))
            .collect();
        Some(a2a::Artifact::named(RESIDUE_ARTIFACT, parts))
    }
}
