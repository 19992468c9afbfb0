//! The fence's rules as terms of linear integer arithmetic: what
//! `claim_step_above`, `append_step`, `finish_step`, `retire_step` (with
//! the store's tombstone) and `timeline_floor` answer, over unbounded
//! integers, for one Run described by its epoch and its fate — and the
//! same for each broken variant of [`super::super::VARIANTS`].
//! [`super::agree`] holds every term to the Rust function it stands for.

use easy_smt::{Context, SExpr};

/// A Run's fate as the log holds it (its facts' shape), and the
/// successor's.
pub mod fate {
    /// Claimed or not, no final fate.
    pub const OPEN: i64 = 0;
    /// A pause is durable.
    pub const HANDED_OFF: i64 = 1;
    /// An outcome is durable.
    pub const FINISHED: i64 = 2;
    /// The root's tombstone (no other row).
    pub const RETIRED: i64 = 3;
    /// Facts `reconcile` refuses (two fates, two pauses, a tombstone
    /// beside rows): never in the system, only in the agreement's inputs.
    pub const CONTRADICTORY: i64 = 4;
    /// The successor: no Run of it in the log (not claimed yet).
    pub const ABSENT: i64 = 5;
}

/// What a claim answers.
pub mod claimed {
    /// `Claim::Owner(epoch)`.
    pub const OWNER: i64 = 0;
    /// `Claim::HandedOff`.
    pub const HANDED_OFF: i64 = 1;
    /// `Claim::Finished`.
    pub const FINISHED: i64 = 2;
    /// `Claim::Retired`.
    pub const RETIRED: i64 = 3;
    /// `LogError::EpochsExhausted`.
    pub const EXHAUSTED: i64 = 4;
    /// `LogError::Contradictory`.
    pub const CONTRADICTORY: i64 = 5;
}

/// What an append or a finish answers.
pub mod wrote {
    /// `Receipt::Written`: the row is written.
    pub const WRITTEN: i64 = 0;
    /// `Receipt::AlreadyDurable`: the identical row was.
    pub const ALREADY_DURABLE: i64 = 1;
    /// `LogError::Fenced`.
    pub const FENCED: i64 = 2;
    /// `LogError::EpochNotIssued`.
    pub const NOT_ISSUED: i64 = 3;
    /// `LogError::AlreadyHandedOff`.
    pub const ALREADY_HANDED_OFF: i64 = 4;
    /// `LogError::AlreadyFinished`.
    pub const ALREADY_FINISHED: i64 = 5;
    /// `LogError::Retired`.
    pub const RETIRED: i64 = 6;
}

/// What a retirement answers.
pub mod retired {
    /// `Retirement::Retired`: every row removed (the tombstone as the rule
    /// says).
    pub const REMOVED: i64 = 0;
    /// `Retirement::AlreadyRetired`.
    pub const ALREADY: i64 = 1;
    /// `LogError::RunOpen`.
    pub const RUN_OPEN: i64 = 2;
    /// `LogError::NothingToRetire`.
    pub const NOTHING: i64 = 3;
}

/// `Epoch::LAST`.
pub const LAST: i64 = i64::MAX;
/// The epochs one timeline may answer: `timeline_floor`'s step, 2^40.
pub const TERM: i64 = 1 << 40;

/// The claim rule an encoding follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimRule {
    /// `claim_step_above`.
    Real,
    /// (k) decides by reading: answers a new epoch, writes none.
    ByReading,
    /// (m) answers the current epoch once one was issued.
    WithoutAdvancing,
    /// (n) resumes a handed-off Run.
    ResumingAHandedOffRun,
    /// (t) a claim of a final Run writes the next epoch.
    FinalRunWritesAnEpoch,
    /// (u) `claim_step`: no floor.
    IgnoringTheFloor,
}

/// The append or finish rule an encoding follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteRule {
    /// `append_step` / `finish_step`.
    Real,
    /// (k, l, q) asked as if the writer held the current epoch.
    IgnoringTheEpoch,
}

/// The root's other Runs, as a retirement finds them (beside the Run and
/// the successor its pause names).
pub mod others {
    /// None.
    pub const NONE: i64 = 0;
    /// Each final, and each successor their pauses name a final Run.
    pub const ENDED: i64 = 1;
    /// One of them is not final.
    pub const OPEN: i64 = 2;
    /// Each final, but one names a successor that is not a final Run.
    pub const WAITING: i64 = 3;
}

/// The retire rule an encoding follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetireRule {
    /// `retire_step`, and the tombstone.
    Real,
    /// (p) no tombstone.
    WithoutATombstone,
    /// (r) `RunOpen` ignored.
    IgnoringOpenRuns,
    /// (s) `RunOpen` ignored when every Run the log holds is final.
    CountingAHandoffAsEnded,
}

/// The rules one encoding follows: the real ones, or a variant's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoding {
    /// The claim's.
    pub claim: ClaimRule,
    /// The append's.
    pub append: WriteRule,
    /// The finish's.
    pub finish: WriteRule,
    /// The retirement's.
    pub retire: RetireRule,
}

impl Encoding {
    /// The real rules.
    pub const REAL: Encoding = Encoding {
        claim: ClaimRule::Real,
        append: WriteRule::Real,
        finish: WriteRule::Real,
        retire: RetireRule::Real,
    };

    /// The encoding of the variant called `name` (the real rules'
    /// encoding for "real"); `None` for a name it does not know.
    pub fn of(name: &str) -> Option<Encoding> {
        let real = Encoding::REAL;
        Some(match name {
            "real" => real,
            "k_owner_decides_by_reading" => Encoding {
                claim: ClaimRule::ByReading,
                append: WriteRule::IgnoringTheEpoch,
                ..real
            },
            "l_append_ignores_the_epoch" => Encoding {
                append: WriteRule::IgnoringTheEpoch,
                ..real
            },
            "m_claim_does_not_advance_the_epoch" => Encoding {
                claim: ClaimRule::WithoutAdvancing,
                ..real
            },
            "n_claim_resumes_a_handed_off_run" => Encoding {
                claim: ClaimRule::ResumingAHandedOffRun,
                ..real
            },
            "t_claim_of_a_final_run_writes_an_epoch" => Encoding {
                claim: ClaimRule::FinalRunWritesAnEpoch,
                ..real
            },
            "p_retention_deletes_and_reissues_epoch_1" => Encoding {
                retire: RetireRule::WithoutATombstone,
                ..real
            },
            "q_finish_ignores_the_epoch" => Encoding {
                finish: WriteRule::IgnoringTheEpoch,
                ..real
            },
            "r_retention_drops_an_open_run" => Encoding {
                retire: RetireRule::IgnoringOpenRuns,
                ..real
            },
            "s_retention_counts_a_handoff_as_ended" => Encoding {
                retire: RetireRule::CountingAHandoffAsEnded,
                ..real
            },
            "u_epochs_restart_from_the_surviving_row" => Encoding {
                claim: ClaimRule::IgnoringTheFloor,
                ..real
            },
            _ => return None,
        })
    }
}

/// A claim's answer and its write, as terms.
#[derive(Clone, Copy, Debug)]
pub struct ClaimTerms {
    /// A [`claimed`] code.
    pub answer: SExpr,
    /// The epoch `Owner` answers (meaningful only then).
    pub epoch: SExpr,
    /// Whether the claim writes an epoch.
    pub writes: SExpr,
    /// The epoch it writes (meaningful only then).
    pub written: SExpr,
}

/// A retirement's answer and whether it keeps the tombstone.
#[derive(Clone, Copy, Debug)]
pub struct RetireTerms {
    /// A [`retired`] code.
    pub answer: SExpr,
    /// Whether the removal keeps the root's tombstone.
    pub tombstone: SExpr,
}

/// Term builders over one solver context.
#[derive(Clone, Copy)]
pub struct Terms<'a> {
    ctx: &'a Context,
}

impl<'a> Terms<'a> {
    /// The builders of `ctx`.
    pub fn new(ctx: &'a Context) -> Self {
        Self { ctx }
    }

    /// The context.
    pub fn ctx(&self) -> &'a Context {
        self.ctx
    }

    /// An integer.
    pub fn int(&self, value: i64) -> SExpr {
        self.ctx.numeral(value)
    }

    /// An unsigned integer (epochs up to `u64::MAX`).
    pub fn nat(&self, value: u64) -> SExpr {
        self.ctx.numeral(value)
    }

    /// `a = value`.
    pub fn is(&self, a: SExpr, value: i64) -> SExpr {
        self.ctx.eq(a, self.int(value))
    }

    /// `a` is one of `values`.
    pub fn one_of(&self, a: SExpr, values: &[i64]) -> SExpr {
        self.ctx.or_many(values.iter().map(|v| self.is(a, *v)))
    }

    /// The greater of `a` and `b`.
    pub fn max(&self, a: SExpr, b: SExpr) -> SExpr {
        self.ctx.ite(self.ctx.gte(a, b), a, b)
    }

    /// Whether a Run's fate is handed off or finished (`Fate::is_final`
    /// of a Run the log holds; the root's tombstone is apart).
    pub fn handed_off_or_finished(&self, fate: SExpr) -> SExpr {
        self.one_of(fate, &[fate::HANDED_OFF, fate::FINISHED])
    }

    /// `timeline_floor(t)`: `(t − 1) · 2^40`, at most `Epoch::LAST`
    /// (timeline 0 as 1).
    pub fn floor(&self, timeline: SExpr) -> SExpr {
        let c = self.ctx;
        let before = c.ite(
            c.lte(timeline, self.int(1)),
            self.int(0),
            c.sub(timeline, self.int(1)),
        );
        let floor = c.times(before, self.int(TERM));
        c.ite(c.gte(floor, self.int(LAST)), self.int(LAST), floor)
    }

    /// What `reconcile` decides for a claim, as a [`claimed`] code
    /// (`OWNER` for `Resumable`); `epoch` is the Run's (a tombstone
    /// beside an epoch is contradictory).
    fn decision(&self, epoch: SExpr, fate: SExpr) -> SExpr {
        let c = self.ctx;
        let contradictory = c.or(
            self.is(fate, fate::CONTRADICTORY),
            c.and(self.is(fate, fate::RETIRED), c.not(self.is(epoch, 0))),
        );
        c.ite(
            contradictory,
            self.int(claimed::CONTRADICTORY),
            c.ite(
                self.is(fate, fate::HANDED_OFF),
                self.int(claimed::HANDED_OFF),
                c.ite(
                    self.is(fate, fate::FINISHED),
                    self.int(claimed::FINISHED),
                    c.ite(
                        self.is(fate, fate::RETIRED),
                        self.int(claimed::RETIRED),
                        self.int(claimed::OWNER),
                    ),
                ),
            ),
        )
    }

    /// The claim rule `rule` on a Run at `epoch` with `fate`, above
    /// `floor`.
    pub fn claim(&self, rule: ClaimRule, epoch: SExpr, fate: SExpr, floor: SExpr) -> ClaimTerms {
        let c = self.ctx;
        let base = match rule {
            ClaimRule::IgnoringTheFloor => epoch,
            _ => self.max(epoch, floor),
        };
        let spent = c.gte(base, self.int(LAST));
        let next = c.plus(base, self.int(1));
        let decided = self.decision(epoch, fate);
        // The real rule: a resumable Run's next epoch, or the decision.
        let real = c.ite(
            c.and(self.is(decided, claimed::OWNER), spent),
            self.int(claimed::EXHAUSTED),
            decided,
        );
        let answer = match rule {
            ClaimRule::Real
            | ClaimRule::WithoutAdvancing
            | ClaimRule::FinalRunWritesAnEpoch
            | ClaimRule::IgnoringTheFloor => real,
            // The next epoch first, then the decision.
            ClaimRule::ByReading => c.ite(spent, self.int(claimed::EXHAUSTED), decided),
            ClaimRule::ResumingAHandedOffRun => c.ite(
                self.is(real, claimed::HANDED_OFF),
                c.ite(
                    spent,
                    self.int(claimed::EXHAUSTED),
                    self.int(claimed::OWNER),
                ),
                real,
            ),
        };
        let owner = self.is(answer, claimed::OWNER);
        let (answered, writes, written) = match rule {
            ClaimRule::Real | ClaimRule::IgnoringTheFloor | ClaimRule::ResumingAHandedOffRun => {
                (next, owner, next)
            }
            ClaimRule::ByReading => (next, c.false_(), next),
            ClaimRule::WithoutAdvancing => {
                let issued = c.gt(epoch, self.int(0));
                (
                    c.ite(issued, epoch, next),
                    c.and(owner, c.not(issued)),
                    next,
                )
            }
            ClaimRule::FinalRunWritesAnEpoch => {
                let fated = self.one_of(answer, &[claimed::HANDED_OFF, claimed::FINISHED]);
                let more = c.lt(epoch, self.int(LAST));
                (
                    next,
                    c.or(owner, c.and(fated, more)),
                    c.ite(owner, next, c.plus(epoch, self.int(1))),
                )
            }
        };
        ClaimTerms {
            answer,
            epoch: answered,
            writes,
            written,
        }
    }

    /// The append (`finish` false) or finish rule `rule` on a Run at
    /// `current` with `fate` (not contradictory: the write rules read a
    /// `Fate`), for a write under `epoch` whose row is (`same`) or is not
    /// the one durable: a [`wrote`] code.
    pub fn write(
        &self,
        rule: WriteRule,
        finish: bool,
        current: SExpr,
        fate: SExpr,
        epoch: SExpr,
        same: SExpr,
    ) -> SExpr {
        let c = self.ctx;
        let (current, epoch) = match rule {
            WriteRule::Real => (current, epoch),
            WriteRule::IgnoringTheEpoch => {
                let current = self.max(current, self.int(1));
                (current, current)
            }
        };
        let (mine, other) = if finish {
            (fate::FINISHED, fate::HANDED_OFF)
        } else {
            (fate::HANDED_OFF, fate::FINISHED)
        };
        let (mine_refused, other_refused) = if finish {
            (wrote::ALREADY_FINISHED, wrote::ALREADY_HANDED_OFF)
        } else {
            (wrote::ALREADY_HANDED_OFF, wrote::ALREADY_FINISHED)
        };
        let by_fate = c.ite(
            self.is(fate, fate::OPEN),
            self.int(wrote::WRITTEN),
            c.ite(
                self.is(fate, mine),
                c.ite(
                    same,
                    self.int(wrote::ALREADY_DURABLE),
                    self.int(mine_refused),
                ),
                c.ite(
                    self.is(fate, other),
                    self.int(other_refused),
                    self.int(wrote::RETIRED),
                ),
            ),
        );
        c.ite(
            self.is(fate, fate::RETIRED),
            self.int(wrote::RETIRED),
            c.ite(
                c.or(self.is(epoch, 0), c.gt(epoch, current)),
                self.int(wrote::NOT_ISSUED),
                c.ite(c.lt(epoch, current), self.int(wrote::FENCED), by_fate),
            ),
        )
    }

    /// The retire rule `rule` on a root whose Run is at `epoch` with
    /// `fate` (held by the log once an epoch was issued; the root's
    /// tombstone for [`fate::RETIRED`]), whose successor is `successor`
    /// ([`fate::ABSENT`], [`fate::OPEN`] or [`fate::FINISHED`]), and whose
    /// other Runs are `others_` (an [`others`] code).
    pub fn retire(
        &self,
        rule: RetireRule,
        epoch: SExpr,
        fate: SExpr,
        successor: SExpr,
        others_: SExpr,
    ) -> RetireTerms {
        let c = self.ctx;
        let run_held = c.gt(epoch, self.int(0));
        let successor_held = c.not(self.is(successor, fate::ABSENT));
        let others_held = c.not(self.is(others_, others::NONE));
        let run_final = self.handed_off_or_finished(fate);
        let successor_final = self.is(successor, fate::FINISHED);
        let open = c.or_many([
            c.and(run_held, c.not(run_final)),
            c.and(successor_held, c.not(successor_final)),
            self.is(others_, others::OPEN),
        ]);
        let waiting = c.or(
            c.and_many([
                run_held,
                self.is(fate, fate::HANDED_OFF),
                c.not(successor_final),
            ]),
            self.is(others_, others::WAITING),
        );
        let real = c.ite(
            self.is(fate, fate::RETIRED),
            self.int(retired::ALREADY),
            c.ite(
                c.not(c.or_many([run_held, successor_held, others_held])),
                self.int(retired::NOTHING),
                c.ite(
                    c.or(open, waiting),
                    self.int(retired::RUN_OPEN),
                    self.int(retired::REMOVED),
                ),
            ),
        );
        let run_open = self.is(real, retired::RUN_OPEN);
        let answer = match rule {
            RetireRule::Real | RetireRule::WithoutATombstone => real,
            RetireRule::IgnoringOpenRuns => c.ite(run_open, self.int(retired::REMOVED), real),
            RetireRule::CountingAHandoffAsEnded => c.ite(
                c.and(run_open, c.not(open)),
                self.int(retired::REMOVED),
                real,
            ),
        };
        RetireTerms {
            answer,
            tombstone: match rule {
                RetireRule::WithoutATombstone => c.false_(),
                _ => c.true_(),
            },
        }
    }
}
