//! The handoff gate: baton vs the original `watch`-based design.

mod baseline;
mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use baton::{CancelSignal, HandoffGate};
use common::{
    full_cycle_baseline, full_cycle_baton, full_cycle_no_gate, intent, prepared, runtime, source,
};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use tokio_util::sync::CancellationToken;

/// baton's `reserve` shares an intent the caller keeps in an `Arc` (its API
/// design); each iteration gets a clone of one, made in criterion's untimed
/// setup. The baseline takes the intent by value, so it gets a fresh one
/// from the same untimed setup.
fn shared_intent() -> impl FnMut() -> Arc<baton::HandoffIntent> {
    let shared = Arc::new(intent());
    move || Arc::clone(&shared)
}

fn full_cycle(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("gate/full_cycle");
    group.bench_function("baton", |b| {
        let cancel = CancelSignal::new();
        b.iter_batched(
            shared_intent(),
            |intent| rt.block_on(full_cycle_baton(&cancel, intent)),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("baseline", |b| {
        let cancel = CancellationToken::new();
        b.iter_batched(
            intent,
            |intent| rt.block_on(full_cycle_baseline(&cancel, intent)),
            BatchSize::SmallInput,
        )
    });
    // The floor under both (`common::full_cycle_no_gate` says what it
    // holds); `scripts/bench-report` subtracts it: what remains is the
    // gate's share.
    group.bench_function("no_gate", |b| {
        b.iter_batched(
            shared_intent(),
            |intent| rt.block_on(full_cycle_no_gate(intent)),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn reserve_release(c: &mut Criterion) {
    let mut group = c.benchmark_group("gate/reserve_release");
    let gate = HandoffGate::<()>::new(source(), "run".into());
    let requester = gate.requester();
    group.bench_function("baton", |b| {
        b.iter_batched(
            shared_intent(),
            |i| drop(requester.reserve(i).unwrap()),
            BatchSize::SmallInput,
        )
    });
    // A new intent every time: the gate checks each one (reported beside
    // the target, which is about a requester that keeps its intent).
    group.bench_function("baton_fresh_intent", |b| {
        b.iter_batched(
            || Arc::new(intent()),
            |i| drop(requester.reserve(i).unwrap()),
            BatchSize::SmallInput,
        )
    });
    let base = baseline::gate::Gate::new(source(), "run".into());
    group.bench_function("baseline", |b| {
        b.iter_batched(
            intent,
            |i| drop(base.reserve(i).unwrap()),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn reserve_busy(c: &mut Criterion) {
    let mut group = c.benchmark_group("gate/reserve_busy");
    let gate = HandoffGate::<()>::new(source(), "run".into());
    let requester = gate.requester();
    let _held = requester.reserve(intent()).unwrap();
    group.bench_function("baton", |b| {
        b.iter_batched(
            shared_intent(),
            |i| black_box(requester.reserve(i).is_err()),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("baton_fresh_intent", |b| {
        b.iter_batched(
            || Arc::new(intent()),
            |i| black_box(requester.reserve(i).is_err()),
            BatchSize::SmallInput,
        )
    });
    // In `Held` the copy of the kind does not answer (a commit may be
    // deciding on the cancel bit, issue 19): the refusal takes the lock.
    // Listed without a target, beside the lock-free `Requested` row above.
    let worker = HandoffGate::<()>::new(source(), "run".into());
    let requester_held = worker.requester();
    let reservation = requester_held.reserve(intent()).unwrap();
    let cancel = CancelSignal::new();
    let mut boundary = Box::pin(worker.boundary(&cancel, prepared));
    let mut ready = Box::pin(reservation.ready());
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(boundary.as_mut().poll(&mut cx).is_pending(), "held");
    let _held = match ready.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Ok(held)) => held,
        other => panic!("the pause is held: {other:?}"),
    };
    group.bench_function("baton_held", |b| {
        b.iter_batched(
            shared_intent(),
            |i| black_box(requester_held.reserve(i).is_err()),
            BatchSize::SmallInput,
        )
    });
    let base = baseline::gate::Gate::new(source(), "run".into());
    let _base_held = base.reserve(intent()).unwrap();
    group.bench_function("baseline", |b| {
        b.iter_batched(
            intent,
            |i| black_box(base.reserve(i).is_none()),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// One design under contention: a cheap-to-clone handle that can try one
/// reserve+release and drive one boundary with a failing preflight.
trait Contender: Clone + Send + Sync + 'static {
    /// Reserves and releases at once; whether the reserve succeeded. Each
    /// design gets the intent the way its API takes it: baton shares the
    /// requester's `Arc`, the baseline takes a copy by value.
    fn reserve_release(&self, intent: &Arc<baton::HandoffIntent>) -> bool;
    /// Drives one boundary whose preflight fails.
    fn boundary(&self) -> impl std::future::Future<Output = ()> + Send + '_;
}

/// The worker's gate shared with the requesters (baton's gate is not `Clone`).
#[derive(Clone)]
struct BatonGate(
    Arc<HandoffGate<()>>,
    baton::HandoffRequester<()>,
    CancelSignal,
);

impl Contender for BatonGate {
    fn reserve_release(&self, intent: &Arc<baton::HandoffIntent>) -> bool {
        self.1.reserve(Arc::clone(intent)).is_ok()
    }
    async fn boundary(&self) {
        let _ = self.0.boundary(&self.2, |_| std::future::ready(None)).await;
    }
}

#[derive(Clone)]
struct BaselineGate(baseline::gate::Gate, CancellationToken);

impl Contender for BaselineGate {
    fn reserve_release(&self, intent: &Arc<baton::HandoffIntent>) -> bool {
        self.0
            .reserve(baton::HandoffIntent::clone(intent))
            .is_some()
    }
    async fn boundary(&self) {
        let _ = self.0.boundary(&self.1, |_| std::future::ready(None)).await;
    }
}

/// `pairs` successful reserve+release pairs by `tasks` requesters on a
/// 2-worker runtime while one task drives boundaries (failed preflight).
fn contended_run<G: Contender>(gate: impl FnOnce() -> G, tasks: usize, pairs: u64) -> Duration {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let gate = gate();
        let done = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let worker = {
            let (gate, done) = (gate.clone(), Arc::clone(&done));
            tokio::spawn(async move {
                while !done.load(Ordering::Relaxed) {
                    gate.boundary().await;
                    tokio::task::yield_now().await;
                }
            })
        };
        let start = Instant::now();
        let requesters: Vec<_> = (0..tasks)
            .map(|_| {
                let (gate, done, count) = (gate.clone(), Arc::clone(&done), Arc::clone(&count));
                let intent = Arc::new(intent());
                tokio::spawn(async move {
                    while !done.load(Ordering::Relaxed) {
                        if gate.reserve_release(&intent)
                            && count.fetch_add(1, Ordering::Relaxed) + 1 >= pairs
                        {
                            done.store(true, Ordering::Relaxed);
                        }
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for task in requesters {
            task.await.unwrap();
        }
        let elapsed = start.elapsed();
        worker.await.unwrap();
        elapsed
    })
}

fn contended_baton(tasks: usize, pairs: u64) -> Duration {
    let gate = || {
        let gate = HandoffGate::<()>::new(source(), "run".into());
        let requester = gate.requester();
        BatonGate(Arc::new(gate), requester, CancelSignal::new())
    };
    contended_run(gate, tasks, pairs)
}

fn contended_baseline(tasks: usize, pairs: u64) -> Duration {
    let gate = || {
        BaselineGate(
            baseline::gate::Gate::new(source(), "run".into()),
            CancellationToken::new(),
        )
    };
    contended_run(gate, tasks, pairs)
}

/// No gate at all: every reserve "succeeds" and releases at once, every
/// boundary returns at once. What the loop itself costs (tasks, `yield_now`,
/// the shared counters) on this machine: the floor under both designs, so
/// the report can say how much of each pair is the gate's.
#[derive(Clone)]
struct NoGate;

impl Contender for NoGate {
    fn reserve_release(&self, _: &Arc<baton::HandoffIntent>) -> bool {
        true
    }
    async fn boundary(&self) {}
}

fn contended(c: &mut Criterion) {
    let mut group = c.benchmark_group("gate/contended");
    group.sample_size(10);
    const PAIRS: u64 = 20_000;
    group.throughput(Throughput::Elements(PAIRS));
    for tasks in [2, 8, 64] {
        group.bench_function(format!("baton/{tasks}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| contended_baton(tasks, PAIRS)).sum())
        });
        group.bench_function(format!("baseline/{tasks}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| contended_baseline(tasks, PAIRS)).sum())
        });
        group.bench_function(format!("no_gate/{tasks}"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| contended_run(|| NoGate, tasks, PAIRS))
                    .sum()
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    full_cycle,
    reserve_release,
    reserve_busy,
    contended
);
criterion_main!(benches);
