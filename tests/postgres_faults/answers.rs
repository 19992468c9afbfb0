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

use std::collections::{BTreeMap, HashMap};

use super::checker::{Found, may_make_final};
use super::child::root_of;
use super::history::{Kind, Op, Outcome, Truth};

/// Whether `op`'s answer says its root is retired.
fn says_retired(op: &Op) -> bool {
    matches!(
        op.outcome,
        Outcome::Retired | Outcome::RefusedRetired | Outcome::AlreadyRetired
    )
}

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
pub fn check(ops: &[Op], truth: &Truth, anomalies: &mut Found) {
    epochs_issued(ops, truth, anomalies);
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
        if let Some((_, epoch, record)) = write(op) {
            // The newest epoch answered before this write was sent.
            // (An epoch a refusal `Fenced` named was the Run's when it
            // answered, as one a claim answered; issue 60.)
            let fenced = same_run.iter().filter_map(|w| match w.outcome {
                Outcome::Fenced(c) => Some((c, w.completed.unwrap_or(u64::MAX))),
                _ => None,
            });
            let newest = owners
                .clone()
                .chain(fenced)
                .filter(|(_, done)| *done < op.invoked)
                .map(|(e, _)| e)
                .max();
            // A claim of the Run that may have issued `e` before this write
            // answered: one answered `Owner(e)`, or one in flight, invoked
            // before (issue 60: an epoch exists only once a claim issued it).
            let issued_before = |e: u64| {
                same_run.iter().any(|c| {
                    matches!(c.kind, Kind::Claim { .. })
                        && c.invoked < answered
                        && (c.outcome == Outcome::Owner(e) || c.outcome == Outcome::Unknown)
                })
            };
            match &op.outcome {
                Outcome::Fenced(c) => {
                    let issued = issued_before(*c);
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
            // An answer that says the write's epoch is the Run's (SPEC
            // answers them only when `e = c`) comes after a claim that may
            // have issued it (issue 60).
            let at_its_epoch = matches!(
                op.outcome,
                Outcome::Written
                    | Outcome::Already
                    | Outcome::AlreadyHandedOff
                    | Outcome::AlreadyFinished
            );
            if at_its_epoch && !issued_before(epoch) {
                anomalies.flag(
                    run,
                    format!(
                        "G3: a write of {run} under epoch {epoch} answered {:?}, but no claim \
                         that may have issued that epoch was invoked before",
                        op.outcome
                    ),
                );
            }
            // Such an answer says the Run was made final under `epoch`,
            // and a Run's epoch never moves past its fate: a claim that
            // answered a newer epoch came before that write (which is then
            // `Fenced`) or after it (and answered the fate): in no order
            // (issue 60).
            // So is a refusal `Fenced` naming a newer epoch, at any time.
            if at_its_epoch {
                let named = same_run.iter().filter_map(|w| match w.outcome {
                    Outcome::Fenced(c) => Some(c),
                    _ => None,
                });
                let newer = owners.clone().map(|(e, _)| e).chain(named);
                if let Some(newer) = newer.filter(|e| *e > epoch).max() {
                    anomalies.flag(
                        run,
                        format!(
                            "G3: a write of {run} under epoch {epoch} answered {:?}, and an \
                             answer named epoch {newer} of it: in no order",
                            op.outcome
                        ),
                    );
                }
            }
            // `AlreadyDurable`: the identical record was durable before,
            // so another write of it may have written before this one
            // answered (issue 60).
            if op.outcome == Outcome::Already {
                let appends = matches!(op.kind, Kind::Append { .. });
                // (A claim that answered the record read what some write
                // of it wrote: that write may be this one.)
                let before = same_run.iter().any(|w| {
                    !std::ptr::eq(*w, op)
                        && w.invoked < answered
                        && w.outcome.may_have_written()
                        && matches!(w.kind, Kind::Append { .. }) == appends
                        && write(w).is_some_and(|(_, _, id)| id == record)
                });
                if !before {
                    anomalies.flag(
                        run,
                        format!(
                            "G3: a write of {run} ({record}) answered AlreadyDurable, but no \
                             other write of that record may have been written before"
                        ),
                    );
                }
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
        // `HandedOff(p)` and `Finished(o)`, a claim's: the record was
        // durable when it answered, so some write of it that may have
        // written was invoked before (issue 60).
        let read = match (&op.kind, &op.outcome) {
            (Kind::Claim { .. }, Outcome::HandedOff(id, ..)) => Some((id, true)),
            (Kind::Claim { .. }, Outcome::Finished(id, _)) => Some((id, false)),
            _ => None,
        };
        if let Some((id, handed_off)) = read {
            let written = same_run.iter().any(|w| {
                w.invoked < answered
                    && w.outcome.may_have_written()
                    && !wrote_in_no_order(w, same_run)
                    && matches!(w.kind, Kind::Append { .. }) == handed_off
                    && write(w).is_some_and(|(_, _, record)| record == id)
            });
            if !written {
                anomalies.flag(
                    run,
                    format!(
                        "G3: a claim of {run} answered {:?}, but no write of {id} may have been \
                         written before it answered",
                        op.outcome
                    ),
                );
            }
        }
        // Once a retirement of the root is acknowledged, or an answer
        // said it is retired, every operation of it invoked afterwards
        // answers `Retired` (a retirement `AlreadyRetired`), or nothing
        // known (SPEC §6.1: retired for good; issue 60).
        let retired_earlier = by_root
            .get(root_of(run))
            .unwrap_or(&none)
            .iter()
            .filter(|r| r.outcome.retired() || says_retired(r))
            .filter_map(|r| r.completed)
            .any(|done| done < op.invoked);
        let as_retired = says_retired(op)
            || matches!(
                op.outcome,
                Outcome::AlreadyRetired | Outcome::Unknown | Outcome::Unavailable
            );
        if retired_earlier && !as_retired && !matches!(op.kind, Kind::Sweep { .. }) {
            anomalies.flag(
                run,
                format!(
                    "G3: {:?} answered {:?} after a retirement of {} was acknowledged",
                    op.kind,
                    op.outcome,
                    root_of(run)
                ),
            );
        }
        // Retired, and AlreadyRetired: after a retirement of the root.
        let refused_retired = matches!(
            op.outcome,
            Outcome::Retired | Outcome::RefusedRetired | Outcome::AlreadyRetired
        );
        if refused_retired && !truth.is_retired(run) {
            anomalies.flag(
                run,
                format!(
                    "G3: {:?} answered {:?}, but the root is not retired at the end (a \
                     retirement is for good)",
                    op.kind, op.outcome
                ),
            );
        }
        if refused_retired {
            let root = root_of(run);
            let of_root = by_root.get(root).unwrap_or(&none);
            // A retirement whose outcome is unknown retired the root only
            // if its work had ended (G5): the log held a Run of it, so a
            // claim of one was invoked before, and some Run of it was
            // final, so an operation that may have made one final was
            // invoked before (issue 60).
            let could_have_ended = of_root.iter().any(|c| {
                matches!(c.kind, Kind::Claim { .. })
                    && c.invoked < answered
                    && matches!(c.outcome, Outcome::Owner(_) | Outcome::Unknown)
            }) && of_root.iter().any(|w| {
                w.invoked < answered && may_make_final(w) && !wrote_in_no_order(w, of_root)
            });
            let retired_before = of_root.iter().any(|r| {
                r.invoked < answered
                    && matches!(r.kind, Kind::Retire { .. })
                    && (r.outcome.retired_now()
                        || (r.outcome == Outcome::Unknown && could_have_ended))
            }) || (could_have_ended
                && ops.iter().any(|sweep| {
                    // A sweep's batch with no answer may have retired it.
                    matches!(sweep.kind, Kind::Sweep { .. })
                        && sweep.invoked < answered
                        && matches!(sweep.outcome, Outcome::Unknown | Outcome::Unavailable)
                }));
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
                truth,
                anomalies,
            );
        }
        // R6: epochs increase in real-time order; an epoch a write was
        // refused `Fenced` by was the Run's when that refusal answered
        // (issue 60), so it counts as answered then.
        if let (Kind::Claim { .. }, Outcome::Owner(e)) = (&op.kind, &op.outcome) {
            let fenced = same_run.iter().filter_map(|w| match w.outcome {
                Outcome::Fenced(c) => Some((c, w.completed.unwrap_or(u64::MAX))),
                _ => None,
            });
            let older = owners
                .clone()
                .chain(fenced)
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
fn retirement(root: &str, op: &Op, of_root: &[&Op], truth: &Truth, anomalies: &mut Found) {
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

/// Every epoch of a Run some answer says was issued — one a write was
/// `Fenced` by, one a write answered at (`Written`, `AlreadyDurable`,
/// `AlreadyHandedOff`, `AlreadyFinished`: SPEC gives them at the Run's
/// epoch), the Run's epoch at the end — was issued by a claim: one that
/// answered it, or one whose outcome is unknown, each of which issued one
/// epoch at most, and was invoked before the first answer that names the
/// epoch completed, and before a claim that answered a newer one completed
/// (issue 60). A `RunOpen` that needs a claim in flight to
/// have taken the Run into an epoch no other answer names counts as one.
fn epochs_issued<'a>(ops: &'a [Op], truth: &'a Truth, anomalies: &mut Found) {
    /// Per Run: each epoch needed and by when; the epochs answered; the
    /// invocations of the claims with an unknown outcome.
    type Needs = (BTreeMap<u64, u64>, BTreeMap<u64, u64>, Vec<u64>);
    let mut runs: BTreeMap<&str, Needs> = BTreeMap::new();
    let need = |needed: &mut BTreeMap<u64, u64>, e: u64, by: u64| {
        let slot = needed.entry(e).or_insert(by);
        *slot = (*slot).min(by);
    };
    for op in ops {
        let (needed, answered, unknown) = runs.entry(op.kind.run()).or_default();
        let by = op.completed.unwrap_or(u64::MAX);
        match (&op.kind, &op.outcome) {
            (Kind::Claim { .. }, Outcome::Owner(e)) => {
                let slot = answered.entry(*e).or_insert(by);
                *slot = (*slot).min(by);
            }
            (Kind::Claim { .. }, Outcome::Unknown) => unknown.push(op.invoked),
            (_, Outcome::Fenced(c)) => need(needed, *c, by),
            (
                _,
                Outcome::Written
                | Outcome::Already
                | Outcome::AlreadyHandedOff
                | Outcome::AlreadyFinished,
            ) => {
                if let Some((_, e, _)) = write(op) {
                    need(needed, e, by);
                }
            }
            _ => {}
        }
    }
    // The Run's epoch at the end, too.
    for (run, e) in &truth.epochs {
        need(&mut runs.entry(run.as_str()).or_default().0, *e, u64::MAX);
    }
    for (run, (needed, answered, unknown)) in runs {
        // The epochs no claim answered, by deadline: the claims that may
        // have issued each are those invoked before it, nested sets, so
        // every prefix must find as many claims as epochs (Hall).
        let mut unanswered: Vec<(u64, u64)> = needed
            .into_iter()
            .filter(|(e, _)| !answered.contains_key(e))
            .map(|(e, by)| {
                // Issued before a claim answered a newer epoch completed
                // (a claim invoked after that issues above it).
                let newer = answered.range(e + 1..).map(|(_, done)| *done).min();
                (newer.map_or(by, |n| n.min(by)), e)
            })
            .collect();
        // A `RunOpen` naming the Run, no pause that may have been written
        // naming it and no claim answered `Owner` invoked before: a claim
        // in flight took it into an epoch before that answer, below every
        // epoch a claim invoked after answered — an epoch of its own, if
        // each epoch above needed is at least those (issue 60).
        for retire in ops {
            let (Kind::Retire { .. }, Outcome::RunOpen(named), Some(by)) =
                (&retire.kind, &retire.outcome, retire.completed)
            else {
                continue;
            };
            if named != run {
                continue;
            }
            let before = |o: &&Op| o.invoked < by;
            let paused = ops.iter().filter(before).any(|w| {
                matches!(&w.kind, Kind::Append { successor, .. } if successor == run)
                    && w.outcome.may_have_written()
            });
            let claims = ops.iter().filter(|c| {
                c.kind
                    == (Kind::Claim {
                        run: run.to_owned(),
                    })
            });
            let owned_before = claims
                .clone()
                .filter(before)
                .any(|c| matches!(c.outcome, Outcome::Owner(_)));
            let least_after = claims
                .filter(|c| c.invoked > by)
                .filter_map(|c| match c.outcome {
                    Outcome::Owner(e) => Some(e),
                    _ => None,
                })
                .min();
            if let (false, false, Some(least)) = (paused, owned_before, least_after) {
                if unanswered.iter().all(|(_, e)| *e >= least) {
                    // (0: an epoch below `least`, none of the others.)
                    unanswered.push((by, 0));
                }
            }
        }
        unanswered.sort_unstable();
        for (k, (by, _)) in unanswered.iter().enumerate() {
            let claims = unknown.iter().filter(|at| *at < by).count();
            if k + 1 > claims {
                let epochs: Vec<u64> = unanswered[..=k].iter().map(|(_, e)| *e).collect();
                anomalies.flag(
                    run,
                    format!(
                        "G3: answers say epochs {epochs:?} of {run} were issued, no claim \
                         answered them, and {claims} claims of it with an unknown outcome were \
                         invoked before"
                    ),
                );
                break;
            }
        }
    }
}

/// Whether the write `op`, its outcome unknown, never wrote in any order
/// (issue 60): a claim of its Run answered an epoch above the write's
/// (before the write, it fences it; after it, the Run was final, and the
/// claim answers its fate); or no claim of it answered the write's epoch
/// and none has an unknown outcome (the epoch was never issued). (An
/// acknowledged one is flagged so elsewhere.)
pub(super) fn wrote_in_no_order(op: &Op, ops: &[&Op]) -> bool {
    let Some((run, epoch, _)) = write(op) else {
        return false;
    };
    if op.outcome != Outcome::Unknown {
        return false;
    }
    let claim = Kind::Claim {
        run: run.to_owned(),
    };
    let claims = ops.iter().filter(|c| c.kind == claim);
    let fenced = claims
        .clone()
        .any(|c| matches!(c.outcome, Outcome::Owner(e) if e > epoch));
    let issued = claims
        .clone()
        .any(|c| c.outcome == Outcome::Owner(epoch) || c.outcome == Outcome::Unknown);
    fenced || !issued
}
