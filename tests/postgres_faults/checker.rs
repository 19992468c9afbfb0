//! The history of a campaign and its checker: SPEC §6's R1–R10 and the
//! guarantees G1, G2 and G5 (with G3 and G4 where R-rules already check
//! them) over every operation the processes made (ok, refused, unavailable
//! — nothing was written — or unknown: no answer, an `OutcomeUnknown`
//! error, or a process killed mid-way) and the facts the server holds at
//! the end (its final read-back, each pause and outcome decoded).
//!
//! Real-time order is the processes' own wall-clock stamps: an operation's
//! `invoke` is stamped before it starts and its outcome after it returned,
//! so "A completed before B was invoked" is a sound precedence, and an
//! operation that took effect did so after its invocation and (if it
//! completed) before its completion.
//!
//! **Unknown outcomes, conservatively.** A write answered `OutcomeUnknown`
//! (or not answered, or cut short by a kill) may or may not be durable. The
//! checker never accuses the store on a guess: where a guarantee needs a
//! Run to be final, any write of it that may have landed (acknowledged or
//! unknown) counts, from its invocation; where a guarantee starts from a
//! durable pause, only a pause known durable counts (an acknowledged
//! append, a claim that answered it, a requester's seal, or the final
//! read-back). So an anomaly is reported only where no history consistent
//! with the answers could have kept the guarantee.
//!
//! **Sweeps** (retention by age, issue 43). A batch of
//! `retire_ended_async` is one operation; each root its answer names is an
//! acknowledged retirement of that root, invoked at the batch's invocation
//! and acknowledged at its completion, and checked exactly as
//! `retire_async`'s `Retired` is: G5 (its work had ended), R9 (nothing
//! claimed or written under it afterwards), R10 (its rows are gone) and G1
//! (a successor's claim refused `Retired` only once the successor may have
//! been final); and, retention being by age, every Run of a root a batch
//! retired was made final by a write invoked before the batch's cut-off
//! (G5 by age: its completion less the age it was given). A batch answered `OutcomeUnknown` or `Unavailable` (an
//! error ends a batch, and the roots it retired before stay retired), or
//! not at all, names no root: like a retirement by name with an unknown
//! outcome, it may have retired any root (G3), and nothing that would need
//! to know which is checked of it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::answers;
use super::child::{root_of, successor_of};
use super::history::{Kind, Op, Outcome, Seal, Truth};

/// What the history says about one Run's fate.
#[derive(Default)]
struct Fate {
    /// The earliest invocation of an operation that may have made the Run
    /// final: a write of it answered `Written`, `AlreadyDurable` or unknown
    /// (it may have landed), or a claim or write whose answer says it is
    /// final (`HandedOff`, `Finished`, `AlreadyHandedOff`,
    /// `AlreadyFinished`: a write that made it so came before).
    final_from: Option<u64>,
    /// The earliest invocation of a claim of it answered `Owner`, or of a
    /// write of it refused `Fenced`.
    claimed_from: Option<u64>,
    /// The earliest completion of an acknowledgement of its final fate (an
    /// acknowledged write, or a claim answering it).
    acknowledged_final_at: Option<u64>,
}

/// One violation: the root Run whose history shows it (the unit both
/// checkers judge: a retirement, and so every answer `Retired`, spans a
/// root's Runs), and what it is, starting with the rule it breaks.
#[derive(Clone, Debug)]
pub struct Anomaly {
    pub root: String,
    pub what: String,
}

impl Anomaly {
    /// Whether it is about what the log answered, which the second
    /// checker (`linearizable.rs`) judges too; the others are about the
    /// processes' own conduct (R7: a fenced worker appends or seals under
    /// that epoch again) or about time (G5 by age: a sweep's cut-off),
    /// which a sequential specification has no words for.
    pub fn about_the_log(&self) -> bool {
        !(self.what.starts_with("R7:") || self.what.starts_with("G5 (by age)"))
    }
}

/// The anomalies found so far.
#[derive(Default)]
pub struct Found(Vec<Anomaly>);

impl Found {
    pub fn flag(&mut self, run: &str, what: String) {
        self.0.push(Anomaly {
            root: root_of(run).to_owned(),
            what,
        });
    }
}

/// Whether `op` may have made its Run final, or says it is (see [`Fate`]).
pub(super) fn may_make_final(op: &Op) -> bool {
    match (&op.kind, &op.outcome) {
        (Kind::Claim { .. }, Outcome::HandedOff(..) | Outcome::Finished(..)) => true,
        (Kind::Append { .. } | Kind::Finish { .. }, o) if o.may_have_written() => true,
        (_, Outcome::AlreadyHandedOff | Outcome::AlreadyFinished) => true,
        _ => false,
    }
}

fn earliest(slot: &mut Option<u64>, at: u64) {
    *slot = Some(slot.map_or(at, |s| s.min(at)));
}

/// Every violation the history and the final facts show, each naming the
/// rule or guarantee it breaks.
pub fn check(ops: &[Op], seals: &[Seal], truth: &Truth) -> Vec<Anomaly> {
    let mut anomalies = Found::default();
    let pause_of = |run: &str| truth.pauses.get(run);
    let mut issued: HashMap<(String, u64), usize> = HashMap::new();
    let mut invoked_pauses: HashSet<&str> = HashSet::new();
    // The pauses some append of which may have written them: every answer
    // but a refusal and `Unavailable` (nothing written).
    let mut may_have_written: HashSet<&str> = HashSet::new();
    for op in ops {
        let retired = truth.is_retired(op.kind.run());
        match (&op.kind, &op.outcome) {
            (Kind::Claim { run }, Outcome::Owner(epoch)) => {
                *issued.entry((run.clone(), *epoch)).or_default() += 1;
                if !retired && truth.epochs.get(run).copied().unwrap_or(0) < *epoch {
                    anomalies.flag(run, format!(
                        "lost claim: {} was issued epoch {epoch} of {run}, the log's epoch is {:?}",
                        op.process,
                        truth.epochs.get(run)
                    ));
                }
            }
            (Kind::Claim { run }, Outcome::HandedOff(pause, ..))
                if pause_of(run).map(|p| &p.id) != Some(pause) && !retired =>
            {
                anomalies.flag(run, format!(
                    "R3: a claim of {run} answered pause {pause}, the log holds {:?}",
                    pause_of(run)
                ));
            }
            (Kind::Claim { run }, Outcome::Finished(id, _))
                if truth.finishes.get(run).map(|f| &f.0) != Some(id) && !retired =>
            {
                anomalies.flag(run, format!(
                    "R3: a claim of {run} answered finish {id}, the log holds {:?}",
                    truth.finishes.get(run)
                ));
            }
            (Kind::Claim { run }, Outcome::Retired) if !retired => {
                anomalies.flag(run, format!("R3: a claim of {run} answered Retired, it is not"));
            }
            (Kind::Finish { run, id, .. }, Outcome::Written | Outcome::Already)
                if truth.finishes.get(run).map(|f| &f.0) != Some(id) && !retired =>
            {
                anomalies.flag(run, format!(
                    "R8 / acknowledged write lost: {} finished {run} with {id}, the log holds {:?}",
                    op.process,
                    truth.finishes.get(run)
                ));
            }
            (Kind::Retire { run }, o) if o.retired() && !truth.retired.contains(run) => {
                anomalies.flag(run, format!(
                    "R9 / acknowledged write lost: {run} was retired, the log holds no tombstone"
                ));
            }
            (
                Kind::Append {
                    run, epoch, pause, ..
                },
                Outcome::Written | Outcome::Already,
            ) if pause_of(run).map(|p| (&p.id, p.epoch)) != Some((pause, *epoch)) && !retired => {
                anomalies.flag(run, format!(
                    "R4 / acknowledged write lost: {} appended {pause} (epoch {epoch}) to {run}, \
                     the log holds {:?}",
                    op.process,
                    pause_of(run)
                ));
            }
            // A Run's epoch never goes down: one a refusal names is at
            // most its last (issue 60).
            (Kind::Append { run, .. } | Kind::Finish { run, .. }, Outcome::Fenced(c))
                if !retired && truth.epochs.get(run).copied().unwrap_or(0) < *c =>
            {
                anomalies.flag(run, format!(
                    "G3: a write of {run} by {} was refused Fenced naming epoch {c}, above \
                     the log's epoch at the end, {:?}",
                    op.process,
                    truth.epochs.get(run)
                ));
            }
            (_, Outcome::EpochNotIssued) => anomalies.flag(op.kind.run(), format!(
                "lost claim: {:?} of {} answered EpochNotIssued for an epoch a claim acknowledged",
                op.kind, op.process
            )),
            (_, Outcome::Other(what)) => {
                anomalies.flag(op.kind.run(), format!("unexpected answer to {:?}: {what}", op.kind));
            }
            _ => {}
        }
        if let Kind::Finish { id: name, .. } | Kind::Append { pause: name, .. } = &op.kind {
            invoked_pauses.insert(name);
            if op.outcome.may_have_written() {
                may_have_written.insert(name);
            }
        }
    }
    for ((run, epoch), count) in &issued {
        if *count > 1 {
            anomalies.flag(
                run,
                format!("R6 / G4: epoch {epoch} of {run} was issued {count} times"),
            );
        }
    }
    for (run, (id, _)) in &truth.finishes {
        if truth.pauses.contains_key(run) {
            anomalies.flag(run, format!("R8: {run} holds both a pause and finish {id}"));
        }
        if !invoked_pauses.contains(id.as_str()) {
            anomalies.flag(run, format!("{run} holds finish {id} nobody sent"));
        } else if !may_have_written.contains(id.as_str()) {
            anomalies.flag(
                run,
                format!(
                    "G3: {run} holds finish {id}, but every finish of it was refused or answered \
                 Unavailable (nothing written)"
                ),
            );
        }
    }
    for root in &truth.retired {
        let rows = truth
            .epochs
            .keys()
            .chain(truth.pauses.keys())
            .chain(truth.finishes.keys())
            .any(|run| root_of(run) == root);
        if rows {
            anomalies.flag(
                root,
                format!("R10: the retired root {root} still holds rows"),
            );
        }
        // A retirement by name or a sweep's batch that names it, or whose
        // outcome is unknown: a batch answered `OutcomeUnknown` or
        // `Unavailable` mid-way (or not at all) may have retired any root
        // before its error.
        let sent = ops.iter().any(|op| match (&op.kind, &op.outcome) {
            (Kind::Retire { run }, o) if run == root => o.retired_now() || *o == Outcome::Unknown,
            (Kind::Sweep { .. }, o) => matches!(o, Outcome::Unknown | Outcome::Unavailable),
            _ => false,
        });
        if !sent {
            anomalies.flag(
                root,
                format!("G3: {root} is retired, but no retirement of it may have written"),
            );
        }
        // Retired by a retirement whose outcome is unknown alone (by name,
        // or a sweep's batch): it took effect after every claim that
        // answered an epoch (one after it answers `Retired`), when each
        // such Run was final (G5), so some write that may have made it
        // final was sent (issue 60).
        let acknowledged = ops.iter().any(|op| {
            matches!(&op.kind, Kind::Retire { run } if run == root) && op.outcome.retired_now()
        });
        if sent && !acknowledged {
            let mut open: Vec<&str> = ops
                .iter()
                .filter(|op| {
                    root_of(op.kind.run()) == root
                        && matches!(op.kind, Kind::Claim { .. })
                        && matches!(op.outcome, Outcome::Owner(_))
                })
                .map(|op| op.kind.run())
                .filter(|run| {
                    let same: Vec<&Op> = ops.iter().filter(|o| o.kind.run() == *run).collect();
                    !same
                        .iter()
                        .any(|w| may_make_final(w) && !answers::wrote_in_no_order(w, &same))
                })
                .collect();
            // And it took effect after every pause acknowledged (an
            // append after it answers `Retired`), when the successor each
            // names was final.
            let named = ops.iter().filter_map(|op| match (&op.kind, &op.outcome) {
                (Kind::Append { run, successor, .. }, o)
                    if root_of(run) == root && o.acknowledged() =>
                {
                    Some(successor.as_str())
                }
                (Kind::Claim { run }, Outcome::HandedOff(_, _, successor))
                    if root_of(run) == root =>
                {
                    Some(successor.as_str())
                }
                _ => None,
            });
            let never_final: Vec<&str> = named
                .filter(|successor| {
                    !ops.iter().any(|w| {
                        w.kind.run() == *successor
                            && may_make_final(w)
                            && !answers::wrote_in_no_order(
                                w,
                                &ops.iter()
                                    .filter(|o| o.kind.run() == *successor)
                                    .collect::<Vec<_>>(),
                            )
                    })
                })
                .collect();
            open.extend(never_final);
            open.sort_unstable();
            open.dedup();
            if !open.is_empty() {
                anomalies.flag(
                    root,
                    format!(
                        "G5: {root} is retired, by a retirement whose outcome is unknown, but \
                         {open:?} (claimed, or named by a durable pause) nothing may have made \
                         final"
                    ),
                );
            }
        }
    }
    for (run, pause) in &truth.pauses {
        if truth.epochs.get(run) != Some(&pause.epoch) {
            anomalies.flag(
                run,
                format!(
                    "R1 / R6: {run}'s pause {} was appended under epoch {}, \
                 but its current epoch is {:?}",
                    pause.id,
                    pause.epoch,
                    truth.epochs.get(run)
                ),
            );
        }
        if !invoked_pauses.contains(pause.id.as_str()) {
            anomalies.flag(
                run,
                format!("{run} holds pause {} nobody appended", pause.id),
            );
        } else if !may_have_written.contains(pause.id.as_str()) {
            anomalies.flag(
                run,
                format!(
                    "G3: {run} holds pause {}, but every append of it was refused or answered \
                 Unavailable (nothing written)",
                    pause.id
                ),
            );
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
                Kind::Claim { .. } | Kind::Retire { .. } | Kind::Sweep { .. } => continue,
            };
            let acknowledged = append.outcome.acknowledged();
            for claim in ops {
                let Kind::Claim { .. } = claim.kind else {
                    continue;
                };
                // R1: once a pause is durable, no epoch is issued.
                if let (true, Some(done), Outcome::Owner(issued)) =
                    (acknowledged, append.completed, &claim.outcome)
                {
                    if done < claim.invoked {
                        anomalies.flag(run, format!(
                            "R1: {run} was handed off ({pause}) and then epoch {issued} was issued"
                        ));
                    }
                }
                // R6 / R7: once a newer epoch is issued, no older append succeeds.
                if let (true, Outcome::Owner(newer), Some(done)) =
                    (acknowledged, &claim.outcome, claim.completed)
                {
                    if newer > epoch && done < append.invoked {
                        anomalies.flag(run, format!(
                            "R6 / R7: {} appended {pause} to {run} under epoch {epoch} after epoch \
                             {newer} was issued",
                            append.process
                        ));
                    }
                }
            }
        }
    }
    // R8 in real-time order, per Run: once a finish is acknowledged no
    // epoch is issued and no pause written; a finish and a pause are never
    // both acknowledged.
    for (run, ops) in &by_run {
        for done in ops
            .iter()
            .filter(|op| matches!(op.kind, Kind::Finish { .. }) && op.outcome.acknowledged())
        {
            let Some(at) = done.completed else { continue };
            for later in ops.iter().filter(|op| op.invoked > at) {
                if matches!(later.outcome, Outcome::Owner(_))
                    || (matches!(later.kind, Kind::Append { .. }) && later.outcome.acknowledged())
                {
                    anomalies.flag(
                        run,
                        format!(
                            "R8: {run} finished, then {:?} answered {:?}",
                            later.kind, later.outcome
                        ),
                    );
                }
            }
            if ops
                .iter()
                .any(|op| matches!(op.kind, Kind::Append { .. }) && op.outcome.acknowledged())
            {
                anomalies.flag(run, format!("R8: {run} was both finished and handed off"));
            }
        }
    }

    // What the history says about each Run's fate (see [`Fate`]).
    let mut fates: HashMap<&str, Fate> = HashMap::new();
    let mut of_run: HashMap<&str, Vec<&Op>> = HashMap::new();
    for op in ops {
        of_run.entry(op.kind.run()).or_default().push(op);
    }
    // A write a claim of a newer epoch fenced in every order made nothing
    // final (issue 60).
    let makes_final = |op: &Op| {
        may_make_final(op)
            && !answers::wrote_in_no_order(op, of_run.get(op.kind.run()).map_or(&[], |v| v))
    };
    for op in ops {
        let fate = fates.entry(op.kind.run()).or_default();
        // (A write refused `Fenced` shows a claim took the Run into an
        // epoch, whatever that claim's outcome: issue 60.)
        if let (Kind::Claim { .. }, Outcome::Owner(_))
        | (Kind::Append { .. } | Kind::Finish { .. }, Outcome::Fenced(_)) =
            (&op.kind, &op.outcome)
        {
            earliest(&mut fate.claimed_from, op.invoked);
        }
        if makes_final(op) {
            earliest(&mut fate.final_from, op.invoked);
            let acknowledges = matches!(
                (&op.kind, &op.outcome),
                (
                    Kind::Claim { .. },
                    Outcome::HandedOff(..) | Outcome::Finished(..)
                )
            ) || (!matches!(op.kind, Kind::Claim { .. })
                && matches!(
                    op.outcome,
                    Outcome::Written
                        | Outcome::Already
                        | Outcome::AlreadyHandedOff
                        | Outcome::AlreadyFinished
                ));
            if let (true, Some(done)) = (acknowledges, op.completed) {
                earliest(&mut fate.acknowledged_final_at, done);
            }
        }
    }
    let no_fate = Fate::default();
    let fate = |run: &str| fates.get(run).unwrap_or(&no_fate);
    // Whether `run` may have been final before `at`: some operation that may
    // have made it final was invoked before (conservative: an unknown
    // write counts, see the module's docs).
    let final_before = |run: &str, at: u64| fate(run).final_from.is_some_and(|f| f < at);

    // The pauses known durable, per Run: (pause id, successor, how known,
    // from when). An acknowledged append, a claim answering the pause, a
    // requester's seal, or the final read-back.
    let mut durable: BTreeMap<&str, Vec<(String, String, String, u64)>> = BTreeMap::new();
    for op in ops {
        let known = match (&op.kind, &op.outcome, op.completed) {
            (
                Kind::Append {
                    run,
                    pause,
                    successor,
                    ..
                },
                o,
                Some(at),
            ) if o.acknowledged() => {
                Some((run, pause.clone(), successor.clone(), "acknowledged", at))
            }
            (Kind::Claim { run }, Outcome::HandedOff(pause, _, successor), Some(at)) => {
                Some((run, pause.clone(), successor.clone(), "read back", at))
            }
            _ => None,
        };
        if let Some((run, pause, successor, how, at)) = known {
            durable.entry(run).or_default().push((
                pause,
                successor,
                format!("{how} by {}", op.process),
                at,
            ));
        }
    }
    for (process, run, _, pause) in seals {
        durable.entry(run).or_default().push((
            pause.clone(),
            successor_of(run),
            format!("sealed for {process}"),
            u64::MAX,
        ));
    }
    for (run, pause) in &truth.pauses {
        durable.entry(run).or_default().push((
            pause.id.clone(),
            pause.successor.clone(),
            "held at the end".to_owned(),
            u64::MAX,
        ));
    }

    // G1: a durable handoff reaches its successor. Every claim of a
    // successor a durable pause names answered `Retired` (and every write
    // of it refused `Retired`) must come after the successor may have been
    // final: some write that may have made it final was invoked before the
    // answer came. (An acknowledged final fate is what the guarantee asks;
    // a write with an unknown outcome may have landed unacknowledged, so
    // it is given the benefit of the doubt.)
    let mut g1_reported: HashSet<&str> = HashSet::new();
    for (run, pauses) in &durable {
        let Some((pause, successor, how, _)) = pauses.first() else {
            continue;
        };
        for op in by_run.get(successor.as_str()).into_iter().flatten() {
            let refused = matches!(op.outcome, Outcome::Retired | Outcome::RefusedRetired);
            let answered = op.completed.unwrap_or(u64::MAX);
            if refused && !final_before(successor, answered) && g1_reported.insert(successor) {
                anomalies.flag(
                    run,
                    format!(
                        "G1: {run}'s durable pause {pause} ({how}) names {successor}; {} of it by \
                     {} answered Retired before {successor} had a final fate (acknowledged \
                     at {:?})",
                        match op.kind {
                            Kind::Claim { .. } => "a claim",
                            _ => "a write",
                        },
                        op.process,
                        fate(successor).acknowledged_final_at
                    ),
                );
            }
        }
    }

    // G2: what a store acknowledges reads back equal. Per Run, every
    // acknowledged pause or outcome (id and digest of its JSON) equals
    // every one acknowledged, every one a claim answered, and what the
    // final read-back decodes (unless the root is retired: then nothing
    // is held).
    for (run, ops) in &by_run {
        let mut written: Vec<(String, String, String)> = Vec::new();
        let mut read: Vec<(String, String, String)> = Vec::new();
        for op in ops {
            match (&op.kind, &op.outcome) {
                (Kind::Append { pause, digest, .. }, o) if o.acknowledged() => written.push((
                    format!("pause {pause}"),
                    digest.clone(),
                    format!("acknowledged to {}", op.process),
                )),
                (Kind::Finish { id, digest, .. }, o) if o.acknowledged() => written.push((
                    format!("outcome {id}"),
                    digest.clone(),
                    format!("acknowledged to {}", op.process),
                )),
                (Kind::Claim { .. }, Outcome::HandedOff(pause, digest, _)) => read.push((
                    format!("pause {pause}"),
                    digest.clone(),
                    format!("a claim by {}", op.process),
                )),
                (Kind::Claim { .. }, Outcome::Finished(id, digest)) => read.push((
                    format!("outcome {id}"),
                    digest.clone(),
                    format!("a claim by {}", op.process),
                )),
                _ => {}
            }
        }
        let Some((what, digest, whose)) = written.first() else {
            continue;
        };
        if !truth.is_retired(run) {
            let held = match (truth.pauses.get(*run), truth.finishes.get(*run)) {
                (Some(p), _) => Some((format!("pause {}", p.id), p.digest.clone())),
                (None, Some((id, d))) => Some((format!("outcome {id}"), d.clone())),
                (None, None) => None,
            };
            if held.as_ref() != Some(&(what.clone(), digest.clone())) {
                anomalies.flag(
                    run,
                    format!(
                        "G2: {run}: {what} ({digest}) {whose}, the final read-back holds {held:?}"
                    ),
                );
            }
        }
        for (other, other_digest, other_whose) in written.iter().skip(1).chain(&read) {
            if (other, other_digest) != (what, digest) {
                anomalies.flag(
                    run,
                    format!(
                        "G2: {run}: {what} ({digest}) {whose}, but {other} ({other_digest}) \
                     {other_whose}"
                    ),
                );
                break;
            }
        }
    }

    // G5 and R9 per root, in real-time order.
    let mut by_root: HashMap<&str, Vec<&Op>> = HashMap::new();
    for op in ops {
        by_root.entry(root_of(op.kind.run())).or_default().push(op);
    }
    // R9: a root is retired once. A second retirement answered as the
    // one that retired it (by name or by a sweep's batch) means the log
    // lost the first (a retired root answers `AlreadyRetired`, and no
    // batch looks at it).
    for (root, ops) in &by_root {
        let now: Vec<&&Op> = ops.iter().filter(|op| op.outcome.retired_now()).collect();
        if now.len() > 1 {
            anomalies.flag(root, format!(
                "R9 / acknowledged write lost: {root} was retired {} times, each answered as the \
                 retirement ({})",
                now.len(),
                now.iter().map(|op| op.process.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    for (root, ops) in &by_root {
        let runs: HashSet<&str> = ops.iter().map(|op| op.kind.run()).collect();
        for retire in ops
            .iter()
            .filter(|op| matches!(op.kind, Kind::Retire { .. }))
        {
            let invoked = retire.invoked;
            let at = retire.completed.unwrap_or(u64::MAX);
            if retire.outcome.retired() {
                // R9: once a retirement is acknowledged nothing under the
                // root is claimed into an epoch or written.
                for later in ops.iter().filter(|op| op.invoked > at) {
                    let wrote = matches!(later.outcome, Outcome::Owner(_))
                        || (matches!(later.kind, Kind::Append { .. } | Kind::Finish { .. })
                            && later.outcome.acknowledged());
                    if wrote {
                        anomalies.flag(
                            root,
                            format!(
                                "R9: {root} was retired, then {:?} answered {:?}",
                                later.kind, later.outcome
                            ),
                        );
                    }
                }
                // G5: retention removes only ended work. By the time the
                // retirement answered, every Run of the root claimed into an
                // epoch may have been final, and every successor a known
                // durable pause of the root names was claimed and may have
                // been final (see the module's docs on unknown outcomes).
                let mut open: Vec<String> = Vec::new();
                for run in &runs {
                    if fate(run).claimed_from.is_some_and(|c| c < at) && !final_before(run, at) {
                        open.push(format!("{run} (claimed, not final)"));
                    }
                }
                for run in &runs {
                    let Some(pauses) = durable.get(run) else {
                        continue;
                    };
                    for (pause, successor, how, _) in pauses.iter().take(1) {
                        if fate(successor).claimed_from.is_none_or(|c| c >= at) {
                            open.push(format!(
                                "{successor} (named by {run}'s durable pause {pause}, {how}; \
                                 never claimed)"
                            ));
                        } else if !final_before(successor, at) {
                            open.push(format!(
                                "{successor} (named by {run}'s durable pause {pause}, {how}; \
                                 not final)"
                            ));
                        }
                    }
                }
                // A Run whose only way to be final by then is an append in
                // flight was final only if that append wrote; then the
                // successor its pause names had to be final too (issue 60:
                // `scripts/campaign-sweep`'s seed 1796604281590062, the
                // broken-retention control's root r11, which only the
                // second checker flagged).
                for run in &runs {
                    let ways: Vec<&&Op> = ops
                        .iter()
                        .filter(|op| op.kind.run() == *run && op.invoked < at && may_make_final(op))
                        .collect();
                    let in_flight = |op: &&&Op| {
                        matches!(op.kind, Kind::Append { .. })
                            && matches!(op.outcome, Outcome::Unknown)
                    };
                    if ways.is_empty() || !ways.iter().all(in_flight) {
                        continue;
                    }
                    let successors: BTreeSet<&str> = ways
                        .iter()
                        .filter_map(|op| match &op.kind {
                            Kind::Append { successor, .. } => Some(successor.as_str()),
                            _ => None,
                        })
                        .collect();
                    let ended = |successor: &&str| {
                        fate(successor).claimed_from.is_some_and(|c| c < at)
                            && final_before(successor, at)
                    };
                    if !successors.iter().any(ended) {
                        open.push(format!(
                            "{run} (final only by an append in flight, whose successor \
                             {successors:?} was not final)"
                        ));
                    }
                }
                if !open.is_empty() {
                    open.sort();
                    anomalies.flag(
                        root,
                        format!(
                            "G5: {root} was retired ({:?} to {}) before its work ended: {}",
                            retire.outcome,
                            retire.process,
                            open.join(", ")
                        ),
                    );
                }
                // G5: a root the log holds nothing for has not ended.
                let claimed = ops
                    .iter()
                    .any(|op| matches!(op.kind, Kind::Claim { .. }) && op.invoked < at);
                if retire.outcome.retired_now() && !claimed {
                    anomalies.flag(
                        root,
                        format!(
                            "G5: {root} was retired (to {}), but no Run of it was ever claimed",
                            retire.process
                        ),
                    );
                }
            }
            // R9: a refusal names a Run of the root that is not final, and
            // `NothingToRetire` only a root the log holds no Run of.
            match &retire.outcome {
                Outcome::RunOpen(run) if run != "?" && root_of(run) != *root => {
                    anomalies.flag(root, format!(
                        "R9: the retirement of {root} answered RunOpen naming {run}, of another \
                         root"
                    ));
                }
                Outcome::RunOpen(run)
                    if fate(run).acknowledged_final_at.is_some_and(|a| a < invoked) =>
                {
                    anomalies.flag(root, format!(
                        "R9 / G5: the retirement of {root} answered RunOpen naming {run}, whose \
                         final fate was acknowledged before it was invoked"
                    ));
                }
                Outcome::NothingToRetire => {
                    let held = ops.iter().find(|op| {
                        matches!(op.outcome, Outcome::Owner(_))
                            && op.completed.is_some_and(|c| c < invoked)
                    });
                    if let Some(claim) = held {
                        anomalies.flag(
                            root,
                            format!(
                                "R9 / G5: the retirement of {root} answered NothingToRetire after \
                             {:?} answered {:?}",
                                claim.kind, claim.outcome
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    // G5, by age: a batch retires a root only if its work ended before the
    // batch's cut-off (the batch's start less its age, so before its
    // completion less its age), and a Run's end is stamped by the server
    // in the transaction of the write that made it final, after that write
    // was invoked. So every Run of a root a batch retired was made final by
    // a write invoked before then.
    for sweep in ops {
        let (Kind::Sweep { age }, Outcome::Swept { roots, .. }, Some(done)) =
            (&sweep.kind, &sweep.outcome, sweep.completed)
        else {
            continue;
        };
        let cutoff = done.saturating_sub(*age);
        for root in roots {
            let runs: HashSet<&str> = by_root
                .get(root.as_str())
                .into_iter()
                .flatten()
                .map(|op| op.kind.run())
                .collect();
            let mut late: Vec<&str> = runs
                .into_iter()
                .filter(|run| fate(run).final_from.is_some_and(|f| f >= cutoff))
                .collect();
            if !late.is_empty() {
                late.sort_unstable();
                anomalies.flag(
                    root,
                    format!(
                        "G5 (by age): a sweep by {} retired {root}, but {} became final after its \
                     cut-off ({} µs before it answered)",
                        sweep.process,
                        late.join(", "),
                        age
                    ),
                );
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
            anomalies.flag(
                run,
                format!(
                    "R7: {} appended to {run} under epoch {epoch} again after it was fenced",
                    op.process
                ),
            );
        }
        if seals
            .iter()
            .any(|(p, r, e, _)| *p == op.process && r == run && e == epoch)
        {
            anomalies.flag(
                run,
                format!(
                    "R7: {} sealed {run} under the fenced epoch {epoch}",
                    op.process
                ),
            );
        }
    }
    // R2 / R4: a seal (Some from wait()) implies the pause is durable.
    for (process, run, epoch, pause) in seals {
        if pause_of(run).map(|p| (&p.id, p.epoch)) != Some((pause, *epoch))
            && !truth.is_retired(run)
        {
            anomalies.flag(run, format!(
                "R2: {process}'s requester got {pause} of {run} from wait(), the log holds {:?}",
                pause_of(run)
            ));
        }
    }
    // Every answer's kind (issue 50).
    answers::check(ops, truth, &mut anomalies);
    anomalies.0
}
