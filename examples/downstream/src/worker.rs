//! The worker: steps a Run and hands it off at a step boundary.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use baton::durable::{Claim, Epoch, HandoffLog, LogError, SealError, append_then_seal};
use baton::{CancelSignal, HandoffGate, HandoffPause, HandoffRequester, Invocation};

use crate::sync::{Mutex, lock};

/// What the worker hands its successor: the number of steps it took.
pub type Steps = u32;

/// A pause of this runtime.
pub type Pause = HandoffPause<Steps>;

/// What the worker tells its supervisor about a handoff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// Final: the pause is durable and sealed, the successor owns the Run.
    HandedOff(Arc<Pause>),
    /// A committed handoff that did not become final; the worker stopped.
    /// The text is the `SealError`.
    NotHandedOff(String),
}

/// The supervisor's inbox of reports, in the order they were sent. Clones
/// share it. A report once sent cannot be taken back: a supervisor may act
/// on it at once (start the successor).
#[derive(Clone, Debug, Default)]
pub struct Reports {
    sent: Arc<Mutex<Vec<Report>>>,
}

impl Reports {
    /// An empty inbox.
    pub fn new() -> Self {
        Self::default()
    }

    fn send(&self, report: Report) {
        lock(&self.sent).push(report);
    }

    /// Every report sent so far.
    pub fn sent(&self) -> Vec<Report> {
        lock(&self.sent).clone()
    }

    /// The pauses reported final so far, in order.
    pub fn handed_off(&self) -> Vec<Arc<Pause>> {
        lock(&self.sent)
            .iter()
            .filter_map(|report| match report {
                Report::HandedOff(pause) => Some(Arc::clone(pause)),
                Report::NotHandedOff(_) => None,
            })
            .collect()
    }
}

/// What one [`Worker::step`] came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// No handoff (or it was let go): take the next step.
    Continue,
    /// Handed off: final, reported; the worker stops.
    HandedOff(Arc<Pause>),
    /// The gate is sealed or closed, or the handoff failed; the worker stops.
    Stopped,
}

/// A worker running one Run under an owner epoch of the canonical log `L`.
#[derive(Debug)]
pub struct Worker<L> {
    gate: HandoffGate<Steps>,
    cancel: CancelSignal,
    log: Arc<L>,
    epoch: Epoch,
    steps: AtomicU32,
    reports: Reports,
}

impl<L: HandoffLog<Steps>> Worker<L> {
    /// Claims the Run `source.run_id` of root Run `root_run_id` on `log` and
    /// starts its worker, which reports to `reports`. `Ok(None)` if the Run
    /// was already handed off, finished or retired: it must never be
    /// resumed.
    ///
    /// # Errors
    ///
    /// The log's refusal of the claim (e.g. invalid ids).
    pub fn start(
        source: Invocation,
        root_run_id: &str,
        log: Arc<L>,
        reports: Reports,
    ) -> Result<Option<Self>, LogError> {
        let epoch = match log.claim(root_run_id, &source.run_id)? {
            Claim::Owner(epoch) => epoch,
            // Handed off, finished, or retired: final, never resumed.
            Claim::HandedOff(_) | Claim::Finished(_) | Claim::Retired => return Ok(None),
        };
        Ok(Some(Self {
            gate: HandoffGate::new(source, root_run_id.to_owned()),
            cancel: CancelSignal::new(),
            log,
            epoch,
            steps: AtomicU32::new(0),
            reports,
        }))
    }

    /// A requester for supervisors that want the Run handed off.
    pub fn requester(&self) -> HandoffRequester<Steps> {
        self.gate.requester()
    }

    /// The Run's cancel signal.
    pub fn cancel(&self) -> &CancelSignal {
        &self.cancel
    }

    /// The owner epoch the worker runs under.
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// Takes one step of the Run, then stops at the step boundary: if a
    /// handoff is asked, prepares a pause (the steps taken so far), waits
    /// for the commit, appends the pause durably and seals, and only then
    /// reports it final.
    pub async fn step(&self) -> StepOutcome {
        let steps = self.steps.fetch_add(1, Ordering::Relaxed) + 1;
        let boundary = self.gate.boundary(&self.cancel, move |intent| async move {
            Some(HandoffPause::new(intent, steps))
        });
        match boundary.await {
            Ok(None) => StepOutcome::Continue,
            Ok(Some(pause)) => self.finish(pause),
            Err(_) => StepOutcome::Stopped,
        }
    }

    /// The last step of a committed handoff.
    fn finish(&self, pause: Arc<Pause>) -> StepOutcome {
        if cfg!(feature = "planted-bug") {
            // BROKEN ON PURPOSE (`planted-bug`): tell the supervisor at once,
            // so the successor can start warming up while the append runs.
            // The report is final before the log holds the pause (H1).
            self.reports.send(Report::HandedOff(Arc::clone(&pause)));
        }
        match append_then_seal(&self.gate, self.log.as_ref(), self.epoch, &pause) {
            // Durable (and sealed, or closed after the append: the log
            // decides, and it says handed off).
            Ok(_) | Err(SealError::ClosedBeforeSeal) => {
                if !cfg!(feature = "planted-bug") {
                    self.reports.send(Report::HandedOff(Arc::clone(&pause)));
                }
                StepOutcome::HandedOff(pause)
            }
            Err(error) => {
                self.reports.send(Report::NotHandedOff(error.to_string()));
                StepOutcome::Stopped
            }
        }
    }
}
