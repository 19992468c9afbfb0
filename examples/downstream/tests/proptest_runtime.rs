#![cfg(not(loom))]
//! The sequential checks of `downstream_runtime::check` on generated
//! operation sequences: ids and intents from the test kit's strategies,
//! operations weighted so that handoffs commonly reach their last step
//! (handoff) or decoded from bytes as the fuzz target decodes them
//! (collector). With `--features planted-bug` the handoff property must
//! fail on H1.
//!
//! Each property runs its own `TestRunner`, so that it can say on stderr
//! (past the harness's capture) how many cases it ran, or at which case it
//! failed.

use std::io::Write;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use baton_testkit::strategies::{from_arbitrary, handoff, id};
use downstream_runtime::check::{self, CollectorOp, HandoffOp};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Cases per property (each runs in microseconds).
const CASES: u32 = 2_000;

/// `CASES` cases; nothing written to the tree (a failure prints its minimal
/// input instead of persisting it).
fn config() -> Config {
    Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Runs `test` on `strategy`'s values under [`config`], prints the figures,
/// and panics with proptest's failure (the invariant's message and the
/// minimal input) if a case failed.
fn run<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value)) {
    let cases = AtomicU32::new(0);
    let first_failure = AtomicU32::new(0);
    let mut runner = TestRunner::new(config());
    let result = runner.run(&strategy, |value| {
        let case = cases.fetch_add(1, Ordering::Relaxed) + 1;
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(value)));
        if let Err(panic) = ran {
            let _ = first_failure.compare_exchange(0, case, Ordering::Relaxed, Ordering::Relaxed);
            std::panic::resume_unwind(panic);
        }
        Ok(())
    });
    let line = match &result {
        Ok(()) => format!(
            "proptest {name}: {} cases passed\n",
            cases.load(Ordering::Relaxed)
        ),
        Err(_) => format!(
            "proptest {name}: failed at case {} (then {} runs shrinking)\n",
            first_failure.load(Ordering::Relaxed),
            cases.load(Ordering::Relaxed) - first_failure.load(Ordering::Relaxed)
        ),
    };
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Err(error) = result {
        panic!("{error}");
    }
}

fn handoff_op() -> impl Strategy<Value = HandoffOp> {
    prop_oneof![
        3 => Just(HandoffOp::Reserve),
        4 => Just(HandoffOp::Step),
        4 => Just(HandoffOp::Advance),
        1 => Just(HandoffOp::Release),
        2 => Just(HandoffOp::Takeover),
        1 => Just(HandoffOp::Cancel),
    ]
}

/// H1 / H2 on any sequence of steps, requests, takeovers and cancels.
#[test]
#[cfg_attr(
    feature = "planted-bug",
    should_panic(
        expected = "downstream H1: a handoff reported final before its pause was durable"
    )
)]
fn handoffs_are_reported_final_only_once_durable() {
    let ops = prop::collection::vec(handoff_op(), 0..24);
    let (handed_off, fenced) = (AtomicUsize::new(0), AtomicUsize::new(0));
    run("handoff", (handoff(), ops), |((source, intent), ops)| {
        let reached = check::handoff(&source, &intent, &ops);
        handed_off.fetch_add(reached.handed_off, Ordering::Relaxed);
        fenced.fetch_add(reached.not_handed_off, Ordering::Relaxed);
    });
    // Sometimes: the sequences reach both ends H1 and H2 speak of, else
    // the property would hold of runs that never hand off.
    let (handed_off, fenced) = (handed_off.into_inner(), fenced.into_inner());
    let _ = writeln!(
        std::io::stderr(),
        "proptest handoff: {handed_off} handoffs final, {fenced} fenced"
    );
    assert!(handed_off > 0, "no case handed a Run off");
    assert!(fenced > 0, "no case had a committed handoff fenced");
}

/// C1–C3 on any sequence of spawns, reports, collects and a shutdown.
#[test]
fn each_child_outcome_is_delivered_exactly_once() {
    let ops = from_arbitrary::<Vec<CollectorOp>>(96);
    let (done, ended) = (AtomicUsize::new(0), AtomicUsize::new(0));
    run("collector", (id(), ops), |(task, ops)| {
        let reached = check::collector(&task, &ops);
        done.fetch_add(reached.done, Ordering::Relaxed);
        ended.fetch_add(reached.ended, Ordering::Relaxed);
    });
    // Sometimes: outcomes are delivered both as reported and as ended.
    let (done, ended) = (done.into_inner(), ended.into_inner());
    let _ = writeln!(
        std::io::stderr(),
        "proptest collector: {done} outcomes delivered as reported, {ended} ended"
    );
    assert!(done > 0, "no case delivered a reported outcome");
    assert!(ended > 0, "no case ended an unreported child");
}
