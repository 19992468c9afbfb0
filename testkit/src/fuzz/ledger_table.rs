//! `ledger_table`: operation sequences applied to the ledger core
//! ([`core::step`](baton::ledger::core::step)), every answer compared with
//! the ghost reference and D1–D6 checked after every operation.
//!
//! An [`Op`] names ids from a small set (`d0`…`d7`) so that short random
//! inputs register, adopt, arrive and take the same delegations, plus
//! invalid ids for the typed errors. Children are numbered; the harness
//! keeps the books D3 needs: every child it made is in the ledger, ended by
//! the harness (when the ledger hands it back to be ended), or taken after
//! its outcome arrived — never lost, never in two places.
//!
//! Kept whole, past 600 lines: the harness's books and its step are one
//! state machine, checked against the ghost step by step.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};

pub use super::ledger_ghost::{Adopted, Row, Seen};

use super::ledger_ghost::Ghost;
use super::{Rejected, Violation};
use baton::facts::MAX_ID_BYTES;
use baton::ledger::core::{
    Adoption, Arrival, Child, Counts, Event, Ledger, Outcome, ScopeToken, Taken,
};

/// The most operations one input may hold; longer inputs are rejected.
pub const MAX_OPS: usize = 64;

/// A fuzz input: the operations, in order. Decoding stops after
/// `MAX_OPS + 1` operations: the input is rejected anyway.
#[derive(Clone)]
pub struct Ops(pub Vec<Op>);

impl<'a> Arbitrary<'a> for Ops {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Ops(u.arbitrary()?))
    }

    fn arbitrary_take_rest(u: Unstructured<'a>) -> arbitrary::Result<Self> {
        super::take_ops(u, MAX_OPS).map(Ops)
    }
}

/// A task, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Arbitrary)]
pub enum Task {
    /// `"A"`
    A,
    /// `"B"`
    B,
}

impl Task {
    fn name(self) -> &'static str {
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
    fn id(&self) -> String {
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
    fn bound(self) -> Duration {
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

/// A child: a number, and the harness's record of which children are
/// being ended (shared by every child of one run).
#[derive(Debug)]
pub struct Kid {
    number: u32,
    ending: Rc<RefCell<BTreeSet<u32>>>,
}

impl Child for Kid {
    fn begin_ending(&self) {
        self.ending.borrow_mut().insert(self.number);
    }

    fn is_being_ended(&self) -> bool {
        self.ending.borrow().contains(&self.number)
    }
}

type Core = Ledger<u32, Kid, Duration>;

/// The ledger, the ghost, the clock and the books on children.
struct Harness {
    ledger: Core,
    ghost: Ghost,
    now: Duration,
    /// The next registration's serial number (the entry's data).
    serial: u32,
    /// The task each registration was made for, by serial.
    tasks: Vec<&'static str>,
    /// Children made so far (numbered 0..).
    children: u32,
    /// Children being ended, by the harness or by someone else.
    ending: Rc<RefCell<BTreeSet<u32>>>,
    /// Children the ledger handed back and the harness ended.
    ended: BTreeSet<u32>,
    /// Children taken with their arrived entry (they finish on their own).
    finished: BTreeSet<u32>,
    /// Registrations whose outcome was `Delivered` (D1).
    delivered: BTreeSet<u32>,
}

impl Harness {
    /// A harness whose ledger keeps its indexes past `keep_above` entries.
    fn new(keep_above: usize) -> Self {
        Harness {
            ledger: Ledger::keeping_indexes_above(keep_above),
            ghost: Ghost::default(),
            now: Duration::ZERO,
            serial: 0,
            tasks: Vec::new(),
            children: 0,
            ending: Rc::default(),
            ended: BTreeSet::new(),
            finished: BTreeSet::new(),
            delivered: BTreeSet::new(),
        }
    }

    /// The ledger's answer and the ghost's to `op`, the ledger's turned
    /// into rows (its children handed back are ended, D3's books kept).
    fn apply(&mut self, op: &Op) -> (Seen, Seen) {
        let event = match op {
            Op::ScopeTask(task) => {
                let expected = self.ghost.scope_task(task.name());
                (Event::ScopeTask(task.name().to_owned()), expected)
            }
            Op::EndScope(pick) => {
                let last = self.ghost.issued.saturating_sub(1);
                let token = match *pick {
                    TokenPick::Last => last,
                    TokenPick::Before(n) => last.saturating_sub(u64::from(n) + 1),
                    TokenPick::After(n) => last.saturating_add(u64::from(n) + 1),
                };
                let expected = self.ghost.end_scope(token);
                (Event::EndScope(ScopeToken::new(token)), expected)
            }
            Op::Register { id, task } => {
                let id = id.id();
                let task = match task {
                    Some(task) => task.name(),
                    None => match &self.ghost.scope {
                        Some((scoped, _)) if scoped == "B" => "B",
                        _ => "A",
                    },
                };
                let serial = self.serial;
                self.serial += 1;
                self.tasks.push(task);
                let expected = self.ghost.register(&id, task, serial, self.now);
                let event = Event::Register {
                    id,
                    task: task.to_owned(),
                    data: serial,
                    started: self.now,
                };
                (event, expected)
            }
            Op::Adopt(id) => {
                let id = id.id();
                let number = self.children;
                self.children += 1;
                let expected = self.ghost.adopt(&id, number);
                let child = Kid {
                    number,
                    ending: Rc::clone(&self.ending),
                };
                (Event::Adopt { id, child }, expected)
            }
            Op::Discard(id) => {
                let id = id.id();
                let expected = self.ghost.discard(&id);
                (Event::Discard(id), expected)
            }
            Op::Arrive(id) => {
                let id = id.id();
                let ending = self.ending.borrow().clone();
                let expected = self.ghost.arrive(&id, |child| ending.contains(&child));
                (Event::Arrive(id), expected)
            }
            Op::EndChild(id) => {
                if let Some(child) = self.ledger.entry(&id.id()).and_then(|e| e.child.as_ref()) {
                    child.begin_ending();
                }
                return (Seen::Ticked, Seen::Ticked);
            }
            Op::Wait(WaitOp::Begin) => (Event::BeginWait, self.ghost.begin_wait()),
            Op::Wait(WaitOp::Poll(pick)) => (Event::PollWait, self.ghost.poll_wait(*pick)),
            Op::Wait(WaitOp::Drop(pick)) => (Event::DropWait, self.ghost.drop_wait(*pick)),
            Op::TakeArrived => (Event::TakeArrived, self.ghost.take_arrived()),
            Op::TakeOverdue(bound) => {
                let (bound, now) = (bound.bound(), self.now);
                let expected = self.ghost.take_overdue(bound, now);
                (Event::TakeOverdue { bound, now }, expected)
            }
            Op::NextOverdue(bound) => {
                let seen = Seen::Next(self.ledger.next_overdue(bound.bound()));
                return (seen, self.ghost.next_overdue(bound.bound()));
            }
            Op::TakeAll => (Event::TakeAll, self.ghost.take_all()),
            Op::Tick(seconds) => {
                self.now += Duration::from_secs((*seconds).into());
                return (Seen::Ticked, Seen::Ticked);
            }
        };
        let (event, expected) = event;
        let outcome = baton::ledger::core::step(&mut self.ledger, event);
        (self.seen(outcome), expected)
    }

    /// The outcome as rows; every child it hands back is ended (or, with an
    /// arrived entry, finishes on its own).
    fn seen(&mut self, outcome: Outcome<u32, Kid, Duration>) -> Seen {
        match outcome {
            Outcome::Scoped(token, left) => Seen::Scoped(token.get(), self.rows(left)),
            Outcome::ScopeRefused(error) => Seen::ScopeRefused(error),
            Outcome::ScopeEnded(left) => Seen::ScopeEnded(left.map(|left| self.rows(left))),
            Outcome::Registered(result) => Seen::Registered(result),
            Outcome::Adopted(adoption) => Seen::Adopted(match adoption {
                Adoption::Adopted => Adopted::Adopted,
                Adoption::Replaced(child) => Adopted::Replaced(self.end(child)),
                Adoption::NotLive(child) => Adopted::NotLive(self.end(child)),
            }),
            Outcome::Arrived(arrival) => Seen::Arrived(arrival),
            Outcome::Waited(waited) => Seen::Waited(waited),
            Outcome::Took(taken) => Seen::Took(self.rows(taken)),
        }
    }

    /// Ends `child` as a caller must, and books it.
    fn end(&mut self, child: Kid) -> u32 {
        child.begin_ending();
        self.ended.insert(child.number);
        child.number
    }

    fn rows(&mut self, taken: Vec<Taken<u32, Kid, Duration>>) -> Vec<Row> {
        taken
            .into_iter()
            .map(|taken| {
                let to_end = taken.child_to_end().is_some();
                let row = Row {
                    id: taken.id.to_string(),
                    serial: *taken.entry.data,
                    started: taken.entry.started,
                    arrived: taken.entry.arrived,
                    child: taken.entry.child.as_ref().map(|child| child.number),
                };
                if let Some(child) = taken.entry.child {
                    if to_end {
                        self.end(child);
                    } else {
                        self.finished.insert(child.number);
                    }
                }
                row
            })
            .collect()
    }

    /// The ledger's live entries as rows, in id order.
    fn entries(&self) -> Vec<Row> {
        self.ledger
            .live()
            .iter()
            .filter_map(|(id, data)| {
                let entry = self.ledger.entry(id)?;
                Some(Row {
                    id: id.to_string(),
                    serial: **data,
                    started: entry.started,
                    arrived: entry.arrived,
                    child: entry.child.as_ref().map(|child| child.number),
                })
            })
            .collect()
    }

    /// Checks the step `op` took: the answer against the ghost's, then
    /// D1–D6 on the ledger it left.
    fn check(&mut self, op: &Op, seen: &Seen, expected: &Seen) -> Result<(), Violation> {
        let rule = match op {
            Op::Wait(_) => "D6 (waits)",
            Op::Register { .. } => "D2 (register)",
            Op::ScopeTask(_) | Op::EndScope(_) => "D5 (scope end)",
            Op::Arrive(_) => "D1 (arrive)",
            Op::Adopt(_) => "D3 (adopt)",
            Op::NextOverdue(_) => "SPEC §2 (next_overdue)",
            Op::Discard(_) | Op::TakeArrived | Op::TakeOverdue(_) | Op::TakeAll => {
                "SPEC §2 (take: which rows, in id order)"
            }
            _ => "SPEC §2 (the ghost's answer)",
        };
        ensure!(
            seen == expected,
            rule,
            "the ledger answered {seen:?}, the ghost {expected:?}"
        );

        if let Seen::Arrived(Arrival::Delivered) = seen {
            let serial = self.entries_serial(op);
            ensure!(
                serial.is_some_and(|serial| self.delivered.insert(serial)),
                "D1",
                "registration {serial:?} was delivered twice (or is not live)"
            );
        }

        let rows = self.entries();
        let mut ghost_rows = self.ghost.rows.clone();
        ghost_rows.sort_by(|a, b| a.id.cmp(&b.id));
        ensure!(
            rows == ghost_rows,
            "SPEC §2 (entries)",
            "ledger {rows:?}, ghost {ghost_rows:?}"
        );
        // `entries()` lists what `live()` lists that has an entry: nothing
        // may be left out.
        let listed = self.ledger.live().len();
        ensure!(
            listed == rows.len(),
            "SPEC §2 (live)",
            "live() lists {listed} delegations, {} are live",
            rows.len()
        );

        let scope = self
            .ledger
            .scope()
            .map(|(task, token)| (task.to_owned(), token.get()));
        ensure!(
            scope == self.ghost.scope,
            "D2",
            "scope {scope:?}, ghost {:?}",
            self.ghost.scope
        );
        if let Some(row) = rows.iter().find(|row| {
            scope
                .as_ref()
                .is_none_or(|(task, _)| self.tasks.get(row.serial as usize) != Some(&task.as_str()))
        }) {
            ensure!(
                false,
                "D2",
                "{row:?} is kept but its task is not in scope {scope:?}"
            );
        }

        let arrived = rows.iter().filter(|row| row.arrived).count();
        let counts = self.ledger.counts();
        ensure!(
            counts
                == Counts {
                    outstanding: rows.len() - arrived,
                    arrived,
                }
                && counts == self.ghost.counts(),
            "D4",
            "counts() = {counts:?} over the entries {rows:?} (ghost {:?})",
            self.ghost.counts()
        );

        if matches!(seen, Seen::Scoped(..) | Seen::ScopeEnded(Some(_))) {
            ensure!(
                rows.is_empty() && self.ledger.delivered_len() == 0,
                "D5",
                "after the scope ended: entries {rows:?}, {} delivered ids kept",
                self.ledger.delivered_len()
            );
        }
        ensure!(
            self.ledger.delivered_len() == self.ghost.delivered.len(),
            "SPEC §2 (delivered memory)",
            "{} ids remembered, ghost {:?}",
            self.ledger.delivered_len(),
            self.ghost.delivered
        );

        let (waits, permit) = (self.ledger.waits(), self.ledger.permit());
        ensure!(
            waits == self.ghost.waits() && permit == self.ghost.permit,
            "D6",
            "waits (pending, given) {waits:?} and permit {permit}, ghost {:?} and {}",
            self.ghost.waits(),
            self.ghost.permit
        );
        ensure!(
            waits.1 <= waits.0 && (!permit || waits.1 == waits.0),
            "D6",
            "{} wake-ups given to {} pending waits with permit {permit}",
            waits.1,
            waits.0
        );

        let in_ledger: BTreeSet<u32> = rows.iter().filter_map(|row| row.child).collect();
        for child in 0..self.children {
            let places = usize::from(in_ledger.contains(&child))
                + usize::from(self.ended.contains(&child))
                + usize::from(self.finished.contains(&child));
            ensure!(
                places == 1,
                "D3",
                "child {child} is in {places} places (ledger {}, ended {}, finished {})",
                in_ledger.contains(&child),
                self.ended.contains(&child),
                self.finished.contains(&child)
            );
        }
        Ok(())
    }

    /// The serial of the entry `op` arrived at.
    fn entries_serial(&self, op: &Op) -> Option<u32> {
        let Op::Arrive(id) = op else { return None };
        self.ledger.entry(&id.id()).map(|entry| *entry.data)
    }
}

/// The `ledger_table` target: applies `input` to the ledger core, comparing
/// every answer with the ghost's and checking D1–D6 after every operation.
/// Panics on a violation, with the trace of the steps before it.
pub fn ledger_table(input: Ops) -> Result<(), Rejected> {
    if input.0.len() > MAX_OPS {
        return Err(Rejected);
    }
    let mut harness = Harness::new(keep_above(&input));
    for (index, op) in input.0.iter().enumerate() {
        let (seen, expected) = harness.apply(op);
        if let Err(violation) = harness.check(op, &seen, &expected) {
            fail(&violation, &input, index);
        }
    }
    Ok(())
}

/// Where the ledger under test starts keeping its indexes: 0…4 entries,
/// chosen by the input's length, so that inputs over the eight ids check
/// the ledger both scanning its entries and keeping its indexes, and its
/// switches between the two (the default, 32, is out of their reach).
fn keep_above(input: &Ops) -> usize {
    input.0.len() % 5
}

#[cold]
#[inline(never)]
fn fail(violation: &Violation, input: &Ops, index: usize) -> ! {
    let mut lines = String::new();
    walk(input, index + 1, &mut |step, op, seen| {
        lines.push_str(&format!("  {step:>3}: Op::{op:?} -> {seen:?}\n"));
    });
    panic!("{violation}\n  at op {index}\ntrace:\n{lines}{input:#?}");
}

/// Calls `visit` with each step of `input` (its index, the operation and
/// the ledger's answer), up to `steps` steps, without checking anything: a
/// failure trace, a corpus's coverage.
pub fn walk(input: &Ops, steps: usize, visit: &mut dyn FnMut(usize, &Op, &Seen)) {
    let mut harness = Harness::new(keep_above(input));
    for (index, op) in input.0.iter().take(steps).enumerate() {
        let (seen, _) = harness.apply(op);
        visit(index, op, &seen);
    }
}

/// Prints as the Rust expression that rebuilds the input, one op a line.
impl fmt::Debug for Ops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::write_ops(f, "Op", &self.0)
    }
}
