//! `ledger_table`: operation sequences applied to the ledger core
//! ([`core::step`](baton::ledger::core::step)), every answer compared with
//! the ghost reference and D1–D6 checked after every operation.
//!
//! The inputs, [`Ops`] of [`Op`]s, are in `ledger_ops.rs` (re-exported
//! here). Children are numbered; the harness keeps the books D3 needs:
//! every child it made is in the ledger, ended by the harness (when the
//! ledger hands it back to be ended), or taken after its outcome arrived —
//! never lost, never in two places.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

pub use super::ledger_ghost::{Adopted, Row, Seen};
pub use super::ledger_ops::{BoundPick, IdPick, MAX_OPS, Op, Ops, Task, TokenPick, WaitOp};

use super::ledger_ghost::Ghost;
use super::{Rejected, Violation};
use baton::ledger::core::{
    Adoption, Arrival, Child, Counts, Event, Ledger, Outcome, ScopeToken, Taken,
};

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
