//! The sequential checks: an operation sequence (decoded with `Arbitrary`,
//! so the fuzz target's input is the property test's too) run against the
//! runtime, with every invariant checked after every operation. Each
//! panics with the message of the invariant it found broken
//! ([`crate::invariant`]) and the operations so far.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use arbitrary::Arbitrary;
use baton::durable::{HandoffLog, MemoryLog};
use baton::{
    HandoffIntent, HandoffReservation, HeldHandoff, Invocation, PendingSeal, ReadyError, WaitError,
};

use crate::collector::{Collector, Outcome};
use crate::invariant;
use crate::worker::{Pause, Report, Reports, StepOutcome, Steps, Worker};

/// One operation on a worker, its requester and its owner.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandoffOp {
    /// The requester reserves a handoff (dropping the handle it held).
    Reserve,
    /// The worker takes a step, or polls the step it is in once more.
    Step,
    /// The requester moves on: waits for the pause to be held, commits it
    /// as soon as it is, then waits for the seal (one poll each).
    Advance,
    /// The requester drops its handle.
    Release,
    /// The owner suspects the worker and claims the Run over: the worker's
    /// epoch is fenced.
    Takeover,
    /// The Run is canceled.
    Cancel,
}

/// One operation on a collector of three children, `c0` to `c2`.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectorOp {
    /// Launches child `n % 3`.
    Spawn(u8),
    /// Child `n % 3` reports a result (perhaps again).
    Report(u8, u8),
    /// The parent collects the outcomes reported.
    Collect,
    /// The parent shuts the task down.
    Shutdown,
}

/// The input of the fuzz target: a handoff script and a collector script.
#[derive(Arbitrary, Clone, Debug)]
pub struct Script {
    /// Run by [`handoff`].
    pub handoff: Vec<HandoffOp>,
    /// Run by [`collector`].
    pub collector: Vec<CollectorOp>,
}

/// The longest script worth running; longer inputs are cut.
pub const MAX_OPS: usize = 64;

/// What the requester holds.
enum Handle {
    None,
    Reserved(HandoffReservation<Steps>),
    Readying(Pin<Box<dyn Future<Output = Result<HeldHandoff<Steps>, ReadyError>>>>),
    Committed(PendingSeal<Steps>),
    Waiting(Pin<Box<dyn Future<Output = Result<Arc<Pause>, WaitError>>>>),
}

/// What a [`handoff`] script reached, so that a property test can say its
/// sequences reach the cells the invariants speak of (a check that holds on
/// sequences that never hand off would prove nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandoffReached {
    /// Handoffs the worker finished (durable, sealed, reported final).
    pub handed_off: usize,
    /// Committed handoffs that did not become final (fenced by a takeover).
    pub not_handed_off: usize,
}

/// What a [`collector`] script delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollectorReached {
    /// Outcomes delivered as reported (`Outcome::Done`).
    pub done: usize,
    /// Children ended unreported at shutdown (`Outcome::Ended`).
    pub ended: usize,
}

/// Polls `future` once with a waker that does nothing.
fn poll<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// Runs `ops` on a worker of the Run `source` (root Run `source.run_id`),
/// whose requester reserves `intent` (with a fresh `handoff_id` each
/// time), checking H1 and H2 after every operation; returns what it
/// reached.
///
/// # Panics
///
/// On a broken invariant, with its message; and if `intent` is not valid
/// for `source` (a test's mistake).
pub fn handoff(source: &Invocation, intent: &HandoffIntent, ops: &[HandoffOp]) -> HandoffReached {
    let root = source.run_id.clone();
    let log = Arc::new(MemoryLog::<Steps>::new());
    let reports = Reports::new();
    let worker = Arc::new(
        Worker::start(source.clone(), &root, Arc::clone(&log), reports.clone())
            .expect("valid ids")
            .expect("a fresh Run is not handed off"),
    );
    let requester = worker.requester();
    let mut handle = Handle::None;
    let mut stepping: Option<Pin<Box<dyn Future<Output = StepOutcome>>>> = None;
    let mut finished: Vec<Arc<Pause>> = Vec::new();
    let mut reservations = 0usize;
    let ops = &ops[..ops.len().min(MAX_OPS)];
    for (at, op) in ops.iter().enumerate() {
        let done = &ops[..=at];
        match op {
            HandoffOp::Reserve => {
                reservations += 1;
                let intent = HandoffIntent {
                    handoff_id: format!("{}-{reservations}", intent.handoff_id),
                    ..intent.clone()
                };
                handle = match requester.reserve(intent) {
                    Ok(reservation) => Handle::Reserved(reservation),
                    Err(_) => Handle::None,
                };
            }
            HandoffOp::Step => {
                let future = stepping.get_or_insert_with(|| {
                    let worker = Arc::clone(&worker);
                    Box::pin(async move { worker.step().await })
                });
                if let Poll::Ready(outcome) = poll(future.as_mut()) {
                    stepping = None;
                    if let StepOutcome::HandedOff(pause) = outcome {
                        finished.push(pause);
                    }
                }
            }
            HandoffOp::Advance => {
                handle = advance(handle, log.as_ref(), &root, done);
            }
            HandoffOp::Release => handle = Handle::None,
            HandoffOp::Takeover => {
                let _ = log.claim(&root, &root).expect("valid ids");
            }
            HandoffOp::Cancel => worker.cancel().cancel(),
        }
        check_reports(&reports, log.as_ref(), &root, &finished, done);
    }
    let sent = reports.sent();
    HandoffReached {
        handed_off: finished.len(),
        not_handed_off: sent
            .iter()
            .filter(|report| matches!(report, Report::NotHandedOff(_)))
            .count(),
    }
}

/// The requester's next move from `handle`.
fn advance(handle: Handle, log: &MemoryLog<Steps>, root: &str, done: &[HandoffOp]) -> Handle {
    let handle = match handle {
        Handle::Reserved(reservation) => Handle::Readying(Box::pin(reservation.ready())),
        Handle::Committed(pending) => Handle::Waiting(Box::pin(pending.wait())),
        other => other,
    };
    match handle {
        Handle::Readying(mut ready) => match poll(ready.as_mut()) {
            Poll::Pending => Handle::Readying(ready),
            // A refused commit (canceled, released) leaves nothing to hold.
            Poll::Ready(Ok(held)) => held.commit().map_or(Handle::None, Handle::Committed),
            Poll::Ready(Err(_)) => Handle::None,
        },
        Handle::Waiting(mut wait) => match poll(wait.as_mut()) {
            Poll::Pending => Handle::Waiting(wait),
            Poll::Ready(Ok(pause)) => {
                assert!(
                    durable(log, root, &pause),
                    "{}: the requester saw a seal the log does not hold, after {done:?}",
                    invariant::H1
                );
                Handle::None
            }
            Poll::Ready(Err(_)) => Handle::None,
        },
        other => other,
    }
}

/// Whether the log holds `pause` for the Run `root`.
fn durable(log: &MemoryLog<Steps>, root: &str, pause: &Pause) -> bool {
    let facts = log.facts(root, root).expect("valid ids");
    facts.pauses.iter().any(|appended| appended.pause == *pause)
}

/// H1 and H2 on the reports sent so far.
fn check_reports(
    reports: &Reports,
    log: &MemoryLog<Steps>,
    root: &str,
    finished: &[Arc<Pause>],
    done: &[HandoffOp],
) {
    let handed_off = reports.handed_off();
    for pause in &handed_off {
        assert!(
            durable(log, root, pause),
            "{}: {pause:?} is not in the log, after {done:?}",
            invariant::H1
        );
    }
    for pause in finished {
        let times = handed_off.iter().filter(|p| **p == *pause).count();
        assert_eq!(
            times,
            1,
            "{}: {pause:?} reported {times} times, after {done:?}",
            invariant::H2
        );
    }
    assert!(
        handed_off.len() <= 1,
        "{}: {} handoffs of one Run reported final, after {done:?}",
        invariant::H2,
        handed_off.len()
    );
}

/// Runs `ops` on a collector of task `task`, checking C1 and C2 after every
/// operation and C3 after its shutdown (a last `Shutdown` is added);
/// returns what it delivered.
///
/// # Panics
///
/// On a broken invariant, with its message; and if `task` is not a valid
/// id (a test's mistake).
pub fn collector(task: &str, ops: &[CollectorOp]) -> CollectorReached {
    let collector = Collector::new(task).expect("a valid task id");
    let mut spawned: Vec<String> = Vec::new();
    // The result of each child's accepted report.
    let mut accepted: HashMap<String, u32> = HashMap::new();
    let mut delivered: HashMap<String, Outcome> = HashMap::new();
    let mut shut_down = false;
    let ops = &ops[..ops.len().min(MAX_OPS)];
    let last = [CollectorOp::Shutdown];
    for (at, op) in ops.iter().chain(&last).enumerate() {
        let deliveries = match *op {
            CollectorOp::Spawn(n) => {
                let id = format!("c{}", n % 3);
                if collector.spawn(&id).is_ok() {
                    assert!(!shut_down, "a collector shut down accepts no child");
                    spawned.push(id);
                }
                Vec::new()
            }
            CollectorOp::Report(n, result) => {
                let id = format!("c{}", n % 3);
                if collector.report(&id, result.into()) {
                    assert!(
                        accepted.insert(id.clone(), result.into()).is_none(),
                        "{}: {id}'s report accepted twice, after {:?}",
                        invariant::C1,
                        &ops[..=at.min(ops.len() - 1)]
                    );
                }
                Vec::new()
            }
            CollectorOp::Collect => collector.collect(),
            CollectorOp::Shutdown => {
                shut_down = true;
                collector.shutdown()
            }
        };
        for delivery in deliveries {
            let expected = match accepted.get(&delivery.child) {
                Some(result) => Outcome::Done(*result),
                None => Outcome::Ended,
            };
            assert_eq!(
                delivery.outcome,
                expected,
                "{}: {delivery:?}, after {ops:?}",
                invariant::C2
            );
            assert!(
                delivered
                    .insert(delivery.child.clone(), delivery.outcome)
                    .is_none(),
                "{}: {delivery:?} again, after {ops:?}",
                invariant::C1
            );
        }
    }
    for id in &spawned {
        assert!(
            delivered.contains_key(id),
            "{}: {id} was spawned and never delivered, after {ops:?}",
            invariant::C3
        );
    }
    assert_eq!(
        collector.live(),
        0,
        "{}: entries left after shutdown",
        invariant::C3
    );
    let done = delivered
        .values()
        .filter(|outcome| matches!(outcome, Outcome::Done(_)))
        .count();
    CollectorReached {
        done,
        ended: delivered.len() - done,
    }
}

/// The fuzz target's body: both scripts on the fixed Run and task of
/// [`source`] and [`intent`].
pub fn script(script: &Script) {
    let _ = handoff(&source(), &intent(), &script.handoff);
    let _ = collector("task", &script.collector);
}

/// The Run the fuzz target's worker runs.
pub fn source() -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    }
}

/// The intent the fuzz target's requester reserves.
pub fn intent() -> HandoffIntent {
    HandoffIntent {
        handoff_id: "handoff".into(),
        host_epoch: "host".into(),
        root_run_id: "run".into(),
        successor_run_id: "successor".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    }
}
