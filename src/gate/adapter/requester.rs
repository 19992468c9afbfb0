//! The requester's handles: [`HandoffRequester`] asks,
//! [`HandoffReservation`] waits for the worker, [`HeldHandoff`] commits,
//! [`PendingSeal`] waits for the seal. A reservation and a held handoff
//! release the Run when dropped (their [`Release`]); a pending seal
//! changes nothing.

use std::fmt;

use super::shared::{CancelBit, Release, Shared};
use crate::facts::{HandoffIntent, HandoffPause};
use crate::gate::GateError;
use crate::gate::core::{self, Event, Outcome, Refusal, State, Ticket, Wait};
use crate::gate::ended::{CommitError, ReadyError, WaitError};
use crate::sync::Arc;
use crate::trace;

/// A requester's handle: asks for handoffs. `Clone + Send + Sync` (for
/// `P: Send + Sync`).
pub struct HandoffRequester<P: PartialEq> {
    pub(super) shared: Arc<Shared<P>>,
}

/// A live reservation: wait for the worker with [`ready`](Self::ready).
/// Dropping it (or its `ready()` future) releases the Run (`Cancel(T)`).
#[must_use = "dropping a reservation releases it at once"]
pub struct HandoffReservation<P: PartialEq> {
    release: Release<P>,
}

/// A held handoff: the worker prepared a pause and waits. Inspect it with
/// [`preview`](Self::preview), then [`commit`](Self::commit); dropping it
/// without committing releases the Run (`Cancel(T)`).
#[must_use = "dropping a held handoff releases it at once"]
pub struct HeldHandoff<P: PartialEq> {
    release: Release<P>,
    pause: std::sync::Arc<HandoffPause<P>>,
}

/// A committed handoff waiting for the worker's durable seal. Dropping it
/// changes nothing: the commit is irreversible.
pub struct PendingSeal<P: PartialEq> {
    /// The held handoff's, disarmed by the commit.
    release: Release<P>,
    /// The committed pause: the very `Arc` a seal keeps, so `wait` hands
    /// it over without taking another count.
    pause: std::sync::Arc<HandoffPause<P>>,
}

impl<P: PartialEq> HandoffRequester<P> {
    /// Asks for a handoff with `intent`: a [`HandoffIntent`], or an
    /// `Arc<HandoffIntent>` the caller keeps, which the gate then shares
    /// without copying it.
    ///
    /// # Errors
    ///
    /// [`GateError::InvalidInput`] for a malformed intent or one naming
    /// another root Run (the gate is unchanged, S9); [`GateError::Busy`]
    /// while another reservation is live (S1); [`GateError::HandedOff`],
    /// [`GateError::Closed`] or [`GateError::TicketsExhausted`] once final.
    ///
    /// ```
    /// use baton::{GateError, HandoffGate, HandoffIntent, Invocation};
    ///
    /// # let source = Invocation {
    /// #     session_id: "s".into(), turn_id: "t".into(), run_id: "run".into(), invocation_id: "i".into(),
    /// # };
    /// let gate: HandoffGate<u32> = HandoffGate::new(source, "run".into());
    /// let intent = HandoffIntent {
    ///     handoff_id: "handoff-1".into(),
    ///     host_epoch: "epoch-7".into(),
    ///     root_run_id: "run".into(),
    ///     successor_run_id: "run-2".into(),
    ///     successor_invocation_id: "invocation-2".into(),
    ///     claim_id: "claim-1".into(),
    /// };
    /// let first = gate.requester().reserve(intent.clone())?;
    /// match gate.requester().reserve(intent.clone()) {
    ///     Err(error) if error.is_retryable() => {} // Busy: one at a time (S1); try later
    ///     other => panic!("a second reserve is busy: {other:?}"),
    /// }
    /// drop(first); // releases the Run
    /// let bad = HandoffIntent { claim_id: String::new(), ..intent };
    /// assert!(matches!(gate.requester().reserve(bad), Err(GateError::InvalidInput(_))));
    /// # Ok::<(), GateError>(())
    /// ```
    pub fn reserve(
        &self,
        intent: impl Into<std::sync::Arc<HandoffIntent>>,
    ) -> Result<HandoffReservation<P>, GateError> {
        let shared = &self.shared;
        let root = shared.config.root_run_id();
        let intent = intent.into();
        // The table's `Reserve` row in two halves. S9 first: bad input is
        // refused as such in every state, and the config never changes, so
        // the check needs no lock.
        if let Err(error) = intent.validate_for(shared.config.source(), root) {
            let refusal = GateError::from(error);
            trace::gate_refused!(root, &shared.config.source().run_id, None, &refusal);
            return Err(refusal);
        }
        // Every kind of state but `Running` refuses a valid intent by its
        // kind alone (S1): read from the kind's copy, without the lock,
        // where the copy may answer (not in `Held`, S3).
        let kind = shared.kind();
        if let Some(refusal) = core::reserve_refusal(kind).filter(|_| kind.copy_may_answer()) {
            trace::gate_refused!(root, &shared.config.source().run_id, Some(kind), &refusal);
            return Err(refusal);
        }
        let (ticket, note) = shared.cell.update(|slot| {
            let begun = trace::gate_begin_reserve!(&slot.state);
            let next = core::reserve_next(&slot.state, intent);
            let note = trace::gate_end_reserve!(begun, &next);
            match next {
                Ok(next) => {
                    let _ = shared.enter_locked(slot, Outcome::Moved(next), None);
                    (true, (Ok(slot.state.ticket()), note))
                }
                Err(refusal) => (false, (Err(refusal), note)),
            }
        });
        // `Reserve` only ever moves to `Requested{new T}`; the table test
        // pins that, so this is never `Busy` in practice.
        let reservation = ticket.and_then(|ticket| ticket.ok_or(GateError::Busy));
        let reservation = reservation.map(|ticket| HandoffReservation {
            release: Release {
                shared: Arc::clone(shared),
                ticket,
                armed: true,
            },
        });
        // After the handle exists: a subscriber that panics here drops it,
        // which releases the Run rather than leaving it reserved by nobody.
        shared.emit(note);
        reservation
    }

    /// The logical Run every handoff of this gate keeps.
    pub fn root_run_id(&self) -> &str {
        self.shared.config.root_run_id()
    }

    /// A snapshot of the core state (diagnostics, tests).
    pub fn state(&self) -> State<P> {
        self.shared.cell.read(|slot| slot.state.clone())
    }

    /// The number of accepted transitions so far (diagnostics, tests).
    pub fn version(&self) -> u64 {
        self.shared.cell.version()
    }

    /// The number of futures waiting on this gate (diagnostics, tests).
    pub fn waiter_count(&self) -> usize {
        self.shared.cell.waiter_count()
    }
}

impl<P: PartialEq> Clone for HandoffRequester<P> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<P: PartialEq> HandoffReservation<P> {
    /// This reservation's ticket.
    pub fn ticket(&self) -> Ticket {
        self.release.ticket
    }

    /// Waits for the worker's boundary: the [`HeldHandoff`] once it holds
    /// a pause for this reservation (S7).
    ///
    /// # Errors
    ///
    /// [`ReadyError::Released`] if the worker let the request go (failed or
    /// mismatched preflight, cancellation, a dropped `boundary` future),
    /// [`ReadyError::HandedOff`] if another reservation handed the Run off
    /// meanwhile, [`ReadyError::Closed`] if the worker closed the gate.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future releases the reservation (`Cancel(T)`), as
    /// dropping the reservation does.
    pub async fn ready(self) -> Result<HeldHandoff<P>, ReadyError> {
        let ticket = self.release.ticket;
        let pause = self.release.shared.settle(ticket, core::ready).await;
        match pause {
            Ok(pause) => Ok(HeldHandoff {
                release: self.release,
                pause,
            }),
            Err(gone) => {
                // Not live any more: a `Cancel(T)` would be ignored.
                let mut release = self.release;
                release.disarm();
                Err(gone.into())
            }
        }
    }
}

impl<P: PartialEq> HeldHandoff<P> {
    /// The prepared pause (its intent is the one reserved).
    pub fn preview(&self) -> &HandoffPause<P> {
        &self.pause
    }

    /// This handoff's ticket.
    pub fn ticket(&self) -> Ticket {
        self.release.ticket
    }

    /// Commits the handoff: irreversible. The worker's `boundary` then
    /// returns the pause, and [`PendingSeal::wait`] waits for its seal.
    ///
    /// # Errors
    ///
    /// Nothing is committed, and the Run is released if it was still held:
    /// [`CommitError::Canceled`] if the worker's cancellation fired (S3),
    /// [`CommitError::Released`] if the worker let the handoff go
    /// meanwhile, [`CommitError::HandedOff`] or [`CommitError::Closed`] if
    /// the gate moved on.
    pub fn commit(self) -> Result<PendingSeal<P>, CommitError> {
        let shared = &self.release.shared;
        let ticket = self.release.ticket;
        let (committed, note) = shared.cell.update(|slot| {
            let canceled = slot.cancel.as_ref().is_some_and(CancelBit::is_canceled);
            let event = Event::Commit { ticket, canceled };
            let (changed, (result, note)) = shared.apply_locked(slot, event, None);
            let committed = match result {
                Ok(true) => Ok(()),
                Err(Refusal::Canceled) => Err(CommitError::Canceled),
                Ok(false) | Err(Refusal::NotHeld | Refusal::Reserve(_)) => {
                    Err(slot.state.kind().gone().into())
                }
            };
            (changed, (committed, note))
        });
        shared.emit(note);
        // On an error `self` drops here: `Cancel(T)` releases the Run if
        // still held.
        committed?;
        let mut release = self.release;
        release.disarm();
        Ok(PendingSeal {
            release,
            pause: self.pause,
        })
    }
}

impl<P: PartialEq> PendingSeal<P> {
    /// This handoff's ticket.
    pub fn ticket(&self) -> Ticket {
        self.release.ticket
    }

    /// Waits for the worker's seal: the pause, only once it is durably
    /// sealed (S5).
    ///
    /// # Errors
    ///
    /// [`WaitError::Closed`] if the worker closed or dropped the gate
    /// without sealing. The owner must then decide from the canonical log
    /// (`durable`), never resume the old worker.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future changes nothing: the commit stands, and the
    /// handoff is still sealed or closed by the worker.
    pub async fn wait(self) -> Result<std::sync::Arc<HandoffPause<P>>, WaitError> {
        // A committed handoff leaves `Committed{T}` only for `Sealed{T}`
        // (resolved) or `Closed` (S4): every `Gone` here is a close. The
        // sealed pause is the committed one, this handle's (the gate seals
        // its own `Arc`, S5).
        let ticket = self.release.ticket;
        let sealed = self
            .release
            .shared
            .cell
            .wait_until(|slot| match core::seal(&slot.state, ticket) {
                Wait::Pending => None,
                Wait::Resolved(sealed) => {
                    debug_assert!(std::sync::Arc::ptr_eq(sealed, &self.pause));
                    Some(true)
                }
                Wait::Gone => Some(false),
            })
            .await;
        if sealed {
            Ok(self.pause)
        } else {
            Err(WaitError::Closed)
        }
    }
}

macro_rules! debug_by_ticket {
    ($($handle:ident => |$this:ident| $ticket:expr;)*) => {$(
        impl<P: PartialEq> fmt::Debug for $handle<P> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let $this = self;
                f.debug_struct(stringify!($handle)).field("ticket", &$ticket).finish_non_exhaustive()
            }
        }
    )*};
}

debug_by_ticket! {
    HandoffReservation => |this| this.release.ticket;
    HeldHandoff => |this| this.release.ticket;
    PendingSeal => |this| this.release.ticket;
}

impl<P: PartialEq> fmt::Debug for HandoffRequester<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffRequester")
            .field("root_run_id", &self.shared.config.root_run_id())
            .finish_non_exhaustive()
    }
}
