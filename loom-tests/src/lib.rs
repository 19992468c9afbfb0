//! Support for baton's loom models (SPEC §5, "interleavings").
//!
//! The models live in `tests/loom_<subject>.rs` and compile only under
//! `--cfg loom`; run them with `cargo loom` (an alias in `.cargo/config.toml`
//! for `RUSTFLAGS="--cfg loom" cargo test -p loom-tests --release`).
//!
//! - [`fixtures`]: the gate, intents and pauses every model uses;
//! - [`ledger`]: the delegation ledger's set-ups and counted children;
//! - `scene` (loom only): a gate whose every operation is recorded, so that
//!   each execution's history is checked against the core table by
//!   `baton_testkit::linearize`, and no waker may be left behind.
//!
//! The models run through the test kit's `baton_testkit::loom::model` (its
//! coverage stated in code, its execution count printed) and use its
//! `WakeProbe`, as a user's models would.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fixtures;
pub mod ledger;
#[cfg(loom)]
pub mod scene;

#[cfg(all(test, not(loom)))]
mod linearize_tests;
