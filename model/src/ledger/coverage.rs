//! `sometimes` properties: each interesting situation of the ledger system
//! is really reached, so no invariant of [`super::props`] passes vacuously.

use baton::ledger::core::{Adoption, Arrival, RegisterError, Waited};

use super::LedgerModel;
use super::state::{Act, LStep, LSys, Outcome};
use crate::explore::{Check, Property};

type M = LedgerModel;

fn sometimes(name: &'static str, check: fn(&M, &LSys, &LStep, &LSys) -> bool) -> Property<M> {
    Property {
        name,
        check: Check::Sometimes(check),
    }
}

fn arrived(t: &LStep, arrival: Arrival) -> bool {
    matches!(t.outcome.as_deref(), Some(Outcome::Arrived(a)) if *a == arrival)
}

fn refused(t: &LStep, check: fn(&RegisterError) -> bool) -> bool {
    matches!(t.outcome.as_deref(), Some(Outcome::Registered(Err(e))) if check(e))
}

/// A child the ledger's owner had not ended before is ended by this step.
fn ends_a_child(a: &LSys, b: &LSys) -> bool {
    b.world.ended & !a.world.ended != 0
}

/// The coverage properties, in report order.
pub fn coverage() -> Vec<Property<M>> {
    vec![
        sometimes("reached: Delivered", |_, _, t, _| {
            arrived(t, Arrival::Delivered)
        }),
        sometimes(
            "reached: AlreadyDelivered while the entry is live",
            |m, a, t, _| {
                arrived(t, Arrival::AlreadyDelivered)
                    && matches!(t.act, Act::Arrive(d) if m.seen(a).entries[d as usize].is_some())
            },
        ),
        sometimes(
            "reached: AlreadyDelivered after the entry was taken",
            |m, a, t, _| {
                arrived(t, Arrival::AlreadyDelivered)
                    && matches!(t.act, Act::Arrive(d) if m.seen(a).entries[d as usize].is_none())
            },
        ),
        sometimes("reached: NotOutstanding", |_, _, t, _| {
            arrived(t, Arrival::NotOutstanding)
        }),
        sometimes(
            "refused: BeingEnded (a child ended elsewhere)",
            |_, _, t, _| arrived(t, Arrival::BeingEnded),
        ),
        sometimes(
            "reached: arrivals coalesce into one stored wake-up",
            |_, a, t, _| arrived(t, Arrival::Delivered) && a.owed,
        ),
        sometimes(
            "reached: two arrivals wake two pending waits",
            |_, a, t, b| arrived(t, Arrival::Delivered) && a.given == 1 && b.given == 2,
        ),
        sometimes(
            "reached: a wait takes the stored permit at once",
            |_, _, t, _| {
                matches!(t.act, Act::StartWait(_))
                    && matches!(
                        t.outcome.as_deref(),
                        Some(Outcome::Waited(Waited::Resolved))
                    )
            },
        ),
        sometimes(
            "reached: a pending wait resolves after a delivery",
            |_, _, t, _| {
                matches!(t.act, Act::PollWait(_))
                    && matches!(
                        t.outcome.as_deref(),
                        Some(Outcome::Waited(Waited::Resolved))
                    )
            },
        ),
        sometimes(
            "reached: a wait finds no wake-up and keeps waiting",
            |_, _, t, _| {
                matches!(t.act, Act::PollWait(_))
                    && matches!(t.outcome.as_deref(), Some(Outcome::Waited(Waited::Pending)))
            },
        ),
        sometimes(
            "reached: a woken wait dropped passes its wake-up on to another pending wait",
            |_, _, t, _| {
                matches!(
                    t.outcome.as_deref(),
                    Some(Outcome::Waited(Waited::DroppedWakeOthers))
                )
            },
        ),
        sometimes(
            "reached: a woken wait dropped passes its wake-up on to the stored permit",
            |_, _, t, _| {
                matches!(
                    t.outcome.as_deref(),
                    Some(Outcome::Waited(Waited::PassedOn))
                )
            },
        ),
        sometimes(
            "reached: an owed wake-up ends with its scope",
            |_, a, t, b| matches!(t.act, Act::ScopeTask | Act::DropScope(_)) && a.owed && !b.owed,
        ),
        sometimes(
            "taken: an overdue delegation, its child ended",
            |_, a, t, b| {
                t.act == Act::TakeOverdue
                    && matches!(t.outcome.as_deref(), Some(Outcome::Took(x)) if !x.is_empty())
                    && ends_a_child(a, b)
            },
        ),
        sometimes("kept: a delegation not overdue yet", |m, a, t, b| {
            t.act == Act::TakeOverdue && m.seen(b).counts.outstanding > 0 && a.ledger == b.ledger
        }),
        sometimes(
            "taken: arrived delegations, remembered as delivered",
            |m, _, t, b| {
                t.act == Act::TakeArrived
                    && matches!(t.outcome.as_deref(), Some(Outcome::Took(x)) if !x.is_empty())
                    && m.seen(b).delivered > 0
            },
        ),
        sometimes(
            "taken: all, an arrived and an outstanding one",
            |_, _, t, _| {
                t.act == Act::TakeAll
                    && matches!(t.outcome.as_deref(), Some(Outcome::Took(x)) if x.iter().any(|t| t.entry.arrived) && x.iter().any(|t| !t.entry.arrived))
            },
        ),
        sometimes(
            "taken: a discarded delegation, its child ended",
            |_, a, t, b| matches!(t.act, Act::Discard(_)) && ends_a_child(a, b),
        ),
        sometimes("ended: a child at a scope change", |_, a, t, b| {
            t.act == Act::ScopeTask && ends_a_child(a, b)
        }),
        sometimes("ended: a child at a scope drop", |_, a, t, b| {
            matches!(t.act, Act::DropScope(_)) && ends_a_child(a, b)
        }),
        sometimes("ended: a child replaced by adopt", |_, _, t, _| {
            matches!(
                t.outcome.as_deref(),
                Some(Outcome::Adopted(Adoption::Replaced(_)))
            )
        }),
        sometimes("ended: a child adopted for an id not live", |_, _, t, _| {
            matches!(
                t.outcome.as_deref(),
                Some(Outcome::Adopted(Adoption::NotLive(_)))
            )
        }),
        sometimes("ignored: a stale older scope's drop", |_, _, t, _| {
            matches!(t.outcome.as_deref(), Some(Outcome::ScopeEnded(None)))
        }),
        sometimes("refused: register with no task in scope", |_, _, t, _| {
            refused(t, |e| matches!(e, RegisterError::NoTaskInScope))
        }),
        sometimes("refused: register for another task", |_, _, t, _| {
            refused(t, |e| matches!(e, RegisterError::OtherTask { .. }))
        }),
        sometimes("refused: register over a live id", |m, a, t, _| {
            refused(t, |e| matches!(e, RegisterError::DuplicateId))
                && matches!(t.act, Act::Register(d, _) if m.seen(a).entries[d as usize].is_some())
        }),
        sometimes("refused: register over a delivered id", |m, a, t, _| {
            refused(t, |e| matches!(e, RegisterError::DuplicateId))
                && matches!(t.act, Act::Register(d, _) if m.seen(a).entries[d as usize].is_none())
        }),
        sometimes("refused: register with an invalid id", |_, _, t, _| {
            refused(t, |e| matches!(e, RegisterError::InvalidId(_)))
        }),
    ]
}
