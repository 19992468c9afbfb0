//! A section of the model's report for one system's proofs: the
//! agreement of its encoding with the Rust rules, a line per proof with
//! the solver's time, each broken variant's shortest history, and the
//! solver's time in all.

use std::fmt::Write as _;
use std::io;
use std::time::Instant;

use easy_smt::Context;

use super::{History, Obligation, solver_for_report};

/// A section being written.
#[derive(Debug)]
pub struct Section {
    out: String,
    ok: bool,
    started: Instant,
}

impl Section {
    /// Opens the section titled `title`, with the solver. Without z3:
    /// `Err` with the section's one skip line, and whether it passes (it
    /// does unless `BATON_REQUIRE_SOLVER=1`).
    ///
    /// # Errors
    ///
    /// z3 could not be started.
    pub fn open(title: &str) -> Result<(Section, Context), (String, bool)> {
        let mut out = format!("{title}\n");
        match solver_for_report(&mut out) {
            Ok(ctx) => Ok((
                Section {
                    out,
                    ok: true,
                    started: Instant::now(),
                },
                ctx,
            )),
            Err(passes) => Err((out, passes)),
        }
    }

    /// A line as it is (`ok`: whether what it says passed).
    pub fn line(&mut self, ok: bool, line: &str) {
        self.ok &= ok;
        let _ = writeln!(self.out, "  {line}");
    }

    /// The agreement of `what` with the Rust rules: `cases` compared,
    /// `disagreements` of them disagreeing.
    pub fn agreement(&mut self, what: &str, cases: usize, disagreements: usize) {
        self.line(
            disagreements == 0,
            &format!("the encoding against {what}: {cases} cases, {disagreements} disagreements"),
        );
    }

    /// The obligations proven (`label`: the mode they were proven in, or
    /// empty).
    pub fn proven(&mut self, label: &str, obligations: io::Result<Vec<Obligation>>) {
        let obligations = match obligations {
            Ok(obligations) => obligations,
            Err(error) => return self.failed(label, &error),
        };
        let all = obligations.iter().all(|o| o.holds);
        let time: f64 = obligations.iter().map(|o| o.time.as_secs_f64()).sum();
        let names: Vec<&str> = obligations.iter().map(|o| o.what).collect();
        let label = if label.is_empty() {
            String::new()
        } else {
            format!("{label:<21} ")
        };
        self.line(
            all,
            &format!(
                "{label}{}: {} in {time:.3} s",
                if all { "proven" } else { "NOT PROVEN" },
                names.join(", ")
            ),
        );
        for o in obligations.iter().filter(|o| !o.holds) {
            let _ = writeln!(self.out, "    not proven: {}", o.what);
        }
    }

    /// Broken variant `name` refused by the history the solver found
    /// within `depth` steps, or not.
    pub fn refused(&mut self, name: &str, depth: usize, found: io::Result<Option<History>>) {
        match found {
            Ok(Some(h)) => self.line(
                true,
                &format!(
                    "refused {name:<44} breaks {} in a history of {} step(s)",
                    h.breaks.join(", "),
                    h.steps.len()
                ),
            ),
            Ok(None) => self.line(
                false,
                &format!("NOT refused {name}: no promise broken within {depth} steps"),
            ),
            Err(error) => self.failed(name, &error),
        }
    }

    /// The solver failed at `what`.
    pub fn failed(&mut self, what: &str, error: &io::Error) {
        let what = if what.is_empty() { "the solver" } else { what };
        self.line(false, &format!("{what}: the solver failed: {error}"));
    }

    /// The section, ended by the solver's time (after `before`, if any),
    /// and whether everything in it passed.
    pub fn close(mut self, before: &str) -> (String, bool) {
        let time = self.started.elapsed().as_secs_f64();
        let _ = writeln!(self.out, "  {before}solver time {time:.2} s");
        (self.out, self.ok)
    }
}
