//! The handoff system around the gate core (SPEC §1): K requesters, the
//! worker, a closer, cancellation and a sender of bad input, each a small
//! program whose every step is one core event or one waiter query, with
//! drops of every handle at every point (SPEC's cancel-safety table).
//!
//! **Fairness** (weak, per class) — what must keep moving:
//! - the worker (class [`WORKER`]): it observes a request at its next
//!   boundary, finishes preflight, wakes when its boundary is decided, reacts
//!   to cancellation while held, and after a commit seals or exits;
//! - each requester `r` (class `r`) for its own running code: it wakes when
//!   `ready()`/`wait()` is decided, and holding a handoff it commits or drops
//!   it (and drops it after a refused commit);
//! - in particular a worker whose `boundary` future was dropped after the
//!   commit merely keeps reaching boundaries: the next one finds the commit
//!   (`core::begin`) and returns the committed pause, which it then seals or
//!   exits on. No actor is assumed to exit on its own (L3).
//!
//! With [`Setup::durable`] on, the worker's end is [`super::durable`]'s:
//! append and seal (in the configured order) or crash at any point, then
//! the restart (class [`RESTART`]) reconciles once the worker is gone.
//!
//! Never forced (may happen at any time, or never): reserving, dropping a
//! waiting future or a `PendingSeal`, dropping the worker's `boundary`
//! future, forged seals, bad input, cancellation, and the closer — unless
//! [`Setup::fair_closer`] makes it fair, which excuses every livelock.

use super::codec::{Answer, Begun, Core, Ev, Gate, Out, Query, Refusal};
pub use super::state::*;
use crate::explore::{Fairness, Successor};

type Out2 = Vec<Successor<Step, Sys>>;

/// Appends every transition of `s` to `out`.
pub fn successors(setup: &Setup, core: &Core, s: &Sys, out: &mut Out2) {
    let k = setup.requesters;
    let feed = |act: Act, ev: Ev| {
        let outcome = core.step(s.gate, ev);
        let gate = match outcome {
            Out::Moved(g) => g,
            Out::Ignored | Out::Refused(_) => s.gate,
        };
        (
            Step {
                act,
                event: Some(ev),
                outcome: Some(outcome),
            },
            Sys { gate, ..*s },
        )
    };
    let quiet = |act: Act| {
        (
            Step {
                act,
                event: None,
                outcome: None,
            },
            *s,
        )
    };
    let mut push = |(action, next): (Step, Sys), fairness| {
        out.push(Successor {
            action,
            next,
            fairness,
        })
    };
    for r in 0..k {
        let me = s.req[r as usize];
        let fair = Fairness::Fair(r);
        let with = |(step, mut next): (Step, Sys), phase: Phase, tries: u8| {
            next.req[r as usize] = Requester { phase, tries };
            (step, next)
        };
        match me.phase {
            Phase::Idle if me.tries > 0 => {
                let (step, next) = feed(Act::Reserve(r), Ev::Reserve { intent: r });
                // As the adapter: a new ticket is a reservation; `Busy` (the
                // one retryable refusal) leaves it idle; any other refusal
                // is final.
                let (phase, tries) = match (step.outcome, next.gate.ticket()) {
                    (Some(Out::Moved(_)), Some(ticket)) => {
                        (Phase::Waiting { ticket }, me.tries - 1)
                    }
                    (Some(Out::Moved(_)), None)
                    | (Some(Out::Ignored | Out::Refused(Refusal::Busy)), _) => {
                        (Phase::Idle, me.tries)
                    }
                    (Some(Out::Refused(_)) | None, _) => (Phase::Done { sealed: false }, me.tries),
                };
                push(with((step, next), phase, tries), Fairness::Optional);
            }
            Phase::Idle | Phase::Done { .. } => {}
            Phase::Waiting { ticket } => {
                match core.wait(Query::Ready, s.gate, ticket) {
                    Answer::Pending => {}
                    Answer::Resolved(pause) => push(
                        with(
                            quiet(Act::ReadyWakes(r)),
                            Phase::Holding { ticket, pause },
                            me.tries,
                        ),
                        fair,
                    ),
                    Answer::Gone => {
                        push(with(quiet(Act::ReadyWakes(r)), Phase::Idle, me.tries), fair)
                    }
                }
                let dropped = feed(Act::DropReservation(r), Ev::Cancel { ticket });
                push(with(dropped, Phase::Idle, me.tries), Fairness::Optional);
            }
            Phase::Holding { ticket, pause } => {
                let (step, next) = feed(
                    Act::Commit(r),
                    Ev::Commit {
                        ticket,
                        canceled: s.canceled,
                    },
                );
                // As the adapter: a refused commit drops the held handoff.
                let phase = match step.outcome {
                    Some(Out::Moved(_)) => Phase::Sealing { ticket, pause },
                    Some(Out::Ignored | Out::Refused(_)) | None => Phase::Releasing { ticket },
                };
                push(with((step, next), phase, me.tries), fair);
                push(
                    with(
                        feed(Act::DropHeld(r), Ev::Cancel { ticket }),
                        Phase::Idle,
                        me.tries,
                    ),
                    fair,
                );
            }
            Phase::Releasing { ticket } => {
                push(
                    with(
                        feed(Act::DropHeld(r), Ev::Cancel { ticket }),
                        Phase::Idle,
                        me.tries,
                    ),
                    fair,
                );
            }
            Phase::Sealing { ticket, .. } => {
                let sealed = match core.wait(Query::Seal, s.gate, ticket) {
                    Answer::Pending => None,
                    Answer::Resolved(_) => Some(true),
                    Answer::Gone => Some(false),
                };
                if let Some(sealed) = sealed {
                    push(
                        with(quiet(Act::SealWakes(r)), Phase::Done { sealed }, me.tries),
                        fair,
                    );
                }
                let dropped = with(
                    quiet(Act::DropPendingSeal(r)),
                    Phase::Done { sealed: false },
                    me.tries,
                );
                push(dropped, Fairness::Optional);
            }
        }
    }
    worker(setup, s, core, &feed, &mut push);
    if setup.durable.is_on() {
        super::durable::crash_and_restart(core, s, &feed, &mut push);
    }
    if s.closer {
        let (step, mut next) = feed(Act::Close, Ev::Close);
        next.closer = false;
        push(
            (step, next),
            if setup.fair_closer {
                Fairness::Fair(CLOSER)
            } else {
                Fairness::Optional
            },
        );
    }
    if setup.cancellation && !s.canceled {
        let (step, mut next) = quiet(Act::Cancel);
        next.canceled = true;
        push((step, next), Fairness::Optional);
    }
    if setup.bad_input {
        push(
            feed(Act::ReserveMalformed, Ev::Reserve { intent: 2 * k }),
            Fairness::Optional,
        );
        push(
            feed(Act::ReserveOtherRun, Ev::Reserve { intent: 2 * k + 1 }),
            Fairness::Optional,
        );
    }
}

/// The worker's transitions.
fn worker(
    setup: &Setup,
    s: &Sys,
    core: &Core,
    feed: &dyn Fn(Act, Ev) -> (Step, Sys),
    push: &mut dyn FnMut((Step, Sys), Fairness),
) {
    let k = setup.requesters;
    let fair = Fairness::Fair(WORKER);
    let at = |(step, mut next): (Step, Sys), w: Worker| {
        next.worker = w;
        (step, next)
    };
    match s.worker {
        Worker::Running => {
            // A step boundary: what `boundary` does before any await.
            let (act, w) = match core.begin(s.gate) {
                Begun::Nothing => return,
                Begun::Requested { ticket, intent } => {
                    (Act::Observe, Worker::Preflight { ticket, intent })
                }
                Begun::Committed { pause } => (Act::BoundaryFindsCommit, Worker::Sealing { pause }),
            };
            let step = Step {
                act,
                event: None,
                outcome: None,
            };
            push(at((step, *s), w), fair);
        }
        Worker::Preflight { ticket, intent } => {
            let mismatched = match intent {
                i if i < k => i + k,
                i if i < 2 * k => i - k,
                i => i,
            };
            for (act, pause) in [
                (Act::PreflightOk, Some(pause::prepared(intent))),
                (Act::PreflightFails, None),
                (Act::PreflightMismatched, Some(pause::prepared(mismatched))),
            ] {
                let (step, next) = feed(
                    act,
                    Ev::Preflight {
                        ticket,
                        pause,
                        canceled: s.canceled,
                    },
                );
                // As the adapter: it waits only if its own ticket is now held.
                let held = matches!(next.gate, Gate::Held { ticket: t, .. } if t == ticket);
                let w = match pause {
                    Some(pause) if held => Worker::Awaiting { ticket, pause },
                    Some(_) | None => Worker::Running,
                };
                push(at((step, next), w), fair);
            }
            push(
                at(
                    feed(Act::DropBoundary, Ev::Cancel { ticket }),
                    Worker::Running,
                ),
                Fairness::Optional,
            );
        }
        Worker::Awaiting { ticket, .. } => {
            let decided = |gate: Gate| match core.wait(Query::Boundary, gate, ticket) {
                Answer::Pending => None,
                Answer::Resolved(pause) => Some(Worker::Sealing { pause }),
                Answer::Gone => Some(Worker::Running),
            };
            match decided(s.gate) {
                Some(w) => {
                    let step = Step {
                        act: Act::BoundaryWakes,
                        event: None,
                        outcome: None,
                    };
                    push(at((step, *s), w), fair);
                }
                None if s.canceled => {
                    let (step, next) = feed(Act::BoundaryCanceled, Ev::Cancel { ticket });
                    let w = decided(next.gate).unwrap_or(Worker::Running);
                    push(at((step, next), w), fair);
                }
                None => {}
            }
            push(
                at(
                    feed(Act::DropBoundary, Ev::Cancel { ticket }),
                    Worker::Running,
                ),
                Fairness::Optional,
            );
        }
        Worker::Sealing { .. }
        | Worker::Checked { .. }
        | Worker::Appended { .. }
        | Worker::SealedUnappended { .. }
        | Worker::Exiting
            if setup.durable.is_on() =>
        {
            super::durable::worker(setup.durable, s, feed, push);
        }
        Worker::Sealing { pause } => {
            push(at(feed(Act::Seal, Ev::Seal { pause }), Worker::Done), fair);
            push(at(feed(Act::WorkerExits, Ev::Close), Worker::Done), fair);
            let forged = feed(
                Act::SealForged,
                Ev::Seal {
                    pause: pause::forged(pause),
                },
            );
            push(at(forged, Worker::Sealing { pause }), Fairness::Optional);
        }
        // Only durable configurations reach these (handled above).
        Worker::Checked { .. }
        | Worker::Appended { .. }
        | Worker::SealedUnappended { .. }
        | Worker::Exiting => {}
        Worker::Done => {}
    }
}
