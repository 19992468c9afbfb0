//! Observability: `tracing` events and spans, with the `tracing` feature.
//!
//! Without the feature nothing here exists but macros that expand to
//! nothing (or to `Nothing`, a zero-sized value), so a build without it
//! compiles not one instruction for tracing. With it:
//!
//! | target | kind | level | name / message | fields |
//! |---|---|---|---|---|
//! | `baton::gate` | event | `DEBUG` | `transition` | `root_run_id`, `run_id`, `ticket`, `event`, `before`, `after` |
//! | `baton::gate` | event | `TRACE` | `refused` | `root_run_id`, `run_id`, `ticket`, `event`, `before`, `refused`, `error` |
//! | `baton::gate` | event | `TRACE` | `ignored` | `root_run_id`, `run_id`, `ticket`, `event`, `before` |
//! | `baton::gate` | span | `DEBUG` | `boundary` | `root_run_id`, `run_id`, `ticket` (once a request is found) |
//! | `baton::cancel` | event | `DEBUG` | `fired` | `phase` |
//! | `baton::durable` | span | `DEBUG` | `append` | `root_run_id`, `run_id`, `epoch`, `outcome`, `sealed` |
//! | `baton::postgres` | event | `DEBUG` | `connected` | (a new connection of a `PostgresLog`'s pool: the first, or a reconnection) |
//! | `baton::postgres` | event | `WARN` | `connect failed`, `no connection` | `error` |
//! | `baton::postgres` | event | `WARN` | `no answer within connect_timeout` | `host` (the index, in the config, of a host that did not answer a new connection in time; the next is tried) |
//! | `baton::postgres` | event | `WARN` | `cancel request not sent` | `error` (a timed-out statement's cancel request that could not be sent) |
//! | `baton::postgres` | event | `DEBUG` | `retry` | `op` (`claim`, `append`, `finish`, `retire`, `sweep`, `facts`), `root_run_id`, `run_id`, `attempt`, `why` (`serialization failure`, `deadlock`, `first claims raced`, `connection lost before the commit`) |
//! | `baton::postgres` | event | `WARN` | `timed out` | `op`, `root_run_id`, `run_id`, `timeout_ms`, `sent` (whether the operation had a connection: its outcome is unknown) |
//! | `baton::postgres` | event | `WARN` | `outcome unknown` | `op`, `root_run_id`, `run_id`, `error` |
//! | `baton::postgres` | event | `INFO` | `migrating` | `version` (the version each step brings the schema to) |
//! | `baton::ledger` | event | `DEBUG` | `scoped` | `task`, `left` (entries the previous scope left) |
//! | `baton::ledger` | event | `DEBUG` | `scope_ended` | `scope` (its token), `left` |
//! | `baton::ledger` | event | `DEBUG` | `registered` | `id`, `task` |
//! | `baton::ledger` | event | `DEBUG` | `adopted` | `id`, `adoption` (`adopted`, `replaced`, `not_live`) |
//! | `baton::ledger` | event | `DEBUG` | `delivered` | `id` |
//! | `baton::ledger` | event | `DEBUG` | `taken` | `how` (`arrived`, `overdue`, `all`, `discard`), `count` |
//! | `baton::ledger` | event | `DEBUG` | `overdue` | `id`, `task`, `waited_ms` (one per delegation an overdue take took) |
//! | `baton::ledger` | event | `DEBUG` | `child_ended` | `id` (absent for a child given to no live id), `why` (`taken`, `replaced`, `not_live`) |
//! | `baton::ledger` | event | `TRACE` | `refused` | `op` (`register`, `arrive`, `scope_task`), `id` or `task`, `error` (or `arrival`) |
//!
//! `event` is the table's event (`Reserve`, `Preflight`, `Cancel`,
//! `Commit`, `Seal`, `Close`); `before` and `after` are
//! [`StateKind::name`]s; `ticket` is the ticket the step is about (the
//! event's, else the new state's, else the old state's), absent when there
//! is none or, for a refusal answered without the lock, when it is not
//! known. A `refused` reserve answered from the kind's copy has no
//! `ticket`, and an `InvalidInput` one no `before` either.
//!
//! **Never under a lock.** A subscriber is user code, and may call back
//! into the machine it hears from: the gate's adapter builds a note of the
//! step under its lock ([`GateBegin`], [`GateNote`]) and emits it only once
//! the lock is released; the cancel signal emits after its latch's lock;
//! the ledger's adapter emits from what its lock returned, and a child's
//! end where the child is ended, outside every lock.

#[cfg(feature = "tracing")]
use crate::durable::{Epoch, Receipt, SealError, SealStep};
#[cfg(feature = "tracing")]
use crate::gate::GateError;
#[cfg(feature = "tracing")]
use crate::gate::core::{Event, Outcome, Refusal, State, StateKind, Ticket};

/// What a gate step was, taken under the lock before the core decides.
#[cfg(feature = "tracing")]
pub(crate) struct GateBegin {
    event: &'static str,
    ticket: Option<Ticket>,
    before: StateKind,
}

/// What a gate step did, taken under the lock, emitted after it.
#[cfg(feature = "tracing")]
#[must_use = "a note is emitted once the lock is released"]
pub(crate) struct GateNote {
    begun: GateBegin,
    seen: Seen,
}

/// Without the feature a note carries nothing.
#[cfg(not(feature = "tracing"))]
pub(crate) type GateNote = Nothing;

/// What every macro here makes without the feature (a span, a guard, a
/// note): zero-sized, no code.
#[cfg(not(feature = "tracing"))]
pub(crate) struct Nothing;

#[cfg(feature = "tracing")]
enum Seen {
    Moved(StateKind, Option<Ticket>),
    Ignored,
    Refused(Refusal),
}

#[cfg(feature = "tracing")]
impl GateBegin {
    /// Before `event` is fed to the core in `state`.
    pub(crate) fn new<P>(state: &State<P>, event: &Event<P>) -> Self {
        let (name, ticket) = match event {
            Event::Reserve(_) => ("Reserve", None),
            Event::Preflight { ticket, .. } => ("Preflight", Some(*ticket)),
            Event::Cancel(ticket) => ("Cancel", Some(*ticket)),
            Event::Commit { ticket, .. } => ("Commit", Some(*ticket)),
            Event::Seal(_) => ("Seal", None),
            Event::Close => ("Close", None),
        };
        Self {
            event: name,
            ticket: ticket.or_else(|| state.ticket()),
            before: state.kind(),
        }
    }

    /// Before a valid intent's `Reserve` row is decided in `state`.
    pub(crate) fn reserve<P>(state: &State<P>) -> Self {
        Self {
            event: "Reserve",
            ticket: state.ticket(),
            before: state.kind(),
        }
    }

    /// What the core decided.
    pub(crate) fn end<P>(self, outcome: &Outcome<P>) -> GateNote {
        let seen = match outcome {
            Outcome::Moved(next) => Seen::Moved(next.kind(), next.ticket()),
            Outcome::Ignored => Seen::Ignored,
            Outcome::Refused(error) => Seen::Refused(error.clone()),
        };
        GateNote { begun: self, seen }
    }

    /// What the core decided for a valid intent's reserve
    /// ([`reserve_next`](crate::gate::core::reserve_next)).
    pub(crate) fn end_reserve<P>(self, next: &Result<State<P>, GateError>) -> GateNote {
        let seen = match next {
            Ok(next) => Seen::Moved(next.kind(), next.ticket()),
            Err(error) => Seen::Refused(Refusal::Reserve(error.clone())),
        };
        GateNote { begun: self, seen }
    }
}

#[cfg(feature = "tracing")]
impl GateNote {
    /// Emits the note. Call only with no baton lock held.
    pub(crate) fn emit(self, config: &crate::gate::core::Config) {
        let (root_run_id, run_id) = (config.root_run_id(), config.source().run_id.as_str());
        let GateBegin {
            event,
            ticket,
            before,
        } = self.begun;
        match self.seen {
            Seen::Moved(after, next) => tracing::debug!(
                target: "baton::gate",
                root_run_id,
                run_id,
                ticket = next.or(ticket).map(Ticket::get),
                event,
                before = before.name(),
                after = after.name(),
                "transition"
            ),
            Seen::Ignored => tracing::trace!(
                target: "baton::gate",
                root_run_id,
                run_id,
                ticket = ticket.map(Ticket::get),
                event,
                before = before.name(),
                "ignored"
            ),
            Seen::Refused(error) => refused(
                root_run_id,
                run_id,
                ticket,
                event,
                Some(before),
                error.name(),
                &error,
            ),
        }
    }
}

/// A refusal, at `TRACE`; `before` and `ticket` where known.
#[cfg(feature = "tracing")]
pub(crate) fn refused(
    root_run_id: &str,
    run_id: &str,
    ticket: Option<Ticket>,
    event: &'static str,
    before: Option<StateKind>,
    name: &'static str,
    error: &dyn std::fmt::Display,
) {
    tracing::trace!(
        target: "baton::gate",
        root_run_id,
        run_id,
        ticket = ticket.map(Ticket::get),
        event,
        before = before.map(StateKind::name),
        refused = name,
        error = %error,
        "refused"
    );
}

/// The span of one `boundary` future, entered on each of its polls.
#[cfg(feature = "tracing")]
pub(crate) fn boundary_span(root_run_id: &str, run_id: &str) -> tracing::Span {
    tracing::debug_span!(
        target: "baton::gate",
        "boundary",
        root_run_id,
        run_id,
        ticket = tracing::field::Empty
    )
}

/// The cancel signal fired for the first time, in `phase`.
#[cfg(feature = "tracing")]
pub(crate) fn fired(phase: impl FnOnce() -> crate::Phase) {
    // `phase` takes the latch's lock: read only if the event is wanted,
    // and before the event, never during it.
    if tracing::enabled!(target: "baton::cancel", tracing::Level::DEBUG) {
        let phase = phase();
        tracing::debug!(target: "baton::cancel", phase = phase.as_str(), "fired");
    }
}

/// The span of one durable append and the seal or close after it.
#[cfg(feature = "tracing")]
pub(crate) fn durable_span(root_run_id: &str, run_id: &str, epoch: Epoch) -> tracing::Span {
    tracing::debug_span!(
        target: "baton::durable",
        "append",
        root_run_id,
        run_id,
        epoch = epoch.get(),
        outcome = tracing::field::Empty,
        sealed = tracing::field::Empty
    )
}

/// Records what the log answered the append.
#[cfg(feature = "tracing")]
pub(crate) fn record_step(span: &tracing::Span, step: &SealStep) {
    let outcome = match step {
        SealStep::Seal(Receipt::Written) => "written",
        SealStep::Seal(Receipt::AlreadyDurable) => "already_durable",
        SealStep::Close(SealError::Fenced { .. }) => "fenced",
        SealStep::Close(
            SealError::Append(_) | SealError::NotCommitted | SealError::ClosedBeforeSeal,
        ) => "failed",
    };
    span.record("outcome", outcome);
}

/// Records whether the gate was sealed, and a misuse that never appended.
#[cfg(feature = "tracing")]
pub(crate) fn record_end<T>(span: &tracing::Span, result: &Result<T, SealError>) {
    if let Err(SealError::NotCommitted) = result {
        span.record("outcome", "not_committed");
    }
    span.record("sealed", result.is_ok());
}

/// `GateBegin::new(state, event)`; `Nothing` without the feature.
macro_rules! gate_begin {
    ($state:expr, $event:expr) => {{
        #[cfg(feature = "tracing")]
        let begun = $crate::trace::GateBegin::new($state, $event);
        #[cfg(not(feature = "tracing"))]
        let begun = $crate::trace::Nothing;
        begun
    }};
}

/// `GateBegin::reserve(state)`; `Nothing` without the feature.
macro_rules! gate_begin_reserve {
    ($state:expr) => {{
        #[cfg(feature = "tracing")]
        let begun = $crate::trace::GateBegin::reserve($state);
        #[cfg(not(feature = "tracing"))]
        let begun = $crate::trace::Nothing;
        begun
    }};
}

/// `begun.end(outcome)`: the step's [`GateNote`]; `Nothing` without the
/// feature.
macro_rules! gate_end {
    ($begun:expr, $outcome:expr) => {{
        #[cfg(feature = "tracing")]
        let note = $begun.end($outcome);
        #[cfg(not(feature = "tracing"))]
        let note: $crate::trace::Nothing = $begun;
        note
    }};
}

/// `begun.end_reserve(next)`: the note of a valid intent's reserve;
/// `Nothing` without the feature.
macro_rules! gate_end_reserve {
    ($begun:expr, $next:expr) => {{
        #[cfg(feature = "tracing")]
        let note = $begun.end_reserve($next);
        #[cfg(not(feature = "tracing"))]
        let note: $crate::trace::Nothing = $begun;
        note
    }};
}

/// Emits a [`GateNote`]. Only with no baton lock held.
macro_rules! gate_emit {
    ($note:expr, $config:expr) => {{
        #[cfg(feature = "tracing")]
        $note.emit($config);
        #[cfg(not(feature = "tracing"))]
        let $crate::trace::Nothing = $note;
    }};
}

/// A refusal decided without the lock; the arguments are evaluated only
/// with the feature.
macro_rules! gate_refused {
    ($root_run_id:expr, $run_id:expr, $before:expr, $error:expr) => {
        #[cfg(feature = "tracing")]
        $crate::trace::refused(
            $root_run_id,
            $run_id,
            None,
            "Reserve",
            $before,
            $error.name(),
            $error,
        );
    };
}

/// The cancel signal fired, for the first time if `first`; neither
/// argument is evaluated without the feature, and `phase` only for a
/// subscriber that wants the event.
macro_rules! cancel_fired {
    ($first:expr, $phase:expr) => {
        #[cfg(feature = "tracing")]
        if $first {
            $crate::trace::fired(|| $phase);
        }
    };
}

/// The durable append's span, created (and not entered); `Nothing`
/// without the feature.
macro_rules! append_span {
    ($gate:expr, $epoch:expr) => {{
        #[cfg(feature = "tracing")]
        let span = $crate::trace::durable_span($gate.root_run_id(), &$gate.source().run_id, $epoch);
        #[cfg(not(feature = "tracing"))]
        let span = $crate::trace::Nothing;
        span
    }};
}

/// Enters a span until the guard drops (blocking code only); `Nothing`
/// without the feature.
macro_rules! enter {
    ($span:expr) => {{
        #[cfg(feature = "tracing")]
        let entered = $span.enter();
        #[cfg(not(feature = "tracing"))]
        let entered = $crate::trace::Nothing;
        entered
    }};
}

/// `future`, entered in `span` on each poll; `future` itself without the
/// feature.
macro_rules! instrument {
    ($future:expr, $span:expr) => {{
        #[cfg(feature = "tracing")]
        let future = tracing::Instrument::instrument($future, $span.clone());
        #[cfg(not(feature = "tracing"))]
        let future = $future;
        future
    }};
}

/// Records what the log answered (`record_step`); nothing without the feature.
macro_rules! append_step {
    ($span:expr, $step:expr) => {
        #[cfg(feature = "tracing")]
        $crate::trace::record_step(&$span, $step);
    };
}

/// Records how the append's step ended (`record_end`); nothing without the
/// feature.
macro_rules! append_end {
    ($span:expr, $result:expr) => {
        #[cfg(feature = "tracing")]
        $crate::trace::record_end(&$span, $result);
    };
}

/// Records the boundary's ticket on its span; nothing without the feature.
macro_rules! boundary_ticket {
    ($span:expr, $ticket:expr) => {
        #[cfg(feature = "tracing")]
        $span.record("ticket", $ticket.get());
    };
}

/// A ledger event at `DEBUG` (target `baton::ledger`): `tracing::debug!`'s
/// arguments; not one of them is evaluated without the feature.
macro_rules! ledger_debug {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        tracing::debug!(target: "baton::ledger", $($arg)*);
    }};
}

/// A ledger refusal at `TRACE` (target `baton::ledger`, message
/// `refused`); nothing without the feature.
macro_rules! ledger_refused {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        tracing::trace!(target: "baton::ledger", $($arg)*, "refused");
    }};
}

/// The name of an [`Arrival`](crate::ledger::Arrival), for its event.
#[cfg(feature = "tracing")]
pub(crate) fn arrival_name(arrival: crate::ledger::Arrival) -> &'static str {
    use crate::ledger::Arrival;
    match arrival {
        Arrival::Delivered => "delivered",
        Arrival::AlreadyDelivered => "already_delivered",
        Arrival::NotOutstanding => "not_outstanding",
        Arrival::BeingEnded => "being_ended",
    }
}

pub(crate) use {
    append_end, append_span, append_step, boundary_ticket, cancel_fired, enter, gate_begin,
    gate_begin_reserve, gate_emit, gate_end, gate_end_reserve, gate_refused, instrument,
    ledger_debug, ledger_refused,
};
