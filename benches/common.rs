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
