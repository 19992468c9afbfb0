//! The contract's tests, generic over a [`Store`]; named with the rule ids
//! (§6) they check. Every operation is awaited within the shared bound, so
//! each test also checks R5 for what it runs (every operation resolves).

use std::pin::pin;
use std::sync::Arc;

use baton::durable::{
    Appended, AsyncHandoffLog, Claim, Decision, Epoch, Finished, LogError, Receipt, Retirement,
    RunFacts, RunField, SealError, append_then_seal_async, reconcile,
};
use baton::facts::{Field, IdError, MAX_ID_BYTES};
use baton::{CancelSignal, HandoffIntent, HandoffPause, IntentError, Invocation, WaitError};
use tokio::sync::Barrier;

use super::{HoldsReads, Payload, SEALED, Store, commit_at_boundary, execution, gate, intent};
use crate::within::{poll_once, within};

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

fn row(run: &str, pause: &Pause) -> Vec<Appended<Payload>> {
    vec![Appended {
        source: source(run),
        pause: pause.clone(),
    }]
}

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

/// R3: what a claim decides is what the log holds: the facts read back
/// exactly the rows appended (the whole pause, payload included), with the
/// Run's epoch; each Run — each hop of a chain, the same run id under
/// another root Run, a Run never claimed — has facts of its own.
pub async fn r3_the_facts_read_back_exactly_what_was_appended_and_each_run_is_its_own<S: Store>(
    store: Arc<S>,
) {
    let log = store.open().await;
    let first = owner(&log, "a").await;
    let hop = pause("a", "h1");
    let _ = append(&log, &source("a"), first, &hop).await.unwrap();
    let next = owner(&log, "a-next").await;
    assert_eq!(next, Epoch::new(1), "each Run has its own epochs");
    let mut onward = pause("a-next", "h2");
    Arc::make_mut(&mut onward.intent).host_epoch = "another-host".into();
    let mut onward_source = source("a-next");
    onward_source.invocation_id = "a-next-invocation-1".into();
    let _ = append(&log, &onward_source, next, &onward).await.unwrap();

    let read = facts(&log, "a").await;
    assert_eq!(
        (read.root_run_id.as_str(), read.run_id.as_str(), read.epoch),
        (ROOT, "a", first)
    );
    assert_eq!(
        read.pauses,
        row("a", &hop),
        "R3: the row whole, payload included"
    );
    let read = facts(&log, "a-next").await;
    assert_eq!(
        read.pauses,
        vec![Appended {
            source: onward_source,
            pause: onward.clone()
        }]
    );
    assert_eq!(
        claim(&log, "a-next").await.unwrap(),
        Claim::HandedOff(onward),
        "R3: the claim answers what the facts hold"
    );
    let never = facts(&log, "never-claimed").await;
    assert_eq!((never.epoch, never.pauses.len()), (Epoch::NONE, 0));
    let elsewhere = within("R5", log.facts_async("other-root", "a"))
        .await
        .unwrap();
    assert_eq!((elsewhere.epoch, elsewhere.pauses.len()), (Epoch::NONE, 0));
    assert_eq!(
        within("R5", log.claim_async("other-root", "a"))
            .await
            .unwrap(),
        Claim::Owner(Epoch::new(1)),
        "the same run id under another root Run is another Run"
    );
}

/// R4: an acknowledged append is durable: a connection opened after the
/// appending one is gone reads it back, and its claim answers it.
pub async fn r4_an_acknowledged_append_is_durable_for_every_connection<S: Store>(store: Arc<S>) {
    let handoff = pause("run", "h");
    let epoch = {
        let log = store.open().await;
        let epoch = owner(&log, "run").await;
        assert_eq!(
            append(&log, &source("run"), epoch, &handoff).await.unwrap(),
            Receipt::Written
        );
        epoch
    };
    let later = store.open().await;
    let read = facts(&later, "run").await;
    assert_eq!((read.epoch, read.pauses), (epoch, row("run", &handoff)));
    assert_eq!(
        claim(&later, "run").await.unwrap(),
        Claim::HandedOff(handoff)
    );
}

/// R6: claims racing from several connections (started together at a
/// barrier) each issue an epoch of their own, none twice and none skipped
/// — also a Run's very first claims, which find no row to lock.
pub async fn r6_concurrent_claims_from_several_connections_issue_each_epoch_once<S: Store>(
    store: Arc<S>,
) {
    const CONNECTIONS: usize = 4;
    const CLAIMS: usize = 8;
    const FRESH_RUNS: usize = 6;
    let barrier = Arc::new(Barrier::new(CONNECTIONS));
    let mut tasks = Vec::new();
    for _ in 0..CONNECTIONS {
        let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
        tasks.push(tokio::spawn(async move {
            let log = store.open().await;
            let mut issued = Vec::new();
            within("the other connections reach the barrier", barrier.wait()).await;
            for _ in 0..CLAIMS {
                issued.push(("run".to_owned(), owner(&log, "run").await));
            }
            for fresh in 0..FRESH_RUNS {
                within("the other connections reach the barrier", barrier.wait()).await;
                let run = format!("fresh-{fresh}");
                issued.push((run.clone(), owner(&log, &run).await));
            }
            issued
        }));
    }
    let mut issued: Vec<(String, u64)> = Vec::new();
    for task in tasks {
        issued.extend(
            task.await
                .expect("a claiming task")
                .into_iter()
                .map(|(run, epoch)| (run, epoch.get())),
        );
    }
    issued.sort();
    let mut expected: Vec<(String, u64)> = (1..=(CONNECTIONS * CLAIMS) as u64)
        .map(|epoch| ("run".to_owned(), epoch))
        .collect();
    for fresh in 0..FRESH_RUNS {
        expected.extend((1..=CONNECTIONS as u64).map(|epoch| (format!("fresh-{fresh}"), epoch)));
    }
    expected.sort();
    assert_eq!(issued, expected, "R6: every epoch issued exactly once");
    let log = store.open().await;
    assert_eq!(
        facts(&log, "run").await.epoch,
        Epoch::new((CONNECTIONS * CLAIMS) as u64)
    );
}

/// R1 under contention: per Run, two appends of different pauses under the
/// worker's epoch and the owner's takeover claim race from three
/// connections. Either one append wins (the other is `AlreadyHandedOff`,
/// and the claim answers the winner's pause) or the claim wins (both
/// appends are fenced, and nothing is written) — never both, never a
/// second pause; and the facts say the same.
pub async fn r1_racing_appends_and_a_takeover_from_several_connections_decide_one_way<S: Store>(
    store: Arc<S>,
) {
    const ROUNDS: usize = 12;
    let worker = Arc::new(store.open().await);
    let other = Arc::new(store.open().await);
    let owner_log = Arc::new(store.open().await);
    let (mut appends_won, mut claims_won) = (0, 0);
    for round in 0..ROUNDS {
        let run = format!("race-{round}");
        let epoch = owner(worker.as_ref(), &run).await;
        let barrier = Arc::new(Barrier::new(3));
        let append_task = |log: Arc<S::Log>, handoff_id: &'static str| {
            let (run, barrier) = (run.clone(), Arc::clone(&barrier));
            tokio::spawn(async move {
                let handoff = pause(&run, handoff_id);
                within("the other connections reach the barrier", barrier.wait()).await;
                let answer = append(log.as_ref(), &source(&run), epoch, &handoff).await;
                (handoff, answer)
            })
        };
        let first = append_task(Arc::clone(&worker), "w");
        let second = append_task(Arc::clone(&other), "z");
        let claimed = {
            let (log, run, barrier) = (Arc::clone(&owner_log), run.clone(), Arc::clone(&barrier));
            tokio::spawn(async move {
                within("the other connections reach the barrier", barrier.wait()).await;
                claim(log.as_ref(), &run).await
            })
        };
        let first = first.await.unwrap();
        let second = second.await.unwrap();
        let claimed = claimed.await.unwrap().expect("the takeover claim");
        let read = facts(owner_log.as_ref(), &run).await;
        let appends = [&first, &second];
        let written: Vec<&Pause> = appends
            .iter()
            .filter(|(_, answer)| matches!(answer, Ok(Receipt::Written)))
            .map(|(handoff, _)| handoff)
            .collect();
        match claimed {
            Claim::HandedOff(decided) => {
                appends_won += 1;
                assert_eq!(
                    written,
                    [&decided],
                    "R1: the claim answers the one written pause"
                );
                for (handoff, answer) in appends {
                    if *handoff != decided {
                        assert!(
                            matches!(answer, Err(LogError::AlreadyHandedOff { .. })),
                            "the loser: {answer:?}"
                        );
                    }
                }
                assert_eq!((read.epoch, read.pauses), (epoch, row(&run, &decided)));
            }
            Claim::Owner(takeover) => {
                claims_won += 1;
                assert_eq!(Some(takeover), epoch.next());
                assert!(written.is_empty(), "R1: a newer epoch and a pause, both");
                for (_, answer) in appends {
                    assert!(
                        matches!(answer, Err(LogError::Fenced { epoch: e, current }) if *e == epoch && *current == takeover),
                        "R7: {answer:?}"
                    );
                }
                assert_eq!((read.epoch, read.pauses.len()), (takeover, 0));
            }
            other @ (Claim::Finished(_) | Claim::Retired) => {
                panic!("R8: nobody finished or retired the Run, yet the claim answered {other:?}")
            }
        }
    }
    assert_eq!(appends_won + claims_won, ROUNDS);
}

/// R2, R4, R7 through the worker's last step: a worker whose epoch was
/// taken over is fenced, writes nothing and never seals (its requester's
/// `wait()` ends `Closed`); the new epoch's worker seals only once its
/// pause is durable, and `wait()` returns exactly the durable pause.
pub async fn r2_r4_r7_append_then_seal_seals_only_a_durable_pause_and_a_fenced_worker_never<
    S: Store,
>(
    store: Arc<S>,
) {
    // The gate helpers' Run is `run` within the root Run `run`.
    let (root, run) = ("run", "run");
    let zombie_log = store.open().await;
    let owner_log = store.open().await;
    let Ok(Claim::Owner(zombie)) = within("R5", zombie_log.claim_async(root, run)).await else {
        panic!("a fresh Run is open");
    };
    let cancel = CancelSignal::new();
    let zombie_gate = gate();
    let reservation = zombie_gate.requester().reserve(intent()).unwrap();
    let (paused, zombie_pending) = commit_at_boundary(&zombie_gate, &cancel, reservation).await;
    let paused = paused.expect("committed");
    let Ok(Claim::Owner(takeover)) = within("R5", owner_log.claim_async(root, run)).await else {
        panic!("the Run is still open");
    };
    let last_step = within(
        "R5",
        append_then_seal_async(&zombie_gate, &zombie_log, zombie, &paused),
    )
    .await;
    assert!(
        matches!(
            last_step,
            Err(SealError::Fenced { epoch, current }) if epoch == zombie && current == takeover
        ),
        "R7: a fenced worker's last step answers Fenced, not {last_step:?}"
    );
    assert_eq!(
        within("R7: the fenced worker's seal ends", zombie_pending.wait()).await,
        Err(WaitError::Closed),
        "R7: a fenced worker never seals"
    );
    let read = within("R5", owner_log.facts_async(root, run))
        .await
        .unwrap();
    assert!(read.pauses.is_empty(), "R7: a fenced worker never appends");

    let gate = gate();
    let reservation = gate.requester().reserve(intent()).unwrap();
    let (paused, pending) = commit_at_boundary(&gate, &cancel, reservation).await;
    let paused = paused.expect("committed");
    assert_eq!(
        within(
            "R4",
            append_then_seal_async(&gate, &owner_log, takeover, &paused)
        )
        .await
        .unwrap(),
        Receipt::Written
    );
    let sealed = within(SEALED, pending.wait()).await.expect("R4: sealed");
    let read = within("R5", zombie_log.facts_async(root, run))
        .await
        .unwrap();
    assert_eq!(
        reconcile(&read),
        Ok(Decision::HandedOff(HandoffPause::clone(&sealed))),
        "R2: a Some from wait() is the durable pause"
    );
}

/// A dropped append (its future polled once, then dropped: a caller that
/// gave up) is the case of a lost reply: it may or may not have committed,
/// and the facts decide — read on the same connection, then the identical
/// append again answers exactly what they said, and the log goes on.
pub async fn a_dropped_append_is_resolved_by_the_facts_and_an_identical_retry<S: Store>(
    store: Arc<S>,
) {
    let log = store.open().await;
    let epoch = owner(&log, "run").await;
    let handoff = pause("run", "h");
    let run_source = source("run");
    {
        let mut dropped = pin!(log.append_async(ROOT, &run_source, epoch, &handoff));
        let _ = poll_once(dropped.as_mut());
    }
    let read = facts(&log, "run").await;
    let expected = match read.pauses.len() {
        0 => Receipt::Written,
        1 => {
            assert_eq!(read.pauses, row("run", &handoff));
            Receipt::AlreadyDurable
        }
        n => panic!("{n} pauses for one Run"),
    };
    assert_eq!(
        append(&log, &source("run"), epoch, &handoff).await.unwrap(),
        expected,
        "the retry answers what the facts said"
    );
    assert_eq!(
        claim(&log, "run").await.unwrap(),
        Claim::HandedOff(handoff),
        "the log goes on after a dropped operation"
    );
}

/// R3: a read of the facts is one snapshot. The store holds a read between
/// its two reads (the epoch, then the pauses) while the Run is taken over
/// and handed off under the new epoch, both committed; the read must
/// answer facts that were true together at one moment — the Run before
/// the takeover, after it, or after the handoff — never the old epoch with
/// the new epoch's pause (a worker would see a pause its epoch could not
/// have written) or any other mix.
pub async fn r3_the_facts_are_one_snapshot_even_across_a_takeover_and_a_handoff<S: HoldsReads>(
    store: Arc<S>,
) {
    let log = store.open().await;
    let epoch = owner(&log, "run").await;
    let handoff = pause("run", "h");
    let read = within(
        "R5: a held read resolves once it is let go",
        store.read_across_a_takeover(&log, ROOT, "run", &source("run"), &handoff),
    )
    .await
    .expect("the held read answers");
    let next = epoch.next().expect("an epoch after the first");
    let true_once = [
        (epoch, Vec::new()),
        (next, Vec::new()),
        (next, row("run", &handoff)),
    ];
    assert!(
        true_once.contains(&(read.epoch, read.pauses.clone())),
        "R3: one snapshot: the read answered epoch {} with {} pause(s) (epoch {} had none, epoch {} \
         one), never true together",
        read.epoch,
        read.pauses.len(),
        epoch,
        next
    );
    let now = facts(&log, "run").await;
    assert_eq!(
        (now.epoch, now.pauses),
        (next, row("run", &handoff)),
        "the takeover and the handoff committed while the read was held"
    );
}

// --- A Run's whole life: the third fate, and retention (§6.1). ---

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

/// R8: a finish is fenced as an append is; once durable, every claim from
/// any connection answers it and issues no epoch, and the Run takes no
/// pause and no other outcome. Every refusal writes nothing.
pub async fn r8_a_finished_run_is_never_resumed_and_takes_no_other_fate<S: Store>(store: Arc<S>) {
    let log = store.open().await;
    let other = store.open().await;
    let run = source("run");
    assert!(
        matches!(
            finish(&log, &run, Epoch::new(1), &outcome(1)).await,
            Err(LogError::EpochNotIssued { .. })
        ),
        "R8: a finish under an epoch no claim issued"
    );
    let old = owner(&log, "run").await;
    let epoch = owner(&other, "run").await;
    assert!(
        matches!(finish(&log, &run, old, &outcome(1)).await, Err(LogError::Fenced { epoch: e, current }) if e == old && current == epoch),
        "R7: a zombie's finish is fenced"
    );
    let mut bad = run.clone();
    bad.invocation_id.clear();
    assert!(matches!(
        finish(&log, &bad, epoch, &outcome(1)).await,
        Err(LogError::InvalidRun {
            field: RunField::InvocationId,
            ..
        })
    ));
    assert!(
        facts(&other, "run").await.finished.is_none(),
        "a refused finish writes nothing"
    );
    assert_eq!(
        finish(&log, &run, epoch, &outcome(1)).await.unwrap(),
        Receipt::Written
    );
    assert_eq!(
        finish(&other, &run, epoch, &outcome(1)).await.unwrap(),
        Receipt::AlreadyDurable,
        "the identical finish again is idempotent"
    );
    let again = finish(&other, &run, epoch, &outcome(2)).await;
    assert!(
        matches!(again, Err(LogError::AlreadyFinished { .. })),
        "R8: a finished Run takes no other outcome: {again:?}"
    );
    assert!(
        matches!(
            append(&other, &run, epoch, &pause("run", "h")).await,
            Err(LogError::AlreadyFinished { .. })
        ),
        "R8: a finished Run is never handed off"
    );
    for connection in [&log, &other] {
        assert_eq!(
            claim(connection, "run").await.unwrap(),
            Claim::Finished(outcome(1)),
            "R8: a finished Run is never resumed"
        );
    }
    let read = facts(&other, "run").await;
    assert_eq!(read.epoch, epoch, "R8: no epoch issued once finished");
    assert!(read.pauses.is_empty());
    assert_eq!(
        read.finished,
        Some(Finished {
            source: run,
            outcome: outcome(1)
        }),
        "R3"
    );
    assert_eq!(reconcile(&read), Ok(Decision::Finished(outcome(1))));

    // A handed-off Run never finishes.
    let hop = source("hop");
    let hop_epoch = owner(&log, "hop").await;
    let handoff = pause("hop", "h");
    assert_eq!(
        append(&log, &hop, hop_epoch, &handoff).await.unwrap(),
        Receipt::Written
    );
    assert!(matches!(
        finish(&other, &hop, hop_epoch, &outcome(1)).await,
        Err(LogError::AlreadyHandedOff { .. })
    ));
    assert!(facts(&other, "hop").await.finished.is_none());
}

/// R9, R10: a root Run retires only once every Run of it is final; then,
/// from every connection, a claim of any Run under it (removed or never
/// seen) answers `Retired` and issues no epoch, a zombie's append or
/// finish under any epoch is refused, and the facts hold the tombstone
/// only. Another root Run is untouched.
pub async fn r9_r10_retirement_removes_only_final_runs_and_fences_every_zombie<S: Store>(
    store: Arc<S>,
) {
    let log = store.open().await;
    let other = store.open().await;
    let done = source("done");
    let done_epoch = owner(&log, "done").await;
    let handed = source("handed");
    let handed_epoch = owner(&log, "handed").await;
    assert_eq!(
        append(&log, &handed, handed_epoch, &pause("handed", "h"))
            .await
            .unwrap(),
        Receipt::Written
    );
    assert!(
        matches!(retire(&other, ROOT).await, Err(LogError::RunOpen { run_id, .. }) if run_id == "done"),
        "R9: a root with an open Run is not retired"
    );
    assert_eq!(
        facts(&log, "done").await.epoch,
        done_epoch,
        "a refused retirement writes nothing"
    );
    assert_eq!(
        finish(&log, &done, done_epoch, &outcome(1)).await.unwrap(),
        Receipt::Written
    );
    let elsewhere = within(
        "R5: a claim resolves",
        other.claim_async("other-root", "run"),
    )
    .await;
    assert_eq!(elsewhere.unwrap(), Claim::Owner(Epoch::new(1)));
    assert!(
        matches!(retire(&other, ROOT).await, Err(LogError::RunOpen { run_id, .. }) if run_id == "handed-next"),
        "G5: the handoff's successor is not claimed yet"
    );
    let next = source("handed-next");
    let next_epoch = owner(&log, "handed-next").await;
    assert_eq!(
        finish(&log, &next, next_epoch, &outcome(2)).await.unwrap(),
        Receipt::Written
    );
    assert_eq!(
        retire(&other, ROOT).await.unwrap(),
        Retirement::Retired { runs: 3 }
    );
    assert_eq!(
        retire(&log, ROOT).await.unwrap(),
        Retirement::AlreadyRetired
    );
    for connection in [&log, &other] {
        for run in ["done", "handed", "handed-next", "never-claimed"] {
            assert_eq!(
                claim(connection, run).await.unwrap(),
                Claim::Retired,
                "R9: {run} is never resumed"
            );
            let read = facts(connection, run).await;
            assert!(read.retired, "{run}");
            assert_eq!(
                (read.epoch, read.pauses.len(), read.finished.is_none()),
                (Epoch::NONE, 0, true),
                "R10: {run}'s rows are gone"
            );
        }
        for epoch in [
            done_epoch,
            handed_epoch,
            Epoch::new(1),
            Epoch::new(2),
            Epoch::NONE,
        ] {
            assert!(
                matches!(
                    append(connection, &done, epoch, &pause("done", "z")).await,
                    Err(LogError::Retired { .. })
                ),
                "R9: a retired Run's zombie (epoch {epoch}) never writes"
            );
            assert!(matches!(
                finish(connection, &handed, epoch, &outcome(1)).await,
                Err(LogError::Retired { .. })
            ));
        }
    }
    let kept = within("a read resolves", log.facts_async("other-root", "run"))
        .await
        .unwrap();
    assert_eq!(
        (kept.epoch, kept.retired),
        (Epoch::new(1), false),
        "another root is untouched"
    );
    assert!(matches!(
        retire(&log, "").await,
        Err(LogError::InvalidRun {
            field: RunField::RootRunId,
            ..
        })
    ));
}

/// R8 under contention: per Run, a finish and an append under the
/// worker's epoch and the owner's takeover claim race from three
/// connections. Exactly one way wins: the finish (the append is
/// `AlreadyFinished`, the claim answers `Finished`), the append (the
/// finish is `AlreadyHandedOff`, the claim answers the pause), or the
/// claim (both are fenced, nothing written).
pub async fn r8_racing_finish_append_and_takeover_decide_one_way<S: Store>(store: Arc<S>) {
    const ROUNDS: usize = 12;
    let owner_log = Arc::new(store.open().await);
    let mut ways = [0usize; 3];
    for round in 0..ROUNDS {
        let run = format!("race-{round}");
        let epoch = owner(owner_log.as_ref(), &run).await;
        let barrier = Arc::new(Barrier::new(3));
        let finisher = {
            let (store, barrier, run) = (Arc::clone(&store), Arc::clone(&barrier), run.clone());
            tokio::spawn(async move {
                let log = store.open().await;
                within("the racers reach the barrier", barrier.wait()).await;
                finish(&log, &source(&run), epoch, &outcome(1)).await
            })
        };
        let appender = {
            let (store, barrier, run) = (Arc::clone(&store), Arc::clone(&barrier), run.clone());
            tokio::spawn(async move {
                let log = store.open().await;
                within("the racers reach the barrier", barrier.wait()).await;
                append(&log, &source(&run), epoch, &pause(&run, "h")).await
            })
        };
        let claimer = {
            let (log, barrier, run) = (Arc::clone(&owner_log), Arc::clone(&barrier), run.clone());
            tokio::spawn(async move {
                within("the racers reach the barrier", barrier.wait()).await;
                claim(log.as_ref(), &run).await
            })
        };
        let finished = finisher.await.unwrap();
        let appended = appender.await.unwrap();
        let claimed = claimed_or_panic(claimer.await.unwrap());
        let read = facts(owner_log.as_ref(), &run).await;
        match (&finished, &appended, &claimed) {
            (Ok(Receipt::Written), Err(LogError::AlreadyFinished { .. }), Claim::Finished(o)) => {
                ways[0] += 1;
                assert_eq!(*o, outcome(1));
                assert_eq!(
                    (read.epoch, read.pauses.len(), read.finished.is_some()),
                    (epoch, 0, true)
                );
            }
            (Err(LogError::AlreadyHandedOff { .. }), Ok(Receipt::Written), Claim::HandedOff(p)) => {
                ways[1] += 1;
                assert_eq!(*p, pause(&run, "h"));
                assert_eq!(
                    (read.epoch, read.pauses.len(), read.finished.is_some()),
                    (epoch, 1, false)
                );
            }
            (
                Err(LogError::Fenced { .. }),
                Err(LogError::Fenced { .. }),
                Claim::Owner(takeover),
            ) => {
                ways[2] += 1;
                assert_eq!(Some(*takeover), epoch.next());
                assert_eq!(
                    (read.epoch, read.pauses.len(), read.finished.is_some()),
                    (*takeover, 0, false)
                );
            }
            other => panic!("R8: the race decided two ways (finish, append, claim): {other:?}"),
        }
    }
    assert_eq!(ways.iter().sum::<usize>(), ROUNDS);
}

fn claimed_or_panic(claimed: Result<Claim<Payload>, LogError>) -> Claim<Payload> {
    claimed.expect("the takeover claim")
}

/// R9 under contention: per round, the retirement of a root Run whose Runs
/// are all final races a claim of a new Run under it, from two
/// connections. Either the claim came first (it answers `Owner` and the
/// retirement `RunOpen`, writing nothing) or the retirement did (it answers
/// `Retired` and the claim `Retired`) — never a Run issued an epoch under a
/// tombstone.
pub async fn r9_racing_retirement_and_a_claim_of_a_new_run_decide_one_way<S: Store>(store: Arc<S>) {
    const ROUNDS: usize = 12;
    let log = Arc::new(store.open().await);
    for round in 0..ROUNDS {
        let root = format!("race-root-{round}");
        let first = source("first");
        let epoch = within("R5: a claim resolves", log.claim_async(&root, "first")).await;
        let Ok(Claim::Owner(epoch)) = epoch else {
            panic!("a fresh Run: {epoch:?}")
        };
        let finished = within(
            "R4: a finish resolves",
            log.finish_async(&root, &first, epoch, &outcome(1)),
        )
        .await;
        assert_eq!(finished.unwrap(), Receipt::Written);
        let barrier = Arc::new(Barrier::new(2));
        let retirer = {
            let (store, barrier, root) = (Arc::clone(&store), Arc::clone(&barrier), root.clone());
            tokio::spawn(async move {
                let log = store.open().await;
                within("the racers reach the barrier", barrier.wait()).await;
                retire(&log, &root).await
            })
        };
        let claimer = {
            let (store, barrier, root) = (Arc::clone(&store), Arc::clone(&barrier), root.clone());
            tokio::spawn(async move {
                let log = store.open().await;
                within("the racers reach the barrier", barrier.wait()).await;
                within("R5: a claim resolves", log.claim_async(&root, "late")).await
            })
        };
        let retired = retirer.await.unwrap();
        let claimed = claimer.await.unwrap();
        let late = within("a read resolves", log.facts_async(&root, "late"))
            .await
            .unwrap();
        match (&retired, &claimed) {
            (Err(LogError::RunOpen { run_id, .. }), Ok(Claim::Owner(e))) => {
                assert_eq!((run_id.as_str(), *e), ("late", Epoch::new(1)));
                assert_eq!((late.epoch, late.retired), (Epoch::new(1), false));
            }
            (Ok(Retirement::Retired { runs: 1 }), Ok(Claim::Retired)) => {
                assert_eq!((late.epoch, late.retired), (Epoch::NONE, true), "R10");
            }
            other => panic!("R9: a Run under a tombstone, or two ways at once: {other:?}"),
        }
    }
}
