#![cfg(loom)]
//! Every interleaving of the runtime's threads around baton's, under loom
//! (`--cfg loom`: baton's locks and the runtime's are loom's).
//!
//! Run with
//! `cargo test -p downstream-runtime --release --test loom_runtime --config "build.rustflags = ['--cfg', 'loom']"`;
//! with `--features planted-bug` the handoff model must fail on H1.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Waker};

use baton::durable::{Claim, Epoch, HandoffLog, MemoryLog};
use baton::{HandoffIntent, Invocation};
use baton_testkit::loom::{Coverage, model};
use downstream_runtime::invariant;
use downstream_runtime::worker::{Pause, Steps};
use downstream_runtime::{Collector, Delivery, Outcome, Report, Reports, StepOutcome, Worker};
use loom::future::block_on;
use loom::thread;

const ROOT: &str = "run";

fn source() -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: ROOT.into(),
        invocation_id: "invocation".into(),
    }
}

fn intent() -> HandoffIntent {
    HandoffIntent {
        handoff_id: "handoff".into(),
        host_epoch: "host".into(),
        root_run_id: ROOT.into(),
        successor_run_id: "successor".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    }
}

fn durable(log: &MemoryLog<Steps>, pause: &Pause) -> bool {
    let facts = log.facts(ROOT, ROOT).expect("valid ids");
    facts.pauses.iter().any(|appended| appended.pause == *pause)
}

/// H1 / H2: the worker's last step (append, seal, report) races its
/// supervisor, which acts on every final report it reads at once, the
/// owner, which takes the Run over, and the requester waiting for the seal.
/// Exactly two histories are correct: the append first (durable, reported,
/// the claim answers `HandedOff`, the requester sees the seal) or the claim
/// first (fenced: nothing durable, no final report, the requester sees the
/// gate closed). A final report the supervisor can read before the log
/// holds its pause breaks H1.
#[test]
#[cfg_attr(
    feature = "planted-bug",
    should_panic(
        expected = "downstream H1: a handoff reported final before its pause was durable"
    )
)]
fn a_handoff_is_reported_final_only_once_durable() {
    model(
        "downstream: last step ∥ supervisor ∥ takeover ∥ wait()",
        Coverage::Exhaustive,
        || {
            let log = Arc::new(MemoryLog::<Steps>::new());
            let reports = Reports::new();
            let worker = Worker::start(source(), ROOT, Arc::clone(&log), reports.clone())
                .expect("valid ids")
                .expect("a fresh Run");
            assert_eq!(worker.epoch(), Epoch::new(1));
            // Set-up, one thread: reserved, the worker's step holds its
            // pause at the boundary, the requester commits it.
            let reservation = worker.requester().reserve(intent()).expect("a fresh gate");
            let mut step = Box::pin(worker.step());
            let first = step.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(first.is_pending(), "the step waits for the commit");
            let held = block_on(reservation.ready()).expect("the pause is held");
            let pending = held.commit().expect("nothing canceled");

            // Raced.
            let supervisor = {
                let (reports, log) = (reports.clone(), Arc::clone(&log));
                // What a supervisor acting on a final report would find.
                thread::spawn(move || {
                    reports
                        .handed_off()
                        .into_iter()
                        .map(|pause| durable(&log, &pause))
                        .collect::<Vec<bool>>()
                })
            };
            let owner = {
                let log = Arc::clone(&log);
                thread::spawn(move || log.claim(ROOT, ROOT).expect("valid ids"))
            };
            // The requester waits for the seal on its own thread: it must be
            // woken either way.
            let requester = thread::spawn(move || block_on(pending.wait()).ok());
            let outcome = block_on(step);
            let seen = supervisor.join().expect("the supervisor does not panic");
            let claimed = owner.join().expect("the owner does not panic");
            let sealed = requester.join().expect("the requester does not panic");

            assert!(
                seen.iter().all(|durable| *durable),
                "{}: the supervisor read a final report whose pause the log did not hold",
                invariant::H1
            );
            match outcome {
                StepOutcome::HandedOff(pause) => {
                    assert!(durable(&log, &pause), "{}", invariant::H1);
                    assert_eq!(
                        reports.sent(),
                        [Report::HandedOff(Arc::clone(&pause))],
                        "{}",
                        invariant::H2
                    );
                    assert_eq!(claimed, Claim::HandedOff((*pause).clone()));
                    assert_eq!(sealed, Some(pause), "the requester sees the seal");
                }
                StepOutcome::Stopped => {
                    assert!(
                        reports.handed_off().iter().all(|p| durable(&log, p)),
                        "{}: reported final, then fenced",
                        invariant::H1
                    );
                    assert_eq!(reports.handed_off(), [], "{}", invariant::H1);
                    assert_eq!(claimed, Claim::Owner(Epoch::new(2)));
                    assert_eq!(sealed, None, "fenced: closed without a seal");
                }
                StepOutcome::Continue => panic!("a committed step hands off or stops"),
            }
            assert_eq!(worker.requester().waiter_count(), 0, "no waker left behind");
        },
    );
}

/// C1–C3: a child reports, then reports again (a retry), and a second
/// child reports, while the parent collects and then shuts the task down.
/// Each child's outcome is delivered exactly once: the accepted report's,
/// or `Ended`.
#[test]
fn each_child_outcome_is_delivered_exactly_once() {
    model(
        "downstream: report, retry ∥ report ∥ collect, shutdown",
        Coverage::Exhaustive,
        || {
            let collector = Arc::new(Collector::new("task").expect("a valid task id"));
            collector.spawn("c0").expect("a fresh id");
            collector.spawn("c1").expect("a fresh id");
            let child = {
                let collector = Arc::clone(&collector);
                thread::spawn(move || {
                    let first = collector.report("c0", 1);
                    let retry = collector.report("c0", 2);
                    (first, retry)
                })
            };
            let other = {
                let collector = Arc::clone(&collector);
                thread::spawn(move || collector.report("c1", 7))
            };
            let mut delivered: Vec<Delivery> = collector.collect();
            delivered.extend(collector.shutdown());
            let (first, retry) = child.join().expect("the child does not panic");
            let other = other.join().expect("the child does not panic");

            assert!(
                !(first && retry),
                "{}: a report accepted twice",
                invariant::C1
            );
            let expected = match (first, retry) {
                (true, _) => Outcome::Done(1),
                (false, true) => Outcome::Done(2),
                (false, false) => Outcome::Ended,
            };
            for id in ["c0", "c1"] {
                let of: Vec<&Delivery> = delivered.iter().filter(|d| d.child == id).collect();
                assert!(of.len() <= 1, "{}: {of:?}", invariant::C1);
                assert_eq!(of.len(), 1, "{}: {id}", invariant::C3);
            }
            let c0 = delivered.iter().find(|d| d.child == "c0").expect("C3");
            assert_eq!(c0.outcome, expected, "{}", invariant::C2);
            let c1 = delivered.iter().find(|d| d.child == "c1").expect("C3");
            let expected = if other {
                Outcome::Done(7)
            } else {
                Outcome::Ended
            };
            assert_eq!(c1.outcome, expected, "{}", invariant::C2);
            assert_eq!(collector.live(), 0, "{}", invariant::C3);
        },
    );
}
