//! Formally modelled state machines for agent runtimes.
//!
//! An agent runtime hands running work on, cancels it and winds it down.
//! Each of these is a small machine here. The handoff gate and the
//! delegation ledger are each a pure transition table (a `core` module: no
//! locks, no clock, no async) wrapped by a thin async adapter that works on
//! any executor (tokio in the examples); the durable handoff's rules are
//! pure functions that every store applies inside its own transaction; the
//! cancel signal is a latch, and the residue report a pure function:
//!
//! | machine | what it decides | start at |
//! |---|---|---|
//! | handoff gate | whether a running Run may be handed to a successor at a safe step boundary, and when that handoff is final (sealed) | [`HandoffGate`], [`gate`] |
//! | durable handoff | who may continue a Run, decided once per owner epoch by the canonical log, so zombies and lost replies cannot make a Run both handed off and resumed | [`durable`] |
//! | delegation ledger | the child delegations of a task: each outcome delivered once, overdue ones found, leftovers ended | [`ledger::Delegations`] |
//! | cancel signal | a one-way cancellation latch that remembers the phase it interrupted | [`CancelSignal`] |
//! | residue report | the work still running when a task ends, as an A2A `Artifact` | [`residue::Residue`] |
//!
//! [`guide`] is the guide, a chapter at a time, from the gate to a runtime
//! on PostgreSQL end to end; this page is the map.
//!
//! Every rule these machines keep has an id (S1–S9 and L1–L3 for the gate,
//! R1–R10 for the durable log and G1–G5 for what it promises a runtime,
//! D1–D6 for the ledger), and each is checked
//! over every reachable state of bounded systems by a model checker that
//! drives the real tables, and by tests; most also under every interleaving
//! by loom, by fuzzing or by property tests, and mutation testing checks
//! that the tests notice a change to the code. Each id is defined, with the
//! checks that prove it, in [`spec`], the specification (the repository's
//! `docs/SPEC.md`); a test or a failure message that names an id ("R6",
//! "SPEC §6") names its entry there. The repository's `CONTRIBUTING.md` says
//! how the checks run.
//!
//! # The handoff gate
//!
//! The worker owns the [`HandoffGate`] and calls
//! [`boundary`](HandoffGate::boundary) between steps; a requester (a
//! supervisor in the same process, holding a [`HandoffRequester`] handle)
//! [`reserve`](HandoffRequester::reserve)s a
//! handoff, waits until the worker has prepared its pause
//! ([`ready`](HandoffReservation::ready)), [`commit`](HeldHandoff::commit)s
//! it and waits for the seal ([`wait`](PendingSeal::wait)). The handoff is
//! final only once the worker has appended the pause to the runtime's
//! canonical log and [`sealed`](HandoffGate::sealed) it.
//!
//! ```
//! use baton::{CancelSignal, HandoffGate, HandoffIntent, HandoffPause, Invocation};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let source = Invocation {
//!     session_id: "session".into(),
//!     turn_id: "turn".into(),
//!     run_id: "run".into(),
//!     invocation_id: "invocation-1".into(),
//! };
//! let gate: HandoffGate<String> = HandoffGate::new(source, "run".into());
//! let cancel = CancelSignal::new();
//! let reservation = gate.requester().reserve(HandoffIntent {
//!     handoff_id: "handoff-1".into(),
//!     host_epoch: "epoch-7".into(),
//!     root_run_id: "run".into(),
//!     successor_run_id: "run-2".into(),
//!     successor_invocation_id: "invocation-2".into(),
//!     claim_id: "claim-1".into(),
//! })?;
//!
//! // The worker reaches a boundary and prepares a pause; the requester commits it.
//! let (paused, pending) = tokio::join!(
//!     gate.boundary(&cancel, |intent| async move {
//!         Some(HandoffPause::new(intent, "state for the successor".to_string()))
//!     }),
//!     async { reservation.ready().await?.commit() },
//! );
//! let (paused, pending) = (paused?.expect("committed"), pending?);
//!
//! // The worker appends the pause durably (see `durable`), then seals.
//! assert!(gate.sealed(&paused));
//! assert_eq!(pending.wait().await?, paused);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! Every future and handle is safe to drop at any await point, and
//! dropping the gate closes it, so no waiter can hang once the worker is
//! gone. [`gate`] has the transition table and the state diagram;
//! [`spec`] §1 has its rules.
//!
//! # Durable handoff
//!
//! The canonical log ([`durable::HandoffLog`], and its async form
//! [`durable::AsyncHandoffLog`]: [`durable::MemoryLog`] for tests,
//! `SqliteLog` with the `sqlite` feature for one host, `PostgresLog`, async
//! only, with the `postgres` feature for a fleet) keeps an owner epoch per
//! Run. The owner [`claim`](durable::HandoffLog::claim)s a Run before it
//! starts or resumes a worker; the worker's last step,
//! [`append_then_seal`](durable::append_then_seal), appends under its
//! epoch and seals only once the append is durable. A worker that was
//! taken for dead and comes back finds itself fenced:
//!
//! ```
//! use baton::durable::{Claim, HandoffLog, MemoryLog};
//!
//! let log = MemoryLog::<String>::new();
//! let Claim::Owner(first) = log.claim("run", "run")? else { unreachable!() };
//! // The worker of `first` stalls; its owner takes the Run over.
//! let Claim::Owner(second) = log.claim("run", "run")? else { unreachable!() };
//! assert!(second > first); // every append under `first` is now refused
//! # Ok::<(), baton::durable::LogError>(())
//! ```
//!
//! # The delegation ledger
//!
//! ```
//! use std::time::{Duration, Instant};
//! use baton::ledger::{Arrival, Delegation, Delegations};
//!
//! let ledger = Delegations::new();
//! let scope = ledger.scope_task("task-1")?; // an invalid task id is an IdError
//! ledger.register("child-1", Delegation {
//!     task_id: "task-1".into(),
//!     capsule: "researcher".into(),
//!     version: "1.0.0".into(),
//!     child_session_id: "session-child".into(),
//!     child_workdir: "/tmp/child".into(),
//!     started: Instant::now(),
//! })?;
//! assert_eq!(ledger.arrive("child-1"), Arrival::Delivered); // D1: once
//! assert_eq!(ledger.arrive("child-1"), Arrival::AlreadyDelivered);
//! assert!(ledger.take_overdue(Duration::from_secs(60), Instant::now()).is_empty());
//! assert_eq!(ledger.take_arrived().len(), 1);
//! drop(scope); // D5: the scope's end empties the ledger and ends leftover children
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The cancel signal
//!
//! ```
//! use baton::{CancelSignal, Phase};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let cancel = CancelSignal::new();
//! cancel.note_phase(Phase::Inference); // the first phase noted wins
//! cancel.cancel();
//! cancel.canceled().await; // resolves at once once canceled
//! assert!(cancel.is_canceled());
//! assert_eq!(cancel.phase(), Phase::Inference);
//! # });
//! ```
//!
//! # The residue report
//!
//! ```
//! use baton::ledger::Delegations;
//! use baton::residue::{DetachedWork, Residue};
//!
//! let ledger = Delegations::new();
//! let shell = DetachedWork {
//!     work_id: "work-1".into(),
//!     binary: "sleep".into(),
//!     command: "sleep 60".into(),
//!     started_at_ms: 1_700_000_000_000,
//! };
//! let artifact = Residue::snapshot([shell], &ledger).into_artifact().expect("work is left");
//! assert_eq!(artifact.artifact_id, "residue");
//! assert_eq!(artifact.parts.len(), 1);
//! assert!(Residue::snapshot([], &ledger).into_artifact().is_none());
//! ```
//!
//! # Features
//!
//! None is on by default.
//!
//! - `sqlite`: `durable::SqliteLog`, the canonical log in one SQLite file
//!   (bundled: no system library needed).
//! - `postgres`: `durable::PostgresLog`, the canonical log on a PostgreSQL
//!   server, for workers and owners on several hosts (tokio-postgres; its
//!   futures need a tokio runtime). The guide's "More than one host" (docs/guide/fleet.md) says
//!   what is guaranteed under which faults.
//! - `tokio-util`: [`Cancellation`] for `tokio_util::sync::CancellationToken`,
//!   so a token can stand where a [`CancelSignal`] does.
//! - `tracing`: events and spans through the `tracing` crate. Target
//!   `baton::gate`: a `transition` event at `DEBUG` for every change of a
//!   gate's state (fields `root_run_id`, `run_id`, `ticket`, `event`, and
//!   the state kinds `before` and `after`), `refused` and `ignored` events
//!   at `TRACE` (a `Busy` reserve, a refused commit, a stale release), and
//!   a `boundary` span at `DEBUG` around each
//!   [`boundary`](HandoffGate::boundary) future (`root_run_id`, `run_id`,
//!   `ticket`). Target `baton::cancel`: a `fired` event at `DEBUG` with the
//!   `phase`, once per signal. Target `baton::durable`: an `append` span at
//!   `DEBUG` around [`durable::append_then_seal`] and its async form
//!   (`root_run_id`, `run_id`, `epoch`, then `outcome`: `written`,
//!   `already_durable`, `fenced`, `failed` or `not_committed`, and
//!   `sealed`). Target `baton::postgres` (with the `postgres` feature): the
//!   PostgreSQL store's connections, retries and why, timeouts, unknown
//!   outcomes and migration steps. Target `baton::ledger`: `DEBUG` events
//!   for its transitions (`scoped`, `scope_ended`, `registered`, `adopted`,
//!   `delivered`, and `taken` with `how` and `count`), one `overdue` event
//!   per delegation an overdue take took (`id`, `task`, `waited_ms`), a
//!   `child_ended` event for every child the ledger ends (`why`: `taken`,
//!   `replaced`, `not_live`), and `refused` at `TRACE` (a refused
//!   `register`, `arrive` or `scope_task`). Every event is emitted after baton's locks are
//!   released. Without the feature no tracing code is compiled at all.
//! - `arbitrary`: `arbitrary::Arbitrary` for the fact types
//!   ([`Invocation`], [`HandoffIntent`], [`HandoffPause`],
//!   [`HandoffExecution`] and its parts, [`Phase`]), for your own fuzz
//!   targets and property tests. A generated [`facts::Digest`] is always
//!   well formed, so every generated fact survives the wire; ids are any
//!   strings, valid or not, as a fuzzer wants them.
//!
//! To verify your own runtime around baton (linearizability against these
//! tables, loom models, proptest strategies, the fuzz bodies baton is
//! checked with), see the companion crate `agent-baton-testkit`.
//!
//! # Futures
//!
//! The library's futures come from `async fn`s or `impl Future` (`boundary`,
//! `ready`, `wait`, `canceled`, `wait_for_arrival`, the async log's
//! methods, `append_then_seal_async`), so their types have no names. For a
//! `Send + Sync` payload, `boundary` (given a `Send` preflight), `ready`,
//! `wait`, `canceled` and `wait_for_arrival` are `Send` (a test pins them),
//! and so are the async log's methods (their trait says so).
//! Those that consume their handle (`ready`, `wait`) are `'static` too
//! (for a `'static` payload), so they can be spawned, or stored as
//! `Pin<Box<dyn Future<Output = …> + Send>>`; the others borrow their
//! arguments, so to spawn one, move what it borrows into an `async move`
//! block that awaits it. Named future types would mean hand-written state
//! machines for each, with nothing gained in behaviour; they can be added
//! without breaking anyone if a need shows. The docs of each of these
//! futures say what dropping it does (`# Cancel safety`).
//!
//! # Locks and your code
//!
//! Each adapter keeps one lock. A few calls into your code happen under
//! it, and none may call back into the same baton object:
//! [`Cancellation::is_canceled`] (read as a preflight's pause is fed to
//! the gate, and by a commit), the `Drop` of the clone of your
//! [`Cancellation`] the gate keeps while a handoff is held (baton's
//! [`CancelSignal`] aside), the payload's `PartialEq` when
//! [`HandoffGate::sealed`] is given a pause other than the one `boundary`
//! returned (that one it knows by pointer), the payload's `Drop` when the
//! gate lets go of a pause (a preflight's pause it does not hold, or a
//! pause's last `Arc` as it changes state), and the `clone` and `drop` of
//! your executor's waker as a future registers or leaves. Everything else
//! runs outside:
//! [`ledger::Child::is_being_ended`] (an arrival asks it before deciding,
//! and may be called back from it) and a `tracing` subscriber (baton emits
//! only after it unlocks, so a subscriber may read the machine it hears
//! from).
#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`, Cargo.toml's [package.metadata.docs.rs]) marks
// each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod sync;
mod trace;
mod waiter;
#[cfg(test)]
mod within;

pub mod cancel;
pub mod durable;
pub mod facts;
pub mod gate;
pub mod guide;
pub mod ledger;
pub mod residue;

/// The specification: every machine's states, events and table, and every
/// rule id with its meaning and the checks that prove it.
#[doc = include_str!("../docs/SPEC.md")]
pub mod spec {}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use cancel::{CancelSignal, Cancellation, Phase};
pub use facts::{HandoffExecution, HandoffIntent, HandoffPause, IntentError, Invocation};
pub use gate::{
    BoundaryError, CommitError, GateError, HandoffGate, HandoffRequester, HandoffReservation,
    HeldHandoff, PendingSeal, ReadyError, WaitError,
};
