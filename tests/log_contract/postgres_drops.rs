//! A dropped or timed-out `PostgresLog` operation (issue 44), at each
//! point where a caller can drop it: waiting for a connection, between its
//! flights, and after its commit was sent. Each point is reached by
//! construction: another session holds the lock the operation waits for,
//! seen waiting in `pg_stat_activity` before the drop.

use std::time::{Duration, Instant};

use baton::durable::tokio_postgres::Client;
use baton::durable::{AsyncHandoffLog, Claim, Epoch, LogError, PostgresLog, PostgresOptions};

use crate::Payload;
use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_only::{open, pause, runtime};
use crate::postgres_sessions::one_connection_log;
use crate::postgres_store::{insert_pause_row, until_a_backend_waits_for_a_lock};

type Log = PostgresLog<Payload>;

const ROOT: &str = "run";

/// How many backends of the database are inside a transaction, idle.
async fn idle_in_transaction(admin: &Client) -> i64 {
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
            &[],
        )
        .await
        .expect("pg_stat_activity")
        .get(0)
}

/// A log with a long timeout (30 s), so that a lock or a transaction a
/// dropped operation left behind would outlive every bound below by far;
/// its statements unnamed, so that each is parsed, bound and run in the
/// one flight that sends it (a prepare of its own would wait for a table
/// lock before anything ran).
pub(crate) async fn patient_log(url: &str) -> Log {
    let options = PostgresOptions::new()
        .migrate(true)
        .prepared_statements(false)
        .pool_size(2)
        .timeout(Duration::from_secs(30));
    open(url, options).await.expect("connect")
}

/// How soon the Run's row lock must be free again once nothing holds it:
/// far below the logs' timeout (30 s), where a transaction left open by a
/// dropped operation would hold it (until the server's
/// `idle_in_transaction_session_timeout`, which is that timeout).
const PROMPTLY: Duration = Duration::from_secs(5);

/// A finish dropped between its flights — its `BEGIN` and the Run's row
/// lock sent, the lock held by another session — leaves no transaction
/// open: once that session lets go, another log takes the Run's row lock
/// at once, no backend is left idle inside a transaction, and the log's
/// next operation answers as if the finish had never been sent.
#[test]
fn a_finish_dropped_between_its_flights_leaves_no_transaction_and_no_lock() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let url = cluster.url(&dbname);
        let log = std::sync::Arc::new(patient_log(&url).await);
        let Ok(Claim::Owner(epoch)) = log.claim_async(ROOT, "run").await else {
            panic!("the claim")
        };
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute(&format!(
                "BEGIN; SELECT epoch FROM baton_run \
                 WHERE root_run_id = '{ROOT}' AND run_id = 'run' FOR UPDATE"
            ))
            .await
            .expect("another session holds the Run's row lock");
        let finishing = tokio::spawn({
            let log = std::sync::Arc::clone(&log);
            async move {
                log.finish_async(ROOT, &common::source(), epoch, &common::execution())
                    .await
            }
        });
        until_a_backend_waits_for_a_lock(&admin).await;
        finishing.abort();
        assert!(finishing.await.unwrap_err().is_cancelled());
        admin.batch_execute("ROLLBACK").await.expect("let go");
        let other = patient_log(&url).await;
        let started = Instant::now();
        let taken = within("the Run's row lock is free", other.claim_async(ROOT, "run")).await;
        assert!(
            started.elapsed() < PROMPTLY,
            "the dropped finish's transaction held the Run's row lock for {:?}",
            started.elapsed()
        );
        assert_eq!(taken.unwrap(), Claim::Owner(epoch.next().unwrap()));
        assert_eq!(
            idle_in_transaction(&admin).await,
            0,
            "a transaction was left open"
        );
        let facts = log.facts_async(ROOT, "run").await.unwrap();
        assert_eq!(facts.finished, None, "the dropped finish never wrote");
        assert_eq!(facts.epoch, epoch.next().unwrap());
    });
}

/// What another session holds, and which operation of the log waits for
/// it, between the operation's flights (its `BEGIN` sent).
#[derive(Clone, Copy, Debug)]
enum Held {
    /// The Run's row lock; a takeover's claim waits for it.
    RunRowForATakeover,
    /// The root Run's row lock; a retirement waits for it.
    RootRowForARetirement,
    /// The pause table, `ACCESS EXCLUSIVE`; a read of the facts waits for
    /// it (its epoch read, its snapshot taken).
    PauseTableForARead,
}

impl Held {
    fn hold(self) -> String {
        match self {
            Held::RunRowForATakeover => format!(
                "BEGIN; SELECT epoch FROM baton_run \
                 WHERE root_run_id = '{ROOT}' AND run_id = 'run' FOR UPDATE"
            ),
            Held::RootRowForARetirement => format!(
                "BEGIN; SELECT retired FROM baton_root WHERE root_run_id = '{ROOT}' FOR UPDATE"
            ),
            Held::PauseTableForARead => {
                "BEGIN; LOCK TABLE baton_handoff_pause IN ACCESS EXCLUSIVE MODE".into()
            }
        }
    }

    /// The operation that waits, answered as text; whether its answer
    /// (when it times out) is one a timeout may answer. Two clocks run:
    /// the log's own (its operation timeout) and the server's (the same
    /// length, `SET LOCAL statement_timeout`), and either may end the wait
    /// first. A write answers `OutcomeUnknown` when the log's ends it
    /// mid-transaction, or `Unavailable` when the server cancelled the
    /// waiting statement (its transaction aborted: nothing written); a
    /// read answers `Unavailable` either way.
    async fn operation(self, log: &Log) -> (String, bool) {
        match self {
            Held::RunRowForATakeover => {
                let answer = log.claim_async(ROOT, "run").await;
                let timed_out = matches!(
                    answer,
                    Err(LogError::OutcomeUnknown(_) | LogError::Unavailable(_))
                );
                (format!("{answer:?}"), timed_out)
            }
            Held::RootRowForARetirement => {
                let answer = log.retire_async(ROOT).await;
                let timed_out = matches!(
                    answer,
                    Err(LogError::OutcomeUnknown(_) | LogError::Unavailable(_))
                );
                (format!("{answer:?}"), timed_out)
            }
            Held::PauseTableForARead => {
                let answer = log.facts_async(ROOT, "run").await;
                let timed_out = matches!(answer, Err(LogError::Unavailable(_)));
                (format!("{answer:?}"), timed_out)
            }
        }
    }
}

/// Waits until no backend of the database but `admin`'s own is inside a
/// transaction or waiting for a lock, within [`PROMPTLY`].
async fn until_no_transaction_is_left(admin: &Client, what: &str) {
    let started = Instant::now();
    loop {
        let left: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid() \
                 AND (state LIKE 'idle in transaction%' OR wait_event_type = 'Lock')",
                &[],
            )
            .await
            .expect("pg_stat_activity")
            .get(0);
        if left == 0 {
            return;
        }
        assert!(
            started.elapsed() < PROMPTLY,
            "{what}: {left} backend(s) still inside a transaction after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A takeover's claim, a retirement and a read of the facts, each held
/// between its flights by another session, then dropped — or timed out
/// (a log whose timeout is 1 s: the answers [`Held::operation`] allows,
/// `OutcomeUnknown` or `Unavailable`) — leave nothing once that session
/// lets go: no backend inside a transaction within [`PROMPTLY`] (the
/// dropping log's timeout is 30 s), another log's takeover at once, and
/// the Run as it was (epoch 1, not retired), read by the log itself.
#[test]
fn a_takeover_a_retirement_and_a_read_dropped_or_timed_out_between_flights_leave_nothing() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        for held in [
            Held::RunRowForATakeover,
            Held::RootRowForARetirement,
            Held::PauseTableForARead,
        ] {
            for timed_out in [false, true] {
                let case = format!(
                    "{held:?}, {}",
                    if timed_out { "timed out" } else { "dropped" }
                );
                let dbname = cluster.database().await;
                let url = cluster.url(&dbname);
                let log = if timed_out {
                    let options = PostgresOptions::new()
                        .migrate(true)
                        .prepared_statements(false)
                        .timeout(Duration::from_secs(1));
                    open(&url, options).await.expect("connect")
                } else {
                    patient_log(&url).await
                };
                let log = std::sync::Arc::new(log);
                let Ok(Claim::Owner(epoch)) = log.claim_async(ROOT, "run").await else {
                    panic!("the claim")
                };
                let admin = cluster.connect(&dbname).await;
                admin.batch_execute(&held.hold()).await.expect("the hold");
                let waiting = tokio::spawn({
                    let log = std::sync::Arc::clone(&log);
                    async move { held.operation(&log).await }
                });
                until_a_backend_waits_for_a_lock(&admin).await;
                if timed_out {
                    let (answer, as_a_timeout) =
                        within("R5: a timeout answers", waiting).await.unwrap();
                    assert!(as_a_timeout, "{case}: {answer}");
                } else {
                    waiting.abort();
                    assert!(waiting.await.unwrap_err().is_cancelled(), "{case}");
                }
                admin.batch_execute("ROLLBACK").await.expect("let go");
                until_no_transaction_is_left(&admin, &case).await;
                let other = patient_log(&url).await;
                let started = Instant::now();
                let taken = within("the Run's row lock is free", other.claim_async(ROOT, "run"))
                    .await
                    .unwrap();
                assert!(
                    started.elapsed() < PROMPTLY,
                    "{case}: {:?}",
                    started.elapsed()
                );
                assert_eq!(taken, Claim::Owner(epoch.next().unwrap()), "{case}");
                let facts = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
                assert_eq!(
                    (facts.epoch, facts.retired),
                    (epoch.next().unwrap(), false),
                    "{case}: only the other log's takeover is written"
                );
            }
        }
    });
}

/// An append dropped after it was sent (its one statement, which commits
/// itself, waiting on the pause row another session is inserting for the
/// same Run and has not committed): the log's next operation waits until
/// the dropped one has ended, and so reads what it wrote once the other
/// session rolls back; no transaction is left open.
#[test]
fn the_next_operation_sees_what_an_append_dropped_after_it_was_sent_wrote() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let log = std::sync::Arc::new(patient_log(&cluster.url(&dbname)).await);
        let Ok(Claim::Owner(epoch)) = log.claim_async(ROOT, "run").await else {
            panic!("the claim")
        };
        let admin = cluster.connect(&dbname).await;
        admin.batch_execute("BEGIN").await.unwrap();
        let source = common::source();
        let index = i64::try_from(epoch.get()).unwrap();
        insert_pause_row(
            &admin,
            "baton_handoff_pause",
            ROOT,
            &source,
            &pause(),
            index,
        )
        .await;
        let appending = tokio::spawn({
            let log = std::sync::Arc::clone(&log);
            async move {
                log.append_async(ROOT, &common::source(), epoch, &pause())
                    .await
            }
        });
        until_a_backend_waits_for_a_lock(&admin).await;
        appending.abort();
        assert!(appending.await.unwrap_err().is_cancelled());
        // The next operation, while the dropped append still waits: it
        // must wait too, since the append may yet commit.
        let mut reading = tokio::spawn({
            let log = std::sync::Arc::clone(&log);
            async move { log.facts_async(ROOT, "run").await }
        });
        let early = tokio::time::timeout(Duration::from_millis(500), &mut reading).await;
        if let Ok(read) = early {
            panic!("the next operation ran while the dropped append was still in flight: {read:?}");
        }
        admin.batch_execute("ROLLBACK").await.expect("let go");
        let facts = within("the next operation answers", reading)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            facts.pauses.len(),
            1,
            "the next operation sees what the dropped append wrote"
        );
        assert_eq!(
            idle_in_transaction(&admin).await,
            0,
            "a transaction was left open"
        );
    });
}

/// An operation dropped while it waits for a pooled connection sent
/// nothing: the log's next operation answers as if it never existed.
#[test]
fn a_claim_dropped_while_it_waits_for_a_connection_sent_nothing() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let log = std::sync::Arc::new(one_connection_log(&cluster.url(&dbname)).await);
        let held = log.pool().get().await.expect("the one connection");
        let claiming = tokio::spawn({
            let log = std::sync::Arc::clone(&log);
            async move { log.claim_async(ROOT, "run").await }
        });
        // The claim is parked on the pool, seen there: by construction,
        // not by a sleep that might end before the claim was first polled.
        within("the claim waits for the pool's one connection", async {
            while log.pool().status().waiting == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        claiming.abort();
        assert!(claiming.await.unwrap_err().is_cancelled());
        drop(held);
        let facts = log.facts_async(ROOT, "run").await.unwrap();
        assert_eq!(facts.epoch, Epoch::NONE, "the dropped claim sent nothing");
        assert_eq!(
            log.claim_async(ROOT, "run").await.unwrap(),
            Claim::Owner(Epoch::new(1))
        );
    });
}
