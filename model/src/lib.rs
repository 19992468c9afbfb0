//! Exhaustive model checking of baton's **real** transition tables.
//!
//! [`explore`] is an exact breadth-first explorer (states stored whole,
//! parent pointers, shortest counterexamples) with invariants on states and
//! transitions, `sometimes` coverage, terminal checks and, in [`lasso`],
//! liveness under stated fairness. [`gate`] builds the handoff system of
//! SPEC §1 around `baton::gate::core::step` — never a copy of it — and
//! checks S1–S9 and L1–L3. [`trace`] prints counterexamples and writes and
//! replays them as JSON; [`report`] is what `cargo run -p baton-model`
//! prints, and [`diagram`] the Mermaid state diagram of what was explored.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod diagram;
pub mod explore;
pub mod gate;
pub mod lasso;
mod paths;
pub mod report;
pub mod trace;
mod verdict;
mod visited;
