//! Loom models of your code around baton's handles (only under `--cfg loom`).
//!
//! Build your tests *and baton* with `--cfg loom` (`RUSTFLAGS="--cfg loom"`,
//! or a `--config` alias as the guide shows), with the same `loom` minor
//! version as baton (0.7): under that flag baton's locks, atomics and
//! wake-ups are loom's, so loom explores every interleaving of your threads
//! through them. Create every baton object *inside* the model's closure:
//! loom's primitives belong to one execution.
//!
//! - [`model`] runs a closure with its [`Coverage`] stated in code (no
//!   `LOOM_*` variable can quietly cut it short), prints how many
//!   executions it took, and fails a model that raced nothing loom could
//!   see: a proof that passes hollow.
//! - [`WakeProbe`] is a waker that checks, at the moment it is woken, that
//!   what its future waits for is already visible; [`race_wake`] races a
//!   change against a poll with it.

mod probe;
mod run;

pub use probe::{WakeProbe, race_wake};
pub use run::{Coverage, model};
