//! Fixtures shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{
    CancelSignal, HandoffExecution, HandoffGate, HandoffIntent, HandoffPause, HandoffReservation,
    Invocation, PendingSeal,
};

// The bounded await, one file shared with the library's unit tests.
#[path = "../../src/within.rs"]
mod within;
// Not every test crate polls by hand (`dead_code` does not cover imports).
#[allow(unused_imports)]
pub use within::{poll_once, within};

#[cfg(all(unix, feature = "sqlite"))]
pub mod child;

#[cfg(all(unix, feature = "postgres"))]
pub mod auto_failover;
#[cfg(all(unix, feature = "postgres"))]
pub mod citus;
#[cfg(all(unix, feature = "postgres"))]
pub mod managed;
#[cfg(all(unix, feature = "postgres"))]
pub mod patroni;
#[cfg(all(unix, feature = "postgres"))]
pub mod pgbouncer;
#[cfg(all(unix, feature = "postgres"))]
pub mod postgres;
#[cfg(all(unix, feature = "postgres"))]
pub mod proxy;

/// The promises the gate's tests await most, with their SPEC ids: the
/// message a test fails with when one of them hangs.
pub const COMMIT_AT_BOUNDARY: &str =
    "L1: the worker's boundary and the requester's ready and commit meet";
/// `ready()` resolves once the worker's boundary has prepared the pause.
pub const HELD: &str = "L2: the reservation is held at the worker's boundary";
/// A pending `boundary` resolves once its handoff is committed.
pub const COMMITTED: &str = "L1: the boundary returns the committed pause";
/// `wait()` resolves once the worker seals.
pub const SEALED: &str = "S5: the sealed pause reaches the waiting requester";

pub type Pause = HandoffPause<HandoffExecution>;
pub type Gate = HandoffGate<HandoffExecution>;

pub fn source() -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    }
}

pub fn gate() -> Gate {
    HandoffGate::new(source(), "run".into())
}

pub fn intent() -> HandoffIntent {
    intent_named("handoff")
}

pub fn intent_named(handoff_id: &str) -> HandoffIntent {
    HandoffIntent {
        handoff_id: handoff_id.into(),
        host_epoch: "host".into(),
        root_run_id: "run".into(),
        successor_run_id: "successor-run".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    }
}

fn digest(c: char) -> Digest {
    Digest::parse(format!("sha256:{}", c.to_string().repeat(64))).expect("valid digest")
}

pub fn execution() -> HandoffExecution {
    HandoffExecution {
        replay: ReplayEvidence {
            version: REPLAY_VERSION,
            digest: digest('a'),
            route_identity: digest('b'),
        },
        tools: HandoffTools {
            catalog_digest: digest('c'),
            loaded: vec!["shell".into()],
        },
        compaction: CompactionBudget::Available,
        main_output_limit: None,
        supports_vision: false,
        replay_base: None,
    }
}

pub fn pause_for(intent: impl Into<Arc<HandoffIntent>>) -> Pause {
    HandoffPause::new(intent, execution())
}

/// A preflight that prepares the pause for the requested intent.
pub fn prepared(intent: Arc<HandoffIntent>) -> std::future::Ready<Option<Pause>> {
    std::future::ready(Some(pause_for(intent)))
}

/// A preflight that fails.
pub fn failed(_: Arc<HandoffIntent>) -> std::future::Ready<Option<Pause>> {
    std::future::ready(None)
}

/// The worker's boundary (preflight [`prepared`]) beside the requester's
/// `ready()` then `commit()`, bounded by [`COMMIT_AT_BOUNDARY`]: the pause
/// the boundary returned, and the requester's pending seal.
pub async fn commit_at_boundary(
    gate: &Gate,
    cancel: &CancelSignal,
    reservation: HandoffReservation<HandoffExecution>,
) -> (Option<Arc<Pause>>, PendingSeal<HandoffExecution>) {
    let (paused, pending) = within(COMMIT_AT_BOUNDARY, async {
        tokio::join!(gate.boundary(cancel, prepared), async {
            let held = reservation.ready().await.expect("held");
            held.commit().expect("committed")
        })
    })
    .await;
    (paused.expect("the gate is open"), pending)
}
