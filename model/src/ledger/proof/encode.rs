//! The ledger's table (`baton::ledger::core::step`) as terms of linear
//! integer arithmetic, seen from one delegation id `x` among any number:
//! `x`'s own state (gone, outstanding, arrived, delivered and taken) and
//! its child, the *number* of other entries outstanding and arrived (a
//! counter abstraction: the ledger treats every id alike, so what it does
//! to `x` it does to each), the core's own count of arrived entries, the
//! scope, and the waits (pending, given, the permit) as unbounded
//! counters. An event names `x` or another id (fresh, outstanding,
//! arrived, or delivered and taken); a take of overdue entries takes `x`
//! or not and any number of the others. The six broken variants of the
//! ledger's self-test are encoded too; [`super::agree`] holds every term
//! to the Rust function it stands for.

use easy_smt::{Context, SExpr};

use super::codes::{Table, answer, event, held, other};
use super::terms::{Answers, LedgerEvent, LedgerState, Stepped};

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

    /// The numeral `v`.
    pub fn int(&self, v: i64) -> SExpr {
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

    /// 1 if `b`, else 0.
    pub fn flag(&self, b: SExpr) -> SExpr {
        self.c.ite(b, self.int(1), self.int(0))
    }

    /// `a` when `cond`, else `b`, field by field.
    fn choose(&self, cond: SExpr, a: Stepped, b: Stepped) -> Stepped {
        let c = self.c;
        let (fa, fb) = (a.next.fields(), b.next.fields());
        let next = std::array::from_fn(|i| c.ite(cond, fa[i], fb[i]));
        Stepped {
            answers: Answers {
                code: c.ite(cond, a.answers.code, b.answers.code),
                carries: c.ite(cond, a.answers.carries, b.answers.carries),
                took_x: c.ite(cond, a.answers.took_x, b.answers.took_x),
            },
            next: LedgerState::from_fields(next),
        }
    }

    /// `s` unchanged, answered `code`.
    fn stay(&self, s: &LedgerState, code: i64) -> Stepped {
        self.moved(code, *s)
    }

    /// `next`, answered `code`, handing nothing back.
    fn moved(&self, code: i64, next: LedgerState) -> Stepped {
        let zero = self.int(0);
        Stepped {
            answers: Answers {
                code: self.int(code),
                carries: zero,
                took_x: zero,
            },
            next,
        }
    }

    /// `Ledger::clear`: every entry taken (`x`'s with its child), the
    /// delivered memory, the permit and the given wake-ups forgotten;
    /// the pending waits stay.
    fn cleared(&self, s: &LedgerState, code: i64, carries: SExpr) -> Stepped {
        let zero = self.int(0);
        let live = self.live(s);
        Stepped {
            answers: Answers {
                code: self.int(code),
                carries: self.c.ite(live, carries, zero),
                took_x: self.flag(live),
            },
            next: LedgerState {
                x: self.int(held::GONE),
                child: zero,
                out: zero,
                arr: zero,
                counter: zero,
                given: zero,
                permit: zero,
                ..*s
            },
        }
    }

    /// Whether `x` is live.
    pub fn live(&self, s: &LedgerState) -> SExpr {
        self.one_of(s.x, [held::OUTSTANDING, held::ARRIVED])
    }

    /// `wake_one`: a wake-up to a pending wait without one, else the
    /// permit.
    fn woken(&self, s: &LedgerState) -> LedgerState {
        let c = self.c;
        let short = c.lt(s.given, s.pending);
        LedgerState {
            given: c.ite(short, c.plus(s.given, self.int(1)), s.given),
            permit: c.ite(short, s.permit, self.int(1)),
            ..*s
        }
    }

    /// `x` taken: arrived ones remembered as delivered, the core's count
    /// lowered for them.
    fn x_taken(&self, s: &LedgerState) -> LedgerState {
        let c = self.c;
        let arrived = self.is(s.x, held::ARRIVED);
        LedgerState {
            x: c.ite(arrived, self.int(held::DELIVERED), self.int(held::GONE)),
            child: self.int(0),
            counter: c.ite(arrived, c.sub(s.counter, self.int(1)), s.counter),
            ..*s
        }
    }

    /// `table`'s step from `s` by `e`.
    pub fn step(&self, table: Table, s: &LedgerState, e: &LedgerEvent) -> Stepped {
        let mut stepped = self.step_of(table, event::TAKE_ALL, s, e);
        for kind in (event::SCOPE_TASK..event::TAKE_ALL).rev() {
            let case = self.step_of(table, kind, s, e);
            stepped = self.choose(self.is(e.kind, kind), case, stepped);
        }
        stepped
    }

    /// `table`'s step from `s` by `e`, an event of `kind` (its `kind`
    /// field is not read).
    pub fn step_of(&self, table: Table, kind: i64, s: &LedgerState, e: &LedgerEvent) -> Stepped {
        match kind {
            event::SCOPE_TASK => self.scope_task(s, e),
            event::END_SCOPE => self.end_scope(table, s, e),
            event::REGISTER => self.register(table, s, e),
            event::ADOPT => self.adopt(s),
            event::DISCARD => self.discard(s, e),
            event::ARRIVE => self.arrive(table, s, e),
            event::BEGIN_WAIT => self.begin_wait(s),
            event::POLL_WAIT => self.poll_wait(s),
            event::DROP_WAIT => self.drop_wait(s),
            event::TAKE_ARRIVED => self.take_arrived(s),
            event::TAKE_OVERDUE => self.take_overdue(s, e),
            _ => self.take_all(s),
        }
    }

    fn scope_task(&self, s: &LedgerState, e: &LedgerEvent) -> Stepped {
        let c = self.c;
        let mut scoped = self.cleared(s, answer::SCOPED, s.child);
        scoped.next.scoped = self.int(1);
        scoped.next.task = e.task;
        scoped.next.token = s.issued;
        scoped.next.issued = c.plus(s.issued, self.int(1));
        self.choose(
            e_bool(c, e.valid),
            scoped,
            self.stay(s, answer::SCOPE_REFUSED),
        )
    }

    fn end_scope(&self, table: Table, s: &LedgerState, e: &LedgerEvent) -> Stepped {
        let c = self.c;
        let carries = match table {
            Table::ScopeDropForgetsChildren => self.int(0),
            _ => s.child,
        };
        let mut ended = self.cleared(s, answer::ENDED, carries);
        ended.next.scoped = self.int(0);
        ended.next.task = self.int(0);
        ended.next.token = self.int(0);
        let current = c.and(e_bool(c, s.scoped), c.eq(e.token, s.token));
        let stale = match table {
            Table::OlderScopeEndEmptiesTheLedger => {
                let mut emptied = self.take_all(s);
                emptied.answers.code = self.int(answer::ENDED);
                emptied
            }
            _ => self.stay(s, answer::STALE),
        };
        self.choose(current, ended, stale)
    }

    fn register(&self, table: Table, s: &LedgerState, e: &LedgerEvent) -> Stepped {
        let c = self.c;
        let other_task = match table {
            Table::RegisterIgnoresTheTask => c.false_(),
            _ => c.not(c.eq(e.task, s.task)),
        };
        let stay = |code| self.stay(s, code);
        let x_new = self.moved(
            answer::REGISTERED,
            LedgerState {
                x: self.int(held::OUTSTANDING),
                child: self.int(0),
                ..*s
            },
        );
        let on_x = self.choose(self.is(s.x, held::GONE), x_new, stay(answer::DUPLICATE));
        let other_new = self.moved(
            answer::REGISTERED,
            LedgerState {
                out: c.plus(s.out, self.int(1)),
                ..*s
            },
        );
        let on_other = self.choose(
            self.is(e.other, other::FRESH),
            other_new,
            stay(answer::DUPLICATE),
        );
        self.choose(
            c.not(e_bool(c, e.valid)),
            stay(answer::INVALID_ID),
            self.choose(
                c.not(e_bool(c, s.scoped)),
                stay(answer::NO_TASK),
                self.choose(
                    other_task,
                    stay(answer::OTHER_TASK),
                    self.choose(e_bool(c, e.on_x), on_x, on_other),
                ),
            ),
        )
    }

    /// An adoption for `x` (one for another id changes nothing this
    /// state sees).
    fn adopt(&self, s: &LedgerState) -> Stepped {
        let c = self.c;
        let one = self.int(1);
        let kept = self.moved(answer::ADOPTED, LedgerState { child: one, ..*s });
        let mut replaced = kept;
        replaced.answers.code = self.int(answer::REPLACED);
        replaced.answers.carries = one;
        let mut refused = self.stay(s, answer::NOT_LIVE);
        refused.answers.carries = one;
        self.choose(
            self.live(s),
            self.choose(e_bool(c, s.child), replaced, kept),
            refused,
        )
    }

    fn discard(&self, s: &LedgerState, e: &LedgerEvent) -> Stepped {
        let c = self.c;
        let one = self.int(1);
        let on_x = Stepped {
            answers: Answers {
                code: self.int(answer::TOOK),
                carries: s.child,
                took_x: one,
            },
            next: self.x_taken(s),
        };
        let on_x = self.choose(self.live(s), on_x, self.stay(s, answer::TOOK));
        let out = self.moved(
            answer::TOOK,
            LedgerState {
                out: c.sub(s.out, one),
                ..*s
            },
        );
        let arr = self.moved(
            answer::TOOK,
            LedgerState {
                arr: c.sub(s.arr, one),
                counter: c.sub(s.counter, one),
                ..*s
            },
        );
        let on_other = self.choose(
            self.is(e.other, other::OUTSTANDING),
            out,
            self.choose(
                self.is(e.other, other::ARRIVED),
                arr,
                self.stay(s, answer::TOOK),
            ),
        );
        self.choose(e_bool(c, e.on_x), on_x, on_other)
    }

    fn arrive(&self, table: Table, s: &LedgerState, e: &LedgerEvent) -> Stepped {
        let c = self.c;
        let one = self.int(1);
        let stay = |code| self.stay(s, code);
        let woken = match table {
            Table::ArrivalWithoutWakeUp => *s,
            Table::CoalescingWakesOneOfTwo => {
                let lost = c.and(c.gt(s.given, self.int(0)), c.lt(s.given, s.pending));
                let real = self.woken(s);
                LedgerState::from_fields(std::array::from_fn(|i| {
                    c.ite(lost, s.fields()[i], real.fields()[i])
                }))
            }
            _ => self.woken(s),
        };
        let counted = c.plus(s.counter, one);
        let x_delivered = self.moved(
            answer::DELIVERED,
            LedgerState {
                x: self.int(held::ARRIVED),
                counter: counted,
                ..woken
            },
        );
        let again = match table {
            Table::DoubleDelivery => answer::DELIVERED,
            _ => answer::ALREADY,
        };
        let on_x = self.choose(
            self.is(s.x, held::OUTSTANDING),
            self.choose(
                c.and(e_bool(c, s.child), e_bool(c, e.ending)),
                stay(answer::BEING_ENDED),
                x_delivered,
            ),
            self.choose(
                self.is(s.x, held::ARRIVED),
                stay(again),
                self.choose(
                    self.is(s.x, held::DELIVERED),
                    stay(answer::ALREADY),
                    stay(answer::NOT_OUTSTANDING),
                ),
            ),
        );
        let other_delivered = self.moved(
            answer::DELIVERED,
            LedgerState {
                out: c.sub(s.out, one),
                arr: c.plus(s.arr, one),
                counter: counted,
                ..woken
            },
        );
        // Every other outstanding entry holds a child, so one being ended
        // refuses the arrival.
        let on_other = self.choose(
            self.is(e.other, other::OUTSTANDING),
            self.choose(
                e_bool(c, e.ending),
                stay(answer::BEING_ENDED),
                other_delivered,
            ),
            self.choose(
                self.is(e.other, other::ARRIVED),
                stay(again),
                self.choose(
                    self.is(e.other, other::DELIVERED),
                    stay(answer::ALREADY),
                    stay(answer::NOT_OUTSTANDING),
                ),
            ),
        );
        self.choose(e_bool(c, e.on_x), on_x, on_other)
    }

    fn begin_wait(&self, s: &LedgerState) -> Stepped {
        let c = self.c;
        let taken = self.moved(
            answer::RESOLVED,
            LedgerState {
                permit: self.int(0),
                ..*s
            },
        );
        let pending = self.moved(
            answer::PENDING,
            LedgerState {
                pending: c.plus(s.pending, self.int(1)),
                ..*s
            },
        );
        self.choose(e_bool(c, s.permit), taken, pending)
    }

    fn poll_wait(&self, s: &LedgerState) -> Stepped {
        let c = self.c;
        let one = self.int(1);
        let resolved = self.moved(
            answer::RESOLVED,
            LedgerState {
                given: c.sub(s.given, one),
                pending: c.sub(s.pending, one),
                ..*s
            },
        );
        self.choose(
            self.is(s.pending, 0),
            self.stay(s, answer::NOT_WAITING),
            self.choose(
                c.gt(s.given, self.int(0)),
                resolved,
                self.stay(s, answer::PENDING),
            ),
        )
    }

    fn drop_wait(&self, s: &LedgerState) -> Stepped {
        let c = self.c;
        let one = self.int(1);
        let fewer = c.sub(s.pending, one);
        let left = LedgerState {
            pending: fewer,
            ..*s
        };
        let passed = self.moved(
            answer::PASSED_ON,
            LedgerState {
                given: c.sub(s.given, one),
                permit: one,
                ..left
            },
        );
        self.choose(
            self.is(s.pending, 0),
            self.stay(s, answer::NOT_WAITING),
            self.choose(
                c.gt(s.given, fewer),
                passed,
                self.choose(
                    c.gt(s.given, self.int(0)),
                    self.moved(answer::DROPPED_WAKE, left),
                    self.moved(answer::DROPPED, left),
                ),
            ),
        )
    }

    fn take_arrived(&self, s: &LedgerState) -> Stepped {
        let c = self.c;
        let arrived = self.is(s.x, held::ARRIVED);
        let x = self.x_taken(s);
        let taken = Stepped {
            answers: Answers {
                code: self.int(answer::TOOK),
                carries: c.ite(arrived, s.child, self.int(0)),
                took_x: self.flag(arrived),
            },
            next: LedgerState {
                x: c.ite(arrived, x.x, s.x),
                child: c.ite(arrived, x.child, s.child),
                counter: c.sub(c.ite(arrived, x.counter, s.counter), s.arr),
                arr: self.int(0),
                ..*s
            },
        };
        self.choose(self.is(s.counter, 0), self.stay(s, answer::TOOK), taken)
    }

    fn take_overdue(&self, s: &LedgerState, e: &LedgerEvent) -> Stepped {
        let c = self.c;
        let x_due = c.and(self.is(s.x, held::OUTSTANDING), e_bool(c, e.x_due));
        let x = self.x_taken(s);
        Stepped {
            answers: Answers {
                code: self.int(answer::TOOK),
                carries: c.ite(x_due, s.child, self.int(0)),
                took_x: self.flag(x_due),
            },
            next: LedgerState {
                x: c.ite(x_due, x.x, s.x),
                child: c.ite(x_due, x.child, s.child),
                out: c.sub(s.out, e.due),
                ..*s
            },
        }
    }

    fn take_all(&self, s: &LedgerState) -> Stepped {
        let c = self.c;
        let live = self.live(s);
        let x = self.x_taken(s);
        let zero = self.int(0);
        Stepped {
            answers: Answers {
                code: self.int(answer::TOOK),
                carries: c.ite(live, s.child, zero),
                took_x: self.flag(live),
            },
            next: LedgerState {
                x: c.ite(live, x.x, s.x),
                child: zero,
                out: zero,
                arr: zero,
                counter: zero,
                ..*s
            },
        }
    }
}

/// A 0/1 field as a Boolean.
fn e_bool(c: &Context, flag: SExpr) -> SExpr {
    c.eq(flag, c.numeral(1))
}
