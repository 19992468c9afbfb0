//! What the model's report prints of the unbounded proofs: a line per
//! obligation with the solver's time, the agreement with the Rust rules,
//! and each broken variant's shortest history.

use super::super::{Replication, VARIANTS};
use super::encode::Encoding;
use super::promises::PROMISES;
use super::system::Mode;
use super::{agree::agree, prove, shortest_break};
use crate::smt::Section;

/// The report's section, and whether everything it checks passed. Without
/// z3 it says so in one line and passes, unless `BATON_REQUIRE_SOLVER=1`.
pub fn section() -> (String, bool) {
    let title = "The fence without bounds (z3; any number of claims, workers, epochs, failovers and Runs of a root; assumption A1: fewer than 2^40 claims of a Run on one term)";
    let (mut section, mut ctx) = match Section::open(title) {
        Ok(opened) => opened,
        Err(skipped) => return skipped,
    };
    match agree(&mut ctx) {
        Ok(a) => section.agreement(
            &format!("the Rust rules (real and {} variants)", VARIANTS.len()),
            a.inputs,
            a.disagreements.len(),
        ),
        Err(error) => section.failed("the agreement", &error),
    }
    for mode in Mode::ALL {
        section.proven(mode.name(), prove(&mut ctx, Encoding::REAL, mode));
    }
    match super::asynchronous_losses(&mut ctx, 6) {
        Ok(losses) => {
            let seen: Vec<String> = losses
                .iter()
                .map(|h| format!("{} in {} step(s)", h.breaks.join(", "), h.steps.len()))
                .collect();
            section.line(
                losses.len() == 2,
                &format!(
                    "not promised on an asynchronous standby (SPEC §6), seen broken by the real rules: {}",
                    seen.join("; ")
                ),
            );
        }
        Err(error) => section.failed("the asynchronous losses", &error),
    }
    for variant in VARIANTS {
        let Some(encoding) = Encoding::of(variant.name) else {
            section.line(false, &format!("{}: no encoding", variant.name));
            continue;
        };
        let mode = match variant.setup.replication {
            Replication::Single => Mode::Single,
            Replication::Synchronous => Mode::Synchronous,
            Replication::Asynchronous => Mode::Asynchronous,
        };
        section.refused(variant.name, 6, shortest_break(&mut ctx, encoding, mode, 6));
    }
    let promises = PROMISES.iter().map(|p| p.id).collect::<Vec<_>>().join(", ");
    section.close(&format!("{} promises ({promises}), ", PROMISES.len()))
}
