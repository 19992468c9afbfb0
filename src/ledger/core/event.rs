//! The ledger's events as data, for drivers that feed it a sequence.

use std::time::Duration;

use crate::facts::IdError;

use super::{Adoption, Arrival, Child, Ledger, Moment, RegisterError, ScopeToken, Taken, Waited};

/// An event of SPEC §2, for drivers that feed the ledger a sequence (the
/// model checker, the fuzzer). Each maps to one method of [`Ledger`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event<D, C, T = Duration> {
    /// [`Ledger::scope_task`]
    ScopeTask(String),
    /// [`Ledger::end_scope`]
    EndScope(ScopeToken),
    /// [`Ledger::register`]
    Register {
        /// The delegation's id.
        id: String,
        /// Its task.
        task: String,
        /// Its data.
        data: D,
        /// When it started.
        started: T,
    },
    /// [`Ledger::adopt`]
    Adopt {
        /// The delegation's id.
        id: String,
        /// Its child.
        child: C,
    },
    /// [`Ledger::discard`]
    Discard(String),
    /// [`Ledger::arrive`]
    Arrive(String),
    /// [`Ledger::begin_wait`]: a `wait_for_arrival`'s first poll.
    BeginWait,
    /// [`Ledger::poll_wait`]: a pending `wait_for_arrival` polled again.
    PollWait,
    /// [`Ledger::drop_wait`]: a pending `wait_for_arrival` dropped.
    DropWait,
    /// [`Ledger::take_arrived`]
    TakeArrived,
    /// [`Ledger::take_overdue`]
    TakeOverdue {
        /// The bound.
        bound: Duration,
        /// The time now.
        now: T,
    },
    /// [`Ledger::take_all`]
    TakeAll,
}

/// What an [`Event`] returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[must_use = "an outcome may carry children to end"]
pub enum Outcome<D, C, T = Duration> {
    /// A new scope, and what the previous one left.
    Scoped(ScopeToken, Vec<Taken<D, C, T>>),
    /// `scope_task` refused an invalid task id; nothing changed.
    ScopeRefused(IdError),
    /// The scope ended (`Some`) or the token was stale (`None`).
    ScopeEnded(Option<Vec<Taken<D, C, T>>>),
    /// The result of `register`.
    Registered(Result<(), RegisterError>),
    /// The result of `adopt`.
    Adopted(Adoption<C>),
    /// The result of `arrive`.
    Arrived(Arrival),
    /// What a wait's event decided.
    Waited(Waited),
    /// Entries taken (`discard`, `take_*`), in id order.
    Took(Vec<Taken<D, C, T>>),
}

/// Feeds `event` to `ledger`.
pub fn step<D, C: Child, T: Moment>(
    ledger: &mut Ledger<D, C, T>,
    event: Event<D, C, T>,
) -> Outcome<D, C, T> {
    match event {
        Event::ScopeTask(task) => match ledger.scope_task(task) {
            Ok((token, left)) => Outcome::Scoped(token, left),
            Err(error) => Outcome::ScopeRefused(error),
        },
        Event::EndScope(token) => Outcome::ScopeEnded(ledger.end_scope(token)),
        Event::Register {
            id,
            task,
            data,
            started,
        } => Outcome::Registered(ledger.register(&id, &task, data, started)),
        Event::Adopt { id, child } => Outcome::Adopted(ledger.adopt(&id, child)),
        Event::Discard(id) => Outcome::Took(ledger.discard(&id).into_iter().collect()),
        Event::Arrive(id) => Outcome::Arrived(ledger.arrive(&id)),
        Event::BeginWait => Outcome::Waited(ledger.begin_wait()),
        Event::PollWait => Outcome::Waited(ledger.poll_wait()),
        Event::DropWait => Outcome::Waited(ledger.drop_wait()),
        Event::TakeArrived => Outcome::Took(ledger.take_arrived()),
        Event::TakeOverdue { bound, now } => Outcome::Took(ledger.take_overdue(bound, now)),
        Event::TakeAll => Outcome::Took(ledger.take_all()),
    }
}
