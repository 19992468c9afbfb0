//! Building the handoff system's properties, shared by SPEC §1's
//! (`props`), the durable ones (`durable::props`) and coverage: a
//! `sometimes` property, and predicates on a step.

use super::GateModel;
use super::codec::{Out, Refusal};
use super::state::{Step, Sys};
use crate::explore::{Check, Property};

type M = GateModel;

/// A `sometimes` property: `check` must hold on some reachable step.
pub(crate) fn sometimes(
    name: &'static str,
    check: fn(&M, &Sys, &Step, &Sys) -> bool,
) -> Property<M> {
    Property {
        name,
        check: Check::Sometimes(check),
    }
}

/// Whether `t` moved the gate to a state of `kind`.
pub(crate) fn moved_to(t: &Step, kind: &str) -> bool {
    matches!(t.outcome, Some(Out::Moved(g)) if g.kind() == kind)
}

/// Whether `t` was refused with `refusal`.
pub(crate) fn refused(t: &Step, refusal: Refusal) -> bool {
    t.outcome == Some(Out::Refused(refusal))
}
