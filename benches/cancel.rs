//! The cancel signal: baton vs the original `watch`-based signal.

mod baseline;
mod common;

use std::hint::black_box;

use baton::CancelSignal;
use criterion::{Criterion, criterion_group, criterion_main};

fn cancel_and_check(c: &mut Criterion) {
    let mut group = c.benchmark_group("cancel/cancel_and_check");
    group.bench_function("baton", |b| {
        b.iter(|| {
            let signal = CancelSignal::new();
            signal.cancel();
            black_box(signal.is_canceled())
        })
    });
    group.bench_function("baseline", |b| {
        b.iter(|| {
            let signal = baseline::cancel::CancelSignal::new();
            signal.cancel();
            black_box(signal.is_canceled())
        })
    });
    group.finish();
}

fn canceled_when_already(c: &mut Criterion) {
    let rt = common::runtime();
    let mut group = c.benchmark_group("cancel/canceled_when_already");
    let signal = CancelSignal::new();
    signal.cancel();
    group.bench_function("baton", |b| b.iter(|| rt.block_on(signal.canceled())));
    let base = baseline::cancel::CancelSignal::new();
    base.cancel();
    group.bench_function("baseline", |b| b.iter(|| rt.block_on(base.canceled())));
    group.finish();
}

criterion_group!(benches, cancel_and_check, canceled_when_already);
criterion_main!(benches);
