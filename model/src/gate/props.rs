//! SPEC §1's properties over the handoff system: invariants S1–S9 on
//! states and transitions, coverage (`sometimes`), terminal checks and
//! liveness L1–L3. Names start with the SPEC id they check.
//!
//! The "release leads to Running" half of S8 is progress, not safety: S8
//! checks that a release never leaves a fact, L2 that it eventually happens.
//!
//! In a predicate, a `_ => true` arm means "not a situation this property
//! is about"; every arm that decides something is written out.

use super::GateModel;
use super::codec::{Answer, Ev, Gate, Query, Refusal};
use super::predicate::refused;
use super::state::{Act, Owner, Phase, Step, Sys, WORKER, Worker, pause};
use crate::explore::{Check, Property};

type M = GateModel;

fn requesters(m: &M, s: &Sys) -> impl Iterator<Item = (u8, Phase)> {
    (0..m.setup.requesters).map(|r| (r, s.req[r as usize].phase))
}

/// The requesters holding reservation `ticket` (waiting, holding or
/// releasing).
fn holders(m: &M, s: &Sys, ticket: u8) -> impl Iterator<Item = u8> {
    requesters(m, s)
        .filter(move |(_, p)| {
            matches!(p, Phase::Waiting { ticket: t } | Phase::Holding { ticket: t, .. }
                | Phase::Releasing { ticket: t } if *t == ticket)
        })
        .map(|(r, _)| r)
}

fn pending(m: &M, s: &Sys, query: Query, ticket: u8) -> bool {
    m.core.wait(query, s.gate, ticket) == Answer::Pending
}

fn always(name: &'static str, check: fn(&M, &Sys) -> bool) -> Property<M> {
    Property {
        name,
        check: Check::Always(check),
    }
}

fn step(name: &'static str, check: fn(&M, &Sys, &Step, &Sys) -> bool) -> Property<M> {
    Property {
        name,
        check: Check::AlwaysStep(check),
    }
}

/// Every property of the handoff system, in report order.
pub fn properties() -> Vec<Property<M>> {
    vec![
        always("S1 one at a time: a live ticket has one holder; one handoff at most", |m, s| {
            let live_ok = match s.gate {
                Gate::Requested { ticket, .. } | Gate::Held { ticket, .. } => holders(m, s, ticket).count() == 1,
                Gate::Running { .. } | Gate::Committed { .. } | Gate::Sealed { .. } | Gate::Closed => true,
            };
            let handoffs = requesters(m, s)
                .filter(|(_, p)| matches!(p, Phase::Sealing { .. } | Phase::Done { sealed: true }))
                .count();
            live_ok && handoffs <= 1
        }),
        step("S1 one at a time: reserve only from Running, with a fresh ticket", |_, a, t, b| {
            match (a.gate, b.gate) {
                (Gate::Running { next }, Gate::Requested { ticket, intent }) => {
                    ticket == next && t.event == Some(Ev::Reserve { intent })
                }
                (pre, Gate::Requested { .. }) => pre == b.gate,
                (Gate::Running { next }, Gate::Running { next: n }) => n == next,
                (pre, Gate::Running { next }) => pre.ticket().is_some_and(|t| next > t),
                (_, Gate::Held { .. } | Gate::Committed { .. } | Gate::Sealed { .. } | Gate::Closed) => true,
            }
        }),
        step("S2 stale tickets are inert", |_, a, t, b| match t.event.and_then(Ev::ticket) {
            Some(ticket) if a.gate.ticket() != Some(ticket) => a.gate == b.gate,
            Some(_) | None => true,
        }),
        step("S3 commit is earned: only Held{T} + Commit(T) with the cancel bit clear", |_, a, t, b| {
            match (a.gate, b.gate) {
                (Gate::Committed { .. }, _) | (_, Gate::Running { .. } | Gate::Requested { .. }) => true,
                (_, Gate::Held { .. } | Gate::Sealed { .. } | Gate::Closed) => true,
                (Gate::Held { ticket, pause }, Gate::Committed { ticket: t2, pause: p2 }) => {
                    t.event == Some(Ev::Commit { ticket, canceled: false }) && (ticket, pause) == (t2, p2)
                }
                (_, Gate::Committed { .. }) => false,
            }
        }),
        always("S4 no way back: a committed party only sees Committed, Sealed or Closed", |m, s| {
            let fits = |ticket: Option<u8>, paused: u8| match s.gate {
                Gate::Committed { ticket: t, pause } | Gate::Sealed { ticket: t, pause } => {
                    pause == paused && ticket.is_none_or(|ticket| ticket == t)
                }
                Gate::Closed => true,
                Gate::Running { .. } | Gate::Requested { .. } | Gate::Held { .. } => false,
            };
            let requesters_ok = requesters(m, s).all(|(_, p)| match p {
                Phase::Sealing { ticket, pause } => fits(Some(ticket), pause),
                Phase::Idle | Phase::Waiting { .. } | Phase::Holding { .. } | Phase::Releasing { .. } => true,
                Phase::Done { .. } => true,
            });
            let worker_ok = match s.worker {
                Worker::Sealing { pause }
                | Worker::Checked { pause }
                | Worker::Appended { pause }
                | Worker::SealedUnappended { pause } => {
                    fits(None, pause)
                }
                Worker::Running | Worker::Preflight { .. } | Worker::Awaiting { .. } | Worker::Done | Worker::Exiting => true,
            };
            requesters_ok && worker_ok
        }),
        step("S4 no way back: after Committed only Sealed or Closed", |_, a, _, b| match a.gate {
            Gate::Committed { ticket, pause } => {
                b.gate == a.gate || b.gate == Gate::Sealed { ticket, pause } || b.gate == Gate::Closed
            }
            Gate::Running { .. } | Gate::Requested { .. } | Gate::Held { .. } | Gate::Sealed { .. } | Gate::Closed => true,
        }),
        step("S5 no forged seal: Sealed only from Committed by Seal(identical pause)", |_, a, t, b| {
            let entered = match (a.gate, b.gate) {
                (Gate::Sealed { .. }, _) | (_, Gate::Running { .. } | Gate::Requested { .. }) => true,
                (_, Gate::Held { .. } | Gate::Committed { .. } | Gate::Closed) => true,
                (Gate::Committed { ticket, pause }, Gate::Sealed { .. }) => {
                    t.event == Some(Ev::Seal { pause }) && b.gate == Gate::Sealed { ticket, pause }
                }
                (_, Gate::Sealed { .. }) => false,
            };
            let told = match t.act {
                Act::SealWakes(r) => match (a.req[r as usize].phase, b.req[r as usize].phase) {
                    (Phase::Sealing { ticket, pause }, Phase::Done { sealed: true }) => {
                        a.gate == Gate::Sealed { ticket, pause }
                    }
                    _ => true,
                },
                _ => true,
            };
            entered && told
        }),
        always("S5 no forged seal: a sealed pause is a prepared one; a seal is only told when Sealed", |m, s| {
            let gate_ok = match s.gate {
                Gate::Sealed { pause: p, .. } => p == pause::prepared(pause::intent(p)),
                Gate::Running { .. } | Gate::Requested { .. } | Gate::Held { .. } | Gate::Committed { .. } | Gate::Closed => true,
            };
            gate_ok
                && requesters(m, s)
                    .all(|(_, p)| p != Phase::Done { sealed: true } || matches!(s.gate, Gate::Sealed { .. }))
        }),
        step("S6 terminal is terminal: Sealed and Closed absorb every event", |_, a, _, b| {
            !a.gate.is_terminal() || a.gate == b.gate
        }),
        always("S7 own pause only: a held or committed pause answers its holder's intent", |m, s| {
            let gate_ok = match s.gate {
                Gate::Held { ticket, pause } => holders(m, s, ticket).all(|r| pause::intent(pause) == r),
                Gate::Running { .. } | Gate::Requested { .. } | Gate::Committed { .. } | Gate::Sealed { .. } | Gate::Closed => true,
            };
            gate_ok
                && requesters(m, s).all(|(r, p)| match p {
                    Phase::Holding { pause, .. } | Phase::Sealing { pause, .. } => pause::intent(pause) == r,
                    Phase::Idle | Phase::Waiting { .. } | Phase::Releasing { .. } | Phase::Done { .. } => true,
                })
        }),
        step("S7 own ticket only: ready yields its Held pause, boundary its committed pause", |_, a, t, b| {
            match t.act {
                Act::ReadyWakes(r) => match (a.req[r as usize].phase, b.req[r as usize].phase) {
                    (Phase::Waiting { ticket }, Phase::Holding { ticket: t2, pause }) => {
                        t2 == ticket && a.gate == Gate::Held { ticket, pause } && pause::intent(pause) == r
                    }
                    _ => true,
                },
                Act::BoundaryWakes => match (a.worker, b.worker) {
                    (Worker::Awaiting { ticket, pause }, Worker::Sealing { pause: got }) => {
                        got == pause && a.gate == Gate::Committed { ticket, pause }
                    }
                    _ => true,
                },
                // A later boundary returns only the pause actually committed.
                Act::BoundaryFindsCommit => match b.worker {
                    Worker::Sealing { pause } => matches!(a.gate, Gate::Committed { pause: p, .. } if p == pause),
                    Worker::Running
                    | Worker::Preflight { .. }
                    | Worker::Awaiting { .. }
                    | Worker::Done
                    | Worker::Checked { .. }
                    | Worker::Appended { .. }
                    | Worker::SealedUnappended { .. }
                    | Worker::Exiting => false,
                },
                _ => true,
            }
        }),
        step("S8 release leaves no fact: a failed preflight or a cancel moves to Running or nowhere", |_, a, t, b| {
            let release = match t.event {
                Some(Ev::Cancel { ticket }) => Some(ticket),
                Some(Ev::Preflight { ticket, pause, canceled }) => {
                    let matched = match (a.gate, pause) {
                        (Gate::Requested { intent, .. }, Some(p)) => pause::intent(p) == intent,
                        _ => false,
                    };
                    (canceled || !matched).then_some(ticket)
                }
                Some(Ev::Reserve { .. } | Ev::Commit { .. } | Ev::Seal { .. } | Ev::Close) | None => None,
            };
            match (release, a.gate) {
                (Some(t), Gate::Requested { ticket, .. } | Gate::Held { ticket, .. }) if t == ticket => {
                    b.gate == a.gate || matches!(b.gate, Gate::Running { .. })
                }
                _ => true,
            }
        }),
        step("S9 bad input changes nothing", |m, a, t, b| match t.event {
            Some(Ev::Reserve { intent }) if intent >= 2 * m.setup.requesters => {
                refused(t, Refusal::InvalidInput) && a == b
            }
            _ => true,
        }),
        always("L1 the worker's exit ends every wait: Closed leaves no waiter pending", |m, s| {
            s.gate != Gate::Closed
                || (requesters(m, s).all(|(_, p)| match p {
                    Phase::Waiting { ticket } => !pending(m, s, Query::Ready, ticket),
                    Phase::Sealing { ticket, .. } => !pending(m, s, Query::Seal, ticket),
                    Phase::Idle | Phase::Holding { .. } | Phase::Releasing { .. } | Phase::Done { .. } => true,
                }) && match s.worker {
                    Worker::Awaiting { ticket, .. } => !pending(m, s, Query::Boundary, ticket),
                    Worker::Running
                    | Worker::Preflight { .. }
                    | Worker::Sealing { .. }
                    | Worker::Done
                    | Worker::Checked { .. }
                    | Worker::Appended { .. }
                    | Worker::SealedUnappended { .. }
                    | Worker::Exiting => true,
                })
        }),
        Property {
            name: "terminal: nothing left pending when nothing can change",
            check: Check::Terminal(|m, s| {
                requesters(m, s).all(|(_, p)| matches!(p, Phase::Idle | Phase::Done { .. }))
                    && matches!(s.worker, Worker::Running | Worker::Done)
                    && matches!(s.gate, Gate::Running { .. } | Gate::Sealed { .. } | Gate::Closed)
                    // Durable: a Run whose worker is gone is reconciled.
                    && (s.worker != Worker::Done || !m.setup.durable.is_on() || s.owner != Owner::Undecided)
            }),
        },
        Property {
            name: "L1 every waiter resolves",
            check: Check::Eventually(|m, s| {
                let waiting = requesters(m, s)
                    .filter(|(_, p)| matches!(p, Phase::Waiting { .. } | Phase::Sealing { .. }))
                    .fold(0, |acc, (r, _)| acc | 1u64 << r);
                let worker = matches!(s.worker, Worker::Awaiting { .. });
                waiting | u64::from(worker) << WORKER
            }),
        },
        Property {
            name: "L2 a reservation is eventually held, released or closed",
            check: Check::Eventually(|m, s| {
                requesters(m, s)
                    .filter(|(_, p)| matches!(p, Phase::Waiting { ticket } if pending(m, s, Query::Ready, *ticket)))
                    .fold(0, |acc, (r, _)| acc | 1u64 << r)
            }),
        },
        Property {
            name: "L3 a committed handoff ends Sealed or Closed",
            check: Check::Eventually(|_, s: &Sys| u64::from(matches!(s.gate, Gate::Committed { .. }))),
        },
    ]
    .into_iter()
    .chain(super::coverage::coverage())
    .collect()
}
