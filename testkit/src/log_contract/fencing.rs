//! The contract's fencing cases: a handed-off Run is never claimed again,
//! only the current epoch appends, an identical re-append is idempotent,
//! and bad input is a typed error that writes nothing (R1, R6, R7).

use std::sync::Arc;

use baton::IntentError;
use baton::durable::{
    AsyncHandoffLog, Claim, Decision, Epoch, LogError, Receipt, RunField, reconcile,
};
use baton::facts::{Field, IdError, MAX_ID_BYTES};

use super::Store;
use super::suite::{ROOT, append, claim, facts, owner, pause, row, source};
use crate::within::within;

/// R1: once a pause is durable no epoch is issued: every claim, from any
/// connection, answers the pause and writes nothing (R3: it matches the
/// log).
pub async fn r1_a_handed_off_run_is_never_claimed_again<S: Store>(store: Arc<S>) {
    let log = store.open().await;
    let epoch = owner(&log, "run").await;
    let handoff = pause("run", "h");
    assert_eq!(
        append(&log, &source("run"), epoch, &handoff).await.unwrap(),
        Receipt::Written
    );
    let other = store.open().await;
    for connection in [&log, &other, &log] {
        assert_eq!(
            claim(connection, "run").await.unwrap(),
            Claim::HandedOff(handoff.clone()),
            "R1: a handed-off Run is never resumed"
        );
    }
    let read = facts(&other, "run").await;
    assert_eq!(read.epoch, epoch, "R1: no epoch issued once handed off");
    assert_eq!(read.pauses, row("run", &handoff));
    assert_eq!(reconcile(&read), Ok(Decision::HandedOff(handoff)), "R3");
}

/// R1, R6, R7: the owner takes over (from another connection) while the
/// worker of the first epoch is only paused; when the zombie wakes, its
/// append is fenced and writes nothing, and the new epoch's append wins.
pub async fn r1_r6_r7_a_takeover_fences_the_older_epoch_and_its_append_writes_nothing<S: Store>(
    store: Arc<S>,
) {
    let zombie_log = store.open().await;
    let owner_log = store.open().await;
    let zombie = owner(&zombie_log, "run").await;
    let takeover = owner(&owner_log, "run").await;
    assert!(takeover > zombie, "a takeover issues a newer epoch");
    assert!(
        matches!(
            append(&zombie_log, &source("run"), zombie, &pause("run", "zombie")).await,
            Err(LogError::Fenced { epoch, current }) if epoch == zombie && current == takeover
        ),
        "R7: the fenced epoch never appends"
    );
    let read = facts(&owner_log, "run").await;
    assert!(
        read.pauses.is_empty(),
        "R7: the fenced append wrote nothing"
    );
    assert_eq!(read.epoch, takeover);
    assert_eq!(reconcile(&read), Ok(Decision::Resumable));
    let handoff = pause("run", "h");
    assert_eq!(
        append(&owner_log, &source("run"), takeover, &handoff)
            .await
            .unwrap(),
        Receipt::Written,
        "R6: the current epoch appends"
    );
    assert!(matches!(
        append(&zombie_log, &source("run"), zombie, &pause("run", "zombie")).await,
        Err(LogError::Fenced { .. })
    ));
    assert_eq!(facts(&zombie_log, "run").await.pauses, row("run", &handoff));
}

/// R6: only the current epoch appends: an older epoch is fenced even with
/// the very row that is durable, and an epoch never issued is refused.
pub async fn r6_only_the_current_epoch_appends_even_the_identical_row<S: Store>(store: Arc<S>) {
    let log = store.open().await;
    let first = owner(&log, "run").await;
    let second = owner(&log, "run").await;
    let handoff = pause("run", "h");
    let _ = append(&log, &source("run"), second, &handoff)
        .await
        .unwrap();
    assert!(
        matches!(
            append(&log, &source("run"), first, &handoff).await,
            Err(LogError::Fenced { epoch, current }) if epoch == first && current == second
        ),
        "R6: the identical row under an older epoch is fenced"
    );
    let never = second.next().unwrap();
    assert!(
        matches!(
            append(&log, &source("run"), never, &handoff).await,
            Err(LogError::EpochNotIssued { epoch, current }) if epoch == never && current == second
        ),
        "an epoch no claim issued"
    );
    assert_eq!(facts(&log, "run").await.pauses, row("run", &handoff));
}

/// A lost reply's retry: the identical row again under the same epoch, from
/// any connection, is `AlreadyDurable`; another pause, or the same pause
/// from another invocation of the Run, is `AlreadyHandedOff`; none writes.
pub async fn an_identical_reappend_is_already_durable_and_any_other_row_is_refused<S: Store>(
    store: Arc<S>,
) {
    let log = store.open().await;
    let retrying = store.open().await;
    let epoch = owner(&log, "run").await;
    let handoff = pause("run", "h");
    assert_eq!(
        append(&log, &source("run"), epoch, &handoff).await.unwrap(),
        Receipt::Written
    );
    for connection in [&log, &retrying] {
        assert_eq!(
            append(connection, &source("run"), epoch, &handoff)
                .await
                .unwrap(),
            Receipt::AlreadyDurable,
            "the identical append again is idempotent"
        );
    }
    assert!(matches!(
        append(&retrying, &source("run"), epoch, &pause("run", "other")).await,
        Err(LogError::AlreadyHandedOff { root_run_id, run_id }) if root_run_id == ROOT && run_id == "run"
    ));
    let mut other_invocation = source("run");
    other_invocation.invocation_id = "another-invocation".into();
    assert!(
        matches!(
            append(&retrying, &other_invocation, epoch, &handoff).await,
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "the same pause from another invocation is not the identical row"
    );
    let mut other_payload = handoff.clone();
    other_payload.execution.tools.loaded.push("browser".into());
    assert!(
        matches!(
            append(&retrying, &source("run"), epoch, &other_payload).await,
            Err(LogError::AlreadyHandedOff { .. })
        ),
        "the same intent with another execution is not the identical row"
    );
    assert_eq!(facts(&log, "run").await.pauses, row("run", &handoff));
}

/// Bad input is a typed error, decided before the store is written, and
/// writes nothing: invalid Run ids (empty, too long, a control character)
/// for every operation, an append's invalid source ids (a NUL in its
/// session id among them), epochs never issued (up to and past
/// [`Epoch::LAST`], where every store stops issuing), a pause for another root Run
/// or handing the Run to itself, an invalid intent id.
pub async fn bad_input_is_a_typed_error_and_writes_nothing<S: Store>(store: Arc<S>) {
    let log = store.open().await;
    let long = "x".repeat(MAX_ID_BYTES + 1);
    for (root, run, field, error) in [
        ("", "run", RunField::RootRunId, IdError::Empty),
        (ROOT, "", RunField::RunId, IdError::Empty),
        (ROOT, "r\u{7}n", RunField::RunId, IdError::ControlCharacter),
        (
            long.as_str(),
            "run",
            RunField::RootRunId,
            IdError::TooLong(MAX_ID_BYTES + 1),
        ),
    ] {
        let invalid = |answer: Option<&LogError>| matches!(answer, Some(LogError::InvalidRun { field: f, error: e }) if *f == field && *e == error);
        let claimed = within("R5", log.claim_async(root, run)).await;
        assert!(
            invalid(claimed.as_ref().err()),
            "a typed error, InvalidRun: claim({root:?}, {run:?}): {claimed:?}"
        );
        let read = within("R5", log.facts_async(root, run)).await;
        assert!(
            invalid(read.as_ref().err()),
            "a typed error, InvalidRun: facts({root:?}, {run:?}): {read:?}"
        );
        let mut bad_source = source("run");
        bad_source.run_id = run.into();
        let appended = within(
            "R5",
            log.append_async(root, &bad_source, Epoch::new(1), &pause("run", "h")),
        )
        .await;
        assert!(
            invalid(appended.as_ref().err()),
            "a typed error, InvalidRun: append({root:?}, {run:?}): {appended:?}"
        );
    }
    // The source's other ids too, before anything else is looked at: a NUL
    // is text a server may not store, so no store ever meets one.
    for (field, error, bad) in [
        (
            RunField::SessionId,
            IdError::ControlCharacter,
            "session\u{0}",
        ),
        (RunField::TurnId, IdError::Empty, ""),
        (
            RunField::InvocationId,
            IdError::TooLong(MAX_ID_BYTES + 1),
            long.as_str(),
        ),
    ] {
        let mut bad_source = source("run");
        match field {
            RunField::SessionId => bad_source.session_id = bad.into(),
            RunField::TurnId => bad_source.turn_id = bad.into(),
            _ => bad_source.invocation_id = bad.into(),
        }
        let appended = within(
            "R5",
            log.append_async(ROOT, &bad_source, Epoch::new(1), &pause("run", "h")),
        )
        .await;
        assert!(
            matches!(&appended, Err(LogError::InvalidRun { field: f, error: e }) if *f == field && *e == error),
            "a typed error, InvalidRun: append from a source with a bad {field}: {appended:?}"
        );
    }
    assert!(
        matches!(
            append(&log, &source("run"), Epoch::new(1), &pause("run", "h")).await,
            Err(LogError::EpochNotIssued { current, .. }) if current == Epoch::NONE
        ),
        "an append to a Run never claimed"
    );
    let epoch = owner(&log, "run").await;
    assert_eq!(epoch, Epoch::new(1), "the bad claims issued no epoch");
    for never in [
        Epoch::NONE,
        Epoch::new(2),
        Epoch::LAST,
        Epoch::new(Epoch::LAST.get() + 1),
        Epoch::new(u64::MAX),
    ] {
        assert!(
            matches!(
                append(&log, &source("run"), never, &pause("run", "h")).await,
                Err(LogError::EpochNotIssued { epoch: e, current }) if e == never && current == epoch
            ),
            "epoch {never} was never issued"
        );
    }
    let mut other_root = pause("run", "h");
    Arc::make_mut(&mut other_root.intent).root_run_id = "other-root".into();
    assert!(matches!(
        append(&log, &source("run"), epoch, &other_root).await,
        Err(LogError::InvalidPause(IntentError::OtherRootRun { .. }))
    ));
    let mut itself = pause("run", "h");
    Arc::make_mut(&mut itself.intent).successor_run_id = "run".into();
    assert!(matches!(
        append(&log, &source("run"), epoch, &itself).await,
        Err(LogError::InvalidPause(IntentError::SuccessorIsSource(
            Field::SuccessorRunId
        )))
    ));
    let mut control = pause("run", "h");
    Arc::make_mut(&mut control.intent).handoff_id = "h\u{0}".into();
    assert!(matches!(
        append(&log, &source("run"), epoch, &control).await,
        Err(LogError::InvalidPause(IntentError::ControlCharacter(
            Field::HandoffId
        )))
    ));
    let read = facts(&log, "run").await;
    assert!(read.pauses.is_empty(), "bad input wrote nothing");
    assert_eq!(read.epoch, epoch);
    assert_eq!(owner(&log, "run").await, Epoch::new(2), "no epoch skipped");
}
