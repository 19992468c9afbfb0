//! The canonical log's contract (`baton::spec`, §6), as a harness any store
//! can be run through: baton's own `MemoryLog`, `SqliteLog` and
//! `PostgresLog` are (in baton's `tests/log_contract`), and so can yours.
//!
//! A store under test is a [`Store`]: a fresh, empty log that more
//! connections can be opened to (another process's view of the same
//! facts). [`log_contract!`](macro@crate::log_contract) instantiates every test
//! of the contract for it, each a `#[test]` named with the rule ids it
//! checks (R1, R3, R4, R6, R7…), so a failure says which promise broke. A
//! store that implements the blocking [`HandoffLog`] (such as the
//! `MapLog` of `baton::durable::HandoffLog`'s docs) is run through
//! [`Shared`]: handles on one log, each operation run inline.
//!
//! Every operation is awaited within [`BOUND`](crate::within::BOUND), so
//! each test also checks R5 for what it runs (every operation resolves):
//! a store that hangs fails with the rule's id instead of hanging the job.
//!
//! ```
//! use std::sync::Arc;
//!
//! use baton::durable::MemoryLog;
//! use baton_testkit::log_contract::{Payload, Shared};
//!
//! /// A fresh store for each test (`None`: not available here, the test
//! /// passes having said so, e.g. a server that is not installed).
//! async fn memory() -> Option<Shared<MemoryLog<Payload>>> {
//!     Some(Shared::new(MemoryLog::new()))
//! }
//!
//! // In a test file: one `#[test]` per rule, in a module `memory`.
//! baton_testkit::log_contract!(memory, memory);
//! # fn main() {
//! #     // A doctest runs no `#[test]`: run one of them by hand.
//! #     baton_testkit::log_contract::run(memory, baton_testkit::log_contract::r1_a_handed_off_run_is_never_claimed_again);
//! # }
//! ```
//!
//! The tests drive the store with the payload [`Payload`]
//! (`baton::HandoffExecution`): a store generic over its payload, as
//! baton's are, is tested at that one.
//!
//! # What the contract holds a store to
//!
//! - R1: a handed-off Run is never claimed again, from any connection;
//!   two appends and a takeover racing decide one way.
//! - R3: the facts read back exactly what was appended, each Run its own;
//!   a read is one snapshot, never an epoch and a pause that were not true
//!   together (for a store that can hold a read between its two reads:
//!   [`HoldsReads`]).
//! - R4: an acknowledged append is durable for every later connection.
//! - R6: only the current epoch appends (even the identical row); racing
//!   claims issue each epoch exactly once; no epoch past
//!   [`Epoch::LAST`](baton::durable::Epoch::LAST) is ever accepted.
//! - R7: a fenced epoch's append writes nothing, and its worker never
//!   seals (through `append_then_seal_async` and a real gate).
//! - R8–R10: a finished Run is never resumed and takes no other fate;
//!   retirement removes only final Runs and fences every zombie.
//! - G1, G5: a durable handoff keeps its root from retention until its
//!   successor is final, claimed or not, and the successor's claim is
//!   never refused meanwhile; a root the log holds nothing for is not
//!   retired.
//! - G2: a pause or outcome whose JSON does not read back equal is refused
//!   (`Encode`), writing nothing (for a store that can also be opened with
//!   `f64` payloads: [`HoldsFloats`]).
//! - G5 by age: a sweep retires, in bounded batches, only roots whose work
//!   ended before its cut-off, keeps the others, and always ends (for a
//!   store with retention by age: [`SweepsEnded`]).
//! - Bad input is a typed error and writes nothing; an identical
//!   re-append is `AlreadyDurable`; a dropped append is resolved by the
//!   facts and an identical retry.
//!
//! Where the stores meet the edge of the epochs: every store issues its
//! last epoch at [`Epoch::LAST`](baton::durable::Epoch::LAST) (`i64::MAX`,
//! what a SQL `bigint` holds) and refuses the next claim with
//! `EpochsExhausted`, writing nothing. Reaching it takes `i64::MAX` claims
//! or a store's own back door, so the harness cannot: baton shows it per
//! store — the shared rule (`claim_step`, which every store calls) in its
//! fence unit tests, `MemoryLog` on a record, `SqliteLog` and `PostgresLog`
//! on a row, each set just below it. What the harness does check on every
//! store is the other side of the edge: an append under `Epoch::LAST`,
//! `LAST + 1` or `u64::MAX` that no claim issued is `EpochNotIssued`.

use std::future::Future;
use std::sync::Arc;
use std::time::SystemTime;

use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, HandoffLog, LogError, MemoryLog, Receipt, Retirement, RunFacts,
    Sweep, SweepCursor,
};
use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{
    CancelSignal, HandoffExecution, HandoffGate, HandoffIntent, HandoffPause, HandoffReservation,
    Invocation, PendingSeal,
};

use crate::within::within;

mod fates;
mod fencing;
mod guarantees;
mod races;
mod reads;
mod suite;

pub use fates::*;
pub use fencing::*;
pub use guarantees::*;
pub use races::*;
pub use reads::*;

/// The payload every test of the contract appends.
pub type Payload = HandoffExecution;

/// A store under test: one empty log, to which [`open`](Self::open) opens
/// another connection (another process's view of the same facts).
pub trait Store: Send + Sync + 'static {
    /// One connection.
    type Log: AsyncHandoffLog<Payload> + Send + Sync + 'static;
    /// Opens another connection to the store.
    fn open(&self) -> impl Future<Output = Self::Log> + Send;
}

/// A store whose read of the facts can be held between its two reads (the
/// Run's epoch, then its pauses): what
/// [`r3_the_facts_are_one_snapshot_even_across_a_takeover_and_a_handoff`]
/// needs to decide, by construction, that a read is one snapshot. Give it
/// to [`log_contract!`](macro@crate::log_contract) as
/// `log_contract!(name, make, holds_reads)`.
///
/// Implement it for a store whose read is two reads (a SQL store reading
/// two tables): baton's PostgreSQL stores do, with another session holding
/// the pause table locked (the read takes its snapshot at the epoch, then
/// waits), and writing under that lock. A store that reads under one lock
/// (`MemoryLog`, the docs' `MapLog`) has no moment between its reads to
/// hold: it is one snapshot by construction and need not implement this.
pub trait HoldsReads: Store {
    /// Reads the facts of Run `run` within `root` through `log` and holds
    /// that read after its first read; while it is held, takes the Run over
    /// (its next epoch) and hands it off under that epoch (`pause`, from
    /// `source`), both committed; then lets the read go on and answers it.
    /// The hold must be real (the writes commit while the read is inside
    /// it), or the test proves nothing: show it, e.g. by waiting until the
    /// store reports the read blocked.
    fn read_across_a_takeover(
        &self,
        log: &Self::Log,
        root: &str,
        run: &str,
        source: &Invocation,
        pause: &HandoffPause<Payload>,
    ) -> impl Future<Output = Result<RunFacts<Payload>, LogError>> + Send;
}

/// A store that can also be opened with `f64` payloads: what
/// [`g2_what_a_store_acknowledges_reads_back_equal`] needs, since the
/// contract's [`Payload`] always reads back equal and a float need not (an
/// `f64` NaN or infinity encodes as `null`). Give it to
/// [`log_contract!`](macro@crate::log_contract) by naming that test:
/// `log_contract!(name, make; g2_what_a_store_acknowledges_reads_back_equal)`.
pub trait HoldsFloats: Store {
    /// A log of the store's kind whose payloads are `f64`.
    type FloatLog: AsyncHandoffLog<f64> + Send + Sync + 'static;
    /// An empty log of the store's kind whose payloads are `f64` (called
    /// once per test).
    fn float_log(&self) -> impl Future<Output = Self::FloatLog> + Send;
}

/// `MemoryLog`'s: a log of its own.
impl HoldsFloats for Shared<MemoryLog<Payload>> {
    type FloatLog = MemoryLog<f64>;
    async fn float_log(&self) -> MemoryLog<f64> {
        MemoryLog::new()
    }
}

/// A store with retention by age: one batch of a sweep on a connection
/// (`MemoryLog::retire_ended`, `SqliteLog::retire_ended_async`,
/// `PostgresLog::retire_ended_async`), for
/// [`g5_retention_by_age_retires_only_ended_roots_in_bounded_batches`].
/// Give it to [`log_contract!`](macro@crate::log_contract) by naming that
/// test.
pub trait SweepsEnded: Store {
    /// One batch: up to `limit` roots with a Run finished before `before`,
    /// after `from`; each retired if its work ended before `before`.
    fn retire_ended(
        &self,
        log: &Self::Log,
        before: SystemTime,
        from: Option<&SweepCursor>,
        limit: usize,
    ) -> impl Future<Output = Result<Sweep, LogError>> + Send;
}

/// `MemoryLog`'s: under its one lock.
impl SweepsEnded for Shared<MemoryLog<Payload>> {
    fn retire_ended(
        &self,
        log: &Self::Log,
        before: SystemTime,
        from: Option<&SweepCursor>,
        limit: usize,
    ) -> impl Future<Output = Result<Sweep, LogError>> + Send {
        std::future::ready(Ok(log.log().retire_ended(before, from, limit)))
    }
}

/// A store that implements the blocking [`HandoffLog`], as a [`Store`]:
/// every connection is a handle on the one log, and each operation runs
/// inline when its future is first polled, never yielding (a future
/// dropped unpolled does nothing, as `AsyncHandoffLog` requires), so it
/// suits a store whose operations do not block for long, like one in
/// memory.
#[derive(Debug)]
pub struct Shared<L>(Arc<L>);

impl<L> Shared<L> {
    /// The store `log`.
    pub fn new(log: L) -> Self {
        Shared(Arc::new(log))
    }

    /// The log itself, to look inside it after a test.
    pub fn log(&self) -> &L {
        &self.0
    }
}

impl<L> Clone for Shared<L> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<L> Store for Shared<L>
where
    L: HandoffLog<Payload> + Send + Sync + 'static,
{
    type Log = Shared<L>;
    fn open(&self) -> impl Future<Output = Self::Log> + Send {
        std::future::ready(self.clone())
    }
}

impl<L> AsyncHandoffLog<Payload> for Shared<L>
where
    L: HandoffLog<Payload> + Send + Sync,
{
    fn claim_async(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> impl Future<Output = Result<Claim<Payload>, LogError>> + Send {
        let log = &self.0;
        async move { log.claim(root_run_id, run_id) }
    }

    fn append_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<Payload>,
    ) -> impl Future<Output = Result<Receipt, LogError>> + Send {
        let log = &self.0;
        async move { log.append(root_run_id, source, epoch, pause) }
    }

    fn finish_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &Payload,
    ) -> impl Future<Output = Result<Receipt, LogError>> + Send {
        let log = &self.0;
        async move { log.finish(root_run_id, source, epoch, outcome) }
    }

    fn retire_async(
        &self,
        root_run_id: &str,
    ) -> impl Future<Output = Result<Retirement, LogError>> + Send {
        let log = &self.0;
        async move { log.retire(root_run_id) }
    }

    fn facts_async(
        &self,
        root_run_id: &str,
        run_id: &str,
    ) -> impl Future<Output = Result<RunFacts<Payload>, LogError>> + Send {
        let log = &self.0;
        async move { log.facts(root_run_id, run_id) }
    }
}

/// Runs `test` on a fresh store made by `make` (`None`: the store is not
/// available here and the test passes, having said so), on a runtime of
/// two worker threads so that connections really race.
///
/// # Panics
///
/// When the test finds the contract broken (its message names the rule),
/// or a runtime cannot be built.
pub fn run<S, M, F>(make: impl FnOnce() -> M, test: impl FnOnce(Arc<S>) -> F)
where
    S: Store,
    M: Future<Output = Option<S>>,
    F: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        if let Some(store) = make().await {
            test(Arc::new(store)).await;
        }
    });
}

/// Instantiates every test of the [contract](mod@crate::log_contract) for one
/// store: `log_contract!(name, make)` makes a module `name` with one
/// `#[test]` per test, each running on a fresh store from `make` (an
/// `async fn() -> Option<S>` where `S:`
/// [`Store`], in scope where the macro is
/// called). `log_contract!(name, make, holds_reads)` adds the snapshot
/// test, for a store that implements
/// [`HoldsReads`].
#[macro_export]
macro_rules! log_contract {
    ($store:ident, $make:expr, holds_reads) => {
        $crate::log_contract!($store, $make;
            r3_the_facts_are_one_snapshot_even_across_a_takeover_and_a_handoff,
        );
    };
    ($store:ident, $make:expr) => {
        $crate::log_contract!($store, $make;);
    };
    ($store:ident, $make:expr; $($more:ident),* $(,)?) => {
        $crate::log_contract!(@tests $store, $make; $($more,)*
            r1_a_handed_off_run_is_never_claimed_again,
            r1_r6_r7_a_takeover_fences_the_older_epoch_and_its_append_writes_nothing,
            r6_only_the_current_epoch_appends_even_the_identical_row,
            an_identical_reappend_is_already_durable_and_any_other_row_is_refused,
            bad_input_is_a_typed_error_and_writes_nothing,
            r3_the_facts_read_back_exactly_what_was_appended_and_each_run_is_its_own,
            r4_an_acknowledged_append_is_durable_for_every_connection,
            r6_concurrent_claims_from_several_connections_issue_each_epoch_once,
            r1_racing_appends_and_a_takeover_from_several_connections_decide_one_way,
            r2_r4_r7_append_then_seal_seals_only_a_durable_pause_and_a_fenced_worker_never,
            a_dropped_append_is_resolved_by_the_facts_and_an_identical_retry,
            r8_a_finished_run_is_never_resumed_and_takes_no_other_fate,
            r9_r10_retirement_removes_only_final_runs_and_fences_every_zombie,
            r8_racing_finish_append_and_takeover_decide_one_way,
            r9_racing_retirement_and_a_claim_of_a_new_run_decide_one_way,
            g1_g5_a_handoff_keeps_its_root_until_its_successor_is_final,
        );
    };
    (@tests $store:ident, $make:expr; $($test:ident),* $(,)?) => {
        mod $store {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $test() {
                    $crate::log_contract::run($make, $crate::log_contract::$test);
                }
            )*
        }
    };
}

// --- The gate the worker-side test hands off through. ---

/// The rule `wait()` keeps, awaited by the worker-side test.
const SEALED: &str = "S5: the sealed pause reaches the waiting requester";

fn digest(c: char) -> Digest {
    Digest::parse(format!("sha256:{}", c.to_string().repeat(64))).expect("valid digest")
}

/// The execution every pause of the contract carries.
fn execution() -> HandoffExecution {
    HandoffExecution {
        replay: ReplayEvidence {
            version: REPLAY_VERSION,
            digest: digest('a'),
            route_identity: digest('b'),
        },
        tools: HandoffTools {
            catalog_digest: digest('c'),
            loaded: vec!["shell".into()],
        },
        compaction: CompactionBudget::Available,
        main_output_limit: None,
        supports_vision: false,
        replay_base: None,
    }
}

/// A gate of the Run `run` within the root Run `run`.
fn gate() -> HandoffGate<Payload> {
    let source = Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    };
    HandoffGate::new(source, "run".into())
}

/// An intent handing [`gate`]'s Run off.
fn intent() -> HandoffIntent {
    HandoffIntent {
        handoff_id: "handoff".into(),
        host_epoch: "host".into(),
        root_run_id: "run".into(),
        successor_run_id: "successor-run".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    }
}

/// The worker's boundary beside the requester's `ready()` then `commit()`:
/// the pause the boundary returned, and the requester's pending seal.
async fn commit_at_boundary(
    gate: &HandoffGate<Payload>,
    cancel: &CancelSignal,
    reservation: HandoffReservation<Payload>,
) -> (Option<Arc<HandoffPause<Payload>>>, PendingSeal<Payload>) {
    let prepared = |intent: Arc<HandoffIntent>| {
        std::future::ready(Some(HandoffPause::new(intent, execution())))
    };
    let (paused, pending) = within(
        "L1: the worker's boundary and the requester's ready and commit meet",
        async {
            tokio::join!(gate.boundary(cancel, prepared), async {
                let held = reservation.ready().await.expect("held");
                held.commit().expect("committed")
            })
        },
    )
    .await;
    (paused.expect("the gate is open"), pending)
}
