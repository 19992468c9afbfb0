#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`, Cargo.toml's [package.metadata.docs.rs]) marks
// each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod sync;
mod waiter;
#[cfg(test)]
mod within;

pub mod cancel;
pub mod durable;
pub mod facts;
pub mod gate;
pub mod ledger;
pub mod residue;

#[cfg(all(feature = "fuzzing", not(loom)))]
#[cfg_attr(docsrs, doc(cfg(feature = "fuzzing")))]
#[doc(hidden)]
pub mod fuzzing;

pub use cancel::{CancelSignal, Cancellation, Phase};
pub use facts::{HandoffExecution, HandoffIntent, HandoffPause, IntentError, Invocation};
pub use gate::{
    GateError, HandoffGate, HandoffRequester, HandoffReservation, HeldHandoff, PendingSeal,
};
