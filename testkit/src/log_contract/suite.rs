//! What the contract's tests share: the ids, the pause and the outcome
//! they write, and each operation awaited within the shared bound, so
//! that every test also checks R5 for what it runs (every operation
//! resolves). The tests, generic over a [`Store`](super::Store) and named
//! with the rule ids (§6) they check, are in `fencing`, `reads`, `races`,
//! `fates` and `guarantees`.

use baton::durable::{
    Appended, AsyncHandoffLog, Claim, Epoch, LogError, Receipt, Retirement, RunFacts,
};
use baton::{HandoffIntent, HandoffPause, Invocation};

use super::{Payload, execution};
use crate::within::within;

/// The logical Run of the suite's Runs.
pub(super) const ROOT: &str = "root";

pub(super) type Pause = HandoffPause<Payload>;

/// The invocation executing Run `run`.
pub(super) fn source(run: &str) -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: run.into(),
        invocation_id: format!("{run}-invocation"),
    }
}

/// A pause handing Run `run` (within [`ROOT`]) off to `{run}-next`.
pub(super) fn pause(run: &str, handoff_id: &str) -> Pause {
    HandoffPause::new(
        HandoffIntent {
            handoff_id: handoff_id.into(),
            host_epoch: "host".into(),
            root_run_id: ROOT.into(),
            successor_run_id: format!("{run}-next"),
            successor_invocation_id: format!("{run}-next-invocation"),
            claim_id: "claim".into(),
        },
        execution(),
    )
}

pub(super) async fn claim<L: AsyncHandoffLog<Payload>>(
    log: &L,
    run: &str,
) -> Result<Claim<Payload>, LogError> {
    within("R5: a claim resolves", log.claim_async(ROOT, run)).await
}

/// Claims `run`, which must be open: the epoch its worker holds.
pub(super) async fn owner<L: AsyncHandoffLog<Payload>>(log: &L, run: &str) -> Epoch {
    match claim(log, run).await {
        Ok(Claim::Owner(epoch)) => epoch,
        other => panic!("a claim of the open Run {run:?} answered {other:?}"),
    }
}

pub(super) async fn append<L: AsyncHandoffLog<Payload>>(
    log: &L,
    source: &Invocation,
    epoch: Epoch,
    pause: &Pause,
) -> Result<Receipt, LogError> {
    within(
        "R4: an append resolves",
        log.append_async(ROOT, source, epoch, pause),
    )
    .await
}

pub(super) async fn facts<L: AsyncHandoffLog<Payload>>(log: &L, run: &str) -> RunFacts<Payload> {
    within(
        "R5: a read of the facts resolves",
        log.facts_async(ROOT, run),
    )
    .await
    .expect("the facts read back")
}

pub(super) fn row(run: &str, pause: &Pause) -> Vec<Appended<Payload>> {
    vec![Appended {
        source: source(run),
        pause: pause.clone(),
    }]
}

pub(super) async fn finish<L: AsyncHandoffLog<Payload>>(
    log: &L,
    source: &Invocation,
    epoch: Epoch,
    outcome: &Payload,
) -> Result<Receipt, LogError> {
    within(
        "R4: a finish resolves",
        log.finish_async(ROOT, source, epoch, outcome),
    )
    .await
}

pub(super) async fn retire<L: AsyncHandoffLog<Payload>>(
    log: &L,
    root: &str,
) -> Result<Retirement, LogError> {
    within("R5: a retirement resolves", log.retire_async(root)).await
}

/// An outcome distinct from [`execution`]'s by its output limit.
pub(super) fn outcome(limit: u32) -> Payload {
    let mut outcome = execution();
    outcome.main_output_limit = Some(limit);
    outcome
}
