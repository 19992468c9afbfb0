//! The worker's end of a gate: [`HandoffGate`], whose `boundary` offers a
//! handoff between steps, whose `sealed` ends one, and whose `Drop` closes
//! the gate.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;

use super::requester::HandoffRequester;
use super::shared::{CancelBit, Release, Shared};
use crate::cancel::Cancellation;
use crate::facts::{HandoffIntent, HandoffPause, Invocation};
use crate::gate::core::{self, Begin, Config, Event, Gone, State, Ticket, Wait};
use crate::gate::ended::BoundaryError;
use crate::sync::Arc;
use crate::trace;

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

impl<P: PartialEq> HandoffGate<P> {
    /// A gate for the Run executing as `source`, within the logical Run
    /// `root_run_id`.
    pub fn new(source: Invocation, root_run_id: String) -> Self {
        Self {
            shared: Arc::new(Shared::new(Config::new(source, root_run_id))),
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
    /// [`preview`](super::HeldHandoff::preview) and the sealed pause
    /// [`wait`](super::PendingSeal::wait) returns all share one allocation.
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

impl<P: PartialEq> fmt::Debug for HandoffGate<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffGate")
            .field("root_run_id", &self.shared.config.root_run_id())
            .finish_non_exhaustive()
    }
}
