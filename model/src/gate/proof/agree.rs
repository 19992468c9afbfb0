//! The gate's encoding held to its Rust table: every term, for the real
//! `step` and each of the five broken variants, evaluated by the solver on
//! every state and event of a grid (each kind; tickets 0, 1 and the last
//! two; the table's intents, one malformed and one of another Run, and
//! their pauses) and compared with what the Rust function answers.

use std::io;

use baton::gate::GateError;
use baton::gate::core::{
    Event, Outcome, Query, Refusal, State, Ticket, Wait, boundary, ready, seal, step,
};
use easy_smt::{Context, Response, SExpr};

use super::super::codec::{Facts, StepFn};
use super::super::variants::VARIANTS;
use super::encode::{GateEvent, GateState, Table, Terms, event, kind, outcome, query, wait};
use crate::smt::integer;

/// Requesters in the table: intents 0 and 1, their mismatched twins 2 and
/// 3, a malformed one (4) and one of another Run (5).
const K: u8 = 2;

/// What an agreement run compared.
#[derive(Clone, Debug, Default)]
pub struct Agreement {
    /// Cases compared.
    pub cases: usize,
    /// Every disagreement: the table, the case, and both answers.
    pub disagreements: Vec<String>,
}

/// The tables compared: the real one and each variant's.
pub fn every_table() -> Vec<(&'static str, StepFn, Table)> {
    let mut all: Vec<(&'static str, StepFn, Table)> = vec![("real", step::<u8>, Table::Real)];
    for v in VARIANTS {
        all.push((v.name, v.step, Table::of(v.name).expect("an encoding")));
    }
    all
}

fn tickets() -> [u64; 4] {
    [0, 1, u64::MAX - 1, u64::MAX]
}

/// Every state of the grid.
fn states(facts: &Facts) -> Vec<State<u8>> {
    let t = Ticket::new;
    let mut all = vec![State::Closed];
    for n in tickets() {
        all.push(State::Running { next: t(n) });
        for i in 0..3 {
            all.push(State::Requested {
                ticket: t(n),
                intent: facts.intent(i),
            });
        }
        for p in 0..6 {
            let pause = facts.pause(p);
            all.push(State::Held {
                ticket: t(n),
                pause: pause.clone(),
            });
            all.push(State::Committed {
                ticket: t(n),
                pause: pause.clone(),
            });
            all.push(State::Sealed {
                ticket: t(n),
                pause,
            });
        }
    }
    all
}

/// Every event of the grid.
fn events(facts: &Facts) -> Vec<Event<u8>> {
    let t = Ticket::new;
    let mut all = vec![Event::Close];
    for i in [0, 1, 2, 2 * K, 2 * K + 1] {
        all.push(Event::Reserve(facts.intent(i)));
    }
    for p in 0..6 {
        all.push(Event::Seal(facts.pause(p)));
    }
    for n in tickets() {
        all.push(Event::Cancel(t(n)));
        for canceled in [false, true] {
            all.push(Event::Commit {
                ticket: t(n),
                canceled,
            });
            all.push(Event::Preflight {
                ticket: t(n),
                pause: None,
                canceled,
            });
            for p in 0..6 {
                let pause = (*facts.pause(p)).clone();
                all.push(Event::Preflight {
                    ticket: t(n),
                    pause: Some(pause),
                    canceled,
                });
            }
        }
    }
    all
}

/// A state's fields as numbers: kind, ticket, intent, pause's intent,
/// payload.
fn fields(facts: &Facts, s: &State<u8>) -> [i128; 5] {
    let pause = |p: &baton::HandoffPause<u8>| {
        (
            i128::from(facts.intent_index(&p.intent)),
            i128::from(p.execution),
        )
    };
    let t = |t: &Ticket| i128::from(t.get());
    match s {
        State::Running { next } => [i128::from(kind::RUNNING), t(next), 0, 0, 0],
        State::Requested { ticket, intent } => [
            i128::from(kind::REQUESTED),
            t(ticket),
            i128::from(facts.intent_index(intent)),
            0,
            0,
        ],
        State::Held { ticket, pause: p }
        | State::Committed { ticket, pause: p }
        | State::Sealed { ticket, pause: p } => {
            let k = match s {
                State::Held { .. } => kind::HELD,
                State::Committed { .. } => kind::COMMITTED,
                _ => kind::SEALED,
            };
            let (i, x) = pause(p);
            [i128::from(k), t(ticket), 0, i, x]
        }
        State::Closed => [i128::from(kind::CLOSED), 0, 0, 0, 0],
    }
}

fn outcome_code(o: &Outcome<u8>) -> i64 {
    match o {
        Outcome::Moved(_) => outcome::MOVED,
        Outcome::Ignored => outcome::IGNORED,
        Outcome::Refused(Refusal::Reserve(GateError::InvalidInput(_))) => outcome::INVALID,
        Outcome::Refused(Refusal::Reserve(GateError::TicketsExhausted)) => outcome::EXHAUSTED,
        Outcome::Refused(Refusal::Reserve(GateError::Busy)) => outcome::BUSY,
        Outcome::Refused(Refusal::Reserve(GateError::HandedOff)) => outcome::HANDED_OFF,
        Outcome::Refused(Refusal::Reserve(GateError::Closed)) => outcome::CLOSED,
        Outcome::Refused(Refusal::NotHeld) => outcome::NOT_HELD,
        Outcome::Refused(Refusal::Canceled) => outcome::CANCELED,
        Outcome::Refused(_) => -1,
    }
}

fn state_terms(c: &Context, f: [i128; 5]) -> GateState {
    let n = |v: i128| c.numeral(v);
    GateState {
        kind: n(f[0]),
        ticket: n(f[1]),
        intent: n(f[2]),
        pause_intent: n(f[3]),
        pause_payload: n(f[4]),
    }
}

fn event_terms(c: &Context, facts: &Facts, e: &Event<u8>) -> GateEvent {
    let n = |v: i128| c.numeral(v);
    let b = |v: bool| if v { c.true_() } else { c.false_() };
    let none = GateEvent {
        kind: n(0),
        ticket: n(0),
        intent: n(0),
        valid: c.true_(),
        has_pause: c.false_(),
        pause_intent: n(0),
        pause_payload: n(0),
        canceled: c.false_(),
    };
    let pause = |p: &baton::HandoffPause<u8>| {
        (
            n(i128::from(facts.intent_index(&p.intent))),
            n(i128::from(p.execution)),
        )
    };
    match e {
        Event::Reserve(intent) => {
            let i = facts.intent_index(intent);
            GateEvent {
                kind: n(i128::from(event::RESERVE)),
                intent: n(i128::from(i)),
                valid: b(i < 2 * K),
                ..none
            }
        }
        Event::Preflight {
            ticket,
            pause: p,
            canceled,
        } => {
            let (pi, px) = p.as_ref().map_or((n(0), n(0)), pause);
            GateEvent {
                kind: n(i128::from(event::PREFLIGHT)),
                ticket: n(i128::from(ticket.get())),
                has_pause: b(p.is_some()),
                pause_intent: pi,
                pause_payload: px,
                canceled: b(*canceled),
                ..none
            }
        }
        Event::Cancel(ticket) => GateEvent {
            kind: n(i128::from(event::CANCEL)),
            ticket: n(i128::from(ticket.get())),
            ..none
        },
        Event::Commit { ticket, canceled } => GateEvent {
            kind: n(i128::from(event::COMMIT)),
            ticket: n(i128::from(ticket.get())),
            canceled: b(*canceled),
            ..none
        },
        Event::Seal(p) => {
            let (pi, px) = pause(p);
            GateEvent {
                kind: n(i128::from(event::SEAL)),
                pause_intent: pi,
                pause_payload: px,
                ..none
            }
        }
        Event::Close => GateEvent {
            kind: n(i128::from(event::CLOSE)),
            ..none
        },
    }
}

/// The parameters of the step functions the agreement defines: the
/// state's five fields and the event's eight.
const PARAMETERS: [(&str, bool); 13] = [
    ("s_kind", false),
    ("s_ticket", false),
    ("s_intent", false),
    ("s_pause_intent", false),
    ("s_pause_payload", false),
    ("e_kind", false),
    ("e_ticket", false),
    ("e_intent", false),
    ("e_valid", true),
    ("e_has_pause", true),
    ("e_pause_intent", false),
    ("e_pause_payload", false),
    ("e_canceled", true),
];

/// Defines, for each table, its step as six functions of the state and
/// the event (the outcome and the next state's fields), so that each case
/// is six small applications; answers their names, by table.
fn define_steps(
    ctx: &mut Context,
    tables: &[(&'static str, StepFn, Table)],
) -> io::Result<Vec<[SExpr; 6]>> {
    let (int, boolean) = (ctx.int_sort(), ctx.bool_sort());
    let args: Vec<(String, SExpr)> = PARAMETERS
        .iter()
        .map(|(name, is_bool)| ((*name).to_owned(), if *is_bool { boolean } else { int }))
        .collect();
    let p: Vec<SExpr> = PARAMETERS.iter().map(|(name, _)| ctx.atom(*name)).collect();
    let state = GateState {
        kind: p[0],
        ticket: p[1],
        intent: p[2],
        pause_intent: p[3],
        pause_payload: p[4],
    };
    let event = GateEvent {
        kind: p[5],
        ticket: p[6],
        intent: p[7],
        valid: p[8],
        has_pause: p[9],
        pause_intent: p[10],
        pause_payload: p[11],
        canceled: p[12],
    };
    let mut names = Vec::new();
    for (i, &(_, _, table)) in tables.iter().enumerate() {
        let stepped = Terms::new(ctx).step(table, &state, &event);
        let next = stepped.next;
        let bodies = [
            stepped.outcome,
            next.kind,
            next.ticket,
            next.intent,
            next.pause_intent,
            next.pause_payload,
        ];
        let mut defined = Vec::new();
        for (f, body) in bodies.into_iter().enumerate() {
            defined.push(ctx.define_fun(format!("gate_step_{i}_{f}"), args.clone(), int, body)?);
        }
        names.push(defined.try_into().expect("six functions"));
    }
    Ok(names)
}

/// Compares each of `tables` with its Rust step on every state and event
/// of the grid.
///
/// # Errors
///
/// The solver's.
pub fn agree_on(
    ctx: &mut Context,
    tables: &[(&'static str, StepFn, Table)],
) -> io::Result<Agreement> {
    let facts = Facts::new(K);
    let (states, events) = (states(&facts), events(&facts));
    ctx.push()?;
    let functions = define_steps(ctx, tables)?;
    let mut cases: Vec<(String, Vec<i128>, Vec<SExpr>)> = Vec::new();
    {
        let c = &*ctx;
        for (&(name, rust_step, _), functions) in tables.iter().zip(&functions) {
            for s in &states {
                let before = fields(&facts, s);
                let s_terms = state_terms(c, before);
                for e in &events {
                    let out = rust_step(&facts.config, s, e.clone());
                    let after = match &out {
                        Outcome::Moved(next) => fields(&facts, next),
                        Outcome::Ignored | Outcome::Refused(_) => before,
                    };
                    let mut rust = vec![i128::from(outcome_code(&out))];
                    rust.extend(after);
                    let e_terms = event_terms(c, &facts, e);
                    let args = [
                        s_terms.kind,
                        s_terms.ticket,
                        s_terms.intent,
                        s_terms.pause_intent,
                        s_terms.pause_payload,
                        e_terms.kind,
                        e_terms.ticket,
                        e_terms.intent,
                        e_terms.valid,
                        e_terms.has_pause,
                        e_terms.pause_intent,
                        e_terms.pause_payload,
                        e_terms.canceled,
                    ];
                    let terms = functions
                        .iter()
                        .map(|f| c.list(std::iter::once(*f).chain(args).collect()))
                        .collect();
                    cases.push((format!("{name}: {s:?} + {e:?}"), rust, terms));
                }
            }
        }
    }
    if ctx.check()? != Response::Sat {
        return Err(io::Error::other("the definitions are not satisfiable"));
    }
    let mut agreement = Agreement::default();
    for chunk in cases.chunks(256) {
        let terms: Vec<SExpr> = chunk
            .iter()
            .flat_map(|(_, _, t)| t.iter().copied())
            .collect();
        let values = ctx.get_value(terms)?;
        let mut values = values.into_iter().map(|(_, v)| v);
        for (case, rust, terms) in chunk {
            let encoded: Vec<i128> = terms
                .iter()
                .map(|_| integer(ctx, values.next().expect("a value per term")))
                .collect();
            agreement.cases += 1;
            if encoded != *rust {
                agreement
                    .disagreements
                    .push(format!("{case}: rust {rust:?}, encoding {encoded:?}"));
            }
        }
    }
    ctx.pop()?;
    Ok(agreement)
}

/// The waiters' queries, in [`query`]'s order.
pub const QUERIES: [Query<u8>; 3] = [ready, boundary, seal];

/// Compares the encoding's waiter queries with the Rust ones
/// (`baton::gate::core::{ready, boundary, seal}`) on every state of the
/// grid and every ticket: the answer, and a resolved one's pause.
///
/// # Errors
///
/// The solver's.
pub fn agree_queries(ctx: &mut Context) -> io::Result<Agreement> {
    agree_queries_on(ctx, QUERIES)
}

/// [`agree_queries`] with `queries` in place of the Rust ones, in
/// [`query`]'s order.
///
/// # Errors
///
/// The solver's.
pub fn agree_queries_on(ctx: &mut Context, queries: [Query<u8>; 3]) -> io::Result<Agreement> {
    let facts = Facts::new(K);
    let mut agreement = Agreement::default();
    let mut cases = Vec::new();
    {
        let c = &*ctx;
        let t = Terms::new(c);
        for s in states(&facts) {
            let f = fields(&facts, &s);
            let state = state_terms(c, f);
            for ticket in tickets() {
                for (q, rust_query) in queries.iter().enumerate() {
                    let rust = match rust_query(&s, Ticket::new(ticket)) {
                        Wait::Pending => [i128::from(wait::PENDING), 0, 0],
                        Wait::Resolved(p) => [
                            i128::from(wait::RESOLVED),
                            i128::from(facts.intent_index(&p.intent)),
                            i128::from(p.execution),
                        ],
                        Wait::Gone => [i128::from(wait::GONE), 0, 0],
                    };
                    let code = t.query(q, &state, c.numeral(ticket));
                    let resolved = t.is(code, wait::RESOLVED);
                    let zero = c.numeral(0);
                    let terms = [
                        code,
                        c.ite(resolved, state.pause_intent, zero),
                        c.ite(resolved, state.pause_payload, zero),
                    ];
                    cases.push((
                        format!("{}: {s:?} for #{ticket}", query::NAMES[q]),
                        rust,
                        terms,
                    ));
                }
            }
        }
    }
    // A model to evaluate in (nothing is asserted).
    if ctx.check()? != Response::Sat {
        return Err(io::Error::other("no model to evaluate the queries in"));
    }
    for chunk in cases.chunks(256) {
        let terms: Vec<SExpr> = chunk.iter().flat_map(|(_, _, t)| *t).collect();
        let values = ctx.get_value(terms)?;
        let mut values = values.into_iter().map(|(_, v)| v);
        for (case, rust, _) in chunk {
            let encoded: Vec<i128> = (0..3)
                .map(|_| integer(ctx, values.next().expect("a value per term")))
                .collect();
            agreement.cases += 1;
            if encoded != rust {
                agreement
                    .disagreements
                    .push(format!("{case}: rust {rust:?}, encoding {encoded:?}"));
            }
        }
    }
    Ok(agreement)
}

/// [`agree_on`] every table, and [`agree_queries`].
///
/// # Errors
///
/// The solver's.
pub fn agree(ctx: &mut Context) -> io::Result<Agreement> {
    let mut agreement = agree_on(ctx, &every_table())?;
    let queries = agree_queries(ctx)?;
    agreement.cases += queries.cases;
    agreement.disagreements.extend(queries.disagreements);
    Ok(agreement)
}
