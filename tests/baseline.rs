//! The benchmarks' baseline behaves like the original in the scenarios the
//! benchmarks use, so the comparison is with the real thing.

#[path = "../benches/baseline/mod.rs"]
mod baseline;
mod common;

use std::time::{Duration, Instant};

use baseline::gate::{Gate, Pause};
use baseline::ledger::{Arrival, Ledger, Live};
use baton::{HandoffIntent, Invocation};
use common::within;
use tokio_util::sync::CancellationToken;

fn source() -> Invocation {
    Invocation {
        session_id: "s".into(),
        turn_id: "t".into(),
        run_id: "run".into(),
        invocation_id: "i".into(),
    }
}

fn intent() -> HandoffIntent {
    HandoffIntent {
        handoff_id: "h".into(),
        host_epoch: "e".into(),
        root_run_id: "run".into(),
        successor_run_id: "run-2".into(),
        successor_invocation_id: "i-2".into(),
        claim_id: "c".into(),
    }
}

#[tokio::test]
async fn the_baseline_gate_hands_off_releases_and_refuses_like_the_original() {
    let gate = Gate::new(source(), "run".into());
    let cancel = CancellationToken::new();
    let held = gate.reserve(intent()).expect("reserve from running");
    assert!(gate.reserve(intent()).is_none(), "busy while reserved");
    drop(held);
    assert!(gate.is_running(), "dropping the reservation releases");
    let reservation = gate.reserve(intent()).unwrap();
    let prepared = |intent| {
        std::future::ready(Some(Pause {
            intent,
            execution: (),
        }))
    };
    let promise = "the baseline's boundary and its requester's ready and commit meet";
    let (paused, pending) = within(promise, async {
        tokio::join!(gate.boundary(&cancel, prepared), async {
            reservation.ready().await.unwrap().commit().unwrap()
        })
    })
    .await;
    let paused = paused.expect("committed");
    gate.sealed(&paused);
    assert!(gate.is_sealed());
    let sealed = within(
        "the baseline's sealed pause reaches the requester",
        pending.wait(),
    );
    assert_eq!(sealed.await, Some(paused));
    let failed = gate.reserve(intent());
    assert!(failed.is_none(), "no reserve after the seal");
}

#[test]
fn the_baseline_ledger_delivers_once_and_takes_overdue_like_the_original() {
    let ledger = Ledger::default();
    ledger.scope_task("tsk_a");
    let now = Instant::now();
    let old = now.checked_sub(Duration::from_secs(120)).unwrap();
    let live = |started| Live {
        task_id: "tsk_a".into(),
        capsule: "c".into(),
        version: "v".into(),
        child_session_id: "s".into(),
        child_workdir: "w".into(),
        started,
        arrived: false,
    };
    assert!(ledger.register("dlg_b".into(), live(now)));
    assert!(ledger.register("dlg_a".into(), live(old)));
    assert_eq!(ledger.arrive("dlg_b"), Arrival::Delivered);
    assert_eq!(ledger.arrive("dlg_b"), Arrival::AlreadyDelivered);
    assert_eq!(ledger.counts(), (1, 1));
    assert_eq!(
        ledger.next_overdue(Duration::from_secs(60)),
        Some(old + Duration::from_secs(60))
    );
    let overdue = ledger.take_overdue(Duration::from_secs(60), now);
    assert_eq!(
        overdue
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>(),
        ["dlg_a"]
    );
    assert_eq!(ledger.take_arrived().len(), 1);
    assert_eq!(
        ledger.arrive("dlg_b"),
        Arrival::AlreadyDelivered,
        "the delivered set remembers"
    );
    assert_eq!(ledger.live().len(), 0);
}
