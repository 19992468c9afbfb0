//! The ledger's encoding held to its Rust table: every term, for the real
//! `step` (keeping its indexes or not) and each of the six broken
//! variants, evaluated by the solver on every state and event of a grid
//! and compared with what the Rust function answers.
//!
//! A state of the grid is built by the real ledger's own events — scopes
//! issued, `x` registered, arrived, taken or not and given a child, up to
//! two other entries outstanding (each with a child) and two arrived, one
//! other delivered and taken, and the waits (up to two pending, the
//! wake-ups given, the permit) — and read back through its public
//! queries; an event names `x`, a fresh id, each kind of other, an
//! invalid id, the tasks and tokens around the scope's, a child being
//! ended or not, and overdue takes of each size.

use std::io;
use std::time::Duration;

use baton::ledger::core::step;
use easy_smt::{Context, Response, SExpr};

use super::super::StepFn;
use super::super::child::{World, within};
use super::super::state::{Event, Outcome};
use super::super::variants::VARIANTS;
use super::codes::{Table, event};
use super::encode::Terms;
use super::grid::{Grid, LATE, answers, build, events, fields, grid};
use super::terms::{FIELDS, LedgerEvent, LedgerState};
use crate::smt::integer;

/// What an agreement run compared.
#[derive(Clone, Debug, Default)]
pub struct Agreement {
    /// Cases compared.
    pub cases: usize,
    /// Every disagreement: the table, the case, and both answers.
    pub disagreements: Vec<String>,
}

/// A table compared: its name, its Rust step, whether the ledger keeps
/// its indexes from the first entry, and its encoding.
pub type Compared = (&'static str, StepFn, bool, Table);

/// The tables compared: the real one (keeping its indexes and not) and
/// each variant's.
pub fn every_table() -> Vec<Compared> {
    let real: StepFn = step;
    let mut all: Vec<Compared> = vec![
        ("real", real, false, Table::Real),
        ("real, indexed", real, true, Table::Real),
    ];
    for v in VARIANTS {
        all.push((
            v.name,
            v.step,
            false,
            Table::of(v.name).expect("an encoding"),
        ));
    }
    all
}

/// A table's step as functions of the state and the event, one set per
/// event kind (each the table's column for that kind, so that a case
/// expands only its own): the answers, then the next state's fields.
struct Defined {
    by_kind: Vec<Vec<SExpr>>,
}

/// Defines, for each table, its step, column by column.
fn define_steps(ctx: &mut Context, tables: &[Compared]) -> io::Result<Vec<Defined>> {
    let int = ctx.int_sort();
    let names: Vec<String> = LedgerState::NAMES
        .iter()
        .map(|n| format!("s_{n}"))
        .chain(LedgerEvent::NAMES.iter().map(|n| format!("e_{n}")))
        .collect();
    let args: Vec<(String, SExpr)> = names.iter().map(|n| (n.clone(), int)).collect();
    let p: Vec<SExpr> = names.iter().map(|n| ctx.atom(n)).collect();
    let state = LedgerState::from_fields(p[..FIELDS].try_into().expect("the state's"));
    let event = LedgerEvent::from_fields(p[FIELDS..].try_into().expect("the event's"));
    let mut all = Vec::new();
    for (i, &(_, _, _, table)) in tables.iter().enumerate() {
        let mut by_kind = Vec::new();
        for kind in event::SCOPE_TASK..=event::TAKE_ALL {
            let stepped = Terms::new(ctx).step_of(table, kind, &state, &event);
            let a = stepped.answers;
            let bodies = [a.code, a.carries, a.took_x]
                .into_iter()
                .chain(stepped.next.fields());
            let mut functions = Vec::new();
            for (f, body) in bodies.enumerate() {
                let name = format!("ledger_step_{i}_{kind}_{f}");
                functions.push(ctx.define_fun(name, args.clone(), int, body)?);
            }
            by_kind.push(functions);
        }
        all.push(Defined { by_kind });
    }
    Ok(all)
}

/// The functions of `defined` for an event whose fields are `fields`.
fn column<'a>(defined: &'a Defined, fields: &[i128]) -> &'a [SExpr] {
    let kind = usize::try_from(fields[0]).expect("an event kind");
    &defined.by_kind[kind]
}

/// One case to compare: the table, the state and the event (said only
/// if it disagrees), the Rust answers, the encoding's arguments, the term
/// that says whether the encoding answers the same, and the event's kind.
struct Compare {
    table: usize,
    grid: Grid,
    event: Event,
    rust: Vec<i128>,
    args: Vec<SExpr>,
    equal: SExpr,
    kind: i128,
}

/// Compares each of `tables` with its Rust step on every state and event
/// of the grid.
///
/// # Errors
///
/// The solver's.
pub fn agree_on(ctx: &mut Context, tables: &[Compared]) -> io::Result<Agreement> {
    ctx.push()?;
    let functions = define_steps(ctx, tables)?;
    let mut cases: Vec<Compare> = Vec::new();
    {
        let c = &*ctx;
        for (t, (&(_, rust_step, indexed, _), defined)) in tables.iter().zip(&functions).enumerate()
        {
            for g in grid() {
                let built = [false, true].map(|early| {
                    let x_started = if early { Duration::ZERO } else { LATE };
                    (x_started, build(&g, indexed, x_started))
                });
                for case in events(&g) {
                    let (_, from) = built
                        .iter()
                        .find(|(started, _)| *started == case.x_started)
                        .expect("both starts built");
                    let mut l = from.clone();
                    let before = fields(&l, g.issued);
                    let mut world = World {
                        being_ended: if case.fields[6] == 1 { u8::MAX } else { 0 },
                        ended: 0,
                    };
                    let out = within(&mut world, || rust_step(&mut l, case.event.clone()));
                    let issued = match &out {
                        Outcome::Scoped(token, _) => token.get() + 1,
                        _ => g.issued,
                    };
                    let mut rust = answers(&out).to_vec();
                    rust.extend(fields(&l, issued));
                    let args: Vec<SExpr> = before
                        .iter()
                        .chain(&case.fields)
                        .map(|v| c.numeral(*v))
                        .collect();
                    let equal = c.and_many(column(defined, &case.fields).iter().zip(&rust).map(
                        |(f, v)| {
                            let applied =
                                c.list(std::iter::once(*f).chain(args.iter().copied()).collect());
                            c.eq(applied, c.numeral(*v))
                        },
                    ));
                    cases.push(Compare {
                        table: t,
                        grid: g,
                        event: case.event,
                        rust,
                        args,
                        equal,
                        kind: case.fields[0],
                    });
                }
            }
        }
    }
    if ctx.check()? != Response::Sat {
        return Err(io::Error::other("the definitions are not satisfiable"));
    }
    let mut agreement = Agreement::default();
    for chunk in cases.chunks(512) {
        let equal = ctx.get_value(chunk.iter().map(|case| case.equal).collect())?;
        for (case, (_, same)) in chunk.iter().zip(equal) {
            let Compare {
                table: t,
                grid: g,
                event,
                rust,
                args,
                kind,
                ..
            } = case;
            agreement.cases += 1;
            if ctx.get_atom(same) == Some("true") {
                continue;
            }
            let terms = column(&functions[*t], &[*kind])
                .iter()
                .map(|f| ctx.list(std::iter::once(*f).chain(args.iter().copied()).collect()))
                .collect();
            let encoded: Vec<i128> = ctx
                .get_value(terms)?
                .into_iter()
                .map(|(_, v)| integer(ctx, v))
                .collect();
            agreement.disagreements.push(format!(
                "{}: {g:?} + {event:?}: rust {rust:?}, encoding {encoded:?}",
                tables[*t].0
            ));
        }
    }
    ctx.pop()?;
    Ok(agreement)
}

/// [`agree_on`] every table.
///
/// # Errors
///
/// The solver's.
pub fn agree(ctx: &mut Context) -> io::Result<Agreement> {
    agree_on(ctx, &every_table())
}
