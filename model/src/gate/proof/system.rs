//! The gate unbounded: one gate, any number of requesters holding any
//! tickets (stale ones too), a worker preparing and sealing any pauses, a
//! third party that closes — every event at any moment — with the ghost
//! of the highest ticket ever issued, one waiter's ticket and the pause
//! prepared for it; the invariant, and S1–S9
//! as obligations of one step.

use std::io;

use easy_smt::{Context, SExpr};

use super::encode::{GateEvent, GateState, LAST, Table, Terms, event, kind, outcome, query, wait};
use crate::smt::{Transitions, values};

/// One state: the gate's, and the highest ticket issued (−1: none).
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// The gate's state.
    pub gate: GateState,
    /// Ghost: the highest ticket a `Reserve` issued.
    pub issued: SExpr,
    /// The ticket one waiter holds: any ticket, the same in every state.
    pub waiter: SExpr,
    /// Ghost: 1 once a preflight for the waiter's ticket prepared a pause
    /// the gate holds.
    pub prepared: SExpr,
    /// Ghost: that pause's intent.
    pub prepared_intent: SExpr,
    /// Ghost: that pause's payload.
    pub prepared_payload: SExpr,
}

/// The gate's table as a transition system.
#[derive(Clone, Copy, Debug)]
pub struct System {
    /// The table.
    pub table: Table,
}

/// The promises proven: their SPEC ids.
pub const PROMISES: [&str; 9] = ["S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9"];

impl System {
    fn same(c: &Context, a: &GateState, b: &GateState) -> SExpr {
        c.and_many([
            c.eq(a.kind, b.kind),
            c.eq(a.ticket, b.ticket),
            c.eq(a.intent, b.intent),
            c.eq(a.pause_intent, b.pause_intent),
            c.eq(a.pause_payload, b.pause_payload),
        ])
    }
}

impl Transitions for System {
    type Frame = Frame;
    type Choice = GateEvent;
    type Answers = SExpr;

    fn name(&self) -> String {
        "the gate".into()
    }

    fn frame(&self, ctx: &mut Context, i: usize) -> io::Result<Frame> {
        let int = ctx.int_sort();
        Ok(Frame {
            gate: GateState {
                kind: ctx.declare_const(format!("kind_{i}"), int)?,
                ticket: ctx.declare_const(format!("ticket_{i}"), int)?,
                intent: ctx.declare_const(format!("intent_{i}"), int)?,
                pause_intent: ctx.declare_const(format!("pause_intent_{i}"), int)?,
                pause_payload: ctx.declare_const(format!("pause_payload_{i}"), int)?,
            },
            issued: ctx.declare_const(format!("issued_{i}"), int)?,
            waiter: ctx.declare_const(format!("waiter_{i}"), int)?,
            prepared: ctx.declare_const(format!("prepared_{i}"), int)?,
            prepared_intent: ctx.declare_const(format!("prepared_intent_{i}"), int)?,
            prepared_payload: ctx.declare_const(format!("prepared_payload_{i}"), int)?,
        })
    }

    fn choice(&self, ctx: &mut Context, i: usize) -> io::Result<GateEvent> {
        let (int, boolean) = (ctx.int_sort(), ctx.bool_sort());
        Ok(GateEvent {
            kind: ctx.declare_const(format!("event_{i}"), int)?,
            ticket: ctx.declare_const(format!("event_ticket_{i}"), int)?,
            intent: ctx.declare_const(format!("event_intent_{i}"), int)?,
            valid: ctx.declare_const(format!("event_valid_{i}"), boolean)?,
            has_pause: ctx.declare_const(format!("event_has_pause_{i}"), boolean)?,
            pause_intent: ctx.declare_const(format!("event_pause_intent_{i}"), int)?,
            pause_payload: ctx.declare_const(format!("event_pause_payload_{i}"), int)?,
            canceled: ctx.declare_const(format!("event_canceled_{i}"), boolean)?,
        })
    }

    /// The outcome's code.
    fn answers(&self, c: &Context, s: &Frame, x: &GateEvent) -> SExpr {
        Terms::new(c).step(self.table, &s.gate, x).outcome
    }

    /// `Running { next: 0 }`, nothing issued.
    fn init(&self, c: &Context, s: &Frame) -> SExpr {
        let t = Terms::new(c);
        c.and_many([
            t.is(s.gate.kind, kind::RUNNING),
            t.is(s.gate.ticket, 0),
            t.is(s.gate.intent, 0),
            t.is(s.gate.pause_intent, 0),
            t.is(s.gate.pause_payload, 0),
            t.is(s.issued, -1),
            c.gte(s.waiter, c.numeral(0)),
            c.lte(s.waiter, c.numeral(LAST)),
            t.is(s.prepared, 0),
            t.is(s.prepared_intent, 0),
            t.is(s.prepared_payload, 0),
        ])
    }

    fn step(&self, c: &Context, s: &Frame, x: &GateEvent, _: &SExpr, n: &Frame) -> SExpr {
        let t = Terms::new(c);
        let stepped = t.step(self.table, &s.gate, x);
        let reserved = c.and(
            t.is(x.kind, event::RESERVE),
            t.is(stepped.outcome, outcome::MOVED),
        );
        // A preflight for the waiter's ticket that the gate now holds.
        let prepares = c.and_many([
            t.is(x.kind, event::PREFLIGHT),
            c.eq(x.ticket, s.waiter),
            t.is(stepped.next.kind, kind::HELD),
            c.not(t.is(s.gate.kind, kind::HELD)),
        ]);
        c.and_many([
            c.gte(x.ticket, c.numeral(0)),
            c.lte(x.ticket, c.numeral(LAST)),
            t.one_of(x.kind, 0..=5),
            Self::same(c, &stepped.next, &n.gate),
            c.eq(n.issued, c.ite(reserved, stepped.next.ticket, s.issued)),
            c.eq(n.waiter, s.waiter),
            c.eq(n.prepared, c.ite(prepares, c.numeral(1), s.prepared)),
            c.eq(
                n.prepared_intent,
                c.ite(prepares, x.pause_intent, s.prepared_intent),
            ),
            c.eq(
                n.prepared_payload,
                c.ite(prepares, x.pause_payload, s.prepared_payload),
            ),
        ])
    }

    fn invariant(&self, c: &Context, s: &Frame) -> SExpr {
        let t = Terms::new(c);
        let g = &s.gate;
        let at = |k: i64| t.is(g.kind, k);
        let with_pause = c.or_many([at(kind::HELD), at(kind::COMMITTED), at(kind::SEALED)]);
        c.and_many([
            t.one_of(g.kind, 0..=5),
            c.gte(s.issued, c.numeral(-1)),
            c.lt(s.issued, c.numeral(LAST)),
            // Running's next is the ticket after every one issued ...
            c.imp(
                at(kind::RUNNING),
                c.eq(g.ticket, c.plus(s.issued, c.numeral(1))),
            ),
            // ... and a live ticket is the last one issued.
            c.imp(
                c.or(at(kind::REQUESTED), with_pause),
                c.eq(g.ticket, s.issued),
            ),
            c.imp(at(kind::CLOSED), t.is(g.ticket, 0)),
            c.imp(c.not(at(kind::REQUESTED)), t.is(g.intent, 0)),
            // The pause the gate holds for the waiter's ticket is the one
            // its preflight prepared; a waiter's ticket that was
            // prepared for was issued.
            t.one_of(s.prepared, [0, 1]),
            c.imp(
                c.and(with_pause, c.eq(g.ticket, s.waiter)),
                c.and_many([
                    t.is(s.prepared, 1),
                    c.eq(g.pause_intent, s.prepared_intent),
                    c.eq(g.pause_payload, s.prepared_payload),
                ]),
            ),
            c.imp(t.is(s.prepared, 1), c.lte(s.waiter, s.issued)),
            c.imp(
                c.not(with_pause),
                c.and(t.is(g.pause_intent, 0), t.is(g.pause_payload, 0)),
            ),
        ])
    }

    fn promises(&self) -> Vec<&'static str> {
        PROMISES.to_vec()
    }

    fn keeps(
        &self,
        c: &Context,
        id: &str,
        s: &Frame,
        x: &GateEvent,
        outcome_code: &SExpr,
        n: &Frame,
    ) -> SExpr {
        let t = Terms::new(c);
        let (a, b) = (&s.gate, &n.gate);
        let was = |k: i64| t.is(a.kind, k);
        let now = |k: i64| t.is(b.kind, k);
        let by = |k: i64| t.is(x.kind, k);
        let unchanged = Self::same(c, a, b);
        let has_live = c.or_many([
            was(kind::REQUESTED),
            was(kind::HELD),
            was(kind::COMMITTED),
            was(kind::SEALED),
        ]);
        let live = c.and(has_live, c.eq(x.ticket, a.ticket));
        let same_pause = c.and(
            c.eq(b.pause_intent, a.pause_intent),
            c.eq(b.pause_payload, a.pause_payload),
        );
        match id {
            // Only Running reserves, with a ticket never issued before;
            // nothing else makes a reservation.
            "S1" => c.and(
                c.imp(
                    c.and(by(event::RESERVE), t.is(*outcome_code, outcome::MOVED)),
                    c.and_many([
                        was(kind::RUNNING),
                        now(kind::REQUESTED),
                        c.gt(b.ticket, s.issued),
                    ]),
                ),
                c.imp(
                    c.and(now(kind::REQUESTED), c.not(unchanged)),
                    by(event::RESERVE),
                ),
            ),
            // An event with a ticket other than the live one changes
            // nothing.
            "S2" => c.imp(
                c.and(
                    c.or_many([by(event::PREFLIGHT), by(event::CANCEL), by(event::COMMIT)]),
                    c.not(live),
                ),
                unchanged,
            ),
            "S3" => c.imp(
                c.and(now(kind::COMMITTED), c.not(was(kind::COMMITTED))),
                c.and_many([
                    by(event::COMMIT),
                    was(kind::HELD),
                    live,
                    c.not(x.canceled),
                    c.eq(b.ticket, a.ticket),
                    same_pause,
                ]),
            ),
            "S4" => c.imp(
                was(kind::COMMITTED),
                c.or_many([
                    unchanged,
                    c.and_many([now(kind::SEALED), c.eq(b.ticket, a.ticket), same_pause]),
                    now(kind::CLOSED),
                ]),
            ),
            "S5" => c.imp(
                c.and(now(kind::SEALED), c.not(was(kind::SEALED))),
                c.and_many([
                    by(event::SEAL),
                    was(kind::COMMITTED),
                    c.eq(x.pause_intent, a.pause_intent),
                    c.eq(x.pause_payload, a.pause_payload),
                    same_pause,
                    c.eq(b.ticket, a.ticket),
                ]),
            ),
            "S6" => c.imp(c.or(was(kind::SEALED), was(kind::CLOSED)), unchanged),
            // Each waiter sees only its own ticket: a query resolves only
            // with the pause prepared for the waiter's ticket, and it is
            // pending only from the step that begins its wait (the
            // reservation of the ticket, its preflight's acceptance, its
            // commit) until it is decided: once a ticket's wait is
            // decided it stays decided, for tickets are never reissued.
            "S7" => {
                let own = c.and_many([
                    t.is(n.prepared, 1),
                    c.eq(b.pause_intent, n.prepared_intent),
                    c.eq(b.pause_payload, n.prepared_payload),
                ]);
                let begins = [kind::RUNNING, kind::REQUESTED, kind::HELD];
                c.and_many((0..query::NAMES.len()).map(|q| {
                    let before = t.query(q, a, s.waiter);
                    let after = t.query(q, b, n.waiter);
                    let begun = c.and(t.is(a.kind, begins[q]), c.eq(a.ticket, s.waiter));
                    c.and(
                        c.imp(t.is(after, wait::RESOLVED), own),
                        c.imp(
                            c.and(
                                t.is(after, wait::PENDING),
                                c.not(t.is(before, wait::PENDING)),
                            ),
                            begun,
                        ),
                    )
                }))
            }
            // A failed preflight, one for another intent or after a
            // cancellation, and a live Cancel, lead back to Running.
            "S8" => {
                let failed = c.or_many([
                    c.not(x.has_pause),
                    x.canceled,
                    c.not(c.eq(x.pause_intent, a.intent)),
                ]);
                let release = c.or(
                    c.and_many([by(event::PREFLIGHT), was(kind::REQUESTED), live, failed]),
                    c.and_many([
                        by(event::CANCEL),
                        c.or(was(kind::REQUESTED), was(kind::HELD)),
                        live,
                    ]),
                );
                c.imp(
                    release,
                    c.and(
                        now(kind::RUNNING),
                        c.eq(b.ticket, c.plus(a.ticket, c.numeral(1))),
                    ),
                )
            }
            "S9" => c.imp(
                c.and(by(event::RESERVE), c.not(x.valid)),
                c.and(t.is(*outcome_code, outcome::INVALID), unchanged),
            ),
            other => panic!("no promise {other}"),
        }
    }

    fn describe(
        &self,
        ctx: &mut Context,
        x: &GateEvent,
        outcome_code: &SExpr,
        n: &Frame,
    ) -> io::Result<String> {
        let v = values(
            ctx,
            vec![
                x.kind,
                x.ticket,
                x.intent,
                x.valid,
                x.has_pause,
                x.pause_intent,
                x.pause_payload,
                x.canceled,
                *outcome_code,
                n.gate.kind,
                n.gate.ticket,
                n.gate.intent,
                n.gate.pause_intent,
                n.gate.pause_payload,
            ],
        )?;
        let name = |names: &[&'static str], code: i128| {
            usize::try_from(code)
                .ok()
                .and_then(|i| names.get(i).copied())
                .unwrap_or("?")
        };
        let pause = |i: i128, p: i128| format!("pause(intent {i}, payload {p})");
        let ev = match i64::try_from(v[0]).unwrap_or(-1) {
            event::RESERVE => format!(
                "Reserve(intent {}{})",
                v[2],
                if v[3] == 1 { "" } else { ", invalid" }
            ),
            event::PREFLIGHT => format!(
                "Preflight(#{}, {}, canceled {})",
                v[1],
                if v[4] == 1 {
                    pause(v[5], v[6])
                } else {
                    "no pause".into()
                },
                v[7] == 1
            ),
            event::CANCEL => format!("Cancel(#{})", v[1]),
            event::COMMIT => format!("Commit(#{}, canceled {})", v[1], v[7] == 1),
            event::SEAL => format!("Seal({})", pause(v[5], v[6])),
            _ => "Close".into(),
        };
        let state = match i64::try_from(v[9]).unwrap_or(-1) {
            kind::RUNNING => format!("Running(next #{})", v[10]),
            kind::REQUESTED => format!("Requested(#{}, intent {})", v[10], v[11]),
            kind::HELD => format!("Held(#{}, {})", v[10], pause(v[12], v[13])),
            kind::COMMITTED => format!("Committed(#{}, {})", v[10], pause(v[12], v[13])),
            kind::SEALED => format!("Sealed(#{}, {})", v[10], pause(v[12], v[13])),
            _ => "Closed".into(),
        };
        Ok(format!("{ev} -> {}; {state}", name(&outcome::NAMES, v[8])))
    }
}
