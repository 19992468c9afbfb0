//! The promises the fence's proofs prove, as the user lives them, each
//! stated of one step of [`super::system::System`].

use easy_smt::{Context, SExpr};

use super::encode::{Terms, claimed, fate, others, retired, wrote};
use super::system::{Answers, Choice, Frame, Mode, System, step};

/// A promise, as the user lives it, stated of one step.
#[derive(Clone, Copy, Debug)]
pub struct Promise {
    /// Its SPEC id.
    pub id: &'static str,
    /// What it says here.
    pub says: &'static str,
    /// The modes it is promised on.
    pub modes: &'static [Mode],
}

const EVERY: &[Mode] = &Mode::ALL;
const KEPT: &[Mode] = &[Mode::Single, Mode::Synchronous];
const FAILING_OVER: &[Mode] = &[Mode::Synchronous];

/// The promises proven, in report order.
pub const PROMISES: [Promise; 11] = [
    Promise {
        id: "R3",
        says: "a claim answers HandedOff exactly when a pause is durable, and resumes only an open Run",
        modes: EVERY,
    },
    Promise {
        id: "R6",
        says: "a pause is written only under the log's current epoch, on an open Run",
        modes: EVERY,
    },
    Promise {
        id: "R7",
        says: "no worker older than the newest an owner was told of writes or is acknowledged",
        modes: KEPT,
    },
    Promise {
        id: "R8",
        says: "an outcome is written only under the current epoch on an open Run; a fate once durable stays, and no epoch is issued after it",
        modes: EVERY,
    },
    Promise {
        id: "R9",
        says: "once retention removed the root, no claim resumes it and nothing is written under it",
        modes: EVERY,
    },
    Promise {
        id: "R10",
        says: "retention removes only final Runs and leaves the tombstone only",
        modes: EVERY,
    },
    Promise {
        id: "G1",
        says: "a durable handoff's successor is final before retention removes its root",
        modes: EVERY,
    },
    Promise {
        id: "G2",
        says: "a fate a party was told of (the Run's pause or outcome, the successor's outcome) survives every failover, unless retention removed it",
        modes: FAILING_OVER,
    },
    Promise {
        id: "G3",
        says: "a refusal writes nothing",
        modes: EVERY,
    },
    Promise {
        id: "G4",
        says: "an epoch a claim answers was never issued before, on any term",
        modes: EVERY,
    },
    Promise {
        id: "G5",
        says: "retention removes a root of any number of Runs only once the log holds a Run of it, each is final and each successor named is a final Run of it",
        modes: EVERY,
    },
];

impl System {
    /// Whether the step from `s` to `n` by `x` (answers `a`) keeps
    /// `promise`.
    pub(super) fn keeps_promise(
        &self,
        c: &Context,
        promise: &str,
        s: &Frame,
        x: &Choice,
        a: &Answers,
        n: &Frame,
    ) -> SExpr {
        let t = Terms::new(c);
        let kind = |k: i64| t.is(x.kind, k);
        let owner = t.is(a.claim.answer, claimed::OWNER);
        let log_kept = Self::same_copy(c, &s.log, &n.log);
        let written = |answer: SExpr| t.is(answer, wrote::WRITTEN);
        let under_current = c.and(c.eq(x.epoch, s.log.epoch), t.is(s.log.fate, fate::OPEN));
        let removed = t.is(a.retire.answer, retired::REMOVED);
        let final_fate = t.handed_off_or_finished(s.log.fate);
        match promise {
            "R3" => c.imp(
                kind(step::CLAIM),
                c.and(
                    c.eq(
                        t.is(a.claim.answer, claimed::HANDED_OFF),
                        t.is(s.log.fate, fate::HANDED_OFF),
                    ),
                    c.imp(owner, t.is(s.log.fate, fate::OPEN)),
                ),
            ),
            "R6" => c.imp(c.and(kind(step::APPEND), written(a.append)), under_current),
            "R7" => {
                let acknowledged =
                    |answer| t.one_of(answer, &[wrote::WRITTEN, wrote::ALREADY_DURABLE]);
                c.imp(
                    c.or(
                        c.and(kind(step::APPEND), acknowledged(a.append)),
                        c.and(kind(step::FINISH), acknowledged(a.finish)),
                    ),
                    c.gte(x.epoch, s.told),
                )
            }
            "R8" => c.and(
                c.imp(c.and(kind(step::FINISH), written(a.finish)), under_current),
                c.imp(
                    c.and_many([
                        final_fate,
                        c.not(kind(step::FAILOVER)),
                        c.not(c.and(kind(step::RETIRE), removed)),
                    ]),
                    c.and(c.eq(n.log.fate, s.log.fate), c.eq(n.log.epoch, s.log.epoch)),
                ),
            ),
            "R9" => c.imp(
                s.log.removed,
                c.and_many([
                    c.imp(
                        kind(step::CLAIM),
                        c.and(c.not(owner), c.not(a.claim.writes)),
                    ),
                    c.imp(kind(step::APPEND), c.not(written(a.append))),
                    c.imp(kind(step::FINISH), c.not(written(a.finish))),
                    c.imp(c.not(kind(step::FAILOVER)), n.log.removed),
                ]),
            ),
            "R10" => c.imp(
                c.and(kind(step::RETIRE), removed),
                c.and_many([
                    c.imp(c.gt(s.log.epoch, t.int(0)), final_fate),
                    c.not(t.is(s.log.successor, fate::OPEN)),
                    t.is(n.log.fate, fate::RETIRED),
                ]),
            ),
            "G1" => c.imp(
                c.and_many([
                    kind(step::RETIRE),
                    removed,
                    t.is(s.log.fate, fate::HANDED_OFF),
                ]),
                t.is(s.log.successor, fate::FINISHED),
            ),
            "G2" => {
                let kept = c.and(
                    c.imp(
                        c.not(t.is(s.acked, fate::OPEN)),
                        c.or(c.eq(n.log.fate, s.acked), n.log.removed),
                    ),
                    c.imp(
                        s.successor_acked,
                        c.or(t.is(n.log.successor, fate::FINISHED), n.log.removed),
                    ),
                );
                c.imp(kind(step::FAILOVER), kept)
            }
            "G3" => {
                let refused_claim = c.and(kind(step::CLAIM), c.not(owner));
                let refused_write = |k: i64, answer: SExpr| c.and(kind(k), c.not(written(answer)));
                c.imp(
                    c.or_many([
                        refused_claim,
                        refused_write(step::APPEND, a.append),
                        refused_write(step::FINISH, a.finish),
                        c.and(kind(step::RETIRE), c.not(removed)),
                    ]),
                    log_kept,
                )
            }
            // The root holds the Run, its successor, and any number of
            // other Runs (`x.others`); what is kept of the Run holds of
            // each Run of the root.
            "G5" => c.imp(
                c.and(kind(step::RETIRE), removed),
                c.and_many([
                    c.or_many([
                        c.gt(s.log.epoch, t.int(0)),
                        c.not(t.is(s.log.successor, fate::ABSENT)),
                        c.not(t.is(x.others, others::NONE)),
                    ]),
                    c.imp(c.gt(s.log.epoch, t.int(0)), final_fate),
                    c.imp(
                        t.is(s.log.fate, fate::HANDED_OFF),
                        t.is(s.log.successor, fate::FINISHED),
                    ),
                    c.not(t.is(s.log.successor, fate::OPEN)),
                    t.one_of(x.others, &[others::NONE, others::ENDED]),
                ]),
            ),
            "G4" => c.imp(
                c.and(kind(step::CLAIM), owner),
                c.gt(a.claim.epoch, s.issued),
            ),
            other => panic!("no promise {other}"),
        }
    }
}
