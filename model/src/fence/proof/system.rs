//! One Run of the fence, unbounded: its log and its standby as integers,
//! every step a party may take (a claim, an append or a finish under any
//! epoch — any number of workers and zombies —, a retirement, the
//! successor's claim and finish, replication, a failover to the next
//! term), the inductive invariant, and the promises as step obligations.

use std::io;

use easy_smt::{Context, SExpr};

use super::encode::{Encoding, TERM, Terms, claimed, fate, retired, wrote};

/// How the log's server replicates (as the bounded model's
/// `Replication`), so which steps there are and what a failover keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One server: no standby, no failover.
    Single,
    /// A synchronous standby: every answered operation waited for it.
    Synchronous,
    /// An asynchronous standby: it holds what the primary held at some
    /// earlier moment.
    Asynchronous,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 3] = [Mode::Single, Mode::Synchronous, Mode::Asynchronous];

    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Single => "one server",
            Mode::Synchronous => "synchronous standby",
            Mode::Asynchronous => "asynchronous standby",
        }
    }
}

/// The steps, by their selector's value.
pub mod step {
    /// A claim by an owner.
    pub const CLAIM: i64 = 0;
    /// An append by a worker holding any epoch.
    pub const APPEND: i64 = 1;
    /// A finish by a worker holding any epoch.
    pub const FINISH: i64 = 2;
    /// The operator's retention, on the root.
    pub const RETIRE: i64 = 3;
    /// The successor's claim (its first: the log holds a Run of it).
    pub const SUCCESSOR_CLAIM: i64 = 4;
    /// The successor's finish.
    pub const SUCCESSOR_FINISH: i64 = 5;
    /// The standby receives everything the primary holds.
    pub const REPLICATE: i64 = 6;
    /// The standby is promoted: the log is its copy, on the next term.
    pub const FAILOVER: i64 = 7;
    /// Their names.
    pub const NAMES: [&str; 8] = [
        "claim",
        "append",
        "finish",
        "retire",
        "the successor's claim",
        "the successor's finish",
        "replicate",
        "failover",
    ];
}

/// What one server holds of the Run (and of its root).
#[derive(Clone, Copy, Debug)]
pub struct Copy {
    /// The Run's epoch.
    pub epoch: SExpr,
    /// Its [`fate`] (`OPEN`, `HANDED_OFF`, `FINISHED`, `RETIRED`).
    pub fate: SExpr,
    /// The successor's: `ABSENT`, `OPEN` or `FINISHED`.
    pub successor: SExpr,
    /// Ghost: a retirement removed the root's rows on this history.
    pub removed: SExpr,
}

/// One state: the log, its standby, the term, and two ghosts.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// The primary's copy: the log.
    pub log: Copy,
    /// The standby's.
    pub standby: Copy,
    /// The server's term (its timeline).
    pub term: SExpr,
    /// Ghost: the highest epoch any claim ever issued (written or
    /// answered), on any term.
    pub issued: SExpr,
    /// Ghost: the highest epoch a claim's answer reached its owner with.
    pub told: SExpr,
    /// Ghost: the Run's fate a party was told of (a worker's acknowledged
    /// append or finish, a claim answering it): [`fate::OPEN`] for none.
    pub acked: SExpr,
    /// Ghost: the successor's finish was acknowledged.
    pub successor_acked: SExpr,
}

/// One step's choices: which step, and its inputs.
#[derive(Clone, Copy, Debug)]
pub struct Choice {
    /// A [`step`] selector.
    pub kind: SExpr,
    /// Its reply is lost (claims and writes).
    pub lost: SExpr,
    /// The epoch a write carries: any at all.
    pub epoch: SExpr,
    /// The write's row is the one durable (idempotent retry).
    pub same: SExpr,
    /// The root's other Runs as a retirement finds them: any number, in
    /// any state (an [`others`](super::encode::others) code).
    pub others: SExpr,
}

/// Declares the constants of frame `i`.
pub fn declare_frame(ctx: &mut Context, i: usize) -> io::Result<Frame> {
    let int = ctx.int_sort();
    let boolean = ctx.bool_sort();
    let copy = |ctx: &mut Context, who: &str| -> io::Result<Copy> {
        Ok(Copy {
            epoch: ctx.declare_const(format!("{who}_epoch_{i}"), int)?,
            fate: ctx.declare_const(format!("{who}_fate_{i}"), int)?,
            successor: ctx.declare_const(format!("{who}_successor_{i}"), int)?,
            removed: ctx.declare_const(format!("{who}_removed_{i}"), boolean)?,
        })
    };
    let log = copy(ctx, "log")?;
    let standby = copy(ctx, "standby")?;
    Ok(Frame {
        log,
        standby,
        term: ctx.declare_const(format!("term_{i}"), int)?,
        issued: ctx.declare_const(format!("issued_{i}"), int)?,
        told: ctx.declare_const(format!("told_{i}"), int)?,
        acked: ctx.declare_const(format!("acked_{i}"), int)?,
        successor_acked: ctx.declare_const(format!("successor_acked_{i}"), boolean)?,
    })
}

/// Declares the constants of step `i`'s choice.
pub fn declare_choice(ctx: &mut Context, i: usize) -> io::Result<Choice> {
    let int = ctx.int_sort();
    let boolean = ctx.bool_sort();
    Ok(Choice {
        kind: ctx.declare_const(format!("step_{i}"), int)?,
        lost: ctx.declare_const(format!("lost_{i}"), boolean)?,
        epoch: ctx.declare_const(format!("epoch_{i}"), int)?,
        same: ctx.declare_const(format!("same_{i}"), boolean)?,
        others: ctx.declare_const(format!("others_{i}"), int)?,
    })
}

/// The answers a step gave, as terms (each meaningful for its step).
#[derive(Clone, Copy, Debug)]
pub struct Answers {
    /// The claim's.
    pub claim: super::encode::ClaimTerms,
    /// The append's.
    pub append: SExpr,
    /// The finish's.
    pub finish: SExpr,
    /// The retirement's.
    pub retire: super::encode::RetireTerms,
}

/// The system of one encoding on one mode.
#[derive(Clone, Copy)]
pub struct System {
    /// The rules.
    pub encoding: Encoding,
    /// The replication.
    pub mode: Mode,
}

impl System {
    /// The system of `encoding` on `mode`.
    pub fn new(encoding: Encoding, mode: Mode) -> Self {
        Self { encoding, mode }
    }

    pub(super) fn same_copy(c: &Context, a: &Copy, b: &Copy) -> SExpr {
        c.and_many([
            c.eq(a.epoch, b.epoch),
            c.eq(a.fate, b.fate),
            c.eq(a.successor, b.successor),
            c.eq(a.removed, b.removed),
        ])
    }

    /// The initial state: nothing in the log, term 1, nothing issued.
    pub fn init(&self, c: &Context, s: &Frame) -> SExpr {
        let t = Terms::new(c);
        let empty = |copy: &Copy| {
            c.and_many([
                t.is(copy.epoch, 0),
                t.is(copy.fate, fate::OPEN),
                t.is(copy.successor, fate::ABSENT),
                c.not(copy.removed),
            ])
        };
        c.and_many([
            empty(&s.log),
            empty(&s.standby),
            t.is(s.term, 1),
            t.is(s.issued, 0),
            t.is(s.told, 0),
            t.is(s.acked, fate::OPEN),
            c.not(s.successor_acked),
        ])
    }

    /// What each rule answers in `s` for the choice `x`.
    pub fn answers(&self, c: &Context, s: &Frame, x: &Choice) -> Answers {
        let t = Terms::new(c);
        let log = &s.log;
        Answers {
            claim: t.claim(self.encoding.claim, log.epoch, log.fate, t.floor(s.term)),
            append: t.write(
                self.encoding.append,
                false,
                log.epoch,
                log.fate,
                x.epoch,
                x.same,
            ),
            finish: t.write(
                self.encoding.finish,
                true,
                log.epoch,
                log.fate,
                x.epoch,
                x.same,
            ),
            retire: t.retire(
                self.encoding.retire,
                log.epoch,
                log.fate,
                log.successor,
                x.others,
            ),
        }
    }

    /// The step relation: `s` goes to `n` by the choice `x` (its answers
    /// `a`). Its one assumption, A1: a Run is claimed fewer than 2^40
    /// times on one term (the floor's room), so no claim writes an epoch
    /// at or past the next term's floor.
    pub fn step(&self, c: &Context, s: &Frame, x: &Choice, a: &Answers, n: &Frame) -> SExpr {
        let t = Terms::new(c);
        let keep_log = Self::same_copy(c, &s.log, &n.log);
        let keep_standby = Self::same_copy(c, &s.standby, &n.standby);
        let keep_fence = c.and(c.eq(s.issued, n.issued), c.eq(s.told, n.told));
        let keep_acks = c.and(
            c.eq(s.acked, n.acked),
            c.eq(s.successor_acked, n.successor_acked),
        );
        let keep_ghosts = c.and(keep_fence, keep_acks);
        let keep_term = c.eq(s.term, n.term);
        // A synchronous standby holds everything before an answered
        // operation; otherwise it keeps what it had.
        let standby_after = |answered: SExpr| match self.mode {
            Mode::Synchronous => c.ite(
                answered,
                Self::same_copy(c, &n.log, &n.standby),
                keep_standby,
            ),
            Mode::Single | Mode::Asynchronous => keep_standby,
        };
        let log_but = |epoch: SExpr, fate: SExpr, successor: SExpr, removed: SExpr| {
            c.and_many([
                c.eq(n.log.epoch, epoch),
                c.eq(n.log.fate, fate),
                c.eq(n.log.successor, successor),
                c.eq(n.log.removed, removed),
            ])
        };
        let kind = |k: i64| t.is(x.kind, k);

        let claim = {
            let cl = a.claim;
            let owner = t.is(cl.answer, claimed::OWNER);
            let epoch_after = c.ite(cl.writes, cl.written, s.log.epoch);
            let issued_now = c.ite(owner, cl.epoch, c.ite(cl.writes, cl.written, t.int(0)));
            let refused = t.one_of(cl.answer, &[claimed::EXHAUSTED, claimed::CONTRADICTORY]);
            let told = |answer: i64, fate: i64| {
                c.and_many([
                    c.not(x.lost),
                    t.is(cl.answer, answer),
                    t.is(s.log.fate, fate),
                ])
            };
            let fate_told = c.ite(
                told(claimed::HANDED_OFF, fate::HANDED_OFF),
                t.int(fate::HANDED_OFF),
                c.ite(
                    told(claimed::FINISHED, fate::FINISHED),
                    t.int(fate::FINISHED),
                    s.acked,
                ),
            );
            c.and_many([
                c.eq(n.acked, fate_told),
                c.eq(n.successor_acked, s.successor_acked),
                // A1.
                c.imp(
                    cl.writes,
                    c.lt(cl.written, c.plus(t.floor(s.term), t.int(TERM))),
                ),
                log_but(epoch_after, s.log.fate, s.log.successor, s.log.removed),
                c.eq(n.issued, t.max(s.issued, t.max(issued_now, epoch_after))),
                c.eq(
                    n.told,
                    c.ite(c.and(owner, c.not(x.lost)), t.max(s.told, cl.epoch), s.told),
                ),
                keep_term,
                standby_after(c.and(c.not(x.lost), c.not(refused))),
            ])
        };

        let write = |answer: SExpr, fate_written: i64| {
            let written = t.is(answer, wrote::WRITTEN);
            let acknowledged = t.one_of(answer, &[wrote::WRITTEN, wrote::ALREADY_DURABLE]);
            c.and_many([
                c.ite(
                    written,
                    log_but(
                        s.log.epoch,
                        t.int(fate_written),
                        s.log.successor,
                        s.log.removed,
                    ),
                    keep_log,
                ),
                keep_fence,
                c.eq(
                    n.acked,
                    c.ite(
                        c.and(c.not(x.lost), acknowledged),
                        t.int(fate_written),
                        s.acked,
                    ),
                ),
                c.eq(n.successor_acked, s.successor_acked),
                keep_term,
                standby_after(c.and(c.not(x.lost), acknowledged)),
            ])
        };

        let retire = {
            let r = a.retire;
            let removed = t.is(r.answer, retired::REMOVED);
            c.and_many([
                c.ite(
                    removed,
                    log_but(
                        t.int(0),
                        c.ite(r.tombstone, t.int(fate::RETIRED), t.int(fate::OPEN)),
                        t.int(fate::ABSENT),
                        c.true_(),
                    ),
                    keep_log,
                ),
                keep_ghosts,
                keep_term,
                standby_after(c.and(
                    c.not(x.lost),
                    t.one_of(r.answer, &[retired::REMOVED, retired::ALREADY]),
                )),
            ])
        };

        // The successor's own claim and finish (its rules are the Run's:
        // proven here for the Run, they are what the successor gets). Under
        // the root's tombstone its claim answers Retired: no step.
        let successor = |from: i64, to: i64| {
            c.and_many([
                t.is(s.log.successor, from),
                c.not(t.is(s.log.fate, fate::RETIRED)),
                log_but(s.log.epoch, s.log.fate, t.int(to), s.log.removed),
                keep_fence,
                c.eq(n.acked, s.acked),
                c.eq(
                    n.successor_acked,
                    c.or(
                        s.successor_acked,
                        c.and(
                            c.not(x.lost),
                            if to == fate::FINISHED {
                                c.true_()
                            } else {
                                c.false_()
                            },
                        ),
                    ),
                ),
                keep_term,
                standby_after(c.not(x.lost)),
            ])
        };

        let replicate = c.and_many([
            keep_log,
            Self::same_copy(c, &s.log, &n.standby),
            keep_ghosts,
            keep_term,
        ]);

        let failover = c.and_many([
            Self::same_copy(c, &s.standby, &n.log),
            keep_standby,
            keep_ghosts,
            c.eq(n.term, c.plus(s.term, t.int(1))),
        ]);

        let mut steps = vec![
            c.and(kind(step::CLAIM), claim),
            c.and(kind(step::APPEND), write(a.append, fate::HANDED_OFF)),
            c.and(kind(step::FINISH), write(a.finish, fate::FINISHED)),
            c.and(kind(step::RETIRE), retire),
            c.and(
                kind(step::SUCCESSOR_CLAIM),
                successor(fate::ABSENT, fate::OPEN),
            ),
            c.and(
                kind(step::SUCCESSOR_FINISH),
                successor(fate::OPEN, fate::FINISHED),
            ),
        ];
        if self.mode != Mode::Single {
            steps.push(c.and(kind(step::REPLICATE), replicate));
            steps.push(c.and(kind(step::FAILOVER), failover));
        }
        c.and_many([
            c.gte(x.epoch, t.int(0)),
            c.lte(x.epoch, t.nat(u64::MAX)),
            t.one_of(x.others, &[0, 1, 2, 3]),
            c.or_many(steps),
        ])
    }

    /// The inductive invariant (of the real rules).
    pub fn invariant(&self, c: &Context, s: &Frame) -> SExpr {
        let t = Terms::new(c);
        let well_formed = |copy: &Copy| {
            c.and_many([
                c.gte(copy.epoch, t.int(0)),
                c.lte(copy.epoch, s.issued),
                t.one_of(
                    copy.fate,
                    &[fate::OPEN, fate::HANDED_OFF, fate::FINISHED, fate::RETIRED],
                ),
                t.one_of(copy.successor, &[fate::ABSENT, fate::OPEN, fate::FINISHED]),
                // The tombstone is the root's only row, and is there
                // exactly when a retirement removed the rows.
                c.eq(copy.removed, t.is(copy.fate, fate::RETIRED)),
                c.imp(
                    t.is(copy.fate, fate::RETIRED),
                    c.and(t.is(copy.epoch, 0), t.is(copy.successor, fate::ABSENT)),
                ),
                // A fate is written under an issued epoch.
                c.imp(
                    t.handed_off_or_finished(copy.fate),
                    c.gte(copy.epoch, t.int(1)),
                ),
            ])
        };
        let retired = t.is(s.log.fate, fate::RETIRED);
        let mut all = vec![
            well_formed(&s.log),
            well_formed(&s.standby),
            c.gte(s.term, t.int(1)),
            c.gte(s.told, t.int(0)),
            c.lte(s.told, s.issued),
            c.lte(s.issued, t.int(super::encode::LAST)),
            // G4's key: nothing issued lies above both the log's epoch and
            // its term's floor (a retired root issues nothing).
            c.or(
                retired,
                c.lte(s.issued, t.max(s.log.epoch, t.floor(s.term))),
            ),
            // The floor's room (A1): the next term's floor is above
            // everything issued.
            c.lt(s.issued, c.plus(t.floor(s.term), t.int(TERM))),
        ];
        if self.mode != Mode::Asynchronous {
            // No answered claim is lost: the log holds the newest epoch an
            // owner was told of ...
            all.push(c.or(retired, c.lte(s.told, s.log.epoch)));
        }
        if self.mode == Mode::Synchronous {
            // ... and so does a synchronous standby.
            all.push(c.or(
                t.is(s.standby.fate, fate::RETIRED),
                c.lte(s.told, s.standby.epoch),
            ));
        }
        // What a party was told of is in the log (G2), and in a
        // synchronous standby.
        all.push(t.one_of(s.acked, &[fate::OPEN, fate::HANDED_OFF, fate::FINISHED]));
        let kept = |copy: &Copy| {
            c.and(
                c.imp(
                    c.not(t.is(s.acked, fate::OPEN)),
                    c.or(c.eq(copy.fate, s.acked), copy.removed),
                ),
                c.imp(
                    s.successor_acked,
                    c.or(t.is(copy.successor, fate::FINISHED), copy.removed),
                ),
            )
        };
        if self.mode != Mode::Asynchronous {
            all.push(kept(&s.log));
        }
        if self.mode == Mode::Synchronous {
            all.push(kept(&s.standby));
        }
        c.and_many(all)
    }
}
