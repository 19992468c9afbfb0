//! Deliberately broken variants of the ledger's `step`, each a thin wrapper
//! that rewrites one answer of the **real** step. The self-tests assert
//! that the checker catches every one with a shortest trace.

use baton::ledger::core::{Arrival, step};

use super::StepFn;
use super::state::{Event, L, Outcome};

/// A broken variant and the property expected to catch it.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Its name.
    pub name: &'static str,
    /// What is broken.
    pub bug: &'static str,
    /// The step function.
    pub step: StepFn,
    /// The property that must report it.
    pub caught_by: &'static str,
}

/// (f) Double delivery: an arrival for an entry that already arrived (and
/// is still live) is `Delivered` again.
fn double_delivery(l: &mut L, e: Event) -> Outcome {
    match e {
        Event::Arrive(id) => match step(l, Event::Arrive(id.clone())) {
            Outcome::Arrived(Arrival::AlreadyDelivered) if l.entry(&id).is_some() => {
                Outcome::Arrived(Arrival::Delivered)
            }
            other => other,
        },
        e => step(l, e),
    }
}

/// (g) A scope drop forgets to end the children it hands back (it keeps
/// their entries but loses the children).
fn scope_drop_forgets_children(l: &mut L, e: Event) -> Outcome {
    match step(l, e) {
        Outcome::ScopeEnded(Some(left)) => Outcome::ScopeEnded(Some(
            left.into_iter()
                .map(|mut taken| {
                    taken.entry.child = None;
                    taken
                })
                .collect(),
        )),
        other => other,
    }
}

/// Takes back the wake-up the arrival that just left `l` gave, with the
/// real wait events only: a wake-up given to a pending wait is taken by a
/// poll and the wait begun again; a permit stored is taken by a first poll.
fn take_back(l: &mut L, given_before: usize, permit_before: bool) {
    if l.waits().1 > given_before {
        let _ = l.poll_wait();
        let _ = l.begin_wait();
    } else if l.permit() && !permit_before {
        let _ = l.begin_wait();
    }
}

/// (h) An arrival wakes nobody: `Delivered`, but its wake-up is gone.
fn arrival_without_wake_up(l: &mut L, e: Event) -> Outcome {
    let (given, permit) = (l.waits().1, l.permit());
    match step(l, e) {
        Outcome::Arrived(Arrival::Delivered) => {
            take_back(l, given, permit);
            Outcome::Arrived(Arrival::Delivered)
        }
        other => other,
    }
}

/// (o) The old coalescing rule where only `notify_one` differs from it
/// (issue 22): an arrival while a pending wait already holds a wake-up
/// gives no wake-up to another pending wait, so two arrivals wake only one
/// of two pending waits. (Elsewhere it keeps the real rule, so the checker
/// must find two pending waits to catch it.)
fn coalescing_wakes_one_of_two(l: &mut L, e: Event) -> Outcome {
    let (permit, (pending, given)) = (l.permit(), l.waits());
    match step(l, e) {
        Outcome::Arrived(Arrival::Delivered) => {
            if given > 0 && given < pending {
                take_back(l, given, permit);
            }
            Outcome::Arrived(Arrival::Delivered)
        }
        other => other,
    }
}

/// (v) A registration ignores its task: the real rule asked as if the
/// task were the one in scope, so a delegation of another task is kept.
fn register_ignoring_the_task(l: &mut L, e: Event) -> Outcome {
    match e {
        Event::Register {
            id,
            task,
            data,
            started,
        } => {
            let task = l.scope().map_or(task, |(scoped, _)| scoped.to_owned());
            step(
                l,
                Event::Register {
                    id,
                    task,
                    data,
                    started,
                },
            )
        }
        e => step(l, e),
    }
}

/// (w) An older scope's end empties the ledger: a stale token, which the
/// real rule ignores, takes every entry of the scope in force.
fn older_scope_end_empties_the_ledger(l: &mut L, e: Event) -> Outcome {
    match step(l, e) {
        Outcome::ScopeEnded(None) => Outcome::ScopeEnded(Some(l.take_all())),
        other => other,
    }
}

/// The ledger variants of issues 6, 22 and 61.
pub const VARIANTS: [Variant; 6] = [
    Variant {
        name: "f_double_delivery",
        bug: "an arrival for an entry already arrived is Delivered again",
        step: double_delivery,
        caught_by: "D1 each delegation's outcome is Delivered at most once",
    },
    Variant {
        name: "g_scope_drop_forgets_children",
        bug: "a scope drop does not hand back the children it must end",
        step: scope_drop_forgets_children,
        caught_by: "D3 no child is leaked: every adopted child is in the ledger, ended, or arrived and taken",
    },
    Variant {
        name: "h_arrival_without_wake_up",
        bug: "an arrival wakes nobody and stores no wake-up",
        step: arrival_without_wake_up,
        caught_by: D6_ARRIVAL,
    },
    Variant {
        name: "o_coalescing_wakes_one_of_two",
        bug: "an arrival while a pending wait holds a wake-up wakes no other: two arrivals wake one of two pending waits",
        step: coalescing_wakes_one_of_two,
        caught_by: D6_ARRIVAL,
    },
    Variant {
        name: "v_register_ignores_the_task",
        bug: "a registration for another task than the one in scope is kept",
        step: register_ignoring_the_task,
        caught_by: "D2 register: only for the task in scope, never over a live or delivered id; a refusal changes nothing",
    },
    Variant {
        name: "w_older_scope_end_empties_the_ledger",
        bug: "ending an older scope (a stale token) takes every entry of the scope in force",
        step: older_scope_end_empties_the_ledger,
        caught_by: "D5 a scope has identity: dropping an older scope changes nothing",
    },
];

/// The property that catches an arrival's lost wake-up.
const D6_ARRIVAL: &str = "D6 an arrival is never lost: after Delivered a pending wait without a wake-up is given one, else the permit is stored";

/// The ledger variant called `name`.
pub fn by_name(name: &str) -> Option<StepFn> {
    VARIANTS.iter().find(|v| v.name == name).map(|v| v.step)
}
