//! A failover (issue 49; docs/SPEC.md §6, "Replication and failover"):
//! the log's server has a standby, synchronous or asynchronous, which is
//! promoted once — the log goes on with what the standby held, on the next
//! term, and every claim after it answers above the term's floor (the real
//! `timeline_floor`, as `PostgresLog` reads its server's timeline).
//!
//! **Failure model**, added to [`super`]'s: the primary is lost at any
//! moment while another claim may follow (one failover). An asynchronous
//! standby receives the primary's transactions in order at any pace, so a
//! failover may lose any suffix of them, acknowledged or not. A
//! synchronous one holds every transaction before an operation's answer
//! (each operation takes the Run's row lock, so commits a transaction id,
//! and PostgreSQL's commit waits for the standby), so a failover loses only
//! writes whose reply was lost. Reads need not wait, so with a standby the
//! successor a pause names is due once a party is told of the pause (its
//! worker's reply, or a claim answering `HandedOff`), not when it is
//! written.
//!
//! What must hold on both: every promise of [`super::props`] on a
//! synchronous standby, with [`G2`] (what was acknowledged survives); on an
//! asynchronous one, the fence — R3, R6 (no zombie write: a write is only
//! ever by the holder of the log's current epoch), R9, R10, G3 and G4 (no
//! epoch answered twice) — while [`MAY_BREAK_ASYNCHRONOUSLY`] may break,
//! each shown broken by the checker, never silently dropped.

use super::names::{G1, G2, G5, R1, R2, R4, R5, R7, R8, sometimes};
use super::state::{
    Answer, FAct, FSys, MAX_WORKERS, Owner, Phase, Retired, Succ, SuccClaimed, expand,
};
use super::{FenceModel, Replication};
use crate::explore::{Fairness, Property, Successor};

/// The promises a failover to an asynchronous standby may break (SPEC §6:
/// the last acknowledged writes may be lost, and with them a handoff's
/// reach and the decisions read from it). The others hold.
pub const MAY_BREAK_ASYNCHRONOUSLY: [&str; 9] = [R1, R2, R4, R5, R7, R8, G1, G2, G5];

impl FenceModel {
    /// The standby and its promotion (a [`Setup::replication`](super::Setup::replication) with a
    /// standby): until the failover, the standby may receive everything
    /// the primary holds (in order, so at any moment it holds what the
    /// primary held at some earlier moment); the failover, once, while
    /// another claim may follow, makes the standby's copy the log on the
    /// next term.
    pub(super) fn failover_steps(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
        if self.setup.replication == Replication::Single || s.failed_over {
            return;
        }
        if s.standby != s.log() {
            out.push(Successor {
                action: FAct::Replicate,
                next: FSys {
                    standby: s.log(),
                    ..*s
                },
                fairness: Fairness::Optional,
            });
        }
        if self.faults(s) {
            let mut next = FSys {
                failed_over: true,
                standby: Default::default(),
                ..*s
            };
            next.set_log(s.standby);
            out.push(Successor {
                action: FAct::Failover {
                    lost: s.standby != s.log(),
                },
                next,
                fairness: Fairness::Optional,
            });
        }
    }

    /// A synchronous standby: every operation answered (not refused, its
    /// reply not lost) waited until the standby held everything before
    /// its commit.
    pub(super) fn wait_for_the_standby(&self, s: &FSys, out: &mut [Successor<FAct, FSys>]) {
        if self.setup.replication != Replication::Synchronous || s.failed_over {
            return;
        }
        for step in out.iter_mut().filter(|step| answered(&step.action)) {
            step.next.standby = step.next.log();
        }
    }
}

/// Whether the step is an operation of the log answered to its caller
/// without an error: its transaction committed, and its caller was told.
fn answered(t: &FAct) -> bool {
    match *t {
        FAct::Claim { refused, .. } => !refused,
        FAct::Append { answer, lost, .. } | FAct::Finish { answer, lost, .. } => {
            !lost && matches!(answer, Answer::Written | Answer::AlreadyDurable)
        }
        FAct::SuccClaim(answer) => answer != SuccClaimed::Refused,
        FAct::SuccFinish(answer) => matches!(answer, Answer::Written | Answer::AlreadyDurable),
        FAct::Retire(answer) => matches!(answer, Retired::Removed { .. } | Retired::Already),
        FAct::Commit(_)
        | FAct::RequestLost(_)
        | FAct::Seal(_)
        | FAct::Crash(_)
        | FAct::End(_)
        | FAct::Replicate
        | FAct::Failover { .. } => false,
    }
}

/// Whether every fate a party was told of is in the log (G2): a worker's
/// acknowledged pause (acked or sealed) or outcome, the fate a claim
/// answered the owner, the successor's acknowledged outcome — or the root
/// retired since (retention removes ended work).
pub(super) fn told_is_kept(s: &FSys) -> bool {
    s.retired
        || ((0..MAX_WORKERS).all(|i| match s.phase[i] {
            Phase::Acked | Phase::Sealed => usize::from(s.pause) == i + 1,
            Phase::Finished => usize::from(s.finish) == i + 1,
            _ => true,
        }) && match s.owner {
            Owner::Successor => s.pause > 0,
            Owner::Finished => s.finish > 0,
            Owner::Open | Owner::Retired => true,
        } && (s.succ != Succ::Finished || s.succ_finish))
}

/// What an asynchronous standby's failover is seen to break, so that the
/// report shows it happening (coverage, as `Sometimes`).
pub(super) fn witnesses() -> Vec<Property<FenceModel>> {
    vec![
        sometimes(
            "a failover loses a handoff its worker sealed (G2 broken, as SPEC allows asynchronously)",
            |_, a, t, b| {
                matches!(t, FAct::Failover { .. })
                    && (0..MAX_WORKERS).any(|i| {
                        a.phase[i] == Phase::Sealed
                            && usize::from(a.pause) == i + 1
                            && usize::from(b.pause) != i + 1
                    })
            },
        ),
        sometimes(
            "a sealed handoff's Run is claimed Owner again after the failover (at-least-once)",
            |_, a, t, _| {
                matches!(
                    t,
                    FAct::Claim {
                        started: Some(_),
                        ..
                    }
                ) && a.failed_over
                    && a.phase.contains(&Phase::Sealed)
            },
        ),
        sometimes(
            "a worker holding an epoch the failover lost is refused (EpochNotIssued)",
            |_, a, t, _| {
                a.failed_over
                    && matches!(
                        t,
                        FAct::Append { answer: Answer::Refused, worker, .. }
                            if a.held[usize::from(*worker)] > a.epoch
                    )
            },
        ),
    ]
}

/// The failover's own situations, on both standbys.
pub(super) fn coverage() -> Vec<Property<FenceModel>> {
    vec![
        sometimes(
            "a failover loses a write nobody was told of (its reply lost)",
            |_, a, t, b| {
                matches!(t, FAct::Failover { lost: true })
                    && (0..MAX_WORKERS).any(|i| {
                        let mine = i as u8 + 1;
                        a.phase[i] == Phase::Closed
                            && ((a.pause == mine && b.pause != mine)
                                || (a.finish == mine && b.finish != mine))
                    })
            },
        ),
        sometimes(
            "a claim after the failover answers an epoch above the new term's floor",
            |_, a, t, b| {
                matches!(
                    t,
                    FAct::Claim {
                        started: Some(_),
                        ..
                    }
                ) && a.failed_over
                    && expand(b.epoch) > a.floor()
            },
        ),
    ]
}
