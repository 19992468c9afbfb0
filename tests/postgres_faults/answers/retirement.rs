//! A retirement's answer (issue 60): the Runs `Retired { runs }` counts,
//! and the Run `RunOpen` names, against what the log may have held when
//! it was answered.

use super::wrote_in_no_order;
use crate::checker::Found;
use crate::history::{Kind, Op, Outcome, Truth};

/// A retirement's count, and the Run its `RunOpen` names.
pub(super) fn retirement(
    root: &str,
    op: &Op,
    of_root: &[&Op],
    truth: &Truth,
    anomalies: &mut Found,
) {
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
            // A pause that may have been written names it: its append may
            // have written, after a claim that may have issued its epoch
            // (issue 60).
            let named_by_a_pause = of_root.iter().any(|w| {
                let Kind::Append {
                    run,
                    epoch,
                    successor,
                    ..
                } = &w.kind
                else {
                    return false;
                };
                let issued = of_root.iter().any(|c| {
                    c.kind == (Kind::Claim { run: run.clone() })
                        && c.invoked < answered
                        && (c.outcome == Outcome::Owner(*epoch) || c.outcome == Outcome::Unknown)
                });
                // A pause once written stays until the root is retired.
                let kept = truth.is_retired(run)
                    || truth
                        .pauses
                        .get(run)
                        .is_some_and(|p| p.successor == *named && p.epoch == *epoch);
                successor == named
                    && !wrote_in_no_order(w, of_root)
                    && w.invoked < answered
                    && w.outcome.may_have_written()
                    && issued
                    && kept
            });
            // The Run named is held at the end (a claimed Run's rows, or a
            // pause naming it, stay until the root is retired; issue 60).
            let held = truth.is_retired(root)
                || truth.epochs.contains_key(named)
                || truth.pauses.values().any(|p| p.successor == *named);
            if !held {
                anomalies.flag(
                    root,
                    format!(
                        "G3: the retirement of {root} answered RunOpen naming {named}, which the \
                         log does not hold at the end, and {root} is not retired"
                    ),
                );
            }
            // Named by no pause, it was claimed into an epoch before the
            // answer: if every claim of it invoked before answered `Owner`,
            // its epoch then was at least the least of theirs, and a claim
            // invoked after answers above it (R6, issue 60).
            let before: Vec<&&Op> = of_root
                .iter()
                .filter(|c| c.kind == (Kind::Claim { run: named.clone() }) && c.invoked < answered)
                .collect();
            let least = before
                .iter()
                .map(|c| match c.outcome {
                    Outcome::Owner(e) => Some(e),
                    _ => None,
                })
                .collect::<Option<Vec<u64>>>()
                .and_then(|epochs| epochs.into_iter().min());
            let lower = of_root.iter().find(|c| {
                c.kind == (Kind::Claim { run: named.clone() })
                    && c.invoked > answered
                    && matches!(c.outcome, Outcome::Owner(e) if least.is_some_and(|l| e <= l))
            });
            if let (false, Some(least), Some(lower)) = (named_by_a_pause, least, lower) {
                anomalies.flag(
                    root,
                    format!(
                        "G3: the retirement of {root} answered RunOpen naming {named}, which \
                         held epoch {least} or above then, and a claim of it after answered \
                         {:?}",
                        lower.outcome
                    ),
                );
            }
            // A `RunOpen` answered before naming a successor no claim had
            // been sent for: a pause of this Run naming it was durable, so
            // this Run was final, and is named no more (issue 60).
            let handed_off = of_root.iter().any(|earlier| {
                let (Kind::Retire { .. }, Outcome::RunOpen(successor), Some(done)) =
                    (&earlier.kind, &earlier.outcome, earlier.completed)
                else {
                    return false;
                };
                let claimed = of_root.iter().any(|c| {
                    c.kind
                        == (Kind::Claim {
                            run: successor.clone(),
                        })
                        && c.invoked < done
                });
                let paused_here = of_root.iter().any(|w| {
                    matches!(&w.kind, Kind::Append { run, successor: s, .. }
                        if run == named && s == successor)
                });
                let paused_elsewhere = of_root.iter().any(|w| {
                    matches!(&w.kind, Kind::Append { run, successor: s, .. }
                        if run != named && s == successor)
                });
                done < op.invoked && !claimed && paused_here && !paused_elsewhere
            });
            if handed_off {
                anomalies.flag(
                    root,
                    format!(
                        "G3: the retirement of {root} answered RunOpen naming {named}, after a \
                         RunOpen named the successor of its pause"
                    ),
                );
            }
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
        // The log held a Run of the root before it was invoked: an answer
        // says so (issue 60).
        Outcome::NothingToRetire => {
            let held = of_root.iter().find(|o| {
                o.completed.is_some_and(|c| c < op.invoked)
                    && matches!(
                        o.outcome,
                        Outcome::Owner(_)
                            | Outcome::HandedOff(..)
                            | Outcome::Finished(..)
                            | Outcome::Written
                            | Outcome::Already
                            | Outcome::Fenced(_)
                            | Outcome::AlreadyHandedOff
                            | Outcome::AlreadyFinished
                            | Outcome::RunOpen(_)
                    )
            });
            if let Some(held) = held {
                anomalies.flag(
                    root,
                    format!(
                        "G3: the retirement of {root} answered NothingToRetire after {:?} \
                         answered {:?}",
                        held.kind, held.outcome
                    ),
                );
            }
        }
        _ => {}
    }
}
