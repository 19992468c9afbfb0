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

/// (h) An arrival stores no wake-up: `Delivered`, but the permit is gone.
fn arrival_without_wake_up(l: &mut L, e: Event) -> Outcome {
    match step(l, e) {
        Outcome::Arrived(Arrival::Delivered) => {
            let _ = l.take_permit();
            Outcome::Arrived(Arrival::Delivered)
        }
        other => other,
    }
}

/// The three ledger variants of issue 6.
pub const VARIANTS: [Variant; 3] = [
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
        bug: "an arrival stores no wake-up",
        step: arrival_without_wake_up,
        caught_by: "D6 an arrival is never lost: after Delivered the wake-up is stored",
    },
];

/// The ledger variant called `name`.
pub fn by_name(name: &str) -> Option<StepFn> {
    VARIANTS.iter().find(|v| v.name == name).map(|v| v.step)
}
