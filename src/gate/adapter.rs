//! The async adapter: one [`WatchCell`](crate::waiter::WatchCell) around
//! the core [`State`](super::core::State), and RAII handles whose `Drop`
//! feeds the core the event SPEC's cancel-safety table names. Every method
//! is "lock, step, wake, return"; the decisions are the core's. The two
//! answers the state's kind alone decides
//! ([`reserve_refusal`](super::core::reserve_refusal),
//! [`boundary_may_act`](super::core::StateKind::boundary_may_act)) are
//! read from a copy of the kind kept beside the lock, without taking it,
//! in every kind but `Held`
//! ([`copy_may_answer`](super::core::StateKind::copy_may_answer)).
//!
//! The handles live in three files: [`shared`] (the cell they share and
//! the release guard), [`worker`] ([`HandoffGate`]) and [`requester`]
//! (the requester's four handles).

mod requester;
mod shared;
mod worker;

pub use requester::{HandoffRequester, HandoffReservation, HeldHandoff, PendingSeal};
pub use worker::HandoffGate;
