//! The ledger proven without bounds (issue 61): its table
//! (`baton::ledger::core::step`) encoded for the SMT solver ([`encode`])
//! as seen from one delegation id among any number, a transition system
//! of one ledger with any number of delegations, scopes, waits and events
//! ([`system`]), proven by induction through [`crate::smt`].
//!
//! **What is unbounded:** the delegations (one id `x`, any of them, and
//! the count of the others outstanding and arrived: the core treats every
//! id alike, so what is proven of `x` holds of each), the scopes and
//! their tokens, the tasks (identities), the waits pending and the
//! wake-ups given, and the number of events. **What is finite:** `x`'s
//! four states and its child (held or not). **Failure model**, the
//! bounded model's ([`super`]) without its bounds: any party sends any
//! event at any moment — a registration for any task with any id (valid
//! or not, fresh, live or delivered), an arrival for any id while its
//! child is being ended or not, an adoption, a discard, overdue takes of
//! any entries, scopes begun and ended with any token (stale ones too),
//! waits begun, polled and dropped in any order. Two assumptions (A2):
//! fewer than 2^64 − 1 scopes on one ledger and fewer pending waits than
//! `usize::MAX`, where the core's counters saturate.
//!
//! **Proven:** D1–D6 as one step states them, with the invariant that
//! carries them (the count is the entries', a stored permit only while
//! every pending wait holds a wake-up, `x` told `Delivered` once exactly
//! when it arrived, no child of `x`'s let go without being handed back).
//! **Not here:** D6's liveness (a woken wait resolves: bounded only) and
//! what the adapter adds (locks, `Drop`s: loom).
//!
//! **Tied to the Rust table:** [`agree`] evaluates every term, the real
//! table's and each broken variant's, on every state and event of a grid
//! built by the real ledger, and compares it with the Rust `step`.

pub mod agree;
pub mod codes;
pub mod encode;
mod grid;
pub mod system;
pub mod terms;

use std::io;

use easy_smt::Context;

use crate::smt::{self, History, Obligation, Section};
use codes::Table;
use system::{PROMISES, System};

/// Proves `table`: the invariant holds initially and is kept by every
/// step, and D1–D6 are kept by every step from a state where it holds.
///
/// # Errors
///
/// The solver's.
pub fn prove(ctx: &mut Context, table: Table) -> io::Result<Vec<Obligation>> {
    smt::prove(ctx, &System { table })
}

/// The shortest history (up to `depth` events) of `table` that breaks
/// one of D1–D6.
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

/// The report's section for the ledger, and whether everything passed.
/// Without z3 it says so in one line and passes, unless
/// `BATON_REQUIRE_SOLVER=1`.
pub fn section() -> (String, bool) {
    let title =
        "The ledger without bounds (z3; any number of delegations, scopes, waits and events)";
    let (mut section, mut ctx) = match Section::open(title) {
        Ok(opened) => opened,
        Err(skipped) => return skipped,
    };
    match agree::agree(&mut ctx) {
        Ok(a) => section.agreement(
            "the Rust table (real, indexed, and 6 variants)",
            a.cases,
            a.disagreements.len(),
        ),
        Err(error) => section.failed("the agreement", &error),
    }
    section.proven("", prove(&mut ctx, Table::Real));
    for (name, _, _, table) in agree::every_table().into_iter().skip(2) {
        section.refused(name, 8, shortest_break(&mut ctx, table, 8));
    }
    section.close("")
}
