//! An async-only log driven by the blocking fuzz body: each operation of
//! [`HandoffLog`] is the store's [`AsyncHandoffLog`] form, run to its end
//! on a tokio runtime.

use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, HandoffLog, LogError, Receipt, Retirement, RunFacts,
};
use baton::{HandoffPause, Invocation};
use tokio::runtime::Runtime;

/// A store with only the async forms (`PostgresLog`, or your own
/// [`AsyncHandoffLog`]) as the blocking [`HandoffLog`] that
/// [`log_store`](super::log_store) drives: each operation blocks on the
/// store's future in `runtime`, so the runtime's I/O and timers (which a
/// `PostgresLog` opened in it needs) run while it waits.
///
/// Pass the runtime the store was opened in: a current-thread runtime's
/// connections make progress only inside its own
/// [`block_on`](Runtime::block_on). Not for use inside that runtime (a
/// `block_on` within a `block_on` panics): a fuzz target is plain code.
///
/// ```
/// use arbitrary::{Arbitrary, Unstructured};
/// use baton::durable::MemoryLog;
/// use baton_testkit::fuzz::log_table::{Ops, Payload};
/// use baton_testkit::fuzz::{Blocking, log_store};
///
/// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// // Your async store, opened in `runtime` (`runtime.block_on(PostgresLog::connect(…))`):
/// let log = MemoryLog::<Payload>::new();
/// let input = Ops::arbitrary(&mut Unstructured::new(&[7; 256])).unwrap();
/// assert!(!input.0.is_empty());
/// assert!(log_store(input, &Blocking::new(&runtime, &log)).is_ok());
/// ```
pub struct Blocking<'a, L> {
    runtime: &'a Runtime,
    log: &'a L,
}

impl<'a, L> Blocking<'a, L> {
    /// `log`'s async forms, each blocked on in `runtime`.
    pub fn new(runtime: &'a Runtime, log: &'a L) -> Self {
        Self { runtime, log }
    }
}

impl<P, L: AsyncHandoffLog<P>> HandoffLog<P> for Blocking<'_, L> {
    fn claim(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        self.runtime
            .block_on(self.log.claim_async(root_run_id, run_id))
    }

    fn append(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        self.runtime
            .block_on(self.log.append_async(root_run_id, source, epoch, pause))
    }

    fn finish(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        self.runtime
            .block_on(self.log.finish_async(root_run_id, source, epoch, outcome))
    }

    fn retire(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        self.runtime.block_on(self.log.retire_async(root_run_id))
    }

    fn facts(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        self.runtime
            .block_on(self.log.facts_async(root_run_id, run_id))
    }
}
