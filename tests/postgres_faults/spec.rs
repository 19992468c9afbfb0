//! The sequential specification the second checker (`linearizable.rs`)
//! holds each root's history to: one root Run's rows in the log, and what
//! each operation answers on them, written from docs/SPEC.md's tables (§6
//! "Per-Run state of the log", §6.1) and nothing else.
//!
//! - `claim(run)`: `Retired` once the root is retired; the pause or the
//!   outcome of a Run that holds one; else `Owner(e)`, `e` above every
//!   epoch of the Run (SPEC: `max(c, floor) + 1`; the floor, a server's
//!   timeline, is not in the history, so any larger `e`).
//! - `append(run, e, pause)` and `finish(run, e, outcome)`: `Retired`
//!   before any epoch check; `EpochNotIssued(c)` if `e = 0` or `e > c`;
//!   `Fenced(c)` if `e < c`; then by the Run's fate: open — `Written`;
//!   the identical record — `AlreadyDurable`; another pause —
//!   `AlreadyHandedOff`; another outcome, or an append to a finished Run
//!   — `AlreadyFinished`; a finish of a handed-off Run —
//!   `AlreadyHandedOff`.
//! - `retire(root)`: `AlreadyRetired`; `NothingToRetire` if the log holds
//!   no Run of it; `RunOpen`, naming the least id among its open Runs
//!   and the successors its pauses name that are not final; else
//!   `Retired { runs }`, and its rows are gone. A sweep's batch retires a
//!   root by the same rule.
//!
//! - `seal(run, e, pause)`: a requester's `wait()` answered the pause
//!   appended under `e` (R2: a seal told to the requester is durable): the
//!   Run holds that pause under that epoch, or the root is retired (its
//!   rows gone, every Run of it final).
//!
//! An operation in flight (its outcome unknown) may take effect: `invoke`
//! is that effect. A claim's epoch is then unknown, only that it is above
//! the Run's last: an answer naming the epoch (`Fenced(c)`, a write
//! under it) says which.

use std::collections::BTreeMap;

use stateright::semantics::SequentialSpec;

/// A pause (id, digest, successor) or an outcome (id, digest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub id: String,
    pub digest: String,
    pub successor: String,
}

/// An operation on one root's rows.
#[derive(Clone, Debug)]
pub enum Op {
    Claim(String),
    Append {
        run: String,
        epoch: u64,
        pause: Held,
    },
    Finish {
        run: String,
        epoch: u64,
        outcome: Held,
    },
    /// `retire` of the root, by name.
    Retire,
    /// A sweep's batch, as it concerns this root: it retired it.
    Sweep,
    /// A requester's `wait()` answered the pause `pause` of `run`,
    /// appended under `epoch`.
    Seal {
        run: String,
        epoch: u64,
        pause: String,
    },
    /// The final read-back of the root's rows.
    Read,
    /// A record the checker cannot read: no order explains it.
    Unreadable,
}

/// What the server holds for a root at the end: retired or not, and per
/// Run its epoch, its pause (with the epoch it was appended under) and its
/// outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub retired: bool,
    pub runs: BTreeMap<String, HeldRun>,
}

/// A Run's rows at the end: its epoch, its pause (and the epoch it was
/// appended under), its outcome.
pub type HeldRun = (u64, Option<(u64, Held)>, Option<Held>);

/// An answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Owner(u64),
    HandedOff(Held),
    Finished(Held),
    /// A claim answered `Retired`, or a write refused `Retired`.
    Retired,
    Written,
    AlreadyDurable,
    Fenced(u64),
    EpochNotIssued(u64),
    AlreadyHandedOff,
    AlreadyFinished,
    RetiredNow(u64),
    AlreadyRetired,
    /// The Run it names (`None`: a control's answer that names none).
    RunOpen(Option<String>),
    NothingToRetire,
    /// A sweep's batch retired the root.
    Swept,
    /// A requester saw the pause sealed.
    Sealed,
    Read(Snapshot),
    /// An answer no operation gives.
    Other(String),
    /// What `invoke` returns: an operation in flight has no answer.
    Unknown,
}

impl Answer {
    /// Reads the words of a record's outcome.
    pub fn parse(words: &[&str]) -> Answer {
        let number = |w: &str| w.parse().unwrap_or(u64::MAX);
        let held = |id: &str, digest: &str, successor: &str| Held {
            id: id.to_owned(),
            digest: digest.to_owned(),
            successor: successor.to_owned(),
        };
        match words {
            ["ok", "owner", e] => Answer::Owner(number(e)),
            ["ok", "handed-off", id, digest, successor] => {
                Answer::HandedOff(held(id, digest, successor))
            }
            ["ok", "finished", id, digest] => Answer::Finished(held(id, digest, "")),
            ["ok", "retired"] | ["refused", "retired"] => Answer::Retired,
            ["ok", "written"] => Answer::Written,
            ["ok", "already"] => Answer::AlreadyDurable,
            ["refused", "fenced", c] => Answer::Fenced(number(c)),
            ["refused", "epoch-not-issued", c] => Answer::EpochNotIssued(number(c)),
            ["refused", "already-handed-off"] => Answer::AlreadyHandedOff,
            ["refused", "already-finished"] => Answer::AlreadyFinished,
            ["ok", "retired-now", runs] => Answer::RetiredNow(number(runs)),
            ["ok", "already-retired"] => Answer::AlreadyRetired,
            ["refused", "run-open", "?"] => Answer::RunOpen(None),
            ["refused", "run-open", run] => Answer::RunOpen(Some((*run).to_owned())),
            ["refused", "nothing-to-retire"] => Answer::NothingToRetire,
            other => Answer::Other(other.join(" ")),
        }
    }
}

/// A Run's epoch: known, or some number above this one (a claim in
/// flight took effect).
#[derive(Clone, Copy, Debug)]
enum Epoch {
    Is(u64),
    Above(u64),
}

impl Epoch {
    fn below(self) -> u64 {
        match self {
            Epoch::Is(c) | Epoch::Above(c) => c,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Fate {
    Open,
    /// Handed off under this epoch.
    HandedOff(u64, Held),
    Finished(Held),
}

#[derive(Clone, Debug)]
struct Run {
    epoch: Epoch,
    fate: Fate,
}

/// A slip planted in the specification for the checker's self-tests
/// (issue 60): each makes it accept a history SPEC refuses, and
/// `checker_tests` holds a history that tells each apart from the real
/// specification, so a slip like it in `spec.rs` would not go unseen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Slip {
    #[default]
    None,
    /// A claim's new epoch at or above the last (`>=` for `>`): an epoch
    /// answered twice passes.
    EpochTwice,
    /// A stale write (`e < c`) answered `Written` passes, writing nothing.
    StaleWritten,
    /// A seal taken on trust, never held against the rows (no R2).
    SealTrusted,
}

/// One root's rows: its Runs (each one a claim took into an epoch), and
/// whether it is retired.
#[derive(Clone, Debug, Default)]
pub struct RootLog {
    runs: BTreeMap<String, Run>,
    retired: bool,
    slip: Slip,
}

impl RootLog {
    /// An empty root whose specification carries `slip`.
    pub fn with_slip(slip: Slip) -> Self {
        RootLog {
            slip,
            ..RootLog::default()
        }
    }

    /// The least id among the open Runs and the successors the pauses
    /// name that are not final: what `RunOpen` names.
    fn first_open(&self) -> Option<&str> {
        let is_final = |run: &str| {
            self.runs
                .get(run)
                .is_some_and(|r| !matches!(r.fate, Fate::Open))
        };
        let open = self
            .runs
            .iter()
            .filter(|(_, r)| r.fate == Fate::Open)
            .map(|(run, _)| run.as_str());
        let waiting = self.runs.values().filter_map(|r| match &r.fate {
            Fate::HandedOff(_, pause) if !is_final(&pause.successor) => {
                Some(pause.successor.as_str())
            }
            _ => None,
        });
        open.chain(waiting).min()
    }

    /// Whether the root's work has ended (G5).
    fn ended(&self) -> bool {
        !self.runs.is_empty() && self.first_open().is_none()
    }

    fn retire_now(&mut self) {
        self.retired = true;
        self.runs.clear();
    }

    fn claim(&mut self, run: &str, answer: &Answer) -> bool {
        if self.retired {
            return *answer == Answer::Retired;
        }
        match self.runs.get(run).map(|r| &r.fate) {
            Some(Fate::HandedOff(_, pause)) => *answer == Answer::HandedOff(pause.clone()),
            Some(Fate::Finished(outcome)) => *answer == Answer::Finished(outcome.clone()),
            Some(Fate::Open) | None => {
                let below = self.runs.get(run).map_or(0, |r| r.epoch.below());
                match answer {
                    Answer::Owner(e)
                        if *e > below || (self.slip == Slip::EpochTwice && *e == below) =>
                    {
                        let fate = Fate::Open;
                        self.runs.insert(
                            run.to_owned(),
                            Run {
                                epoch: Epoch::Is(*e),
                                fate,
                            },
                        );
                        true
                    }
                    _ => false,
                }
            }
        }
    }

    /// An append (`finish` false) or a finish of `run` under `e`.
    fn write(&mut self, run: &str, e: u64, record: &Held, finish: bool, answer: &Answer) -> bool {
        if self.retired {
            return *answer == Answer::Retired;
        }
        let Some(r) = self.runs.get_mut(run) else {
            // Never claimed: its epoch is 0.
            return *answer == Answer::EpochNotIssued(0);
        };
        let c = match (r.epoch, answer) {
            (Epoch::Is(c), _) => c,
            (Epoch::Above(a), Answer::Fenced(c) | Answer::EpochNotIssued(c)) if *c > a => *c,
            (
                Epoch::Above(a),
                Answer::Written
                | Answer::AlreadyDurable
                | Answer::AlreadyHandedOff
                | Answer::AlreadyFinished,
            ) if e > a => e,
            _ => return false,
        };
        r.epoch = Epoch::Is(c);
        if self.slip == Slip::StaleWritten && e < c && *answer == Answer::Written {
            return true;
        }
        let expected = if e == 0 || e > c {
            Answer::EpochNotIssued(c)
        } else if e < c {
            Answer::Fenced(c)
        } else {
            match (&r.fate, finish) {
                (Fate::Open, false) => {
                    r.fate = Fate::HandedOff(c, record.clone());
                    Answer::Written
                }
                (Fate::Open, true) => {
                    r.fate = Fate::Finished(record.clone());
                    Answer::Written
                }
                (Fate::HandedOff(_, pause), false) if pause == record => Answer::AlreadyDurable,
                (Fate::Finished(outcome), true) if outcome == record => Answer::AlreadyDurable,
                (Fate::HandedOff(..), _) => Answer::AlreadyHandedOff,
                (Fate::Finished(_), _) => Answer::AlreadyFinished,
            }
        };
        *answer == expected
    }

    fn retire(&mut self, answer: &Answer) -> bool {
        if self.retired {
            return *answer == Answer::AlreadyRetired;
        }
        if self.runs.is_empty() {
            return *answer == Answer::NothingToRetire;
        }
        if let Some(open) = self.first_open() {
            return match answer {
                Answer::RunOpen(Some(named)) => named == open,
                Answer::RunOpen(None) => true,
                _ => false,
            };
        }
        let runs = self.runs.len() as u64;
        self.retire_now();
        *answer == Answer::RetiredNow(runs)
    }

    fn read(&self, snapshot: &Snapshot) -> bool {
        if snapshot.retired != self.retired || snapshot.runs.len() != self.runs.len() {
            return false;
        }
        self.runs.iter().all(|(run, r)| {
            let Some((epoch, pause, outcome)) = snapshot.runs.get(run) else {
                return false;
            };
            let epoch_held = match r.epoch {
                Epoch::Is(c) => *epoch == c,
                Epoch::Above(a) => *epoch > a,
            };
            let fate_held = match (&r.fate, pause, outcome) {
                (Fate::Open, None, None) => true,
                (Fate::HandedOff(e, p), Some((held_e, held)), None) => e == held_e && p == held,
                (Fate::Finished(o), None, Some(held)) => o == held,
                _ => false,
            };
            epoch_held && fate_held
        })
    }
}

impl SequentialSpec for RootLog {
    type Op = Op;
    type Ret = Answer;

    /// An operation in flight that takes effect.
    fn invoke(&mut self, op: &Op) -> Answer {
        match op {
            Op::Claim(run) if !self.retired => {
                let below = self.runs.get(run).map(|r| (r.epoch.below(), &r.fate));
                match below {
                    None => {
                        let epoch = Epoch::Above(0);
                        let fate = Fate::Open;
                        self.runs.insert(run.clone(), Run { epoch, fate });
                    }
                    Some((c, Fate::Open)) => {
                        self.runs.get_mut(run).expect("held").epoch = Epoch::Above(c);
                    }
                    Some(_) => {}
                }
            }
            Op::Append { run, epoch, pause } => self.write_in_flight(run, *epoch, pause, false),
            Op::Finish {
                run,
                epoch,
                outcome,
            } => self.write_in_flight(run, *epoch, outcome, true),
            Op::Retire | Op::Sweep if !self.retired && self.ended() => self.retire_now(),
            _ => {}
        }
        Answer::Unknown
    }

    fn is_valid_step(&mut self, op: &Op, answer: &Answer) -> bool {
        match op {
            Op::Claim(run) => self.claim(run, answer),
            Op::Append { run, epoch, pause } => self.write(run, *epoch, pause, false, answer),
            Op::Finish {
                run,
                epoch,
                outcome,
            } => self.write(run, *epoch, outcome, true, answer),
            Op::Retire => self.retire(answer),
            Op::Sweep => {
                let ok = *answer == Answer::Swept && !self.retired && self.ended();
                if ok {
                    self.retire_now();
                }
                ok
            }
            Op::Seal { run, epoch, pause } => {
                let held = match self.runs.get(run).map(|r| &r.fate) {
                    Some(Fate::HandedOff(e, held)) => e == epoch && held.id == *pause,
                    _ => false,
                };
                *answer == Answer::Sealed
                    && (held || self.retired || self.slip == Slip::SealTrusted)
            }
            Op::Read => matches!(answer, Answer::Read(snapshot) if self.read(snapshot)),
            Op::Unreadable => false,
        }
    }
}

impl RootLog {
    /// A write in flight that takes effect: it wrote, under the Run's
    /// epoch (which is then `e`).
    fn write_in_flight(&mut self, run: &str, e: u64, record: &Held, finish: bool) {
        if self.retired {
            return;
        }
        let Some(r) = self.runs.get_mut(run) else {
            return;
        };
        let current = match r.epoch {
            Epoch::Is(c) => c,
            Epoch::Above(a) if e > a => e,
            Epoch::Above(_) => return,
        };
        if e == current && r.fate == Fate::Open {
            r.epoch = Epoch::Is(e);
            r.fate = if finish {
                Fate::Finished(record.clone())
            } else {
                Fate::HandedOff(e, record.clone())
            };
        }
    }
}
