//! What a commit that fails means to a `PostgresLog` (issue 44): the reply
//! to the log's own commit lost (a proxy), for every kind of write, and the
//! caller's own `COMMIT` refused (a deferred constraint) under the
//! caller's-transaction forms.

use std::time::Duration;

use baton::durable::{AsyncHandoffLog, Claim, Epoch, LogError, Receipt, Retirement};

use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_drops::patient_log;
use crate::postgres_only::{pause, runtime};

const ROOT: &str = "run";

fn unknown<T>(answer: &Result<T, LogError>) -> bool {
    matches!(answer, Err(LogError::OutcomeUnknown(_)))
}

/// Every kind of write of the log whose commit's reply is lost after the
/// server committed — a Run's first claim and an append (each one
/// statement that is its own transaction), a finish, a retirement and a
/// batch of retention by age (each a transaction's `COMMIT`) — answers
/// `OutcomeUnknown` (R4: the write may have landed), never `Unavailable`
/// (which would say nothing was written) nor a success; the reply is lost
/// once; and the facts, read again on a new connection, show that it did
/// land.
#[test]
fn every_write_whose_commit_reply_is_lost_is_an_unknown_outcome_the_facts_resolve() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (proxy, log) = crate::postgres_only::log_through_a_proxy(cluster).await;
        let lost = |what: &'static str| {
            let proxy = &proxy;
            let before = proxy.lost_replies();
            proxy.lose_next_commit_reply();
            move |answer: String, unknown: bool| {
                assert!(
                    unknown,
                    "R4: {what} whose commit reply was lost is an unknown outcome: {answer}"
                );
                assert_eq!(
                    proxy.lost_replies(),
                    before + 1,
                    "{what}: its reply was lost"
                );
            }
        };

        let check = lost("a first claim");
        let answer = within("R5", log.claim_async(ROOT, "run")).await;
        check(format!("{answer:?}"), unknown(&answer));
        let epoch = Epoch::new(1);
        assert_eq!(
            log.facts_async(ROOT, "run").await.unwrap().epoch,
            epoch,
            "it landed"
        );

        let check = lost("an append");
        let answer = within(
            "R5",
            log.append_async(ROOT, &common::source(), epoch, &pause()),
        )
        .await;
        check(format!("{answer:?}"), unknown(&answer));
        assert_eq!(
            log.facts_async(ROOT, "run").await.unwrap().pauses.len(),
            1,
            "it landed"
        );

        let successor = pause().intent.successor_run_id.clone();
        let Ok(Claim::Owner(next)) = log.claim_async(ROOT, &successor).await else {
            panic!("G1: the successor's claim")
        };
        let mut finisher = common::source();
        finisher.run_id = successor.clone();
        let check = lost("a finish");
        let answer = within(
            "R5",
            log.finish_async(ROOT, &finisher, next, &common::execution()),
        )
        .await;
        check(format!("{answer:?}"), unknown(&answer));
        let facts = log.facts_async(ROOT, &successor).await.unwrap();
        assert!(facts.finished.is_some(), "it landed");

        let check = lost("a retirement");
        let answer = within("R5", log.retire_async(ROOT)).await;
        check(format!("{answer:?}"), unknown(&answer));
        assert!(
            log.facts_async(ROOT, "run").await.unwrap().retired,
            "it landed"
        );

        let mut other = common::source();
        other.run_id = "other".into();
        let Ok(Claim::Owner(first)) = log.claim_async("other", "other").await else {
            panic!("another root's Run")
        };
        let finished = log
            .finish_async("other", &other, first, &common::execution())
            .await;
        assert_eq!(finished.unwrap(), Receipt::Written);
        let check = lost("a batch of retention by age");
        let later = std::time::SystemTime::now() + Duration::from_secs(60);
        let answer = within("R5", log.retire_ended_async(later, None, 10)).await;
        check(format!("{answer:?}"), unknown(&answer));
        assert!(
            log.facts_async("other", "other").await.unwrap().retired,
            "it landed"
        );
    });
}

/// The caller's-transaction forms leave the commit to the caller: when the
/// caller's own `COMMIT` fails (here a deferred unique constraint of the
/// caller's table, checked at the commit, by construction), every write of
/// the log in it is gone with the caller's rows — a claim, an append, a
/// finish, a retirement — and the log answers as if it had never run (the
/// claim's epoch number again, as after a rollback: SPEC G4's exception).
#[test]
fn a_failed_commit_of_the_callers_transaction_leaves_the_log_as_it_was() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let log = patient_log(&cluster.url(&dbname)).await;
        let mut client = cluster.connect(&dbname).await;
        client
            .batch_execute("CREATE TABLE strict (x int UNIQUE DEFERRABLE INITIALLY DEFERRED)")
            .await
            .unwrap();
        // The caller's own rows break its constraint; only the commit says so.
        let fails = "INSERT INTO strict VALUES (1), (1)";

        let tx = client.transaction().await.unwrap();
        let claimed = within("R5", log.claim_in(&tx, ROOT, "run")).await;
        assert_eq!(claimed.unwrap(), Claim::Owner(Epoch::new(1)));
        tx.batch_execute(fails).await.unwrap();
        assert!(tx.commit().await.is_err(), "the caller's commit fails");
        assert_eq!(
            log.facts_async(ROOT, "run").await.unwrap().epoch,
            Epoch::NONE
        );
        let Ok(Claim::Owner(epoch)) = log.claim_async(ROOT, "run").await else {
            panic!("the Run is open")
        };
        assert_eq!(
            epoch,
            Epoch::new(1),
            "G4's exception: the same number again"
        );

        let tx = client.transaction().await.unwrap();
        let appended = within(
            "R5",
            log.append_in(&tx, ROOT, &common::source(), epoch, &pause()),
        )
        .await;
        assert_eq!(appended.unwrap(), Receipt::Written);
        tx.batch_execute(fails).await.unwrap();
        assert!(tx.commit().await.is_err());
        let tx = client.transaction().await.unwrap();
        let finished = within(
            "R5",
            log.finish_in(&tx, ROOT, &common::source(), epoch, &common::execution()),
        )
        .await;
        assert_eq!(finished.unwrap(), Receipt::Written);
        tx.batch_execute(fails).await.unwrap();
        assert!(tx.commit().await.is_err());
        let facts = log.facts_async(ROOT, "run").await.unwrap();
        assert_eq!(
            (facts.epoch, facts.pauses.len(), facts.finished),
            (epoch, 0, None),
            "the append and the finish are gone with the failed commit"
        );

        let finished = log
            .finish_async(ROOT, &common::source(), epoch, &common::execution())
            .await;
        assert_eq!(finished.unwrap(), Receipt::Written);
        let tx = client.transaction().await.unwrap();
        let retired = within("R5", log.retire_in(&tx, ROOT)).await;
        assert_eq!(retired.unwrap(), Retirement::Retired { runs: 1 });
        tx.batch_execute(fails).await.unwrap();
        assert!(tx.commit().await.is_err());
        let claimed = log.claim_async(ROOT, "run").await.unwrap();
        assert!(
            matches!(claimed, Claim::Finished(_)),
            "no tombstone: the Run is as it was ({claimed:?})"
        );
    });
}
