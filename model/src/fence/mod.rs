//! Fenced handoff (SPEC §6): one Run, its canonical log, an owner that
//! claims it, and the workers the owner starts — checked around the real
//! pure rules every store applies, `baton::durable::claim_step`,
//! `baton::durable::append_step`, `baton::durable::finish_step` and
//! `baton::durable::retire_step` (the stores' own tests check that each
//! store applies exactly those rules, inside one transaction).
//!
//! **Failure model** (SPEC §6, no less): a worker may crash at any point;
//! it may also *pause* for any time and then go on — a zombie — which here
//! is simply a worker that takes no step for a while: every interleaving of
//! its steps with everyone else's is explored. The owner may suspect a live
//! worker (a wrong suspicion: it claims the Run again while the worker
//! lives). An append (or a finish) may commit with its reply lost (the
//! worker's `append_then_seal` then closes its gate without a seal), or be
//! lost before it reaches the log. The log's operations are atomic, and
//! what it acknowledged survives (a store's restart loses nothing
//! acknowledged, so it is not a separate event here).
//!
//! **The third fate and retention** ([`Setup::finish`], [`Setup::retire`]).
//! With `finish` on, a worker may end the Run instead of handing it off: it
//! records its outcome (payload `i`, like its pause) under its epoch with
//! `finish_step`, fenced like an append and with the same lost request and
//! lost reply. With `retire` on, an operator's retention job calls
//! `retire_step` on what the log holds for the root Run at any moment,
//! concurrently with everything else; when it answers `Retired` the log
//! removes the Run's rows and keeps the tombstone, exactly as `MemoryLog`
//! does: the Run's epoch is back to none, no pause, no finish, the
//! tombstone set. A root never claimed holds no Run: the rule refuses it
//! (`NothingToRetire`), as every store does.
//!
//! **The successor** (with [`Setup::retire`], issue 43). A durable pause
//! names its successor, a second Run of the same root, which must stay
//! claimable until it is final (G1). Once a pause is durable (its reply
//! received or lost), the successor's own owner may claim it with the real
//! `claim_step` on what the log holds for it, and its worker finishes it
//! with the real `finish_step` under the epoch that claim answered (the
//! successor only finishes: no takeover, no fault, no handoff of its own).
//! Retention passes `retire_step` every Run of the root the log holds:
//! the root once claimed, the successor once claimed, each with its fate,
//! and the removal takes both Runs' rows.
//!
//! **Bounds.** The owner starts at most [`Setup::workers`] workers (one per
//! claim that answers `Owner`: takeovers up to `workers - 1`). Faults
//! (crashes, wrong suspicions, lost messages) happen only while another
//! claim may still follow them: "once faults stop", R5 asks that the Run
//! reaches a decision, and the last worker is the one after the faults.
//! Retention is not a fault: it may run (or not) at any time.
//!
//! **Abstraction.** Each worker's gate is abstracted to its phases
//! (working, committed to a pause, appended, sealed): the gate's own
//! protocol is proven by [`crate::gate`], the worker's last step is the
//! real rule of `append_then_seal`, `baton::durable::seal_step` (seal on an
//! acknowledged append; close without a seal on any error, a lost reply
//! being a storage error; `Fenced`: close and stop), and worker `i`'s pause
//! is its own (payload `i`), so the log says whose pause is durable. A
//! finish has no gate: an acknowledged finish ends the worker, a `Fenced`
//! one stops it, any other answer (a lost reply too) closes it, and the
//! owner's next claim learns the fate from the log.
//!
//! [`props`] holds R1–R10, R5 as liveness, the promises G1 and G3–G5 of
//! SPEC §6.1, and the coverage; [`VARIANTS`]
//! the broken rules the checker must catch, the first of them the design
//! before fencing (the owner decides by reading the log).

mod actions;
pub mod props;
pub mod report;
mod setup;
mod state;
pub mod variants;

pub(crate) use setup::retire_with_tombstone;
pub use setup::{
    AppendFn, ClaimFn, FinishFn, Named, REPORT, RetireFn, Rules, SELF_TEST, SELF_TEST_FATES, Setup,
};
pub use state::{Answer, FAct, FSys, MAX_WORKERS, Owner, Phase, Retired, Succ, SuccClaimed};
pub use variants::{VARIANTS, Variant, by_name};

use baton::{HandoffPause, Invocation};

use crate::explore::{Model, Successor};

/// The fenced-handoff system around a set of rules.
pub struct FenceModel {
    /// The configuration.
    pub setup: Setup,
    rules: Rules,
    source: Invocation,
    /// The successor's invocation (its Run is [`SUCCESSOR`]).
    successor: Invocation,
    /// Worker `i`'s pause.
    pauses: Vec<HandoffPause<u8>>,
}

impl Model for FenceModel {
    type State = FSys;
    type Action = FAct;
    type Key = u64;

    fn pack(&self, s: &FSys) -> u64 {
        let owner = Owner::ALL
            .iter()
            .position(|o| *o == s.owner)
            .expect("an owner") as u64;
        let mut key = u64::from(s.epoch)
            | u64::from(s.pause) << 4
            | u64::from(s.finish) << 8
            | u64::from(s.retired) << 12
            | owner << 13;
        for i in 0..MAX_WORKERS {
            let phase = Phase::ALL
                .iter()
                .position(|p| *p == s.phase[i])
                .expect("a phase") as u64;
            key |= (phase | u64::from(s.held[i]) << 4) << (15 + 8 * i);
        }
        let succ = Succ::ALL
            .iter()
            .position(|p| *p == s.succ)
            .expect("a successor phase") as u64;
        key | (succ
            | u64::from(s.succ_epoch) << 3
            | u64::from(s.succ_finish) << 5
            | u64::from(s.succ_held) << 6)
            << 47
    }

    fn unpack(&self, key: u64) -> FSys {
        let mut s = FSys {
            epoch: (key & 0xf) as u8,
            pause: (key >> 4 & 0xf) as u8,
            finish: (key >> 8 & 0xf) as u8,
            retired: key >> 12 & 1 == 1,
            owner: Owner::ALL[(key >> 13 & 0x3) as usize],
            ..FSys::default()
        };
        for i in 0..MAX_WORKERS {
            let bits = key >> (15 + 8 * i);
            s.phase[i] = Phase::ALL[(bits & 0xf) as usize];
            s.held[i] = (bits >> 4 & 0xf) as u8;
        }
        let bits = key >> 47;
        s.succ = Succ::ALL[(bits & 0x7) as usize];
        s.succ_epoch = (bits >> 3 & 0x3) as u8;
        s.succ_finish = bits >> 5 & 1 == 1;
        s.succ_held = (bits >> 6 & 0x3) as u8;
        s
    }

    fn initial_states(&self) -> Vec<FSys> {
        vec![FSys::default()]
    }

    fn successors(&self, s: &FSys, out: &mut Vec<Successor<FAct, FSys>>) {
        self.claim_step(s, out);
        for i in 0..usize::from(self.setup.workers) {
            self.worker_steps(s, i, out);
        }
        if self.setup.retire {
            self.successor_steps(s, out);
        }
        self.retire_steps(s, out);
    }
}
