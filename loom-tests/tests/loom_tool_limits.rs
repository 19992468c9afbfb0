#![cfg(loom)]
//! What loom itself does not explore, pinned, so that the suite's claim
//! ("every interleaving") stays true and a loom upgrade that changes it is
//! noticed. These models use loom's atomics directly, not baton.
//!
//! loom (0.7) checks a write for a conflict only against the *last* access
//! to the atomic when it picks the orders to try next. When that access is
//! the writing thread's own load, another thread's earlier load is never
//! tried after the write: a reader never sees a value any machine can show
//! it. Where baton loads an atomic without a lock, it either makes the load
//! a read-modify-write under loom (the gate's copy of its state's kind,
//! `sync::Mirror` in `src/sync.rs`), which loom orders against every other
//! access, or shows that the orders loom skips cannot change an answer
//! (`CancelSignal`'s bits, `src/cancel.rs`).
//!
//! If the first test fails after a loom upgrade, loom now explores these
//! orders with plain loads: the read-modify-write may become a plain load
//! again (compare the suite's execution counts before and after), and the
//! argument in `src/cancel.rs` is no longer needed.

use std::collections::BTreeSet;
use std::sync::Mutex;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU8, Ordering::SeqCst};
use loom::thread;

/// Runs the model: a reader loads `x`; a checker loads `x`, then sets it.
/// Returns every `(reader saw, checker saw)` loom produced.
fn reader_and_checker(load: fn(&AtomicU8) -> u8) -> BTreeSet<(u8, u8)> {
    let seen = std::sync::Arc::new(Mutex::new(BTreeSet::new()));
    let record = std::sync::Arc::clone(&seen);
    loom::model(move || {
        let x = Arc::new(AtomicU8::new(0));
        let reader = {
            let x = Arc::clone(&x);
            thread::spawn(move || load(&x))
        };
        let checker = {
            let x = Arc::clone(&x);
            thread::spawn(move || {
                let saw = load(&x);
                x.fetch_or(1, SeqCst);
                saw
            })
        };
        let outcome = (reader.join().unwrap(), checker.join().unwrap());
        record.lock().unwrap().insert(outcome);
    });
    seen.lock().unwrap().clone()
}

/// With plain loads loom never lets the reader see the checker's write.
#[test]
fn loom_never_orders_a_plain_load_after_a_checked_write() {
    let seen = reader_and_checker(|x| x.load(SeqCst));
    assert_eq!(
        seen,
        BTreeSet::from([(0, 0)]),
        "loom now explores the reader seeing the write: see this file's doc"
    );
}

/// With the load as a read-modify-write (what `sync::Mirror` does under
/// loom) loom tries both orders of the reader and the write.
#[test]
fn loom_orders_a_read_modify_write_load_both_ways() {
    let seen = reader_and_checker(|x| x.fetch_or(0, SeqCst));
    assert_eq!(seen, BTreeSet::from([(0, 0), (1, 0)]));
}
