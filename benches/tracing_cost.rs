//! The `tracing` feature's cost, counted rather than timed: runs one
//! workload a fixed number of times and exits, for `valgrind
//! --tool=callgrind` to count the instructions (`scripts/tracing-cost`
//! runs it built without and with the feature, and at an older revision,
//! and prints instructions per iteration).
//!
//! `cargo bench --bench tracing_cost -- WORKLOAD ITERATIONS`, where
//! WORKLOAD is one of [`WORKLOADS`]. With no arguments (as `cargo bench`
//! runs every target) each workload runs once, as a smoke test.
//!
//! Besides the `tracing` feature's cost, the same counts split a criterion
//! figure: `full_cycle_baseline` and `full_cycle_no_gate` are the cycle of
//! the original gate and the floor with no gate (`gate/full_cycle`'s other
//! two rows), and `ledger_arrive_take[_baseline]` and
//! `ledger_take_overdue_one[_baseline]` are `ledger/arrive_take_arrived`
//! and `ledger/take_overdue_one` at n = `LEDGER_N` (10 unless set). Run under
//! `valgrind --tool=callgrind` at two counts, (I(2N) − I(N)) / N is the
//! instructions per iteration; run plainly at two counts, the same
//! difference of wall times is the time per iteration, setup cancelled.

mod baseline;
mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::{CancelSignal, HandoffGate};
use common::{delegation, id, intent, runtime, source};

const WORKLOADS: [&str; 10] = [
    "full_cycle",
    "full_cycle_baseline",
    "full_cycle_no_gate",
    "reserve_busy",
    "reserve_release",
    "ledger_arrive_take",
    "ledger_arrive_take_baseline",
    "ledger_take_overdue_one",
    "ledger_take_overdue_one_baseline",
    "cancel",
];

/// The ledger's size for the `ledger_*` workloads: `LEDGER_N`, else 10.
fn ledger_n() -> usize {
    std::env::var("LEDGER_N").map_or(10, |n| n.parse().expect("LEDGER_N: a count"))
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
                rt.block_on(common::full_cycle_baton(&cancel, Arc::clone(&intent)));
            }
        }
        // As `gate/full_cycle/baseline`: the original gate's cycle (its
        // API takes the intent by value: a copy made outside the block).
        "full_cycle_baseline" => {
            let rt = runtime();
            let cancel = tokio_util::sync::CancellationToken::new();
            for _ in 0..iterations {
                rt.block_on(common::full_cycle_baseline(&cancel, self::intent()));
            }
        }
        // As `gate/full_cycle/no_gate`: the floor the report subtracts.
        "full_cycle_no_gate" => {
            let rt = runtime();
            for _ in 0..iterations {
                rt.block_on(common::full_cycle_no_gate(Arc::clone(&intent)));
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
        // As `ledger/arrive_take_arrived` at n = LEDGER_N (10 unless set):
        // register, arrive, take.
        "ledger_arrive_take" => {
            let now = Instant::now();
            let n = ledger_n();
            let (ledger, _scope) = common::filled_baton(n, now);
            for k in n..n + iterations as usize {
                let fresh = id(k);
                ledger.register(&fresh, delegation(now)).unwrap();
                ledger.arrive(&fresh);
                black_box(ledger.take_arrived());
            }
        }
        "ledger_arrive_take_baseline" => {
            let now = Instant::now();
            let n = ledger_n();
            let ledger = common::filled_baseline(n, now);
            for k in n..n + iterations as usize {
                let fresh = id(k);
                ledger.register(fresh.clone(), common::live(now));
                ledger.arrive(&fresh);
                black_box(ledger.take_arrived());
            }
        }
        // As `ledger/take_overdue_one` at n = LEDGER_N (10 unless set): a
        // ledger of n delegations started now, an old one registered and
        // taken overdue.
        "ledger_take_overdue_one" => {
            let now = Instant::now();
            let old = now - Duration::from_secs(120);
            let n = ledger_n();
            let (ledger, _scope) = common::filled_baton(n, now);
            for k in n..n + iterations as usize {
                ledger.register(&id(k), delegation(old)).unwrap();
                black_box(ledger.take_overdue(Duration::from_secs(60), now));
            }
        }
        "ledger_take_overdue_one_baseline" => {
            let now = Instant::now();
            let old = now - Duration::from_secs(120);
            let n = ledger_n();
            let ledger = common::filled_baseline(n, now);
            for k in n..n + iterations as usize {
                ledger.register(id(k), common::live(old));
                black_box(ledger.take_overdue(Duration::from_secs(60), now));
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
