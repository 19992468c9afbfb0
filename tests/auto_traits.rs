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
}
