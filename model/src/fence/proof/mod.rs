//! The fence proven without bounds (issue 61): the rules of `claim`,
//! `append`, `finish` and `retire` and the term's floor encoded for an SMT
//! solver over unbounded integers ([`encode`]), one Run with its successor,
//! its log and its standby, in a root of any number of other Runs, as a
//! transition system ([`system`]), an
//! inductive invariant, and each promise as an obligation of every step —
//! so what holds here holds for any epoch, any number of workers and
//! zombies, any number of claims and any number of failovers.
//!
//! **Failure model**, the bounded model's ([`super`]) without its bounds:
//! any number of workers hold any epochs at all (zombies, wrong
//! suspicions: a write may carry any epoch, from any party, at any
//! moment); any reply may be lost; the operator's retention runs at any
//! moment; the successor is claimed and finished at any moment; with a
//! standby, it receives what the primary holds at any pace (a synchronous
//! one everything before an answered operation) and is promoted at any
//! moment, any number of times, each time on the next term. One
//! assumption, A1: a Run is claimed fewer than 2^40 times on one term (the
//! room `timeline_floor` leaves each timeline).
//!
//! **Tied to the Rust rules.** [`agree`] evaluates every term of the
//! encoding — the real rules' and each broken variant's — on every input
//! of a grid (each fact shape, epochs and floors around 0, 1, each
//! term's floor, `Epoch::LAST` and `u64::MAX`) and holds it to what the
//! Rust function answers on the same input: a rule changed without its
//! encoding fails that test.
//!
//! **What is not here:** R1, R2 and R4 are the worker's gate and seal
//! (proven by [`crate::gate`] and the bounded model), R5 is liveness.
//! The root's other Runs are what a retirement finds of them (none, all
//! ended, one open, one waiting for its successor), chosen at each step:
//! the proof of G5 for the Run and its successor holds of each pair of a
//! root of any number of Runs.

pub mod agree;
pub mod encode;
mod history;
pub mod promises;
pub mod report;
pub mod system;

use std::io;

use easy_smt::Context;

use easy_smt::SExpr;

use crate::smt::{self, History, Obligation, Transitions};
use encode::Encoding;
use promises::PROMISES;
use system::{Answers, Choice, Frame, Mode, System, declare_choice, declare_frame};

impl Transitions for System {
    type Frame = Frame;
    type Choice = Choice;
    type Answers = Answers;

    fn name(&self) -> String {
        format!("the fence on {}", self.mode.name())
    }

    fn frame(&self, ctx: &mut Context, i: usize) -> io::Result<Frame> {
        declare_frame(ctx, i)
    }

    fn choice(&self, ctx: &mut Context, i: usize) -> io::Result<Choice> {
        declare_choice(ctx, i)
    }

    fn answers(&self, c: &Context, s: &Frame, x: &Choice) -> Answers {
        System::answers(self, c, s, x)
    }

    fn init(&self, c: &Context, s: &Frame) -> SExpr {
        System::init(self, c, s)
    }

    fn step(&self, c: &Context, s: &Frame, x: &Choice, a: &Answers, n: &Frame) -> SExpr {
        System::step(self, c, s, x, a, n)
    }

    fn invariant(&self, c: &Context, s: &Frame) -> SExpr {
        System::invariant(self, c, s)
    }

    fn promises(&self) -> Vec<&'static str> {
        PROMISES
            .iter()
            .filter(|p| p.modes.contains(&self.mode))
            .map(|p| p.id)
            .collect()
    }

    fn keeps(&self, c: &Context, id: &str, s: &Frame, x: &Choice, a: &Answers, n: &Frame) -> SExpr {
        self.keeps_promise(c, id, s, x, a, n)
    }

    fn describe(
        &self,
        ctx: &mut Context,
        x: &Choice,
        a: &Answers,
        n: &Frame,
    ) -> io::Result<String> {
        history::describe(ctx, self.mode, x, a, n)
    }
}

/// Proves `encoding` on `mode`: the invariant holds initially and is kept
/// by every step, and every promise of the mode is kept by every step
/// from a state where the invariant holds.
///
/// # Errors
///
/// The solver's: it could not be spoken to, or answered unknown.
pub fn prove(ctx: &mut Context, encoding: Encoding, mode: Mode) -> io::Result<Vec<Obligation>> {
    smt::prove(ctx, &System::new(encoding, mode))
}

/// The shortest history (up to `depth` steps from the initial state) of
/// `encoding` on `mode` that breaks one of the mode's promises, with the
/// promises its last step breaks; `None` if there is none that short.
///
/// # Errors
///
/// As [`prove`].
pub fn shortest_break(
    ctx: &mut Context,
    encoding: Encoding,
    mode: Mode,
    depth: usize,
) -> io::Result<Option<History>> {
    let system = System::new(encoding, mode);
    smt::shortest_break(ctx, &system, &system.promises(), depth)
}

/// The shortest histories (up to `depth` steps) of the real rules on an
/// asynchronous standby that break the promises SPEC §6 says such a
/// failover may break and that are proven elsewhere (G2, R7): the
/// failovers the proofs cover are ones that lose acknowledged writes.
///
/// # Errors
///
/// As [`prove`].
pub fn asynchronous_losses(ctx: &mut Context, depth: usize) -> io::Result<Vec<History>> {
    let system = System::new(Encoding::REAL, Mode::Asynchronous);
    let mut found = Vec::new();
    for id in ["G2", "R7"] {
        if let Some(history) = smt::shortest_break(ctx, &system, &[id], depth)? {
            found.push(history);
        }
    }
    Ok(found)
}
