//! Every handle a runtime moves between tasks is `Send + Sync + Unpin` and
//! unwind-safe, whatever `Arc` holds its shared state (`crate::sync`). A
//! change of these auto traits is a breaking change; this test names it.

use std::panic::{RefUnwindSafe, UnwindSafe};

fn movable_across_tasks_and_unwinds<T: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe>() {}

#[test]
fn every_handle_is_send_sync_unpin_and_unwind_safe() {
    movable_across_tasks_and_unwinds::<baton::HandoffGate<()>>();
    movable_across_tasks_and_unwinds::<baton::HandoffRequester<()>>();
    movable_across_tasks_and_unwinds::<baton::HandoffReservation<()>>();
    movable_across_tasks_and_unwinds::<baton::HeldHandoff<()>>();
    movable_across_tasks_and_unwinds::<baton::PendingSeal<()>>();
    movable_across_tasks_and_unwinds::<baton::CancelSignal>();
    movable_across_tasks_and_unwinds::<baton::ledger::Delegations>();
    movable_across_tasks_and_unwinds::<baton::ledger::DelegationScope>();
    // It now holds the sender of its thread's job queue (the async forms).
    #[cfg(feature = "sqlite")]
    movable_across_tasks_and_unwinds::<baton::durable::SqliteLog<()>>();
    // One connection behind tokio's async mutex.
    #[cfg(feature = "postgres")]
    movable_across_tasks_and_unwinds::<baton::durable::PostgresLog<()>>();
}

/// A future a runtime can `tokio::spawn`: `Send + 'static`.
fn spawnable<F: std::future::Future + Send + 'static>(_: F) {}

/// A future a runtime can move to another thread while it borrows a handle.
fn sendable<F: std::future::Future + Send>(_: F) {}

/// Every future the library returns is `Send`, and those that consume their
/// handle (`ready`, `wait`) are also `'static`, so they can be spawned. The
/// check is the compiler's: this function is type-checked, never called.
#[allow(dead_code)]
fn every_returned_future_is_send_and_the_consuming_ones_are_static(
    gate: &baton::HandoffGate<String>,
    cancel: &baton::CancelSignal,
    reservation: baton::HandoffReservation<String>,
    pending: baton::PendingSeal<String>,
    ledger: &baton::ledger::Delegations,
) {
    sendable(gate.boundary(cancel, |intent| async move {
        Some(baton::HandoffPause::new(intent, String::new()))
    }));
    spawnable(reservation.ready());
    spawnable(pending.wait());
    sendable(cancel.canceled());
    sendable(ledger.wait_for_arrival());
}
