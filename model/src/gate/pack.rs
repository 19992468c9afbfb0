//! Packs a [`Sys`] into 128 bits for the visited set, losslessly.
//!
//! Layout (low to high): gate (13 bits), canceled and closer (2), worker
//! (13), then each of the [`MAX_REQUESTERS`] requesters (15), then the
//! durable log (5: none, or its pause + 1) and the owner (2) — 125 bits. A
//! kind takes 3 bits, a ticket 5, an intent or pause 5, a requester's
//! tries 2. Every field
//! is checked against its width, so a configuration that outgrows the layout
//! fails loudly instead of merging states.

use super::codec::Gate;
use super::system::{MAX_REQUESTERS, Owner, Phase, Requester, Sys, Worker};

/// The packed form: two words.
pub type Key = [u64; 2];

/// Tickets must stay below this (so `requesters × tries` too).
pub const TICKETS: u8 = 32;
/// Reservations per requester must not exceed this.
pub const MAX_TRIES: u8 = 3;

struct Writer(u128, u32);

impl Writer {
    fn put(&mut self, value: u8, width: u32) {
        assert!(
            u32::from(value) < 1 << width,
            "{value} does not fit {width} bits: the configuration outgrew the packed layout"
        );
        self.0 |= u128::from(value) << self.1;
        self.1 += width;
    }

    /// A kind and two 5-bit fields.
    fn three(&mut self, kind: u8, a: u8, b: u8) {
        self.put(kind, 3);
        self.put(a, 5);
        self.put(b, 5);
    }
}

struct Reader(u128);

impl Reader {
    fn take(&mut self, width: u32) -> u8 {
        let value = (self.0 & ((1 << width) - 1)) as u8;
        self.0 >>= width;
        value
    }

    fn three(&mut self) -> (u8, u8, u8) {
        (self.take(3), self.take(5), self.take(5))
    }
}

/// `s` packed.
pub fn pack(s: &Sys) -> Key {
    let mut w = Writer(0, 0);
    match s.gate {
        Gate::Running { next } => w.three(0, next, 0),
        Gate::Requested { ticket, intent } => w.three(1, ticket, intent),
        Gate::Held { ticket, pause } => w.three(2, ticket, pause),
        Gate::Committed { ticket, pause } => w.three(3, ticket, pause),
        Gate::Sealed { ticket, pause } => w.three(4, ticket, pause),
        Gate::Closed => w.three(5, 0, 0),
    }
    w.put(u8::from(s.canceled), 1);
    w.put(u8::from(s.closer), 1);
    match s.worker {
        Worker::Running => w.three(0, 0, 0),
        Worker::Preflight { ticket, intent } => w.three(1, ticket, intent),
        Worker::Awaiting { ticket, pause } => w.three(2, ticket, pause),
        Worker::Sealing { pause } => w.three(3, 0, pause),
        Worker::Checked { pause } => w.three(3, 1, pause),
        Worker::Done => w.three(4, 0, 0),
        Worker::Appended { pause } => w.three(5, 0, pause),
        Worker::SealedUnappended { pause } => w.three(6, 0, pause),
        Worker::Exiting => w.three(7, 0, 0),
    }
    for r in &s.req {
        match r.phase {
            Phase::Idle => w.three(0, 0, 0),
            Phase::Waiting { ticket } => w.three(1, ticket, 0),
            Phase::Holding { ticket, pause } => w.three(2, ticket, pause),
            Phase::Releasing { ticket } => w.three(3, ticket, 0),
            Phase::Sealing { ticket, pause } => w.three(4, ticket, pause),
            Phase::Done { sealed } => w.three(5, 0, u8::from(sealed)),
        }
        w.put(r.tries, 2);
    }
    w.put(s.log.map_or(0, |p| p + 1), 5);
    w.put(
        match s.owner {
            Owner::Undecided => 0,
            Owner::Successor => 1,
            Owner::Resumed => 2,
            Owner::Operator => 3,
        },
        2,
    );
    debug_assert!(w.1 <= 128);
    [w.0 as u64, (w.0 >> 64) as u64]
}

/// The state `key` packs.
pub fn unpack(key: Key) -> Sys {
    let mut r = Reader(u128::from(key[0]) | u128::from(key[1]) << 64);
    let gate = match r.three() {
        (0, next, _) => Gate::Running { next },
        (1, ticket, intent) => Gate::Requested { ticket, intent },
        (2, ticket, pause) => Gate::Held { ticket, pause },
        (3, ticket, pause) => Gate::Committed { ticket, pause },
        (4, ticket, pause) => Gate::Sealed { ticket, pause },
        (5, _, _) => Gate::Closed,
        (kind, _, _) => unreachable!("pack writes no gate kind {kind}"),
    };
    let canceled = r.take(1) == 1;
    let closer = r.take(1) == 1;
    let worker = match r.three() {
        (0, _, _) => Worker::Running,
        (1, ticket, intent) => Worker::Preflight { ticket, intent },
        (2, ticket, pause) => Worker::Awaiting { ticket, pause },
        (3, 0, pause) => Worker::Sealing { pause },
        (3, _, pause) => Worker::Checked { pause },
        (4, _, _) => Worker::Done,
        (5, _, pause) => Worker::Appended { pause },
        (6, _, pause) => Worker::SealedUnappended { pause },
        (7, _, _) => Worker::Exiting,
        (kind, _, _) => unreachable!("pack writes no worker kind {kind}"),
    };
    let req: [Requester; MAX_REQUESTERS] = std::array::from_fn(|_| {
        let phase = match r.three() {
            (0, _, _) => Phase::Idle,
            (1, ticket, _) => Phase::Waiting { ticket },
            (2, ticket, pause) => Phase::Holding { ticket, pause },
            (3, ticket, _) => Phase::Releasing { ticket },
            (4, ticket, pause) => Phase::Sealing { ticket, pause },
            (5, _, sealed) => Phase::Done {
                sealed: sealed == 1,
            },
            (kind, _, _) => unreachable!("pack writes no phase kind {kind}"),
        };
        Requester {
            phase,
            tries: r.take(2),
        }
    });
    let log = r.take(5).checked_sub(1);
    let owner = match r.take(2) {
        0 => Owner::Undecided,
        1 => Owner::Successor,
        2 => Owner::Resumed,
        _ => Owner::Operator,
    };
    Sys {
        gate,
        canceled,
        closer,
        worker,
        req,
        log,
        owner,
    }
}
