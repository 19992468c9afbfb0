//! The ledger unbounded: one ledger seen from a delegation id `x` among
//! any number of others, any number of scopes, waits and events, with
//! two ghosts — the `Delivered` answers `x` was given since it was last
//! registered, and the children of `x`'s let go without being handed
//! back; the invariant, and D1–D6 as obligations of one step.

use std::io;

use easy_smt::{Context, SExpr};

use super::codes::{Table, answer, event, held, other};
use super::encode::Terms;
use super::terms::{Answers, EVENT_FIELDS, FIELDS, LedgerEvent, LedgerState};
use crate::smt::{Transitions, values};

/// The last scope number and pending count the core can count to
/// (`u64::MAX`, `usize::MAX` on the 64-bit targets it is built for).
pub const LAST: u64 = u64::MAX;

/// One state: the ledger's, and the ghosts.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// The ledger's state, seen from `x`.
    pub ledger: LedgerState,
    /// Ghost: `Delivered` answers for `x` since it was last registered
    /// (or its scope began).
    pub told: SExpr,
    /// Ghost: children of `x`'s let go by the ledger without being handed
    /// back (D3 says none).
    pub leaked: SExpr,
}

/// The ledger's table as a transition system.
#[derive(Clone, Copy, Debug)]
pub struct System {
    /// The table.
    pub table: Table,
}

/// The promises proven: their SPEC ids.
pub const PROMISES: [&str; 6] = ["D1", "D2", "D3", "D4", "D5", "D6"];

fn same(c: &Context, a: &LedgerState, b: &LedgerState) -> SExpr {
    c.and_many(
        a.fields()
            .into_iter()
            .zip(b.fields())
            .map(|(a, b)| c.eq(a, b)),
    )
}

impl System {
    /// Whether `s` to `n` by `x` answered `a` lets a child of `x`'s go
    /// without handing it back and without it having arrived and been
    /// taken (D3).
    fn leaks(c: &Context, s: &LedgerState, x: &LedgerEvent, a: &Answers, n: &LedgerState) -> SExpr {
        let t = Terms::new(c);
        let adopt = t.is(x.kind, event::ADOPT);
        let had = t.is(s.child, 1);
        let let_go = c.or(
            c.and(adopt, c.or(c.not(t.live(s)), had)),
            c.and_many([c.not(adopt), had, t.is(n.child, 0)]),
        );
        let arrived_and_taken = c.and(t.is(s.x, held::ARRIVED), t.is(a.took_x, 1));
        c.and_many([let_go, t.is(a.carries, 0), c.not(arrived_and_taken)])
    }

    /// Whether the step ended the scope (a new one, or the current one's
    /// end).
    fn cleared(c: &Context, a: &Answers) -> SExpr {
        Terms::new(c).one_of(a.code, [answer::SCOPED, answer::ENDED])
    }
}

impl Transitions for System {
    type Frame = Frame;
    type Choice = LedgerEvent;
    type Answers = Answers;

    fn name(&self) -> String {
        "the ledger".into()
    }

    fn frame(&self, ctx: &mut Context, i: usize) -> io::Result<Frame> {
        let int = ctx.int_sort();
        let mut fields = Vec::with_capacity(FIELDS);
        for name in LedgerState::NAMES {
            fields.push(ctx.declare_const(format!("{name}_{i}"), int)?);
        }
        Ok(Frame {
            ledger: LedgerState::from_fields(fields.try_into().expect("every field")),
            told: ctx.declare_const(format!("told_{i}"), int)?,
            leaked: ctx.declare_const(format!("leaked_{i}"), int)?,
        })
    }

    fn choice(&self, ctx: &mut Context, i: usize) -> io::Result<LedgerEvent> {
        let int = ctx.int_sort();
        let mut fields = Vec::with_capacity(EVENT_FIELDS);
        for name in LedgerEvent::NAMES {
            fields.push(ctx.declare_const(format!("event_{name}_{i}"), int)?);
        }
        Ok(LedgerEvent::from_fields(
            fields.try_into().expect("every field"),
        ))
    }

    fn answers(&self, c: &Context, s: &Frame, x: &LedgerEvent) -> Answers {
        Terms::new(c).step(self.table, &s.ledger, x).answers
    }

    /// `Ledger::new()`: no scope, nothing issued, no entry, no wait.
    fn init(&self, c: &Context, s: &Frame) -> SExpr {
        let t = Terms::new(c);
        c.and_many(
            s.ledger
                .fields()
                .into_iter()
                .chain([s.told, s.leaked])
                .map(|f| t.is(f, 0)),
        )
    }

    fn step(&self, c: &Context, s: &Frame, x: &LedgerEvent, a: &Answers, n: &Frame) -> SExpr {
        let t = Terms::new(c);
        let l = &s.ledger;
        let stepped = t.step(self.table, l, x);
        let flag = |f: SExpr| t.one_of(f, [0, 1]);
        let by = |k: i64| t.is(x.kind, k);
        let names_other = c.and(
            t.is(x.on_x, 0),
            c.or_many([by(event::REGISTER), by(event::DISCARD), by(event::ARRIVE)]),
        );
        let registered_x = c.and_many([
            by(event::REGISTER),
            t.is(x.on_x, 1),
            t.is(a.code, answer::REGISTERED),
        ]);
        let delivered_x = c.and_many([
            by(event::ARRIVE),
            t.is(x.on_x, 1),
            t.is(a.code, answer::DELIVERED),
        ]);
        let told = c.ite(
            c.or(Self::cleared(c, a), registered_x),
            t.int(0),
            c.ite(delivered_x, c.plus(s.told, t.int(1)), s.told),
        );
        let leak = Self::leaks(c, l, x, a, &n.ledger);
        c.and_many([
            t.one_of(x.kind, 0..=11),
            flag(x.on_x),
            flag(x.valid),
            flag(x.ending),
            flag(x.x_due),
            t.one_of(x.other, 0..=3),
            // The other id an event names exists: an outstanding or
            // arrived one among the others, a delivered one in a scope.
            c.imp(
                names_other,
                c.and_many([
                    c.imp(t.is(x.other, other::OUTSTANDING), c.gt(l.out, t.int(0))),
                    c.imp(t.is(x.other, other::ARRIVED), c.gt(l.arr, t.int(0))),
                    c.imp(t.is(x.other, other::DELIVERED), t.is(l.scoped, 1)),
                ]),
            ),
            // An adoption this state sees is one for `x`.
            c.imp(by(event::ADOPT), t.is(x.on_x, 1)),
            c.gte(x.due, t.int(0)),
            c.lte(x.due, l.out),
            // A2: fewer scopes and pending waits than the core counts to.
            c.lt(l.issued, c.numeral(LAST)),
            c.lt(l.pending, c.numeral(LAST)),
            same(c, &stepped.next, &n.ledger),
            c.eq(n.told, told),
            c.eq(n.leaked, c.plus(s.leaked, t.flag(leak))),
        ])
    }

    fn invariant(&self, c: &Context, s: &Frame) -> SExpr {
        let t = Terms::new(c);
        let l = &s.ledger;
        let zero = t.int(0);
        let flag = |f: SExpr| t.one_of(f, [0, 1]);
        let arrived = t.flag(t.is(l.x, held::ARRIVED));
        let told = t.flag(t.one_of(l.x, [held::ARRIVED, held::DELIVERED]));
        c.and_many([
            flag(l.scoped),
            flag(l.child),
            flag(l.permit),
            t.one_of(l.x, 0..=3),
            c.gte(l.issued, zero),
            // With no task in scope the ledger is empty (D2, D5) ...
            c.imp(
                t.is(l.scoped, 0),
                c.and_many([
                    t.is(l.task, 0),
                    t.is(l.token, 0),
                    t.is(l.x, held::GONE),
                    t.is(l.out, 0),
                    t.is(l.arr, 0),
                    t.is(l.given, 0),
                    t.is(l.permit, 0),
                ]),
            ),
            // ... and the scope in scope is the last one issued (D5).
            c.imp(t.is(l.scoped, 1), c.eq(l.token, c.sub(l.issued, t.int(1)))),
            c.imp(t.is(l.child, 1), t.live(l)),
            // D4: the core's count is the entries'.
            c.gte(l.out, zero),
            c.gte(l.arr, zero),
            c.eq(l.counter, c.plus(l.arr, arrived)),
            // D6: no wake-up is stored while a pending wait lacks one.
            c.gte(l.given, zero),
            c.lte(l.given, l.pending),
            c.imp(t.is(l.permit, 1), c.eq(l.given, l.pending)),
            // D1: `x` was told `Delivered` once exactly when it arrived.
            c.eq(s.told, told),
            // D3.
            t.is(s.leaked, 0),
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
        x: &LedgerEvent,
        a: &Answers,
        n: &Frame,
    ) -> SExpr {
        let t = Terms::new(c);
        let (l, m) = (&s.ledger, &n.ledger);
        let by = |k: i64| t.is(x.kind, k);
        let answered = |k: i64| t.is(a.code, k);
        let on_x = t.is(x.on_x, 1);
        let unchanged = same(c, l, m);
        let empty = |s: &LedgerState| {
            c.and_many([
                t.is(s.x, held::GONE),
                t.is(s.child, 0),
                t.is(s.out, 0),
                t.is(s.arr, 0),
                t.is(s.counter, 0),
                t.is(s.given, 0),
                t.is(s.permit, 0),
            ])
        };
        match id {
            // `Delivered` once per delegation; `AlreadyDelivered` after.
            "D1" => {
                let arrive = by(event::ARRIVE);
                let was_delivered = t.one_of(l.x, [held::ARRIVED, held::DELIVERED]);
                let other_delivered = t.one_of(x.other, [other::ARRIVED, other::DELIVERED]);
                c.and_many([
                    c.imp(
                        c.and_many([arrive, on_x, answered(answer::DELIVERED)]),
                        c.and_many([
                            t.is(s.told, 0),
                            t.is(l.x, held::OUTSTANDING),
                            t.is(m.x, held::ARRIVED),
                        ]),
                    ),
                    c.imp(
                        c.and(arrive, on_x),
                        c.eq(answered(answer::ALREADY), was_delivered),
                    ),
                    c.imp(
                        c.and_many([arrive, c.not(on_x), other_delivered]),
                        answered(answer::ALREADY),
                    ),
                    c.lte(n.told, t.int(1)),
                ])
            }
            // Kept only for the task in scope, with a fresh valid id; a
            // refusal changes nothing.
            "D2" => c.imp(
                by(event::REGISTER),
                c.ite(
                    answered(answer::REGISTERED),
                    c.and_many([
                        t.is(x.valid, 1),
                        t.is(l.scoped, 1),
                        c.eq(x.task, l.task),
                        c.imp(on_x, t.is(l.x, held::GONE)),
                        c.imp(c.not(on_x), t.is(x.other, other::FRESH)),
                    ]),
                    unchanged,
                ),
            ),
            // No child is leaked.
            "D3" => t.is(n.leaked, 0),
            // The counts are the entries.
            "D4" => c.and_many([
                c.gte(m.out, t.int(0)),
                c.gte(m.arr, t.int(0)),
                c.eq(m.counter, c.plus(m.arr, t.flag(t.is(m.x, held::ARRIVED)))),
            ]),
            // A scope's end empties the ledger and hands every entry
            // back; an older scope's end changes nothing.
            "D5" => {
                let current = c.and(t.is(l.scoped, 1), c.eq(x.token, l.token));
                c.and_many([
                    c.imp(
                        Self::cleared(c, a),
                        c.and_many([
                            empty(m),
                            c.eq(m.pending, l.pending),
                            c.eq(t.is(a.took_x, 1), t.live(l)),
                        ]),
                    ),
                    c.imp(
                        c.and(by(event::END_SCOPE), c.not(current)),
                        c.and(answered(answer::STALE), unchanged),
                    ),
                    c.imp(t.is(m.scoped, 0), empty(m)),
                ])
            }
            // An arrival is never lost.
            "D6" => {
                let short = c.lt(l.given, l.pending);
                let arrival = c.ite(
                    short,
                    c.and_many([
                        c.eq(m.given, c.plus(l.given, t.int(1))),
                        c.eq(m.permit, l.permit),
                    ]),
                    c.and(c.eq(m.given, l.given), t.is(m.permit, 1)),
                );
                let held = |s: &LedgerState| c.plus(s.given, s.permit);
                let merged = c.and(t.is(l.permit, 1), c.eq(l.given, l.pending));
                let resolved = answered(answer::RESOLVED);
                c.and_many([
                    c.imp(
                        c.and(by(event::ARRIVE), answered(answer::DELIVERED)),
                        c.and(arrival, c.eq(m.pending, l.pending)),
                    ),
                    c.imp(by(event::BEGIN_WAIT), c.eq(resolved, t.is(l.permit, 1))),
                    c.imp(
                        by(event::POLL_WAIT),
                        c.eq(resolved, c.gt(l.given, t.int(0))),
                    ),
                    c.imp(
                        c.and(by(event::DROP_WAIT), c.gt(l.pending, t.int(0))),
                        c.and(
                            c.eq(m.pending, c.sub(l.pending, t.int(1))),
                            c.or(
                                c.eq(held(m), held(l)),
                                c.and(merged, c.eq(c.plus(held(m), t.int(1)), held(l))),
                            ),
                        ),
                    ),
                    c.lte(m.given, m.pending),
                    c.imp(t.is(m.permit, 1), c.eq(m.given, m.pending)),
                ])
            }
            other => panic!("no promise {other}"),
        }
    }

    fn describe(
        &self,
        ctx: &mut Context,
        x: &LedgerEvent,
        a: &Answers,
        n: &Frame,
    ) -> io::Result<String> {
        let mut terms: Vec<SExpr> = x.fields().to_vec();
        terms.extend([a.code, a.carries, a.took_x]);
        terms.extend(n.ledger.fields());
        let v = values(ctx, terms)?;
        let name = |names: &[&'static str], code: i128| {
            usize::try_from(code)
                .ok()
                .and_then(|i| names.get(i).copied())
                .unwrap_or("?")
        };
        let id = if v[1] == 1 {
            "x".to_owned()
        } else {
            let which = [
                "a fresh id",
                "an outstanding other",
                "an arrived other",
                "a delivered other",
            ];
            name(&which, v[2]).to_owned()
        };
        let kind = i64::try_from(v[0]).unwrap_or(-1);
        let ev = match kind {
            event::SCOPE_TASK if v[3] == 1 => format!("ScopeTask(task {})", v[4]),
            event::SCOPE_TASK => "ScopeTask(invalid)".to_owned(),
            event::END_SCOPE => format!("EndScope(#{})", v[5]),
            event::REGISTER => format!(
                "Register({id}{}, task {})",
                if v[3] == 1 { "" } else { ", invalid" },
                v[4]
            ),
            event::ADOPT => "Adopt(x)".to_owned(),
            event::DISCARD => format!("Discard({id})"),
            event::ARRIVE => format!(
                "Arrive({id}{})",
                if v[6] == 1 {
                    "; its child, if any, being ended"
                } else {
                    ""
                }
            ),
            event::TAKE_OVERDUE => format!(
                "TakeOverdue(x {}overdue, {} others)",
                if v[7] == 1 { "" } else { "not " },
                v[8]
            ),
            k => name(&event::NAMES, i128::from(k)).to_owned(),
        };
        let next = &v[12..];
        let state = format!(
            "{}x {}{}, others {} outstanding + {} arrived, counts().arrived {}, waits {} pending / {} given, permit {}",
            if next[0] == 1 {
                format!("scope #{} (task {}); ", next[2], next[1])
            } else {
                "no scope; ".to_owned()
            },
            name(&held::NAMES, next[4]),
            if next[5] == 1 { " with a child" } else { "" },
            next[6],
            next[7],
            next[8],
            next[9],
            next[10],
            next[11] == 1,
        );
        let handed = match (v[10] == 1, v[11] == 1) {
            (true, true) => ", x's entry handed back with its child",
            (true, false) => ", x's child handed back",
            (false, true) => ", x's entry handed back (no child with it)",
            (false, false) => "",
        };
        Ok(format!(
            "{ev} -> {}{handed}; {state}",
            name(&answer::NAMES, v[9])
        ))
    }
}
