//! Group commit: the assumed writes ([`Assumed`]) of operations of
//! different Runs, sent together in one transaction when the log's slots
//! are all busy, each answered from its own statement's count.
//!
//! A log with group commit lets at most `slots` claims, appends and
//! finishes run at once on their own (a batch of one: exactly the path
//! without group commit). Any more wait in a queue; when a slot is given
//! back, a task takes up to [`MAX_BATCH`] of the waiting writes, at most
//! one of each Run, and sends them in one flight: `BEGIN`, each write's
//! statements in the order of their Runs, `COMMIT`. A write that has
//! waited [`SLOT_WAIT`] for a slot is sent without one (with whatever
//! waits beside it), so operations that hold the slots long — a lock
//! another transaction holds, a slow server — hold up no other Run. What
//! each operation is answered:
//!
//! - **committed, its row written:** the rule's answer on the assumed
//!   facts, as when its write is sent alone;
//! - **committed, nothing written** (its facts are other): it runs its
//!   own transaction, which reads the facts under the lock;
//! - **rolled back** (a statement failed — an append that found a pause,
//!   a deadlock, a lock timeout, a guard's refusal — or the connection
//!   was lost before the commit was sent, or at the commit a
//!   serialization failure or a deadlock): nothing of the batch was
//!   written, and every operation of it runs as it would without group
//!   commit, alone, so no operation is answered from another one's
//!   failure;
//! - **the commit's reply lost, or the time up once sent:**
//!   [`LogError::OutcomeUnknown`] for every operation of it, as for one
//!   operation;
//! - **the time up while still waiting:** nothing was sent
//!   ([`LogError::Unavailable`]).
//!
//! Each statement is the one its operation sends alone, run in the
//! batch's transaction after the ones before it, to its end before the
//! next, with a snapshot of its own taken then (`READ COMMITTED`) that
//! holds the batch's earlier writes: the batch is its writes run one after
//! another, in its order, with nothing of another transaction landing
//! between them (one of the orders they may run in alone), and committed
//! together. Each answer is its statement's, as alone. Two writes of one
//! root Run may share a batch (a Run's first claim makes its root's row,
//! which the next one's statement then finds, as after a commit); two of
//! one Run never do. A batch's row locks are taken in the order of its
//! Runs, so two
//! batches never take them crosswise; and a batch waits at most
//! [`BATCH_LOCK_WAIT`](super::sql::BATCH_LOCK_WAIT) for a lock another transaction holds (then it
//! rolls back, and its operations run alone), so no Run's write waits
//! behind another Run's lock.

mod batch;

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::durable::contract::LogError;
use crate::durable::row::corrupt;

use super::assumed::{Assumed, Write};
use super::failure::unavailable;
use super::lease::{Pending, Settling};
use super::op::Answer;
use super::sql::Sql;

/// The most writes one batch sends.
pub(super) const MAX_BATCH: usize = 64;

/// The longest a write waits for a slot: then a task sends it (with the
/// others waiting) without one, so operations that hold the slots long —
/// a lock another transaction holds, a slow server — hold up no other
/// Run's write for longer.
pub(super) const SLOT_WAIT: Duration = Duration::from_millis(20);

/// A log's group commit.
pub(super) struct Group {
    /// Unwind safe as the log's own pool is (see `PostgresLog`).
    pool: AssertUnwindSafe<Pool>,
    sql: Arc<Sql>,
    settling: Arc<Settling>,
    prepared: bool,
    timeout: Duration,
    /// Its slots, as opened.
    slots: usize,
    state: Mutex<State>,
    counts: Mutex<GroupCommits>,
}

/// What a log's group commit has sent so far
/// ([`PostgresLog::group_commits`](super::PostgresLog::group_commits)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupCommits {
    /// Batches sent, each one transaction (a batch may hold one write:
    /// the only one waiting when a slot was given back).
    pub batches: u64,
    /// The writes sent in them.
    pub writes: u64,
    /// The batches that rolled back, their operations run alone.
    pub rolled_back: u64,
    /// The batches whose outcome is unknown (their commit reply lost, or
    /// their time up once sent).
    pub unknown: u64,
}

#[derive(Default)]
struct State {
    /// Slots not held by an operation or a batch's task.
    free: usize,
    waiting: VecDeque<Waiting>,
    /// The operations of batches being sent, by ticket, each with the
    /// settling it holds once its operation is dropped (see [`Ticket`]).
    sent: HashMap<u64, Option<Pending>>,
    next: u64,
}

struct Waiting {
    ticket: u64,
    write: Write,
    deadline: Instant,
    reply: oneshot::Sender<Reply>,
}

/// What a batch answers one of its operations.
enum Reply {
    /// Committed; its statement's count of affected rows.
    Committed(u64),
    /// Nothing of the batch was written: the operation runs alone.
    RolledBack,
    /// The commit may have been made.
    Unknown(String),
    /// The batch's time ran out before anything was sent.
    NotSent,
}

/// Where an operation's group commit leaves it.
pub(super) enum Grouped<P> {
    /// Answered by its batch.
    Answered(Result<Answer<P>, LogError>),
    /// To run alone, as without group commit (holding a slot, if it took
    /// one, until it is done).
    Alone(Option<Slot>),
    /// To run its transaction: its batch found its facts other.
    Transaction,
}

impl Group {
    /// A group commit of `slots` slots (at least one).
    pub(super) fn new(
        slots: usize,
        pool: Pool,
        sql: Arc<Sql>,
        settling: Arc<Settling>,
        prepared: bool,
        timeout: Duration,
    ) -> Arc<Self> {
        let slots = slots.max(1);
        Arc::new(Self {
            pool: AssertUnwindSafe(pool),
            sql,
            settling,
            prepared,
            timeout,
            slots,
            state: Mutex::new(State {
                free: slots,
                ..State::default()
            }),
            counts: Mutex::new(GroupCommits::default()),
        })
    }

    /// How many slots it has.
    pub(super) fn slots(&self) -> usize {
        self.slots
    }

    /// What the group commit has sent so far.
    pub(super) fn counts(&self) -> GroupCommits {
        *self
            .counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic never leaves the state half changed: recover it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `assumed`'s write in a batch if every slot is busy; else takes
    /// a slot for the operation to run alone.
    pub(super) async fn run<P>(
        self: &Arc<Self>,
        assumed: Assumed<P>,
        deadline: Instant,
    ) -> Grouped<P> {
        let run_id = assumed.write.run_id().to_owned();
        let (ticket, reply) = {
            let mut state = self.state();
            if state.free > 0 {
                state.free -= 1;
                return Grouped::Alone(Some(Slot(Some(Arc::clone(self)))));
            }
            let (sender, reply) = oneshot::channel();
            let ticket = state.next;
            state.next += 1;
            state.waiting.push_back(Waiting {
                ticket,
                write: assumed.write,
                deadline,
                reply: sender,
            });
            (ticket, reply)
        };
        let mut ticket = Ticket {
            group: Arc::clone(self),
            number: ticket,
            answered: false,
        };
        match ticket.wait(reply, deadline).await {
            Reply::Committed(1) => Grouped::Answered(Ok(assumed.answer)),
            Reply::Committed(0) => Grouped::Transaction,
            Reply::Committed(_) => Grouped::Answered(Err(corrupt(
                &run_id,
                "one Run's write affected several rows",
            ))),
            Reply::RolledBack => Grouped::Alone(None),
            Reply::Unknown(why) => Grouped::Answered(Err(LogError::OutcomeUnknown(why.into()))),
            Reply::NotSent => Grouped::Answered(Err(unavailable(format!(
                "the operation did not start within {:?} (its group commit waited); nothing was sent",
                self.timeout
            )))),
        }
    }

    /// A slot given back: to a batch's task if writes are waiting.
    fn give_back(self: Arc<Self>) {
        let mut state = self.state();
        if state.waiting.is_empty() {
            state.free += 1;
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            state.free += 1; // the runtime is gone: nobody waits any more
            return;
        };
        drop(state);
        // The slot is taken up only once the task runs: a runtime shutting
        // down drops the task unpolled, and with it nothing that gives a
        // slot back (which would spawn again, and again).
        drop(runtime.spawn(async move {
            let slot = Slot(Some(Arc::clone(&self)));
            self.send_batches(Some(slot)).await;
        }));
    }

    /// A write has waited [`SLOT_WAIT`] for a slot: the slots are held by
    /// operations that take long (a lock another transaction holds, a slow
    /// server), so a task sends what waits without one.
    fn overflow(self: Arc<Self>) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            drop(runtime.spawn(self.send_batches(None)));
        }
    }

    /// Sends batches while writes are waiting; then gives back `slot`, if
    /// the task holds one.
    async fn send_batches(self: Arc<Self>, slot: Option<Slot>) {
        loop {
            let batch = self.take();
            if batch.is_empty() {
                drop(slot);
                return;
            }
            self.send(batch).await;
        }
    }

    /// Takes the next batch: up to [`MAX_BATCH`] waiting writes, the
    /// first of each Run, in the order of their Runs.
    fn take(&self) -> Vec<Waiting> {
        let mut state = self.state();
        let mut runs = HashSet::new();
        let mut batch = Vec::new();
        let mut left = VecDeque::new();
        while let Some(waiting) = state.waiting.pop_front() {
            if batch.len() < MAX_BATCH && runs.insert(owned(waiting.write.key())) {
                batch.push(waiting);
            } else {
                left.push_back(waiting);
            }
        }
        state.waiting = left;
        for waiting in &batch {
            state.sent.insert(waiting.ticket, None);
        }
        batch.sort_by(|a, b| a.write.key().cmp(&b.write.key()));
        batch
    }
}

/// A Run's key, owned.
fn owned((root_run_id, run_id): (&str, &str)) -> (String, String) {
    (root_run_id.to_owned(), run_id.to_owned())
}

/// A slot held by an operation running alone, or by a batch's task: given
/// back when dropped.
pub(super) struct Slot(Option<Arc<Group>>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            group.give_back();
        }
    }
}

/// An operation's place in the queue, then in a batch being sent. Dropped
/// unanswered (its operation's future dropped), it leaves the queue; or,
/// its batch being sent, it holds the log's settling until the batch is
/// answered, so the log's next operation reads whatever the batch wrote.
struct Ticket {
    group: Arc<Group>,
    number: u64,
    answered: bool,
}

impl Ticket {
    /// The batch's reply; nothing sent if the deadline passes while the
    /// write still waits. Once its batch is being sent, the batch's own
    /// deadline (the earliest of its operations') bounds the wait.
    async fn wait(&mut self, mut reply: oneshot::Receiver<Reply>, deadline: Instant) -> Reply {
        let patience = deadline.min(Instant::now() + SLOT_WAIT);
        let answer = match tokio::time::timeout_at(patience, &mut reply).await {
            Ok(answer) => Ok(answer),
            Err(_) => {
                if patience < deadline && self.waiting() {
                    Arc::clone(&self.group).overflow();
                }
                tokio::time::timeout_at(deadline, &mut reply).await
            }
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(_) => {
                if self.leave() {
                    self.answered = true;
                    return Reply::NotSent;
                }
                reply.await
            }
        };
        self.answered = true;
        answer.unwrap_or_else(|_| {
            Reply::Unknown("the group commit's task ended without an answer".to_owned())
        })
    }
}

impl Ticket {
    /// Whether the write still waits in the queue.
    fn waiting(&self) -> bool {
        let state = self.group.state();
        state.waiting.iter().any(|w| w.ticket == self.number)
    }

    /// Takes the write out of the queue, if it is still waiting there.
    fn leave(&self) -> bool {
        let mut state = self.group.state();
        let place = state.waiting.iter().position(|w| w.ticket == self.number);
        place
            .and_then(|place| state.waiting.remove(place))
            .is_some()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        if self.leave() {
            return;
        }
        let mut state = self.group.state();
        if let Some(held) = state.sent.get_mut(&self.number) {
            *held = Some(Pending::new(Arc::clone(&self.group.settling)));
        }
    }
}

#[cfg(test)]
mod tests;
