//! The fence model's actions: every step a worker, the owner, the
//! successor and the operator's retention can take from a state, each
//! through the real rule functions.

use std::sync::Arc;

use baton::durable::{
    AppendStep, Appended, Claim, ClaimStep, Epoch, Fate, Finished, LogError, Receipt, Retirement,
    RunFacts, SealError, SealStep, seal_step,
};
use baton::{HandoffIntent, HandoffPause, Invocation};

use super::FenceModel;
use super::setup::Replication;
use super::setup::{Rules, Setup};
use super::state::{
    Answer, FAct, FSys, MAX_WORKERS, Owner, Phase, ROOT, Retired, SUCCESSOR, SUCCESSOR_OUTCOME,
    Succ, SuccClaimed, compact, expand,
};
use crate::explore::{Fairness, Successor};

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

    pub(super) fn row(&self, worker: u8) -> Appended<u8> {
        Appended {
            source: self.source.clone(),
            pause: self.pauses[usize::from(worker)].clone(),
        }
    }

    pub(super) fn outcome(&self, worker: u8) -> Finished<u8> {
        Finished {
            source: self.source.clone(),
            outcome: worker,
        }
    }

    pub(super) fn successor_outcome(&self) -> Finished<u8> {
        Finished {
            source: self.successor.clone(),
            outcome: SUCCESSOR_OUTCOME,
        }
    }

    /// What the log holds for the successor, as a store reads it back.
    pub(super) fn successor_facts(&self, s: &FSys) -> RunFacts<u8> {
        let mut facts = RunFacts::empty(ROOT, SUCCESSOR);
        facts.epoch = expand(s.succ_epoch);
        if s.succ_finish {
            facts.finished = Some(self.successor_outcome());
        }
        facts.retired = s.retired;
        facts
    }

    /// What the log holds, as a store reads it back.
    pub(super) fn facts(&self, s: &FSys) -> RunFacts<u8> {
        let mut facts = RunFacts::empty(ROOT, ROOT);
        facts.epoch = expand(s.epoch);
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
    pub(super) fn fate_rows(&self, s: &FSys) -> (Option<Appended<u8>>, Option<Finished<u8>>) {
        (
            (s.pause > 0).then(|| self.row(s.pause - 1)),
            (s.finish > 0).then(|| self.outcome(s.finish - 1)),
        )
    }

    /// Whether a fault may happen in `s`: another claim can still follow.
    pub(super) fn faults(&self, s: &FSys) -> bool {
        s.started() < usize::from(self.setup.workers)
    }

    /// The owner's claim, if it may claim.
    pub(super) fn claim_step(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
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
        let act = match (self.rules.claim)(&self.facts(s), s.floor()) {
            Ok(ClaimStep { answer, write }) => {
                if let Some(epoch) = write {
                    next.epoch = compact(epoch);
                }
                match answer {
                    Claim::Owner(epoch) => {
                        let i = s.started();
                        next.phase[i] = Phase::Working;
                        next.held[i] = compact(epoch);
                        FAct::Claim {
                            suspicion,
                            started: Some(i as u8),
                            refused: false,
                        }
                    }
                    Claim::HandedOff(_) => {
                        if self.setup.retire && next.succ == Succ::Unnamed {
                            // Only with a standby: without one, the pause
                            // made it due already.
                            next.succ = Succ::Due;
                        }
                        ended(&mut next, Owner::Successor)
                    }
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
    pub(super) fn write_steps(
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
            (expand(s.epoch), fate)
        };
        let held = expand(s.held[i]);
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
                    // it must stay claimable (G1). With a standby, from
                    // when a party is told of it (below).
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
            if self.setup.replication != Replication::Single {
                // Nobody was told of the pause: its successor is due once
                // a claim answers `HandedOff` (a failover may lose it
                // before).
                next.succ = s.succ;
            }
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

    pub(super) fn worker_steps(&self, s: &FSys, i: usize, out: &mut Vec<Successor<FAct, FSys>>) {
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
    pub(super) fn successor_steps(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
        let fairness = Fairness::Fair(1 + MAX_WORKERS as u8);
        match s.succ {
            Succ::Due => {
                let mut next = *s;
                let answer = match (self.rules.claim)(&self.successor_facts(s), s.floor()) {
                    Ok(ClaimStep { answer, write }) => {
                        if let Some(epoch) = write {
                            next.succ_epoch = compact(epoch);
                        }
                        match answer {
                            Claim::Owner(epoch) => {
                                next.succ = Succ::Working;
                                next.succ_held = compact(epoch);
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
                    (expand(s.succ_epoch), Fate::Finished(&row))
                } else {
                    (expand(s.succ_epoch), Fate::Open)
                };
                let decided = (self.rules.finish)(
                    ROOT,
                    current,
                    fate,
                    expand(s.succ_held),
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
    pub(super) fn retire_steps(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
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
pub(crate) fn after_append(appended: Result<Receipt, LogError>) -> Phase {
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
pub(crate) fn after_finish(finished: Result<Receipt, LogError>) -> Phase {
    match finished {
        Ok(_) => Phase::Finished,
        Err(LogError::Fenced { .. }) => Phase::Fenced,
        Err(_) => Phase::Closed,
    }
}

/// What the log answered a write (an append or a finish), as the model
/// names it; a `Write` is [`Answer::Written`].
pub(crate) fn answer_of(decided: &Result<AppendStep, LogError>) -> Answer {
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
pub(crate) fn lost() -> LogError {
    LogError::OutcomeUnknown("the request or its reply was lost".into())
}
