//! Group commit under faults (see `postgres_group.rs`, whose batches
//! these tests make the same way): an operation dropped while it waits or
//! once its batch was sent, a batch's commit reply lost, a Run's row lock
//! held by another session inside a batch, and a slot held long.

use std::sync::Arc;
use std::time::Duration;

use baton::durable::{AsyncHandoffLog, Claim, Epoch, PostgresOptions, Receipt};

use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_group::{
    current_thread, facts, hold_the_slot, let_the_holder_go, one_slot_log, one_slot_log_via,
    owners_promptly, roots, spawn_claims, spawn_write, writers,
};
use crate::postgres_only::{fresh, open, through_a_proxy};

/// GC3: an operation dropped while its write waits for a batch leaves the
/// queue: nothing of it is ever written, and the rest of the batch is.
#[test]
fn gc3_an_operation_dropped_while_it_waits_is_never_sent() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = one_slot_log(&url).await;
        let admin = cluster.connect(&dbname).await;
        let holder = hold_the_slot(&log, &admin, "hold").await;
        let spawn = |run: &'static str| {
            let log = Arc::clone(&log);
            tokio::spawn(async move { log.claim_async(run, run).await })
        };
        let (dropped, kept) = (spawn("dropped"), spawn("kept"));
        tokio::task::yield_now().await;
        dropped.abort();
        assert!(dropped.await.unwrap_err().is_cancelled());
        let_the_holder_go(&admin, holder).await;
        assert!(matches!(
            within("the kept claim", kept).await.unwrap(),
            Ok(Claim::Owner(_))
        ));
        assert_eq!(
            facts(&log, "dropped").await.epoch,
            Epoch::NONE,
            "the dropped claim was never sent"
        );
    });
}

/// GC4: an operation dropped once its batch was sent ends as sent: the
/// log's next operation waits until the batch has ended and reads its
/// outcome. The batch is kept on the server by a trigger that sleeps 1.5 s
/// in the dropped finish's update (a lock would not keep it: a batch waits
/// 20 ms at most for one), seen sleeping in `pg_stat_activity` before the
/// drop.
#[test]
fn gc4_an_operation_dropped_in_a_sent_batch_ends_and_the_next_operation_reads_it() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = one_slot_log(&url).await;
        let admin = cluster.connect(&dbname).await;
        let Ok(Claim::Owner(epoch)) = log.claim_async("late", "late").await else {
            panic!("a claim")
        };
        admin
            .batch_execute(
                "CREATE FUNCTION slow_late() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$; \
                 CREATE TRIGGER slow_late BEFORE UPDATE ON baton_run FOR EACH ROW \
                 WHEN (NEW.run_id = 'late') EXECUTE FUNCTION slow_late()",
            )
            .await
            .expect("the slow trigger");
        let holder = hold_the_slot(&log, &admin, "hold").await;
        let finishing = spawn_write(&log, "late", epoch, false);
        let claiming = tokio::spawn({
            let log = Arc::clone(&log);
            async move { log.claim_async("other", "other").await }
        });
        tokio::task::yield_now().await;
        let_the_holder_go(&admin, holder).await;
        // The batch (the late finish, the other claim) is sent, and sleeps.
        within("the batch reaches the trigger's sleep", async {
            loop {
                let sleeping: i64 = admin
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity \
                         WHERE datname = current_database() AND wait_event = 'PgSleep'",
                        &[],
                    )
                    .await
                    .expect("pg_stat_activity")
                    .get(0);
                if sleeping > 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        finishing.abort();
        assert!(finishing.await.unwrap_err().is_cancelled());
        let mut next = tokio::spawn({
            let log = Arc::clone(&log);
            async move { log.facts_async("late", "late").await }
        });
        // It cannot end while the batch sleeps (a connection is free: see
        // `one_slot_log`); if it did, it would read the Run unfinished.
        let early = tokio::time::timeout(Duration::from_millis(300), &mut next).await;
        assert!(
            early.is_err(),
            "the next operation ran before the dropped one's batch ended: {early:?}"
        );
        let read = within("the next operation", next).await.unwrap().unwrap();
        assert_eq!(
            read.finished.map(|finished| finished.outcome),
            Some(common::execution()),
            "the next operation reads the dropped finish, ended"
        );
        assert!(matches!(
            within("the other claim", claiming).await.unwrap(),
            Ok(Claim::Owner(_))
        ));
    });
}

/// GC5 (R4 across a batch): the reply to a batch's `COMMIT` lost (a
/// proxy), every operation of the batch answers `OutcomeUnknown` — never
/// a success, nor `Unavailable` (which would say nothing was written) —
/// and the facts, read again on a new connection, show each landed.
#[test]
fn gc5_a_batch_whose_commit_reply_is_lost_is_an_unknown_outcome_for_each() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        drop(open(&url, PostgresOptions::new().migrate(true)).await); // the schema
        let (proxy, via) = through_a_proxy(cluster, &url);
        let log = one_slot_log_via(&via).await;
        let admin = cluster.connect(&dbname).await;
        let runs = roots(4);
        let holder = hold_the_slot(&log, &admin, "hold").await;
        let claims = spawn_claims(&log, &runs);
        tokio::task::yield_now().await;
        // The holder's flight, its COMMIT with it, went through already:
        // the next commit forwarded is the batch's.
        proxy.lose_next_commit_reply();
        let_the_holder_go(&admin, holder).await;
        for claim in claims {
            let answer = within("a batched claim", claim).await.unwrap();
            assert!(
                matches!(answer, Err(baton::durable::LogError::OutcomeUnknown(_))),
                "R4: a claim of a batch whose commit reply was lost: {answer:?}"
            );
        }
        assert_eq!(proxy.lost_replies(), 1, "the batch's reply was lost");
        let direct = open(&url, PostgresOptions::new()).await.expect("connect");
        for run in &runs {
            let read = direct.facts_async(run, run).await.expect("facts");
            assert_eq!(read.epoch, Epoch::new(1), "{run}: it landed");
        }
        assert_eq!(writers(&admin, &runs).await, 1, "in one transaction");
    });
}

/// GC6 (issue 34's promise kept under group commit): a batch whose write
/// of one Run waits for that Run's row lock, held by another session for
/// as long as the test likes, rolls back after `BATCH_LOCK_WAIT` (20 ms),
/// and the other operations of it run alone: they are answered while the
/// lock is still held, far within the log's timeout (30 s); the stuck
/// Run's finish waits alone, and lands once the lock is let go.
#[test]
fn gc6_one_runs_held_lock_does_not_hold_up_the_rest_of_its_batch() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = one_slot_log(&url).await;
        let admin = cluster.connect(&dbname).await;
        let blocker = cluster.connect(&dbname).await;
        let Ok(Claim::Owner(epoch)) = log.claim_async("stuck", "stuck").await else {
            panic!("a claim")
        };
        blocker
            .batch_execute(
                "BEGIN; SELECT epoch FROM baton_run \
                 WHERE root_run_id = 'stuck' AND run_id = 'stuck' FOR UPDATE",
            )
            .await
            .expect("another session holds the stuck Run's row lock");
        let holder = hold_the_slot(&log, &admin, "hold").await;
        let stuck = spawn_write(&log, "stuck", epoch, false);
        let runs = roots(4);
        let claims = spawn_claims(&log, &runs);
        tokio::task::yield_now().await;
        let_the_holder_go(&admin, holder).await;
        owners_promptly(claims, "the stuck Run").await;
        assert!(
            !stuck.is_finished(),
            "the stuck Run's finish waits for its lock"
        );
        assert_eq!(
            writers(&admin, &runs).await,
            4,
            "after the rollback each ran alone"
        );
        blocker.batch_execute("ROLLBACK").await.expect("let go");
        assert_eq!(
            within("the stuck Run's finish", stuck)
                .await
                .unwrap()
                .unwrap(),
            Receipt::Written
        );
    });
}

/// GC8 (issue 34's promise kept under group commit): the log's one slot
/// held by a finish that waits for its Run's row lock, which another
/// session holds for as long as the test likes, holds up no other Run's
/// write for long: a write that has waited 20 ms (`SLOT_WAIT`) for the
/// slot goes without one, and the claims of four other Runs answer while
/// the lock is still held, far within the log's timeout (30 s).
#[test]
fn gc8_a_slot_held_long_holds_up_no_other_runs_write() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = one_slot_log(&url).await;
        let admin = cluster.connect(&dbname).await;
        let holder = hold_the_slot(&log, &admin, "hold").await;
        let runs = roots(4);
        owners_promptly(spawn_claims(&log, &runs), "the held slot").await;
        assert!(!holder.is_finished(), "the holder still waits for its lock");
        assert_eq!(
            writers(&admin, &runs).await,
            1,
            "sent together, without a slot"
        );
        let_the_holder_go(&admin, holder).await;
    });
}
