//! Exhaustive model checking of baton's **real** transition tables.
//!
//! [`explore`] is an exact breadth-first explorer (states stored whole,
//! parent pointers, shortest counterexamples) with invariants on states and
//! transitions, `sometimes` coverage, terminal checks and, in [`lasso`],
//! liveness under stated fairness. [`gate`] builds the handoff system of
//! SPEC §1 around `baton::gate::core::step` — never a copy of it — and
//! checks S1–S9 and L1–L3, and — with the durable log, crashes of the
//! worker at every point and a restart around the real
//! `baton::durable::reconcile` ([`gate::durable`]) — R1–R5; [`ledger`]
//! builds the delegation ledger system of SPEC §2 around
//! `baton::ledger::core::step` and checks D1–D6; [`fence`] builds the
//! fenced handoff of SPEC §6 (an owner, its workers — zombies, wrong
//! suspicions, lost replies, crashes, the finish, the successor a durable
//! pause names and retention — and the log) around the real
//! `baton::durable::claim_step`, `append_step`, `finish_step` and
//! `retire_step` and checks R1–R10 and G1, G3–G5.
//! [`trace`] prints counterexamples and writes and
//! replays them as JSON; [`report`] is what `cargo run -p baton-model`
//! prints, and [`diagram`] the Mermaid state diagram of what was explored.
//!
//! ```text
//! cargo run --release -p baton-model                 # the report (the gate's CI configuration with and without the closer, the durable ones, the ledger's)
//! cargo run --release -p baton-model -- --diagram    # the Mermaid stateDiagram-v2 the guide embeds (docs/guide/checking.md)
//! cargo run --release -p baton-model -- --requesters 4 --tries 2 [--symmetry] [--no-closer]
//! cargo run --release -p baton-model -- --requesters 2 --tries 1 --durable   # with the log, crashes, restart
//! cargo run --release -p baton-model -- --variant d_failed_preflight_rerequests   # see a counterexample
//! cargo run --release -p baton-model -- --variant i_seal_before_append            # the durable one
//! cargo run --release -p baton-model -- --variant k_owner_decides_by_reading      # the fenced handoff's
//! cargo run --release -p baton-model -- --variant p_retention_deletes_and_reissues_epoch_1   # its retention's
//! cargo run --release -p baton-model -- --largest 60 # what completes within 60 s
//! cargo test -p baton-model                          # pinned counts, self-tests, regressions
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod diagram;
pub mod explore;
pub mod fence;
pub mod gate;
pub mod lasso;
pub mod ledger;
mod paths;
pub mod report;
pub mod smt;
mod space;
pub mod trace;
mod verdict;
mod visited;
