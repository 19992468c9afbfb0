//! The global state of the ledger system: the real [`Ledger`] (interned by
//! the model: the state holds its index), the clock, the children's
//! [`World`], the actors' handles and the ghost variables recording what
//! was delivered, ended and taken; and the transition labels.

use std::rc::Rc;
use std::time::Duration;

use baton::ledger::core::{self, Ledger};

use super::child::{ModelChild, World};

/// The ledger as the model keeps it: data is the index of the task the
/// delegation was registered for; the clock counts whole seconds.
pub type L = Ledger<u8, ModelChild, Duration>;
/// A ledger event.
pub type Event = core::Event<u8, ModelChild, Duration>;
/// What a ledger event returned.
pub type Outcome = core::Outcome<u8, ModelChild, Duration>;
/// An entry taken out of the ledger.
pub type Taken = core::Taken<u8, ModelChild, Duration>;

/// The most delegation ids a state has room for.
pub const MAX_IDS: u8 = 3;
/// The most children in all (`ids × children`).
pub const MAX_CHILDREN: u8 = 6;
/// The most `scope_task` calls.
pub const MAX_SCOPES: u8 = 3;
/// The most clock ticks.
pub const MAX_TICKS: u8 = 3;
/// The most `wait_for_arrival` waiters.
pub const MAX_WAITERS: u8 = 2;
/// The fairness class of `wait_for_arrival` waiter `w` is `WAITER + w`.
pub const WAITER: u8 = 0;

/// Which actors a configuration has, and how far each may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Setup {
    /// Delegation ids `d0`, `d1`, … (1..=[`MAX_IDS`]).
    pub ids: u8,
    /// Children each id may be given (`ids × children` ≤ [`MAX_CHILDREN`]).
    pub children: u8,
    /// `scope_task` calls (1..=[`MAX_SCOPES`]); the `k`-th scopes task
    /// `k % 2`, so a scope change also changes the task.
    pub scopes: u8,
    /// Clock ticks (≤ [`MAX_TICKS`]); delegations start at the current tick.
    pub ticks: u8,
    /// `take_overdue`'s bound, in ticks.
    pub bound: u8,
    /// `wait_for_arrival` waiters (0..=[`MAX_WAITERS`]), each with one
    /// wait at a time; two are needed for `notify_one` to differ from one
    /// coalescing wake-up.
    pub waiters: u8,
    /// A registration with an invalid id.
    pub bad_input: bool,
}

/// What the ghost says delegation id `d` is, per SPEC §2 (independent of
/// the ledger's own bookkeeping).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Held {
    /// Not registered in this scope, or taken before it arrived: `arrive`
    /// is `NotOutstanding`.
    Gone,
    /// Registered, outcome not delivered yet.
    Outstanding,
    /// Delivered; the entry is still in the ledger.
    Arrived,
    /// Delivered and taken: `arrive` is `AlreadyDelivered` until the scope
    /// ends.
    Taken,
}

/// The global state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LSys {
    /// The real ledger, by its index in the model's table of ledgers (two
    /// states have the same index exactly when their ledgers are equal).
    pub ledger: u32,
    /// The clock, in ticks.
    pub now: u8,
    /// What the children are doing (and the `ended` ghost).
    pub world: World,
    /// `scope_task` calls made so far: the next scope's token.
    pub issued: u8,
    /// The live `DelegationScope` handles, one bit per token.
    pub scopes: u8,
    /// The waiters whose `wait_for_arrival` is pending, one bit each.
    pub waiting: u8,
    /// Ghost (D6): wake-ups `Delivered` gave to pending waits and no wait
    /// has taken yet (SPEC §2: one per arrival, while a pending wait has
    /// none).
    pub given: u8,
    /// Ghost (D6): a `Delivered` whose wake-up no pending wait could take,
    /// stored for the next wait, in this scope.
    pub owed: bool,
    /// Ghost: each id's SPEC state.
    pub ids: [Held; MAX_IDS as usize],
    /// Ghost: children given to `adopt`, one bit each.
    pub handed: u8,
    /// Ghost: children whose entry was taken after it arrived (their
    /// outcome was delivered and consumed: nothing to end, D3).
    pub finished: u8,
}

/// What an actor did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Act {
    /// The task runner scopes the next task (`scope_task`).
    ScopeTask,
    /// The `DelegationScope` with this token is dropped (`end_scope`).
    DropScope(u8),
    /// Delegation `id` is registered for task `task`, started now.
    Register(u8, u8),
    /// A delegation with an invalid (empty) id is registered.
    RegisterInvalid,
    /// Delegation `id` is given its next child.
    Adopt(u8),
    /// Delegation `id`'s outcome arrives.
    Arrive(u8),
    /// Someone else begins ending this child (the world flips its bit).
    EndedElsewhere(u8),
    /// Delegation `id` is discarded.
    Discard(u8),
    /// `take_arrived`.
    TakeArrived,
    /// `take_overdue(bound, now)`.
    TakeOverdue,
    /// `take_all`.
    TakeAll,
    /// The clock ticks.
    Tick,
    /// Waiter `w` makes a `wait_for_arrival` future and polls it
    /// (`begin_wait`).
    StartWait(u8),
    /// Waiter `w`'s pending future is polled again (`poll_wait`).
    PollWait(u8),
    /// Waiter `w`'s pending future is dropped (`drop_wait`).
    DropWait(u8),
}

/// One transition: the act, and the real event with the real outcome.
#[derive(Clone, Debug)]
pub struct LStep {
    /// What the actor did.
    pub act: Act,
    /// The ledger event it fed, if any.
    pub event: Option<Rc<Event>>,
    /// What `step` returned.
    pub outcome: Option<Rc<Outcome>>,
}

/// Delegation id `d`'s name.
pub fn name(d: u8) -> String {
    format!("d{d}")
}

/// The index of a delegation named by [`name`].
pub fn index(name: &str) -> u8 {
    name.strip_prefix('d')
        .and_then(|d| d.parse().ok())
        .expect("the model registers only d0, d1, …")
}

/// Task `t`'s name.
pub fn task(t: u8) -> String {
    format!("task-{t}")
}

/// A clock reading.
pub fn at(tick: u8) -> Duration {
    Duration::from_secs(tick.into())
}

impl Setup {
    /// The initial state: an empty ledger (always the model's ledger 0), no
    /// scope, the clock at 0.
    pub fn initial(&self) -> LSys {
        LSys {
            ledger: 0,
            now: 0,
            world: World::default(),
            issued: 0,
            scopes: 0,
            waiting: 0,
            given: 0,
            owed: false,
            ids: [Held::Gone; MAX_IDS as usize],
            handed: 0,
            finished: 0,
        }
    }

    /// The `k`-th child of delegation `d`.
    pub fn child(&self, d: u8, k: u8) -> ModelChild {
        ModelChild(d * self.children + k)
    }

    /// The number of pending waits in `s`.
    pub fn pending(s: &LSys) -> u8 {
        s.waiting.count_ones() as u8
    }

    /// The children handed to delegation `d` so far.
    pub fn handed_to(&self, s: &LSys, d: u8) -> u8 {
        (0..self.children)
            .filter(|&k| s.handed & self.child(d, k).bit() != 0)
            .count() as u8
    }
}
