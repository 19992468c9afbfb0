//! [`SqliteLog`](super::SqliteLog)'s write lock, by construction: a test
//! holds one connection's write between its read and its write (the
//! `inside` hook) while another's runs; and setting up one fresh file from
//! many connections at once.

use super::tests::{TempDb, owner};
use super::*;
use crate::durable::tests::{pause, source};
use crate::durable::{Decision, reconcile};

/// Runs `held` on a thread whose claim or append is stopped inside its write
/// transaction (after its reads, before its writes: `inside`), and while it
/// is there runs `other` on another thread and connection. Returns both
/// results and whether `other` finished while `held` was inside — which a
/// store without a read-then-write window never lets happen: `other` waits
/// for the write lock `held` holds. `other` is given half a second to show
/// a defect (in the defect's case it needs milliseconds); the verdict of a
/// correct store does not depend on that wait.
pub(super) fn with_one_inside<A: Send, B: Send>(
    held: impl FnOnce() -> A + Send,
    other: impl FnOnce() -> B + Send,
) -> (A, B, bool) {
    use std::sync::mpsc;
    use std::time::Duration;
    let (inside_tx, inside_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::scope(|scope| {
        let held = scope.spawn(move || {
            inside::on_this_thread(move || {
                let _ = inside_tx.send(());
                let _ = go_rx.recv_timeout(Duration::from_secs(10));
            });
            held()
        });
        inside_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the held operation reaches the inside of its transaction");
        let other = scope.spawn(move || {
            let result = other();
            let _ = done_tx.send(());
            result
        });
        let finished_inside = done_rx.recv_timeout(Duration::from_millis(500)).is_ok();
        let _ = go_tx.send(());
        (held.join().unwrap(), other.join().unwrap(), finished_inside)
    })
}

/// R6 / R1, by construction: a claim on another connection cannot run
/// between a claim's read of the epoch and its write — it waits, then
/// issues the next epoch.
#[test]
fn a_claim_cannot_come_between_another_claims_read_and_write() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let (held, other, finished_inside) = with_one_inside(
        || first.claim("root", "run").unwrap(),
        || second.claim("root", "run").unwrap(),
    );
    assert!(
        !finished_inside,
        "R6: a claim ran inside another claim's read-then-write window"
    );
    assert_eq!(
        (held, other),
        (Claim::Owner(Epoch::new(1)), Claim::Owner(Epoch::new(2))),
        "R6: each epoch issued once, in order"
    );
}

/// R1 / R6, by construction: an append on another connection cannot run
/// between an append's read of the Run and its write: exactly one of two
/// different pauses under the same epoch is written, the other refused.
#[test]
fn an_append_cannot_come_between_another_appends_read_and_write() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&first);
    let (held, other, finished_inside) = with_one_inside(
        || first.append("root", &source(), epoch, &pause("a")),
        || second.append("root", &source(), epoch, &pause("b")),
    );
    assert!(
        !finished_inside,
        "R1: an append ran inside another append's read-then-write window"
    );
    assert!(matches!(held, Ok(Receipt::Written)), "{held:?}");
    assert!(
        matches!(other, Err(LogError::AlreadyHandedOff { .. })),
        "{other:?}"
    );
    assert_eq!(
        reconcile(&first.facts("root", "run").unwrap()),
        Ok(Decision::HandedOff(pause("a")))
    );
}

/// A claim cannot come between an append's read and its write either (R1:
/// no epoch is issued once a pause is durable; the claim waits and then
/// answers the handoff).
#[test]
fn a_claim_cannot_come_between_an_appends_read_and_write() {
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&first);
    let (held, other, finished_inside) = with_one_inside(
        || first.append("root", &source(), epoch, &pause("a")),
        || second.claim("root", "run").unwrap(),
    );
    assert!(
        !finished_inside,
        "R1: a claim ran inside an append's window"
    );
    assert!(matches!(held, Ok(Receipt::Written)), "{held:?}");
    assert_eq!(other, Claim::HandedOff(pause("a")), "R1");
}

/// Several processes starting at once open one fresh file: each open
/// waits for the others (up to the busy timeout) instead of failing with
/// "database is locked" while another sets the WAL journal or creates the
/// schema. Found by the contract suite, where four connections opened one
/// file at once and one in about forty runs failed.
#[test]
fn connections_opening_one_fresh_file_at_once_all_open() {
    const CONNECTIONS: usize = 8;
    for _ in 0..40 {
        let db = TempDb::new();
        let barrier = std::sync::Barrier::new(CONNECTIONS);
        let opened = std::thread::scope(|scope| {
            let opens: Vec<_> = (0..CONNECTIONS)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        SqliteLog::<u32>::open(&db.0).map(drop)
                    })
                })
                .collect();
            opens
                .into_iter()
                .map(|open| open.join().unwrap())
                .collect::<Vec<_>>()
        });
        for open in opened {
            open.unwrap();
        }
    }
}

/// `facts` is one snapshot (issue 37), by construction: held between its
/// read of the epoch and its read of the pause, another connection claims
/// the Run (epoch 2) and hands it off under that epoch — and commits, as a
/// reader never blocks a writer in WAL. The held read still answers the
/// facts of its first read (epoch 1, no pause), never epoch 1 with the
/// pause of epoch 2, which were never true together.
#[test]
fn the_facts_are_one_snapshot_even_when_a_writer_commits_between_the_reads() {
    use std::sync::mpsc;
    use std::time::Duration;
    let db = TempDb::new();
    let first: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let second: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(owner(&first), Epoch::new(1));
    let (between_tx, between_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let read = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            inside::between_reads_on_this_thread(move || {
                let _ = between_tx.send(());
                let _ = go_rx.recv_timeout(Duration::from_secs(10));
            });
            first.facts("root", "run").unwrap()
        });
        between_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the read stops between its two reads");
        let epoch = owner(&second);
        assert_eq!(epoch, Epoch::new(2));
        assert_eq!(
            second
                .append("root", &source(), epoch, &pause("h"))
                .unwrap(),
            Receipt::Written,
            "the writer commits while the read is open"
        );
        let _ = go_tx.send(());
        reader.join().unwrap()
    });
    assert_eq!(
        (read.epoch, read.pauses.len()),
        (Epoch::new(1), 0),
        "one snapshot: the facts as they were at the first read"
    );
    let now = first.facts("root", "run").unwrap();
    assert_eq!((now.epoch, now.pauses.len()), (Epoch::new(2), 1));
}
