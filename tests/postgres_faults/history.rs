//! A campaign's history: the records each process writes to its own file
//! (`<n> <µs> <op> <words…>`, checked whole by [`read_transcript`]), read back into
//! operations with their invocation, completion and outcome, the seals
//! the requesters saw, and what the server holds at the end (`Truth`).
//! `checker.rs` judges them.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::child::{MAX_CHAIN, root_of};

/// One record of a process's history.
#[derive(Clone, Debug)]
pub struct Line {
    pub process: String,
    /// Its number in the process's history, from 1.
    pub seq: u64,
    pub at: u64,
    pub op: String,
    pub words: Vec<String>,
}

impl Line {
    /// Parses a record, `<n> <µs> <op> <words…>`.
    pub fn parse(process: &str, text: &str) -> Option<Line> {
        let mut words = text.split_whitespace();
        let seq = words.next()?.parse().ok()?;
        let at = words.next()?.parse().ok()?;
        let op = words.next()?.to_owned();
        Some(Line {
            process: process.to_owned(),
            seq,
            at,
            op,
            words: words.map(str::to_owned).collect(),
        })
    }

    /// Whether it is a process's trailer, `- end <n>`, and `n`.
    fn trailer(&self) -> Option<u64> {
        match (self.op.as_str(), self.words.as_slice()) {
            ("-", [end, n]) if end == "end" => n.parse().ok(),
            _ => None,
        }
    }
}

/// Reads one process's history file back, checked whole (issue 50:
/// nothing recorded is lost unseen): every line is a whole record (the
/// file ends in a newline; each record is written in one `write`, so not
/// even a SIGKILL cuts one), numbered 1, 2, 3… without a gap, and — unless
/// the campaign killed the process — the last is its trailer, `- end <n>`,
/// counting the records before it. Answers the records, the trailer left
/// out, or what is wrong, naming the process.
pub fn read_transcript(process: &str, text: &str, killed: bool) -> Result<Vec<Line>, String> {
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(format!(
            "history: {process}'s last record is cut short: {:?}",
            text.lines().last().unwrap_or_default()
        ));
    }
    let mut lines = Vec::new();
    let mut ended = None;
    for (i, text) in text.lines().enumerate() {
        let expected = i as u64 + 1;
        let line = Line::parse(process, text).ok_or_else(|| {
            format!("history: {process}'s record {expected} is not one: {text:?}")
        })?;
        if line.seq != expected {
            return Err(format!(
                "history: {process}'s record {expected} is numbered {}: {} lost",
                line.seq,
                line.seq.saturating_sub(expected)
            ));
        }
        if let Some(n) = ended {
            return Err(format!(
                "history: {process} wrote record {expected} after its trailer (end {n})"
            ));
        }
        match line.trailer() {
            Some(n) if n != expected - 1 => {
                return Err(format!(
                    "history: {process}'s trailer counts {n} records, {} read",
                    expected - 1
                ));
            }
            Some(n) => ended = Some(n),
            None => lines.push(line),
        }
    }
    if ended.is_none() && !killed {
        return Err(format!(
            "history: {process} ended without its trailer ({} records read): it panicked, or \
             its last records are lost",
            lines.len()
        ));
    }
    Ok(lines)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Claim {
        run: String,
    },
    Append {
        run: String,
        epoch: u64,
        pause: String,
        /// The digest of the pause appended.
        digest: String,
        /// The successor it names.
        successor: String,
    },
    Finish {
        run: String,
        epoch: u64,
        id: String,
        /// The digest of the outcome recorded.
        digest: String,
    },
    /// Retention of the root Run `run`: by name (`retire_async`), or, with
    /// the outcome [`Outcome::RetiredBySweep`], one root a sweep's batch
    /// retired (invoked at the batch's invocation, completed at its
    /// completion; see [`replay`]).
    Retire {
        run: String,
    },
    /// One batch of retention by age (`retire_ended_async`) of the work
    /// that ended `age` µs before the batch started, or earlier: it names
    /// no Run (its `run()` is empty); what it retired is in its outcome.
    Sweep {
        age: u64,
    },
}

impl Kind {
    pub fn run(&self) -> &str {
        match self {
            Kind::Claim { run }
            | Kind::Append { run, .. }
            | Kind::Finish { run, .. }
            | Kind::Retire { run } => run,
            Kind::Sweep { .. } => "",
        }
    }
}

/// How an operation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Owner(u64),
    /// A claim answered `HandedOff`: the pause's id, digest and successor.
    HandedOff(String, String, String),
    /// A claim answered `Finished`: the finish's id and the outcome's digest.
    Finished(String, String),
    /// A claim answered `Retired`.
    Retired,
    /// A retirement answered `Retired { runs }` (now): how many Runs it
    /// removed.
    RetiredNow(u64),
    /// A retirement answered `AlreadyRetired`.
    AlreadyRetired,
    /// A sweep's batch answered: the roots it retired, in its order, and
    /// whether its pass ended (`next` was `None`).
    Swept {
        roots: Vec<String>,
        pass_ended: bool,
    },
    /// One root a sweep's batch retired (acknowledged with the batch).
    RetiredBySweep,
    RefusedRetired,
    AlreadyFinished,
    /// A retirement refused: this Run (of the root, or a successor a
    /// durable pause names) is not final.
    RunOpen(String),
    /// A retirement refused: the log holds no Run of the root.
    NothingToRetire,
    Written,
    Already,
    Fenced(u64),
    AlreadyHandedOff,
    EpochNotIssued,
    Other(String),
    /// `Unavailable`: the log says nothing was written.
    Unavailable,
    /// No answer, or `OutcomeUnknown`: it may or may not have taken effect.
    Unknown,
}

impl Outcome {
    pub fn acknowledged(&self) -> bool {
        matches!(self, Outcome::Written | Outcome::Already)
    }
    /// A write answered so may have landed.
    pub fn may_have_written(&self) -> bool {
        matches!(self, Outcome::Written | Outcome::Already | Outcome::Unknown)
    }
    pub fn retired(&self) -> bool {
        matches!(
            self,
            Outcome::RetiredNow(_) | Outcome::AlreadyRetired | Outcome::RetiredBySweep
        )
    }
    /// A retirement answered so retired its root now (it was not already).
    pub fn retired_now(&self) -> bool {
        matches!(self, Outcome::RetiredNow(_) | Outcome::RetiredBySweep)
    }
}

#[derive(Clone, Debug)]
pub struct Op {
    pub process: String,
    pub kind: Kind,
    pub invoked: u64,
    pub completed: Option<u64>,
    pub outcome: Outcome,
}

/// A seal a requester's `wait()` saw: (process, run, epoch, pause).
pub type Seal = (String, String, u64, String);

/// A pause the server holds at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldPause {
    pub id: String,
    pub epoch: u64,
    pub digest: String,
    pub successor: String,
}

/// What the server holds at the end: per Run its epoch, its pause and its
/// finish (the finish's id and the decoded outcome's digest); and the
/// retired roots.
#[derive(Debug, Default)]
pub struct Truth {
    pub epochs: HashMap<String, u64>,
    pub pauses: HashMap<String, HeldPause>,
    pub finishes: HashMap<String, (String, String)>,
    pub retired: HashSet<String>,
}

impl Truth {
    /// Whether the root of `run` is retired.
    pub fn is_retired(&self, run: &str) -> bool {
        self.retired.contains(root_of(run))
    }

    /// As kept beside a campaign's histories: one line per fact
    /// (`epoch <run> <e>`, `pause <run> <id> <epoch> <digest> <successor>`,
    /// `finish <run> <id> <digest>`, `retired <root>`).
    pub fn to_text(&self) -> String {
        let mut lines: Vec<String> = Vec::new();
        lines.extend(
            self.epochs
                .iter()
                .map(|(run, e)| format!("epoch {run} {e}")),
        );
        lines.extend(self.pauses.iter().map(|(run, p)| {
            format!(
                "pause {run} {} {} {} {}",
                p.id, p.epoch, p.digest, p.successor
            )
        }));
        lines.extend(
            self.finishes
                .iter()
                .map(|(run, (id, digest))| format!("finish {run} {id} {digest}")),
        );
        lines.extend(self.retired.iter().map(|root| format!("retired {root}")));
        lines.sort();
        lines.iter().map(|line| format!("{line}\n")).collect()
    }

    /// Reads [`Truth::to_text`] back.
    pub fn from_text(text: &str) -> Truth {
        let mut truth = Truth::default();
        for line in text.lines() {
            let words: Vec<&str> = line.split(' ').collect();
            match words.as_slice() {
                ["epoch", run, e] => {
                    truth
                        .epochs
                        .insert((*run).into(), e.parse().expect("an epoch"));
                }
                ["pause", run, id, epoch, digest, successor] => {
                    let pause = HeldPause {
                        id: (*id).into(),
                        epoch: epoch.parse().expect("an epoch"),
                        digest: (*digest).into(),
                        successor: (*successor).into(),
                    };
                    truth.pauses.insert((*run).into(), pause);
                }
                ["finish", run, id, digest] => {
                    let finish = ((*id).into(), (*digest).into());
                    truth.finishes.insert((*run).into(), finish);
                }
                ["retired", root] => {
                    truth.retired.insert((*root).into());
                }
                other => panic!("not a fact: {other:?}"),
            }
        }
        truth
    }

    /// How the chain of `root` ends in the final facts: `Some(true)` if it
    /// ends in a finish, `Some(false)` if it ends in a durable pause whose
    /// successor holds nothing final, `None` if its head holds nothing
    /// final.
    pub fn chain_ended(&self, root: &str) -> Option<bool> {
        let mut run = root.to_owned();
        // Bounded: a chain is at most `MAX_CHAIN + 1` Runs long (and a
        // store that wrote a cycle must not hang the checker).
        for i in 0..=MAX_CHAIN + 1 {
            if self.finishes.contains_key(&run) {
                return Some(true);
            }
            match self.pauses.get(&run) {
                Some(pause) => run.clone_from(&pause.successor),
                None if i == 0 => return None,
                None => return Some(false),
            }
        }
        Some(false)
    }
}

fn op(line: &Line, kind: Kind) -> Op {
    Op {
        process: line.process.clone(),
        kind,
        invoked: line.at,
        completed: None,
        outcome: Outcome::Unknown,
    }
}

/// The operations and seals of a history.
pub fn replay(lines: &[Line]) -> (Vec<Op>, Vec<Seal>) {
    let mut ops: BTreeMap<(String, String), Op> = BTreeMap::new();
    let mut seals = Vec::new();
    for line in lines {
        let w: Vec<&str> = line.words.iter().map(String::as_str).collect();
        let key = (line.process.clone(), line.op.clone());
        let owned = |s: &str| s.to_owned();
        match (line.op.as_str(), w.as_slice()) {
            ("-", ["sealed", run, epoch, pause]) => seals.push((
                line.process.clone(),
                owned(run),
                epoch.parse().unwrap_or(0),
                owned(pause),
            )),
            ("-", _) => {}
            (_, ["invoke", "claim", run]) => {
                ops.insert(key, op(line, Kind::Claim { run: owned(run) }));
            }
            (_, ["invoke", "finish", run, epoch, id, digest]) => {
                let kind = Kind::Finish {
                    run: owned(run),
                    epoch: epoch.parse().unwrap_or(0),
                    id: owned(id),
                    digest: owned(digest),
                };
                ops.insert(key, op(line, kind));
            }
            (_, ["invoke", "retire", run]) => {
                ops.insert(key, op(line, Kind::Retire { run: owned(run) }));
            }
            (_, ["invoke", "sweep", _limit, age_ms, ..]) => {
                let age = age_ms.parse::<u64>().unwrap_or(0) * 1000;
                ops.insert(key, op(line, Kind::Sweep { age }));
            }
            (_, ["invoke", "append", run, epoch, pause, digest, successor]) => {
                let kind = Kind::Append {
                    run: owned(run),
                    epoch: epoch.parse().unwrap_or(0),
                    pause: owned(pause),
                    digest: owned(digest),
                    successor: owned(successor),
                };
                ops.insert(key, op(line, kind));
            }
            (_, outcome) => {
                if let Some(op) = ops.get_mut(&key) {
                    op.completed = Some(line.at);
                    op.outcome = match outcome {
                        ["ok", "owner", e] => Outcome::Owner(e.parse().unwrap_or(0)),
                        ["ok", "handed-off", p, d, s] => {
                            Outcome::HandedOff(owned(p), owned(d), owned(s))
                        }
                        ["ok", "finished", id, d] => Outcome::Finished(owned(id), owned(d)),
                        ["ok", "retired"] => Outcome::Retired,
                        ["ok", "retired-now", runs] => {
                            Outcome::RetiredNow(runs.parse().unwrap_or(u64::MAX))
                        }
                        ["ok", "already-retired"] => Outcome::AlreadyRetired,
                        [
                            "ok",
                            "swept",
                            _runs,
                            _kept,
                            pass @ ("end" | "more"),
                            roots @ ..,
                        ] => Outcome::Swept {
                            roots: roots.iter().map(|r| owned(r)).collect(),
                            pass_ended: *pass == "end",
                        },
                        ["refused", "retired"] => Outcome::RefusedRetired,
                        ["refused", "already-finished"] => Outcome::AlreadyFinished,
                        ["refused", "run-open", run] => Outcome::RunOpen(owned(run)),
                        ["refused", "nothing-to-retire"] => Outcome::NothingToRetire,
                        ["ok", "written"] => Outcome::Written,
                        ["ok", "already"] => Outcome::Already,
                        ["refused", "fenced", c] => Outcome::Fenced(c.parse().unwrap_or(0)),
                        ["refused", "already-handed-off"] => Outcome::AlreadyHandedOff,
                        ["refused", "epoch-not-issued", ..] => Outcome::EpochNotIssued,
                        ["unknown"] => Outcome::Unknown,
                        ["unavailable"] => Outcome::Unavailable,
                        other => Outcome::Other(other.join(" ")),
                    };
                }
            }
        }
    }
    // Each root a sweep's batch retired is an acknowledged retirement of
    // it, invoked at the batch's invocation and acknowledged at its
    // completion: checked as `retire_async`'s `Retired` is (G5, R9, R10,
    // G1). A batch whose outcome is unknown names no root: as an unknown
    // retirement, it may have retired any (G3), and nothing is checked of
    // it that would need to know which.
    let mut ops: Vec<Op> = ops.into_values().collect();
    let swept: Vec<Op> = ops
        .iter()
        .filter_map(|op| match &op.outcome {
            Outcome::Swept { roots, .. } => Some(roots.iter().map(move |root| Op {
                process: op.process.clone(),
                kind: Kind::Retire { run: root.clone() },
                invoked: op.invoked,
                completed: op.completed,
                outcome: Outcome::RetiredBySweep,
            })),
            _ => None,
        })
        .flatten()
        .collect();
    ops.extend(swept);
    (ops, seals)
}

/// Issue 50: a history that lost a record is refused, naming the process
/// and what is missing — a record dropped, a record cut short, a trailer
/// missing or miscounting — and a whole one is read entire.
#[test]
fn a_history_that_lost_a_record_fails_loudly() {
    let whole = "1 10 1 invoke claim r1\n2 20 1 ok owner 1\n3 30 - end 2\n";
    let read = read_transcript("worker0.0", whole, false).expect("whole");
    assert_eq!(read.len(), 2);
    let dropped = "1 10 1 invoke claim r1\n3 30 - end 2\n";
    let cut = "1 10 1 invoke claim r1\n2 20 1 ok own";
    let untrailed = "1 10 1 invoke claim r1\n2 20 1 ok owner 1\n";
    let miscounted = "1 10 1 invoke claim r1\n2 20 1 ok owner 1\n3 30 - end 3\n";
    for (text, expected) in [
        (dropped, "worker0.0's record 2 is numbered 3: 1 lost"),
        (cut, "worker0.0's last record is cut short"),
        (untrailed, "worker0.0 ended without its trailer"),
        (miscounted, "worker0.0's trailer counts 3 records, 2 read"),
    ] {
        let wrong = read_transcript("worker0.0", text, false).expect_err(expected);
        assert!(wrong.contains(expected), "{wrong}");
    }
    // A process the campaign killed wrote no trailer, and loses nothing
    // by it; a record dropped is still found.
    assert_eq!(
        read_transcript("worker0.0", untrailed, true).map(|r| r.len()),
        Ok(2)
    );
    assert!(read_transcript("worker0.0", dropped, true).is_err());
}
