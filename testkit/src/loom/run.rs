//! Running a model with its coverage stated in code.
//!
//! `loom::model::Builder::new()` takes its defaults from `LOOM_*` variables;
//! [`model`] overrides the ones that would cut coverage (a preemption bound,
//! `LOOM_MAX_PERMUTATIONS`, `LOOM_MAX_DURATION` — the last two stop early and
//! still report ok), so what a test claims is what it explores. Checkpoint
//! and log variables still apply, for replaying a failure.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// How much of the interleaving space a model explores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Every interleaving: no preemption bound.
    Exhaustive,
    /// Every interleaving with at most this many preemptions per execution.
    Bounded(usize),
}

/// Runs `body` under loom with `coverage`, then prints on stderr (past the
/// test harness's capture) how many executions it took and how long, or,
/// if an execution fails, which one.
///
/// # Panics
///
/// If an execution fails, or if loom explored a single execution: the model
/// then races nothing loom can see (e.g. a primitive opaque to loom), and
/// passing would prove nothing.
pub fn model<F>(name: &str, coverage: Coverage, body: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = match coverage {
        Coverage::Exhaustive => None,
        Coverage::Bounded(bound) => Some(bound),
    };
    builder.max_permutations = None;
    builder.max_duration = None;
    let executions = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&executions);
    let started = Instant::now();
    let failing = Failing {
        name,
        executions: &executions,
    };
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        body();
    });
    std::mem::forget(failing);
    let executions = executions.load(Ordering::Relaxed);
    let coverage = match coverage {
        Coverage::Exhaustive => "exhaustive".to_owned(),
        Coverage::Bounded(bound) => format!("preemption bound {bound}"),
    };
    let line = format!(
        "loom {name}: {executions} executions, {coverage}, {:.2} s\n",
        started.elapsed().as_secs_f64()
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    assert!(
        executions > 1,
        "{name}: loom explored one execution only; the model races nothing loom can see"
    );
}

/// Says, when a model unwinds, in which execution it failed (loom's own
/// report names the thread and the panic, not how far it got).
struct Failing<'a> {
    name: &'a str,
    executions: &'a AtomicUsize,
}

impl Drop for Failing<'_> {
    fn drop(&mut self) {
        let line = format!(
            "loom {}: failed in execution {}\n",
            self.name,
            self.executions.load(Ordering::Relaxed)
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}
