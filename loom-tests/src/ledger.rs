//! The delegation ledger, delegations and children the ledger models use.
//!
//! A model shares its [`Delegations`] between loom threads by a
//! `std::sync::Arc` (loom does not see it, so it adds no interleavings; the
//! ledger's own lock is a loom lock). A [`Counted`] child counts its endings
//! in `std` atomics for the same reason: the adapter ends children outside
//! its lock, after taking them out under it, so only the count matters, and
//! loom runs one thread at a time, so the count is exact.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use baton::ledger::{Child, Delegation, DelegationScope, Delegations};

/// The task scoped first.
pub const TASK_A: &str = "tsk_a";
/// The task scoped next.
pub const TASK_B: &str = "tsk_b";

/// A delegation of `task`, started at `started` (one `Instant` per model,
/// read before loom starts, so every execution sees the same data).
pub fn delegation(task: &str, started: Instant) -> Delegation {
    Delegation {
        task_id: task.into(),
        capsule: "worker".into(),
        version: "0.1.0".into(),
        child_session_id: "ses_child".into(),
        child_workdir: "/tmp/child".into(),
        started,
    }
}

/// A launched child that counts how often it was asked to end.
#[derive(Debug, Default)]
pub struct Counted {
    ended: AtomicUsize,
}

impl Counted {
    /// A fresh child, never ended.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// How often `begin_ending` was called on it.
    pub fn ended(&self) -> usize {
        self.ended.load(Ordering::SeqCst)
    }

    /// The ledger's handle on this child.
    pub fn handle(self: &Arc<Self>) -> Box<dyn Child + Send + Sync> {
        Box::new(Handle(Arc::clone(self)))
    }
}

struct Handle(Arc<Counted>);

impl Child for Handle {
    fn begin_ending(&self) {
        self.0.ended.fetch_add(1, Ordering::SeqCst);
    }

    fn is_being_ended(&self) -> bool {
        self.0.ended() > 0
    }
}

/// Set-up: a ledger with [`TASK_A`] in scope and, for each id, a delegation
/// of it registered and given a fresh child; returns the children in the
/// order of `ids`.
pub fn scoped(
    ids: &[&str],
    started: Instant,
) -> (Arc<Delegations>, DelegationScope, Vec<Arc<Counted>>) {
    let ledger = Delegations::new();
    let scope = ledger.scope_task(TASK_A).unwrap();
    let children = ids
        .iter()
        .map(|id| {
            ledger
                .register(id, delegation(TASK_A, started))
                .expect("the set-up registers in scope");
            let child = Counted::new();
            ledger.adopt(id, child.handle());
            child
        })
        .collect();
    (Arc::new(ledger), scope, children)
}

/// The ids of the live delegations, in id order.
pub fn live_ids(ledger: &Delegations) -> Vec<String> {
    ledger.live().iter().map(|(id, _)| id.to_string()).collect()
}
