//! proptest strategies for baton's facts and for operation sequences.
//!
//! The fact strategies generate what the wire accepts (SPEC §1): every id is
//! valid for [`baton::facts::check_id`], and [`intent_for`] an intent that
//! [`HandoffIntent::validate_for`] accepts for its source ([`handoff`]: a
//! source and an intent together). To reach the
//! refusals too, mix in [`bad_id`]. Each shrinks towards short ids.
//!
//! [`from_arbitrary`] turns any [`Arbitrary`] type — the fact types under
//! baton's `arbitrary` feature, or the operation sequences of
//! [`crate::fuzz`] — into a strategy, so a fuzz target's input can be a
//! property test's too. [`gate_adapter_op`] is the weighted operation mix
//! baton's own refinement test uses against
//! [`crate::fuzz::gate_adapter::run`].
//!
//! ```
//! use baton_testkit::strategies::{intent_for, invocation};
//! use proptest::prelude::*;
//! use proptest::strategy::ValueTree;
//! use proptest::test_runner::TestRunner;
//!
//! let mut runner = TestRunner::deterministic();
//! let source = invocation().new_tree(&mut runner).unwrap().current();
//! let intent = intent_for(&source, &source.run_id).new_tree(&mut runner).unwrap().current();
//! assert_eq!(intent.validate_for(&source, &source.run_id), Ok(()));
//! ```

use std::fmt::Debug;
use std::sync::Arc;

use arbitrary::Arbitrary;
use baton::facts::{HandoffIntent, HandoffPause, Invocation, MAX_ID_BYTES};
use proptest::prelude::*;

use crate::fuzz::decode;
use crate::fuzz::gate_adapter::{IntentChoice, Op, Preflight, Slot};

/// A valid id: 1 to 24 printable ASCII characters (at most
/// [`MAX_ID_BYTES`] bytes), the ids of most runtimes.
pub fn id() -> impl Strategy<Value = String> + Clone {
    const CHARS: &[char] = &[
        'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'r', 's', 't', 'x', 'y', 'z', '0', '1', '2', '9',
        '-', '.', '_', ':', '/', '#',
    ];
    prop::collection::vec(prop::sample::select(CHARS), 1..=24)
        .prop_map(|chars| chars.into_iter().collect())
}

/// An id [`baton::facts::check_id`] refuses: empty, one byte too long, or
/// holding a control character.
pub fn bad_id() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        Just(String::new()),
        Just("x".repeat(MAX_ID_BYTES + 1)),
        id().prop_map(|id| format!("{id}\n")),
        id().prop_map(|id| format!("\u{7f}{id}")),
    ]
}

/// A source invocation with valid ids.
pub fn invocation() -> impl Strategy<Value = Invocation> + Clone {
    (id(), id(), id(), id()).prop_map(|(session_id, turn_id, run_id, invocation_id)| Invocation {
        session_id,
        turn_id,
        run_id,
        invocation_id,
    })
}

/// An intent that [`HandoffIntent::validate_for`] accepts for `source`
/// under the root Run `root_run_id`: valid ids, and a successor Run and
/// invocation other than the source's.
pub fn intent_for(
    source: &Invocation,
    root_run_id: &str,
) -> impl Strategy<Value = HandoffIntent> + Clone + use<> {
    let source = source.clone();
    let root_run_id = root_run_id.to_owned();
    (id(), id(), id(), id(), id()).prop_map(
        move |(handoff_id, host_epoch, run, invocation, claim_id)| {
            // Prefixed apart from the source's ids, so always a different Run.
            HandoffIntent {
                handoff_id,
                host_epoch,
                root_run_id: root_run_id.clone(),
                successor_run_id: other_than(&source.run_id, run),
                successor_invocation_id: other_than(&source.invocation_id, invocation),
                claim_id,
            }
        },
    )
}

/// A source invocation and an intent for it within its own Run: what a
/// gate made with `HandoffGate::new(source, source.run_id)` accepts.
pub fn handoff() -> impl Strategy<Value = (Invocation, HandoffIntent)> {
    invocation().prop_flat_map(|source| {
        let intent = intent_for(&source, &source.run_id);
        (Just(source), intent)
    })
}

/// `candidate`, or `candidate` with a suffix when it equals `taken`.
fn other_than(taken: &str, candidate: String) -> String {
    if candidate == taken {
        format!("{candidate}-next")
    } else {
        candidate
    }
}

/// A pause for `source` under `root_run_id`: an [`intent_for`] it and an
/// execution from `execution`.
pub fn pause_for<P: Debug>(
    source: &Invocation,
    root_run_id: &str,
    execution: impl Strategy<Value = P>,
) -> impl Strategy<Value = HandoffPause<P>> {
    (intent_for(source, root_run_id), execution)
        .prop_map(|(intent, execution)| HandoffPause::new(Arc::new(intent), execution))
}

/// Any [`Arbitrary`] type as a strategy: bytes (at most `max_bytes`)
/// decoded as `libfuzzer-sys` decodes a fuzz input; bytes that do not
/// decode are drawn again. Shrinking shrinks the bytes.
pub fn from_arbitrary<T>(max_bytes: usize) -> impl Strategy<Value = T>
where
    T: for<'a> Arbitrary<'a> + Debug,
{
    prop::collection::vec(any::<u8>(), 0..=max_bytes)
        .prop_filter_map("the bytes do not decode", |bytes| decode::<T>(&bytes))
}

/// One operation of [`crate::fuzz::gate_adapter::run`], weighted so that
/// sequences commonly reach `Committed` and `Sealed` before a close.
pub fn gate_adapter_op() -> impl Strategy<Value = Op> {
    let slot = (0..Slot::ALL.len()).prop_map(|i| Slot::ALL[i]);
    let intent = prop_oneof![
        6 => Just(IntentChoice::Valid),
        1 => Just(IntentChoice::Invalid),
        1 => Just(IntentChoice::OtherRoot),
    ];
    let preflight = prop_oneof![
        4 => Just(Preflight::Prepared),
        1 => Just(Preflight::Failed),
        1 => Just(Preflight::Mismatched),
        1 => Just(Preflight::Stalls),
    ];
    prop_oneof![
        12 => (slot.clone(), intent).prop_map(|(s, i)| Op::Reserve(s, i)),
        16 => slot.clone().prop_map(Op::PollReady),
        12 => slot.clone().prop_map(Op::Commit),
        8 => slot.clone().prop_map(Op::PollWait),
        4 => slot.prop_map(Op::DropHandle),
        12 => preflight.prop_map(Op::StartBoundary),
        16 => Just(Op::PollBoundary),
        2 => Just(Op::DropBoundary),
        2 => Just(Op::FireCancel),
        8 => any::<bool>().prop_map(|prepared| Op::Seal { prepared }),
        1 => Just(Op::Close),
        1 => Just(Op::DropGate),
    ]
}
