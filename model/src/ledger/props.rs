//! SPEC §2's properties over the ledger system: D1–D6 as invariants on
//! states and transitions, the answers SPEC §2 gives each operation, and D6
//! as liveness. Names start with the SPEC id they check.
//!
//! The ghost ([`Held`], `given`, `owed`, `handed`, `finished`, `World::ended`)
//! records what SPEC §2 promises from what the actors were told; the
//! properties compare it with what the real ledger's public queries answer
//! ([`super::Seen`]). In a predicate, a `_ => true` arm means "not a
//! situation this property is about".

use baton::ledger::core::{Adoption, Arrival, Counts, RegisterError, Waited};

use super::LedgerModel;
use super::state::{Act, Held, LStep, LSys, Outcome, Setup, index};
use crate::explore::{Check, Property};

type M = LedgerModel;

fn always(name: &'static str, check: fn(&M, &LSys) -> bool) -> Property<M> {
    Property {
        name,
        check: Check::Always(check),
    }
}

fn step(name: &'static str, check: fn(&M, &LSys, &LStep, &LSys) -> bool) -> Property<M> {
    Property {
        name,
        check: Check::AlwaysStep(check),
    }
}

/// The children the ledger holds, one bit each.
pub fn held_children(m: &M, s: &LSys) -> u8 {
    m.seen(s)
        .entries
        .iter()
        .filter_map(|e| e.and_then(|e| e.child))
        .fold(0, |acc, c| acc | c.bit())
}

/// A register answer, by kind.
fn register_kind(r: &Result<(), RegisterError>) -> &'static str {
    match r {
        Ok(()) => "Ok",
        Err(RegisterError::InvalidId(_)) => "InvalidId",
        Err(RegisterError::NoTaskInScope) => "NoTaskInScope",
        Err(RegisterError::OtherTask { .. }) => "OtherTask",
        Err(RegisterError::DuplicateId) => "DuplicateId",
        // `RegisterError` is `#[non_exhaustive]`: a new refusal is a new
        // answer this property expects nowhere.
        Err(_) => "new",
    }
}

/// Every property of the ledger system, in report order.
pub fn properties() -> Vec<Property<M>> {
    vec![
        step("D1 each delegation's outcome is Delivered at most once", |_, a, t, _| match (t.act, t.outcome.as_deref()) {
            (Act::Arrive(d), Some(Outcome::Arrived(Arrival::Delivered))) => a.ids[d as usize] == Held::Outstanding,
            _ => true,
        }),
        step("D1 arrive answers: Delivered once, then AlreadyDelivered (also once taken), NotOutstanding, BeingEnded", |m, a, t, _| {
            match (t.act, t.outcome.as_deref()) {
                (Act::Arrive(d), Some(Outcome::Arrived(got))) => {
                    let ending = m.seen(a).entries[d as usize]
                        .and_then(|e| e.child)
                        .is_some_and(|c| a.world.being_ended & c.bit() != 0);
                    let expected = match a.ids[d as usize] {
                        Held::Gone => Arrival::NotOutstanding,
                        Held::Outstanding if ending => Arrival::BeingEnded,
                        Held::Outstanding => Arrival::Delivered,
                        Held::Arrived | Held::Taken => Arrival::AlreadyDelivered,
                    };
                    *got == expected
                }
                _ => true,
            }
        }),
        always("D2 only the scoped task's delegations are kept", |m, s| {
            let seen = m.seen(s);
            match seen.scope {
                Some((task, _)) => seen.live_tasks & !(1 << task) == 0,
                None => seen.live == 0,
            }
        }),
        step("D2 register: only for the task in scope, never over a live or delivered id; a refusal changes nothing", |m, a, t, b| {
            let expected = match t.act {
                Act::Register(d, task) => match m.seen(a).scope {
                    None => "NoTaskInScope",
                    Some((scoped, _)) if scoped != task => "OtherTask",
                    Some(_) if a.ids[d as usize] != Held::Gone => "DuplicateId",
                    Some(_) => "Ok",
                },
                Act::RegisterInvalid => "InvalidId",
                _ => return true,
            };
            match t.outcome.as_deref() {
                Some(Outcome::Registered(r)) => register_kind(r) == expected && (r.is_ok() || a.ledger == b.ledger),
                _ => false,
            }
        }),
        always("D3 no child is leaked: every adopted child is in the ledger, ended, or arrived and taken", |m, s| {
            s.handed & !(held_children(m, s) | s.world.ended | s.finished) == 0
        }),
        step("D3 adopt keeps the child of a live id; a replaced or refused child comes back", |m, a, t, _| {
            match (t.act, t.outcome.as_deref()) {
                (Act::Adopt(d), Some(Outcome::Adopted(adoption))) => match (m.seen(a).entries[d as usize], adoption) {
                    (None, Adoption::NotLive(_)) => true,
                    (Some(e), Adoption::Adopted) => e.child.is_none(),
                    (Some(e), Adoption::Replaced(old)) => e.child == Some(*old),
                    (None, Adoption::Adopted | Adoption::Replaced(_)) | (Some(_), Adoption::NotLive(_)) => false,
                },
                _ => true,
            }
        }),
        always("D4 counts() equals the entries' states, and the entries are those registered and not taken", |m, s| {
            let seen = m.seen(s);
            let per_id = (0..m.setup.ids).all(|d| match (s.ids[d as usize], seen.entries[d as usize]) {
                (Held::Outstanding, Some(e)) => !e.arrived,
                (Held::Arrived, Some(e)) => e.arrived,
                (Held::Gone | Held::Taken, None) => true,
                (Held::Outstanding | Held::Arrived, None) | (Held::Gone | Held::Taken, Some(_)) => false,
            });
            let outstanding = seen.ids_where(|e| !e.arrived).len();
            let arrived = seen.ids_where(|e| e.arrived).len();
            per_id && seen.counts == Counts { outstanding, arrived } && seen.live == outstanding + arrived
        }),
        always("D5 with no task in scope the ledger is empty", |m, s| {
            let seen = m.seen(s);
            seen.scope.is_some() || seen.empty()
        }),
        step("D5 after a scope ends the ledger is empty; every entry was handed back", |m, a, t, b| {
            let left = match (t.act, t.outcome.as_deref()) {
                (Act::ScopeTask, Some(Outcome::Scoped(_, left))) => left,
                (Act::DropScope(_), Some(Outcome::ScopeEnded(Some(left)))) => left,
                _ => return true,
            };
            let handed_back: Vec<u8> = left.iter().map(|t| index(&t.id)).collect();
            m.seen(b).empty() && handed_back == m.seen(a).ids_where(|_| true)
        }),
        step("D5 a scope has identity: dropping an older scope changes nothing", |m, a, t, b| {
            match (t.act, t.outcome.as_deref()) {
                (Act::DropScope(token), Some(Outcome::ScopeEnded(left))) => match m.seen(a).scope {
                    Some((_, current)) if current == token => left.is_some(),
                    Some(_) | None => left.is_none() && a.ledger == b.ledger,
                },
                _ => true,
            }
        }),
        step("D6 an arrival is never lost: after Delivered a pending wait without a wake-up is given one, else the permit is stored", |m, a, t, b| {
            match (t.act, t.outcome.as_deref()) {
                (Act::Arrive(_), Some(Outcome::Arrived(Arrival::Delivered))) => {
                    let (before, after) = (m.seen(a), m.seen(b));
                    let (pending, given) = before.waits;
                    if given < pending {
                        after.waits == (pending, given + 1) && after.permit == before.permit
                    } else {
                        after.waits == before.waits && after.permit
                    }
                }
                _ => true,
            }
        }),
        always("D6 the wake-ups given to pending waits and the stored permit are those SPEC §2 owes", |m, s| {
            let seen = m.seen(s);
            seen.waits == (usize::from(Setup::pending(s)), usize::from(s.given)) && seen.permit == s.owed
        }),
        step("D6 a wait resolves only with a wake-up: the permit at its first poll, one given to the pending waits later", |_, a, t, _| {
            let resolved = matches!(t.outcome.as_deref(), Some(Outcome::Waited(Waited::Resolved)));
            match t.act {
                Act::StartWait(_) => resolved == a.owed,
                Act::PollWait(_) => resolved == (a.given > 0),
                _ => true,
            }
        }),
        step("D6 a dropped wait consumes nothing it was not given and loses no wake-up (but one merged into the stored permit)", |m, a, t, b| {
            if !matches!(t.act, Act::DropWait(_)) {
                return true;
            }
            let (before, after) = (m.seen(a), m.seen(b));
            let held = |waits: (usize, usize), permit: bool| waits.1 + usize::from(permit);
            let (then, now) = (held(before.waits, before.permit), held(after.waits, after.permit));
            let merged = before.permit && before.waits.1 == before.waits.0;
            after.waits.0 + 1 == before.waits.0 && (now == then || (merged && now + 1 == then))
        }),
        step("take_* take exactly what SPEC §2 says, in id order, as they were", |m, a, t, b| {
            let Some(Outcome::Took(taken)) = t.outcome.as_deref() else {
                return true;
            };
            let (before, after) = (m.seen(a), m.seen(b));
            let bound = m.setup.bound;
            let expected = match t.act {
                Act::TakeArrived => before.ids_where(|e| e.arrived),
                Act::TakeOverdue => before.ids_where(|e| !e.arrived && e.started + bound <= a.now),
                Act::TakeAll => before.ids_where(|_| true),
                Act::Discard(d) => before.ids_where(|_| true).into_iter().filter(|id| *id == d).collect(),
                _ => return true,
            };
            let got: Vec<u8> = taken.iter().map(|t| index(&t.id)).collect();
            got == expected
                && taken.iter().all(|t| {
                    let d = index(&t.id) as usize;
                    before.entries[d].is_some_and(|e| e.is(t)) && after.entries[d].is_none()
                })
        }),
        always("next_overdue is the earliest start not arrived plus the bound", |m, s| {
            let seen = m.seen(s);
            let earliest = seen.entries.iter().flatten().filter(|e| !e.arrived).map(|e| e.started).min();
            seen.next_overdue == earliest.map(|started| started + m.setup.bound)
        }),
        Property {
            name: "D6 a wait that stays pending while a wake-up is given resolves",
            check: Check::Eventually(|_, s: &LSys| if s.given > 0 { u64::from(s.waiting) } else { 0 }),
        },
    ]
    .into_iter()
    .chain(super::coverage::coverage())
    .collect()
}
