//! A small agent runtime built on baton's public API, the way a user of
//! baton would write one, and verified the way the test kit
//! (`agent-baton-testkit`) says to.
//!
//! - [`worker::Worker`] steps a Run, calls the gate's `boundary` between
//!   steps, and when a handoff is committed appends the pause to the
//!   canonical log and seals it with `append_then_seal`; only then does it
//!   report the handoff final to its supervisor ([`worker::Reports`]).
//! - [`collector::Collector`] tracks the child delegations of a task in a
//!   `baton::ledger::Delegations` and delivers each child's outcome to the
//!   parent exactly once, whether it arrives, is reported twice, or is
//!   still missing when the task shuts down.
//! - [`store::MapLog`] is the runtime's own canonical log (a map under one
//!   lock, around baton's shared rule), held to baton's log contract by
//!   the test kit: its contract suite and its log fuzz body.
//! - [`check`] holds the sequential checks (operation sequences decoded
//!   with `Arbitrary`), shared by the property test and the fuzz target.
//!
//! The invariants the checks name:
//!
//! - **H1** a handoff reported final is durable: its pause is in the log;
//! - **H2** a handoff the worker finished is reported, once;
//! - **C1** no child's outcome is delivered twice;
//! - **C2** a delivered outcome is the one the child's accepted report gave;
//! - **C3** after shutdown every spawned child's outcome was delivered.
//!
//! With the cargo feature `planted-bug` the worker reports a handoff final
//! *before* its append (an "optimistic" report, so the successor can start
//! warming up): H1 then breaks whenever a supervisor looks between the
//! report and the append (a race, for loom), or when the append is fenced
//! because the owner took the Run over (an operation order, for the
//! property test and the fuzzer). With `planted-store-bug` the store's
//! append skips the fence (R6, R7): the kit's contract suite
//! (`tests/log_contract.rs`) and its log fuzz body (fuzz target `my_log`)
//! must each catch it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(not(loom))]
pub mod check;
pub mod collector;
#[cfg(not(loom))]
pub mod store;
mod sync;
pub mod worker;

pub use collector::{Collector, Delivery, Outcome};
pub use worker::{Report, Reports, StepOutcome, Worker};

/// The message of each invariant, as every check's panic names it.
pub mod invariant {
    /// H1: a handoff reported final is durable (its pause is in the log).
    pub const H1: &str = "downstream H1: a handoff reported final before its pause was durable";
    /// H2: a handoff the worker finished is reported final, exactly once.
    pub const H2: &str = "downstream H2: a finished handoff not reported final exactly once";
    /// C1: no child's outcome is delivered twice.
    pub const C1: &str = "downstream C1: an outcome delivered twice";
    /// C2: a delivered outcome is the one the child's accepted report gave.
    pub const C2: &str = "downstream C2: an outcome delivered that the child did not report";
    /// C3: after shutdown every spawned child's outcome was delivered.
    pub const C3: &str = "downstream C3: an outcome lost at shutdown";
}
