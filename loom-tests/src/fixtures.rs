//! The gate, intents and pauses the models use. The pause payload is a
//! `u8`: small, `Eq + Hash` (the linearizability checker memoises states).

use baton::gate::core::Config;
use baton::{HandoffGate, HandoffIntent, HandoffPause, Invocation};

/// The runtime payload of a pause in the models.
pub type Pause = HandoffPause<u8>;
/// The gate under test.
pub type Gate = HandoffGate<u8>;

/// Where the guarded Run executes.
pub fn source() -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    }
}

/// The logical Run every intent keeps.
pub const ROOT_RUN: &str = "run";

/// The configuration of [`gate`], for the sequential specification.
pub fn config() -> Config {
    Config::new(source(), ROOT_RUN.into())
}

/// A fresh gate.
pub fn gate() -> Gate {
    HandoffGate::new(source(), ROOT_RUN.into())
}

/// A valid intent, told apart by `handoff_id`.
pub fn intent(handoff_id: &str) -> HandoffIntent {
    HandoffIntent {
        handoff_id: handoff_id.into(),
        host_epoch: "host".into(),
        root_run_id: ROOT_RUN.into(),
        successor_run_id: "successor-run".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    }
}

/// The pause a worker prepares for `intent`.
pub fn pause_for(intent: impl Into<std::sync::Arc<HandoffIntent>>) -> Pause {
    HandoffPause::new(intent, 7)
}

/// What the worker's preflight does with the intent it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preflight {
    /// Prepares the matching pause.
    Prepare,
    /// Fails: no pause.
    Fail,
}

impl Preflight {
    /// The pause this preflight returns for `intent`.
    pub fn run(self, intent: std::sync::Arc<HandoffIntent>) -> Option<Pause> {
        match self {
            Preflight::Prepare => Some(pause_for(intent)),
            Preflight::Fail => None,
        }
    }
}
