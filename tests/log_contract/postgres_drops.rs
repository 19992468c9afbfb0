//! A dropped or timed-out `PostgresLog` operation (issue 44), at each
//! point where a caller can drop it or its time can run out: waiting for a
//! connection, between its flights, after its statement was sent, and at
//! its commit. Each point is reached by construction: another session
//! holds what the operation waits for (a row lock, a row it is inserting,
//! a table lock, or an advisory lock a deferred trigger waits for at the
//! commit), seen waiting in `pg_stat_activity` before the drop.
//!
//! | operation | waiting for a connection | between flights | statement sent | at its commit |
//! |---|---|---|---|---|
//! | first claim | dropped | (one flight) | timed out | dropped, timed out |
//! | takeover | (the same code) | dropped, timed out | — | dropped, timed out |
//! | append | (the same code) | (one flight) | dropped, timed out | dropped, timed out |
//! | finish | (the same code) | (one flight) | dropped, timed out | dropped, timed out |
//! | retire | (the same code) | dropped, timed out | — | dropped, timed out |
//! | sweep batch | (the same code) | — | — | dropped, timed out |
//! | facts | (the same code) | dropped, timed out | — | (writes nothing) |
//!
//! What each asserts: a dropped write's next operation on the log waits
//! until the write has ended and reads its outcome; a timed-out write's
//! next operation answers at once and reads it final (nothing lands after
//! it); no backend is left inside a transaction; another log takes the
//! Run's row lock within [`PROMPTLY`], far below the logs' timeout.

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

/// A log whose timeout is 1 s, far below the bounds the tests wait for;
/// its statements unnamed, as [`patient_log`]'s.
async fn hasty_log(url: &str) -> Log {
    let options = PostgresOptions::new()
        .migrate(true)
        .prepared_statements(false)
        .timeout(Duration::from_secs(1));
    open(url, options).await.expect("connect")
}

/// A fresh database and a log on it, [`hasty_log`] or [`patient_log`].
async fn fresh_log(cluster: &Cluster, hasty: bool) -> (String, std::sync::Arc<Log>) {
    let dbname = cluster.database().await;
    let url = cluster.url(&dbname);
    let log = if hasty {
        hasty_log(&url).await
    } else {
        patient_log(&url).await
    };
    (dbname, std::sync::Arc::new(log))
}

/// How soon the Run's row lock must be free again once nothing holds it:
/// far below the logs' timeout (30 s), where a transaction left open by a
/// dropped operation would hold it (until the server's
/// `idle_in_transaction_session_timeout`, which is that timeout).
const PROMPTLY: Duration = Duration::from_secs(5);

/// A finish dropped once its one flight was sent — its `BEGIN`, the Run's
/// row lock (held by another session), the finish and `COMMIT` — ends as
/// sent: the log's next operation waits until it has ended and reads its
/// outcome (the finish, committed once the other session let go), no
/// transaction is left open, and another log takes the Run's row lock at
/// once and finds the Run finished.
#[test]
fn a_finish_dropped_with_its_flight_sent_ends_and_the_next_operation_reads_it() {
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
        let next = tokio::spawn({
            let log = std::sync::Arc::clone(&log);
            async move { log.facts_async(ROOT, "run").await }
        });
        admin.batch_execute("ROLLBACK").await.expect("let go");
        let facts = within("the next operation", next).await.unwrap().unwrap();
        assert_eq!(
            facts.finished.map(|finished| finished.outcome),
            Some(common::execution()),
            "the next operation reads the dropped finish, ended"
        );
        let other = patient_log(&url).await;
        let started = Instant::now();
        let taken = within("the Run's row lock is free", other.claim_async(ROOT, "run")).await;
        assert!(
            started.elapsed() < PROMPTLY,
            "the dropped finish's transaction held the Run's row lock for {:?}",
            started.elapsed()
        );
        assert_eq!(taken.unwrap(), Claim::Finished(common::execution()));
        assert_eq!(
            idle_in_transaction(&admin).await,
            0,
            "a transaction was left open"
        );
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
                let (dbname, log) = fresh_log(cluster, timed_out).await;
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
                let other = patient_log(&cluster.url(&dbname)).await;
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

/// A write that times out after it was sent, held by another session:
/// the log's one-statement forms (a Run's first claim, waiting on the
/// Run's row another session is inserting; an append, waiting on the
/// pause row another session is inserting) and a finish's one flight
/// (waiting for the Run's row lock).
#[derive(Clone, Copy, Debug)]
enum TimedOut {
    FirstClaim,
    Append,
    Finish,
}

/// Each write of [`TimedOut`], on a log whose timeout is 1 s, answers as
/// a timeout may (R5: within the timeout; a write's outcome unknown, or
/// nothing written); the log's next operation, a read of the facts, then
/// answers at once although the other session still holds on — and
/// what it reads is final (R4: the unknown outcome is resolved by the
/// read): once the other session lets go, nothing of the timed-out write
/// lands after it. No transaction is left open.
#[test]
fn a_write_timed_out_after_it_was_sent_is_settled_before_the_next_operation() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        for case in [TimedOut::FirstClaim, TimedOut::Append, TimedOut::Finish] {
            let dbname = cluster.database().await;
            let url = cluster.url(&dbname);
            let log = hasty_log(&url).await;
            let admin = cluster.connect(&dbname).await;
            let epoch = Epoch::new(1);
            if !matches!(case, TimedOut::FirstClaim) {
                assert_eq!(
                    log.claim_async(ROOT, "run").await.unwrap(),
                    Claim::Owner(epoch)
                );
            }
            admin.batch_execute("BEGIN").await.unwrap();
            match case {
                TimedOut::FirstClaim => admin
                    .batch_execute(&format!(
                        "INSERT INTO baton_run (root_run_id, run_id, epoch) \
                         VALUES ('{ROOT}', 'run', 1)"
                    ))
                    .await
                    .expect("the other session's row"),
                TimedOut::Append => {
                    let index = i64::try_from(epoch.get()).unwrap();
                    let (table, source) = ("baton_handoff_pause", common::source());
                    insert_pause_row(&admin, table, ROOT, &source, &pause(), index).await;
                }
                TimedOut::Finish => admin
                    .batch_execute(&format!(
                        "SELECT epoch FROM baton_run \
                         WHERE root_run_id = '{ROOT}' AND run_id = 'run' FOR UPDATE"
                    ))
                    .await
                    .expect("the Run's row lock"),
            }
            let answer = match case {
                TimedOut::FirstClaim => format!("{:?}", log.claim_async(ROOT, "run").await),
                TimedOut::Append => format!(
                    "{:?}",
                    log.append_async(ROOT, &common::source(), epoch, &pause())
                        .await
                ),
                TimedOut::Finish => format!(
                    "{:?}",
                    log.finish_async(ROOT, &common::source(), epoch, &common::execution())
                        .await
                ),
            };
            assert!(
                answer.starts_with("Err(OutcomeUnknown") || answer.starts_with("Err(Unavailable"),
                "R5: {case:?} answers as a timeout: {answer}"
            );
            let started = Instant::now();
            let read = within("R5: the next operation", log.facts_async(ROOT, "run"))
                .await
                .unwrap();
            assert!(
                started.elapsed() < PROMPTLY,
                "{case:?}: the next operation waited {:?}",
                started.elapsed()
            );
            admin.batch_execute("ROLLBACK").await.expect("let go");
            until_no_transaction_is_left(&admin, &format!("{case:?}")).await;
            let again = log.facts_async(ROOT, "run").await.unwrap();
            assert_eq!(
                (again.epoch, again.pauses.len(), again.finished.is_some()),
                (read.epoch, read.pauses.len(), read.finished.is_some()),
                "R4: {case:?} ({answer}) landed after the next operation read that it had not"
            );
        }
    });
}

/// A write held at its commit: a deferred constraint trigger on the log's
/// Run and pause tables waits, at the commit of any transaction that
/// wrote them, for an advisory lock another session holds.
#[derive(Clone, Copy, Debug)]
enum AtItsCommit {
    FirstClaim,
    Takeover,
    Append,
    Finish,
    Retire,
    /// A batch of retention by age.
    Sweep,
}

impl AtItsCommit {
    /// The writes before the held one, not held.
    async fn prepare(self, log: &Log) {
        if matches!(self, AtItsCommit::FirstClaim) {
            return;
        }
        assert_eq!(
            log.claim_async(ROOT, "run").await.unwrap(),
            Claim::Owner(Epoch::new(1))
        );
        if matches!(self, AtItsCommit::Retire | AtItsCommit::Sweep) {
            let finished = log
                .finish_async(ROOT, &common::source(), Epoch::new(1), &common::execution())
                .await;
            assert_eq!(finished.unwrap(), baton::durable::Receipt::Written);
        }
    }

    /// The held write, its answer as text.
    async fn write(self, log: &Log) -> String {
        let epoch = Epoch::new(1);
        match self {
            AtItsCommit::FirstClaim | AtItsCommit::Takeover => {
                format!("{:?}", log.claim_async(ROOT, "run").await)
            }
            AtItsCommit::Append => format!(
                "{:?}",
                log.append_async(ROOT, &common::source(), epoch, &pause())
                    .await
            ),
            AtItsCommit::Finish => format!(
                "{:?}",
                log.finish_async(ROOT, &common::source(), epoch, &common::execution())
                    .await
            ),
            AtItsCommit::Retire => format!("{:?}", log.retire_async(ROOT).await),
            AtItsCommit::Sweep => {
                let later = std::time::SystemTime::now() + Duration::from_secs(60);
                format!("{:?}", log.retire_ended_async(later, None, 10).await)
            }
        }
    }

    /// The facts as the write leaves them, once committed: the Run's
    /// epoch, its pauses, whether it is finished, whether retired.
    fn written(self) -> (u64, usize, bool, bool) {
        match self {
            AtItsCommit::FirstClaim => (1, 0, false, false),
            AtItsCommit::Takeover => (2, 0, false, false),
            AtItsCommit::Append => (1, 1, false, false),
            AtItsCommit::Finish => (1, 0, true, false),
            AtItsCommit::Retire | AtItsCommit::Sweep => (0, 0, false, true),
        }
    }
}

/// The facts as [`AtItsCommit::written`] lists them.
async fn facts_of(log: &Log) -> (u64, usize, bool, bool) {
    let facts = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
    (
        facts.epoch.get(),
        facts.pauses.len(),
        facts.finished.is_some(),
        facts.retired,
    )
}

/// Holds every later commit of a transaction that writes the log's Run or
/// pause table, while `admin` holds advisory lock 44.
async fn hold_commits(admin: &Client) {
    admin
        .batch_execute(
            "CREATE FUNCTION wait_for_44() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN PERFORM pg_advisory_xact_lock_shared(44); RETURN NULL; END $$; \
             CREATE CONSTRAINT TRIGGER held AFTER INSERT OR UPDATE OR DELETE ON baton_run \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wait_for_44(); \
             CREATE CONSTRAINT TRIGGER held AFTER INSERT OR UPDATE OR DELETE \
             ON baton_handoff_pause \
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wait_for_44(); \
             SELECT pg_advisory_lock(44)",
        )
        .await
        .expect("the commits held");
}

/// Every kind of write, held at its commit (sent, its transaction's
/// writes done, the commit waiting), then dropped: the log's next
/// operation, a read of the facts, waits — the commit may yet land —
/// and once the other session lets go reads the write, committed (R4:
/// the dropped write's outcome, read final). Timed out instead (a log
/// whose timeout is 1 s): the write answers as a timeout may, the next
/// read answers at once though the commit is still held, and nothing of
/// the write lands after it. No transaction is left open either way.
#[test]
fn a_write_dropped_or_timed_out_at_its_commit_is_read_final_by_the_next_operation() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        for held in [
            AtItsCommit::FirstClaim,
            AtItsCommit::Takeover,
            AtItsCommit::Append,
            AtItsCommit::Finish,
            AtItsCommit::Retire,
            AtItsCommit::Sweep,
        ] {
            for timed_out in [false, true] {
                let case = format!(
                    "{held:?}, {}",
                    if timed_out { "timed out" } else { "dropped" }
                );
                let (dbname, log) = fresh_log(cluster, timed_out).await;
                held.prepare(&log).await;
                let before = facts_of(&log).await;
                let admin = cluster.connect(&dbname).await;
                hold_commits(&admin).await;
                let writing = tokio::spawn({
                    let log = std::sync::Arc::clone(&log);
                    async move { held.write(&log).await }
                });
                until_a_backend_waits_for_a_lock(&admin).await;
                if timed_out {
                    let answer = within("R5: a timeout answers", writing).await.unwrap();
                    assert!(
                        answer.starts_with("Err(OutcomeUnknown")
                            || answer.starts_with("Err(Unavailable"),
                        "{case}: {answer}"
                    );
                    let started = Instant::now();
                    let read = facts_of(&log).await;
                    assert!(started.elapsed() < PROMPTLY, "{case}: the next read waited");
                    assert_eq!(read, before, "{case}: the write was cancelled");
                    admin
                        .batch_execute("SELECT pg_advisory_unlock(44)")
                        .await
                        .unwrap();
                    until_no_transaction_is_left(&admin, &case).await;
                    assert_eq!(
                        facts_of(&log).await,
                        read,
                        "R4: {case} landed after the read"
                    );
                } else {
                    writing.abort();
                    assert!(writing.await.unwrap_err().is_cancelled(), "{case}");
                    let mut reading = tokio::spawn({
                        let log = std::sync::Arc::clone(&log);
                        async move { facts_of(&log).await }
                    });
                    let early =
                        tokio::time::timeout(Duration::from_millis(500), &mut reading).await;
                    if let Ok(read) = early {
                        panic!("{case}: the next read ran while the commit was held: {read:?}");
                    }
                    admin
                        .batch_execute("SELECT pg_advisory_unlock(44)")
                        .await
                        .unwrap();
                    let read = within("the next read answers", reading).await.unwrap();
                    assert_eq!(read, held.written(), "R4: {case}: the commit landed, read");
                    until_no_transaction_is_left(&admin, &case).await;
                    assert_eq!(facts_of(&log).await, read, "{case}");
                }
            }
        }
    });
}
