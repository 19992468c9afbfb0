//! The delegation ledger (SPEC §2): the child delegations of the task in
//! scope; each outcome delivered exactly once, overdue ones found, leftovers
//! ended.
//!
//! [`core`] is the ledger as pure functions; the adapter wraps it in one
//! lock with a waiter for arrivals.

mod adapter;
pub mod core;

pub use adapter::{
    BoxedChild, Delegation, DelegationScope, Delegations, DelegationsSnapshot, TakenDelegation,
};
pub use core::{Arrival, Child, Counts, RegisterError, ScopeToken};

#[cfg(test)]
mod tests;
