//! The async adapter: one [`WatchCell`] around the core [`State`], and RAII
//! handles whose `Drop` feeds the core the event SPEC's cancel-safety table
//! names. Every method is "lock, step, wake, return"; the decisions are the
//! core's. The two answers the state's kind alone decides
//! ([`core::reserve_refusal`], [`StateKind::boundary_may_act`]) are read
//! from a copy of the kind kept beside the lock, without taking it, in
//! every kind but `Held` ([`StateKind::copy_may_answer`]).
//!
//! Kept whole, past 600 lines: every handle and future here locks the one
//! cell and wakes its waiters, and their `Drop`s are the rows of SPEC's
//! cancel-safety table; in one file a reader sees every lock and wake of
//! the gate together.

use std::any::Any;
use std::fmt;
use std::future::{Future, poll_fn};
use std::ops::Deref;
use std::pin::{Pin, pin};
use std::task::Poll;

use super::GateError;
use super::core::{
    self, Begin, Config, Event, Gone, Outcome, Refusal, State, StateKind, Ticket, Wait,
};
use super::ended::{BoundaryError, CommitError, ReadyError, WaitError};
use crate::cancel::{CancelSignal, Cancellation};
use crate::facts::{HandoffIntent, HandoffPause, Invocation};
use crate::sync::{Arc, Mirror};
use crate::trace::{self, GateNote};
use crate::waiter::{WaitUntil, WatchCell};

/// While a handoff is held: the worker's cancellation, which `commit`
/// reads so that it sees it at the moment it commits (S3). baton's own
/// [`CancelSignal`] is kept as it is (one reference count); any other
/// [`Cancellation`] behind a box (one allocation a held handoff).
enum CancelBit {
    Signal(CancelSignal),
    Other(Box<dyn Fn() -> bool + Send + Sync>),
}

impl CancelBit {
    fn of<C: Cancellation>(cancel: &C) -> Self {
        match (cancel as &dyn Any).downcast_ref::<CancelSignal>() {
            Some(signal) => Self::Signal(signal.clone()),
            None => {
                let cancel = cancel.clone();
                Self::Other(Box::new(move || cancel.is_canceled()))
            }
        }
    }

    fn is_canceled(&self) -> bool {
        match self {
            Self::Signal(signal) => signal.is_canceled(),
            Self::Other(bit) => bit(),
        }
    }
}

/// `repr(C)`: the state first, in the gate's hot first 64 bytes (see
/// [`Shared`]); the cancel bit, read by a commit alone, after it.
#[repr(C)]
struct Slot<P> {
    state: State<P>,
    /// Set when the state becomes `Held`, cleared when it moves on.
    cancel: Option<CancelBit>,
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
struct Shared<P> {
    /// A copy of the state's [`StateKind`] (`as u8`), stored under the lock
    /// with every change of state and read without it, by the two answers
    /// the kind alone decides: `reserve`'s refusals and `boundary`'s "no
    /// handoff asked". Such an answer takes effect at that read: the kind
    /// was the state's kind then. Not in `Held`, whose commit is decided
    /// on a bit that changes without the lock
    /// ([`StateKind::copy_may_answer`] says why).
    kind: Mirror,
    cell: WatchCell<Slot<P>>,
    config: Config,
}

impl<P: PartialEq> Shared<P> {
    /// Feeds `event` to the core under the lock. `Ok(true)`: the state moved;
    /// `Ok(false)`: ignored. `held` is kept if the state becomes `Held`.
    fn apply(&self, event: Event<P>, held: Option<CancelBit>) -> Result<bool, Refusal> {
        let (result, note) = self
            .cell
            .update(|slot| self.apply_locked(slot, event, held));
        self.emit(note);
        result
    }

    /// [`apply`](Self::apply) under a lock the caller holds, with the note
    /// of the step, which the caller emits once the lock is released.
    fn apply_locked(
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
    fn emit(&self, note: GateNote) {
        trace::gate_emit!(note, &self.config);
    }

    /// Carries out the core's `outcome` under the lock: a state it moved to
    /// replaces the slot's, and its kind the copy outside the lock.
    fn enter_locked(
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
    fn close(&self) {
        #[cfg(not(feature = "tracing"))]
        if self.kind().is_terminal() {
            return;
        }
        let _ = self.apply(Event::Close, None);
    }

    /// The state's kind as of its last change, read without the lock.
    fn kind(&self) -> StateKind {
        // Only `enter_locked` stores it, always a kind; `Running` (which
        // decides nothing without the lock) is a safe reading otherwise.
        StateKind::from_index(self.kind.load()).unwrap_or(StateKind::Running)
    }

    /// A future resolving with what `query` decides for `ticket`: the
    /// pause, or why it is gone, read under the same lock as the decision.
    fn settle(
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
type Settled<P> = Result<std::sync::Arc<HandoffPause<P>>, Gone>;

/// What `boundary` found when it began, shared out of the lock (preflight
/// receives the very intent the gate holds).
enum Begun<P> {
    /// No handoff to act on, and why.
    Nothing(Gone),
    Requested(Ticket, std::sync::Arc<HandoffIntent>),
    Committed(std::sync::Arc<HandoffPause<P>>),
}

/// What `boundary` returns when it has no pause to hand over: `Ok(None)`
/// (keep running) if no handoff is asked or it was let go, else the
/// gate's end.
fn nothing<T>(gone: Gone) -> Result<Option<T>, BoundaryError> {
    match BoundaryError::from_gone(gone) {
        None => Ok(None),
        Some(error) => Err(error),
    }
}

/// Releases a ticket when dropped (`Cancel(T)`), unless disarmed. The one
/// place that implements the "dropped → `Cancel(T)`" rows of SPEC's
/// cancel-safety table. `S` is how it reaches the gate: the handles own a
/// reference count, `boundary` borrows the gate it runs on (no count to
/// take and give back).
struct Release<P: PartialEq, S: Deref<Target = Shared<P>> = Arc<Shared<P>>> {
    shared: S,
    ticket: Ticket,
    armed: bool,
}

impl<P: PartialEq, S: Deref<Target = Shared<P>>> Release<P, S> {
    /// From now on, dropping it releases nothing.
    fn disarm(&mut self) {
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

/// The worker's end of a gate. Not `Clone`; **dropping it closes the gate**,
/// so a worker that exits or panics never leaves a waiter hanging (L1).
///
/// A worker's loop: between steps, offer a handoff at the boundary; when
/// one is committed, stop, make the pause durable and seal it.
///
/// ```
/// use baton::{CancelSignal, HandoffGate, HandoffPause, Invocation};
///
/// async fn run(gate: HandoffGate<u32>, cancel: CancelSignal) {
///     for step in 0.. {
///         // … one step of the Run …
///         let prepare = |intent| async move { Some(HandoffPause::new(intent, step)) };
///         match gate.boundary(&cancel, prepare).await {
///             Ok(None) => continue, // no handoff asked, or it was let go
///             Ok(Some(pause)) => {
///                 // Append `pause` to the canonical log first (see
///                 // `durable::append_then_seal`), then:
///                 gate.sealed(&pause);
///                 return;
///             }
///             Err(_) => return, // sealed or closed: nothing more to offer
///         }
///     }
/// }
/// # let source = Invocation {
/// #     session_id: "s".into(), turn_id: "t".into(), run_id: "run".into(), invocation_id: "i".into(),
/// # };
/// # let gate = HandoffGate::new(source, "run".into());
/// # gate.close();
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(run(gate, CancelSignal::new()));
/// ```
pub struct HandoffGate<P: PartialEq> {
    shared: Arc<Shared<P>>,
}

/// A requester's handle: asks for handoffs. `Clone + Send + Sync` (for
/// `P: Send + Sync`).
pub struct HandoffRequester<P: PartialEq> {
    shared: Arc<Shared<P>>,
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

impl<P: PartialEq> HandoffGate<P> {
    /// A gate for the Run executing as `source`, within the logical Run
    /// `root_run_id`.
    pub fn new(source: Invocation, root_run_id: String) -> Self {
        Self {
            shared: Arc::new(Shared {
                kind: Mirror::new(StateKind::Running as u8),
                config: Config::new(source, root_run_id),
                cell: WatchCell::new(Slot {
                    state: State::initial(),
                    cancel: None,
                }),
            }),
        }
    }

    /// A handle for requesters of this gate.
    pub fn requester(&self) -> HandoffRequester<P> {
        HandoffRequester {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The logical Run every handoff of this gate keeps.
    pub fn root_run_id(&self) -> &str {
        self.shared.config.root_run_id()
    }

    /// The invocation this gate was made for: the Run a handoff hands off.
    pub fn source(&self) -> &Invocation {
        self.shared.config.source()
    }

    /// Called by the worker at a step boundary.
    ///
    /// - `Ok(None)`: keep running. No handoff is requested (answered at
    ///   once), or one was and it was let go here: `preflight` returned no
    ///   pause (or one for another intent), `cancel` fired before the
    ///   commit, or the requester dropped it.
    /// - `Ok(Some(pause))`: the requester committed the handoff. Stop the
    ///   Run, append the pause durably, then [`sealed`](Self::sealed) it
    ///   (`durable::append_then_seal` does both).
    ///
    /// Otherwise it runs `preflight(intent)`, feeds its pause (with
    /// `cancel`'s bit) to the gate, and if the pause is held, waits until
    /// the requester commits or lets go.
    ///
    /// `preflight` receives the reserved intent as the `Arc` the gate holds;
    /// a pause built around that same `Arc` ([`HandoffPause::new`]) is
    /// matched without comparing ids, and no step of the handoff copies it:
    /// the pause returned here, the requester's
    /// [`preview`](HeldHandoff::preview) and the sealed pause
    /// [`wait`](PendingSeal::wait) returns all share one allocation.
    ///
    /// If a handoff is already committed — an earlier `boundary` future held
    /// it and was dropped after the commit — returns the committed pause at
    /// once, without preflight: the worker must stop, append it durably and
    /// seal it, exactly as if that earlier future had returned it. So a
    /// worker that merely keeps reaching boundaries always ends a committed
    /// handoff (L3).
    ///
    /// ```
    /// use baton::{BoundaryError, CancelSignal, HandoffGate, HandoffIntent, HandoffPause, Invocation};
    ///
    /// # let source = Invocation {
    /// #     session_id: "s".into(), turn_id: "t".into(), run_id: "run".into(), invocation_id: "i".into(),
    /// # };
    /// # let intent = HandoffIntent {
    /// #     handoff_id: "h".into(), host_epoch: "e".into(), root_run_id: "run".into(),
    /// #     successor_run_id: "run-2".into(), successor_invocation_id: "i-2".into(), claim_id: "c".into(),
    /// # };
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let gate = HandoffGate::<&str>::new(source, "run".into());
    /// let cancel = CancelSignal::new();
    /// let prepare = |intent| async move { Some(HandoffPause::new(intent, "state at step 3")) };
    ///
    /// // No handoff asked: answered at once, preflight never runs.
    /// assert_eq!(gate.boundary(&cancel, prepare).await, Ok(None));
    ///
    /// // A requester asks, and commits once the worker holds the pause.
    /// let reservation = gate.requester().reserve(intent)?;
    /// let requester = async { reservation.ready().await.ok()?.commit().ok() };
    /// let (paused, pending) = tokio::join!(gate.boundary(&cancel, prepare), requester);
    /// let pause = paused?.expect("committed: stop the Run");
    /// assert_eq!(pause.execution, "state at step 3");
    ///
    /// // … append `pause` to the canonical log, then seal; the requester's
    /// // wait resolves with the very same pause.
    /// assert!(gate.sealed(&pause));
    /// assert_eq!(pending.expect("committed").wait().await, Ok(pause));
    /// assert_eq!(gate.boundary(&cancel, prepare).await, Err(BoundaryError::HandedOff));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// The gate has no more handoffs to offer, and the worker should stop
    /// using it: [`BoundaryError::HandedOff`] once it is sealed,
    /// [`BoundaryError::Closed`] once it is closed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future during preflight or while held releases the Run
    /// (`Cancel(T)`); so does a panicking preflight. Once committed,
    /// nothing is undone: dropping the future then changes nothing, and the
    /// next `boundary` returns the committed pause.
    ///
    /// # Tracing
    ///
    /// With the `tracing` feature the future runs in a `boundary` span
    /// (target `baton::gate`), made when `boundary` is called and entered on
    /// each of the future's polls, with the root Run and Run ids, and the
    /// ticket once a request is found.
    pub fn boundary<C, F, Fut>(
        &self,
        cancel: &C,
        preflight: F,
    ) -> impl Future<Output = Result<Option<std::sync::Arc<HandoffPause<P>>>, BoundaryError>>
    where
        C: Cancellation,
        F: FnOnce(std::sync::Arc<HandoffIntent>) -> Fut,
        Fut: Future<Output = Option<HandoffPause<P>>>,
    {
        // Not an `async fn` around the body: without the feature the body's
        // own future is returned, with no layer of its own (zero cost).
        #[cfg(feature = "tracing")]
        {
            let span = trace::boundary_span(self.root_run_id(), &self.source().run_id);
            tracing::Instrument::instrument(self.boundary_in(cancel, preflight, span.clone()), span)
        }
        #[cfg(not(feature = "tracing"))]
        self.boundary_in(cancel, preflight)
    }

    /// The body of [`boundary`](Self::boundary); `span` is its span.
    async fn boundary_in<C, F, Fut>(
        &self,
        cancel: &C,
        preflight: F,
        #[cfg(feature = "tracing")] span: tracing::Span,
    ) -> Result<Option<std::sync::Arc<HandoffPause<P>>>, BoundaryError>
    where
        C: Cancellation,
        F: FnOnce(std::sync::Arc<HandoffIntent>) -> Fut,
        Fut: Future<Output = Option<HandoffPause<P>>>,
    {
        let shared = &self.shared;
        // In most states no handoff is asked: read from the kind's copy,
        // without the lock, where the copy may answer.
        let kind = shared.kind();
        if kind.copy_may_answer() && !kind.boundary_may_act() {
            return nothing(kind.gone());
        }
        let begun = shared.cell.read(|slot| match core::begin(&slot.state) {
            Begin::Nothing => Begun::Nothing(slot.state.kind().gone()),
            Begin::Requested(ticket, intent) => {
                Begun::Requested(ticket, std::sync::Arc::clone(intent))
            }
            Begin::Committed(pause) => Begun::Committed(std::sync::Arc::clone(pause)),
        });
        let (ticket, intent) = match begun {
            Begun::Nothing(gone) => return nothing(gone),
            Begun::Requested(ticket, intent) => (ticket, intent),
            Begun::Committed(pause) => return Ok(Some(pause)),
        };
        trace::boundary_ticket!(span, ticket);
        let mut release = Release {
            shared: &**shared,
            ticket,
            armed: true,
        };
        let pause = preflight(intent).await;
        let mut preflight = Some((pause, CancelBit::of(cancel)));
        let decided = {
            let mut settled = shared.settle(ticket, core::boundary);
            let mut canceled = pin!(cancel.canceled());
            poll_fn(|cx| {
                let settle = match preflight.take() {
                    // The preflight's step and, if its pause is held, this
                    // wait's registration, under one lock. A pause let go
                    // (mismatched, canceled, released meanwhile) is `Gone`
                    // at once, with cancellation never awaited.
                    Some((pause, bit)) => {
                        let mut note = None;
                        let settle = settled.poll_after(cx, |slot| {
                            let event = Event::Preflight {
                                ticket,
                                pause,
                                canceled: cancel.is_canceled(),
                            };
                            let (changed, (_, stepped)) =
                                shared.apply_locked(slot, event, Some(bit));
                            note = Some(stepped);
                            changed
                        });
                        if let Some(note) = note {
                            shared.emit(note);
                        }
                        settle
                    }
                    None => Pin::new(&mut settled).poll(cx),
                };
                match settle {
                    Poll::Ready(decided) => Poll::Ready(Some(decided)),
                    Poll::Pending => canceled.as_mut().poll(cx).map(|()| None),
                }
            })
            .await
        };
        let pause = match decided {
            Some(decided) => decided,
            None => {
                // Canceled while held: release, unless a commit got there
                // first, which is irreversible (S4).
                let _ = shared.apply(Event::Cancel(ticket), None);
                shared
                    .cell
                    .read(|slot| match core::boundary(&slot.state, ticket) {
                        Wait::Resolved(pause) => Ok(std::sync::Arc::clone(pause)),
                        Wait::Pending | Wait::Gone => Err(slot.state.kind().gone()),
                    })
            }
        };
        release.disarm();
        match pause {
            Ok(pause) => Ok(Some(pause)),
            Err(gone) => nothing(gone),
        }
    }

    /// Reports that `pause` is durably appended to the canonical log. Seals
    /// the gate if `pause` is the committed one (S5); returns whether it did.
    ///
    /// Pass the `Arc` that [`boundary`](Self::boundary) returned (or its
    /// contents): it is recognised by pointer, without calling `P`'s
    /// `PartialEq`. Any other pause is compared by value with the committed
    /// one, under the gate's lock, so that `PartialEq` must not call back
    /// into the gate. Either way one step decides, and `P` is never copied:
    /// the gate seals its own `Arc`.
    pub fn sealed(&self, pause: &HandoffPause<P>) -> bool {
        let shared = &self.shared;
        let (sealed, note) = shared.cell.update(|slot| match slot.state.pause() {
            Some(stored) if std::ptr::eq(&**stored, pause) || **stored == *pause => {
                let offered = Event::Seal(std::sync::Arc::clone(stored));
                let (changed, (result, note)) = shared.apply_locked(slot, offered, None);
                (changed, (result == Ok(true), Some(note)))
            }
            // Not the gate's pause: `Seal` would be ignored.
            Some(_) | None => (false, (false, None)),
        });
        if let Some(note) = note {
            shared.emit(note);
        }
        sealed
    }

    /// Closes the gate: no handoff from now on; every waiter resolves with
    /// its `Closed` error.
    /// A sealed gate stays sealed.
    pub fn close(&self) {
        self.shared.close();
    }

    /// A snapshot of the core state (diagnostics, tests).
    pub fn state(&self) -> State<P> {
        self.shared.cell.read(|slot| slot.state.clone())
    }

    /// The number of futures waiting on this gate (diagnostics, tests).
    pub fn waiter_count(&self) -> usize {
        self.shared.cell.waiter_count()
    }
}

impl<P: PartialEq> Drop for HandoffGate<P> {
    fn drop(&mut self) {
        self.shared.close();
    }
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

impl<P: PartialEq> fmt::Debug for HandoffGate<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffGate")
            .field("root_run_id", &self.shared.config.root_run_id())
            .finish_non_exhaustive()
    }
}

impl<P: PartialEq> fmt::Debug for HandoffRequester<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffRequester")
            .field("root_run_id", &self.shared.config.root_run_id())
            .finish_non_exhaustive()
    }
}

// Two attributes rather than `all(test, not(loom))`: cargo-mutants skips a
// module only when it sees a plain `#[cfg(test)]`.
#[cfg(test)]
#[cfg(not(loom))]
mod tests {
    use super::*;

    /// What `Shared`'s layout promises: from the reference count in front
    /// of it (`triomphe::Arc`'s one `usize`) to the end of the state, the
    /// fields a reserve and its release touch span at most 64 bytes.
    #[test]
    fn the_fields_every_update_touches_span_at_most_64_bytes() {
        let gate = HandoffGate::<()>::new(
            Invocation {
                session_id: "ses".into(),
                turn_id: "turn".into(),
                run_id: "run".into(),
                invocation_id: "inv".into(),
            },
            "run".into(),
        );
        let shared: &Shared<()> = &gate.shared;
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
