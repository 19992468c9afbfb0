//! Durable handoff (SPEC §1, issue 9): a handoff is final only once its pause
//! is durably appended to the runtime's canonical log, and a worker that
//! exits without confirming its seal is never resumed — its owner reconciles
//! the canonical facts instead.
//!
//! [`reconcile`] is the pure core: from what the log holds about one Run
//! ([`RunFacts`]) it decides [`Decision::HandedOff`] or
//! [`Decision::Resumable`], or refuses contradictory facts with a
//! [`ReconcileError`].

mod reconcile;

pub use reconcile::{Appended, Decision, ReconcileError, RunFacts, reconcile};
