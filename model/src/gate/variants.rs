//! Deliberately broken variants of the gate's `step`, each a thin wrapper
//! that rewrites an event or an outcome of the **real** step in one cell of
//! the table. The self-tests assert that the checker catches every one with
//! a shortest trace; a checker that caught none would prove nothing.

use baton::gate::core::{Config, Event, Outcome, State, step};

use super::codec::StepFn;

/// A broken variant and the property expected to catch it.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Its name (also the regression file's stem).
    pub name: &'static str,
    /// What is broken.
    pub bug: &'static str,
    /// The step function.
    pub step: StepFn,
    /// The property that must report it.
    pub caught_by: &'static str,
}

/// (a) `Cancel` ignores its ticket: a stale drop releases a newer
/// reservation.
fn cancel_ignores_ticket(c: &Config, s: &State<u8>, e: Event<u8>) -> Outcome<u8> {
    match (e, s) {
        (Event::Cancel(_), State::Requested { ticket, .. } | State::Held { ticket, .. }) => {
            step(c, s, Event::Cancel(*ticket))
        }
        (e, _) => step(c, s, e),
    }
}

/// (b) `Close` overrides `Sealed`.
fn close_overrides_sealed(c: &Config, s: &State<u8>, e: Event<u8>) -> Outcome<u8> {
    match (e, s) {
        (Event::Close, State::Sealed { .. }) => Outcome::Moved(State::Closed),
        (e, _) => step(c, s, e),
    }
}

/// (c) `Commit` ignores the cancel bit.
fn commit_ignores_cancel(c: &Config, s: &State<u8>, e: Event<u8>) -> Outcome<u8> {
    match e {
        Event::Commit { ticket, .. } => step(
            c,
            s,
            Event::Commit {
                ticket,
                canceled: false,
            },
        ),
        e => step(c, s, e),
    }
}

/// (d) A failed preflight re-requests (stays `Requested`) instead of
/// releasing: the worker observes and fails forever, a livelock.
fn failed_preflight_rerequests(c: &Config, s: &State<u8>, e: Event<u8>) -> Outcome<u8> {
    match (e, s) {
        (
            Event::Preflight {
                ticket,
                pause: None,
                ..
            },
            State::Requested { ticket: live, .. },
        ) if ticket == *live => Outcome::Moved(s.clone()),
        (e, _) => step(c, s, e),
    }
}

/// (e) `Seal` accepts a different pause (and seals that one).
fn seal_accepts_any_pause(c: &Config, s: &State<u8>, e: Event<u8>) -> Outcome<u8> {
    match (e, s) {
        (Event::Seal(offered), State::Committed { ticket, pause }) if offered != *pause => {
            Outcome::Moved(State::Sealed {
                ticket: *ticket,
                pause: offered,
            })
        }
        (e, _) => step(c, s, e),
    }
}

/// The five variants (a)–(e) of issue 3.
pub const VARIANTS: [Variant; 5] = [
    Variant {
        name: "a_cancel_ignores_ticket",
        bug: "Cancel ignores its ticket: a stale drop releases a newer reservation",
        step: cancel_ignores_ticket,
        caught_by: "S2 stale tickets are inert",
    },
    Variant {
        name: "b_close_overrides_sealed",
        bug: "Close overrides Sealed",
        step: close_overrides_sealed,
        caught_by: "S6 terminal is terminal: Sealed and Closed absorb every event",
    },
    Variant {
        name: "c_commit_ignores_cancel",
        bug: "Commit ignores the cancel bit",
        step: commit_ignores_cancel,
        caught_by: "S3 commit is earned: only Held{T} + Commit(T) with the cancel bit clear",
    },
    Variant {
        name: "d_failed_preflight_rerequests",
        bug: "a failed preflight re-requests instead of releasing (livelock)",
        step: failed_preflight_rerequests,
        caught_by: "L2 a reservation is eventually held, released or closed",
    },
    Variant {
        name: "e_seal_accepts_any_pause",
        bug: "Seal accepts a different pause",
        step: seal_accepts_any_pause,
        caught_by: "S5 no forged seal: Sealed only from Committed by Seal(identical pause)",
    },
];

/// The variant called `name`, or the real step for `"real"`.
pub fn by_name(name: &str) -> Option<StepFn> {
    if name == "real" {
        return Some(step::<u8>);
    }
    VARIANTS.iter().find(|v| v.name == name).map(|v| v.step)
}
