//! What `PostgresLog` runs again and what it does not (issue 37), on
//! failures planted by construction: a trigger on the log's tables raises
//! a serialization failure, a deadlock or another error.

use baton::durable::tokio_postgres::error::SqlState;
use baton::durable::{AsyncHandoffLog, Claim, Epoch, LogError, Receipt};

use crate::common::postgres::Cluster;
use crate::common::proxy::Proxy;
use crate::common::within;
use crate::postgres_only::*;

/// A fault the test plants on the log's tables, by construction (issue
/// 37): a row trigger (`BEFORE <event> ON <table>`) that raises the
/// condition `code` the first `times` times it fires, then lets the row
/// through. It counts its firings with a sequence, whose `nextval` is not
/// rolled back with the failing statement's transaction (a counting row
/// would be). Planted as the database's owner (the superuser the fixture
/// gives, as which the proxied logs of these tests run too).
pub(crate) struct Fault<'a> {
    admin: &'a tokio_postgres::Client,
    name: &'static str,
}

impl<'a> Fault<'a> {
    pub(crate) async fn plant(
        admin: &'a tokio_postgres::Client,
        name: &'static str,
        on: &str,
        code: &str,
        times: i64,
    ) -> Fault<'a> {
        admin
            .batch_execute(&format!(
                "CREATE SEQUENCE {name}_fired; \
                 CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ \
                 BEGIN \
                     IF nextval('{name}_fired') <= {times} THEN \
                         RAISE EXCEPTION 'planted by the test: {code}' USING ERRCODE = '{code}'; \
                     END IF; \
                     RETURN NEW; \
                 END $$; \
                 CREATE TRIGGER {name} BEFORE {on} FOR EACH ROW EXECUTE FUNCTION {name}()"
            ))
            .await
            .expect("plant the fault");
        Fault { admin, name }
    }

    /// How many times the trigger fired (failing or not).
    pub(crate) async fn fired(&self) -> i64 {
        self.admin
            .query_one(
                &format!(
                    "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {}_fired",
                    self.name
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0)
    }

    /// Removes the trigger, its function and its counter.
    pub(crate) async fn remove(self) {
        self.admin
            .batch_execute(&format!(
                "DROP FUNCTION {0}() CASCADE; DROP SEQUENCE {0}_fired",
                self.name
            ))
            .await
            .expect("remove the fault");
    }
}

/// A fresh database with its schema, a log reaching it through a proxy of
/// its own (as the superuser), and the test's own connection to it.
async fn log_and_admin_through_a_proxy(cluster: &Cluster) -> (Proxy, Log, tokio_postgres::Client) {
    let (dbname, url) = fresh(cluster).await;
    drop(connect(&url).await.unwrap()); // the schema
    let (proxy, via) = through_a_proxy(cluster, &url);
    let log = connect(&via).await.unwrap();
    (proxy, log, cluster.connect(&dbname).await)
}

/// What the proxy counted since `before` (from [`counts`]): the writes
/// that were their own transaction (the one-statement tries), and the
/// explicit transactions (`BEGIN`).
fn cost(proxy: &Proxy, before: (u64, u64)) -> (u64, u64) {
    let now = counts(proxy);
    (now.0 - before.0, now.1 - before.1)
}

fn counts(proxy: &Proxy) -> (u64, u64) {
    (proxy.own_commits(), proxy.transactions())
}

/// The SQLSTATE of an `Unavailable` answer's server error.
pub(crate) fn unavailable_code<T: std::fmt::Debug>(
    answer: &Result<T, LogError>,
) -> Option<&SqlState> {
    let Err(LogError::Unavailable(error)) = answer else {
        panic!("not Unavailable: {answer:?}");
    };
    error
        .downcast_ref::<baton::durable::tokio_postgres::Error>()
        .and_then(|error| error.code())
}

/// The facts of `(ROOT, "run")`: its epoch and how many pauses it has.
async fn epoch_and_pauses(log: &Log) -> (Epoch, usize) {
    let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
    (read.epoch, read.pauses.len())
}

/// A claim and an append whose tries fail with `code` (a serialization
/// failure or a deadlock, planted) run again, and then succeed, each
/// failure costing exactly one more try on the wire, and the result is
/// what one try would have made: the epochs issued once each, the pause
/// durable once.
async fn a_failure_runs_again_then_succeeds_once(cluster: &Cluster, code: &str, state: &SqlState) {
    let (proxy, log, admin) = log_and_admin_through_a_proxy(cluster).await;

    // A Run's first claim: its one statement fails once, and runs again.
    let fault = Fault::plant(&admin, "first_claim", "INSERT ON baton_run", code, 1).await;
    let before = counts(&proxy);
    let claimed = within("R5", log.claim_async(ROOT, "run")).await;
    assert!(
        matches!(claimed, Ok(Claim::Owner(epoch)) if epoch == Epoch::new(1)),
        "{state:?} once at a first claim: run again, epoch 1 issued once: {claimed:?}"
    );
    assert_eq!(
        cost(&proxy, before),
        (2, 0),
        "{state:?} at a first claim: the failed statement, and one more"
    );
    assert_eq!(fault.fired().await, 2);
    fault.remove().await;

    // A takeover's claim runs its transaction (the statement's insert
    // finds the Run's row): the epoch's update fails twice, with the
    // COMMIT sent beside it, and the whole try runs again each time.
    let fault = Fault::plant(&admin, "takeover", "UPDATE ON baton_run", code, 2).await;
    let before = counts(&proxy);
    let claimed = within("R5", log.claim_async(ROOT, "run")).await;
    assert!(
        matches!(claimed, Ok(Claim::Owner(epoch)) if epoch == Epoch::new(2)),
        "{state:?} twice at a takeover: run again, epoch 2 issued once: {claimed:?}"
    );
    assert_eq!(
        cost(&proxy, before),
        (3, 3),
        "{state:?} twice at a takeover: three tries, each its statement and its transaction"
    );
    assert_eq!(fault.fired().await, 3);
    fault.remove().await;

    // An append at the current epoch: its one statement fails once.
    let fault = Fault::plant(&admin, "append", "INSERT ON baton_handoff_pause", code, 1).await;
    let before = counts(&proxy);
    let appended = append(&log, Epoch::new(2)).await;
    assert!(
        matches!(appended, Ok(Receipt::Written)),
        "{state:?} once at an append: run again, written: {appended:?}"
    );
    assert_eq!(
        cost(&proxy, before),
        (2, 0),
        "{state:?} at an append: the failed statement, and one more"
    );
    assert_eq!(fault.fired().await, 2);
    fault.remove().await;

    assert_eq!(
        epoch_and_pauses(&log).await,
        (Epoch::new(2), 1),
        "the pause durable once, at epoch 2"
    );
    assert_eq!(
        within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
        Claim::HandedOff(pause())
    );
    assert_eq!(
        append(&log, Epoch::new(2)).await.unwrap(),
        Receipt::AlreadyDurable
    );
}

/// What PostgreSQL retries, pinned (issue 37): a serialization failure
/// (SQLSTATE 40001) runs the operation again (R5: it resolves, here to
/// success), by construction — a trigger raises it at a first claim's
/// statement, a takeover's transaction and an append's statement.
#[test]
fn r5_a_serialization_failure_runs_a_claim_and_an_append_again_and_they_succeed_once() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(a_failure_runs_again_then_succeeds_once(
        cluster,
        "serialization_failure",
        &SqlState::T_R_SERIALIZATION_FAILURE,
    ));
}

/// As the serialization failure's test, for a deadlock (SQLSTATE 40P01).
#[test]
fn r5_a_deadlock_runs_a_claim_and_an_append_again_and_they_succeed_once() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(a_failure_runs_again_then_succeeds_once(
        cluster,
        "deadlock_detected",
        &SqlState::T_R_DEADLOCK_DETECTED,
    ));
}

/// How many times `PostgresLog` runs one operation at most (its private
/// `ATTEMPTS`).
const ATTEMPTS: u64 = 8;

/// A failure with `code` that every try meets: a first claim, a
/// takeover's claim and an append each run `attempts` tries (counted on
/// the wire and by the trigger), then answer `Unavailable` with the
/// server's error; nothing was written, and once the fault is gone the
/// same operation succeeds.
async fn a_failure_that_always_recurs(
    cluster: &Cluster,
    code: &str,
    state: &SqlState,
    attempts: u64,
) {
    let (proxy, log, admin) = log_and_admin_through_a_proxy(cluster).await;
    let always = i64::MAX;
    let tries = i64::try_from(attempts).unwrap();

    let fault = Fault::plant(&admin, "first_claim", "INSERT ON baton_run", code, always).await;
    let before = counts(&proxy);
    let claimed = within("R5", log.claim_async(ROOT, "run")).await;
    assert_eq!(unavailable_code(&claimed), Some(state), "{claimed:?}");
    assert_eq!(
        cost(&proxy, before),
        (attempts, 0),
        "{state:?} at every try of a first claim: {attempts} tries, each its statement"
    );
    assert_eq!(fault.fired().await, tries);
    fault.remove().await;
    assert_eq!(
        epoch_and_pauses(&log).await,
        (Epoch::NONE, 0),
        "none committed"
    );
    assert_eq!(owner(&log).await, Epoch::new(1));

    let fault = Fault::plant(&admin, "takeover", "UPDATE ON baton_run", code, always).await;
    let before = counts(&proxy);
    let claimed = within("R5", log.claim_async(ROOT, "run")).await;
    assert_eq!(unavailable_code(&claimed), Some(state), "{claimed:?}");
    assert_eq!(
        cost(&proxy, before),
        (attempts, attempts),
        "{state:?} at every try of a takeover: {attempts} tries, each its statement and its transaction"
    );
    assert_eq!(fault.fired().await, tries);
    fault.remove().await;
    assert_eq!(
        epoch_and_pauses(&log).await,
        (Epoch::new(1), 0),
        "none committed"
    );

    let fault = Fault::plant(
        &admin,
        "append",
        "INSERT ON baton_handoff_pause",
        code,
        always,
    )
    .await;
    let before = counts(&proxy);
    let appended = append(&log, Epoch::new(1)).await;
    assert_eq!(unavailable_code(&appended), Some(state), "{appended:?}");
    assert_eq!(
        cost(&proxy, before),
        (attempts, 0),
        "{state:?} at every try of an append: {attempts} tries, each its statement"
    );
    assert_eq!(fault.fired().await, tries);
    fault.remove().await;
    assert_eq!(
        epoch_and_pauses(&log).await,
        (Epoch::new(1), 0),
        "none committed"
    );
    assert_eq!(append(&log, Epoch::new(1)).await.unwrap(), Receipt::Written);
}

/// The retries are bounded (R5: every operation resolves): a
/// serialization failure at every try ends in `Unavailable` after the
/// store's 8 attempts, never a hang.
#[test]
fn r5_a_serialization_failure_that_always_recurs_is_unavailable_after_8_attempts() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(a_failure_that_always_recurs(
        cluster,
        "serialization_failure",
        &SqlState::T_R_SERIALIZATION_FAILURE,
        ATTEMPTS,
    ));
}

/// As the serialization failure's, for a deadlock at every try.
#[test]
fn r5_a_deadlock_that_always_recurs_is_unavailable_after_8_attempts() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(a_failure_that_always_recurs(
        cluster,
        "deadlock_detected",
        &SqlState::T_R_DEADLOCK_DETECTED,
        ATTEMPTS,
    ));
}

/// Only those two are run again: any other error the server answers (here
/// a check violation, planted the same way) is `Unavailable` after one
/// try.
#[test]
fn any_other_server_error_is_unavailable_after_one_try_never_run_again() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(a_failure_that_always_recurs(
        cluster,
        "check_violation",
        &SqlState::CHECK_VIOLATION,
        1,
    ));
}
