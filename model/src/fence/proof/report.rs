//! What the model's report prints of the unbounded proofs: a line per
//! obligation with the solver's time, the agreement with the Rust rules,
//! and each broken variant's shortest history.

use std::fmt::Write as _;
use std::time::Instant;

use super::super::{Replication, VARIANTS};
use super::encode::Encoding;
use super::promises::PROMISES;
use super::system::Mode;
use super::{agree::agree, prove, shortest_break};
use crate::smt::solver_for_report;

/// The report's section, and whether everything it checks passed. Without
/// z3 it says so in one line and passes, unless `BATON_REQUIRE_SOLVER=1`.
pub fn section() -> (String, bool) {
    let mut out = String::from(
        "The fence without bounds (z3; any number of claims, workers, epochs and failovers; assumption A1: fewer than 2^40 claims of a Run on one term)\n",
    );
    let mut ctx = match solver_for_report(&mut out) {
        Ok(ctx) => ctx,
        Err(passes) => return (out, passes),
    };
    let started = Instant::now();
    let mut ok = true;
    match agree(&mut ctx) {
        Ok(a) => {
            ok &= a.disagreements.is_empty();
            let _ = writeln!(
                out,
                "  the encoding against the Rust rules (real and {} variants): {} inputs, {} disagreements",
                VARIANTS.len(),
                a.inputs,
                a.disagreements.len()
            );
        }
        Err(error) => {
            ok = false;
            let _ = writeln!(out, "  the solver failed: {error}");
        }
    }
    for mode in Mode::ALL {
        match prove(&mut ctx, Encoding::REAL, mode) {
            Ok(obligations) => {
                let all = obligations.iter().all(|o| o.holds);
                ok &= all;
                let time: f64 = obligations.iter().map(|o| o.time.as_secs_f64()).sum();
                let names: Vec<&str> = obligations.iter().map(|o| o.what).collect();
                let _ = writeln!(
                    out,
                    "  {:<21} {}: {} in {:.3} s",
                    mode.name(),
                    if all { "proven" } else { "NOT PROVEN" },
                    names.join(", "),
                    time
                );
                for o in obligations.iter().filter(|o| !o.holds) {
                    let _ = writeln!(out, "    not proven: {}", o.what);
                }
            }
            Err(error) => {
                ok = false;
                let _ = writeln!(out, "  {}: the solver failed: {error}", mode.name());
            }
        }
    }
    match super::asynchronous_losses(&mut ctx, 6) {
        Ok(losses) => {
            let seen: Vec<String> = losses
                .iter()
                .map(|h| format!("{} in {} step(s)", h.breaks.join(", "), h.steps.len()))
                .collect();
            ok &= losses.len() == 2;
            let _ = writeln!(
                out,
                "  not promised on an asynchronous standby (SPEC §6), seen broken by the real rules: {}",
                seen.join("; ")
            );
        }
        Err(error) => {
            ok = false;
            let _ = writeln!(out, "  the solver failed: {error}");
        }
    }
    for variant in VARIANTS {
        let Some(encoding) = Encoding::of(variant.name) else {
            ok = false;
            continue;
        };
        let mode = match variant.setup.replication {
            Replication::Single => Mode::Single,
            Replication::Synchronous => Mode::Synchronous,
            Replication::Asynchronous => Mode::Asynchronous,
        };
        match shortest_break(&mut ctx, encoding, mode, 6) {
            Ok(Some(history)) => {
                let _ = writeln!(
                    out,
                    "  refused {:<44} breaks {} in a history of {} step(s)",
                    variant.name,
                    history.breaks.join(", "),
                    history.steps.len()
                );
            }
            Ok(None) => {
                ok = false;
                let _ = writeln!(
                    out,
                    "  NOT refused {}: no promise broken within 6 steps",
                    variant.name
                );
            }
            Err(error) => {
                ok = false;
                let _ = writeln!(out, "  {}: the solver failed: {error}", variant.name);
            }
        }
    }
    let _ = writeln!(
        out,
        "  {} promises ({}), solver time {:.2} s",
        PROMISES.len(),
        PROMISES.iter().map(|p| p.id).collect::<Vec<_>>().join(", "),
        started.elapsed().as_secs_f64()
    );
    (out, ok)
}
