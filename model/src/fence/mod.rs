//! Fenced handoff (SPEC §6): one Run, its canonical log, an owner that
//! claims it, and the workers the owner starts — checked around the real
//! pure rule every store applies, `baton::durable::claim_step` and
//! `baton::durable::append_step` (the stores' own tests check that each
//! store applies exactly that rule, inside one transaction).
//!
//! **Failure model** (SPEC §6, no less): a worker may crash at any point;
//! it may also *pause* for any time and then go on — a zombie — which here
//! is simply a worker that takes no step for a while: every interleaving of
//! its steps with everyone else's is explored. The owner may suspect a live
//! worker (a wrong suspicion: it claims the Run again while the worker
//! lives). An append may commit with its reply lost (the worker's
//! `append_then_seal` then closes its gate without a seal), or be lost
//! before it reaches the log. The log's operations are atomic, and what it
//! acknowledged survives (a store's restart loses nothing acknowledged, so
//! it is not a separate event here).
//!
//! **Bounds.** The owner starts at most [`Setup::workers`] workers (one per
//! claim that answers `Owner`: takeovers up to `workers - 1`). Faults
//! (crashes, wrong suspicions, lost messages) happen only while another
//! claim may still follow them: "once faults stop", R5 asks that the Run
//! reaches a decision, and the last worker is the one after the faults.
//!
//! **Abstraction.** Each worker's gate is abstracted to its phases
//! (working, committed to a pause, appended, sealed): the gate's own
//! protocol is proven by [`crate::gate`], the worker's last step is the
//! real rule of `append_then_seal`, `baton::durable::seal_step` (seal on an
//! acknowledged append; close without a seal on any error, a lost reply
//! being a storage error; `Fenced`: close and stop), and worker `i`'s pause
//! is its own (payload `i`), so the log says whose pause is durable.
//!
//! [`props`] holds R1–R7, R5 as liveness, and the coverage; [`VARIANTS`]
//! the broken rules the checker must catch, the first of them the design
//! before fencing (the owner decides by reading the log).

pub mod props;
pub mod report;

use std::sync::Arc;

use baton::durable::{
    AppendStep, Appended, Claim, ClaimStep, Epoch, LogError, RunFacts, SealError, SealStep,
    append_step, claim_step, reconcile, seal_step,
};
use baton::{HandoffIntent, HandoffPause, Invocation};

use crate::explore::{Fairness, Model, Successor};

/// The most workers a configuration may start.
pub const MAX_WORKERS: usize = 4;

/// The root Run and the Run of the model.
const ROOT: &str = "root";

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
    /// Its append answered `Fenced`: gate closed, stopped (done).
    Fenced,
    /// Its append failed or its reply was lost: gate closed without a seal
    /// (done).
    Closed,
    /// Crashed (done).
    Crashed,
}

impl Phase {
    const ALL: [Phase; 8] = [
        Phase::Idle,
        Phase::Working,
        Phase::Committed,
        Phase::Acked,
        Phase::Sealed,
        Phase::Fenced,
        Phase::Closed,
        Phase::Crashed,
    ];

    /// Whether the worker is alive and still acting on the Run.
    pub fn live(self) -> bool {
        matches!(self, Phase::Working | Phase::Committed | Phase::Acked)
    }
}

/// What the owner knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Owner {
    /// The Run is the workers' (no claim answered `HandedOff`).
    #[default]
    Open,
    /// A claim answered `HandedOff`: the successor owns the Run.
    Successor,
}

/// A global state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FSys {
    /// The log: the Run's current epoch.
    pub epoch: u8,
    /// The log: whose pause is durable (worker index + 1), 0 for none.
    pub pause: u8,
    /// The owner's knowledge.
    pub owner: Owner,
    /// Each worker's phase, by the order the owner started them.
    pub phase: [Phase; MAX_WORKERS],
    /// The epoch each worker holds (from the claim that started it).
    pub held: [u8; MAX_WORKERS],
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
}

/// What happened in a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FAct {
    /// The owner claimed the Run: after its worker was gone (a restart), or
    /// while a worker lived (`suspicion`); what the claim answered.
    Claim {
        /// Whether a worker holding the current epoch was alive.
        suspicion: bool,
        /// The answer: `Some(worker)` started, `None` handed off.
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
    /// Worker `i`'s request was lost before reaching the log.
    RequestLost(u8),
    /// Worker `i` sealed.
    Seal(u8),
    /// Worker `i` crashed.
    Crash(u8),
}

/// What the log answered an append.
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
    /// Any other refusal (an epoch never issued).
    Refused,
}

/// The log's claim rule: the real [`claim_step`], or a broken one.
pub type ClaimFn = fn(&RunFacts<u8>) -> Result<ClaimStep<u8>, LogError>;
/// The log's append rule: the real [`append_step`], or a broken one.
pub type AppendFn = fn(
    &str,
    Epoch,
    Option<&Appended<u8>>,
    Epoch,
    (&Invocation, &HandoffPause<u8>),
) -> Result<AppendStep, LogError>;

/// A configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The most workers the owner starts (1..=[`MAX_WORKERS`]).
    pub workers: u8,
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
/// takeovers, epochs 1–4).
pub const REPORT: [Named; 3] = [
    Named {
        name: "2 workers (1 takeover)",
        setup: Setup { workers: 2 },
    },
    Named {
        name: "3 workers (2 takeovers, epochs 1–3)",
        setup: Setup { workers: 3 },
    },
    Named {
        name: "4 workers (3 takeovers, epochs 1–4)",
        setup: Setup { workers: 4 },
    },
];

/// The configuration the self-test runs the broken variants on.
pub const SELF_TEST: Setup = Setup { workers: 3 };

/// The fenced-handoff system around a claim and an append rule.
pub struct FenceModel {
    /// The configuration.
    pub setup: Setup,
    claim: ClaimFn,
    append: AppendFn,
    source: Invocation,
    /// Worker `i`'s pause.
    pauses: Vec<HandoffPause<u8>>,
}

impl FenceModel {
    /// The system around the real rule.
    pub fn new(setup: Setup) -> Self {
        Self::with_rule(setup, claim_step, append_step)
    }

    /// The system around `claim` and `append`.
    pub fn with_rule(setup: Setup, claim: ClaimFn, append: AppendFn) -> Self {
        assert!((1..=MAX_WORKERS as u8).contains(&setup.workers));
        let intent = Arc::new(HandoffIntent {
            handoff_id: "handoff".into(),
            host_epoch: "host".into(),
            root_run_id: ROOT.into(),
            successor_run_id: "successor".into(),
            successor_invocation_id: "successor-invocation".into(),
            claim_id: "claim".into(),
        });
        Self {
            setup,
            claim,
            append,
            source: Invocation {
                session_id: "session".into(),
                turn_id: "turn".into(),
                run_id: ROOT.into(),
                invocation_id: "invocation".into(),
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

    /// What the log holds, as a store reads it back.
    fn facts(&self, s: &FSys) -> RunFacts<u8> {
        let mut facts = RunFacts::empty(ROOT, ROOT);
        facts.epoch = Epoch::new(s.epoch.into());
        if s.pause > 0 {
            facts.pauses.push(self.row(s.pause - 1));
        }
        facts
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
        let act = match (self.claim)(&self.facts(s)) {
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
                    Claim::HandedOff(_) => {
                        next.owner = Owner::Successor;
                        FAct::Claim {
                            suspicion,
                            started: None,
                            refused: false,
                        }
                    }
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

    fn worker_steps(&self, s: &FSys, i: usize, out: &mut Vec<Successor<FAct, FSys>>) {
        let w = i as u8;
        let fair = Fairness::Fair(1 + w);
        let faults = self.faults(s);
        let moved = |phase: Phase| {
            let mut next = *s;
            next.phase[i] = phase;
            next
        };
        match s.phase[i] {
            Phase::Working => out.push(Successor {
                action: FAct::Commit(w),
                next: moved(Phase::Committed),
                fairness: Fairness::Optional,
            }),
            Phase::Committed => {
                let row = self.row(w);
                let existing = (s.pause > 0).then(|| self.row(s.pause - 1));
                let decided = (self.append)(
                    ROOT,
                    Epoch::new(s.epoch.into()),
                    existing.as_ref(),
                    Epoch::new(s.held[i].into()),
                    (&row.source, &row.pause),
                );
                let (answer, mut next) = match &decided {
                    Ok(AppendStep::Write) => {
                        let mut next = *s;
                        next.pause = w + 1;
                        (Answer::Written, next)
                    }
                    Ok(AppendStep::Idempotent) => (Answer::AlreadyDurable, *s),
                    Err(LogError::Fenced { .. }) => (Answer::Fenced, *s),
                    Err(LogError::AlreadyHandedOff { .. }) => (Answer::AlreadyHandedOff, *s),
                    Err(_) => (Answer::Refused, *s),
                };
                // The reply reaches the worker: append_then_seal's rule
                // decides its next phase.
                next.phase[i] = after_append(decided.map(AppendStep::receipt));
                out.push(Successor {
                    action: FAct::Append {
                        worker: w,
                        answer,
                        lost: false,
                    },
                    next,
                    fairness: fair,
                });
                if faults {
                    // The reply is lost: the log did it, the worker saw a
                    // storage error, and the rule closes its gate without
                    // a seal.
                    next.phase[i] = after_append(Err(lost()));
                    out.push(Successor {
                        action: FAct::Append {
                            worker: w,
                            answer,
                            lost: true,
                        },
                        next,
                        fairness: Fairness::Optional,
                    });
                    out.push(Successor {
                        action: FAct::RequestLost(w),
                        next: moved(after_append(Err(lost()))),
                        fairness: Fairness::Optional,
                    });
                }
            }
            Phase::Acked => out.push(Successor {
                action: FAct::Seal(w),
                next: moved(Phase::Sealed),
                fairness: fair,
            }),
            Phase::Idle | Phase::Sealed | Phase::Fenced | Phase::Closed | Phase::Crashed => {}
        }
        if faults && s.phase[i].live() {
            out.push(Successor {
                action: FAct::Crash(w),
                next: moved(Phase::Crashed),
                fairness: Fairness::Optional,
            });
        }
    }
}

/// The worker's phase once its append answered: the real
/// [`seal_step`], the rule `append_then_seal` applies.
fn after_append(appended: Result<baton::durable::Receipt, LogError>) -> Phase {
    match seal_step(appended) {
        SealStep::Seal(_) => Phase::Acked,
        SealStep::Close(SealError::Fenced { .. }) => Phase::Fenced,
        // `SealError` is non-exhaustive: any other close is a close
        // without a seal.
        SealStep::Close(_) => Phase::Closed,
    }
}

/// What a worker sees when its request or its reply is lost: a storage
/// error, the append's outcome unknown to it.
fn lost() -> LogError {
    LogError::OutcomeUnknown("the request or its reply was lost".into())
}

impl Model for FenceModel {
    type State = FSys;
    type Action = FAct;
    type Key = u64;

    fn pack(&self, s: &FSys) -> u64 {
        let mut key = u64::from(s.epoch) | u64::from(s.pause) << 4 | u64::from(s.owner as u8) << 8;
        for i in 0..MAX_WORKERS {
            let phase = Phase::ALL
                .iter()
                .position(|p| *p == s.phase[i])
                .expect("a phase") as u64;
            key |= (phase | u64::from(s.held[i]) << 3) << (9 + 7 * i);
        }
        key
    }

    fn unpack(&self, key: u64) -> FSys {
        let mut s = FSys {
            epoch: (key & 0xf) as u8,
            pause: (key >> 4 & 0xf) as u8,
            owner: if key >> 8 & 1 == 1 {
                Owner::Successor
            } else {
                Owner::Open
            },
            ..FSys::default()
        };
        for i in 0..MAX_WORKERS {
            let bits = key >> (9 + 7 * i);
            s.phase[i] = Phase::ALL[(bits & 0x7) as usize];
            s.held[i] = (bits >> 3 & 0xf) as u8;
        }
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
    }
}

/// A broken rule, and the property expected to catch it.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Its name.
    pub name: &'static str,
    /// What is broken.
    pub bug: &'static str,
    /// The claim rule.
    pub claim: ClaimFn,
    /// The append rule.
    pub append: AppendFn,
    /// The property that must report it.
    pub caught_by: &'static str,
}

/// (k) The owner decides by reading: `reconcile` on the facts, no epoch
/// written — the design before fencing.
fn claim_by_reading(facts: &RunFacts<u8>) -> Result<ClaimStep<u8>, LogError> {
    let next = facts.epoch.next().ok_or(LogError::EpochsExhausted)?;
    Ok(match reconcile(facts).map_err(LogError::Contradictory)? {
        baton::durable::Decision::HandedOff(pause) => ClaimStep {
            answer: Claim::HandedOff(pause),
            write: None,
        },
        baton::durable::Decision::Resumable => ClaimStep {
            answer: Claim::Owner(next),
            write: None,
        },
    })
}

/// (k, l) An append that ignores the epoch: the real rule asked as if the
/// worker held the current epoch.
fn append_ignoring_the_epoch(
    root_run_id: &str,
    current: Epoch,
    existing: Option<&Appended<u8>>,
    _epoch: Epoch,
    new: (&Invocation, &HandoffPause<u8>),
) -> Result<AppendStep, LogError> {
    append_step(
        root_run_id,
        current.max(Epoch::new(1)),
        existing,
        current.max(Epoch::new(1)),
        new,
    )
}

/// (m) A claim that does not advance the epoch once one was issued: the
/// real rule, whose `Owner` answer is rewritten to the current epoch.
fn claim_without_advancing(facts: &RunFacts<u8>) -> Result<ClaimStep<u8>, LogError> {
    let step = claim_step(facts)?;
    Ok(match step.answer {
        Claim::Owner(_) if facts.epoch > Epoch::NONE => ClaimStep {
            answer: Claim::Owner(facts.epoch),
            write: None,
        },
        Claim::Owner(_) | Claim::HandedOff(_) => step,
    })
}

/// (n) A claim that resumes a handed-off Run: the real rule, whose
/// `HandedOff` answer is rewritten into a new epoch.
fn claim_resuming_a_handed_off_run(facts: &RunFacts<u8>) -> Result<ClaimStep<u8>, LogError> {
    let step = claim_step(facts)?;
    Ok(match step.answer {
        Claim::HandedOff(_) => {
            let next = facts.epoch.next().ok_or(LogError::EpochsExhausted)?;
            ClaimStep {
                answer: Claim::Owner(next),
                write: Some(next),
            }
        }
        Claim::Owner(_) => step,
    })
}

/// The broken rules of the fenced handoff.
pub const VARIANTS: [Variant; 4] = [
    Variant {
        name: "k_owner_decides_by_reading",
        bug: "the design before fencing: the owner reads the log and resumes; appends carry no epoch",
        claim: claim_by_reading,
        append: append_ignoring_the_epoch,
        caught_by: props::R1,
    },
    Variant {
        name: "l_append_ignores_the_epoch",
        bug: "an append is written whatever epoch it carries",
        claim: claim_step,
        append: append_ignoring_the_epoch,
        caught_by: props::R7,
    },
    Variant {
        name: "m_claim_does_not_advance_the_epoch",
        bug: "a takeover reissues the current epoch instead of a new one",
        claim: claim_without_advancing,
        append: append_step,
        caught_by: props::R1,
    },
    Variant {
        name: "n_claim_resumes_a_handed_off_run",
        bug: "a claim issues a new epoch although a pause is durable",
        claim: claim_resuming_a_handed_off_run,
        append: append_step,
        caught_by: props::R3,
    },
];

/// The variant called `name`.
pub fn by_name(name: &str) -> Option<Variant> {
    VARIANTS.iter().find(|v| v.name == name).copied()
}
