//! Bytes per outstanding delegation and per delivered id, baton vs the
//! original, counted by a global allocator (live bytes before and after).
//! Prints a small table; `scripts/bench-report` folds it into its report.

mod baseline;
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use baton::ledger::Delegations;
use common::{delegation, id, live};

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator unchanged, only counting sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

const N: usize = 100_000;

fn main() {
    let now = Instant::now();
    // The ids are made up front; what is counted is what each ledger adds.
    let ids: Vec<String> = (0..N).map(id).collect();

    let ledger = Delegations::new();
    let scope = ledger.scope_task("tsk_a").unwrap();
    let start = live_bytes();
    for id in &ids {
        ledger.register(id, delegation(now)).unwrap();
    }
    let baton_entry = (live_bytes() - start) as f64 / N as f64;
    for id in &ids {
        ledger.arrive(id);
    }
    drop(ledger.take_arrived());
    // What stays once every entry was delivered and taken: the delivered
    // memory (baton frees it with the scope, the original never does).
    let baton_delivered = (live_bytes() - start) as f64 / N as f64;
    drop(scope);
    let baton_after_scope = (live_bytes() - start) as f64 / N as f64;

    let base = baseline::ledger::Ledger::default();
    base.scope_task("tsk_a");
    let start = live_bytes();
    for id in &ids {
        base.register(id.clone(), live(now));
    }
    let base_entry = (live_bytes() - start) as f64 / N as f64;
    for id in &ids {
        base.arrive(id);
    }
    drop(base.take_arrived());
    let base_delivered = (live_bytes() - start) as f64 / N as f64;
    base.scope_task("tsk_b");
    let base_after_scope = (live_bytes() - start) as f64 / N as f64;

    println!(
        "memory/per_outstanding_delegation_bytes baseline={base_entry:.0} baton={baton_entry:.0}"
    );
    println!(
        "memory/per_delivered_id_bytes baseline={base_delivered:.0} baton={baton_delivered:.0}"
    );
    println!(
        "memory/per_delivered_id_after_scope_end_bytes baseline={base_after_scope:.0} baton={baton_after_scope:.0}"
    );
}
