//! The ledger's adapter: one [`WatchCell`] around the core [`Ledger`], RAII
//! scopes, and taken entries that end their own children. Every method is
//! "lock, call the core, wake, return"; children are ended after unlocking,
//! and asked whether they are being ended outside every lock (`arrive`).

use std::fmt;
use std::time::{Duration, Instant};

use super::core::{
    Adoption, Arrival, Child, Counts, Ledger, Live, RegisterError, ScopeToken, Taken, Waited,
};
use crate::facts::IdError;
use crate::sync::Arc;
use crate::trace;
use crate::waiter::WatchCell;

/// A launched child as the ledger keeps it.
pub type BoxedChild = Box<dyn Child + Send + Sync>;

type Core = Ledger<Delegation, Shared, Instant>;

mod shared;
use shared::Shared;

/// A child delegation of a task, as the runtime launched it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Delegation {
    /// The task that started it; must be the task in scope (D2).
    pub task_id: String,
    /// The capsule (agent package) it runs.
    pub capsule: String,
    /// The capsule's version.
    pub version: String,
    /// The child's session.
    pub child_session_id: String,
    /// The child's working directory.
    pub child_workdir: String,
    /// When it started: `take_overdue` measures from here.
    pub started: Instant,
}

/// The delegation ledger of one agent. Clones share the ledger.
///
/// ```
/// use baton::ledger::{Arrival, Counts, Delegation, Delegations};
/// use std::time::Instant;
///
/// let ledger = Delegations::new();
/// let scope = ledger.scope_task("tsk_a")?;
/// let delegation = Delegation {
///     task_id: "tsk_a".into(),
///     capsule: "researcher".into(),
///     version: "1.0.0".into(),
///     child_session_id: "ses_child".into(),
///     child_workdir: "/tmp/child".into(),
///     started: Instant::now(),
/// };
/// ledger.register("dlg_1", delegation)?;
/// assert_eq!(ledger.arrive("dlg_1"), Arrival::Delivered);
/// assert_eq!(ledger.arrive("dlg_1"), Arrival::AlreadyDelivered);
/// assert_eq!(ledger.take_arrived().len(), 1);
/// drop(scope); // ends the scope: the ledger is empty again
/// assert_eq!(ledger.counts(), Counts { outstanding: 0, arrived: 0 });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Delegations {
    cell: Arc<WatchCell<Core>>,
}

/// The scope of one task: dropping it ends the scope, taking every entry and
/// ending every child that has not arrived (D3, D5). Dropping a scope that
/// a newer `scope_task` replaced changes nothing.
#[must_use = "dropping the scope ends it at once"]
pub struct DelegationScope {
    cell: Arc<WatchCell<Core>>,
    token: ScopeToken,
}

/// A delegation taken out of the ledger. If it had not arrived, dropping it
/// ends its child (D3: no child is silently dropped) unless the caller took
/// the child with [`take_child`](Self::take_child).
#[must_use = "dropping a taken delegation that has not arrived ends its child; \
              call take_child() to keep the child running"]
pub struct TakenDelegation {
    taken: Taken<Delegation, Shared, Instant>,
}

/// The live delegations at one moment, in id order, as listed by
/// [`Delegations::live`]: a snapshot that later changes to the ledger leave
/// as it was. Iterating it yields each delegation's id and what was
/// registered.
pub type DelegationsSnapshot = Live<Delegation>;

impl Delegations {
    /// An empty ledger with no task in scope.
    pub fn new() -> Self {
        Self {
            cell: Arc::new(WatchCell::new(Ledger::new())),
        }
    }

    /// Scopes `task`. The previous scope's entries are taken and its
    /// children not arrived are ended.
    ///
    /// # Errors
    ///
    /// [`IdError`] if `task` is not an acceptable id (the check delegation
    /// ids pass: non-empty, at most 256 bytes, no control character); the
    /// ledger, and the scope before, are then unchanged.
    pub fn scope_task(&self, task: impl Into<String>) -> Result<DelegationScope, IdError> {
        let task: String = task.into();
        #[cfg(feature = "tracing")]
        let traced = task.clone();
        let scoped = self.cell.update(|ledger| match ledger.scope_task(task) {
            Ok(scoped) => (true, Ok(scoped)),
            Err(error) => (false, Err(error)),
        });
        let (token, left) = match scoped {
            Ok(scoped) => scoped,
            Err(error) => {
                trace::ledger_refused!(op = "scope_task", task = traced, error = %error);
                return Err(error);
            }
        };
        trace::ledger_debug!(task = traced, left = left.len(), "scoped");
        end(left);
        Ok(DelegationScope {
            cell: Arc::clone(&self.cell),
            token,
        })
    }

    /// The task in scope.
    pub fn task_id(&self) -> Option<String> {
        self.cell
            .read(|ledger| ledger.scope().map(|(task, _)| task.to_owned()))
    }

    /// Registers delegation `id`.
    ///
    /// # Errors
    ///
    /// [`RegisterError`]: an invalid id, no task in scope, another task, or
    /// an id already used in this scope. The ledger is then unchanged.
    pub fn register(&self, id: &str, delegation: Delegation) -> Result<(), RegisterError> {
        // The task only for the event: the ledger reads it from the data.
        #[cfg(feature = "tracing")]
        let task = delegation.task_id.clone();
        let result = self.cell.update(|ledger| {
            let started = delegation.started;
            let result = ledger.register_with(id, delegation, task_of, started);
            (result.is_ok(), result)
        });
        match &result {
            Ok(()) => trace::ledger_debug!(id, task, "registered"),
            Err(_error) => trace::ledger_refused!(op = "register", id, error = %_error),
        }
        result
    }

    /// Gives delegation `id` its launched child. A child replaced, or given
    /// to an id that is not live, is ended at once (D3).
    pub fn adopt(&self, id: &str, child: BoxedChild) {
        let child = Shared::new(child);
        let adoption = self.cell.update(|ledger| {
            let adoption = ledger.adopt(id, child);
            (matches!(adoption, Adoption::Adopted), adoption)
        });
        match adoption {
            Adoption::Adopted => trace::ledger_debug!(id, adoption = "adopted", "adopted"),
            Adoption::Replaced(child) => {
                trace::ledger_debug!(id, adoption = "replaced", "adopted");
                child.begin_ending();
                trace::ledger_debug!(id, why = "replaced", "child_ended");
            }
            Adoption::NotLive(child) => {
                trace::ledger_debug!(id, adoption = "not_live", "adopted");
                child.begin_ending();
                trace::ledger_debug!(why = "not_live", "child_ended");
            }
        }
    }

    /// Removes delegation `id` and returns it. Like every taken delegation,
    /// dropping it ends its child unless it arrived (D3: no child is
    /// silently left running); a caller that closes the child itself takes
    /// it first with [`TakenDelegation::take_child`].
    ///
    /// ```compile_fail
    /// #![deny(unused_must_use)]
    /// let ledger = baton::ledger::Delegations::new();
    /// ledger.discard("dlg_a"); // would end the child unseen: refused
    /// ```
    #[must_use = "dropping the discarded delegation ends its child unless it arrived; \
                  call take_child() on it to keep the child running"]
    pub fn discard(&self, id: &str) -> Option<TakenDelegation> {
        self.take("discard", |ledger| ledger.discard(id).into_iter().collect())
            .pop()
    }

    /// Delivers delegation `id`'s outcome (D1): `Delivered` once, waking one
    /// pending `wait_for_arrival` or storing one permit for the next (D6).
    ///
    /// The entry's child, if it has one, is asked [`Child::is_being_ended`]
    /// outside the ledger's lock, so it may call back into the ledger: one
    /// lock finds the child, the next decides (an entry with no child is
    /// decided under the first). If the entry's child changed meanwhile
    /// (an `adopt`), the new one is asked.
    pub fn arrive(&self, id: &str) -> Arrival {
        // The child asked so far, and its answer.
        let mut asked: Option<(Shared, bool)> = None;
        loop {
            let step = self.cell.update(|ledger| {
                let arrival = ledger.arrive_asking(id, |now| match &asked {
                    Some((then, answer)) if Shared::same(now, then) => Ok(*answer),
                    Some(_) | None => Err(now.clone()),
                });
                (matches!(arrival, Ok(Arrival::Delivered)), arrival)
            });
            match step {
                Ok(arrival) => {
                    match arrival {
                        Arrival::Delivered => trace::ledger_debug!(id, "delivered"),
                        Arrival::AlreadyDelivered
                        | Arrival::NotOutstanding
                        | Arrival::BeingEnded => trace::ledger_refused!(
                            op = "arrive",
                            id,
                            arrival = trace::arrival_name(arrival)
                        ),
                    }
                    return arrival;
                }
                // Asked outside every lock, so that it may call back in.
                Err(child) => {
                    let answer = child.is_being_ended();
                    asked = Some((child, answer));
                }
            }
        }
    }

    /// The delegations outstanding and arrived (D4).
    pub fn counts(&self) -> Counts {
        self.cell.read(Ledger::counts)
    }

    /// Resolves once an outcome is delivered for it (D6), exactly like
    /// `tokio::sync::Notify::notify_one`'s `notified()`: each `Delivered` wakes one
    /// pending wait (two arrivals with two pending waits resolve both), or, with none
    /// pending without a wake-up, stores one permit that the next wait takes at once;
    /// with no wait pending, arrivals coalesce into that one permit. A scope's end
    /// discards the stored permit and the wake-ups given to pending waits not yet
    /// resolved (the arrivals they stood for were taken with the scope); those waits
    /// stay pending, for the next scope's arrivals. A wait is pending from its first
    /// poll that does not resolve.
    ///
    /// # Cancel safety
    ///
    /// A dropped wait consumes nothing it was not given, and a wake-up it was given
    /// is passed on to another pending wait or the stored permit.
    pub async fn wait_for_arrival(&self) {
        let mut pending = false;
        self.cell
            .wait_until_or_leave(
                move |ledger| {
                    let waited = if pending {
                        ledger.poll_wait()
                    } else {
                        ledger.begin_wait()
                    };
                    // `NotWaiting` cannot follow this future's own `Pending`
                    // (nothing else ends a wait); were it ever answered, the
                    // next poll would begin a wait again.
                    pending = waited == Waited::Pending;
                    (waited == Waited::Resolved).then_some(())
                },
                // Wake the others if wake-ups stay with them: one that
                // became pending after the arrival was never woken for it.
                |ledger| ledger.drop_wait() == Waited::DroppedWakeOthers,
            )
            .await
    }

    /// Takes every arrived delegation, in id order.
    #[must_use = "the taken delegations are the arrived outcomes"]
    pub fn take_arrived(&self) -> Vec<TakenDelegation> {
        self.take("arrived", Ledger::take_arrived)
    }

    /// Takes the delegations not arrived with `started + bound <= now`, in
    /// id order. Dropping them ends their children.
    #[must_use = "dropping the taken delegations ends their children; take_child() keeps one"]
    pub fn take_overdue(&self, bound: Duration, now: Instant) -> Vec<TakenDelegation> {
        let taken = self.take("overdue", |ledger| ledger.take_overdue(bound, now));
        #[cfg(feature = "tracing")]
        for taken in &taken {
            let delegation = taken.delegation();
            trace::ledger_debug!(
                id = taken.id(),
                task = delegation.task_id,
                waited_ms = u64::try_from(
                    now.saturating_duration_since(delegation.started)
                        .as_millis()
                )
                .unwrap_or(u64::MAX),
                "overdue"
            );
        }
        taken
    }

    /// When the next delegation not arrived becomes overdue under `bound`.
    pub fn next_overdue(&self, bound: Duration) -> Option<Instant> {
        self.cell.read(|ledger| ledger.next_overdue(bound))
    }

    /// Takes every delegation, in id order. Dropping one that has not
    /// arrived ends its child.
    #[must_use = "dropping the taken delegations ends the children not arrived; take_child() keeps one"]
    pub fn take_all(&self) -> Vec<TakenDelegation> {
        self.take("all", Ledger::take_all)
    }

    /// The live delegations in id order, as a snapshot, under the lock: past
    /// 32 entries it shares the ledger's persistent map in O(1) (the first
    /// snapshot builds it, in O(n)), below it copies at most 32 handles.
    ///
    /// ```
    /// use baton::ledger::{Delegation, Delegations};
    /// use std::time::Instant;
    ///
    /// let ledger = Delegations::new();
    /// let scope = ledger.scope_task("tsk_a").unwrap();
    /// let delegation = |capsule: &str| Delegation {
    ///     task_id: "tsk_a".into(),
    ///     capsule: capsule.into(),
    ///     version: "0.1.0".into(),
    ///     child_session_id: "ses_1".into(),
    ///     child_workdir: "/tmp/1".into(),
    ///     started: Instant::now(),
    /// };
    /// ledger.register("dlg_b", delegation("writer")).unwrap();
    /// ledger.register("dlg_a", delegation("researcher")).unwrap();
    ///
    /// let live = ledger.live();
    /// drop(ledger.take_all()); // the snapshot keeps what it saw
    /// let rows: Vec<_> = live.iter().map(|(id, d)| (&**id, &*d.capsule)).collect();
    /// assert_eq!(rows, [("dlg_a", "researcher"), ("dlg_b", "writer")]);
    /// assert!(ledger.live().is_empty());
    /// # drop(scope);
    /// ```
    pub fn live(&self) -> DelegationsSnapshot {
        self.cell.read(Ledger::live)
    }

    /// The number of ids remembered as delivered in the current scope
    /// (diagnostics): freed when the scope ends.
    pub fn remembered(&self) -> usize {
        self.cell.read(Ledger::delivered_len)
    }

    /// The number of `wait_for_arrival` futures waiting (diagnostics).
    pub fn waiter_count(&self) -> usize {
        self.cell.waiter_count()
    }

    /// Takes what `f` takes under the lock; `_how` names the take for its
    /// event.
    fn take(
        &self,
        _how: &'static str,
        f: impl FnOnce(&mut Core) -> Vec<Taken<Delegation, Shared, Instant>>,
    ) -> Vec<TakenDelegation> {
        let taken = self.cell.update(|ledger| {
            let taken = f(ledger);
            (!taken.is_empty(), taken)
        });
        if !taken.is_empty() {
            trace::ledger_debug!(how = _how, count = taken.len(), "taken");
        }
        taken
            .into_iter()
            .map(|taken| TakenDelegation { taken })
            .collect()
    }
}

impl Default for Delegations {
    fn default() -> Self {
        Self::new()
    }
}

/// The task a delegation names (D2: it must be the task in scope).
fn task_of(delegation: &Delegation) -> &str {
    &delegation.task_id
}

/// Ends the children of `left` that had not arrived (outside every lock).
fn end(left: Vec<Taken<Delegation, Shared, Instant>>) {
    drop(
        left.into_iter()
            .map(|taken| TakenDelegation { taken })
            .collect::<Vec<_>>(),
    );
}

impl DelegationScope {
    /// This scope's token.
    pub fn token(&self) -> ScopeToken {
        self.token
    }
}

#[cfg(not(baton_loom_broken))]
impl Drop for DelegationScope {
    fn drop(&mut self) {
        let token = self.token;
        let left = self.cell.update(|ledger| {
            let left = ledger.end_scope(token);
            (left.is_some(), left)
        });
        if let Some(left) = left {
            trace::ledger_debug!(scope = token.get(), left = left.len(), "scope_ended");
            end(left);
        }
    }
}

/// BROKEN ON PURPOSE, only under `--cfg baton_loom_broken` (the loom suite's
/// self-test, `loom-tests/tests/loom_self_test.rs`): checks the token under
/// one lock and ends whatever scope is current under a **second**, so a
/// `scope_task` in between has its newer scope ended (the seed's defect).
#[cfg(baton_loom_broken)]
impl Drop for DelegationScope {
    fn drop(&mut self) {
        let token = self.token;
        let current = self
            .cell
            .read(|ledger| ledger.scope().map(|(_, current)| current) == Some(token));
        if !current {
            return;
        }
        let left = self.cell.update(|ledger| {
            let current = ledger.scope().map(|(_, current)| current);
            let left = current.and_then(|current| ledger.end_scope(current));
            (left.is_some(), left)
        });
        if let Some(left) = left {
            end(left);
        }
    }
}

impl TakenDelegation {
    /// The delegation's id.
    pub fn id(&self) -> &str {
        &self.taken.id
    }

    /// What was registered.
    pub fn delegation(&self) -> &Delegation {
        &self.taken.entry.data
    }

    /// Whether its outcome was delivered.
    pub fn arrived(&self) -> bool {
        self.taken.entry.arrived
    }

    /// Takes the child out: the caller, not this handle's drop, now ends it.
    pub fn take_child(&mut self) -> Option<BoxedChild> {
        self.taken.entry.child.take().map(Shared::into_boxed)
    }
}

impl Drop for TakenDelegation {
    fn drop(&mut self) {
        if let Some(child) = self.taken.child_to_end() {
            child.begin_ending();
            trace::ledger_debug!(id = self.id(), why = "taken", "child_ended");
        }
    }
}

impl fmt::Debug for Delegations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Counts {
            outstanding,
            arrived,
        } = self.counts();
        f.debug_struct("Delegations")
            .field("task_id", &self.task_id())
            .field("outstanding", &outstanding)
            .field("arrived", &arrived)
            .finish()
    }
}

impl fmt::Debug for DelegationScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelegationScope")
            .field("token", &self.token)
            .finish()
    }
}

impl fmt::Debug for TakenDelegation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TakenDelegation")
            .field("id", &self.id())
            .field("arrived", &self.arrived())
            .field("has_child", &self.taken.entry.child.is_some())
            .finish()
    }
}
