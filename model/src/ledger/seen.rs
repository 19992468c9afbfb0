//! What a ledger's public queries answer, read once per distinct ledger
//! (when the model first reaches it): the properties compare these with
//! the ghost.

use std::time::Duration;

use baton::ledger::core::{Counts, Entry};

use super::child::ModelChild;
use super::state::{self, L, MAX_IDS};

/// One entry as [`Ledger::entry`](baton::ledger::core::Ledger::entry)
/// shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeenEntry {
    /// The task it was registered for (its data).
    pub task: u8,
    /// When it started, in ticks.
    pub started: u8,
    /// Whether it arrived.
    pub arrived: bool,
    /// Its child.
    pub child: Option<ModelChild>,
}

impl SeenEntry {
    fn of(entry: &Entry<u8, ModelChild>) -> Self {
        Self {
            task: *entry.data,
            started: u8::try_from(entry.started.as_secs()).expect("few ticks"),
            arrived: entry.arrived,
            child: entry.child,
        }
    }

    /// Whether `taken` is this entry, as it was.
    pub fn is(&self, taken: &state::Taken) -> bool {
        Self::of(&taken.entry) == *self
    }
}

/// What a ledger's public queries answer (`scope`, `entry` of each model
/// id, `live`, `counts`, `delivered_len`, `permit`, `waits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Seen {
    /// The task index in scope and the scope's token.
    pub scope: Option<(u8, u8)>,
    /// `entry(d)` for each model id `d`.
    pub entries: [Option<SeenEntry>; MAX_IDS as usize],
    /// `live().len()`.
    pub live: usize,
    /// The tasks the `live()` entries' data name, one bit each.
    pub live_tasks: u8,
    /// `counts()`.
    pub counts: Counts,
    /// `delivered_len()`.
    pub delivered: usize,
    /// Whether a permit is stored (`permit()`).
    pub permit: bool,
    /// `waits()`: the pending waits and the wake-ups given to them.
    pub waits: (usize, usize),
    /// `next_overdue(bound)`, in ticks.
    pub next_overdue: Option<u8>,
}

impl Seen {
    pub(super) fn of(ledger: &L, ids: u8, bound: u8) -> Self {
        let live = ledger.live();
        Self {
            scope: ledger.scope().map(|(task, token)| {
                let t = task
                    .strip_prefix("task-")
                    .and_then(|t| t.parse().ok())
                    .expect("the model scopes only task-0, task-1");
                (t, u8::try_from(token.get()).expect("few scopes"))
            }),
            entries: std::array::from_fn(|d| {
                let d = d as u8;
                (d < ids)
                    .then(|| ledger.entry(&state::name(d)).map(SeenEntry::of))
                    .flatten()
            }),
            live: live.len(),
            live_tasks: live.iter().fold(0, |acc, (_, task)| acc | 1 << **task),
            counts: ledger.counts(),
            delivered: ledger.delivered_len(),
            permit: ledger.permit(),
            waits: ledger.waits(),
            next_overdue: ledger
                .next_overdue(Duration::from_secs(bound.into()))
                .map(|due| u8::try_from(due.as_secs()).expect("few ticks")),
        }
    }

    /// Whether the ledger is empty in every respect D5 names.
    pub fn empty(&self) -> bool {
        self.live == 0 && self.counts == Counts::default() && self.delivered == 0 && !self.permit
    }

    /// The model ids with an entry that satisfies `keep`, in id order.
    pub fn ids_where(&self, keep: impl Fn(&SeenEntry) -> bool) -> Vec<u8> {
        (0..MAX_IDS)
            .filter(|&d| self.entries[d as usize].as_ref().is_some_and(&keep))
            .collect()
    }
}
