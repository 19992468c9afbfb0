//! A finish's one-statement form (the update of the Run's row only on the
//! facts for which the rule writes: its epoch, no finish, not `paused`)
//! against the writers it races, decided by construction: another session
//! holds the Run's row lock, as an append or a claim does, and writes what
//! that writer would (a pause, by the plain insert an older baton sends,
//! which the schema's trigger flags; a new epoch) before it commits — or
//! the log's own append waits for it ahead of the finish — while the
//! log's finish is seen waiting for the lock (`pg_stat_activity`). The
//! finish must then see what the holder committed (R8: one final fate;
//! R6/R7: a fenced epoch writes nothing) — a finish that read the pause
//! table with a snapshot taken before its wait would write a finish beside
//! the pause. And the common case costs one statement and no retry.

use baton::durable::{AsyncHandoffLog, Claim, Epoch, LogError, PostgresLog, Receipt};

use crate::Payload;
use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_only::{connect, log_through_a_proxy, pause, runtime};
use crate::postgres_store::{
    insert_pause_row, until_a_backend_waits_for_a_lock, until_backends_wait_for_locks,
};

type Log = PostgresLog<Payload>;

const ROOT: &str = "run";

/// A fresh database, a log on it, the Run `(ROOT, "run")` claimed (its
/// epoch), and the test's own connection.
async fn claimed(cluster: &Cluster) -> (Log, Epoch, tokio_postgres::Client) {
    let dbname = cluster.database().await;
    let log = connect(&cluster.url(&dbname)).await.unwrap();
    let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async(ROOT, "run")).await else {
        panic!("a fresh Run is open");
    };
    (log, epoch, cluster.connect(&dbname).await)
}

/// Holds the Run's row lock in `admin`'s transaction, runs `write` in it
/// (what the lock's holder commits), starts the log's finish under `epoch`,
/// lets it reach the lock, commits: the finish's answer.
async fn finish_behind(
    log: &Log,
    admin: &tokio_postgres::Client,
    epoch: Epoch,
    write: impl std::future::Future<Output = ()>,
) -> Result<Receipt, LogError> {
    admin
        .batch_execute(
            "BEGIN; SELECT 1 FROM baton_run WHERE root_run_id = 'run' AND run_id = 'run' FOR UPDATE",
        )
        .await
        .unwrap();
    write.await;
    let outcome = common::execution();
    let source = common::source();
    let finish = log.finish_async(ROOT, &source, epoch, &outcome);
    let mut finish = std::pin::pin!(finish);
    let waited = async {
        until_a_backend_waits_for_a_lock(admin).await;
        admin.batch_execute("COMMIT").await.unwrap();
    };
    let (answer, ()) = tokio::join!(within("R5", &mut finish), waited);
    answer
}

#[test]
fn r8_a_finish_that_waited_for_an_appends_lock_sees_its_pause_and_writes_nothing() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (log, epoch, admin) = claimed(cluster).await;
        let at = i64::try_from(epoch.get()).unwrap();
        let (source, pause) = (common::source(), pause());
        let append = insert_pause_row(&admin, "baton_handoff_pause", ROOT, &source, &pause, at);
        let answer = finish_behind(&log, &admin, epoch, append).await;
        assert!(
            matches!(answer, Err(LogError::AlreadyHandedOff { .. })),
            "R8: the pause committed while the finish waited is its final fate: {answer:?}"
        );
        let facts = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!((facts.pauses.len(), facts.finished), (1, None), "R8");
        assert!(matches!(
            within("R5", log.claim_async(ROOT, "run")).await,
            Ok(Claim::HandedOff(_))
        ));
    });
}

/// The log's own append (its one statement, which flags the Run's row in
/// place of locking it, so no trigger runs) and then the log's finish wait
/// in this order for the Run's row lock another session holds; once it
/// commits, the append goes first, and the finish that waited behind it
/// must see its flag (R8): the pause is the Run's one fate.
#[test]
fn r8_a_finish_that_waited_behind_the_logs_own_append_sees_its_flag_and_writes_nothing() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let log = connect(&cluster.url(&dbname)).await.unwrap();
        let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async(ROOT, "run")).await else {
            panic!("a fresh Run is open");
        };
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute(
                "BEGIN; SELECT 1 FROM baton_run WHERE root_run_id = 'run' AND run_id = 'run' FOR UPDATE",
            )
            .await
            .unwrap();
        let (source, pause, outcome) = (common::source(), pause(), common::execution());
        let mut append = std::pin::pin!(within("R5", log.append_async(ROOT, &source, epoch, &pause)));
        let mut finish = std::pin::pin!(within("R5", log.finish_async(ROOT, &source, epoch, &outcome)));
        let in_order = async {
            // Each is sent at its first poll: the append, then the finish.
            tokio::select! {
                biased;
                _ = &mut append => panic!("the append answered while the lock was held"),
                () = until_a_backend_waits_for_a_lock(&admin) => {}
            }
            tokio::select! {
                biased;
                _ = &mut finish => panic!("the finish answered while the lock was held"),
                () = until_backends_wait_for_locks(&admin, 2) => {}
            }
            admin.batch_execute("COMMIT").await.unwrap();
        };
        in_order.await;
        let (appended, finished) = tokio::join!(append, finish);
        assert_eq!(appended.unwrap(), Receipt::Written, "the append went first");
        assert!(
            matches!(finished, Err(LogError::AlreadyHandedOff { .. })),
            "R8: the pause committed while the finish waited is its final fate: {finished:?}"
        );
        let facts = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!((facts.pauses.len(), facts.finished), (1, None), "R8");
    });
}

#[test]
fn r7_a_finish_that_waited_for_a_takeovers_lock_is_fenced_and_writes_nothing() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (log, epoch, admin) = claimed(cluster).await;
        let takeover = async {
            admin
                .batch_execute(
                    "UPDATE baton_run SET epoch = epoch + 1 \
                     WHERE root_run_id = 'run' AND run_id = 'run'",
                )
                .await
                .unwrap();
        };
        let answer = finish_behind(&log, &admin, epoch, takeover).await;
        assert!(
            matches!(answer, Err(LogError::Fenced { epoch: e, .. }) if e == epoch),
            "R7: the epoch the takeover committed while the finish waited fences it: {answer:?}"
        );
        let facts = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(facts.finished, None, "R7: a fenced finish writes nothing");
    });
}

/// The common case: a finish at the current epoch of an open Run is one
/// statement, its own transaction (no `BEGIN`), answered `Written`; the
/// identical finish again takes the transaction's path (the one
/// statement wrote nothing) and is `AlreadyDurable`.
#[test]
fn a_finish_at_the_current_epoch_is_one_statement() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (proxy, log) = log_through_a_proxy(cluster).await;
        let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async(ROOT, "run")).await else {
            panic!("a fresh Run is open");
        };
        let (outcome, source) = (common::execution(), common::source());
        let (begun, own) = (proxy.transactions(), proxy.own_commits());
        let finish = within("R5", log.finish_async(ROOT, &source, epoch, &outcome)).await;
        assert_eq!(finish.unwrap(), Receipt::Written);
        assert_eq!(
            (proxy.transactions() - begun, proxy.own_commits() - own),
            (0, 1),
            "a finish at the current epoch: one statement, its own transaction"
        );
        let again = within("R5", log.finish_async(ROOT, &source, epoch, &outcome)).await;
        assert_eq!(again.unwrap(), Receipt::AlreadyDurable);
        assert_eq!(
            (proxy.transactions() - begun, proxy.own_commits() - own),
            (1, 2),
            "the identical finish again: the one statement's try, then the transaction"
        );
    });
}
