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
pub mod failover;
mod names;
pub mod proof;
pub mod props;
pub mod report;
mod setup;
mod state;
pub mod variants;

pub(crate) use setup::retire_with_tombstone;
pub use setup::{
    AppendFn, ClaimFn, FinishFn, Named, REPORT, Replication, RetireFn, Rules, SELF_TEST,
    SELF_TEST_FAILOVER, SELF_TEST_FATES, Setup,
};
pub use state::{
    Answer, FAct, FSys, Log, MAX_WORKERS, Owner, Phase, Retired, Succ, SuccClaimed, compact, expand,
};
pub use variants::{VARIANTS, Variant, by_name};

use baton::{HandoffPause, Invocation};

use crate::explore::{Model, Successor};

/// The fenced-handoff system around a set of rules.
pub struct FenceModel {
    /// The configuration.
    pub setup: Setup,
    rules: Rules,
    source: Invocation,
    /// The successor's invocation (its Run is [`SUCCESSOR`](state::SUCCESSOR)).
    successor: Invocation,
    /// Worker `i`'s pause.
    pauses: Vec<HandoffPause<u8>>,
}

impl Model for FenceModel {
    type State = FSys;
    type Action = FAct;
    type Key = u128;

    fn pack(&self, s: &FSys) -> u128 {
        let log = |(epoch, pause, finish, retired, succ_epoch, succ_finish): Log| {
            u128::from(epoch)
                | u128::from(pause) << 4
                | u128::from(finish) << 8
                | u128::from(retired) << 12
                | u128::from(succ_epoch) << 13
                | u128::from(succ_finish) << 17
        };
        let owner = Owner::ALL
            .iter()
            .position(|o| *o == s.owner)
            .expect("an owner") as u128;
        let succ = Succ::ALL
            .iter()
            .position(|p| *p == s.succ)
            .expect("a successor phase") as u128;
        let mut key = log(s.log())
            | owner << 18
            | succ << 20
            | u128::from(s.succ_held) << 23
            | u128::from(s.failed_over) << 27
            | log(s.standby) << 28;
        for i in 0..MAX_WORKERS {
            let phase = Phase::ALL
                .iter()
                .position(|p| *p == s.phase[i])
                .expect("a phase") as u128;
            key |= (phase | u128::from(s.held[i]) << 4) << (46 + 8 * i);
        }
        key
    }

    fn unpack(&self, key: u128) -> FSys {
        let log = |bits: u128| -> Log {
            (
                (bits & 0xf) as u8,
                (bits >> 4 & 0xf) as u8,
                (bits >> 8 & 0xf) as u8,
                bits >> 12 & 1 == 1,
                (bits >> 13 & 0xf) as u8,
                bits >> 17 & 1 == 1,
            )
        };
        let mut s = FSys {
            owner: Owner::ALL[(key >> 18 & 0x3) as usize],
            succ: Succ::ALL[(key >> 20 & 0x7) as usize],
            succ_held: (key >> 23 & 0xf) as u8,
            failed_over: key >> 27 & 1 == 1,
            standby: log(key >> 28),
            ..FSys::default()
        };
        s.set_log(log(key));
        for i in 0..MAX_WORKERS {
            let bits = key >> (46 + 8 * i);
            s.phase[i] = Phase::ALL[(bits & 0xf) as usize];
            s.held[i] = (bits >> 4 & 0xf) as u8;
        }
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
        self.wait_for_the_standby(s, out);
        self.failover_steps(s, out);
    }
}
