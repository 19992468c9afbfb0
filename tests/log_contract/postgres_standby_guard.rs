//! A log that requires a synchronous standby requires it for its whole
//! life, not only when it opens (issue 58): every write — each operation's
//! transaction, each one-statement form, each write in the caller's
//! transaction — is refused with `Unavailable` whose source is
//! `NoSynchronousStandby`, and nothing is written, whenever the server
//! the write reaches would acknowledge it before a standby has it. That
//! is the server a failover lands the log on (a promoted standby has no
//! standby of its own) and the primary an HA manager drops its
//! synchronous standby from to stay writable; an operator's or a role's
//! `synchronous_commit` counts too. Reads go on. Once the server waits for
//! a standby again, the same log writes again (G2 across the next
//! failover: nothing it acknowledged was acknowledged without a standby).

use std::time::{Duration, Instant, SystemTime};

use baton::durable::tokio_postgres::{self, NoTls};
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, NoSynchronousStandby, PostgresLog, PostgresOptions,
    Receipt, RunFacts,
};

use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_failover::both;
use crate::postgres_fates::source_of;
use crate::postgres_only::{open, pause, runtime};

type Log = PostgresLog<crate::Payload>;

const ROOT: &str = "run";

/// Migrating, a 5 s timeout, a synchronous standby required.
fn requiring() -> PostgresOptions {
    PostgresOptions::new()
        .migrate(true)
        .timeout(Duration::from_secs(5))
        .require_synchronous_standby(true)
}

/// A synchronous standby of `primary`, a fresh database, the config of
/// both, and a log on it requiring the standby.
async fn on_a_synchronous_pair(primary: &Cluster) -> (Cluster, String, String, Log) {
    let dbname = primary.database().await;
    let standby = primary.synchronous_standby().await;
    let url = both(primary, &standby, &dbname);
    let log = open(&url, requiring())
        .await
        .expect("a synchronous pair opens");
    (standby, dbname, url, log)
}

/// The refusal `answer` must be: `Unavailable` with `NoSynchronousStandby`
/// as its source, naming the settings found; `what` names the write.
fn refused<T: std::fmt::Debug>(what: &str, answer: Result<T, LogError>) -> NoSynchronousStandby {
    match answer {
        Err(LogError::Unavailable(source)) => match source.downcast::<NoSynchronousStandby>() {
            Ok(refusal) => *refusal,
            Err(other) => panic!("{what}: Unavailable, but not for the standby: {other}"),
        },
        other => panic!("{what}: not refused for want of a standby: {other:?}"),
    }
}

/// `ALTER SYSTEM SET synchronous_standby_names = names` on `server` and a
/// reload, until `log`'s sessions see it (the postmaster signals every
/// backend at once; each reads the file before its next command).
async fn set_standby_names(server: &Cluster, log: &Log, names: &str) {
    let admin = server.connect("postgres").await;
    admin
        .batch_execute(&format!(
            "ALTER SYSTEM SET synchronous_standby_names = '{names}'"
        ))
        .await
        .unwrap();
    admin
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while within("R5", log.replication())
        .await
        .unwrap()
        .synchronous_standby_names
        != names
    {
        assert!(
            Instant::now() < deadline,
            "the reload never reached the log"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What the log holds of each Run, to show a refusal changed nothing.
async fn facts_of(log: &Log, runs: &[&str]) -> Vec<RunFacts<crate::Payload>> {
    let mut facts = Vec::new();
    for run in runs {
        facts.push(within("R5", log.facts_async(ROOT, run)).await.unwrap());
    }
    facts
}

/// Runs in every state a write can meet: `open` (claimed), `finishing`
/// (claimed, to be finished), `handing` (claimed, to be handed off) and
/// the root Run `ended` (one Run, finished: retirable).
async fn every_state(log: &Log) -> [Epoch; 3] {
    let mut epochs = [Epoch::NONE; 3];
    for (i, run) in ["open", "finishing", "handing"].into_iter().enumerate() {
        let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async(ROOT, run)).await else {
            panic!("{run} is claimed");
        };
        epochs[i] = epoch;
    }
    let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async("ended", "ended")).await else {
        panic!("ended is claimed");
    };
    let (source, outcome) = (source_of("ended"), common::execution());
    let finish = log.finish_async("ended", &source, epoch, &outcome);
    assert_eq!(within("R5", finish).await.unwrap(), Receipt::Written);
    epochs
}

/// Every kind of write the log sends, each answered: a new Run's claim and
/// an open Run's claim (the one-statement form, then the transaction), a
/// pause (one statement), a finish (one flight), a retirement, a sweep,
/// and a claim in the caller's transaction.
async fn every_write(
    log: &Log,
    caller: &mut tokio_postgres::Client,
    [open, finishing, handing]: [Epoch; 3],
) -> Vec<(&'static str, Result<String, LogError>)> {
    fn shown<T: std::fmt::Debug>(answer: Result<T, LogError>) -> Result<String, LogError> {
        answer.map(|value| format!("{value:?}"))
    }
    let mut answers = vec![
        (
            "a new Run's claim",
            shown(log.claim_async(ROOT, "new").await),
        ),
        (
            "an open Run's claim",
            shown(log.claim_async(ROOT, "open").await),
        ),
    ];
    let _ = open;
    let (source, pause) = (source_of("handing"), pause());
    let append = log.append_async(ROOT, &source, handing, &pause);
    answers.push(("a pause", shown(append.await)));
    let (source, outcome) = (source_of("finishing"), common::execution());
    let finish = log.finish_async(ROOT, &source, finishing, &outcome);
    answers.push(("a finish", shown(finish.await)));
    answers.push(("a retirement", shown(log.retire_async("ended").await)));
    let future = SystemTime::now() + Duration::from_secs(3600);
    let sweep = log.retire_ended_async(future, None, 10).await;
    answers.push(("a sweep", shown(sweep)));
    let tx = caller.transaction().await.unwrap();
    let claim_in = log.claim_in(&tx, ROOT, "new-in-tx").await;
    // The caller's transaction is still usable: nothing failed in it.
    tx.batch_execute("SELECT 1").await.unwrap();
    tx.rollback().await.unwrap();
    answers.push(("a claim in the caller's transaction", shown(claim_in)));
    answers
}

/// Ends every session on `dbname` (a database's setting reaches only new
/// ones), waits until the server has none left, and drops `log`'s idle
/// connections, whose sessions ended: its next operations connect anew,
/// by construction, and never meet a connection the server is closing
/// (whose first statement may be sent and answered by the termination:
/// an unknown outcome, which is not what this test is about).
async fn sessions_end(admin: &tokio_postgres::Client, dbname: &str, log: &Log) {
    Cluster::end_sessions(admin, dbname).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                &[&dbname],
            )
            .await
            .unwrap()
            .get(0);
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{left} sessions left on {dbname}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    log.pool().retain(|_, _| false);
}

#[test]
fn g2_a_log_requiring_a_synchronous_standby_refuses_every_write_once_the_server_has_none() {
    let Some(primary) = Cluster::start() else {
        return;
    };
    runtime().block_on(async {
        let (_standby, dbname, url, log) = on_a_synchronous_pair(&primary).await;
        let epochs = every_state(&log).await;
        let (mut caller, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        let runs = ["open", "finishing", "handing", "new", "new-in-tx"];
        let before = facts_of(&log, &runs).await;

        // The operator (or a manager) names no standby any more.
        set_standby_names(&primary, &log, "").await;
        for (what, answer) in every_write(&log, &mut caller, epochs).await {
            let refusal = refused(what, answer);
            assert_eq!(refusal.found.synchronous_standby_names, "", "{what}");
            assert!(
                refusal.to_string().contains("nothing was written"),
                "{refusal}"
            );
        }
        assert_eq!(
            facts_of(&log, &runs).await,
            before,
            "G2: the refusals wrote nothing"
        );
        let retired = within("R5", log.facts_async("ended", "ended"))
            .await
            .unwrap();
        assert!(
            !retired.retired && retired.finished.is_some(),
            "the root is not retired"
        );

        // A database's synchronous_commit, which every new connection
        // takes: the log's sessions ended, its pool connects anew.
        set_standby_names(&primary, &log, "*").await;
        let admin = primary.connect("postgres").await;
        admin
            .batch_execute(&format!(
                "ALTER DATABASE \"{dbname}\" SET synchronous_commit = 'local'"
            ))
            .await
            .unwrap();
        sessions_end(&admin, &dbname, &log).await;
        let (mut caller, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        // Every write refused for the database's setting, on the first
        // try: `refused` fails the test on any other answer.
        for (what, answer) in every_write(&log, &mut caller, epochs).await {
            let refusal = refused(what, answer);
            assert_eq!(refusal.found.synchronous_commit, "local", "{what}");
            assert_eq!(refusal.found.synchronous_standby_names, "*", "{what}");
        }
        assert_eq!(
            facts_of(&log, &runs).await,
            before,
            "G2: the refusals wrote nothing"
        );

        // Back to a synchronous standby: the same log writes again.
        admin
            .batch_execute(&format!(
                "ALTER DATABASE \"{dbname}\" RESET synchronous_commit"
            ))
            .await
            .unwrap();
        sessions_end(&admin, &dbname, &log).await;
        let (mut caller, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        for (what, answer) in &every_write(&log, &mut caller, epochs).await {
            assert!(
                answer.is_ok(),
                "{what} with a synchronous standby: {answer:?}"
            );
        }
    });
}

/// A caller's session that lowers `synchronous_commit` itself: its
/// transaction's writes are refused, and the transaction stays usable.
#[test]
fn g2_a_callers_session_below_remote_flush_is_refused_in_its_transaction() {
    let Some(primary) = Cluster::start() else {
        return;
    };
    runtime().block_on(async {
        let (_standby, _, url, log) = on_a_synchronous_pair(&primary).await;
        let (mut caller, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        for commit in ["remote_write", "local", "off"] {
            let tx = caller.transaction().await.unwrap();
            tx.batch_execute(&format!("SET LOCAL synchronous_commit = {commit}"))
                .await
                .unwrap();
            let refusal = refused(commit, log.claim_in(&tx, ROOT, "run").await);
            assert_eq!(refusal.found.synchronous_commit, commit);
            assert_eq!(refusal.found.synchronous_standby_names, "*");
            tx.batch_execute("SELECT 1").await.unwrap();
            tx.rollback().await.unwrap();
        }
        let tx = caller.transaction().await.unwrap();
        let claimed = log.claim_in(&tx, ROOT, "run").await.unwrap();
        tx.commit().await.unwrap();
        assert!(matches!(claimed, Claim::Owner(_)), "{claimed:?}");
    });
}

/// The failover the log follows lands it on the promoted standby, which
/// has no standby of its own: the same log reads there at once, and
/// acknowledges no write until the promoted server has a synchronous
/// standby; then it writes again.
#[test]
fn g2_after_a_failover_a_log_requiring_a_standby_writes_nothing_until_the_new_primary_has_one() {
    let Some(primary) = Cluster::start() else {
        return;
    };
    runtime().block_on(async {
        let (standby, _, _, log) = on_a_synchronous_pair(&primary).await;
        let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async(ROOT, "run")).await else {
            panic!("run is claimed");
        };
        primary.kill_postmaster();
        let failed_over = Instant::now();
        standby.promote();
        let deadline = Instant::now() + Duration::from_secs(30);
        let facts = loop {
            if let Ok(facts) = log.facts_async(ROOT, "run").await {
                break facts;
            }
            assert!(
                Instant::now() < deadline,
                "R5: the log reads on the promoted server"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(facts.epoch, epoch, "G2: the acknowledged claim is there");
        println!(
            "the log read again {:.2} s after the primary was killed",
            failed_over.elapsed().as_secs_f64()
        );
        // A pooled connection to the killed primary may still fail an
        // operation (`Unavailable`, nothing sent); every other answer is
        // the guard's refusal.
        let (mut acknowledged, mut refusals) = (0, 0);
        for i in 0..20 {
            let run = format!("after-{i}");
            let claim = log.claim_async(ROOT, &run).await.map(|_| ());
            let (source, pause) = (source_of("run"), pause());
            let append = log.append_async(ROOT, &source, epoch, &pause).await;
            for answer in [claim, append.map(|_| ())] {
                match answer {
                    Ok(()) => acknowledged += 1,
                    Err(LogError::Unavailable(source)) if source.is::<NoSynchronousStandby>() => {
                        refusals += 1;
                    }
                    Err(LogError::Unavailable(_)) => {}
                    Err(other) => panic!("{run}: {other:?}"),
                }
            }
        }
        assert_eq!(acknowledged, 0, "G2: acknowledged without a standby");
        assert!(refusals >= 30, "the guard refused {refusals} of 40 writes");
        assert_eq!(
            within("R5", log.facts_async(ROOT, "run")).await.unwrap(),
            facts,
            "the refusals wrote nothing"
        );
        // The promoted server gets a synchronous standby of its own.
        let _next = standby.synchronous_standby().await;
        let (source, pause) = (source_of("run"), pause());
        let append = log.append_async(ROOT, &source, epoch, &pause);
        assert_eq!(within("R5", append).await.unwrap(), Receipt::Written);
    });
}
