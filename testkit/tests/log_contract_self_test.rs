//! The kit's log-contract checks fed stores they must refuse (issue 44),
//! so that a user's store cannot pass one of them hollow: each test here
//! is expected to fail, on the message of the rule the store breaks.
//!
//! - R3, the one-snapshot check: a store whose read of the facts takes the
//!   Run's epoch from one snapshot and its pauses from another (a SQL
//!   store reading two tables outside one transaction).
//! - The same store's whole contract, without the check that holds a read:
//!   it must still pass everything else (the broken read is caught by the
//!   check made for it, not by luck elsewhere).
#![cfg(not(loom))]

use std::future::Future;

use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, HandoffLog, LogError, MemoryLog, Receipt, Retirement, RunFacts,
};
use baton::{HandoffPause, Invocation};
use baton_testkit::log_contract::{self, HoldsReads, Payload, Shared, Store, run};

/// `MemoryLog`, except that its read of the facts is two reads, each its
/// own snapshot: the epoch, then the pauses.
#[derive(Default)]
struct TwoSnapshots(MemoryLog<Payload>);

impl TwoSnapshots {
    /// The facts from `epoch_read` (the Run's epoch, finish and
    /// tombstone) with the pauses of `pause_read`: a read of two tables.
    fn mixed(epoch_read: RunFacts<Payload>, pause_read: RunFacts<Payload>) -> RunFacts<Payload> {
        RunFacts {
            pauses: pause_read.pauses,
            ..epoch_read
        }
    }
}

impl HandoffLog<Payload> for TwoSnapshots {
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<Payload>, LogError> {
        self.0.claim(root_run_id, run_id)
    }
    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<Payload>,
    ) -> Result<Receipt, LogError> {
        self.0.append(root_run_id, source, epoch, pause)
    }
    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &Payload,
    ) -> Result<Receipt, LogError> {
        self.0.finish(root_run_id, source, epoch, outcome)
    }
    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        self.0.retire(root_run_id)
    }
    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<Payload>, LogError> {
        let epoch_read = self.0.facts(root_run_id, run_id)?;
        let pause_read = self.0.facts(root_run_id, run_id)?;
        Ok(Self::mixed(epoch_read, pause_read))
    }
}

/// The store of [`TwoSnapshots`] logs, able to hold a read between its two
/// reads (as the kit's `HoldsReads` asks).
#[derive(Clone)]
struct TwoSnapshotStore(Shared<TwoSnapshots>);

impl Store for TwoSnapshotStore {
    type Log = Shared<TwoSnapshots>;
    fn open(&self) -> impl Future<Output = Self::Log> + Send {
        std::future::ready(self.0.clone())
    }
}

impl HoldsReads for TwoSnapshotStore {
    async fn read_across_a_takeover(
        &self,
        log: &Self::Log,
        root: &str,
        run: &str,
        source: &Invocation,
        pause: &HandoffPause<Payload>,
    ) -> Result<RunFacts<Payload>, LogError> {
        let epoch_read = log.log().0.facts(root, run)?;
        // Held here: the takeover and the handoff under its epoch commit.
        take_over_and_hand_off(log, root, run, source, pause).await?;
        let pause_read = log.log().0.facts(root, run)?;
        Ok(TwoSnapshots::mixed(epoch_read, pause_read))
    }
}

/// The writes `HoldsReads` makes while a read is held: the Run taken over
/// (its next epoch) and handed off under that epoch.
async fn take_over_and_hand_off<L: AsyncHandoffLog<Payload>>(
    log: &L,
    root: &str,
    run: &str,
    source: &Invocation,
    pause: &HandoffPause<Payload>,
) -> Result<(), LogError> {
    let Claim::Owner(next) = log.claim_async(root, run).await? else {
        panic!("the takeover");
    };
    assert_eq!(
        log.append_async(root, source, next, pause).await?,
        Receipt::Written
    );
    Ok(())
}

async fn two_snapshots() -> Option<TwoSnapshotStore> {
    Some(TwoSnapshotStore(Shared::new(TwoSnapshots::default())))
}

#[test]
#[should_panic(expected = "R3: one snapshot")]
fn r3_the_one_snapshot_check_refuses_a_read_of_two_snapshots() {
    run(
        two_snapshots,
        log_contract::r3_the_facts_are_one_snapshot_even_across_a_takeover_and_a_handoff,
    );
}

/// The control: held by a store whose read is one snapshot (the same
/// writes, the facts read once after the hold), the check passes, so the
/// refusal above is the broken read's.
#[test]
fn r3_the_one_snapshot_check_passes_a_read_of_one_snapshot() {
    #[derive(Clone)]
    struct OneSnapshotStore(Shared<MemoryLog<Payload>>);
    impl Store for OneSnapshotStore {
        type Log = Shared<MemoryLog<Payload>>;
        fn open(&self) -> impl Future<Output = Self::Log> + Send {
            std::future::ready(self.0.clone())
        }
    }
    impl HoldsReads for OneSnapshotStore {
        async fn read_across_a_takeover(
            &self,
            log: &Self::Log,
            root: &str,
            run: &str,
            source: &Invocation,
            pause: &HandoffPause<Payload>,
        ) -> Result<RunFacts<Payload>, LogError> {
            take_over_and_hand_off(log, root, run, source, pause).await?;
            log.facts_async(root, run).await
        }
    }
    run(
        || async { Some(OneSnapshotStore(Shared::new(MemoryLog::new()))) },
        log_contract::r3_the_facts_are_one_snapshot_even_across_a_takeover_and_a_handoff,
    );
}

/// Without a hold, nothing else in the contract sees the two-snapshot
/// read (no writer comes between its reads): the check that holds a read
/// is what refuses it.
mod the_rest_of_the_contract {
    use super::*;

    async fn shared() -> Option<Shared<TwoSnapshots>> {
        Some(Shared::new(TwoSnapshots::default()))
    }

    baton_testkit::log_contract!(shared, shared);
}
