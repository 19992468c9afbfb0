//! The fence model's state: each worker's phase, the successor's, the
//! owner's view, the log (and its standby's copy), the log's answers and
//! the system they make.

use baton::durable::{Epoch, timeline_floor};

/// The most workers a configuration may start.
pub const MAX_WORKERS: usize = 4;

/// The root Run and the Run of the model.
pub(crate) const ROOT: &str = "root";

/// The successor every worker's pause names: a second Run of the root.
pub(crate) const SUCCESSOR: &str = "successor";

/// The successor's outcome (the root's workers' payloads are their
/// indices, below [`MAX_WORKERS`]).
pub(crate) const SUCCESSOR_OUTCOME: u8 = MAX_WORKERS as u8;

/// An epoch as the state keeps it, in a few bits: `8 · t + n` for the
/// epoch `timeline_floor(t + 1) + n` (`n < 8`), the `n`-th epoch answered on
/// the `t`-th term after the first — so 1, 2, 3 on a server never failed
/// over, and `2^40 + 1` (kept as 9) on the first claim after a promotion.
/// The order of epochs is the order of their compact forms.
pub fn compact(epoch: Epoch) -> u8 {
    let term = timeline_floor(2).get();
    let (t, n) = (epoch.get() / term, epoch.get() % term);
    assert!(t < 2 && n < 8, "epoch {epoch:?} beyond the model's bounds");
    (t * 8 + n) as u8
}

/// The epoch a compact form stands for ([`compact`]'s inverse).
pub fn expand(compact: u8) -> Epoch {
    Epoch::new(timeline_floor(2).get() * u64::from(compact / 8) + u64::from(compact % 8))
}

/// What the log holds, as one value: the root's epoch, pause and finish,
/// its tombstone, the successor's epoch and finish ([`FSys::log`]).
pub type Log = (u8, u8, u8, bool, u8, bool);

/// Where a worker is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Phase {
    /// Not started (no claim gave it an epoch yet).
    #[default]
    Idle,
    /// Running the Run with the epoch it holds.
    Working,
    /// Its gate committed a handoff: its pause is ready to append.
    Committed,
    /// Its append was acknowledged: it may seal.
    Acked,
    /// Sealed: its requester was told `Some` (done).
    Sealed,
    /// Its append (or finish) answered `Fenced`: gate closed, stopped
    /// (done).
    Fenced,
    /// Its append (or finish) failed or its reply was lost: gate closed
    /// without a seal (done).
    Closed,
    /// Crashed (done).
    Crashed,
    /// Its Run ended: its outcome is ready to record ([`Setup::finish`](super::Setup::finish)).
    Finishing,
    /// Its finish was acknowledged: the Run is over (done).
    Finished,
}

impl Phase {
    pub(crate) const ALL: [Phase; 10] = [
        Phase::Idle,
        Phase::Working,
        Phase::Committed,
        Phase::Acked,
        Phase::Sealed,
        Phase::Fenced,
        Phase::Closed,
        Phase::Crashed,
        Phase::Finishing,
        Phase::Finished,
    ];

    /// Whether the worker is alive and still acting on the Run.
    pub fn live(self) -> bool {
        matches!(
            self,
            Phase::Working | Phase::Committed | Phase::Acked | Phase::Finishing
        )
    }
}

/// Where the successor a durable pause names is ([`Setup::retire`](super::Setup::retire)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Succ {
    /// No durable pause names it yet.
    #[default]
    Unnamed,
    /// A durable pause names it: its owner may claim it.
    Due,
    /// Its claim answered `Owner`: its worker runs it.
    Working,
    /// Its outcome was acknowledged: it is final (done).
    Finished,
    /// Its claim or its finish was refused: the handoff never reached it
    /// (G1 broken; done).
    Refused,
}

impl Succ {
    pub(crate) const ALL: [Succ; 5] = [
        Succ::Unnamed,
        Succ::Due,
        Succ::Working,
        Succ::Finished,
        Succ::Refused,
    ];
}

/// What the owner knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Owner {
    /// The Run is the workers' (no claim answered a final fate).
    #[default]
    Open,
    /// A claim answered `HandedOff`: the successor owns the Run.
    Successor,
    /// A claim answered `Finished`: the Run is over.
    Finished,
    /// A claim answered `Retired`: the Run's rows are gone.
    Retired,
}

impl Owner {
    pub(crate) const ALL: [Owner; 4] = [
        Owner::Open,
        Owner::Successor,
        Owner::Finished,
        Owner::Retired,
    ];
}

/// A global state. Epochs are kept [`compact`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FSys {
    /// The log: the Run's current epoch (0: never claimed, or its rows
    /// removed).
    pub epoch: u8,
    /// The log: whose pause is durable (worker index + 1), 0 for none.
    pub pause: u8,
    /// The log: whose outcome is durable (worker index + 1), 0 for none.
    pub finish: u8,
    /// The log: the root Run's tombstone (retired).
    pub retired: bool,
    /// The owner's knowledge.
    pub owner: Owner,
    /// Each worker's phase, by the order the owner started them.
    pub phase: [Phase; MAX_WORKERS],
    /// The epoch each worker holds (from the claim that started it).
    pub held: [u8; MAX_WORKERS],
    /// The log: the successor's epoch (0: not claimed, or its rows
    /// removed).
    pub succ_epoch: u8,
    /// The log: whether the successor's outcome is durable.
    pub succ_finish: bool,
    /// Where the successor is.
    pub succ: Succ,
    /// The epoch the successor's worker holds (from its claim).
    pub succ_held: u8,
    /// Whether the standby was promoted: the log is on its second term.
    pub failed_over: bool,
    /// What the standby holds, before the failover (the default after).
    pub standby: Log,
}

impl FSys {
    /// How many workers the owner started.
    pub fn started(&self) -> usize {
        self.phase.iter().filter(|p| **p != Phase::Idle).count()
    }

    /// Whether a live worker holds the Run's current epoch.
    pub fn current_worker_lives(&self) -> bool {
        (0..MAX_WORKERS).any(|i| self.phase[i].live() && self.held[i] == self.epoch)
    }

    /// Whether the log holds a final fate for the Run (a pause or an
    /// outcome; the tombstone is the root's).
    pub fn has_fate(&self) -> bool {
        self.pause > 0 || self.finish > 0
    }

    /// Whether the log holds the tombstone only: no epoch, no pause, no
    /// finish, of the root or of its successor (R10).
    pub fn tombstone_only(&self) -> bool {
        self.retired
            && self.epoch == 0
            && !self.has_fate()
            && self.succ_epoch == 0
            && !self.succ_finish
    }

    /// The floor of the epochs a claim answers on the log's server now:
    /// the real `timeline_floor` of its term.
    pub fn floor(&self) -> Epoch {
        timeline_floor(1 + u32::from(self.failed_over))
    }

    /// The log replaced by `log` (a promoted standby's copy).
    pub fn set_log(&mut self, log: Log) {
        (
            self.epoch,
            self.pause,
            self.finish,
            self.retired,
            self.succ_epoch,
            self.succ_finish,
        ) = log;
    }

    /// What the log holds (G3 compares it before and after a refusal).
    pub fn log(&self) -> Log {
        (
            self.epoch,
            self.pause,
            self.finish,
            self.retired,
            self.succ_epoch,
            self.succ_finish,
        )
    }
}

/// What happened in a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FAct {
    /// The owner claimed the Run: after its worker was gone (a restart), or
    /// while a worker lived (`suspicion`); what the claim answered.
    Claim {
        /// Whether a worker holding the current epoch was alive.
        suspicion: bool,
        /// The answer: `Some(worker)` started, `None` a final fate (the
        /// owner's knowledge says which).
        started: Option<u8>,
        /// A refusal, if the claim failed (contradictory facts).
        refused: bool,
    },
    /// Worker `i`'s gate committed a handoff.
    Commit(u8),
    /// Worker `i` appended; what the log answered, and whether the reply
    /// (or the request, when nothing was written) was lost.
    Append {
        /// The worker.
        worker: u8,
        /// What the log did.
        answer: Answer,
        /// Whether the worker learnt it.
        lost: bool,
    },
    /// Worker `i`'s request (an append or a finish) was lost before
    /// reaching the log.
    RequestLost(u8),
    /// Worker `i` sealed.
    Seal(u8),
    /// Worker `i` crashed.
    Crash(u8),
    /// Worker `i`'s Run ended: its outcome is ready to record.
    End(u8),
    /// Worker `i` recorded its outcome (`finish`); what the log answered,
    /// and whether the reply was lost.
    Finish {
        /// The worker.
        worker: u8,
        /// What the log did.
        answer: Answer,
        /// Whether the worker learnt it.
        lost: bool,
    },
    /// The retention job retired the root Run; what the log answered.
    Retire(Retired),
    /// The successor's owner claimed it; what the claim answered.
    SuccClaim(SuccClaimed),
    /// The successor's worker recorded its outcome; what the log answered.
    SuccFinish(Answer),
    /// The standby received every transaction the primary holds.
    Replicate,
    /// The primary was lost and its standby promoted: the log is what the
    /// standby held, on the next term; `lost` says whether that is less
    /// than the primary held.
    Failover {
        /// Whether transactions were lost.
        lost: bool,
    },
}

/// What a claim of the successor answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SuccClaimed {
    /// `Owner`: its worker starts with the epoch.
    Owner,
    /// `Retired`: the root's rows are gone, the successor with them.
    Retired,
    /// A final fate (`HandedOff`, `Finished`): not this model's successor.
    Final,
    /// An error (contradictory facts, epochs exhausted).
    Refused,
}

/// What the log answered an append or a finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    /// Written now.
    Written,
    /// The identical row was durable.
    AlreadyDurable,
    /// A newer epoch owns the Run.
    Fenced,
    /// Another pause is durable.
    AlreadyHandedOff,
    /// The Run finished.
    AlreadyFinished,
    /// The root Run is retired.
    Retired,
    /// Any other refusal (an epoch never issued).
    Refused,
}

/// What the log answered a retirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Retired {
    /// The rows were removed (`runs` of them), the tombstone kept.
    Removed {
        /// How many Runs' rows were removed (1 or 2: the root, and its
        /// successor once claimed).
        runs: u8,
        /// Whether the store kept the tombstone.
        tombstone: bool,
    },
    /// The root was already retired: nothing written.
    Already,
    /// A Run is not final yet (an open Run, or a successor a durable pause
    /// names that is not claimed or not final): `RunOpen`, nothing written.
    RunOpen,
    /// The log holds no Run of the root (never claimed): `NothingToRetire`,
    /// nothing written.
    NothingToRetire,
    /// Any other refusal.
    Refused,
}
