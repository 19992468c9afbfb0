//! The one cell a gate's handles share: the core [`State`] under a
//! [`WatchCell`], the copy of its kind read without the lock, and
//! [`Release`], the guard whose `Drop` is every "dropped → `Cancel(T)`" row
//! of SPEC's cancel-safety table.

use std::any::Any;
use std::fmt;
use std::ops::Deref;

use crate::cancel::{CancelSignal, Cancellation};
use crate::facts::HandoffPause;
use crate::gate::core::{
    self, Config, Event, Gone, Outcome, Refusal, State, StateKind, Ticket, Wait,
};
use crate::sync::{Arc, Mirror};
use crate::trace::{self, GateNote};
use crate::waiter::{WaitUntil, WatchCell};

/// While a handoff is held: the worker's cancellation, which `commit`
/// reads so that it sees it at the moment it commits (S3). baton's own
/// [`CancelSignal`] is kept as it is (one reference count); any other
/// [`Cancellation`] behind a box (one allocation a held handoff).
pub(super) enum CancelBit {
    Signal(CancelSignal),
    Other(Box<dyn Fn() -> bool + Send + Sync>),
}

impl CancelBit {
    pub(super) fn of<C: Cancellation>(cancel: &C) -> Self {
        match (cancel as &dyn Any).downcast_ref::<CancelSignal>() {
            Some(signal) => Self::Signal(signal.clone()),
            None => {
                let cancel = cancel.clone();
                Self::Other(Box::new(move || cancel.is_canceled()))
            }
        }
    }

    pub(super) fn is_canceled(&self) -> bool {
        match self {
            Self::Signal(signal) => signal.is_canceled(),
            Self::Other(bit) => bit(),
        }
    }
}

/// `repr(C)`: the state first, in the gate's hot first 64 bytes (see
/// [`Shared`]); the cancel bit, read by a commit alone, after it.
#[repr(C)]
pub(super) struct Slot<P> {
    pub(super) state: State<P>,
    /// Set when the state becomes `Held`, cleared when it moves on.
    pub(super) cancel: Option<CancelBit>,
}

impl<P: fmt::Debug> fmt::Debug for Slot<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// `repr(C)`, hot fields first: the reference count `Arc` puts in front,
/// the kind's copy, the lock word and (see `WatchCell`) the version, the
/// waiter count and the state span the allocation's first 64 bytes (a
/// test pins it), so a reserve and its release under contention move one
/// or two cache lines between the cores (malloc aligns to 16, not 64)
/// rather than three; the config, only ever read, comes last.
#[repr(C)]
pub(super) struct Shared<P> {
    /// A copy of the state's [`StateKind`] (`as u8`), stored under the lock
    /// with every change of state and read without it, by the two answers
    /// the kind alone decides: `reserve`'s refusals and `boundary`'s "no
    /// handoff asked". Such an answer takes effect at that read: the kind
    /// was the state's kind then. Not in `Held`, whose commit is decided
    /// on a bit that changes without the lock
    /// ([`StateKind::copy_may_answer`] says why).
    pub(super) kind: Mirror,
    pub(super) cell: WatchCell<Slot<P>>,
    pub(super) config: Config,
}

impl<P> Shared<P> {
    /// A gate's cell for the Run `config` names, `Running` with no
    /// reservation yet.
    pub(super) fn new(config: Config) -> Self {
        Self {
            kind: Mirror::new(StateKind::Running as u8),
            cell: WatchCell::new(Slot {
                state: State::initial(),
                cancel: None,
            }),
            config,
        }
    }
}

impl<P: PartialEq> Shared<P> {
    /// Feeds `event` to the core under the lock. `Ok(true)`: the state moved;
    /// `Ok(false)`: ignored. `held` is kept if the state becomes `Held`.
    pub(super) fn apply(&self, event: Event<P>, held: Option<CancelBit>) -> Result<bool, Refusal> {
        let (result, note) = self
            .cell
            .update(|slot| self.apply_locked(slot, event, held));
        self.emit(note);
        result
    }

    /// [`apply`](Self::apply) under a lock the caller holds, with the note
    /// of the step, which the caller emits once the lock is released.
    pub(super) fn apply_locked(
        &self,
        slot: &mut Slot<P>,
        event: Event<P>,
        held: Option<CancelBit>,
    ) -> (bool, (Result<bool, Refusal>, GateNote)) {
        let begun = trace::gate_begin!(&slot.state, &event);
        let outcome = core::step(&self.config, &slot.state, event);
        let note = trace::gate_end!(begun, &outcome);
        let (changed, result) = self.enter_locked(slot, outcome, held);
        (changed, (result, note))
    }

    /// Emits the note of a step (with the `tracing` feature). Never under
    /// the lock: a subscriber is user code, and may call into the gate.
    #[inline(always)]
    pub(super) fn emit(&self, note: GateNote) {
        trace::gate_emit!(note, &self.config);
    }

    /// Carries out the core's `outcome` under the lock: a state it moved to
    /// replaces the slot's, and its kind the copy outside the lock.
    pub(super) fn enter_locked(
        &self,
        slot: &mut Slot<P>,
        outcome: Outcome<P>,
        held: Option<CancelBit>,
    ) -> (bool, Result<bool, Refusal>) {
        match outcome {
            Outcome::Moved(next) => {
                slot.cancel = if matches!(next, State::Held { .. }) {
                    held
                } else {
                    None
                };
                self.kind.store(next.kind() as u8);
                slot.state = next;
                (true, Ok(true))
            }
            Outcome::Ignored => (false, Ok(false)),
            Outcome::Refused(error) => (false, Err(error)),
        }
    }

    /// Feeds `Close`. A gate already sealed or closed ignores it (S6: no
    /// event leaves a terminal state), which the kind's copy answers
    /// without the lock: a worker dropping its gate after the seal, the
    /// end of every handoff, takes no lock. With the `tracing` feature the
    /// lock is taken anyway, for the `ignored` note's ticket.
    pub(super) fn close(&self) {
        #[cfg(not(feature = "tracing"))]
        if self.kind().is_terminal() {
            return;
        }
        let _ = self.apply(Event::Close, None);
    }

    /// The state's kind as of its last change, read without the lock.
    pub(super) fn kind(&self) -> StateKind {
        // Only `enter_locked` stores it, always a kind; `Running` (which
        // decides nothing without the lock) is a safe reading otherwise.
        StateKind::from_index(self.kind.load()).unwrap_or(StateKind::Running)
    }

    /// A future resolving with what `query` decides for `ticket`: the
    /// pause, or why it is gone, read under the same lock as the decision.
    pub(super) fn settle(
        &self,
        ticket: Ticket,
        query: core::Query<P>,
    ) -> WaitUntil<'_, Slot<P>, impl FnMut(&mut Slot<P>) -> Option<Settled<P>>> {
        self.cell
            .wait_until(move |slot| match query(&slot.state, ticket) {
                Wait::Pending => None,
                Wait::Resolved(pause) => Some(Ok(std::sync::Arc::clone(pause))),
                Wait::Gone => Some(Err(slot.state.kind().gone())),
            })
    }
}

/// What a wait on the gate settles with: the pause, or why it is gone.
pub(super) type Settled<P> = Result<std::sync::Arc<HandoffPause<P>>, Gone>;

/// Releases a ticket when dropped (`Cancel(T)`), unless disarmed. The one
/// place that implements the "dropped → `Cancel(T)`" rows of SPEC's
/// cancel-safety table. `S` is how it reaches the gate: the handles own a
/// reference count, `boundary` borrows the gate it runs on (no count to
/// take and give back).
pub(super) struct Release<P: PartialEq, S: Deref<Target = Shared<P>> = Arc<Shared<P>>> {
    pub(super) shared: S,
    pub(super) ticket: Ticket,
    pub(super) armed: bool,
}

impl<P: PartialEq, S: Deref<Target = Shared<P>>> Release<P, S> {
    /// From now on, dropping it releases nothing.
    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }
}

#[cfg(not(baton_loom_broken))]
impl<P: PartialEq, S: Deref<Target = Shared<P>>> Drop for Release<P, S> {
    fn drop(&mut self) {
        if self.armed {
            // Ignored by the core unless `ticket` is still the live one (S2).
            let _ = self.shared.apply(Event::Cancel(self.ticket), None);
        }
    }
}

/// BROKEN ON PURPOSE, only under `--cfg baton_loom_broken` (the loom suite's
/// self-test, `loom-tests/tests/loom_self_test.rs`): checks the ticket under
/// one lock and releases under a **second**, so a stale handle can release a
/// newer reservation (the shape of the seed's defect, S2).
#[cfg(baton_loom_broken)]
impl<P: PartialEq, S: Deref<Target = Shared<P>>> Drop for Release<P, S> {
    fn drop(&mut self) {
        let ticket = self.ticket;
        let live = self.armed
            && self.shared.cell.read(|slot| {
                core::observe(&slot.state).map(|(t, _)| t) == Some(ticket)
                    || matches!(slot.state, State::Held { ticket: t, .. } if t == ticket)
            });
        if live {
            let shared = &*self.shared;
            let _ = shared.cell.update(|slot| {
                let running = State::Running {
                    next: ticket.successor(),
                };
                shared.enter_locked(slot, Outcome::Moved(running), None)
            });
        }
    }
}

// Two attributes rather than `all(test, not(loom))`: cargo-mutants skips a
// module only when it sees a plain `#[cfg(test)]`.
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;
    use crate::facts::Invocation;

    /// What `Shared`'s layout promises: from the reference count in front
    /// of it (`triomphe::Arc`'s one `usize`) to the end of the state, the
    /// fields a reserve and its release touch span at most 64 bytes.
    #[test]
    fn the_fields_every_update_touches_span_at_most_64_bytes() {
        let source = Invocation {
            session_id: "ses".into(),
            turn_id: "turn".into(),
            run_id: "run".into(),
            invocation_id: "inv".into(),
        };
        // Boxed as a gate boxes it: behind the crate's `Arc`.
        let shared = Arc::new(Shared::<()>::new(Config::new(source, "run".into())));
        let shared: &Shared<()> = &shared;
        let start = std::ptr::from_ref(shared) as usize - size_of::<usize>();
        let state_end = shared
            .cell
            .read(|slot| std::ptr::from_ref(&slot.state) as usize + size_of::<State<()>>());
        let kind = std::ptr::from_ref(&shared.kind) as usize;
        assert!(start < kind && kind < state_end);
        assert!(
            state_end - start <= 64,
            "the hot fields span {} bytes",
            state_end - start
        );
    }
}
