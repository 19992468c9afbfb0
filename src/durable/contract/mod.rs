//! The contract of the canonical log, which every store keeps and every
//! rule and caller speaks: the traits ([`HandoffLog`], [`AsyncHandoffLog`]),
//! what they answer ([`Claim`], [`Receipt`], [`Retirement`]), the epoch
//! that fences, the facts a log holds for a Run ([`RunFacts`]), how it
//! refuses or fails ([`LogError`]), and the checks of its input. It
//! imports nothing of the rules or the stores.

mod answer;
mod async_log;
mod epoch;
mod error;
mod facts;
mod input;
mod log;

pub use answer::{Claim, Receipt, Retirement};
pub use async_log::AsyncHandoffLog;
pub use epoch::Epoch;
pub use error::{LogError, ReconcileError};
pub use facts::{Appended, Finished, RunFacts, RunField};
pub use input::{check_append, check_finish, encode_checked};
pub(crate) use input::{check_root, check_run};
pub use log::HandoffLog;
