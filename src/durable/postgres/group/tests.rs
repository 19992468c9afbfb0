//! The slots' bookkeeping where no server is needed.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, Pool};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_postgres::NoTls;

use super::{Group, Slot, Waiting};
use crate::durable::postgres::PostgresSchema;
use crate::durable::postgres::assumed::Assumed;
use crate::durable::postgres::layout::Layout;
use crate::durable::postgres::lease::Settling;
use crate::durable::postgres::op::Op;
use crate::durable::postgres::sql::Sql;

/// A group of one slot on a pool that never connects.
fn group() -> Arc<Group> {
    let manager = Manager::new(tokio_postgres::Config::new(), NoTls);
    let pool = Pool::builder(manager).max_size(1).build().expect("a pool");
    let timeout = Duration::from_secs(1);
    let schema = PostgresSchema::search_path();
    let sql = Arc::new(Sql::new(&schema, timeout, Layout::OneServer, false));
    Group::new(1, pool, sql, Settling::new(None), true, timeout)
}

/// A runtime shutting down drops its tasks, a slot's holder among them,
/// while a write waits: the slot goes back to a task the runtime drops at
/// once, unpolled. That drop must not give the slot back again (it would
/// spawn again, and again, until the stack overflows: seen when a test
/// panicked with writes waiting).
#[test]
fn a_runtime_shutting_down_with_a_write_waiting_gives_its_slot_back_once() {
    let group = group();
    let op: Op<'_, u32> = Op::Claim {
        root_run_id: "root",
        run_id: "run",
    };
    let Some(assumed) = Assumed::of(&op, Layout::OneServer, 1) else {
        panic!("a first claim has an assumed write")
    };
    let (reply, _waiting_for) = oneshot::channel();
    {
        let mut state = group.state();
        state.free = 0; // the slot is the task's below
        state.waiting.push_back(Waiting {
            ticket: 0,
            write: assumed.write,
            deadline: Instant::now() + Duration::from_secs(60),
            reply,
        });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let slot = Slot(Some(Arc::clone(&group)));
    drop(runtime.spawn(async move {
        let _held = slot;
        std::future::pending::<()>().await
    }));
    drop(runtime);
    assert_eq!(
        group.state().waiting.len(),
        1,
        "the write still waits, unsent"
    );
}
