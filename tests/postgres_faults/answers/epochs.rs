//! The epochs the answers name (issue 60): each was issued by a claim
//! invoked before it was named.

use std::collections::BTreeMap;

use super::write;
use crate::checker::Found;
use crate::history::{Kind, Op, Outcome, Truth};

/// Every epoch of a Run some answer says was issued — one a write was
/// `Fenced` by, one a write answered at (`Written`, `AlreadyDurable`,
/// `AlreadyHandedOff`, `AlreadyFinished`: SPEC gives them at the Run's
/// epoch), the Run's epoch at the end — was issued by a claim: one that
/// answered it, or one whose outcome is unknown, each of which issued one
/// epoch at most, and was invoked before the first answer that names the
/// epoch completed, and before a claim that answered a newer one completed
/// (issue 60). A `RunOpen` that needs a claim in flight to
/// have taken the Run into an epoch no other answer names counts as one.
pub(super) fn epochs_issued<'a>(ops: &'a [Op], truth: &'a Truth, anomalies: &mut Found) {
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
