//! Durable handoff (SPEC §1 and §6): a handoff is final only once its
//! pause is durably appended to the runtime's canonical log, and the log —
//! not a worker, not a failure detector — decides who may continue a Run.
//!
//! **Failure model.** A worker may crash; it may also pause for any time
//! (a stopped process, a GC or VM stall, a partition) and go on as if
//! nothing happened: a *zombie*. The owner's failure detector may be wrong,
//! and a reply from the log may be lost. The log decides every Run once per
//! owner epoch, so none of these can make a Run both handed off and
//! resumed.
//!
//! - [`HandoffLog`] is the canonical log. [`claim`](HandoffLog::claim)
//!   starts or takes over a Run: it answers [`Claim::HandedOff`],
//!   [`Claim::Finished`] or [`Claim::Retired`] once the Run has a final
//!   fate or its root Run is retired, else issues a new [`Epoch`] and
//!   fences every older one; [`append`](HandoffLog::append) writes a pause
//!   only under the current epoch of an open Run. [`MemoryLog`] keeps it in memory (tests); `SqliteLog`
//!   (feature `sqlite`) in one SQLite file; `PostgresLog` (feature
//!   `postgres`, async only) on a PostgreSQL server, for runtimes on
//!   several hosts.
//! - [`AsyncHandoffLog`] is the same log for async code (`claim_async`,
//!   `append_async`, `finish_async`, `retire_async`, `facts_async`),
//!   implemented by all three: `SqliteLog` runs the blocking work (the
//!   transaction, the fsync) on a thread it owns, so no executor thread —
//!   not even a `current_thread` runtime's only one — waits for the disk,
//!   and needs no particular runtime
//!   (`PostgresLog` needs tokio's). The async trait's methods say what
//!   dropping an in-flight future means (`# Cancel safety`).
//! - A Run's third fate is [`finish`](HandoffLog::finish): fenced as an
//!   append, and from then on a claim answers [`Claim::Finished`] (R8).
//!   [`finish_then_close`] is the worker's step for a Run that ends
//!   without a handoff, decided by the pure [`close_step`].
//!   [`retire`](HandoffLog::retire) is retention: a root Run whose work
//!   has ended (every Run of it final, and every successor its durable
//!   pauses name final too: G1, G5) loses their rows and keeps one
//!   tombstone, and every claim under it answers [`Claim::Retired`] (R9,
//!   R10).
//! - [`reconcile()`] is the pure decision a claim makes inside its
//!   transaction, from what the log holds about one Run ([`RunFacts`]):
//!   [`Decision::HandedOff`], [`Decision::Finished`], [`Decision::Retired`]
//!   or [`Decision::Resumable`], or a [`ReconcileError`] for contradictory
//!   facts.
//! - [`append_then_seal`] is the worker's last step: append under its
//!   epoch, and only then seal; if the append fails, close without sealing
//!   ([`SealError::Fenced`]: a newer epoch owns the Run, stop). The rule
//!   it applies to the append's answer is the pure [`seal_step`], which
//!   the model checker calls too. [`append_then_seal_async`] is the same
//!   step over an [`AsyncHandoffLog`].
//!
//! ```text
//!  owner:   claim(run) ─▶ Owner(epoch) ─▶ start a worker with epoch   | HandedOff, Finished, Retired: never resume
//!  worker:  boundary ─▶ Some(pause) ─▶ log.append(epoch, pause) ─ok─▶ gate.sealed(pause) ─▶ exit
//!                                             │ err (Fenced, …)         (wait() = Ok(pause))
//!                                             └──▶ gate.close()  (wait() = Err(Closed))
//!  worker suspected (crashed, or only paused) ─▶ owner: claim(run) again
//! ```

mod contract;
mod fence;
mod finish;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod reconcile;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod row;
#[cfg(feature = "sqlite")]
mod sqlite;
mod sweep;
mod worker;

pub use contract::{
    Appended, AsyncHandoffLog, Claim, Epoch, Finished, HandoffLog, LogError, Receipt,
    ReconcileError, Retirement, RunFacts, RunField, check_append, check_finish, encode_checked,
};
pub use fence::{
    AppendStep, ClaimStep, Fate, append_step, claim_step, claim_step_above, finish_step,
    retire_step, timeline_floor,
};
pub use finish::{FinishError, close_step, finish_then_close, finish_then_close_async};
pub use memory::MemoryLog;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::{
    GroupCommits, InvalidSchemaName, NoSynchronousStandby, PAUSED_TRIGGER, POSTGRES_SCHEMA_VERSION,
    PostgresConfig, PostgresLog, PostgresOptions, PostgresReplication, PostgresSchema,
    PostgresStatement, deadpool_postgres, tokio_postgres,
};
pub use reconcile::{Decision, reconcile};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::{SCHEMA_VERSION, SqliteLog, rusqlite};
pub use sweep::{Sweep, SweepCursor, SweepStep, sweep_step};
pub use worker::{SealError, SealStep, append_then_seal, append_then_seal_async, seal_step};

#[cfg(test)]
mod tests;
