//! Verify your own agent runtime around [baton](https://docs.rs/agent-baton):
//! the tools baton is checked with, for the code you write around it.
//!
//! baton's machines are proven on their own; your runtime wraps them —
//! it calls `boundary` at its step boundaries, seals into its own log,
//! delegates children through the ledger — and that wrapping is where a
//! lost wake-up, a handoff reported before it is sealed or an outcome
//! delivered twice would live. This kit checks it with baton's *real*
//! transition tables as the reference, never a copy of them:
//!
//! - [`linearize`]: is a concurrent history you recorded explained by some
//!   sequential order of the real core's steps (Wing & Gong, for
//!   operations of several atomic steps)? [`linearize::GateSpec`] is the
//!   handoff gate's specification over `baton::gate::core::step`,
//!   [`linearize::LedgerSpec`] the delegation ledger's over
//!   `baton::ledger::core::step`; implement [`linearize::Spec`] for your
//!   own operations.
//! - [`scene`]: a gate whose every operation is recorded, and at the end
//!   checked for linearizability against the real core and for a waker
//!   left behind: the recorder baton's own loom scenes use.
//! - `loom` (under `--cfg loom` only): [`loom::model`](crate#loom) runs a
//!   model with its coverage stated in code and refuses one that raced
//!   nothing; `WakeProbe` checks a wake-up's order at the moment it
//!   happens.
//! - [`strategies`]: proptest strategies for valid ids, invocations,
//!   intents and pauses, and any `Arbitrary` operation sequence as a
//!   strategy.
//! - [`fuzz`]: the bodies of baton's own cargo-fuzz targets, each checking
//!   a table or adapter against an independent ghost after every step, with
//!   their `Arbitrary` operation sequences: run them in your CI against the
//!   exact baton version you ship; [`fuzz::log_store`] runs the log's
//!   fuzz body against a store of your own.
//! - [`log_contract`](mod@log_contract): the canonical log's contract suite, run by baton
//!   against its own stores, as a harness for yours: one macro call gives
//!   one `#[test]` per rule, on any `HandoffLog` or `AsyncHandoffLog`.
//! - [`within`]: bounded awaits that fail with the promise's rule id
//!   instead of hanging.
//!
//! Under `--cfg loom` only [`linearize`], [`scene`] and `loom` are compiled: the rest
//! drive baton's adapters (and tokio) outside a loom model.
//!
//! The kit is released in step with baton and depends on the exact same
//! version (`=0.1.0`), since it checks against baton's tables.
//!
//! # The guide
//!
//! How to set up loom, proptest and cargo-fuzz for a runtime built on
//! baton, with a CI job for each, is in [`guide`]; the repository's
//! [`examples/downstream/`](https://github.com/agent-baton/baton/tree/main/examples/downstream) is a runtime that follows it, with a planted bug
//! each of the three checks catches.
//!
//! # loom
//!
//! The `loom` module exists only under `--cfg loom`, so no doctest can
//! build a model of it. A model of your own is a test file of your crate,
//! `#![cfg(loom)]`, whose `#[test]` calls `baton_testkit::loom::model(name,
//! Coverage::Exhaustive, || { … })` and creates the gate, your runtime and
//! its threads inside the closure; run it with `RUSTFLAGS="--cfg loom"
//! cargo test --release`. [`examples/downstream/tests/loom_runtime.rs`](https://github.com/agent-baton/baton/blob/main/examples/downstream/tests/loom_runtime.rs) in
//! baton's repository is one, built and run by its CI (`scripts/downstream`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(not(loom))]
pub mod fuzz;
pub mod linearize;
#[cfg(not(loom))]
pub mod log_contract;
#[cfg(loom)]
#[cfg_attr(docsrs, doc(cfg(loom)))]
pub mod loom;
pub mod scene;
#[cfg(not(loom))]
pub mod strategies;
#[cfg(not(loom))]
pub mod within;

#[doc = include_str!("../GUIDE.md")]
pub mod guide {}
