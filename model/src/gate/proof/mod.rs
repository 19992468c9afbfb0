//! The gate proven without bounds (issue 61): its table
//! (`baton::gate::core::step`) encoded for the SMT solver ([`encode`]), a
//! transition system of one gate with any number of requesters, tickets,
//! intents and pauses ([`system`]), proven by induction through
//! [`crate::smt`].
//!
//! **What is unbounded:** tickets (any of the 2^64, stale ones held by any
//! number of requesters), intents and pauses (identities, any number of
//! them, valid or not), and the number of events. **What is finite:** the
//! six state kinds. **Failure model**, the bounded model's
//! ([`super`]) without its bounds: any party sends any event at any
//! moment — a requester dropped, canceled or stale, a worker whose
//! preflight fails or prepares another intent's pause, a seal of any
//! pause, a close at any point.
//!
//! **Proven:** S1–S9 as one step states them; for S7, one waiter holding
//! any ticket and the waiters' queries (`baton::gate::core::wait`'s
//! `ready`, `boundary`, `seal`) as terms. **Not here:** the liveness
//! rules L1–L3 — bounded only.
//!
//! **Tied to the Rust table:** [`agree`] evaluates every term, the real
//! table's and each broken variant's, on every state and event of a grid
//! and compares it with the Rust `step`, and the queries' terms with the
//! Rust queries on every state and ticket of the grid.

pub mod agree;
pub mod encode;
pub mod system;

use std::io;

use easy_smt::Context;

use crate::smt::{self, History, Obligation, Section};
use encode::Table;
use system::{PROMISES, System};

/// Proves `table`: the invariant holds initially and is kept by every
/// step, and S1–S9 are kept by every step from a state where
/// it holds.
///
/// # Errors
///
/// The solver's.
pub fn prove(ctx: &mut Context, table: Table) -> io::Result<Vec<Obligation>> {
    smt::prove(ctx, &System { table })
}

/// The shortest history (up to `depth` events) of `table` that breaks
/// one of the promises.
///
/// # Errors
///
/// The solver's.
pub fn shortest_break(
    ctx: &mut Context,
    table: Table,
    depth: usize,
) -> io::Result<Option<History>> {
    smt::shortest_break(ctx, &System { table }, &PROMISES, depth)
}

/// The report's section for the gate, and whether everything passed.
/// Without z3 it says so in one line and passes, unless
/// `BATON_REQUIRE_SOLVER=1`.
pub fn section() -> (String, bool) {
    let title = "The gate without bounds (z3; any number of requesters, tickets, intents, pauses and events)";
    let (mut section, mut ctx) = match Section::open(title) {
        Ok(opened) => opened,
        Err(skipped) => return skipped,
    };
    match agree::agree(&mut ctx) {
        Ok(a) => section.agreement(
            "the Rust table (real and 5 variants) and its waiter queries",
            a.cases,
            a.disagreements.len(),
        ),
        Err(error) => section.failed("the agreement", &error),
    }
    section.proven("", prove(&mut ctx, Table::Real));
    for (name, _, table) in agree::every_table().into_iter().skip(1) {
        section.refused(name, 6, shortest_break(&mut ctx, table, 6));
    }
    section.close("")
}
