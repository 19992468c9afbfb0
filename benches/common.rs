//! Fixtures shared by the benchmarks.
#![allow(dead_code)]

use std::time::Instant;

use baton::{HandoffIntent, Invocation};

pub fn source() -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    }
}

pub fn intent() -> HandoffIntent {
    HandoffIntent {
        handoff_id: "handoff".into(),
        host_epoch: "host".into(),
        root_run_id: "run".into(),
        successor_run_id: "successor-run".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

pub fn delegation(started: Instant) -> baton::ledger::Delegation {
    baton::ledger::Delegation {
        task_id: "tsk_a".into(),
        capsule: "worker".into(),
        version: "0.1.0".into(),
        child_session_id: "ses_child_0123456789".into(),
        child_workdir: "/tmp/work/child/0123456789".into(),
        started,
    }
}

pub fn live(started: Instant) -> crate::baseline::ledger::Live {
    crate::baseline::ledger::Live {
        task_id: "tsk_a".into(),
        capsule: "worker".into(),
        version: "0.1.0".into(),
        child_session_id: "ses_child_0123456789".into(),
        child_workdir: "/tmp/work/child/0123456789".into(),
        started,
        arrived: false,
    }
}

/// The delegation id of entry `n`, zero-padded so ids sort numerically.
pub fn id(n: usize) -> String {
    format!("dlg_{n:08}")
}

/// baton's preflight: the pause shares the intent it is given.
pub fn prepared(
    intent: std::sync::Arc<HandoffIntent>,
) -> std::future::Ready<Option<baton::HandoffPause<()>>> {
    std::future::ready(Some(baton::HandoffPause::new(intent, ())))
}

/// The original's preflight: the pause owns the copy of the intent it is
/// given.
pub fn prepared_baseline(
    intent: HandoffIntent,
) -> std::future::Ready<Option<crate::baseline::gate::Pause>> {
    std::future::ready(Some(crate::baseline::gate::Pause {
        intent,
        execution: (),
    }))
}

/// `gate/full_cycle`, baton: a new gate, reserve, boundary ∥ ready and
/// commit, seal, wait.
pub async fn full_cycle_baton(cancel: &baton::CancelSignal, intent: std::sync::Arc<HandoffIntent>) {
    let gate = baton::HandoffGate::<()>::new(source(), "run".into());
    let reservation = gate.requester().reserve(intent).unwrap();
    let (paused, pending) = tokio::join!(gate.boundary(cancel, prepared), async {
        reservation.ready().await.unwrap().commit().unwrap()
    });
    let paused = paused.unwrap().unwrap();
    assert!(gate.sealed(&paused));
    std::hint::black_box(pending.wait().await.unwrap());
}

/// `gate/full_cycle`, the original gate (its API takes the intent by value).
pub async fn full_cycle_baseline(
    cancel: &tokio_util::sync::CancellationToken,
    intent: HandoffIntent,
) {
    let gate = crate::baseline::gate::Gate::new(source(), "run".into());
    let reservation = gate.reserve(intent).unwrap();
    let (paused, pending) = tokio::join!(gate.boundary(cancel, prepared_baseline), async {
        reservation.ready().await.unwrap().commit().unwrap()
    });
    let paused = paused.unwrap();
    gate.sealed(&paused);
    std::hint::black_box(pending.wait().await.unwrap());
}

/// `gate/full_cycle`'s floor: the same cycle's futures and joins on the
/// same runtime with no gate. The fixture's `Invocation` and root Run id
/// are built and dropped as the gates' constructors take them, the
/// preflight's pause is made and dropped, and the joined branches go round
/// once more, as each gate's boundary waits once for the commit.
pub async fn full_cycle_no_gate(intent: std::sync::Arc<HandoffIntent>) {
    use std::hint::black_box;
    let fixture = black_box((source(), String::from("run")));
    let (paused, committed) = tokio::join!(
        async {
            let paused = prepared(intent).await;
            tokio::task::yield_now().await;
            paused
        },
        async { black_box(true) }
    );
    black_box((paused.unwrap(), committed, fixture));
    black_box(std::future::ready(true).await);
}

/// A baton ledger scoped to `tsk_a` with `n` delegations started at `now`.
pub fn filled_baton(
    n: usize,
    now: Instant,
) -> (baton::ledger::Delegations, baton::ledger::DelegationScope) {
    let ledger = baton::ledger::Delegations::new();
    let scope = ledger.scope_task("tsk_a").unwrap();
    for k in 0..n {
        ledger.register(&id(k), delegation(now)).unwrap();
    }
    (ledger, scope)
}

/// The original ledger, scoped to `tsk_a`, with `n` delegations started at
/// `now`.
pub fn filled_baseline(n: usize, now: Instant) -> crate::baseline::ledger::Ledger {
    let ledger = crate::baseline::ledger::Ledger::default();
    ledger.scope_task("tsk_a");
    for k in 0..n {
        ledger.register(id(k), live(now));
    }
    ledger
}
