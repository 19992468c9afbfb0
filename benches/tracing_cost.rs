//! The `tracing` feature's cost, counted rather than timed: runs one
//! workload a fixed number of times and exits, for `valgrind
//! --tool=callgrind` to count the instructions (`scripts/tracing-cost`
//! runs it built without and with the feature, and at an older revision,
//! and prints instructions per iteration).
//!
//! `cargo bench --bench tracing_cost -- WORKLOAD ITERATIONS`, where
//! WORKLOAD is `full_cycle`, `reserve_busy`, `reserve_release`,
//! `ledger_arrive_take` or `cancel`. With no arguments (as `cargo bench`
//! runs every target) each workload runs once, as a smoke test.

mod baseline;
mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use baton::ledger::Delegations;
use baton::{CancelSignal, HandoffGate, HandoffPause};
use common::{delegation, id, intent, runtime, source};

const WORKLOADS: [&str; 5] = [
    "full_cycle",
    "reserve_busy",
    "reserve_release",
    "ledger_arrive_take",
    "cancel",
];

fn prepared(intent: Arc<baton::HandoffIntent>) -> std::future::Ready<Option<HandoffPause<()>>> {
    std::future::ready(Some(HandoffPause::new(intent, ())))
}

fn run(workload: &str, iterations: u64) {
    let intent = Arc::new(intent());
    match workload {
        // As `gate/full_cycle`: a new gate, reserve, boundary ∥ ready and
        // commit, seal, wait.
        "full_cycle" => {
            let rt = runtime();
            let cancel = CancelSignal::new();
            for _ in 0..iterations {
                rt.block_on(async {
                    let gate = HandoffGate::<()>::new(source(), "run".into());
                    let reservation = gate.requester().reserve(Arc::clone(&intent)).unwrap();
                    let (paused, pending) = tokio::join!(gate.boundary(&cancel, prepared), async {
                        reservation.ready().await.unwrap().commit().unwrap()
                    });
                    let paused = paused.unwrap().unwrap();
                    assert!(gate.sealed(&paused));
                    black_box(pending.wait().await.unwrap());
                })
            }
        }
        // As `gate/reserve_busy`: a refused reserve (lock-free).
        "reserve_busy" => {
            let gate = HandoffGate::<()>::new(source(), "run".into());
            let requester = gate.requester();
            let _held = requester.reserve(Arc::clone(&intent)).unwrap();
            for _ in 0..iterations {
                black_box(requester.reserve(Arc::clone(&intent)).is_err());
            }
        }
        // As `gate/reserve_release`: a reserve and its release.
        "reserve_release" => {
            let gate = HandoffGate::<()>::new(source(), "run".into());
            let requester = gate.requester();
            for _ in 0..iterations {
                drop(black_box(requester.reserve(Arc::clone(&intent)).unwrap()));
            }
        }
        // As `ledger/arrive_take_arrived` at n = 0: register, arrive, take.
        "ledger_arrive_take" => {
            let ledger = Delegations::new();
            let _scope = ledger.scope_task("tsk_a").unwrap();
            let now = Instant::now();
            for n in 0..iterations as usize {
                let fresh = id(n);
                ledger.register(&fresh, delegation(now)).unwrap();
                ledger.arrive(&fresh);
                black_box(ledger.take_arrived());
            }
        }
        // As `cancel/cancel_and_check`: a new signal, fired and read.
        "cancel" => {
            for _ in 0..iterations {
                let signal = CancelSignal::new();
                signal.cancel();
                black_box(signal.is_canceled());
            }
        }
        other => panic!("unknown workload {other:?}; one of {WORKLOADS:?}"),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the workload and count come after.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    match args.as_slice() {
        [] => WORKLOADS.iter().for_each(|workload| run(workload, 1)),
        [workload, iterations] => run(workload, iterations.parse().expect("a count")),
        _ => panic!("usage: tracing_cost [WORKLOAD ITERATIONS]"),
    }
}
