//! `sometimes` properties: each interesting situation of the handoff system
//! is really reached, so no invariant of [`super::props`] passes vacuously.

use super::GateModel;
use super::codec::{Ev, Out, Refusal};
use super::predicate::{moved_to, refused, sometimes};
use super::state::{Act, Phase};
use crate::explore::Property;

/// The coverage properties, in report order.
pub fn coverage() -> Vec<Property<GateModel>> {
    vec![
        sometimes("reached: Held", |_, _, t, _| moved_to(t, "Held")),
        sometimes("reached: Committed", |_, _, t, _| moved_to(t, "Committed")),
        sometimes("reached: Sealed", |_, _, t, _| moved_to(t, "Sealed")),
        sometimes("reached: Closed", |_, _, t, _| moved_to(t, "Closed")),
        sometimes(
            "reached: a requester is told its handoff is sealed",
            |_, _, t, b| matches!(t.act, Act::SealWakes(r) if b.req[r as usize].phase == Phase::Done { sealed: true }),
        ),
        sometimes(
            "reached: a committed requester is told the gate closed",
            |_, _, t, b| matches!(t.act, Act::SealWakes(r) if b.req[r as usize].phase == Phase::Done { sealed: false }),
        ),
        sometimes(
            "reached: a second reservation after a release",
            |_, _, t, _| {
                matches!(t.event, Some(Ev::Reserve { .. }))
                    && matches!(t.outcome, Some(Out::Moved(g)) if g.ticket() > Some(0))
            },
        ),
        sometimes(
            "reached: a boundary after a lost committed boundary returns the committed pause",
            |_, _, t, _| t.act == Act::BoundaryFindsCommit,
        ),
        sometimes("released: preflight failed", |_, _, t, _| {
            t.act == Act::PreflightFails && moved_to(t, "Running")
        }),
        sometimes(
            "released: preflight prepared a mismatched pause",
            |_, _, t, _| t.act == Act::PreflightMismatched && moved_to(t, "Running"),
        ),
        sometimes(
            "released: canceled before preflight finished",
            |_, _, t, _| t.act == Act::PreflightOk && moved_to(t, "Running"),
        ),
        sometimes("released: reservation dropped", |_, _, t, _| {
            matches!(t.act, Act::DropReservation(_)) && moved_to(t, "Running")
        }),
        sometimes("released: held handoff dropped", |_, _, t, _| {
            matches!(t.act, Act::DropHeld(_)) && moved_to(t, "Running")
        }),
        sometimes("released: cancellation while held", |_, _, t, _| {
            t.act == Act::BoundaryCanceled && moved_to(t, "Running")
        }),
        sometimes("released: boundary future dropped", |_, _, t, _| {
            t.act == Act::DropBoundary && moved_to(t, "Running")
        }),
        sometimes("ignored: a stale ticket", |_, a, t, _| {
            matches!(t.event.and_then(Ev::ticket), Some(x) if a.gate.ticket().is_some_and(|live| live != x))
                && matches!(t.outcome, Some(Out::Ignored | Out::Refused(_)))
        }),
        sometimes("ignored: a forged seal", |_, _, t, _| {
            t.act == Act::SealForged && t.outcome == Some(Out::Ignored)
        }),
        sometimes("refused: Busy", |_, _, t, _| refused(t, Refusal::Busy)),
        sometimes("refused: HandedOff", |_, _, t, _| {
            refused(t, Refusal::HandedOff)
        }),
        sometimes("refused: Closed", |_, _, t, _| refused(t, Refusal::Closed)),
        sometimes("refused: commit while canceled", |_, _, t, _| {
            refused(t, Refusal::Canceled)
        }),
        sometimes("refused: commit after release", |_, _, t, _| {
            refused(t, Refusal::NotHeld)
        }),
        sometimes("refused: bad input", |_, _, t, _| {
            refused(t, Refusal::InvalidInput)
        }),
    ]
}
