//! The contract's races between connections: claims that issue each
//! epoch once, appends racing a takeover, and a worker's seal that follows
//! only a durable pause (R1, R2, R4, R6, R7).

use std::sync::Arc;

use baton::durable::{
    AsyncHandoffLog, Claim, Decision, Epoch, LogError, Receipt, SealError, append_then_seal_async,
    reconcile,
};
use baton::{CancelSignal, HandoffPause, WaitError};
use tokio::sync::Barrier;

use super::suite::{Pause, append, claim, facts, owner, pause, row, source};
use super::{SEALED, Store, commit_at_boundary, gate, intent};
use crate::within::within;

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
