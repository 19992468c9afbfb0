//! Every answer's kind, checked (issue 50): a refusal, or a fate a claim
//! answered, is the one SPEC's tables (§6, §6.1) give for some state the
//! history allows — as conservatively as `checker.rs` judges the writes:
//! an operation with an unknown outcome may have taken effect, from its
//! invocation on.
//!
//! - `Fenced(c)` names an epoch above the write's, one a claim of the Run
//!   may have answered, and no older than an epoch already answered
//!   before the write was sent;
//! - a write under an epoch older than one already answered is `Fenced`
//!   (SPEC checks the epoch before the Run's fate), never `Written`,
//!   `AlreadyDurable`, `AlreadyHandedOff` or `AlreadyFinished`;
//! - `AlreadyHandedOff` and `AlreadyFinished` come after some other
//!   pause or outcome of the Run may have been written under the write's
//!   own epoch, in any order of the operations that overlapped it;
//! - `Retired` (a claim's, or a write's refusal) and `AlreadyRetired`
//!   come after some retirement of the root may have taken effect;
//! - the epochs claims answer increase in real-time order (R6);
//! - `Retired { runs }` counts at least the Runs of the root claims had
//!   answered `Owner` before it was sent, and at most those a claim may
//!   have taken into an epoch before it answered; `RunOpen` names a Run
//!   of the root a claim may have taken into an epoch, or a successor a
//!   pause that may have been written names.

use std::collections::HashMap;

use super::checker::Found;
use super::child::root_of;
use super::history::{Kind, Op, Outcome};

/// A write's Run, epoch and record id, if it is a write.
fn write(op: &Op) -> Option<(&str, u64, &str)> {
    match &op.kind {
        Kind::Append {
            run, epoch, pause, ..
        } => Some((run, *epoch, pause)),
        Kind::Finish { run, epoch, id, .. } => Some((run, *epoch, id)),
        _ => None,
    }
}

/// Checks the kind of every answer in `ops`.
pub fn check(ops: &[Op], anomalies: &mut Found) {
    let mut by_run: HashMap<&str, Vec<&Op>> = HashMap::new();
    let mut by_root: HashMap<&str, Vec<&Op>> = HashMap::new();
    for op in ops {
        by_run.entry(op.kind.run()).or_default().push(op);
        by_root.entry(root_of(op.kind.run())).or_default().push(op);
    }
    let none = Vec::new();
    for op in ops {
        let run = op.kind.run();
        let same_run = by_run.get(run).unwrap_or(&none);
        let answered = op.completed.unwrap_or(u64::MAX);
        // The epochs claims of the Run answered, with their completions.
        let owners = same_run.iter().filter_map(|claim| match claim.outcome {
            Outcome::Owner(e) => Some((e, claim.completed.unwrap_or(u64::MAX))),
            _ => None,
        });
        let claim_unknown = same_run
            .iter()
            .any(|c| matches!(c.kind, Kind::Claim { .. }) && c.outcome == Outcome::Unknown);
        if let Some((_, epoch, record)) = write(op) {
            // The newest epoch answered before this write was sent.
            let newest = owners
                .clone()
                .filter(|(_, done)| *done < op.invoked)
                .map(|(e, _)| e)
                .max();
            match &op.outcome {
                Outcome::Fenced(c) => {
                    let issued = owners.clone().any(|(e, _)| e == *c) || claim_unknown;
                    if *c <= epoch || !issued || newest.is_some_and(|n| *c < n) {
                        anomalies.flag(
                            run,
                            format!(
                                "G3: a write of {run} under epoch {epoch} was refused Fenced \
                                 naming {c}, which no state the history allows gives (newest \
                                 answered before it {newest:?})"
                            ),
                        );
                    }
                }
                Outcome::Already | Outcome::AlreadyHandedOff | Outcome::AlreadyFinished
                    if newest.is_some_and(|n| n > epoch) =>
                {
                    anomalies.flag(
                        run,
                        format!(
                            "G3: a write of {run} under epoch {epoch} answered {:?} after epoch \
                             {} was answered: SPEC answers Fenced",
                            op.outcome,
                            newest.unwrap_or_default()
                        ),
                    );
                }
                _ => {}
            }
            // Another record of the Run that may have been written first,
            // under this write's epoch: SPEC answers `AlreadyHandedOff` or
            // `AlreadyFinished` only when the write's epoch is the Run's,
            // and a Run's epoch never moves past its pause or its finish,
            // so the record it found was written under that same epoch
            // (one under another epoch makes the answer `Fenced` or
            // `EpochNotIssued` in every order, issue 60).
            let other = |handed_off: bool| {
                same_run.iter().any(|w| {
                    let kind = matches!(w.kind, Kind::Append { .. }) == handed_off;
                    kind && w.invoked < answered
                        && w.outcome.may_have_written()
                        && write(w).is_some_and(|(_, at, id)| id != record && at == epoch)
                }) || same_run.iter().any(|c| {
                    c.invoked < answered
                        && match c.outcome {
                            Outcome::HandedOff(..) => handed_off,
                            Outcome::Finished(..) => !handed_off,
                            _ => false,
                        }
                })
            };
            let handed_off = match op.outcome {
                Outcome::AlreadyHandedOff => Some(true),
                Outcome::AlreadyFinished => Some(false),
                _ => None,
            };
            if let Some(handed_off) = handed_off.filter(|h| !other(*h)) {
                anomalies.flag(
                    run,
                    format!(
                        "G3: a write of {run} answered {:?}, but no other {} of it may have been \
                         written before",
                        op.outcome,
                        if handed_off { "pause" } else { "outcome" }
                    ),
                );
            }
        }
        // Retired, and AlreadyRetired: after a retirement of the root.
        let refused_retired = matches!(
            op.outcome,
            Outcome::Retired | Outcome::RefusedRetired | Outcome::AlreadyRetired
        );
        if refused_retired {
            let root = root_of(run);
            let retired_before = by_root.get(root).unwrap_or(&none).iter().any(|r| {
                r.invoked < answered
                    && matches!(r.kind, Kind::Retire { .. })
                    && (r.outcome.retired_now() || r.outcome == Outcome::Unknown)
            }) || ops.iter().any(|sweep| {
                // A sweep's batch with no answer may have retired it.
                matches!(sweep.kind, Kind::Sweep { .. })
                    && sweep.invoked < answered
                    && matches!(sweep.outcome, Outcome::Unknown | Outcome::Unavailable)
            });
            if !retired_before {
                anomalies.flag(
                    run,
                    format!(
                        "G3: {:?} answered {:?} before any retirement of {root} may have taken \
                         effect",
                        op.kind, op.outcome
                    ),
                );
            }
        }
        if let Kind::Retire { run: root } = &op.kind {
            retirement(
                root,
                op,
                by_root.get(root.as_str()).unwrap_or(&none),
                anomalies,
            );
        }
        // R6: epochs increase in real-time order.
        if let (Kind::Claim { .. }, Outcome::Owner(e)) = (&op.kind, &op.outcome) {
            let older = owners
                .clone()
                .filter(|(other, done)| *done < op.invoked && other >= e)
                .map(|(other, _)| other)
                .max();
            if let Some(older) = older {
                anomalies.flag(
                    run,
                    format!(
                        "R6: a claim of {run} answered epoch {e} after epoch {older} was answered"
                    ),
                );
            }
        }
    }
}

/// A retirement's count, and the Run its `RunOpen` names.
fn retirement(root: &str, op: &Op, of_root: &[&Op], anomalies: &mut Found) {
    let answered = op.completed.unwrap_or(u64::MAX);
    let mut surely: Vec<&str> = Vec::new();
    let mut maybe: Vec<&str> = Vec::new();
    for claim in of_root
        .iter()
        .filter(|c| matches!(c.kind, Kind::Claim { .. }))
    {
        let run = claim.kind.run();
        match claim.outcome {
            Outcome::Owner(_) if claim.completed.is_some_and(|c| c < op.invoked) => {
                surely.push(run);
                maybe.push(run);
            }
            Outcome::Owner(_) | Outcome::Unknown if claim.invoked < answered => maybe.push(run),
            _ => {}
        }
    }
    for runs in [&mut surely, &mut maybe] {
        runs.sort_unstable();
        runs.dedup();
    }
    match &op.outcome {
        Outcome::RetiredNow(n) if (*n as usize) < surely.len() || (*n as usize) > maybe.len() => {
            anomalies.flag(
                root,
                format!(
                    "G3: the retirement of {root} answered Retired {{ runs: {n} }}; the log held \
                     {} to {} Runs of it",
                    surely.len(),
                    maybe.len()
                ),
            );
        }
        Outcome::RunOpen(named) if named != "?" => {
            let named_by_a_pause = of_root.iter().any(|w| {
                matches!(&w.kind, Kind::Append { successor, .. } if successor == named)
                    && w.invoked < answered
                    && w.outcome.may_have_written()
            });
            if !maybe.contains(&named.as_str()) && !named_by_a_pause {
                anomalies.flag(
                    root,
                    format!(
                        "G3: the retirement of {root} answered RunOpen naming {named}, which no \
                         claim took into an epoch and no pause names"
                    ),
                );
            }
        }
        _ => {}
    }
}
