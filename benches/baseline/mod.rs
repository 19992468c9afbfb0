//! The baseline: the original design, re-implemented fresh for comparison
//! only — the gate on `tokio::sync::watch` and `CancellationToken` with
//! `Arc::ptr_eq` ticket identity, the ledger as `Mutex<HashMap>`, `HashSet`
//! and `Notify` with scan-and-sort takes, the cancel signal on `watch`. It
//! keeps the original's behaviour (and its defects); `tests/baseline.rs`
//! checks it in the scenarios the benchmarks use.
#![allow(dead_code)]

pub mod cancel;
pub mod gate;
pub mod ledger;
