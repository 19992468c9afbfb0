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
//! **Proven:** S1–S6, S8 and S9 as one step states them. **Not here:** S7
//! (what a waiter is told: `baton::gate::core::wait`'s queries) and the
//! liveness rules L1–L3 — bounded only.
//!
//! **Tied to the Rust table:** [`agree`] evaluates every term, the real
//! table's and each broken variant's, on every state and event of a grid
//! and compares it with the Rust `step`.

pub mod agree;
pub mod encode;
pub mod system;

use std::fmt::Write as _;
use std::io;

use easy_smt::Context;

use crate::smt::{self, History, Obligation, solver_for_report};
use encode::Table;
use system::{PROMISES, System};

/// Proves `table`: the invariant holds initially and is kept by every
/// step, and S1–S6, S8 and S9 are kept by every step from a state where
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
    let mut out = String::from(
        "The gate without bounds (z3; any number of requesters, tickets, intents, pauses and events)\n",
    );
    let mut ctx = match solver_for_report(&mut out) {
        Ok(ctx) => ctx,
        Err(passes) => return (out, passes),
    };
    let started = std::time::Instant::now();
    let mut ok = true;
    let mut run = || -> io::Result<()> {
        let a = agree::agree(&mut ctx)?;
        ok &= a.disagreements.is_empty();
        let _ = writeln!(
            out,
            "  the encoding against the Rust table (real and 5 variants): {} cases, {} disagreements",
            a.cases,
            a.disagreements.len()
        );
        let obligations = prove(&mut ctx, Table::Real)?;
        let all = obligations.iter().all(|o| o.holds);
        ok &= all;
        let time: f64 = obligations.iter().map(|o| o.time.as_secs_f64()).sum();
        let names: Vec<&str> = obligations.iter().map(|o| o.what).collect();
        let _ = writeln!(
            out,
            "  {}: {} in {time:.3} s",
            if all { "proven" } else { "NOT PROVEN" },
            names.join(", ")
        );
        for (name, _, table) in agree::every_table().into_iter().skip(1) {
            match shortest_break(&mut ctx, table, 6)? {
                Some(h) => {
                    let _ = writeln!(
                        out,
                        "  refused {name:<44} breaks {} in a history of {} step(s)",
                        h.breaks.join(", "),
                        h.steps.len()
                    );
                }
                None => {
                    ok = false;
                    let _ = writeln!(
                        out,
                        "  NOT refused {name}: no promise broken within 6 steps"
                    );
                }
            }
        }
        Ok(())
    };
    if let Err(error) = run() {
        ok = false;
        let _ = writeln!(out, "  the solver failed: {error}");
    }
    let _ = writeln!(
        out,
        "  solver time {:.2} s",
        started.elapsed().as_secs_f64()
    );
    (out, ok)
}
