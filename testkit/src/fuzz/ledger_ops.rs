//! The inputs of `ledger_table`: operation sequences on the ledger core,
//! naming ids from a small set (`d0`…`d7`) so that short random inputs
//! register, adopt, arrive and take the same delegations, plus invalid ids
//! for the typed errors.

use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};

use baton::facts::MAX_ID_BYTES;

/// The most operations one input may hold; longer inputs are rejected.
pub const MAX_OPS: usize = 64;

ops_input!();

/// A task, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Task {
    /// `"A"`
    A,
    /// `"B"`
    B,
}

impl Task {
    pub(super) fn name(self) -> &'static str {
        match self {
            Task::A => "A",
            Task::B => "B",
        }
    }
}

/// Which delegation id an operation names.
#[derive(Clone, Debug, PartialEq, Eq, Arbitrary)]
pub enum IdPick {
    /// `d{n % 8}`.
    Small(u8),
    /// Exactly this text (mostly not a valid id).
    Raw(String),
    /// One byte over [`MAX_ID_BYTES`].
    TooLong,
}

impl IdPick {
    pub(super) fn id(&self) -> String {
        match self {
            IdPick::Small(n) => format!("d{}", n % 8),
            IdPick::Raw(text) => text.clone(),
            IdPick::TooLong => "d".repeat(MAX_ID_BYTES + 1),
        }
    }
}

/// Which scope token `EndScope` carries, relative to the last one issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum TokenPick {
    /// The last token issued (stale once its scope ended).
    Last,
    /// `n + 1` before the last one (saturating).
    Before(u8),
    /// `n + 1` after the last one: never issued yet.
    After(u8),
}

/// The bound of `take_overdue` and `next_overdue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum BoundPick {
    /// `n` seconds.
    Secs(u8),
    /// `Duration::MAX`: nothing is ever due.
    Max,
}

impl BoundPick {
    pub(super) fn bound(self) -> Duration {
        match self {
            BoundPick::Secs(n) => Duration::from_secs(n.into()),
            BoundPick::Max => Duration::MAX,
        }
    }
}

/// What a `wait_for_arrival` does, as [`Op::Wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOp {
    /// A new wait's first poll: `begin_wait()`.
    Begin,
    /// Pending wait `n` (modulo their number) polled again: `poll_wait()`.
    Poll(u8),
    /// Pending wait `n` (modulo their number) dropped: `drop_wait()`.
    Drop(u8),
}

impl WaitOp {
    /// The wait op of an [`Op::Wait`] whose variant choice read `raw`: its
    /// low bits, which the choice of variant (its high bits) leaves free.
    fn from_raw(raw: u32) -> Self {
        let pick = ((raw / 3) % 4) as u8;
        match raw % 3 {
            0 => WaitOp::Begin,
            1 => WaitOp::Poll(pick),
            _ => WaitOp::Drop(pick),
        }
    }
}

/// One operation on the ledger (or its clock, or a child).
///
/// Decoded as `derive(Arbitrary)` decoded the 13 variants of an earlier
/// `Op` (whose 8th, `TakePermit`, read no field): the same bytes give the
/// same operations, except that the 8th is now a [`WaitOp`] chosen by the
/// low bits of the variant's `u32`. So the committed corpus decodes as
/// before, its permit polls becoming waits begun, polled and dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `scope_task(task)`.
    ScopeTask(Task),
    /// `end_scope(token)`.
    EndScope(TokenPick),
    /// `register(id, task)` now; `task: None` is the task in scope (`A`
    /// if none).
    Register {
        /// The id.
        id: IdPick,
        /// The delegation's task.
        task: Option<Task>,
    },
    /// `adopt(id, a new child)`.
    Adopt(IdPick),
    /// `discard(id)`.
    Discard(IdPick),
    /// `arrive(id)`.
    Arrive(IdPick),
    /// Someone else begins ending the child of entry `id`, if it has one.
    EndChild(IdPick),
    /// A `wait_for_arrival` begins, is polled, or is dropped.
    Wait(WaitOp),
    /// `take_arrived()`.
    TakeArrived,
    /// `take_overdue(bound, now)`.
    TakeOverdue(BoundPick),
    /// `next_overdue(bound)`.
    NextOverdue(BoundPick),
    /// `take_all()`.
    TakeAll,
    /// The clock moves `n` seconds on.
    Tick(u8),
}

impl<'a> Arbitrary<'a> for Op {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        // `derive(Arbitrary)`'s choice of variant (multiply and shift), kept
        // so that the committed corpus decodes as it did.
        let raw = u32::arbitrary(u)?;
        Ok(match (u64::from(raw) * 13) >> 32 {
            0 => Op::ScopeTask(u.arbitrary()?),
            1 => Op::EndScope(u.arbitrary()?),
            2 => Op::Register {
                id: u.arbitrary()?,
                task: u.arbitrary()?,
            },
            3 => Op::Adopt(u.arbitrary()?),
            4 => Op::Discard(u.arbitrary()?),
            5 => Op::Arrive(u.arbitrary()?),
            6 => Op::EndChild(u.arbitrary()?),
            7 => Op::Wait(WaitOp::from_raw(raw)),
            8 => Op::TakeArrived,
            9 => Op::TakeOverdue(u.arbitrary()?),
            10 => Op::NextOverdue(u.arbitrary()?),
            11 => Op::TakeAll,
            // 12: the shift leaves no other value.
            _ => Op::Tick(u.arbitrary()?),
        })
    }
}
