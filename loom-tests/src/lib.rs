//! Support for baton's loom models (SPEC §5, "interleavings").
//!
//! The models live in `tests/loom_<subject>.rs` and compile only under
//! `--cfg loom`; run them with `cargo loom` (an alias in `.cargo/config.toml`
//! for `RUSTFLAGS="--cfg loom" cargo test -p loom-tests --release`).
//!
//! - [`fixtures`]: the gate, intents and pauses every model uses;
//! - [`ledger`]: the delegation ledger's set-ups and counted children;
//! - `probe` (loom only): a waker that checks, when woken, that the change it is
//!   woken for is visible (the waiter cell's wake/store order);
//! - `run` (loom only): a model with its coverage stated in code and its
//!   execution count printed;
//! - `scene` (loom only): a gate whose every operation is recorded, so that
//!   each execution's history is checked against the core table by
//!   `baton::gate::linearize`, and no waker may be left behind.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fixtures;
pub mod ledger;
#[cfg(loom)]
pub mod probe;
#[cfg(loom)]
pub mod run;
#[cfg(loom)]
pub mod scene;

#[cfg(all(test, not(loom)))]
mod linearize_tests;
