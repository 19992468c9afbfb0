//! Fenced handoff (SPEC §6): one Run, its canonical log, an owner that
//! claims it, and the workers the owner starts — checked around the real
//! pure rules every store applies, `baton::durable::claim_step`,
//! `baton::durable::append_step`, `baton::durable::finish_step` and
//! `baton::durable::retire_step` (the stores' own tests check that each
//! store applies exactly those rules, inside one transaction).
//!
//! **Failure model** (SPEC §6, no less): a worker may crash at any point;
//! it may also *pause* for any time and then go on — a zombie — which here
//! is simply a worker that takes no step for a while: every interleaving of
//! its steps with everyone else's is explored. The owner may suspect a live
//! worker (a wrong suspicion: it claims the Run again while the worker
//! lives). An append (or a finish) may commit with its reply lost (the
//! worker's `append_then_seal` then closes its gate without a seal), or be
//! lost before it reaches the log. The log's operations are atomic, and
//! what it acknowledged survives (a store's restart loses nothing
//! acknowledged, so it is not a separate event here).
//!
//! **The third fate and retention** ([`Setup::finish`], [`Setup::retire`]).
//! With `finish` on, a worker may end the Run instead of handing it off: it
//! records its outcome (payload `i`, like its pause) under its epoch with
//! `finish_step`, fenced like an append and with the same lost request and
//! lost reply. With `retire` on, an operator's retention job calls
//! `retire_step` on what the log holds for the root Run at any moment,
//! concurrently with everything else; when it answers `Retired` the log
//! removes the Run's rows and keeps the tombstone, exactly as `MemoryLog`
//! does: the Run's epoch is back to none, no pause, no finish, the
//! tombstone set. A root never claimed holds no Run: the rule refuses it
//! (`NothingToRetire`), as every store does.
//!
//! **The successor** (with [`Setup::retire`], issue 43). A durable pause
//! names its successor, a second Run of the same root, which must stay
//! claimable until it is final (G1). Once a pause is durable (its reply
//! received or lost), the successor's own owner may claim it with the real
//! `claim_step` on what the log holds for it, and its worker finishes it
//! with the real `finish_step` under the epoch that claim answered (the
//! successor only finishes: no takeover, no fault, no handoff of its own).
//! Retention passes `retire_step` every Run of the root the log holds:
//! the root once claimed, the successor once claimed, each with its fate,
//! and the removal takes both Runs' rows.
//!
//! **Bounds.** The owner starts at most [`Setup::workers`] workers (one per
//! claim that answers `Owner`: takeovers up to `workers - 1`). Faults
//! (crashes, wrong suspicions, lost messages) happen only while another
//! claim may still follow them: "once faults stop", R5 asks that the Run
//! reaches a decision, and the last worker is the one after the faults.
//! Retention is not a fault: it may run (or not) at any time.
//!
//! **Abstraction.** Each worker's gate is abstracted to its phases
//! (working, committed to a pause, appended, sealed): the gate's own
//! protocol is proven by [`crate::gate`], the worker's last step is the
//! real rule of `append_then_seal`, `baton::durable::seal_step` (seal on an
//! acknowledged append; close without a seal on any error, a lost reply
//! being a storage error; `Fenced`: close and stop), and worker `i`'s pause
//! is its own (payload `i`), so the log says whose pause is durable. A
//! finish has no gate: an acknowledged finish ends the worker, a `Fenced`
//! one stops it, any other answer (a lost reply too) closes it, and the
//! owner's next claim learns the fate from the log.
//!
//! [`props`] holds R1–R10, R5 as liveness, the promises G1 and G3–G5 of
//! SPEC §6.1, and the coverage; [`VARIANTS`]
//! the broken rules the checker must catch, the first of them the design
//! before fencing (the owner decides by reading the log).

pub mod props;
pub mod report;
pub mod variants;

pub use variants::{VARIANTS, Variant, by_name};

use std::sync::Arc;

use baton::durable::{
    AppendStep, Appended, Claim, ClaimStep, Epoch, Fate, Finished, LogError, Receipt, Retirement,
    RunFacts, SealError, SealStep, append_step, claim_step, finish_step, retire_step, seal_step,
};
use baton::{HandoffIntent, HandoffPause, Invocation};

use crate::explore::{Fairness, Model, Successor};

/// The most workers a configuration may start.
pub const MAX_WORKERS: usize = 4;

/// The root Run and the Run of the model.
const ROOT: &str = "root";

/// The successor every worker's pause names: a second Run of the root.
const SUCCESSOR: &str = "successor";

/// The successor's outcome (the root's workers' payloads are their
/// indices, below [`MAX_WORKERS`]).
const SUCCESSOR_OUTCOME: u8 = MAX_WORKERS as u8;

/// Where a worker is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Phase {
    /// Not started (no claim gave it an epoch yet).
    #[default]
    Idle,
    /// Running the Run with the epoch it holds.
    Working,
    /// Its gate committed a handoff: its pause is ready to append.
    Committed,
    /// Its append was acknowledged: it may seal.
    Acked,
    /// Sealed: its requester was told `Some` (done).
    Sealed,
    /// Its append (or finish) answered `Fenced`: gate closed, stopped
    /// (done).
    Fenced,
    /// Its append (or finish) failed or its reply was lost: gate closed
    /// without a seal (done).
    Closed,
    /// Crashed (done).
    Crashed,
    /// Its Run ended: its outcome is ready to record ([`Setup::finish`]).
    Finishing,
    /// Its finish was acknowledged: the Run is over (done).
    Finished,
}

impl Phase {
    const ALL: [Phase; 10] = [
        Phase::Idle,
        Phase::Working,
        Phase::Committed,
        Phase::Acked,
        Phase::Sealed,
        Phase::Fenced,
        Phase::Closed,
        Phase::Crashed,
        Phase::Finishing,
        Phase::Finished,
    ];

    /// Whether the worker is alive and still acting on the Run.
    pub fn live(self) -> bool {
        matches!(
            self,
            Phase::Working | Phase::Committed | Phase::Acked | Phase::Finishing
        )
    }
}

/// Where the successor a durable pause names is ([`Setup::retire`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Succ {
    /// No durable pause names it yet.
    #[default]
    Unnamed,
    /// A durable pause names it: its owner may claim it.
    Due,
    /// Its claim answered `Owner`: its worker runs it.
    Working,
    /// Its outcome was acknowledged: it is final (done).
    Finished,
    /// Its claim or its finish was refused: the handoff never reached it
    /// (G1 broken; done).
    Refused,
}

impl Succ {
    const ALL: [Succ; 5] = [
        Succ::Unnamed,
        Succ::Due,
        Succ::Working,
        Succ::Finished,
        Succ::Refused,
    ];
}

/// What the owner knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Owner {
    /// The Run is the workers' (no claim answered a final fate).
    #[default]
    Open,
    /// A claim answered `HandedOff`: the successor owns the Run.
    Successor,
    /// A claim answered `Finished`: the Run is over.
    Finished,
    /// A claim answered `Retired`: the Run's rows are gone.
    Retired,
}

impl Owner {
    const ALL: [Owner; 4] = [
        Owner::Open,
        Owner::Successor,
        Owner::Finished,
        Owner::Retired,
    ];
}

/// A global state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FSys {
    /// The log: the Run's current epoch (0: never claimed, or its rows
    /// removed).
    pub epoch: u8,
    /// The log: whose pause is durable (worker index + 1), 0 for none.
    pub pause: u8,
    /// The log: whose outcome is durable (worker index + 1), 0 for none.
    pub finish: u8,
    /// The log: the root Run's tombstone (retired).
    pub retired: bool,
    /// The owner's knowledge.
    pub owner: Owner,
    /// Each worker's phase, by the order the owner started them.
    pub phase: [Phase; MAX_WORKERS],
    /// The epoch each worker holds (from the claim that started it).
    pub held: [u8; MAX_WORKERS],
    /// The log: the successor's epoch (0: not claimed, or its rows
    /// removed).
    pub succ_epoch: u8,
    /// The log: whether the successor's outcome is durable.
    pub succ_finish: bool,
    /// Where the successor is.
    pub succ: Succ,
    /// The epoch the successor's worker holds (from its claim).
    pub succ_held: u8,
}

impl FSys {
    /// How many workers the owner started.
    pub fn started(&self) -> usize {
        self.phase.iter().filter(|p| **p != Phase::Idle).count()
    }

    /// Whether a live worker holds the Run's current epoch.
    pub fn current_worker_lives(&self) -> bool {
        (0..MAX_WORKERS).any(|i| self.phase[i].live() && self.held[i] == self.epoch)
    }

    /// Whether the log holds a final fate for the Run (a pause or an
    /// outcome; the tombstone is the root's).
    pub fn has_fate(&self) -> bool {
        self.pause > 0 || self.finish > 0
    }

    /// Whether the log holds the tombstone only: no epoch, no pause, no
    /// finish, of the root or of its successor (R10).
    pub fn tombstone_only(&self) -> bool {
        self.retired
            && self.epoch == 0
            && !self.has_fate()
            && self.succ_epoch == 0
            && !self.succ_finish
    }

    /// What the log holds (G3 compares it before and after a refusal).
    pub fn log(&self) -> (u8, u8, u8, bool, u8, bool) {
        (
            self.epoch,
            self.pause,
            self.finish,
            self.retired,
            self.succ_epoch,
            self.succ_finish,
        )
    }
}

/// What happened in a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FAct {
    /// The owner claimed the Run: after its worker was gone (a restart), or
    /// while a worker lived (`suspicion`); what the claim answered.
    Claim {
        /// Whether a worker holding the current epoch was alive.
        suspicion: bool,
        /// The answer: `Some(worker)` started, `None` a final fate (the
        /// owner's knowledge says which).
        started: Option<u8>,
        /// A refusal, if the claim failed (contradictory facts).
        refused: bool,
    },
    /// Worker `i`'s gate committed a handoff.
    Commit(u8),
    /// Worker `i` appended; what the log answered, and whether the reply
    /// (or the request, when nothing was written) was lost.
    Append {
        /// The worker.
        worker: u8,
        /// What the log did.
        answer: Answer,
        /// Whether the worker learnt it.
        lost: bool,
    },
    /// Worker `i`'s request (an append or a finish) was lost before
    /// reaching the log.
    RequestLost(u8),
    /// Worker `i` sealed.
    Seal(u8),
    /// Worker `i` crashed.
    Crash(u8),
    /// Worker `i`'s Run ended: its outcome is ready to record.
    End(u8),
    /// Worker `i` recorded its outcome (`finish`); what the log answered,
    /// and whether the reply was lost.
    Finish {
        /// The worker.
        worker: u8,
        /// What the log did.
        answer: Answer,
        /// Whether the worker learnt it.
        lost: bool,
    },
    /// The retention job retired the root Run; what the log answered.
    Retire(Retired),
    /// The successor's owner claimed it; what the claim answered.
    SuccClaim(SuccClaimed),
    /// The successor's worker recorded its outcome; what the log answered.
    SuccFinish(Answer),
}

/// What a claim of the successor answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SuccClaimed {
    /// `Owner`: its worker starts with the epoch.
    Owner,
    /// `Retired`: the root's rows are gone, the successor with them.
    Retired,
    /// A final fate (`HandedOff`, `Finished`): not this model's successor.
    Final,
    /// An error (contradictory facts, epochs exhausted).
    Refused,
}

/// What the log answered an append or a finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// Written now.
    Written,
    /// The identical row was durable.
    AlreadyDurable,
    /// A newer epoch owns the Run.
    Fenced,
    /// Another pause is durable.
    AlreadyHandedOff,
    /// The Run finished.
    AlreadyFinished,
    /// The root Run is retired.
    Retired,
    /// Any other refusal (an epoch never issued).
    Refused,
}

/// What the log answered a retirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Retired {
    /// The rows were removed (`runs` of them), the tombstone kept.
    Removed {
        /// How many Runs' rows were removed (1 or 2: the root, and its
        /// successor once claimed).
        runs: u8,
        /// Whether the store kept the tombstone.
        tombstone: bool,
    },
    /// The root was already retired: nothing written.
    Already,
    /// A Run is not final yet (an open Run, or a successor a durable pause
    /// names that is not claimed or not final): `RunOpen`, nothing written.
    RunOpen,
    /// The log holds no Run of the root (never claimed): `NothingToRetire`,
    /// nothing written.
    NothingToRetire,
    /// Any other refusal.
    Refused,
}

/// The log's claim rule: the real [`claim_step`], or a broken one.
pub type ClaimFn = fn(&RunFacts<u8>) -> Result<ClaimStep<u8>, LogError>;
/// The log's append rule: the real [`append_step`], or a broken one.
pub type AppendFn = fn(
    &str,
    Epoch,
    Fate<'_, u8>,
    Epoch,
    (&Invocation, &HandoffPause<u8>),
) -> Result<AppendStep, LogError>;
/// The log's finish rule: the real [`finish_step`], or a broken one.
pub type FinishFn =
    fn(&str, Epoch, Fate<'_, u8>, Epoch, (&Invocation, &u8)) -> Result<AppendStep, LogError>;
/// The log's retire: the rule's answer for the root (whether it is retired
/// already, and every Run of it the log holds, each with its fate), and
/// whether the store keeps the tombstone when it removes the rows. The
/// real one is [`retire_step`] with the tombstone, as every store writes
/// it.
pub type RetireFn =
    for<'a> fn(&str, bool, &[(&'a str, Fate<'a, u8>)]) -> Result<(Retirement, bool), LogError>;

/// The rules a model runs: the real ones, or a variant's.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// The claim rule.
    pub claim: ClaimFn,
    /// The append rule.
    pub append: AppendFn,
    /// The finish rule.
    pub finish: FinishFn,
    /// The retire rule and its write.
    pub retire: RetireFn,
}

/// The real rule of `retire`, and the tombstone every store keeps with the
/// removal (`MemoryLog::retire`).
pub(crate) fn retire_with_tombstone(
    root_run_id: &str,
    retired: bool,
    runs: &[(&str, Fate<'_, u8>)],
) -> Result<(Retirement, bool), LogError> {
    let step = retire_step(root_run_id, retired, runs.iter().copied())?;
    Ok((step, matches!(step, Retirement::Retired { .. })))
}

impl Rules {
    /// The real rules, as every store applies them.
    pub const REAL: Rules = Rules {
        claim: claim_step,
        append: append_step,
        finish: finish_step,
        retire: retire_with_tombstone,
    };
}

/// A configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The most workers the owner starts (1..=[`MAX_WORKERS`]).
    pub workers: u8,
    /// Whether a worker may finish the Run (the third fate) instead of
    /// handing it off.
    pub finish: bool,
    /// Whether the retention job runs (it retires the root Run); with it,
    /// the successor a durable pause names is a second Run of the root,
    /// claimed and finished by its own owner and worker.
    pub retire: bool,
}

impl Setup {
    /// The handoff alone: `workers` workers, no finish, no retention.
    pub const fn handoff(workers: u8) -> Self {
        Self {
            workers,
            finish: false,
            retire: false,
        }
    }

    /// Every fate and retention: `workers` workers that may hand off or
    /// finish, the successor a durable pause names, and the retention
    /// job.
    pub const fn fates(workers: u8) -> Self {
        Self {
            workers,
            finish: true,
            retire: true,
        }
    }
}

/// A named configuration.
#[derive(Clone, Copy, Debug)]
pub struct Named {
    /// Its name in the report.
    pub name: &'static str,
    /// The configuration.
    pub setup: Setup,
}

/// The report's configurations: one to four workers (up to three
/// takeovers, epochs 1–4), handing off; then the same with the third fate,
/// the successor a durable pause names, and retention.
pub const REPORT: [Named; 6] = [
    Named {
        name: "2 workers (1 takeover)",
        setup: Setup::handoff(2),
    },
    Named {
        name: "3 workers (2 takeovers, epochs 1–3)",
        setup: Setup::handoff(3),
    },
    Named {
        name: "4 workers (3 takeovers, epochs 1–4)",
        setup: Setup::handoff(4),
    },
    Named {
        name: "2 workers, finish, the successor and retention",
        setup: Setup::fates(2),
    },
    Named {
        name: "3 workers, finish, the successor and retention",
        setup: Setup::fates(3),
    },
    Named {
        name: "4 workers, finish, the successor and retention",
        setup: Setup::fates(4),
    },
];

/// The configuration the self-test runs the handoff's broken variants on.
pub const SELF_TEST: Setup = Setup::handoff(3);

/// The configuration the self-test runs the finish's and retention's
/// broken variants on.
pub const SELF_TEST_FATES: Setup = Setup::fates(3);

/// The fenced-handoff system around a set of rules.
pub struct FenceModel {
    /// The configuration.
    pub setup: Setup,
    rules: Rules,
    source: Invocation,
    /// The successor's invocation (its Run is [`SUCCESSOR`]).
    successor: Invocation,
    /// Worker `i`'s pause.
    pauses: Vec<HandoffPause<u8>>,
}

impl FenceModel {
    /// The system around the real rules.
    pub fn new(setup: Setup) -> Self {
        Self::with_rules(setup, Rules::REAL)
    }

    /// The system around `rules`.
    pub fn with_rules(setup: Setup, rules: Rules) -> Self {
        assert!((1..=MAX_WORKERS as u8).contains(&setup.workers));
        let intent = Arc::new(HandoffIntent {
            handoff_id: "handoff".into(),
            host_epoch: "host".into(),
            root_run_id: ROOT.into(),
            successor_run_id: SUCCESSOR.into(),
            successor_invocation_id: "successor-invocation".into(),
            claim_id: "claim".into(),
        });
        Self {
            setup,
            rules,
            source: Invocation {
                session_id: "session".into(),
                turn_id: "turn".into(),
                run_id: ROOT.into(),
                invocation_id: "invocation".into(),
            },
            successor: Invocation {
                session_id: "session".into(),
                turn_id: "turn".into(),
                run_id: SUCCESSOR.into(),
                invocation_id: "successor-invocation".into(),
            },
            pauses: (0..MAX_WORKERS as u8)
                .map(|i| HandoffPause::new(Arc::clone(&intent), i))
                .collect(),
        }
    }

    fn row(&self, worker: u8) -> Appended<u8> {
        Appended {
            source: self.source.clone(),
            pause: self.pauses[usize::from(worker)].clone(),
        }
    }

    fn outcome(&self, worker: u8) -> Finished<u8> {
        Finished {
            source: self.source.clone(),
            outcome: worker,
        }
    }

    fn successor_outcome(&self) -> Finished<u8> {
        Finished {
            source: self.successor.clone(),
            outcome: SUCCESSOR_OUTCOME,
        }
    }

    /// What the log holds for the successor, as a store reads it back.
    fn successor_facts(&self, s: &FSys) -> RunFacts<u8> {
        let mut facts = RunFacts::empty(ROOT, SUCCESSOR);
        facts.epoch = Epoch::new(s.succ_epoch.into());
        if s.succ_finish {
            facts.finished = Some(self.successor_outcome());
        }
        facts.retired = s.retired;
        facts
    }

    /// What the log holds, as a store reads it back.
    fn facts(&self, s: &FSys) -> RunFacts<u8> {
        let mut facts = RunFacts::empty(ROOT, ROOT);
        facts.epoch = Epoch::new(s.epoch.into());
        if s.pause > 0 {
            facts.pauses.push(self.row(s.pause - 1));
        }
        if s.finish > 0 {
            facts.finished = Some(self.outcome(s.finish - 1));
        }
        facts.retired = s.retired;
        facts
    }

    /// The Run's durable pause and outcome rows, if any, for the write
    /// rules' [`Fate`] to borrow.
    fn fate_rows(&self, s: &FSys) -> (Option<Appended<u8>>, Option<Finished<u8>>) {
        (
            (s.pause > 0).then(|| self.row(s.pause - 1)),
            (s.finish > 0).then(|| self.outcome(s.finish - 1)),
        )
    }

    /// Whether a fault may happen in `s`: another claim can still follow.
    fn faults(&self, s: &FSys) -> bool {
        s.started() < usize::from(self.setup.workers)
    }

    /// The owner's claim, if it may claim.
    fn claim_step(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
        if s.owner != Owner::Open || s.started() >= usize::from(self.setup.workers) {
            return;
        }
        let suspicion = s.current_worker_lives();
        if suspicion && !self.faults(s) {
            return;
        }
        let fairness = if suspicion {
            Fairness::Optional
        } else {
            Fairness::Fair(0)
        };
        let mut next = *s;
        let ended = |next: &mut FSys, owner: Owner| {
            next.owner = owner;
            FAct::Claim {
                suspicion,
                started: None,
                refused: false,
            }
        };
        let act = match (self.rules.claim)(&self.facts(s)) {
            Ok(ClaimStep { answer, write }) => {
                if let Some(epoch) = write {
                    next.epoch = u8::try_from(epoch.get()).expect("epochs stay small");
                }
                match answer {
                    Claim::Owner(epoch) => {
                        let i = s.started();
                        next.phase[i] = Phase::Working;
                        next.held[i] = u8::try_from(epoch.get()).expect("epochs stay small");
                        FAct::Claim {
                            suspicion,
                            started: Some(i as u8),
                            refused: false,
                        }
                    }
                    Claim::HandedOff(_) => ended(&mut next, Owner::Successor),
                    Claim::Finished(_) => ended(&mut next, Owner::Finished),
                    Claim::Retired => ended(&mut next, Owner::Retired),
                }
            }
            Err(_) => FAct::Claim {
                suspicion,
                started: None,
                refused: true,
            },
        };
        out.push(Successor {
            action: act,
            next,
            fairness,
        });
    }

    /// A write (an append or a finish) by worker `i` and what follows:
    /// the reply received, and (while faults may happen) the reply lost and
    /// the request lost.
    fn write_steps(
        &self,
        s: &FSys,
        i: usize,
        finishing: bool,
        out: &mut Vec<Successor<FAct, FSys>>,
    ) {
        let w = i as u8;
        let (pause, finished) = self.fate_rows(s);
        // The Run's epoch and fate, as a store reads them (`MemoryLog`:
        // under the tombstone, no epoch and `Retired`).
        let (current, fate) = if s.retired {
            (Epoch::NONE, Fate::Retired)
        } else {
            let fate = match (&pause, &finished) {
                (Some(row), _) => Fate::HandedOff(row),
                (None, Some(row)) => Fate::Finished(row),
                (None, None) => Fate::Open,
            };
            (Epoch::new(s.epoch.into()), fate)
        };
        let held = Epoch::new(s.held[i].into());
        let decided = if finishing {
            (self.rules.finish)(ROOT, current, fate, held, (&self.source, &w))
        } else {
            let row = self.row(w);
            (self.rules.append)(ROOT, current, fate, held, (&row.source, &row.pause))
        };
        let (answer, mut next) = match &decided {
            Ok(AppendStep::Write) => {
                let mut next = *s;
                if finishing {
                    next.finish = w + 1;
                } else {
                    next.pause = w + 1;
                    // The durable pause names the successor: from now on
                    // it must stay claimable (G1).
                    if self.setup.retire && next.succ == Succ::Unnamed {
                        next.succ = Succ::Due;
                    }
                }
                (Answer::Written, next)
            }
            other => (answer_of(other), *s),
        };
        let after = if finishing {
            after_finish
        } else {
            after_append
        };
        let act = |lost| {
            if finishing {
                FAct::Finish {
                    worker: w,
                    answer,
                    lost,
                }
            } else {
                FAct::Append {
                    worker: w,
                    answer,
                    lost,
                }
            }
        };
        // The reply reaches the worker: its rule decides its next phase.
        next.phase[i] = after(decided.map(AppendStep::receipt));
        out.push(Successor {
            action: act(false),
            next,
            fairness: Fairness::Fair(1 + w),
        });
        if self.faults(s) {
            // The reply is lost: the log did it, the worker saw a storage
            // error, and closes (for an append: its gate, without a seal).
            next.phase[i] = after(Err(lost()));
            out.push(Successor {
                action: act(true),
                next,
                fairness: Fairness::Optional,
            });
            let mut next = *s;
            next.phase[i] = after(Err(lost()));
            out.push(Successor {
                action: FAct::RequestLost(w),
                next,
                fairness: Fairness::Optional,
            });
        }
    }

    fn worker_steps(&self, s: &FSys, i: usize, out: &mut Vec<Successor<FAct, FSys>>) {
        let w = i as u8;
        let moved = |phase: Phase| {
            let mut next = *s;
            next.phase[i] = phase;
            next
        };
        match s.phase[i] {
            Phase::Working => {
                out.push(Successor {
                    action: FAct::Commit(w),
                    next: moved(Phase::Committed),
                    fairness: Fairness::Optional,
                });
                if self.setup.finish {
                    out.push(Successor {
                        action: FAct::End(w),
                        next: moved(Phase::Finishing),
                        fairness: Fairness::Optional,
                    });
                }
            }
            Phase::Committed => self.write_steps(s, i, false, out),
            Phase::Finishing => self.write_steps(s, i, true, out),
            Phase::Acked => out.push(Successor {
                action: FAct::Seal(w),
                next: moved(Phase::Sealed),
                fairness: Fairness::Fair(1 + w),
            }),
            Phase::Idle
            | Phase::Sealed
            | Phase::Fenced
            | Phase::Closed
            | Phase::Crashed
            | Phase::Finished => {}
        }
        if self.faults(s) && s.phase[i].live() {
            out.push(Successor {
                action: FAct::Crash(w),
                next: moved(Phase::Crashed),
                fairness: Fairness::Optional,
            });
        }
    }

    /// The successor's owner and worker ([`Setup::retire`]): once a
    /// durable pause names it, its claim (the real claim rule on what the
    /// log holds for it), then its finish (the real finish rule, under the
    /// epoch its claim answered). Each is fair: the successor, once named,
    /// is run.
    fn successor_steps(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
        let fairness = Fairness::Fair(1 + MAX_WORKERS as u8);
        match s.succ {
            Succ::Due => {
                let mut next = *s;
                let answer = match (self.rules.claim)(&self.successor_facts(s)) {
                    Ok(ClaimStep { answer, write }) => {
                        if let Some(epoch) = write {
                            next.succ_epoch = u8::try_from(epoch.get()).expect("one claim");
                        }
                        match answer {
                            Claim::Owner(epoch) => {
                                next.succ = Succ::Working;
                                next.succ_held = u8::try_from(epoch.get()).expect("one claim");
                                SuccClaimed::Owner
                            }
                            Claim::Retired => SuccClaimed::Retired,
                            Claim::HandedOff(_) | Claim::Finished(_) => SuccClaimed::Final,
                        }
                    }
                    Err(_) => SuccClaimed::Refused,
                };
                if answer != SuccClaimed::Owner {
                    next.succ = Succ::Refused;
                }
                out.push(Successor {
                    action: FAct::SuccClaim(answer),
                    next,
                    fairness,
                });
            }
            Succ::Working => {
                let row = self.successor_outcome();
                let (current, fate) = if s.retired {
                    (Epoch::NONE, Fate::Retired)
                } else if s.succ_finish {
                    (Epoch::new(s.succ_epoch.into()), Fate::Finished(&row))
                } else {
                    (Epoch::new(s.succ_epoch.into()), Fate::Open)
                };
                let decided = (self.rules.finish)(
                    ROOT,
                    current,
                    fate,
                    Epoch::new(s.succ_held.into()),
                    (&self.successor, &SUCCESSOR_OUTCOME),
                );
                let mut next = *s;
                let answer = match &decided {
                    Ok(AppendStep::Write) => {
                        next.succ_finish = true;
                        Answer::Written
                    }
                    other => answer_of(other),
                };
                next.succ = match answer {
                    Answer::Written | Answer::AlreadyDurable => Succ::Finished,
                    Answer::Fenced
                    | Answer::AlreadyHandedOff
                    | Answer::AlreadyFinished
                    | Answer::Retired
                    | Answer::Refused => Succ::Refused,
                };
                out.push(Successor {
                    action: FAct::SuccFinish(answer),
                    next,
                    fairness,
                });
            }
            Succ::Unnamed | Succ::Finished | Succ::Refused => {}
        }
    }

    /// The retention job: `retire` on what the log holds for the root
    /// (until the tombstone is there: a retention job lists the roots not
    /// retired yet). It may run at any time, or never.
    fn retire_steps(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
        if !self.setup.retire || s.retired {
            return;
        }
        let (pause, finished) = self.fate_rows(s);
        let fate = match (&pause, &finished) {
            (Some(row), _) => Fate::HandedOff(row),
            (None, Some(row)) => Fate::Finished(row),
            (None, None) => Fate::Open,
        };
        let succ_row = self.successor_outcome();
        let succ_fate = if s.succ_finish {
            Fate::Finished(&succ_row)
        } else {
            Fate::Open
        };
        // The log holds a record of a Run once a claim issued it an epoch.
        let runs: Vec<(&str, Fate<'_, u8>)> = [
            (s.epoch > 0).then_some((ROOT, fate)),
            (s.succ_epoch > 0).then_some((SUCCESSOR, succ_fate)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let (answer, next) = match (self.rules.retire)(ROOT, s.retired, &runs) {
            Ok((Retirement::Retired { runs }, tombstone)) => {
                // Every Run's rows removed: no epoch, no pause, no finish.
                let next = FSys {
                    epoch: 0,
                    pause: 0,
                    finish: 0,
                    succ_epoch: 0,
                    succ_finish: false,
                    retired: tombstone,
                    ..*s
                };
                let runs = u8::try_from(runs).expect("two Runs at most");
                (Retired::Removed { runs, tombstone }, next)
            }
            Ok((Retirement::AlreadyRetired, _)) => (Retired::Already, *s),
            Err(LogError::RunOpen { .. }) => (Retired::RunOpen, *s),
            Err(LogError::NothingToRetire { .. }) => (Retired::NothingToRetire, *s),
            Err(_) => (Retired::Refused, *s),
        };
        out.push(Successor {
            action: FAct::Retire(answer),
            next,
            fairness: Fairness::Optional,
        });
    }
}

/// The worker's phase once its append answered: the real
/// [`seal_step`], the rule `append_then_seal` applies.
fn after_append(appended: Result<Receipt, LogError>) -> Phase {
    match seal_step(appended) {
        SealStep::Seal(_) => Phase::Acked,
        SealStep::Close(SealError::Fenced { .. }) => Phase::Fenced,
        // `SealError` is non-exhaustive: any other close is a close
        // without a seal.
        SealStep::Close(_) => Phase::Closed,
    }
}

/// The worker's phase once its finish answered: acknowledged, the Run is
/// over; `Fenced`, it stops (a newer epoch owns the Run); any other
/// answer (a lost reply too), it stops, and the owner's claim reads the
/// fate from the log.
fn after_finish(finished: Result<Receipt, LogError>) -> Phase {
    match finished {
        Ok(_) => Phase::Finished,
        Err(LogError::Fenced { .. }) => Phase::Fenced,
        Err(_) => Phase::Closed,
    }
}

/// What the log answered a write (an append or a finish), as the model
/// names it; a `Write` is [`Answer::Written`].
fn answer_of(decided: &Result<AppendStep, LogError>) -> Answer {
    match decided {
        Ok(AppendStep::Write) => Answer::Written,
        Ok(AppendStep::Idempotent) => Answer::AlreadyDurable,
        Err(LogError::Fenced { .. }) => Answer::Fenced,
        Err(LogError::AlreadyHandedOff { .. }) => Answer::AlreadyHandedOff,
        Err(LogError::AlreadyFinished { .. }) => Answer::AlreadyFinished,
        Err(LogError::Retired { .. }) => Answer::Retired,
        Err(_) => Answer::Refused,
    }
}

/// What a worker sees when its request or its reply is lost: a storage
/// error, the write's outcome unknown to it.
fn lost() -> LogError {
    LogError::OutcomeUnknown("the request or its reply was lost".into())
}

impl Model for FenceModel {
    type State = FSys;
    type Action = FAct;
    type Key = u64;

    fn pack(&self, s: &FSys) -> u64 {
        let owner = Owner::ALL
            .iter()
            .position(|o| *o == s.owner)
            .expect("an owner") as u64;
        let mut key = u64::from(s.epoch)
            | u64::from(s.pause) << 4
            | u64::from(s.finish) << 8
            | u64::from(s.retired) << 12
            | owner << 13;
        for i in 0..MAX_WORKERS {
            let phase = Phase::ALL
                .iter()
                .position(|p| *p == s.phase[i])
                .expect("a phase") as u64;
            key |= (phase | u64::from(s.held[i]) << 4) << (15 + 8 * i);
        }
        let succ = Succ::ALL
            .iter()
            .position(|p| *p == s.succ)
            .expect("a successor phase") as u64;
        key | (succ
            | u64::from(s.succ_epoch) << 3
            | u64::from(s.succ_finish) << 5
            | u64::from(s.succ_held) << 6)
            << 47
    }

    fn unpack(&self, key: u64) -> FSys {
        let mut s = FSys {
            epoch: (key & 0xf) as u8,
            pause: (key >> 4 & 0xf) as u8,
            finish: (key >> 8 & 0xf) as u8,
            retired: key >> 12 & 1 == 1,
            owner: Owner::ALL[(key >> 13 & 0x3) as usize],
            ..FSys::default()
        };
        for i in 0..MAX_WORKERS {
            let bits = key >> (15 + 8 * i);
            s.phase[i] = Phase::ALL[(bits & 0xf) as usize];
            s.held[i] = (bits >> 4 & 0xf) as u8;
        }
        let bits = key >> 47;
        s.succ = Succ::ALL[(bits & 0x7) as usize];
        s.succ_epoch = (bits >> 3 & 0x3) as u8;
        s.succ_finish = bits >> 5 & 1 == 1;
        s.succ_held = (bits >> 6 & 0x3) as u8;
        s
    }

    fn initial_states(&self) -> Vec<FSys> {
        vec![FSys::default()]
    }

    fn successors(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
        self.claim_step(s, out);
        for i in 0..usize::from(self.setup.workers) {
            self.worker_steps(s, i, out);
        }
        if self.setup.retire {
            self.successor_steps(s, out);
        }
        self.retire_steps(s, out);
    }
}
