//! What only `PostgresLog` has: a versioned schema in a shared database, a
//! network between it and the server, and a server that can crash. The
//! contract's own tests run on it in `suite.rs`, unchanged.

use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use baton::durable::tokio_postgres::IsolationLevel;
use baton::durable::tokio_postgres::NoTls;
use baton::durable::tokio_postgres::error::SqlState;
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, POSTGRES_SCHEMA_VERSION, PostgresLog, PostgresOptions,
    PostgresSchema, Receipt, Retirement, RunField,
};
use baton::facts::IdError;

use crate::Payload;
use crate::common::postgres::Cluster;
use crate::common::proxy::{Mode, Proxy};
use crate::common::{self, poll_once, within};
use crate::postgres_store::insert_pause_row;

type Log = PostgresLog<Payload>;

const ROOT: &str = "run";

/// Opens a log on `url` that migrates the schema first (as a test or a
/// development setup does; a fleet migrates as a deploy step).
async fn connect(url: &str) -> Result<Log, LogError> {
    open(url, PostgresOptions::new().migrate(true)).await
}

pub(crate) async fn open(url: &str, options: PostgresOptions) -> Result<Log, LogError> {
    within(
        "R5: a connect resolves",
        PostgresLog::connect_with(url.parse().unwrap(), NoTls, options),
    )
    .await
}

async fn connect_with_timeout(url: &str, timeout: Duration) -> Log {
    open(url, PostgresOptions::new().migrate(true).timeout(timeout))
        .await
        .expect("connect")
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A fresh database of the shared cluster: its name and connection string.
async fn fresh(cluster: &Cluster) -> (String, String) {
    let dbname = cluster.database().await;
    let url = cluster.url(&dbname);
    (dbname, url)
}

async fn owner(log: &Log) -> Epoch {
    match within("R5", log.claim_async(ROOT, "run")).await {
        Ok(Claim::Owner(epoch)) => epoch,
        other => panic!("the Run is not open: {other:?}"),
    }
}

/// A proxy to the cluster, and `url` pointed at it.
fn through_a_proxy(cluster: &Cluster, url: &str) -> (Proxy, String) {
    let proxy = Proxy::start(cluster.port());
    let via = url.replace(
        &format!("port={}", cluster.port()),
        &format!("port={}", proxy.port()),
    );
    (proxy, via)
}

/// A fresh database with its schema, and a log reaching it through a
/// proxy of its own.
pub(crate) async fn log_through_a_proxy(cluster: &Cluster) -> (Proxy, Log) {
    let (_, url) = fresh(cluster).await;
    drop(connect(&url).await.unwrap()); // the schema
    let (proxy, via) = through_a_proxy(cluster, &url);
    (proxy, connect(&via).await.unwrap())
}

/// Appends the test's pause to `(ROOT, run)` under `epoch`, bounded (R5).
async fn append(log: &Log, epoch: Epoch) -> Result<Receipt, LogError> {
    within(
        "R5",
        log.append_async(ROOT, &common::source(), epoch, &pause()),
    )
    .await
}

pub(crate) fn pause() -> common::Pause {
    common::pause_for(common::intent())
}

/// Logs connecting at once to a database without a schema create it once,
/// whole, and record its version; reconnecting leaves it as it is.
#[test]
fn logs_connecting_at_once_create_the_schema_once_and_record_its_version() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let url = Arc::new(url);
        let connects: Vec<_> = (0..6)
            .map(|_| {
                let url = Arc::clone(&url);
                tokio::spawn(async move { connect(&url).await.map(drop) })
            })
            .collect();
        for connecting in connects {
            connecting.await.unwrap().expect("every log connects");
        }
        let log = connect(&url).await.unwrap();
        assert_eq!(owner(&log).await, Epoch::new(1));
        let admin = cluster.connect(&dbname).await;
        let version: i64 = admin
            .query_one("SELECT version FROM baton_schema", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, POSTGRES_SCHEMA_VERSION);
        let rows: i64 = admin
            .query_one("SELECT count(*) FROM baton_schema", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 1, "one version row");
        let debug = format!("{log:?}");
        assert!(
            debug.starts_with("PostgresLog { pool_size: 16, connections: 1,"),
            "{debug}"
        );
    });
}

/// A database recording a newer schema version, or holding baton's table
/// names without a version, is refused with a typed error, never guessed.
#[test]
fn an_unknown_schema_version_or_a_foreign_table_is_a_typed_error() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        drop(connect(&url).await.unwrap());
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("UPDATE baton_schema SET version = 99")
            .await
            .unwrap();
        assert!(matches!(
            connect(&url).await,
            Err(LogError::UnknownSchema {
                found: 99,
                expected: POSTGRES_SCHEMA_VERSION
            })
        ));

        let (dbname, url) = fresh(cluster).await;
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("CREATE TABLE baton_run (x integer)")
            .await
            .unwrap();
        assert!(matches!(
            connect(&url).await,
            Err(LogError::UnknownSchema { found: 0, .. })
        ));
    });
}

/// A row altered outside baton is reported corrupt, never decoded into a
/// decision; text the server cannot store (a NUL in the source's session
/// id) is refused as bad input before the server sees it, and writes
/// nothing.
#[test]
fn a_row_altered_outside_baton_is_corrupt_and_text_the_server_refuses_is_a_typed_error() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        let epoch = owner(&log).await;
        let mut nul = common::source();
        nul.session_id = "session\u{0}".into();
        assert!(matches!(
            within("R5", log.append_async(ROOT, &nul, epoch, &pause())).await,
            Err(LogError::InvalidRun {
                field: RunField::SessionId,
                error: IdError::ControlCharacter
            })
        ));
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert!(read.pauses.is_empty(), "nothing written");

        let _ = append(&log, epoch).await.unwrap();
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("UPDATE baton_handoff_pause SET handoff_id = 'forged'")
            .await
            .unwrap();
        assert!(matches!(
            within("R5", log.facts_async(ROOT, "run")).await,
            Err(LogError::Corrupt { .. })
        ));
        assert!(
            matches!(
                within("R5", log.claim_async(ROOT, "run")).await,
                Err(LogError::Corrupt { .. })
            ),
            "a claim never decides on a corrupt row"
        );
        admin
            .batch_execute(
                "UPDATE baton_handoff_pause SET handoff_id = 'handoff', \
                 pause = json_build_object('intent', 7)",
            )
            .await
            .unwrap();
        assert!(matches!(
            within("R5", log.facts_async(ROOT, "run")).await,
            Err(LogError::Corrupt { .. })
        ));
    });
}

/// The lost reply of SPEC §6, for real: the COMMIT of an append reaches
/// the server, which commits, and the reply never comes back (the proxy
/// closes the connection instead). The append answers `OutcomeUnknown`;
/// the same log, reconnecting, reads the facts, which resolve
/// it (the pause is durable), and the identical append again is
/// `AlreadyDurable`.
#[test]
fn a_lost_commit_reply_is_an_unknown_outcome_that_the_facts_resolve() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (proxy, log) = log_through_a_proxy(cluster).await;
        let epoch = owner(&log).await;
        proxy.lose_next_commit_reply();
        let appended = append(&log, epoch).await;
        assert!(
            matches!(appended, Err(LogError::OutcomeUnknown(_))),
            "{appended:?}"
        );
        assert_eq!(proxy.lost_replies(), 1, "the reply to the COMMIT was lost");
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(read.pauses.len(), 1, "the append had committed");
        assert_eq!(append(&log, epoch).await.unwrap(), Receipt::AlreadyDurable);
    });
}

/// The one-statement form (issue 23): a Run's first claim and an append
/// at the current epoch each reach the server as one write that is its
/// own transaction, with no `BEGIN`; a takeover's claim tries that write
/// (no row affected: the Run has one) and then runs its transaction. The
/// answers would be the same if the one-statement form always fell back,
/// only slower: this is the test that tells them apart.
#[test]
fn a_first_claim_and_an_append_at_the_current_epoch_are_one_statement_each() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (proxy, log) = log_through_a_proxy(cluster).await;
        let (begun, own) = (proxy.transactions(), proxy.own_commits());
        let epoch = owner(&log).await;
        assert_eq!(
            (proxy.transactions() - begun, proxy.own_commits() - own),
            (0, 1),
            "a first claim: one statement, no transaction"
        );
        assert_eq!(append(&log, epoch).await.unwrap(), Receipt::Written);
        assert_eq!(
            (proxy.transactions() - begun, proxy.own_commits() - own),
            (0, 2),
            "an append at the current epoch: one statement, no transaction"
        );
        assert!(matches!(
            within("R5", log.claim_async(ROOT, "run")).await,
            Ok(Claim::HandedOff(_))
        ));
        assert_eq!(
            (proxy.transactions() - begun, proxy.own_commits() - own),
            (1, 3),
            "a claim of a Run with a row (here handed off): the statement, then the transaction"
        );
    });
}

/// A connection lost before the commit means nothing committed: the
/// operation runs again on a new connection and answers, without the
/// caller seeing the loss. Decided by construction: the log's claim waits
/// on the server for a Run's row lock another session holds, and the
/// server ends the log's connection under it (`pg_terminate_backend`);
/// once the lock is let go, the claim — run again — issues epoch 2, once.
#[test]
fn a_connection_lost_before_the_commit_is_retried_on_a_new_connection() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        assert_eq!(owner(&log).await, Epoch::new(1));
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("BEGIN; SELECT 1 FROM baton_run WHERE run_id = 'run' FOR UPDATE")
            .await
            .unwrap();
        let mut claim = pin!(log.claim_async(ROOT, "run"));
        let waiting = tokio::time::timeout(Duration::from_millis(300), claim.as_mut()).await;
        assert!(waiting.is_err(), "the claim waits for the row lock");
        let ended = Cluster::end_sessions(&admin, &dbname).await;
        assert_eq!(ended, 1, "the log's one connection, under the claim");
        let released = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            admin.batch_execute("COMMIT").await.unwrap();
        };
        let (claimed, ()) = within("R5", async { tokio::join!(claim, released) }).await;
        assert_eq!(
            claimed.unwrap(),
            Claim::Owner(Epoch::new(2)),
            "the claim ran again, once, on a new connection"
        );
        assert_eq!(owner(&log).await, Epoch::new(3));
    });
}

/// A partition nobody is told of (the proxy holds every byte): the
/// operation answers `OutcomeUnknown` once its timeout has passed (it had
/// sent its transaction's first statements), never hangs;
/// the server ends the cut-off transaction (its idle and lock timeouts are
/// the log's), so another host's claim goes through; once healed, the cut
/// off log works again.
#[test]
fn a_blackholed_operation_times_out_and_its_row_lock_does_not_outlive_the_timeout() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (_, url) = fresh(cluster).await;
        let timeout = Duration::from_millis(800);
        let direct = connect_with_timeout(&url, timeout).await;
        assert_eq!(owner(&direct).await, Epoch::new(1));
        let (proxy, via) = through_a_proxy(cluster, &url);
        let cut_off = connect_with_timeout(&via, timeout).await;
        proxy.set(Mode::Delay);
        proxy.set_delay(Duration::from_millis(150));
        // The claim's BEGIN and row lock get through, slowly; then the
        // partition: it holds the lock, unanswered.
        let claiming = tokio::spawn(async move {
            let answer = cut_off.claim_async(ROOT, "run").await;
            (cut_off, answer)
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        proxy.set(Mode::Blackhole);
        let started = Instant::now();
        let (cut_off, answer) = within("R5: the cut-off claim answers", claiming)
            .await
            .unwrap();
        assert!(
            matches!(answer, Err(LogError::OutcomeUnknown(_))),
            "{answer:?}"
        );
        assert!(started.elapsed() < timeout * 2);
        // The other host's claim waits at most for the server to end the
        // cut-off transaction.
        let epoch = owner(&direct).await;
        assert!(epoch >= Epoch::new(2), "{epoch}");
        proxy.set(Mode::Forward);
        let healed = owner(&cut_off).await;
        assert!(healed > epoch, "the healed log works again");
    });
}

/// The server crashes (`pg_ctl -m immediate`, then SIGKILL of the
/// postmaster) and restarts: a read meanwhile answers `Unavailable`
/// promptly (a read writes nothing, so its outcome is never unknown), every acknowledged write survives, and the same log, its
/// connection reopened, goes on.
#[test]
fn acknowledged_writes_survive_server_crashes_and_the_log_reconnects() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    runtime().block_on(async {
        let (_, url) = fresh(&cluster).await;
        let log = connect_with_timeout(&url, Duration::from_secs(3)).await;
        let epoch = owner(&log).await;
        let mut second = common::source();
        second.run_id = "second".into();
        let mut onward = pause();
        std::sync::Arc::make_mut(&mut onward.intent).successor_run_id = "third".into();
        std::sync::Arc::make_mut(&mut onward.intent).successor_invocation_id = "third-i".into();
        assert_eq!(append(&log, epoch).await.unwrap(), Receipt::Written);
        tokio::task::block_in_place(|| cluster.crash());
        assert!(matches!(
            within("R5", log.facts_async(ROOT, "run")).await,
            Err(LogError::Unavailable(_))
        ));
        // The read closed the pool's dead connection: while the server is
        // down every write is refused a connection, so nothing was sent,
        // and a log cannot open either.
        let claimed = within("R5", log.claim_async(ROOT, "second")).await;
        assert!(
            matches!(claimed, Err(LogError::Unavailable(_))),
            "{claimed:?}"
        );
        let appended = append(&log, epoch).await;
        assert!(
            matches!(appended, Err(LogError::Unavailable(_))),
            "{appended:?}"
        );
        assert!(matches!(
            open(&url, PostgresOptions::new()).await,
            Err(LogError::Unavailable(_))
        ));
        tokio::task::block_in_place(|| cluster.restart());
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::HandedOff(pause()),
            "the acknowledged append survived the crash"
        );
        let Ok(Claim::Owner(next)) = within("R5", log.claim_async(ROOT, "second")).await else {
            panic!("open");
        };
        assert_eq!(
            within("R5", log.append_async(ROOT, &second, next, &onward))
                .await
                .unwrap(),
            Receipt::Written
        );
        tokio::task::block_in_place(|| {
            cluster.kill_postmaster();
            cluster.restart();
        });
        let read = within("R5", log.facts_async(ROOT, "second")).await.unwrap();
        assert_eq!(read.epoch, next);
        assert_eq!(
            read.pauses.len(),
            1,
            "it survived SIGKILL of the postmaster"
        );
    });
}

/// Polled outside a tokio runtime, an operation answers `Unavailable` at
/// once (nothing was sent): no panic.
#[test]
fn an_operation_outside_a_tokio_runtime_is_a_typed_error_not_a_panic() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    let log = runtime().block_on(async {
        let (_, url) = fresh(cluster).await;
        connect(&url).await.unwrap()
    });
    let claimed = poll_once(pin!(log.claim_async(ROOT, "run")));
    assert!(
        matches!(claimed, Poll::Ready(Err(LogError::Unavailable(ref e))) if e.to_string().contains("tokio runtime")),
        "{claimed:?}"
    );
}

/// Opening a log runs no DDL (issue 34): on a database without the schema
/// it answers `UnknownSchema { found: 0 }` and creates nothing; once the
/// operator has migrated (here `PostgresSchema::migrate`, the explicit
/// step), the same options open it.
#[test]
fn opening_a_log_runs_no_ddl_and_a_database_is_refused_until_migrated() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        assert!(matches!(
            open(&url, PostgresOptions::new()).await,
            Err(LogError::UnknownSchema {
                found: 0,
                expected: POSTGRES_SCHEMA_VERSION
            })
        ));
        let admin = cluster.connect(&dbname).await;
        let tables: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'baton%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(tables, 0, "opening created nothing");
        PostgresSchema::search_path()
            .migrate(&admin)
            .await
            .expect("the explicit migrate step");
        PostgresSchema::search_path()
            .migrate(&admin)
            .await
            .expect("migrating again changes nothing");
        let log = open(&url, PostgresOptions::new()).await.expect("migrated");
        assert_eq!(owner(&log).await, Epoch::new(1));
    });
}

/// The SQL of every version, exported for other migration tools, applied
/// by hand (each script in a transaction of its own, as such a tool does)
/// in a named schema: a log told that schema opens on it without
/// migrating, and keeps its tables there and nowhere else.
#[test]
fn the_exported_migrations_applied_by_another_tool_make_a_schema_the_log_opens() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let schema = PostgresSchema::named("fleet").unwrap();
        let admin = cluster.connect(&dbname).await;
        admin.batch_execute("CREATE SCHEMA fleet").await.unwrap();
        for script in schema.migrations() {
            admin
                .batch_execute(&format!("BEGIN; {script} COMMIT;"))
                .await
                .unwrap();
        }
        let log = open(&url, PostgresOptions::new().schema(schema.clone()))
            .await
            .expect("the log opens on the schema another tool made");
        assert_eq!(owner(&log).await, Epoch::new(1));
        assert_eq!(append(&log, Epoch::new(1)).await.unwrap(), Receipt::Written);
        let placed: Vec<String> = admin
            .query(
                "SELECT schemaname || '.' || tablename FROM pg_tables \
                 WHERE tablename LIKE 'baton%' ORDER BY 1",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(
            placed,
            [
                "fleet.baton_handoff_pause",
                "fleet.baton_root",
                "fleet.baton_run",
                "fleet.baton_schema"
            ]
        );
        assert!(
            matches!(
                open(&url, PostgresOptions::new()).await,
                Err(LogError::UnknownSchema { found: 0, .. })
            ),
            "the search_path's schema has no tables"
        );
    });
}

/// Schema version 2 (no foreign key from the pause to its Run), and the
/// versions after it, upgrade a database of version 1 in place: written as
/// version 1's SQL made it,
/// with an open Run at epoch 2 and a handed-off Run, it is migrated when
/// a log opens with `migrate`, the key is gone, and every fact is kept:
/// the open Run's next claim issues epoch 3, the handed-off Run stays
/// handed off (R1).
#[test]
fn a_version_1_database_is_upgraded_in_place_and_keeps_its_facts() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let admin = cluster.connect(&dbname).await;
        let version_1 = &PostgresSchema::search_path().migrations()[0];
        admin.batch_execute(version_1).await.unwrap();
        admin
            .execute(
                "INSERT INTO baton_run VALUES ('run', 'open', 2), ('run', 'run', 1)",
                &[],
            )
            .await
            .unwrap();
        let handoff = pause();
        insert_pause_row(
            &admin,
            "baton_handoff_pause",
            ROOT,
            &common::source(),
            &handoff,
            1,
        )
        .await;
        let foreign_keys = async || -> i64 {
            admin
                .query_one(
                    "SELECT count(*) FROM pg_constraint \
                     WHERE conrelid = 'baton_handoff_pause'::regclass AND contype = 'f'",
                    &[],
                )
                .await
                .unwrap()
                .get(0)
        };
        assert_eq!(foreign_keys().await, 1, "version 1 has the key");
        assert!(matches!(
            open(&url, PostgresOptions::new()).await,
            Err(LogError::UnknownSchema { found: 1, .. })
        ));
        let log = connect(&url)
            .await
            .expect("migrated to the current version");
        assert_eq!(foreign_keys().await, 0, "version 2 (and on) has none");
        let version: i64 = admin
            .query_one("SELECT version FROM baton_schema", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, POSTGRES_SCHEMA_VERSION);
        assert_eq!(
            within("R5", log.claim_async(ROOT, "open")).await.unwrap(),
            Claim::Owner(Epoch::new(3))
        );
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::HandedOff(pause()),
            "R1: a handed-off Run stays handed off across the upgrade"
        );
    });
}

/// A role with only `USAGE` on the schema and `SELECT`, `INSERT` and
/// `UPDATE` on the tables runs the log (the contract suite runs as such a
/// role, see `main.rs`), but cannot migrate: asked to, it answers
/// `Unavailable` (permission denied, nothing changed).
#[test]
fn a_role_with_only_dml_rights_cannot_migrate_and_the_refusal_is_unavailable() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, _) = fresh(cluster).await;
        let url = crate::postgres_store::dml_only(cluster, &dbname).await;
        let schema = PostgresSchema::named(crate::postgres_store::SCHEMA).unwrap();
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute(&format!(
                "UPDATE {}.baton_schema SET version = 1",
                crate::postgres_store::SCHEMA
            ))
            .await
            .unwrap();
        let refused = open(&url, PostgresOptions::new().schema(schema).migrate(true)).await;
        let Err(LogError::Unavailable(error)) = &refused else {
            panic!("{refused:?}");
        };
        let code = error
            .downcast_ref::<baton::durable::tokio_postgres::Error>()
            .and_then(|error| error.code());
        assert_eq!(
            code,
            Some(&baton::durable::tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{refused:?}"
        );
        let version: i64 = admin
            .query_one(
                &format!(
                    "SELECT version FROM {}.baton_schema",
                    crate::postgres_store::SCHEMA
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, 1, "the refused migration changed nothing");
    });
}

/// No head-of-line blocking (issue 34), decided by construction: another
/// session holds one Run's row lock, and the log's claim of that Run waits
/// for it (as it must); meanwhile 100 other Runs claim and append through
/// the same log, and every one of them finishes while the lock is still
/// held (the blocked claim is still pending when the last one is done).
/// With one connection per log they would all wait behind it.
#[test]
fn one_runs_row_lock_held_elsewhere_delays_no_other_runs_operations() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = Arc::new(connect(&url).await.unwrap());
        assert!(matches!(
            within("R5", log.claim_async(ROOT, "held")).await,
            Ok(Claim::Owner(_))
        ));
        let admin = cluster.connect(&dbname).await;
        admin
            .batch_execute("BEGIN; SELECT 1 FROM baton_run WHERE run_id = 'held' FOR UPDATE")
            .await
            .unwrap();
        let blocked = tokio::spawn({
            let log = Arc::clone(&log);
            async move { log.claim_async(ROOT, "held").await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!blocked.is_finished(), "the claim waits for the row lock");
        let started = Instant::now();
        let others: Vec<_> = (0..100)
            .map(|i| {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let mut source = common::source();
                    source.run_id = format!("other-{i}");
                    let Ok(Claim::Owner(epoch)) = log.claim_async(ROOT, &source.run_id).await
                    else {
                        panic!("a fresh Run is open");
                    };
                    log.append_async(ROOT, &source, epoch, &pause()).await
                })
            })
            .collect();
        let done = tokio::time::timeout(Duration::from_secs(3), async {
            for other in others {
                assert_eq!(other.await.unwrap().unwrap(), Receipt::Written);
            }
        })
        .await;
        assert!(
            done.is_ok(),
            "100 other Runs did not finish within 3 s while one Run's row lock was held"
        );
        let took = started.elapsed();
        assert!(
            !blocked.is_finished(),
            "the lock was held throughout (the blocked claim still waits)"
        );
        admin.batch_execute("COMMIT").await.unwrap();
        assert_eq!(
            within("R5", blocked).await.unwrap().unwrap(),
            Claim::Owner(Epoch::new(2))
        );
        eprintln!("100 Runs claimed and appended in {took:?} beside a held row lock");
    });
}

/// One pooled connection cut off (the proxy holds every byte of the
/// connections live at that moment, and forwards new ones): the operation
/// that gets it answers `OutcomeUnknown` at its timeout, and every other
/// Run's operation goes on over the rest of the pool meanwhile.
#[test]
fn one_blackholed_pooled_connection_delays_no_other_run() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (_, url) = fresh(cluster).await;
        drop(connect(&url).await.unwrap()); // the schema
        let (proxy, via) = through_a_proxy(cluster, &url);
        let timeout = Duration::from_secs(2);
        let log = Arc::new(
            open(&via, PostgresOptions::new().timeout(timeout))
                .await
                .unwrap(),
        );
        // The pool holds the one connection opening made, idle.
        assert_eq!(proxy.blackhole_live(), 1);
        let started = Instant::now();
        let runs: Vec<_> = (0..20)
            .map(|i| {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let answer = log.claim_async(ROOT, &format!("run-{i}")).await;
                    (answer, Instant::now())
                })
            })
            .collect();
        let mut unknown = 0;
        let mut slowest_other = Duration::ZERO;
        for run in runs {
            let (answer, at) = within("R5", run).await.unwrap();
            match answer {
                Ok(Claim::Owner(_)) => slowest_other = slowest_other.max(at - started),
                Err(LogError::OutcomeUnknown(_)) => {
                    unknown += 1;
                    assert!(at - started >= timeout, "it waited out its timeout");
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            unknown, 1,
            "exactly the operation on the cut-off connection"
        );
        assert!(
            slowest_other < timeout / 2,
            "the other Runs went on over the rest of the pool ({slowest_other:?})"
        );
    });
}

/// What PostgreSQL retries, pinned (issue 37), counted on the wire by the
/// proxy: a refusal (`Fenced`, `AlreadyHandedOff`, `EpochNotIssued`) costs
/// its one-statement try and exactly one transaction, never another; bad
/// input sends nothing; a connection lost once the write was sent is never
/// run again (`OutcomeUnknown`, one write on the wire).
#[test]
fn a_refusal_runs_one_transaction_and_a_write_whose_reply_is_lost_is_never_sent_again() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (proxy, log) = log_through_a_proxy(cluster).await;
        let cost = |before: (u64, u64)| {
            (
                proxy.own_commits() - before.0,
                proxy.transactions() - before.1,
            )
        };
        let now = || (proxy.own_commits(), proxy.transactions());
        let first = owner(&log).await;
        let second = owner(&log).await;
        assert_eq!((first, second), (Epoch::new(1), Epoch::new(2)));

        let before = now();
        assert!(matches!(
            append(&log, first).await,
            Err(LogError::Fenced { .. })
        ));
        assert_eq!(cost(before), (1, 1), "Fenced: its try, one transaction");

        let before = now();
        assert!(matches!(
            append(&log, Epoch::new(9)).await,
            Err(LogError::EpochNotIssued { .. })
        ));
        assert_eq!(
            cost(before),
            (1, 1),
            "EpochNotIssued: its try, one transaction"
        );

        let mut invalid = common::source();
        invalid.session_id = String::new();
        let before = now();
        assert!(matches!(
            within("R5", log.append_async(ROOT, &invalid, second, &pause())).await,
            Err(LogError::InvalidRun { .. })
        ));
        assert_eq!(cost(before), (0, 0), "bad input: nothing sent");

        let before = now();
        assert_eq!(append(&log, second).await.unwrap(), Receipt::Written);
        assert_eq!(
            cost(before),
            (1, 0),
            "an append at the current epoch: one statement"
        );

        let mut other = pause();
        std::sync::Arc::make_mut(&mut other.intent).handoff_id = "another".into();
        let before = now();
        assert!(matches!(
            within(
                "R5",
                log.append_async(ROOT, &common::source(), second, &other)
            )
            .await,
            Err(LogError::AlreadyHandedOff { .. })
        ));
        assert_eq!(
            cost(before),
            (1, 1),
            "AlreadyHandedOff: its try, one transaction"
        );

        let mut lost = common::source();
        lost.run_id = "lost".into();
        let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async(ROOT, "lost")).await else {
            panic!("a fresh Run is open");
        };
        proxy.lose_next_commit_reply();
        let before = now();
        let answer = within("R5", log.append_async(ROOT, &lost, epoch, &pause())).await;
        assert!(
            matches!(answer, Err(LogError::OutcomeUnknown(_))),
            "{answer:?}"
        );
        assert_eq!(proxy.lost_replies(), 1);
        assert_eq!(
            cost(before),
            (1, 0),
            "a write whose reply was lost is sent once, never again"
        );
    });
}

/// R6 at the edge, where every store agrees: the log issues its last epoch
/// at `Epoch::LAST` (`i64::MAX`, the largest its `bigint` column holds),
/// then answers the next claim `EpochsExhausted` and writes nothing; the
/// last epoch still appends. (The facts being one snapshot is the contract
/// harness's `r3_the_facts_are_one_snapshot_…`, run on every PostgreSQL
/// store through `HoldsReads`.)
#[test]
fn r6_the_last_epoch_is_epoch_last_and_a_claim_past_it_writes_nothing() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        assert_eq!(owner(&log).await, Epoch::new(1));
        let admin = cluster.connect(&dbname).await;
        admin
            .execute("UPDATE baton_run SET epoch = $1", &[&(i64::MAX - 1)])
            .await
            .unwrap();
        assert_eq!(owner(&log).await, Epoch::LAST, "the last epoch is issued");
        assert!(matches!(
            within("R5", log.claim_async(ROOT, "run")).await,
            Err(LogError::EpochsExhausted)
        ));
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!((read.epoch, read.pauses.len()), (Epoch::LAST, 0));
        assert_eq!(append(&log, Epoch::LAST).await.unwrap(), Receipt::Written);
    });
}

/// A fault the test plants on the log's tables, by construction (issue
/// 37): a row trigger (`BEFORE <event> ON <table>`) that raises the
/// condition `code` the first `times` times it fires, then lets the row
/// through. It counts its firings with a sequence, whose `nextval` is not
/// rolled back with the failing statement's transaction (a counting row
/// would be). Planted as the database's owner (the superuser the fixture
/// gives, as which the proxied logs of these tests run too).
struct Fault<'a> {
    admin: &'a tokio_postgres::Client,
    name: &'static str,
}

impl<'a> Fault<'a> {
    async fn plant(
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
    async fn fired(&self) -> i64 {
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
    async fn remove(self) {
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
fn unavailable_code<T: std::fmt::Debug>(answer: &Result<T, LogError>) -> Option<&SqlState> {
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

// --- The third fate and retention (issue 35): SPEC R8, R9, R10. ---

/// An outcome other than [`common::execution`] (the one these tests
/// finish with).
fn other_outcome() -> Payload {
    let mut outcome = common::execution();
    outcome.supports_vision = true;
    outcome
}

/// The invocation of the Run `run` (of [`ROOT`]).
fn source_of(run: &str) -> baton::Invocation {
    let mut source = common::source();
    source.run_id = run.into();
    source
}

/// Finishes `(ROOT, run)` under `epoch` with `outcome`, bounded (R5).
async fn finish(
    log: &Log,
    run: &str,
    epoch: Epoch,
    outcome: &Payload,
) -> Result<Receipt, LogError> {
    within(
        "R5",
        log.finish_async(ROOT, &source_of(run), epoch, outcome),
    )
    .await
}

/// Claims `(ROOT, run)`, which must be open: its new epoch.
async fn owner_of(log: &Log, run: &str) -> Epoch {
    match within("R5", log.claim_async(ROOT, run)).await {
        Ok(Claim::Owner(epoch)) => epoch,
        other => panic!("the Run {run} is not open: {other:?}"),
    }
}

/// Claims and finishes `successor-run`, the successor the shared pause
/// names, so that the handoff's root may be retired (G5).
async fn finish_the_successor(log: &Log) {
    let epoch = owner_of(log, "successor-run").await;
    assert_eq!(
        finish(log, "successor-run", epoch, &common::execution())
            .await
            .unwrap(),
        Receipt::Written
    );
}

/// How many rows `table` holds for the root Run [`ROOT`].
async fn rows_of(admin: &tokio_postgres::Client, table: &str) -> i64 {
    admin
        .query_one(
            &format!("SELECT count(*) FROM {table} WHERE root_run_id = $1"),
            &[&ROOT],
        )
        .await
        .unwrap()
        .get(0)
}

/// The rows the log keeps for [`ROOT`]: in `baton_run`,
/// `baton_handoff_pause`, and `baton_root` (its lock row, or tombstone).
async fn rows(admin: &tokio_postgres::Client) -> (i64, i64, i64) {
    (
        rows_of(admin, "baton_run").await,
        rows_of(admin, "baton_handoff_pause").await,
        rows_of(admin, "baton_root").await,
    )
}

/// R8 on PostgreSQL: a finish is fenced exactly as an append (a stale
/// epoch's finish is `Fenced`, the identical finish again `AlreadyDurable`,
/// another outcome `AlreadyFinished`), a finished Run takes no pause (an
/// append at its epoch — the one-statement form first — is
/// `AlreadyFinished`), and a claim answers `Finished` and issues no epoch.
/// Then the race the one-statement append must lose: an append waits for
/// the Run's row lock another session holds, that session writes the
/// Run's finish and commits, and the append — its statement re-reading
/// the locked row — answers `AlreadyFinished`, writing nothing.
#[test]
fn r8_a_finished_run_is_never_resumed_and_a_finish_is_fenced_as_an_append() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        let admin = cluster.connect(&dbname).await;
        let first = owner(&log).await;
        let second = owner(&log).await;
        let outcome = common::execution();
        assert!(
            matches!(
                finish(&log, "run", first, &outcome).await,
                Err(LogError::Fenced { epoch, current }) if epoch == first && current == second
            ),
            "R8: a stale epoch's finish is fenced"
        );
        assert!(matches!(
            finish(&log, "run", Epoch::new(9), &outcome).await,
            Err(LogError::EpochNotIssued { .. })
        ));
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(read.finished, None, "nothing written");
        assert_eq!(
            finish(&log, "run", second, &outcome).await.unwrap(),
            Receipt::Written
        );
        assert_eq!(
            finish(&log, "run", second, &outcome).await.unwrap(),
            Receipt::AlreadyDurable,
            "the identical finish again is idempotent"
        );
        assert!(matches!(
            finish(&log, "run", second, &other_outcome()).await,
            Err(LogError::AlreadyFinished { .. })
        ));
        assert!(
            matches!(
                append(&log, second).await,
                Err(LogError::AlreadyFinished { .. })
            ),
            "R8: a finished Run takes no pause"
        );
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::Finished(outcome.clone()),
            "R8: a finished Run is never resumed"
        );
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(read.epoch, second, "no epoch issued after the finish");
        assert_eq!(read.pauses.len(), 0);
        assert_eq!(read.finished.map(|f| f.outcome), Some(outcome.clone()));

        // The race: a finish commits while an append waits for the row.
        let epoch = owner_of(&log, "raced").await;
        admin
            .batch_execute("BEGIN; SELECT 1 FROM baton_run WHERE run_id = 'raced' FOR UPDATE")
            .await
            .unwrap();
        let (source, handoff) = (source_of("raced"), pause());
        let mut appending = pin!(log.append_async(ROOT, &source, epoch, &handoff));
        let waiting = tokio::time::timeout(Duration::from_millis(300), appending.as_mut()).await;
        assert!(waiting.is_err(), "the append waits for the Run's row lock");
        let json = serde_json::to_string(&outcome).unwrap();
        admin
            .execute(
                "UPDATE baton_run SET finish_session_id = 'session', finish_turn_id = 'turn', \
                 finish_invocation_id = 'invocation', outcome = CAST($1::text AS json) \
                 WHERE run_id = 'raced'",
                &[&json],
            )
            .await
            .unwrap();
        admin.batch_execute("COMMIT").await.unwrap();
        let appended = within("R5", appending).await;
        assert!(
            matches!(appended, Err(LogError::AlreadyFinished { .. })),
            "R8: an append that waited for a finish's commit is refused: {appended:?}"
        );
        let read = within("R5", log.facts_async(ROOT, "raced")).await.unwrap();
        assert_eq!((read.pauses.len(), read.finished.is_some()), (0, true));
    });
}

/// R9 on PostgreSQL: a root Run with an open Run is not retired
/// (`RunOpen`, nothing written); once every Run of it is final it is, and
/// then a claim of any Run under it — an old one or a new one — answers
/// `Retired` and issues nothing, and a zombie's append or finish under an
/// epoch it held answers `Retired` and writes nothing; retiring again is
/// `AlreadyRetired`.
#[test]
fn r9_a_root_is_retired_only_once_final_and_then_nothing_under_it_is_resumed_or_written() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        let admin = cluster.connect(&dbname).await;
        let epoch = owner(&log).await;
        let other = owner_of(&log, "other").await;
        let before = rows(&admin).await;
        assert!(
            matches!(
                within("R5", log.retire_async(ROOT)).await,
                Err(LogError::RunOpen { ref run_id, .. }) if run_id == "other"
            ),
            "R9: a root Run with open Runs is not retired"
        );
        assert_eq!(rows(&admin).await, before, "nothing written");
        assert_eq!(append(&log, epoch).await.unwrap(), Receipt::Written);
        assert!(matches!(
            within("R5", log.retire_async(ROOT)).await,
            Err(LogError::RunOpen { ref run_id, .. }) if run_id == "other"
        ));
        assert_eq!(
            finish(&log, "other", other, &common::execution())
                .await
                .unwrap(),
            Receipt::Written
        );
        assert!(
            matches!(
                within("R5", log.retire_async(ROOT)).await,
                Err(LogError::RunOpen { ref run_id, .. }) if run_id == "successor-run"
            ),
            "G5: the handoff's successor is not claimed yet"
        );
        finish_the_successor(&log).await;
        assert_eq!(
            within("R5", log.retire_async(ROOT)).await.unwrap(),
            Retirement::Retired { runs: 3 }
        );
        for run in ["run", "other", "successor-run", "new"] {
            assert_eq!(
                within("R5", log.claim_async(ROOT, run)).await.unwrap(),
                Claim::Retired,
                "R9: no Run under a retired root is resumed ({run})"
            );
        }
        assert!(
            matches!(append(&log, epoch).await, Err(LogError::Retired { .. })),
            "R9: a zombie's append under a retired root is refused"
        );
        assert!(
            matches!(
                finish(&log, "other", other, &common::execution()).await,
                Err(LogError::Retired { .. })
            ),
            "R9: a zombie's finish under a retired root is refused"
        );
        let read = within("R5", log.facts_async(ROOT, "other")).await.unwrap();
        assert!(read.retired);
        assert_eq!(
            (read.epoch, read.pauses.len(), read.finished),
            (Epoch::NONE, 0, None)
        );
        assert_eq!(
            rows(&admin).await,
            (0, 0, 1),
            "nothing written under the tombstone"
        );
        assert_eq!(
            within("R5", log.retire_async(ROOT)).await.unwrap(),
            Retirement::AlreadyRetired
        );
        // G5: a root Run the log holds nothing for has not ended: its
        // retirement is refused, as in every store, and leaves no row (the
        // root's lock row it made is rolled back), so its first claim is
        // an owner's.
        assert!(matches!(
            within("R5", log.retire_async("never")).await,
            Err(LogError::NothingToRetire { ref root_run_id }) if root_run_id == "never"
        ));
        let roots: i64 = admin
            .query_one(
                "SELECT count(*) FROM baton_root WHERE root_run_id = 'never'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(roots, 0, "G3: the refusal wrote nothing");
        assert_eq!(
            within("R5", log.claim_async("never", "run")).await.unwrap(),
            Claim::Owner(Epoch::new(1))
        );
    });
}

/// R10 on PostgreSQL, counted in each table: after a retirement the log
/// keeps, of the root Run, its one tombstone (its `baton_root` row,
/// retired) and no Run's row, pause or finish; another root Run's rows
/// are left as they were.
#[test]
fn r10_after_retirement_only_the_tombstone_remains() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        let admin = cluster.connect(&dbname).await;
        let epoch = owner(&log).await;
        assert_eq!(append(&log, epoch).await.unwrap(), Receipt::Written);
        // The handoff's successor, and another Run (G5: both end).
        for run in ["a", "successor-run"] {
            let epoch = owner_of(&log, run).await;
            let _ = owner_of(&log, run).await; // a takeover first
            assert!(matches!(
                finish(&log, run, epoch, &common::execution()).await,
                Err(LogError::Fenced { .. })
            ));
            let epoch = owner_of(&log, run).await;
            let _ = finish(&log, run, epoch, &common::execution())
                .await
                .unwrap();
        }
        assert!(matches!(
            within("R5", log.claim_async("elsewhere", "kept")).await,
            Ok(Claim::Owner(_))
        ));
        let everywhere = async || -> (i64, i64, i64) {
            let count = async |table: &str| -> i64 {
                admin
                    .query_one(&format!("SELECT count(*) FROM {table}"), &[])
                    .await
                    .unwrap()
                    .get(0)
            };
            (
                count("baton_run").await,
                count("baton_handoff_pause").await,
                count("baton_root").await,
            )
        };
        assert_eq!(rows(&admin).await, (3, 1, 1));
        assert_eq!(everywhere().await, (4, 1, 2));
        assert_eq!(
            within("R5", log.retire_async(ROOT)).await.unwrap(),
            Retirement::Retired { runs: 3 }
        );
        assert_eq!(
            rows(&admin).await,
            (0, 0, 1),
            "R10: of the root Run, only its tombstone remains"
        );
        let retired: bool = admin
            .query_one(
                "SELECT retired FROM baton_root WHERE root_run_id = $1",
                &[&ROOT],
            )
            .await
            .unwrap()
            .get(0);
        assert!(retired, "the row left is the tombstone");
        assert_eq!(
            everywhere().await,
            (1, 0, 2),
            "the other root Run's rows are kept"
        );
        assert_eq!(
            within("R5", log.claim_async("elsewhere", "kept"))
                .await
                .unwrap(),
            Claim::Owner(Epoch::new(2))
        );
    });
}

/// Schema versions 3 (the finish on the Run's row, the root Runs' table)
/// and 4 (the end times, for retention by age)
/// upgrades a database of version 2 in place: written as versions 1 and
/// 2's SQL made it, with an open Run at epoch 2 and a handed-off Run, it
/// is refused until migrated, then migrated when a log opens with
/// `migrate`; every fact is kept (the open Run's next claim issues epoch
/// 3, the handed-off Run stays handed off, R1), and the new operations
/// work on the old rows: the open Run finishes (R8), and the root Run —
/// which has no row of its own yet — retires (R9, R10).
#[test]
fn a_version_2_database_is_upgraded_to_the_current_version_in_place_and_keeps_its_facts() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let admin = cluster.connect(&dbname).await;
        let scripts = PostgresSchema::search_path().migrations();
        admin.batch_execute(&scripts[0]).await.unwrap();
        admin.batch_execute(&scripts[1]).await.unwrap();
        admin
            .execute(
                "INSERT INTO baton_run VALUES ('run', 'open', 2), ('run', 'run', 1)",
                &[],
            )
            .await
            .unwrap();
        insert_pause_row(
            &admin,
            "baton_handoff_pause",
            ROOT,
            &common::source(),
            &pause(),
            1,
        )
        .await;
        assert!(matches!(
            open(&url, PostgresOptions::new()).await,
            Err(LogError::UnknownSchema { found: 2, .. })
        ));
        let log = connect(&url).await.expect("migrated to version 4");
        let version: i64 = admin
            .query_one("SELECT version FROM baton_schema", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(version, 4);
        assert_eq!(POSTGRES_SCHEMA_VERSION, 4);
        let untimed: i64 = admin
            .query_one(
                "SELECT count(*) FROM baton_handoff_pause WHERE ended_at IS NULL",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            untimed, 0,
            "a pause of version 2 takes the migration's time"
        );
        assert_eq!(
            within("R5", log.claim_async(ROOT, "run")).await.unwrap(),
            Claim::HandedOff(pause()),
            "R1: a handed-off Run stays handed off across the upgrade"
        );
        let epoch = owner_of(&log, "open").await;
        assert_eq!(epoch, Epoch::new(3));
        assert!(matches!(
            within("R5", log.retire_async(ROOT)).await,
            Err(LogError::RunOpen { .. })
        ));
        assert_eq!(
            finish(&log, "open", epoch, &common::execution())
                .await
                .unwrap(),
            Receipt::Written
        );
        finish_the_successor(&log).await;
        assert_eq!(
            within("R5", log.retire_async(ROOT)).await.unwrap(),
            Retirement::Retired { runs: 3 }
        );
        assert_eq!(rows(&admin).await, (0, 0, 1));
        assert_eq!(
            within("R5", log.claim_async(ROOT, "open")).await.unwrap(),
            Claim::Retired
        );
    });
}

/// R9's race, by construction: a retirement holds its transaction open
/// (the operator's, through `retire_in`: the root Run's row and every Run
/// of it locked), and meanwhile a claim of a *new* Run under the root, a
/// takeover's claim and a zombie's append wait for it, through the log's
/// pool; once it commits, each answers `Retired` and none wrote anything
/// (no Run's row under the tombstone). The other way round: a claim of a
/// new Run holds its transaction open (`claim_in`), and a retirement waits
/// for it, then finds the new Run open (`RunOpen`).
#[test]
fn r9_a_claim_racing_a_retirement_waits_for_it_and_never_leaves_a_run_under_the_tombstone() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = Arc::new(connect(&url).await.unwrap());
        let mut operator = cluster.connect(&dbname).await;
        let admin = cluster.connect(&dbname).await;
        let epoch = owner(&log).await;
        assert_eq!(append(&log, epoch).await.unwrap(), Receipt::Written);
        finish_the_successor(&log).await;

        let retiring = operator.transaction().await.unwrap();
        assert_eq!(
            within("R5", log.retire_in(&retiring, ROOT)).await.unwrap(),
            Retirement::Retired { runs: 2 }
        );
        let spawn_claim = |run: &'static str| {
            let log = Arc::clone(&log);
            tokio::spawn(async move { log.claim_async(ROOT, run).await })
        };
        let new_run = spawn_claim("new");
        let takeover = spawn_claim("run");
        let zombie = tokio::spawn({
            let log = Arc::clone(&log);
            async move {
                log.append_async(ROOT, &common::source(), epoch, &pause())
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(
            !new_run.is_finished() && !takeover.is_finished() && !zombie.is_finished(),
            "the claims and the append wait for the retirement"
        );
        retiring.commit().await.unwrap();
        assert_eq!(
            within("R5", new_run).await.unwrap().unwrap(),
            Claim::Retired
        );
        assert_eq!(
            within("R5", takeover).await.unwrap().unwrap(),
            Claim::Retired
        );
        assert!(matches!(
            within("R5", zombie).await.unwrap(),
            Err(LogError::Retired { .. })
        ));
        assert_eq!(
            rows(&admin).await,
            (0, 0, 1),
            "no Run's row under the tombstone"
        );

        // The other way round, under another root Run.
        let claiming = operator.transaction().await.unwrap();
        assert_eq!(
            within("R5", log.claim_in(&claiming, "second", "first"))
                .await
                .unwrap(),
            Claim::Owner(Epoch::new(1))
        );
        let retire = tokio::spawn({
            let log = Arc::clone(&log);
            async move { log.retire_async("second").await }
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(!retire.is_finished(), "the retirement waits for the claim");
        claiming.commit().await.unwrap();
        assert!(
            matches!(
                within("R5", retire).await.unwrap(),
                Err(LogError::RunOpen { ref run_id, .. }) if run_id == "first"
            ),
            "the retirement saw the Run the claim committed"
        );
    });
}

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
/// anything is written.
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
                matches!(&claimed, Err(LogError::Unavailable(e)) if e.to_string().contains("READ COMMITTED")),
                "{level:?}: {claimed:?}"
            );
            tx.commit().await.unwrap();
        }
        let read = within("R5", log.facts_async(ROOT, "run")).await.unwrap();
        assert_eq!(read.epoch, Epoch::new(1), "nothing written at those levels");
    });
}

/// G5 by age without scanning every row, on PostgreSQL: a sweep reads its
/// candidates through the partial index on the finishes' end time
/// (`baton_run_by_end`), as the server's own statistics show (the index's
/// scans go up by the sweep), on a table of 1,000 finished Runs; and a
/// pass retires each root once.
#[test]
fn g5_a_sweep_reads_its_candidates_through_the_end_time_index() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = connect(&url).await.unwrap();
        let admin = cluster.connect(&dbname).await;
        let outcome = serde_json::to_string(&common::execution()).unwrap();
        admin
            .execute(
                "INSERT INTO baton_root (root_run_id) \
                 SELECT md5(i::text) FROM generate_series(1, 1000) i",
                &[],
            )
            .await
            .unwrap();
        admin
            .execute(
                "INSERT INTO baton_run (root_run_id, run_id, epoch, finish_session_id, \
                 finish_turn_id, finish_invocation_id, outcome, ended_at) \
                 SELECT md5(i::text), 'run', 1, 'session', 'turn', 'run-invocation', \
                        $1::text::json, now() - interval '1 hour' + i * interval '1 ms' \
                 FROM generate_series(1, 1000) i",
                &[&outcome],
            )
            .await
            .unwrap();
        admin.batch_execute("ANALYZE baton_run").await.unwrap();
        let scans = async || -> (i64, i64) {
            admin
                .batch_execute("SELECT pg_stat_clear_snapshot()")
                .await
                .unwrap();
            let row = admin
                .query_one(
                    "SELECT (SELECT idx_scan FROM pg_stat_user_indexes \
                             WHERE indexrelname = 'baton_run_by_end'), \
                            (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'baton_run')",
                    &[],
                )
                .await
                .unwrap();
            (row.get(0), row.get(1))
        };
        let before = scans().await;
        let cut_off = std::time::SystemTime::now() - Duration::from_secs(1800);
        let sweep = within("R5", log.retire_ended_async(cut_off, None, 10))
            .await
            .unwrap();
        assert_eq!(
            (sweep.retired, sweep.kept, sweep.next.is_some()),
            (10, 0, true),
            "the ten oldest, and more to come"
        );
        // The server publishes a backend's statistics when it goes idle,
        // within a second.
        let deadline = Instant::now() + Duration::from_secs(10);
        let after = loop {
            let after = scans().await;
            if after.0 > before.0 || Instant::now() > deadline {
                break after;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        // Only the candidates' read looks rows up by their end time: the
        // index's scans are its. (The table's sequential scans are not
        // compared: the migration's own, published late, may land between.)
        assert!(
            after.0 > before.0,
            "the index was scanned: {before:?} → {after:?}"
        );
        let next = sweep.next.unwrap();
        let rest = within("R5", log.retire_ended_async(cut_off, Some(&next), 100_000))
            .await
            .unwrap();
        assert_eq!(
            (rest.retired, rest.next),
            (1_000 - 10, None),
            "every other root, once"
        );
    });
}
