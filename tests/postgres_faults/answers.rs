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

mod epochs;
mod retirement;

use std::collections::{BTreeSet, HashMap};

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
    epochs::epochs_issued(ops, truth, anomalies);
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
            retirement::retirement(
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

/// Whether the write `op`, its outcome unknown, never wrote in any order
/// (issue 60). Either an epoch above the write's was issued (a claim of
/// its Run answered it, or another answer names it: a `Fenced`, a write
/// answered at its epoch): issued before the write, it fences it, and
/// after it no claim takes the final Run into an epoch. Or the write's
/// epoch was never issued: no claim answered it, and every claim with an
/// unknown outcome is needed for another epoch (each issues one at most,
/// and each epoch an answer names that no claim answered needs one of its
/// own). (An acknowledged write is flagged so elsewhere.)
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
    let answered: BTreeSet<u64> = claims
        .clone()
        .filter_map(|c| match c.outcome {
            Outcome::Owner(e) => Some(e),
            _ => None,
        })
        .collect();
    let named: BTreeSet<u64> = ops
        .iter()
        .filter(|o| o.kind.run() == run)
        .filter_map(|o| match (&o.outcome, write(o)) {
            (Outcome::Fenced(c), _) => Some(*c),
            (
                Outcome::Written
                | Outcome::Already
                | Outcome::AlreadyHandedOff
                | Outcome::AlreadyFinished,
                Some((_, e, _)),
            ) => Some(e),
            _ => None,
        })
        .collect();
    if answered.iter().chain(&named).any(|e| *e > epoch) {
        return true;
    }
    if answered.contains(&epoch) {
        return false;
    }
    let in_flight = claims.filter(|c| c.outcome == Outcome::Unknown).count();
    let others = named
        .iter()
        .filter(|e| **e != epoch && !answered.contains(e));
    in_flight <= others.count()
}
