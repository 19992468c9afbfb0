//! The gate's table (`baton::gate::core::step`) as terms of linear integer
//! arithmetic: a state is its kind, its ticket (`next` in `Running`) and
//! the identities of its intent and pause; an event carries any ticket,
//! any intent (valid or not) and any pause. Intents and pauses are
//! identities (two are equal exactly when their numbers are), so what the
//! table does with any number of them is covered. The five broken
//! variants of the gate's self-test are encoded too; [`super::agree`]
//! holds every term to the Rust function it stands for.

use easy_smt::{Context, SExpr};

/// The state kinds, in `StateKind`'s order.
pub mod kind {
    /// `Running { next }`.
    pub const RUNNING: i64 = 0;
    /// `Requested { ticket, intent }`.
    pub const REQUESTED: i64 = 1;
    /// `Held { ticket, pause }`.
    pub const HELD: i64 = 2;
    /// `Committed { ticket, pause }`.
    pub const COMMITTED: i64 = 3;
    /// `Sealed { ticket, pause }`.
    pub const SEALED: i64 = 4;
    /// `Closed`.
    pub const CLOSED: i64 = 5;
}

/// The events.
pub mod event {
    /// `Reserve(intent)`.
    pub const RESERVE: i64 = 0;
    /// `Preflight { ticket, pause, canceled }`.
    pub const PREFLIGHT: i64 = 1;
    /// `Cancel(ticket)`.
    pub const CANCEL: i64 = 2;
    /// `Commit { ticket, canceled }`.
    pub const COMMIT: i64 = 3;
    /// `Seal(pause)`.
    pub const SEAL: i64 = 4;
    /// `Close`.
    pub const CLOSE: i64 = 5;
    /// Their names.
    pub const NAMES: [&str; 6] = ["Reserve", "Preflight", "Cancel", "Commit", "Seal", "Close"];
}

/// An outcome: `Moved`, `Ignored` or `Refused` with a reason.
pub mod outcome {
    /// `Outcome::Moved`.
    pub const MOVED: i64 = 0;
    /// `Outcome::Ignored`.
    pub const IGNORED: i64 = 1;
    /// `Refused(Reserve(InvalidInput))`.
    pub const INVALID: i64 = 2;
    /// `Refused(Reserve(TicketsExhausted))`.
    pub const EXHAUSTED: i64 = 3;
    /// `Refused(Reserve(Busy))`.
    pub const BUSY: i64 = 4;
    /// `Refused(Reserve(HandedOff))`.
    pub const HANDED_OFF: i64 = 5;
    /// `Refused(Reserve(Closed))`.
    pub const CLOSED: i64 = 6;
    /// `Refused(NotHeld)`.
    pub const NOT_HELD: i64 = 7;
    /// `Refused(Canceled)`.
    pub const CANCELED: i64 = 8;
    /// Their names.
    pub const NAMES: [&str; 9] = [
        "Moved",
        "Ignored",
        "Refused(InvalidInput)",
        "Refused(TicketsExhausted)",
        "Refused(Busy)",
        "Refused(HandedOff)",
        "Refused(Closed)",
        "Refused(NotHeld)",
        "Refused(Canceled)",
    ];
}

/// What a waiter's query answers (`baton::gate::core::Wait`).
pub mod wait {
    /// `Wait::Pending`.
    pub const PENDING: i64 = 0;
    /// `Wait::Resolved(pause)`: the state's pause.
    pub const RESOLVED: i64 = 1;
    /// `Wait::Gone`.
    pub const GONE: i64 = 2;
}

/// The waiters' queries of `baton::gate::core::wait`: for each, the kind
/// it is pending in and the kind it resolves in (both for its own
/// ticket).
pub mod query {
    use super::kind;

    /// `ready`: a requester's reservation.
    pub const READY: usize = 0;
    /// `boundary`: the worker, after its preflight was accepted.
    pub const BOUNDARY: usize = 1;
    /// `seal`: a wait for the seal.
    pub const SEAL: usize = 2;
    /// Their names.
    pub const NAMES: [&str; 3] = ["ready", "boundary", "seal"];
    /// Each query's (pending, resolved) kinds.
    pub const KINDS: [(i64, i64); 3] = [
        (kind::REQUESTED, kind::HELD),
        (kind::HELD, kind::COMMITTED),
        (kind::COMMITTED, kind::SEALED),
    ];
}

/// The last ticket number (`u64::MAX`, which a gate never issues).
pub const LAST: u64 = u64::MAX;

/// The table an encoding follows: the real one, or a broken variant's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// `baton::gate::core::step`.
    Real,
    /// (a) `Cancel` ignores its ticket.
    CancelIgnoresTicket,
    /// (b) `Close` overrides `Sealed`.
    CloseOverridesSealed,
    /// (c) `Commit` ignores the cancel bit.
    CommitIgnoresCancel,
    /// (d) a failed preflight re-requests.
    FailedPreflightRerequests,
    /// (e) `Seal` accepts any pause.
    SealAcceptsAnyPause,
}

impl Table {
    /// The table of the variant called `name` ("real" for the real one).
    pub fn of(name: &str) -> Option<Table> {
        Some(match name {
            "real" => Table::Real,
            "a_cancel_ignores_ticket" => Table::CancelIgnoresTicket,
            "b_close_overrides_sealed" => Table::CloseOverridesSealed,
            "c_commit_ignores_cancel" => Table::CommitIgnoresCancel,
            "d_failed_preflight_rerequests" => Table::FailedPreflightRerequests,
            "e_seal_accepts_any_pause" => Table::SealAcceptsAnyPause,
            _ => return None,
        })
    }
}

/// A gate state as terms: fields a kind does not have are 0.
#[derive(Clone, Copy, Debug)]
pub struct GateState {
    /// Its [`kind`].
    pub kind: SExpr,
    /// The live ticket, or `next` in `Running`.
    pub ticket: SExpr,
    /// The requested intent's identity (`Requested`).
    pub intent: SExpr,
    /// The pause's intent's identity (`Held`, `Committed`, `Sealed`).
    pub pause_intent: SExpr,
    /// The pause's payload.
    pub pause_payload: SExpr,
}

/// An event as terms: fields its kind does not read are ignored.
#[derive(Clone, Copy, Debug)]
pub struct GateEvent {
    /// Its [`event`] kind.
    pub kind: SExpr,
    /// The ticket it carries.
    pub ticket: SExpr,
    /// A reservation's intent.
    pub intent: SExpr,
    /// Whether that intent is valid for the gate's Run.
    pub valid: SExpr,
    /// Whether a preflight brings a pause.
    pub has_pause: SExpr,
    /// The pause's intent (a preflight's, a seal's).
    pub pause_intent: SExpr,
    /// The pause's payload.
    pub pause_payload: SExpr,
    /// The cancel bit.
    pub canceled: SExpr,
}

/// What a step does: its [`outcome`] and the state after it.
#[derive(Clone, Copy, Debug)]
pub struct Stepped {
    /// The outcome.
    pub outcome: SExpr,
    /// The state after (the same state unless `Moved`).
    pub next: GateState,
}

/// Term builders over one context.
#[derive(Clone, Copy)]
pub struct Terms<'a> {
    c: &'a Context,
}

impl<'a> Terms<'a> {
    /// The builders of `c`.
    pub fn new(c: &'a Context) -> Self {
        Self { c }
    }

    fn int(&self, v: i64) -> SExpr {
        self.c.numeral(v)
    }

    /// `a = v`.
    pub fn is(&self, a: SExpr, v: i64) -> SExpr {
        self.c.eq(a, self.int(v))
    }

    /// `a` is one of `values`.
    pub fn one_of(&self, a: SExpr, values: impl IntoIterator<Item = i64>) -> SExpr {
        self.c.or_many(values.into_iter().map(|v| self.is(a, v)))
    }

    fn state(&self, kind: i64, ticket: SExpr, intent: SExpr, pause: (SExpr, SExpr)) -> GateState {
        GateState {
            kind: self.int(kind),
            ticket,
            intent,
            pause_intent: pause.0,
            pause_payload: pause.1,
        }
    }

    /// `state` when `cond`, else `other`, field by field.
    fn choose(&self, cond: SExpr, state: GateState, other: GateState) -> GateState {
        let c = self.c;
        GateState {
            kind: c.ite(cond, state.kind, other.kind),
            ticket: c.ite(cond, state.ticket, other.ticket),
            intent: c.ite(cond, state.intent, other.intent),
            pause_intent: c.ite(cond, state.pause_intent, other.pause_intent),
            pause_payload: c.ite(cond, state.pause_payload, other.pause_payload),
        }
    }

    /// `Running { next: ticket.successor() }` (saturating at [`LAST`]).
    fn released(&self, ticket: SExpr) -> GateState {
        let c = self.c;
        let last = c.numeral(LAST);
        let next = c.ite(c.gte(ticket, last), last, c.plus(ticket, self.int(1)));
        let zero = self.int(0);
        self.state(kind::RUNNING, next, zero, (zero, zero))
    }

    /// What waiter query `q` (a [`query`]) answers in `s` for `ticket`:
    /// a [`wait`] code; a resolved one carries `s`'s pause.
    pub fn query(&self, q: usize, s: &GateState, ticket: SExpr) -> SExpr {
        let c = self.c;
        let (pending, resolved) = query::KINDS[q];
        let mine = c.eq(s.ticket, ticket);
        c.ite(
            c.and(mine, self.is(s.kind, pending)),
            self.int(wait::PENDING),
            c.ite(
                c.and(mine, self.is(s.kind, resolved)),
                self.int(wait::RESOLVED),
                self.int(wait::GONE),
            ),
        )
    }

    /// `table`'s step from `s` by `e`.
    pub fn step(&self, table: Table, s: &GateState, e: &GateEvent) -> Stepped {
        let c = self.c;
        let zero = self.int(0);
        let at = |k: i64| self.is(s.kind, k);
        let live = c.eq(e.ticket, s.ticket);
        let same_pause = c.and(
            c.eq(e.pause_intent, s.pause_intent),
            c.eq(e.pause_payload, s.pause_payload),
        );
        let result = |outcome: i64, next: GateState| (self.int(outcome), next);
        let stay = |outcome: i64| (self.int(outcome), *s);
        let pick = |cond: SExpr, a: (SExpr, GateState), b: (SExpr, GateState)| {
            (c.ite(cond, a.0, b.0), self.choose(cond, a.1, b.1))
        };

        let reserve = pick(
            c.not(e.valid),
            stay(outcome::INVALID),
            pick(
                at(kind::RUNNING),
                pick(
                    c.gte(s.ticket, c.numeral(LAST)),
                    stay(outcome::EXHAUSTED),
                    result(
                        outcome::MOVED,
                        self.state(kind::REQUESTED, s.ticket, e.intent, (zero, zero)),
                    ),
                ),
                pick(
                    c.or(at(kind::REQUESTED), at(kind::HELD)),
                    stay(outcome::BUSY),
                    pick(
                        c.or(at(kind::COMMITTED), at(kind::SEALED)),
                        stay(outcome::HANDED_OFF),
                        stay(outcome::CLOSED),
                    ),
                ),
            ),
        );

        let prepared = c.and_many([
            e.has_pause,
            c.not(e.canceled),
            c.eq(e.pause_intent, s.intent),
        ]);
        let held = self.state(
            kind::HELD,
            s.ticket,
            zero,
            (e.pause_intent, e.pause_payload),
        );
        let failed = match table {
            Table::FailedPreflightRerequests => pick(
                c.not(e.has_pause),
                stay(outcome::MOVED),
                result(outcome::MOVED, self.released(s.ticket)),
            ),
            _ => result(outcome::MOVED, self.released(s.ticket)),
        };
        let preflight = pick(
            c.and(at(kind::REQUESTED), live),
            pick(prepared, result(outcome::MOVED, held), failed),
            stay(outcome::IGNORED),
        );

        let cancel_hits = match table {
            Table::CancelIgnoresTicket => c.or(at(kind::REQUESTED), at(kind::HELD)),
            _ => c.and(c.or(at(kind::REQUESTED), at(kind::HELD)), live),
        };
        let cancel = pick(
            cancel_hits,
            result(outcome::MOVED, self.released(s.ticket)),
            stay(outcome::IGNORED),
        );

        let canceled = match table {
            Table::CommitIgnoresCancel => c.false_(),
            _ => e.canceled,
        };
        let committed = self.state(
            kind::COMMITTED,
            s.ticket,
            zero,
            (s.pause_intent, s.pause_payload),
        );
        let commit = pick(
            c.and(at(kind::HELD), live),
            pick(
                canceled,
                stay(outcome::CANCELED),
                result(outcome::MOVED, committed),
            ),
            stay(outcome::NOT_HELD),
        );

        let sealed = |pause: (SExpr, SExpr)| self.state(kind::SEALED, s.ticket, zero, pause);
        let seal_real = pick(
            c.and(at(kind::COMMITTED), same_pause),
            result(outcome::MOVED, sealed((s.pause_intent, s.pause_payload))),
            stay(outcome::IGNORED),
        );
        let seal = match table {
            Table::SealAcceptsAnyPause => pick(
                at(kind::COMMITTED),
                result(outcome::MOVED, sealed((e.pause_intent, e.pause_payload))),
                seal_real,
            ),
            _ => seal_real,
        };

        let closed = self.state(kind::CLOSED, zero, zero, (zero, zero));
        let absorbs = match table {
            Table::CloseOverridesSealed => at(kind::CLOSED),
            _ => c.or(at(kind::SEALED), at(kind::CLOSED)),
        };
        let close = pick(
            absorbs,
            stay(outcome::IGNORED),
            result(outcome::MOVED, closed),
        );

        let by = |k: i64| self.is(e.kind, k);
        let (outcome, next) = pick(
            by(event::RESERVE),
            reserve,
            pick(
                by(event::PREFLIGHT),
                preflight,
                pick(
                    by(event::CANCEL),
                    cancel,
                    pick(
                        by(event::COMMIT),
                        commit,
                        pick(by(event::SEAL), seal, close),
                    ),
                ),
            ),
        );
        Stepped { outcome, next }
    }
}
