//! A pooled connection's seams (issue 44): what a `PostgresLog` leaves on
//! the connections it hands back to its pool (which a user borrows through
//! `log.pool()`, and which behind PgBouncer another client gets next), and
//! what a dropped operation leaves behind, at each point where a caller
//! can drop it: waiting for a connection, between its flights, and after
//! its commit was sent. Each point is reached by construction: another
//! session holds the lock the operation waits for, seen waiting in
//! `pg_stat_activity` before the drop. And what a commit that fails means:
//! the reply to the log's own commit lost (a proxy), for every kind of
//! write, and the caller's own `COMMIT` refused (a deferred constraint)
//! under the caller's-transaction forms.

use std::time::{Duration, Instant};

use baton::durable::tokio_postgres::{Client, Config, NoTls};
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, PostgresLog, PostgresOptions, Receipt, Retirement,
};

use crate::Payload;
use crate::common::pgbouncer::POOL_SIZE;
use crate::common::postgres::{Cluster, USER};
use crate::common::{self, within};
use crate::postgres_bouncer_store::bouncer;
use crate::postgres_only::{open, pause, runtime};
use crate::postgres_store::{insert_pause_row, until_a_backend_waits_for_a_lock};

type Log = PostgresLog<Payload>;

const ROOT: &str = "run";

/// The settings baton sets (its `SET LOCAL` timeouts, its transactions'
/// isolation and read-only mode), as `SHOW` answers them on `client`.
async fn settings(client: &Client) -> Vec<(&'static str, String)> {
    let mut shown = Vec::new();
    for setting in [
        "statement_timeout",
        "lock_timeout",
        "idle_in_transaction_session_timeout",
        "transaction_isolation",
        "transaction_read_only",
        "default_transaction_isolation",
        "default_transaction_read_only",
    ] {
        let row = client
            .query_one(&format!("SHOW {setting}"), &[])
            .await
            .expect("SHOW");
        shown.push((setting, row.get::<_, String>(0)));
    }
    shown
}

/// A log of its own on `url` with one pooled connection, so every
/// operation runs on the connection the test then borrows, and with a
/// timeout (7 s) that is no server default.
async fn one_connection_log(url: &str) -> Log {
    let options = PostgresOptions::new()
        .migrate(true)
        .pool_size(1)
        .timeout(Duration::from_secs(7));
    open(url, options).await.expect("connect")
}

/// Each kind of operation once — a first claim and a takeover, an append
/// and a refused one, a read, a finish, a refused and a granted
/// retirement, a batch of retention by age — each followed by `check`
/// with the operation's name.
async fn every_kind_of_operation<C, F>(log: &Log, mut check: C)
where
    C: FnMut(&'static str) -> F,
    F: std::future::Future<Output = ()>,
{
    let Ok(Claim::Owner(_)) = log.claim_async(ROOT, "run").await else {
        panic!("the first claim")
    };
    check("a first claim").await;
    let Ok(Claim::Owner(epoch)) = log.claim_async(ROOT, "run").await else {
        panic!("the takeover")
    };
    check("a takeover").await;
    let stale = log
        .append_async(ROOT, &common::source(), Epoch::new(1), &pause())
        .await;
    assert!(matches!(stale, Err(LogError::Fenced { .. })), "{stale:?}");
    check("a refused append").await;
    let appended = log
        .append_async(ROOT, &common::source(), epoch, &pause())
        .await;
    assert_eq!(appended.unwrap(), Receipt::Written);
    check("an append").await;
    log.facts_async(ROOT, "run").await.expect("the facts");
    check("a read of the facts").await;
    let successor = pause().intent.successor_run_id.clone();
    let refused = log.retire_async(ROOT).await;
    assert!(
        matches!(refused, Err(LogError::RunOpen { .. })),
        "{refused:?}"
    );
    check("a refused retirement").await;
    let Ok(Claim::Owner(next)) = log.claim_async(ROOT, &successor).await else {
        panic!("G1: the successor's claim")
    };
    let mut finisher = common::source();
    finisher.run_id = successor;
    let finished = log
        .finish_async(ROOT, &finisher, next, &common::execution())
        .await;
    assert_eq!(finished.unwrap(), Receipt::Written);
    check("a finish").await;
    let later = std::time::SystemTime::now() + Duration::from_secs(60);
    let swept = log
        .retire_ended_async(later, None, 10)
        .await
        .expect("the sweep");
    assert_eq!(swept.retired, 1, "{swept:?}");
    check("a batch of retention by age").await;
}

/// After every kind of operation, the log's pooled connection — borrowed
/// through `log.pool()`, the very backend the operation ran on — shows the
/// server's defaults for every setting baton touches, and is not inside a
/// transaction.
#[test]
fn no_setting_baton_touches_stays_on_a_pooled_connection() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let dbname = cluster.database().await;
        let admin = cluster.connect(&dbname).await;
        let defaults = settings(&admin).await;
        let log = one_connection_log(&cluster.url(&dbname)).await;
        let backend = {
            let pooled = log.pool().get().await.expect("the pooled connection");
            pooled
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .unwrap()
                .get::<_, i32>(0)
        };
        every_kind_of_operation(&log, |what| {
            let (log, defaults, admin) = (&log, &defaults, &admin);
            async move {
                let state: String = admin
                    .query_one(
                        "SELECT state FROM pg_stat_activity WHERE pid = $1",
                        &[&backend],
                    )
                    .await
                    .expect("the backend is still there: the operation kept its connection")
                    .get(0);
                assert_eq!(
                    state, "idle",
                    "after {what}: back in the pool outside a transaction"
                );
                let pooled = log.pool().get().await.expect("the pooled connection");
                let pid: i32 = pooled
                    .query_one("SELECT pg_backend_pid()", &[])
                    .await
                    .unwrap()
                    .get(0);
                assert_eq!(pid, backend, "after {what}: the same backend");
                assert_eq!(
                    &settings(&pooled).await,
                    defaults,
                    "after {what}: a setting baton touched stayed on the pooled connection"
                );
            }
        })
        .await;
    });
}

/// Behind PgBouncer in transaction mode, a server connection the log's
/// operations ran on is the one another client gets next: after every kind
/// of operation, each of the database's server connections (PgBouncer
/// keeps at most [`POOL_SIZE`]; that many clients, each inside a
/// transaction, hold them all at once) shows the server's defaults.
#[test]
fn no_setting_baton_touches_reaches_the_next_client_of_a_pgbouncer_server_connection() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let Some(bouncer) = bouncer() else {
            return;
        };
        let dbname = cluster.database().await;
        let defaults = settings(&cluster.connect(&dbname).await).await;
        let url = bouncer.url(USER, &dbname);
        let options = PostgresOptions::new()
            .migrate(true)
            .pool_size(1)
            .prepared_statements(false)
            .timeout(Duration::from_secs(7));
        let log = open(&url, options)
            .await
            .expect("connect through PgBouncer");
        let mut others = Vec::new();
        for _ in 0..POOL_SIZE {
            let (client, connection) = url
                .parse::<Config>()
                .unwrap()
                .connect(NoTls)
                .await
                .expect("another client of PgBouncer");
            tokio::spawn(connection);
            others.push(client);
        }
        every_kind_of_operation(&log, |what| {
            let (others, defaults) = (&others, &defaults);
            async move {
                for other in others {
                    other
                        .batch_execute("BEGIN")
                        .await
                        .expect("a server connection");
                }
                for other in others {
                    assert_eq!(
                        &settings(other).await,
                        defaults,
                        "after {what}: a setting baton touched reached PgBouncer's next client"
                    );
                }
                for other in others {
                    other.batch_execute("COMMIT").await.expect("its end");
                }
            }
        })
        .await;
    });
}

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
async fn patient_log(url: &str) -> Log {
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
    /// (when it times out) is what a timeout must answer: `OutcomeUnknown`
    /// for a write, `Unavailable` for a read.
    async fn operation(self, log: &Log) -> (String, bool) {
        match self {
            Held::RunRowForATakeover => {
                let answer = log.claim_async(ROOT, "run").await;
                let timed_out = matches!(answer, Err(LogError::OutcomeUnknown(_)));
                (format!("{answer:?}"), timed_out)
            }
            Held::RootRowForARetirement => {
                let answer = log.retire_async(ROOT).await;
                let timed_out = matches!(answer, Err(LogError::OutcomeUnknown(_)));
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
/// (a log whose timeout is 1 s: a write answers `OutcomeUnknown`, a read
/// `Unavailable`, within twice that) — leave nothing once that session
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
        // The claim is parked on the pool (it has nothing else to wait for).
        tokio::time::sleep(Duration::from_millis(100)).await;
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

// --- What a lost reply to a commit means, for every write. ---

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
