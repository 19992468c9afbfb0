//! Durable handoff (SPEC §1, issue 9): a handoff is final only once its pause
//! is durably appended to the runtime's canonical log, and a worker that
//! exits without confirming its seal is never resumed — its owner reconciles
//! the canonical facts instead.
//!
//! - [`reconcile`] is the pure core: from what the log holds about one Run
//!   ([`RunFacts`]) it decides [`Decision::HandedOff`] or
//!   [`Decision::Resumable`], or refuses contradictory facts with a
//!   [`ReconcileError`].
//! - [`HandoffLog`] is the canonical log: append a pause durably, read a
//!   Run's facts. [`MemoryLog`] keeps it in memory (tests); `SqliteLog`
//!   (feature `sqlite`) in one SQLite file.
//! - [`append_then_seal`] is the worker's last step: append, and only then
//!   seal; if the append fails, close without sealing.
//!
//! ```text
//!  worker:  boundary ─▶ Some(pause) ─▶ log.append(pause) ─ok─▶ gate.sealed(pause) ─▶ exit
//!                                             │ err                 (wait() = Some)
//!                                             └──▶ gate.close()  (wait() = None)
//!  crash anywhere ─▶ owner: reconcile(log.facts(run)) ─▶ HandedOff(pause) | Resumable
//! ```

mod log;
mod reconcile;
#[cfg(feature = "sqlite")]
mod sqlite;
mod worker;

pub use log::{HandoffLog, LogError, MemoryLog, Receipt};
pub use reconcile::{Appended, Decision, ReconcileError, RunFacts, reconcile};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::{SCHEMA_VERSION, SqliteLog};
pub use worker::{SealError, append_then_seal};

#[cfg(test)]
mod tests;
