//! The lease of a pooled connection to one operation, and the settling of
//! a connection whose operation ended mid-way (its future dropped, or its
//! time up): the log's next operation waits until that settling is done,
//! so it reads whatever the ended operation wrote, and nothing of it lands
//! later.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Object;
use tokio::sync::watch;
use tokio_postgres::CancelToken;

/// Sends a cancel request for the statement a connection is running, over
/// a connection of its own made as the log's are (the same TLS).
pub(super) type Cancel = Arc<dyn Fn(CancelToken) -> CancelSent + Send + Sync>;

/// A cancel request on its way; it answers nothing (a cancel the server
/// cannot act on changes nothing).
pub(super) type CancelSent = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The settlings of one log: how many are in progress, and how to cancel
/// the statement of a connection being settled.
pub(super) struct Settling {
    pending: watch::Sender<usize>,
    /// Unwind safe as asserted: a cancel request is made afresh each time
    /// (a connection of its own), so a panic in one leaves nothing half
    /// changed for the next.
    cancel: Option<AssertUnwindSafe<Cancel>>,
}

impl Settling {
    /// `cancel`, if the log knows how to reach its server for a cancel
    /// request; without it a statement still running when its settling
    /// gives up is left to the server, and the connection is closed.
    pub(super) fn new(cancel: Option<Cancel>) -> Arc<Self> {
        Arc::new(Self {
            pending: watch::Sender::new(0),
            cancel: cancel.map(AssertUnwindSafe),
        })
    }

    /// Waits until no connection is being settled.
    pub(super) async fn done(&self) {
        if *self.pending.borrow() == 0 {
            return;
        }
        let mut pending = self.pending.subscribe();
        // `self` holds the sender: the channel never closes under it.
        let _ = pending.wait_for(|pending| *pending == 0).await;
    }
}

/// A connection an operation holds. Clean (no request of the operation
/// left unanswered on it) it goes back to the pool when dropped; dirty —
/// the operation's future was dropped mid-way, or its time ran out — it is
/// settled first, by a task: a `ROLLBACK` sent after whatever the
/// operation had sent (the server runs one connection's requests in
/// order), which ends its transaction if one is open and waits out a
/// statement in flight; then the connection goes back to the pool.
///
/// A dropped operation's statement is waited for up to the log's timeout
/// (a write in flight may still commit: its caller let it go, not the
/// log); a timed-out one's not at all, if the log can cancel it. Past that, a cancel request ends
/// the statement (a write cancelled before its commit writes nothing), and
/// the `ROLLBACK` is waited for once more, up to the timeout, and the
/// connection is closed (a late cancel could otherwise land on its next
/// statement), as is one whose `ROLLBACK` failed. The log's next
/// operation waits until every settling is done (see [`Settling::done`]),
/// so it reads whatever the ended one committed.
pub(super) struct Lease {
    object: Option<Object>,
    dirty: bool,
    timed_out: bool,
    settling: Arc<Settling>,
    timeout: Duration,
}

impl Lease {
    /// A connection of the log's pool, held by an operation from now on.
    pub(super) fn new(object: Object, settling: &Arc<Settling>, timeout: Duration) -> Self {
        Self {
            object: Some(object),
            dirty: true,
            timed_out: false,
            settling: Arc::clone(settling),
            timeout,
        }
    }

    /// The connection, until the lease ends.
    pub(super) fn object(&self) -> Option<&Object> {
        self.object.as_ref()
    }

    /// The operation is done with the connection, which is clean.
    pub(super) fn release(mut self) {
        self.dirty = false;
    }

    /// The operation's time ran out mid-way: settle its connection now,
    /// its statement in flight cancelled.
    pub(super) fn time_out(mut self) {
        self.timed_out = true;
    }

    /// Closes the connection: it failed, or may still be inside a
    /// transaction that nobody will end.
    pub(super) fn discard(mut self) {
        if let Some(object) = self.object.take() {
            drop(Object::take(object));
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(object) = self.object.take() else {
            return;
        };
        if !self.dirty {
            return; // back to the pool
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            drop(Object::take(object));
            return;
        };
        let pending = Pending::new(Arc::clone(&self.settling));
        // Without a way to cancel, a timed-out statement is waited for as
        // a dropped one is.
        let patience = if self.timed_out && self.settling.cancel.is_some() {
            Duration::ZERO
        } else {
            self.timeout
        };
        let timeout = self.timeout;
        drop(runtime.spawn(async move {
            let pending = pending;
            let cancel = pending.0.cancel.as_deref();
            if !settle(&object, cancel, patience, timeout).await {
                drop(Object::take(object));
            }
        }));
    }
}

/// Ends whatever `object`'s operation left running (see [`Lease`]);
/// whether the connection is clean again.
async fn settle(
    object: &Object,
    cancel: Option<&Cancel>,
    patience: Duration,
    timeout: Duration,
) -> bool {
    // Sent when first polled, which `timeout` does before its deadline.
    let mut rollback = pin!(object.batch_execute("ROLLBACK"));
    if let Ok(done) = tokio::time::timeout(patience, &mut rollback).await {
        return done.is_ok();
    }
    let Some(cancel) = cancel else {
        return false;
    };
    let token = object.cancel_token();
    let _ = tokio::time::timeout(timeout, cancel(token)).await;
    // Waited for, so that the cancelled statement has ended before the
    // log's next operation runs; then the connection is closed, never
    // reused: the server acts on a cancel request's signal when its
    // backend next looks, which may be during whatever the connection runs
    // next (seen: a read after a timed-out write answered "canceling
    // statement due to user request").
    let _ = tokio::time::timeout(timeout, &mut rollback).await;
    false
}

/// One settling in progress, counted from its start to its end (also when
/// its task is dropped unfinished, as at a runtime's shutdown).
pub(super) struct Pending(Arc<Settling>);

impl Pending {
    pub(super) fn new(settling: Arc<Settling>) -> Self {
        settling.pending.send_modify(|pending| *pending += 1);
        Self(settling)
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.pending.send_modify(|pending| *pending -= 1);
    }
}
