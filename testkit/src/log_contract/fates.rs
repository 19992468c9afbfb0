//! The contract's final fates: a finished Run is never resumed,
//! retirement removes only final Runs and fences every zombie, and races
//! of a finish or a retirement with the other writes decide one way (R8,
//! R9, R10).

use std::sync::Arc;

use baton::durable::{
    AsyncHandoffLog, Claim, Decision, Epoch, Finished, LogError, Receipt, Retirement, RunField,
    reconcile,
};
use tokio::sync::Barrier;

use super::suite::{ROOT, append, claim, facts, finish, outcome, owner, pause, retire, source};
use super::{Payload, Store};
use crate::within::within;

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
