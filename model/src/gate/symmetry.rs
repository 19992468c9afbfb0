//! Symmetry reduction over interchangeable requesters.
//!
//! Requesters differ only by their index, which the state also mentions
//! through intents and pauses (intent `r` is requester `r`'s). A state's
//! representative sorts the requesters by a key that describes each one
//! relative to itself (its phase with pauses as "own"/"other", and whether
//! the gate or the worker refers to it), then renames intents and pauses
//! accordingly. Requesters with equal keys are interchangeable, so any
//! order among them gives the same representative. Tickets are global and
//! are not renamed.

use super::codec::Gate;
use super::system::{MAX_REQUESTERS, Phase, Requester, Sys, Worker, pause};

/// How an intent index relates to requester `r`, for `k` requesters.
fn relation(k: u8, r: u8, intent: u8) -> u8 {
    match intent {
        i if i == r => 0,
        i if i == r + k => 1,
        i if i >= 2 * k => 3 + (i - 2 * k),
        _ => 2,
    }
}

/// `phase` with every pause replaced by its relation to `r`.
fn relative(k: u8, r: u8, phase: Phase) -> Phase {
    let rel = |p: u8| relation(k, r, pause::intent(p)) * 2 + p % 2;
    match phase {
        Phase::Holding { ticket, pause } => Phase::Holding {
            ticket,
            pause: rel(pause),
        },
        Phase::Sealing { ticket, pause } => Phase::Sealing {
            ticket,
            pause: rel(pause),
        },
        Phase::Idle | Phase::Waiting { .. } | Phase::Releasing { .. } | Phase::Done { .. } => phase,
    }
}

/// The intent the gate refers to.
fn gate_intent(gate: Gate) -> Option<u8> {
    match gate {
        Gate::Requested { intent, .. } => Some(intent),
        Gate::Held { pause, .. } | Gate::Committed { pause, .. } | Gate::Sealed { pause, .. } => {
            Some(pause::intent(pause))
        }
        Gate::Running { .. } | Gate::Closed => None,
    }
}

/// The intent the worker refers to.
fn worker_intent(worker: Worker) -> Option<u8> {
    match worker {
        Worker::Preflight { intent, .. } => Some(intent),
        Worker::Awaiting { pause, .. }
        | Worker::Sealing { pause }
        | Worker::Checked { pause }
        | Worker::Appended { pause }
        | Worker::SealedUnappended { pause } => Some(pause::intent(pause)),
        Worker::Running | Worker::Done | Worker::Exiting => None,
    }
}

/// The representative of `s` for `k` requesters.
pub fn canonical(k: u8, s: Sys) -> Sys {
    let key = |r: u8| {
        let me = s.req[r as usize];
        let refers = |i: Option<u8>| i.map_or(u8::MAX, |i| relation(k, r, i));
        (
            Requester {
                phase: relative(k, r, me.phase),
                tries: me.tries,
            },
            refers(gate_intent(s.gate)),
            refers(worker_intent(s.worker)),
        )
    };
    let mut keys = [(
        Requester {
            phase: Phase::Idle,
            tries: 0,
        },
        0,
        0,
        0,
    ); MAX_REQUESTERS];
    for r in 0..k {
        let (me, g, w) = key(r);
        keys[r as usize] = (me, g, w, r);
    }
    let keys = &mut keys[..k as usize];
    keys.sort_unstable();
    let order: [u8; MAX_REQUESTERS] = std::array::from_fn(|i| keys.get(i).map_or(0, |key| key.3));
    permute(k, s, &order[..k as usize])
}

/// `s` with its requesters reordered: new requester `i` is old requester
/// `order[i]`, intents and pauses renamed to match. `order` is a
/// permutation of `0..k`.
pub fn permute(k: u8, s: Sys, order: &[u8]) -> Sys {
    let mut new_of = [0u8; MAX_REQUESTERS];
    for (new, &old) in order.iter().enumerate() {
        new_of[old as usize] = new as u8;
    }
    let intent = |i: u8| match i {
        i if i < k => new_of[i as usize],
        i if i < 2 * k => k + new_of[(i - k) as usize],
        i => i,
    };
    let pause = |p: u8| intent(pause::intent(p)) * 2 + p % 2;
    let gate = match s.gate {
        Gate::Requested { ticket, intent: i } => Gate::Requested {
            ticket,
            intent: intent(i),
        },
        Gate::Held { ticket, pause: p } => Gate::Held {
            ticket,
            pause: pause(p),
        },
        Gate::Committed { ticket, pause: p } => Gate::Committed {
            ticket,
            pause: pause(p),
        },
        Gate::Sealed { ticket, pause: p } => Gate::Sealed {
            ticket,
            pause: pause(p),
        },
        g @ (Gate::Running { .. } | Gate::Closed) => g,
    };
    let worker = match s.worker {
        Worker::Preflight { ticket, intent: i } => Worker::Preflight {
            ticket,
            intent: intent(i),
        },
        Worker::Awaiting { ticket, pause: p } => Worker::Awaiting {
            ticket,
            pause: pause(p),
        },
        Worker::Sealing { pause: p } => Worker::Sealing { pause: pause(p) },
        Worker::Checked { pause: p } => Worker::Checked { pause: pause(p) },
        Worker::Appended { pause: p } => Worker::Appended { pause: pause(p) },
        Worker::SealedUnappended { pause: p } => Worker::SealedUnappended { pause: pause(p) },
        w @ (Worker::Running | Worker::Done | Worker::Exiting) => w,
    };
    let mut req = s.req;
    for (new, &old) in order.iter().enumerate() {
        let me = s.req[old as usize];
        let phase = match me.phase {
            Phase::Holding { ticket, pause: p } => Phase::Holding {
                ticket,
                pause: pause(p),
            },
            Phase::Sealing { ticket, pause: p } => Phase::Sealing {
                ticket,
                pause: pause(p),
            },
            ph @ (Phase::Idle
            | Phase::Waiting { .. }
            | Phase::Releasing { .. }
            | Phase::Done { .. }) => ph,
        };
        req[new] = Requester {
            phase,
            tries: me.tries,
        };
    }
    Sys {
        gate,
        worker,
        req,
        log: s.log.map(pause),
        ..s
    }
}
