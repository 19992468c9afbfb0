//! The log's operations inside the caller's transaction on PostgreSQL:
//! rolled back they leave nothing and the fence is as before; committed
//! they are durable with the caller's own rows; a serialization failure
//! is the caller's to retry.

use std::sync::Arc;
use std::time::Duration;

use baton::durable::tokio_postgres::IsolationLevel;
use baton::durable::tokio_postgres::error::SqlState;
use baton::durable::{AsyncHandoffLog, Claim, Epoch, LogError, Receipt, Retirement};

use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_fates::*;
use crate::postgres_only::*;
use crate::postgres_retries::{Fault, unavailable_code};

/// A fresh database with the schema in the `search_path`, a log on it, and
/// the test's own connection (for its own transactions and table).
async fn log_and_client(cluster: &Cluster) -> (Log, tokio_postgres::Client) {
    let (dbname, url) = fresh(cluster).await;
    let log = connect(&url).await.unwrap();
    let client = cluster.connect(&dbname).await;
    client
        .batch_execute("CREATE TABLE jobs (run_id text PRIMARY KEY, epoch bigint)")
        .await
        .unwrap();
    (log, client)
}

/// The caller's transaction, rolled back: a claim, an append, a finish and
/// a retirement made inside it wrote nothing, and the fence is as if they
/// had never run: the next claim issues the same epoch the rolled-back one
/// answered, the Run is still open under it, and still there.
#[test]
fn writes_in_the_callers_transaction_rolled_back_leave_nothing_and_the_next_claim_issues_the_same_epoch()
 {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (log, mut client) = log_and_client(cluster).await;
        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within("R5", log.claim_in(&tx, ROOT, "run")).await.unwrap(),
            Claim::Owner(Epoch::new(1))
        );
        tx.execute("INSERT INTO jobs VALUES ('run', 1)", &[])
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(read.epoch, Epoch::NONE, "the claim was rolled back");
        assert_eq!(
            owner(&log).await,
            Epoch::new(1),
            "the same epoch, issued now"
        );

        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within("R5", log.claim_in(&tx, ROOT, "run")).await.unwrap(),
            Claim::Owner(Epoch::new(2))
        );
        tx.rollback().await.unwrap();
        assert_eq!(owner(&log).await, Epoch::new(2), "the same takeover epoch");

        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within(
                "R5",
                log.append_in(&tx, ROOT, &common::source(), Epoch::new(2), &pause())
            )
            .await
            .unwrap(),
            Receipt::Written
        );
        tx.rollback().await.unwrap();
        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within(
                "R5",
                log.finish_in(
                    &tx,
                    ROOT,
                    &common::source(),
                    Epoch::new(2),
                    &common::execution()
                )
            )
            .await
            .unwrap(),
            Receipt::Written
        );
        drop(tx); // rolled back when dropped
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(
            (read.epoch, read.pauses.len(), read.finished),
            (Epoch::new(2), 0, None),
            "nothing written"
        );
        let jobs: i64 = client
            .query_one("SELECT count(*) FROM jobs", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(jobs, 0);
        assert_eq!(append(&log, Epoch::new(2)).await.unwrap(), Receipt::Written);
        finish_the_successor(&log).await;

        // A retirement rolled back: the Runs' rows are all still there.
        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within("R5", log.retire_in(&tx, ROOT)).await.unwrap(),
            Retirement::Retired { runs: 2 }
        );
        tx.rollback().await.unwrap();
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::HandedOff(pause()),
            "no tombstone: the Run is as it was"
        );
        assert_eq!(rows(&client).await, (2, 1, 1));
    });
}

/// The caller's transaction, committed: the claim's epoch, the pause and
/// the finish are durable together with the caller's own rows of the same
/// transaction; while it is open, the Run's row lock is held (another
/// host's claim waits for the commit, then takes the Run over, fencing the
/// epoch the transaction issued).
#[test]
fn writes_in_the_callers_transaction_committed_are_durable_with_its_own_rows() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (log, mut client) = log_and_client(cluster).await;
        let log = Arc::new(log);
        let tx = client.transaction().await.unwrap();
        let Claim::Owner(epoch) = within("R5", log.claim_in(&tx, ROOT, "run")).await.unwrap()
        else {
            panic!("a fresh Run is open");
        };
        assert_eq!(epoch, Epoch::new(1));
        tx.execute(
            "INSERT INTO jobs VALUES ('run', $1)",
            &[&i64::try_from(epoch.get()).unwrap()],
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(read.epoch, epoch);
        let job: i64 = client
            .query_one("SELECT epoch FROM jobs WHERE run_id = 'run'", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(job, 1, "the caller's row, committed with the claim");

        // A takeover inside the transaction holds the Run's row lock.
        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within("R5", log.claim_in(&tx, ROOT, "run")).await.unwrap(),
            Claim::Owner(Epoch::new(2))
        );
        let other = tokio::spawn({
            let log = Arc::clone(&log);
            async move { log.claim_async(ROOT, "run").await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !other.is_finished(),
            "another claim waits for the caller's commit"
        );
        tx.execute("UPDATE jobs SET epoch = 2", &[]).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(
            within("R5", other).await.unwrap().unwrap(),
            Claim::Owner(Epoch::new(3))
        );
        assert!(
            matches!(
                append(&log, Epoch::new(2)).await,
                Err(LogError::Fenced { .. })
            ),
            "the committed epoch is fenced like any other"
        );

        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within(
                "R5",
                log.append_in(&tx, ROOT, &common::source(), Epoch::new(3), &pause())
            )
            .await
            .unwrap(),
            Receipt::Written
        );
        tx.execute("UPDATE jobs SET epoch = 3", &[]).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::HandedOff(pause())
        );

        let finisher = source_of("done");
        let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async(ROOT, "done")).await else {
            panic!("a fresh Run is open");
        };
        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within(
                "R5",
                log.finish_in(&tx, ROOT, &finisher, epoch, &common::execution())
            )
            .await
            .unwrap(),
            Receipt::Written
        );
        tx.execute("INSERT INTO jobs VALUES ('done', 0)", &[])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(
            within("R5", log.claim_async(ROOT, "done")).await.unwrap(),
            Claim::Finished(common::execution())
        );
        let jobs: i64 = client
            .query_one("SELECT count(*) FROM jobs", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(jobs, 2);
    });
}

/// Inside the caller's transaction nothing is run again: a serialization
/// failure (planted) is answered at once as `Unavailable` with the
/// server's error (the trigger fired once), the caller's transaction is
/// aborted, and the caller runs it again, whole, which succeeds. A
/// transaction at another level than `READ COMMITTED` is refused before
/// anything is written, with the permanent `WrongTransaction` (issue 59:
/// not `Unavailable`, which says "send it again").
#[test]
fn in_the_callers_transaction_a_serialization_failure_is_the_callers_to_retry_and_only_read_committed_is_taken()
 {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        let mut client = cluster.connect(&dbname).await;
        let admin = cluster.connect(&dbname).await;
        let fault = Fault::plant(
            &admin,
            "in_tx",
            "INSERT ON baton_run",
            "serialization_failure",
            1,
        )
        .await;
        let tx = client.transaction().await.unwrap();
        let claimed = within("R5", log.claim_in(&tx, ROOT, "run")).await;
        assert_eq!(
            unavailable_code(&claimed),
            Some(&SqlState::T_R_SERIALIZATION_FAILURE),
            "{claimed:?}"
        );
        assert_eq!(fault.fired().await, 1, "never run again inside the caller's transaction");
        assert!(
            tx.execute("SELECT 1", &[]).await.is_err(),
            "the caller's transaction is aborted"
        );
        tx.rollback().await.unwrap();
        let tx = client.transaction().await.unwrap();
        assert_eq!(
            within("R5", log.claim_in(&tx, ROOT, "run")).await.unwrap(),
            Claim::Owner(Epoch::new(1)),
            "the caller's second run of its transaction"
        );
        tx.commit().await.unwrap();
        fault.remove().await;

        for level in [IsolationLevel::RepeatableRead, IsolationLevel::Serializable] {
            let tx = client
                .build_transaction()
                .isolation_level(level)
                .start()
                .await
                .unwrap();
            let claimed = within("R5", log.claim_in(&tx, ROOT, "run")).await;
            assert!(
                matches!(&claimed, Err(LogError::WrongTransaction { reason }) if reason.contains("READ COMMITTED")),
                "{level:?}: {claimed:?}"
            );
            tx.commit().await.unwrap();
        }
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(read.epoch, Epoch::new(1), "nothing written at those levels");
    });
}
