//! The history of a campaign and its checker: SPEC §6's R1–R10 over every
//! operation the processes made (ok, refused, unavailable — nothing was
//! written — or unknown: no answer, an `OutcomeUnknown` error, or a
//! process killed mid-way) and the facts the server holds at the end.
//!
//! Real-time order is the processes' own wall-clock stamps: an operation's
//! `invoke` is stamped before it starts and its outcome after it returned,
//! so "A completed before B was invoked" is a sound precedence.

use std::collections::{BTreeMap, HashMap, HashSet};

/// One line of a process's history.
#[derive(Clone, Debug)]
pub struct Line {
    pub process: String,
    pub at: u64,
    pub op: String,
    pub words: Vec<String>,
}

impl Line {
    /// Parses `H <µs> <op> <words…>`.
    pub fn parse(process: &str, text: &str) -> Option<Line> {
        let mut words = text.strip_prefix("H ")?.split_whitespace();
        let at = words.next()?.parse().ok()?;
        let op = words.next()?.to_owned();
        Some(Line {
            process: process.to_owned(),
            at,
            op,
            words: words.map(str::to_owned).collect(),
        })
    }
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
    },
    Finish {
        run: String,
        epoch: u64,
        id: String,
    },
    /// Retention of the root Run `run` (each Run is its own root).
    Retire {
        run: String,
    },
}

impl Kind {
    fn run(&self) -> &str {
        match self {
            Kind::Claim { run }
            | Kind::Append { run, .. }
            | Kind::Finish { run, .. }
            | Kind::Retire { run } => run,
        }
    }
}

/// How an operation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Owner(u64),
    HandedOff(String),
    /// A claim answered `Finished` with this finish's id.
    Finished(String),
    /// A claim answered `Retired`.
    Retired,
    /// A retirement answered `Retired` (now) or `AlreadyRetired`.
    RetiredNow,
    RefusedRetired,
    AlreadyFinished,
    RunOpen,
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

/// What the server holds at the end: per Run its epoch, its pause (the
/// pause id and the epoch recorded with it) and its finish's id; and the
/// retired root Runs (each Run is its own root).
#[derive(Debug, Default)]
pub struct Truth {
    pub epochs: HashMap<String, u64>,
    pub pauses: HashMap<String, (String, u64)>,
    pub finishes: HashMap<String, String>,
    pub retired: HashSet<String>,
}

/// The operations and seals of a history.
pub fn replay(lines: &[Line]) -> (Vec<Op>, Vec<Seal>) {
    let mut ops: BTreeMap<(String, String), Op> = BTreeMap::new();
    let mut seals = Vec::new();
    for line in lines {
        let w: Vec<&str> = line.words.iter().map(String::as_str).collect();
        let key = (line.process.clone(), line.op.clone());
        match (line.op.as_str(), w.as_slice()) {
            ("-", ["sealed", run, epoch, pause]) => seals.push((
                line.process.clone(),
                (*run).to_owned(),
                epoch.parse().unwrap_or(0),
                (*pause).to_owned(),
            )),
            ("-", _) => {}
            (_, ["invoke", "claim", run]) => {
                ops.insert(
                    key,
                    Op {
                        process: line.process.clone(),
                        kind: Kind::Claim {
                            run: (*run).to_owned(),
                        },
                        invoked: line.at,
                        completed: None,
                        outcome: Outcome::Unknown,
                    },
                );
            }
            (_, ["invoke", "finish", run, epoch, id]) => {
                ops.insert(
                    key,
                    Op {
                        process: line.process.clone(),
                        kind: Kind::Finish {
                            run: (*run).to_owned(),
                            epoch: epoch.parse().unwrap_or(0),
                            id: (*id).to_owned(),
                        },
                        invoked: line.at,
                        completed: None,
                        outcome: Outcome::Unknown,
                    },
                );
            }
            (_, ["invoke", "retire", run]) => {
                ops.insert(
                    key,
                    Op {
                        process: line.process.clone(),
                        kind: Kind::Retire {
                            run: (*run).to_owned(),
                        },
                        invoked: line.at,
                        completed: None,
                        outcome: Outcome::Unknown,
                    },
                );
            }
            (_, ["invoke", "append", run, epoch, pause]) => {
                ops.insert(
                    key,
                    Op {
                        process: line.process.clone(),
                        kind: Kind::Append {
                            run: (*run).to_owned(),
                            epoch: epoch.parse().unwrap_or(0),
                            pause: (*pause).to_owned(),
                        },
                        invoked: line.at,
                        completed: None,
                        outcome: Outcome::Unknown,
                    },
                );
            }
            (_, outcome) => {
                if let Some(op) = ops.get_mut(&key) {
                    op.completed = Some(line.at);
                    op.outcome = match outcome {
                        ["ok", "owner", e] => Outcome::Owner(e.parse().unwrap_or(0)),
                        ["ok", "handed-off", p] => Outcome::HandedOff((*p).to_owned()),
                        ["ok", "finished", id] => Outcome::Finished((*id).to_owned()),
                        ["ok", "retired"] => Outcome::Retired,
                        ["ok", "retired-now", _] | ["ok", "already-retired"] => Outcome::RetiredNow,
                        ["refused", "retired"] => Outcome::RefusedRetired,
                        ["refused", "already-finished"] => Outcome::AlreadyFinished,
                        ["refused", "run-open"] => Outcome::RunOpen,
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
    (ops.into_values().collect(), seals)
}

/// Every violation the history and the final facts show, each naming the
/// rule it breaks.
pub fn check(ops: &[Op], seals: &[Seal], truth: &Truth) -> Vec<String> {
    let mut anomalies = Vec::new();
    let pause_of = |run: &str| truth.pauses.get(run);
    let mut issued: HashMap<(String, u64), usize> = HashMap::new();
    let mut invoked_pauses: HashSet<&str> = HashSet::new();
    // The pauses some append of which may have written them: every answer
    // but a refusal and `Unavailable` (nothing written).
    let mut may_have_written: HashSet<&str> = HashSet::new();
    for op in ops {
        match (&op.kind, &op.outcome) {
            (Kind::Claim { run }, Outcome::Owner(epoch)) => {
                *issued.entry((run.clone(), *epoch)).or_default() += 1;
                if !truth.retired.contains(run)
                    && truth.epochs.get(run).copied().unwrap_or(0) < *epoch
                {
                    anomalies.push(format!(
                        "lost claim: {} was issued epoch {epoch} of {run}, the log's epoch is {:?}",
                        op.process,
                        truth.epochs.get(run)
                    ));
                }
            }
            (Kind::Claim { run }, Outcome::HandedOff(pause))
                if pause_of(run).map(|p| &p.0) != Some(pause) && !truth.retired.contains(run) =>
            {
                anomalies.push(format!(
                    "R3: a claim of {run} answered pause {pause}, the log holds {:?}",
                    pause_of(run)
                ));
            }
            (Kind::Claim { run }, Outcome::Finished(id))
                if truth.finishes.get(run) != Some(id) && !truth.retired.contains(run) =>
            {
                anomalies.push(format!(
                    "R3: a claim of {run} answered finish {id}, the log holds {:?}",
                    truth.finishes.get(run)
                ));
            }
            (Kind::Claim { run }, Outcome::Retired) if !truth.retired.contains(run) => {
                anomalies.push(format!("R3: a claim of {run} answered Retired, it is not"));
            }
            (Kind::Finish { run, id, .. }, Outcome::Written | Outcome::Already)
                if truth.finishes.get(run) != Some(id) && !truth.retired.contains(run) =>
            {
                anomalies.push(format!(
                    "R8 / acknowledged write lost: {} finished {run} with {id}, the log holds {:?}",
                    op.process,
                    truth.finishes.get(run)
                ));
            }
            (Kind::Retire { run }, Outcome::RetiredNow) if !truth.retired.contains(run) => {
                anomalies.push(format!(
                    "R9 / acknowledged write lost: {run} was retired, the log holds no tombstone"
                ));
            }
            (Kind::Append { run, epoch, pause }, Outcome::Written | Outcome::Already)
                if pause_of(run) != Some(&(pause.clone(), *epoch))
                    && !truth.retired.contains(run) =>
            {
                anomalies.push(format!(
                    "R4 / acknowledged write lost: {} appended {pause} (epoch {epoch}) to {run}, \
                     the log holds {:?}",
                    op.process,
                    pause_of(run)
                ));
            }
            (_, Outcome::EpochNotIssued) => anomalies.push(format!(
                "lost claim: {:?} of {} answered EpochNotIssued for an epoch a claim acknowledged",
                op.kind, op.process
            )),
            (_, Outcome::Other(what)) => {
                anomalies.push(format!("unexpected answer to {:?}: {what}", op.kind));
            }
            _ => {}
        }
        if let Kind::Finish { id, .. } = &op.kind {
            invoked_pauses.insert(id);
            if matches!(
                op.outcome,
                Outcome::Written | Outcome::Already | Outcome::Unknown
            ) {
                may_have_written.insert(id);
            }
        }
        if let Kind::Append { pause, .. } = &op.kind {
            invoked_pauses.insert(pause);
            if matches!(
                op.outcome,
                Outcome::Written | Outcome::Already | Outcome::Unknown
            ) {
                may_have_written.insert(pause);
            }
        }
    }
    for ((run, epoch), count) in &issued {
        if *count > 1 {
            anomalies.push(format!(
                "R6: epoch {epoch} of {run} was issued {count} times"
            ));
        }
    }
    for (run, id) in &truth.finishes {
        if truth.pauses.contains_key(run) {
            anomalies.push(format!("R8: {run} holds both a pause and finish {id}"));
        }
        if !invoked_pauses.contains(id.as_str()) {
            anomalies.push(format!("{run} holds finish {id} nobody sent"));
        } else if !may_have_written.contains(id.as_str()) {
            anomalies.push(format!(
                "Unavailable means nothing written: {run} holds finish {id}, but every \
                 finish of it was refused or answered Unavailable"
            ));
        }
    }
    for run in &truth.retired {
        let rows = truth.epochs.contains_key(run)
            || truth.pauses.contains_key(run)
            || truth.finishes.contains_key(run);
        if rows {
            anomalies.push(format!("R10: the retired root {run} still holds rows"));
        }
        let sent = ops.iter().any(|op| {
            matches!(&op.kind, Kind::Retire { run: r } if r == run)
                && matches!(op.outcome, Outcome::RetiredNow | Outcome::Unknown)
        });
        if !sent {
            anomalies.push(format!(
                "{run} is retired, but no retirement of it may have written"
            ));
        }
    }
    for (run, (pause, epoch)) in &truth.pauses {
        if truth.epochs.get(run) != Some(epoch) {
            anomalies.push(format!(
                "R1 / R6: {run}'s pause {pause} was appended under epoch {epoch}, \
                 but its current epoch is {:?}",
                truth.epochs.get(run)
            ));
        }
        if !invoked_pauses.contains(pause.as_str()) {
            anomalies.push(format!("{run} holds pause {pause} nobody appended"));
        } else if !may_have_written.contains(pause.as_str()) {
            anomalies.push(format!(
                "Unavailable means nothing written: {run} holds pause {pause}, but every \
                 append of it was refused or answered Unavailable"
            ));
        }
    }
    // Real-time order, per Run.
    let mut by_run: HashMap<&str, Vec<&Op>> = HashMap::new();
    for op in ops {
        by_run.entry(op.kind.run()).or_default().push(op);
    }
    for (run, ops) in &by_run {
        for append in ops {
            let (epoch, pause) = match &append.kind {
                Kind::Append { epoch, pause, .. } => (epoch, pause),
                Kind::Finish { epoch, id, .. } => (epoch, id),
                Kind::Claim { .. } | Kind::Retire { .. } => continue,
            };
            let acknowledged = matches!(append.outcome, Outcome::Written | Outcome::Already);
            for claim in ops {
                let Kind::Claim { .. } = claim.kind else {
                    continue;
                };
                // R1: once a pause is durable, no epoch is issued.
                if let (true, Some(done), Outcome::Owner(issued)) =
                    (acknowledged, append.completed, &claim.outcome)
                {
                    if done < claim.invoked {
                        anomalies.push(format!(
                            "R1: {run} was handed off ({pause}) and then epoch {issued} was issued"
                        ));
                    }
                }
                // R6 / R7: once a newer epoch is issued, no older append succeeds.
                if let (true, Outcome::Owner(newer), Some(done)) =
                    (acknowledged, &claim.outcome, claim.completed)
                {
                    if newer > epoch && done < append.invoked {
                        anomalies.push(format!(
                            "R6 / R7: {} appended {pause} to {run} under epoch {epoch} after epoch \
                             {newer} was issued",
                            append.process
                        ));
                    }
                }
            }
        }
    }
    // R8 / R9 in real-time order, per Run: once a finish is acknowledged no
    // epoch is issued and no pause written; once a retirement is
    // acknowledged nothing under the root is claimed into an epoch or
    // written; a finish and a pause are never both acknowledged.
    for (run, ops) in &by_run {
        let acknowledged = |op: &&&Op| matches!(op.outcome, Outcome::Written | Outcome::Already);
        for done in ops
            .iter()
            .filter(|op| matches!(op.kind, Kind::Finish { .. }))
            .filter(acknowledged)
        {
            let Some(at) = done.completed else { continue };
            for later in ops.iter().filter(|op| op.invoked > at) {
                if matches!(later.outcome, Outcome::Owner(_))
                    || (matches!(later.kind, Kind::Append { .. }) && acknowledged(&later))
                {
                    anomalies.push(format!(
                        "R8: {run} finished, then {:?} answered {:?}",
                        later.kind, later.outcome
                    ));
                }
            }
            for append in ops
                .iter()
                .filter(|op| matches!(op.kind, Kind::Append { .. }))
            {
                if acknowledged(&append) {
                    anomalies.push(format!("R8: {run} was both finished and handed off"));
                }
            }
        }
        for retired in ops.iter().filter(|op| {
            matches!(op.kind, Kind::Retire { .. }) && op.outcome == Outcome::RetiredNow
        }) {
            let Some(at) = retired.completed else {
                continue;
            };
            for later in ops.iter().filter(|op| op.invoked > at) {
                let wrote = matches!(later.outcome, Outcome::Owner(_))
                    || (matches!(later.kind, Kind::Append { .. } | Kind::Finish { .. })
                        && acknowledged(&later));
                if wrote {
                    anomalies.push(format!(
                        "R9: {run} was retired, then {:?} answered {:?}",
                        later.kind, later.outcome
                    ));
                }
            }
        }
    }
    // R7: a fenced worker never appends again under that epoch, and never
    // seals it.
    for op in ops {
        let (Kind::Append { run, epoch, .. }, Outcome::Fenced(_), Some(done)) =
            (&op.kind, &op.outcome, op.completed)
        else {
            continue;
        };
        let again = ops.iter().any(|later| {
            later.process == op.process
                && later.invoked > done
                && matches!(&later.kind, Kind::Append { run: r, epoch: e, .. } if r == run && e == epoch)
        });
        if again {
            anomalies.push(format!(
                "R7: {} appended to {run} under epoch {epoch} again after it was fenced",
                op.process
            ));
        }
        if seals
            .iter()
            .any(|(p, r, e, _)| *p == op.process && r == run && e == epoch)
        {
            anomalies.push(format!(
                "R7: {} sealed {run} under the fenced epoch {epoch}",
                op.process
            ));
        }
    }
    // R2 / R4: a seal (Some from wait()) implies the pause is durable.
    for (process, run, epoch, pause) in seals {
        if pause_of(run) != Some(&(pause.clone(), *epoch)) && !truth.retired.contains(run) {
            anomalies.push(format!(
                "R2: {process}'s requester got {pause} of {run} from wait(), the log holds {:?}",
                pause_of(run)
            ));
        }
    }
    anomalies
}
