//! The handoff gate (SPEC §1): hand a running agent Run to a successor worker
//! at a safe step boundary, final only once the pause is sealed.
//!
//! A **worker** owns the [`HandoffGate`] and calls
//! [`boundary`](HandoffGate::boundary) between steps. A **requester** asks
//! with [`HandoffRequester::reserve`], waits for the worker with
//! [`HandoffReservation::ready`], inspects and [`commit`](HeldHandoff::commit)s
//! the prepared pause, then waits for the durable seal with
//! [`PendingSeal::wait`].
//!
//! ```text
//!            Reserve            Preflight ok           Commit            Seal(p)
//!  Running ──────────▶ Requested ───────────▶ Held ───────────▶ Committed ───────▶ Sealed
//!     ▲                   │                    │                   │
//!     └── Preflight fail, ┘                    │                   │
//!     └── Cancel(T) ──────┴────────────────────┘                   │
//!   (every non-terminal state) ── Close ──▶ Closed ◀───────────────┘
//! ```
//!
//! [`core`] holds the table as pure functions; the handles here are a thin
//! adapter over it. The table below is rendered from [`core::step`] itself
//! ([`render_table`]); T is the event's ticket, T* the state's.
//!
#![doc = include_str!("table.md")]

mod adapter;
pub mod core;
mod ended;
mod error;
mod table;

pub use adapter::{HandoffGate, HandoffRequester, HandoffReservation, HeldHandoff, PendingSeal};
pub use ended::{BoundaryError, CommitError, ReadyError, WaitError};
pub use error::GateError;
pub use table::render_table;

#[cfg(test)]
mod tests;
