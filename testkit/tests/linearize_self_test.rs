//! The kit's linearizability search checked on histories it must refuse
//! (issue 37), so a user's verification built on it cannot pass hollow:
//! real-time order between calls, at its edge (equal times overlap), and
//! across an operation of several steps that spans other calls — the shape
//! of the gate's `boundary`. The sequential specification is a toy
//! register whose `Swap` reads, then writes, in two atomic steps, so each
//! verdict can be worked out by hand.
#![cfg(not(loom))]

use baton_testkit::linearize::{Call, Spec, linearize};

/// A register of one number.
struct Register;

/// An operation with what it was observed to return.
#[derive(Debug)]
enum Op {
    /// Writes the value (one step).
    Write(u8),
    /// Read the value (one step).
    Read(u8),
    /// Read `seen` (first step), then wrote `new` (second step).
    Swap { seen: u8, new: u8 },
}

impl Spec for Register {
    type State = u8;
    type Op = Op;
    /// Steps taken.
    type Pc = u8;

    fn start(&self, _: &Op) -> u8 {
        0
    }

    fn is_done(&self, op: &Op, pc: &u8) -> bool {
        *pc == match op {
            Op::Write(_) | Op::Read(_) => 1,
            Op::Swap { .. } => 2,
        }
    }

    fn steps(&self, op: &Op, pc: &u8, state: &u8) -> Vec<(u8, u8)> {
        match (op, pc) {
            (Op::Write(value), 0) => vec![(1, *value)],
            (Op::Read(value), 0) if value == state => vec![(1, *state)],
            (Op::Swap { seen, .. }, 0) if seen == state => vec![(1, *state)],
            (Op::Swap { new, .. }, 1) => vec![(2, *new)],
            _ => Vec::new(),
        }
    }
}

fn call(invoked: u64, returned: u64, op: Op) -> Call<Op> {
    Call {
        invoked,
        returned,
        op,
    }
}

fn explained(history: &[Call<Op>]) -> bool {
    linearize(&Register, 0, history).is_some()
}

/// Real-time order: a write that returned before another was invoked takes
/// effect first, so a later read cannot see the older value.
#[test]
fn a_read_after_two_sequential_writes_must_see_the_second() {
    let ordered = [
        call(0, 1, Op::Write(1)),
        call(2, 3, Op::Write(2)),
        call(4, 5, Op::Read(2)),
    ];
    assert!(explained(&ordered));
    let stale = [
        call(0, 1, Op::Write(1)),
        call(2, 3, Op::Write(2)),
        call(4, 5, Op::Read(1)),
    ];
    assert!(
        !explained(&stale),
        "a stale read after both writes returned"
    );
    // Overlapping writes may take effect in either order.
    let overlapping = [
        call(0, 3, Op::Write(1)),
        call(1, 2, Op::Write(2)),
        call(4, 5, Op::Read(1)),
    ];
    assert!(explained(&overlapping));
}

/// The edge of real-time order: `a.returned < b.invoked` orders them, equal
/// times do not (one logical clock: the two were in flight together).
#[test]
fn equal_times_overlap_and_only_a_strictly_earlier_return_orders() {
    let touching = [call(0, 2, Op::Read(1)), call(2, 3, Op::Write(1))];
    assert!(explained(&touching), "the write may come first");
    let ordered = [call(0, 1, Op::Read(1)), call(2, 3, Op::Write(1))];
    assert!(
        !explained(&ordered),
        "the read returned before the write began"
    );
}

/// An operation of two steps that spans other calls: each of its steps
/// falls anywhere within it, between the others' steps, but in its own
/// order; what the calls inside it observed must fit one placement.
#[test]
fn a_multi_step_operation_spanning_other_calls_fits_one_placement_or_none() {
    // Swap reads 0, Write(1) lands, Swap writes 5, then both reads see 5.
    let fits = [
        call(0, 10, Op::Swap { seen: 0, new: 5 }),
        call(2, 3, Op::Write(1)),
        call(4, 5, Op::Read(5)),
        call(6, 7, Op::Read(5)),
    ];
    assert_eq!(
        linearize(&Register, 0, &fits),
        Some(vec![0, 1, 0, 2, 3]),
        "the swap's read, the write, the swap's write, the reads"
    );
    // Read(5) then Read(1), both before the swap returned: the swap's write
    // lands once, so after 5 nothing can bring 1 back.
    let refused = [
        call(0, 10, Op::Swap { seen: 0, new: 5 }),
        call(2, 3, Op::Write(1)),
        call(4, 5, Op::Read(5)),
        call(6, 7, Op::Read(1)),
    ];
    assert!(!explained(&refused));
    // The swap's two steps are in its order: it cannot write 5 and then
    // read 0 after a write of 1 that precedes its read.
    let backwards = [
        call(0, 1, Op::Write(1)),
        call(2, 9, Op::Swap { seen: 0, new: 5 }),
    ];
    assert!(!explained(&backwards), "the swap began after 1 was written");
}

/// Real-time order across a multi-step operation: once it returned, every
/// one of its steps precedes a call invoked after that, and a call that
/// returned before it began precedes all of its steps.
#[test]
fn a_multi_step_operation_is_ordered_against_calls_before_and_after_it() {
    let after = [
        call(0, 3, Op::Swap { seen: 0, new: 5 }),
        call(4, 5, Op::Read(0)),
    ];
    assert!(!explained(&after), "the read began after the swap returned");
    let before = [
        call(0, 1, Op::Write(7)),
        call(2, 5, Op::Swap { seen: 0, new: 5 }),
    ];
    assert!(!explained(&before), "the swap began after 7 was written");
    let within = [
        call(0, 5, Op::Swap { seen: 0, new: 5 }),
        call(1, 2, Op::Read(0)),
        call(3, 4, Op::Read(5)),
    ];
    assert!(explained(&within), "reads inside the swap see either side");
}
