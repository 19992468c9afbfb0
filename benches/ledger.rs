//! The delegation ledger at n = 10 … 100k outstanding: baton vs the
//! original scan-and-sort design. Each figure should stay flat in n for
//! baton (SPEC §2: O(k log n) takes) and grows linearly for the baseline.

mod baseline;
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use baton::ledger::Delegations;
use common::{delegation, filled_baseline, filled_baton, id, live};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const SIZES: [usize; 5] = [10, 100, 1_000, 10_000, 100_000];
const BOUND: Duration = Duration::from_secs(60);

fn arrive_and_take(c: &mut Criterion) {
    let mut group = c.benchmark_group("ledger/arrive_take_arrived");
    let now = Instant::now();
    for n in SIZES {
        let (ledger, _scope) = filled_baton(n, now);
        let mut next = n;
        group.bench_with_input(BenchmarkId::new("baton", n), &n, |b, _| {
            b.iter(|| {
                let fresh = id(next);
                next += 1;
                ledger.register(&fresh, delegation(now)).unwrap();
                ledger.arrive(&fresh);
                black_box(ledger.take_arrived());
            })
        });
        let base = filled_baseline(n, now);
        let mut next = n;
        group.bench_with_input(BenchmarkId::new("baseline", n), &n, |b, _| {
            b.iter(|| {
                let fresh = id(next);
                next += 1;
                base.register(fresh.clone(), live(now));
                base.arrive(&fresh);
                black_box(base.take_arrived());
            })
        });
    }
    group.finish();
}

fn take_overdue(c: &mut Criterion) {
    let mut group = c.benchmark_group("ledger/take_overdue_one");
    let now = Instant::now();
    let old = now
        .checked_sub(BOUND * 2)
        .expect("the clock runs for 2 minutes");
    for n in SIZES {
        let (ledger, _scope) = filled_baton(n, now);
        let mut next = n;
        group.bench_with_input(BenchmarkId::new("baton", n), &n, |b, _| {
            b.iter(|| {
                ledger.register(&id(next), delegation(old)).unwrap();
                next += 1;
                black_box(ledger.take_overdue(BOUND, now));
            })
        });
        let base = filled_baseline(n, now);
        let mut next = n;
        group.bench_with_input(BenchmarkId::new("baseline", n), &n, |b, _| {
            b.iter(|| {
                base.register(id(next), live(old));
                next += 1;
                black_box(base.take_overdue(BOUND, now));
            })
        });
    }
    group.finish();
}

fn next_overdue(c: &mut Criterion) {
    let mut group = c.benchmark_group("ledger/next_overdue");
    let now = Instant::now();
    for n in SIZES {
        let (ledger, _scope) = filled_baton(n, now);
        group.bench_with_input(BenchmarkId::new("baton", n), &n, |b, _| {
            b.iter(|| black_box(ledger.next_overdue(BOUND)))
        });
        let base = filled_baseline(n, now);
        group.bench_with_input(BenchmarkId::new("baseline", n), &n, |b, _| {
            b.iter(|| black_box(base.next_overdue(BOUND)))
        });
    }
    group.finish();
}

/// One `ledger/*` group over `SIZES` with a full ledger of each design.
fn with_full_ledgers<A, B>(
    c: &mut Criterion,
    name: &str,
    baton: impl Fn(&Delegations) -> A,
    base: impl Fn(&baseline::ledger::Ledger) -> B,
) {
    let mut group = c.benchmark_group(name);
    let now = Instant::now();
    for n in SIZES {
        if n == 100_000 {
            group.sample_size(20);
        }
        let (ledger, _scope) = filled_baton(n, now);
        group.bench_with_input(BenchmarkId::new("baton", n), &n, |b, _| {
            b.iter(|| black_box(baton(&ledger)))
        });
        let ledger = filled_baseline(n, now);
        group.bench_with_input(BenchmarkId::new("baseline", n), &n, |b, _| {
            b.iter(|| black_box(base(&ledger)))
        });
    }
    group.finish();
}

fn live_list(c: &mut Criterion) {
    with_full_ledgers(c, "ledger/live", Delegations::live, |base| base.live());
}

/// `live()` and then a visit of every row: the O(n) part a caller pays
/// after the snapshot (baton outside the lock, the original under it).
fn live_walk(c: &mut Criterion) {
    with_full_ledgers(
        c,
        "ledger/live_walk",
        |ledger| {
            let live = ledger.live();
            live.iter()
                .map(|(id, d)| id.len() + d.capsule.len())
                .sum::<usize>()
        },
        |base| {
            base.live()
                .iter()
                .map(|row| row.delegation_id.len() + row.capsule.len())
                .sum::<usize>()
        },
    );
}

criterion_group!(
    benches,
    arrive_and_take,
    take_overdue,
    next_overdue,
    live_list,
    live_walk
);
criterion_main!(benches);
