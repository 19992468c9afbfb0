//! Group commit (`PostgresOptions::group_commit`): the writes of
//! operations of different Runs that wait for the log's one slot are sent
//! together, in one transaction, and each operation is answered as it
//! would be alone. Each batch is made by construction: the slot is held by
//! a finish waiting for a Run's row lock another session holds, and the
//! other operations are spawned on a current-thread runtime and all reach
//! the queue in one pass of its scheduler, before the test's task runs
//! again (`yield_now`); they go together when the slot comes back, or 20
//! ms later (`SLOT_WAIT`), whichever is first. That they shared one
//! transaction is read from their rows' `xmin`.

use std::sync::Arc;
use std::time::Duration;

use baton::durable::tokio_postgres::Client;
use baton::durable::{AsyncHandoffLog, Claim, Epoch, PostgresOptions, Receipt, RunFacts};
use baton::{HandoffIntent, Invocation};

use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_only::{Log, fresh, open};
use crate::postgres_store::until_a_backend_waits_for_a_lock;

/// A log of one slot (a second operation waits for a batch), its four
/// connections open.
pub(crate) async fn one_slot_log(url: &str) -> Arc<Log> {
    drop(open(url, PostgresOptions::new().migrate(true)).await); // the schema
    one_slot_log_via(url).await
}

/// [`one_slot_log`] on a schema already there (through a proxy).
pub(crate) async fn one_slot_log_via(url: &str) -> Arc<Log> {
    let options = PostgresOptions::new()
        .migrate(true)
        .pool_size(4)
        .group_commit(1)
        .timeout(Duration::from_secs(30));
    let log = open(url, options).await.expect("connect");
    // Every connection made now, so none is made while a test waits.
    let mut made = Vec::new();
    for _ in 0..4 {
        made.push(log.pool().get().await.expect("a connection"));
    }
    drop(made);
    Arc::new(log)
}

pub(crate) fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The invocation of Run `run` (its own root Run).
pub(crate) fn source_of(run: &str) -> Invocation {
    Invocation {
        run_id: run.into(),
        ..common::source()
    }
}

fn pause_of(run: &str) -> common::Pause {
    common::pause_for(HandoffIntent {
        root_run_id: run.into(),
        successor_run_id: format!("{run}-next"),
        ..common::intent()
    })
}

/// The roots of a batch.
pub(crate) fn roots(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("g{i}")).collect()
}

/// Holds the slot of `log`: the Run `hold` (its own root) claimed, its row locked by
/// `admin` (in a transaction), and its finish spawned, waiting for the
/// lock. `ROLLBACK` on `admin` lets it go.
pub(crate) async fn hold_the_slot(
    log: &Arc<Log>,
    admin: &Client,
    hold: &'static str,
) -> tokio::task::JoinHandle<Result<Receipt, baton::durable::LogError>> {
    let Ok(Claim::Owner(epoch)) = log.claim_async(hold, hold).await else {
        panic!("the holder's claim")
    };
    admin
        .batch_execute(&format!(
            "BEGIN; SELECT epoch FROM baton_run \
             WHERE root_run_id = '{hold}' AND run_id = '{hold}' FOR UPDATE"
        ))
        .await
        .expect("another session holds the Run's row lock");
    let holder = tokio::spawn({
        let log = Arc::clone(log);
        async move {
            log.finish_async(hold, &source_of(hold), epoch, &common::execution())
                .await
        }
    });
    until_a_backend_waits_for_a_lock(admin).await;
    holder
}

/// Each of `claims` answers `Owner`, all within 5 s, far below the log's
/// timeout (30 s): none waited behind `behind`.
pub(crate) async fn owners_promptly(
    claims: Vec<tokio::task::JoinHandle<Result<Claim<crate::Payload>, baton::durable::LogError>>>,
    behind: &str,
) {
    let started = std::time::Instant::now();
    for claim in claims {
        let answer = within("a claim", claim).await.unwrap();
        assert!(matches!(answer, Ok(Claim::Owner(_))), "{answer:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the claims waited {:?} behind {behind}",
        started.elapsed()
    );
}

/// Spawns the first claim of each of `runs` (each its own root).
pub(crate) fn spawn_claims(
    log: &Arc<Log>,
    runs: &[String],
) -> Vec<tokio::task::JoinHandle<Result<Claim<crate::Payload>, baton::durable::LogError>>> {
    runs.iter()
        .map(|run| {
            let (log, run) = (Arc::clone(log), run.clone());
            tokio::spawn(async move { log.claim_async(&run, &run).await })
        })
        .collect()
}

/// Spawns the append of `run`'s pause (`append`) or its finish, at `epoch`.
pub(crate) fn spawn_write(
    log: &Arc<Log>,
    run: &str,
    epoch: Epoch,
    append: bool,
) -> tokio::task::JoinHandle<Result<Receipt, baton::durable::LogError>> {
    let (log, run) = (Arc::clone(log), run.to_owned());
    tokio::spawn(async move {
        let source = source_of(&run);
        if append {
            log.append_async(&run, &source, epoch, &pause_of(&run))
                .await
        } else {
            let outcome = common::execution();
            log.finish_async(&run, &source, epoch, &outcome).await
        }
    })
}

/// Lets the holder of [`hold_the_slot`] go: its finish is written.
pub(crate) async fn let_the_holder_go(
    admin: &Client,
    holder: tokio::task::JoinHandle<Result<Receipt, baton::durable::LogError>>,
) {
    admin.batch_execute("ROLLBACK").await.expect("let go");
    assert_eq!(
        within("the holder", holder).await.unwrap().unwrap(),
        Receipt::Written
    );
}

/// The epochs `claims` answered, each a first claim's (R1).
async fn owners(
    claims: Vec<tokio::task::JoinHandle<Result<Claim<crate::Payload>, baton::durable::LogError>>>,
) -> Vec<Epoch> {
    let mut epochs = Vec::new();
    for claim in claims {
        match within("a batched claim", claim).await.unwrap() {
            Ok(Claim::Owner(epoch)) => epochs.push(epoch),
            other => panic!("R1: a first claim answers its epoch, got {other:?}"),
        }
    }
    epochs
}

/// How many transactions wrote the Runs `runs`' rows (their `xmin`s).
pub(crate) async fn writers(admin: &Client, runs: &[String]) -> i64 {
    admin
        .query_one(
            "SELECT count(DISTINCT xmin::text) FROM baton_run WHERE run_id = ANY($1)",
            &[&runs],
        )
        .await
        .expect("xmin")
        .get(0)
}

pub(crate) async fn facts(log: &Log, run: &str) -> RunFacts<crate::Payload> {
    log.facts_async(run, run).await.expect("facts")
}

/// GC1 (R1, G2 across a batch): first claims, then appends and finishes of
/// eight root Runs, each batch one transaction, and each operation
/// answered as alone: every claim its first epoch, every append and
/// finish `Written`, and what each was answered reads back.
#[test]
fn gc1_a_batch_is_one_transaction_and_each_operation_reads_back_as_answered() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = one_slot_log(&url).await;
        let admin = cluster.connect(&dbname).await;
        let runs = roots(8);

        let holder = hold_the_slot(&log, &admin, "hold").await;
        let claims = spawn_claims(&log, &runs);
        tokio::task::yield_now().await;
        let_the_holder_go(&admin, holder).await;
        let epochs = owners(claims).await;
        assert_eq!(
            writers(&admin, &runs).await,
            1,
            "the eight first claims were one transaction"
        );

        // Appends of half, finishes of the other half, in one batch.
        let holder = hold_the_slot(&log, &admin, "hold2").await;
        let writes: Vec<_> = runs
            .iter()
            .zip(&epochs)
            .enumerate()
            .map(|(i, (run, &epoch))| spawn_write(&log, run, epoch, i % 2 == 0))
            .collect();
        tokio::task::yield_now().await;
        let_the_holder_go(&admin, holder).await;
        for write in writes {
            assert_eq!(
                within("a batched write", write).await.unwrap().unwrap(),
                Receipt::Written
            );
        }
        let finished: Vec<String> = runs.iter().skip(1).step_by(2).cloned().collect();
        assert_eq!(
            writers(&admin, &finished).await,
            1,
            "the four finishes were one transaction (with the appends)"
        );
        for (i, (run, &epoch)) in runs.iter().zip(&epochs).enumerate() {
            let read = facts(&log, run).await;
            assert_eq!(read.epoch, epoch, "the claim's epoch reads back");
            if i % 2 == 0 {
                assert_eq!(read.pauses.len(), 1, "the append reads back");
                assert_eq!(read.pauses[0].pause, pause_of(run));
                assert_eq!(read.finished, None);
            } else {
                assert!(read.pauses.is_empty());
                let outcome = read.finished.map(|finished| finished.outcome);
                assert_eq!(outcome, Some(common::execution()), "the finish reads back");
            }
        }
    });
}

/// GC2: one write of a batch fails on the server (an append whose Run
/// already holds a pause: the pause's key refuses it), so the batch rolls
/// back and every operation of it runs alone: the others are written, each
/// in a transaction of its own, and the failing one is answered as alone
/// (the identical pause: `AlreadyDurable`).
#[test]
fn gc2_a_failed_write_rolls_its_batch_back_and_each_operation_runs_alone() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = one_slot_log(&url).await;
        let admin = cluster.connect(&dbname).await;
        let runs = roots(4);
        let mut epochs = Vec::new();
        for run in &runs {
            let Ok(Claim::Owner(epoch)) = log.claim_async(run, run).await else {
                panic!("a claim")
            };
            epochs.push(epoch);
        }
        let appended = log
            .append_async(
                &runs[0],
                &source_of(&runs[0]),
                epochs[0],
                &pause_of(&runs[0]),
            )
            .await;
        assert_eq!(appended.unwrap(), Receipt::Written);

        let holder = hold_the_slot(&log, &admin, "hold").await;
        let finishes: Vec<_> = runs
            .iter()
            .zip(&epochs)
            .map(|(run, &epoch)| spawn_write(&log, run, epoch, run == "g0"))
            .collect();
        tokio::task::yield_now().await;
        let_the_holder_go(&admin, holder).await;
        let answers: Vec<Receipt> = {
            let mut answers = Vec::new();
            for finish in finishes {
                answers.push(within("a write", finish).await.unwrap().unwrap());
            }
            answers
        };
        assert_eq!(
            answers,
            [
                Receipt::AlreadyDurable,
                Receipt::Written,
                Receipt::Written,
                Receipt::Written
            ]
        );
        assert_eq!(
            writers(&admin, &runs[1..]).await,
            3,
            "after the rollback each finish ran alone"
        );
        for run in &runs[1..] {
            let outcome = facts(&log, run).await.finished.map(|f| f.outcome);
            assert_eq!(outcome, Some(common::execution()));
        }
        assert_eq!(facts(&log, "g0").await.pauses.len(), 1);
    });
}

/// GC7: writes of Runs of one root Run share a batch: the first claims of
/// four Runs of a root the log has never seen (the first makes the root's
/// row; the others find it in the batch, as after its commit) are one
/// transaction, each answered its first epoch; then each Run's finish,
/// one transaction again, and the root retires (G5: its work ended).
#[test]
fn gc7_runs_of_one_root_share_a_batch() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (dbname, url) = fresh(cluster).await;
        let log = one_slot_log(&url).await;
        let admin = cluster.connect(&dbname).await;
        let runs = roots(4);
        let holder = hold_the_slot(&log, &admin, "hold").await;
        let claims: Vec<_> = runs
            .iter()
            .map(|run| {
                let (log, run) = (Arc::clone(&log), run.clone());
                tokio::spawn(async move { log.claim_async("shared", &run).await })
            })
            .collect();
        tokio::task::yield_now().await;
        let_the_holder_go(&admin, holder).await;
        let epochs = owners(claims).await;
        assert_eq!(writers(&admin, &runs).await, 1, "one transaction");

        let holder = hold_the_slot(&log, &admin, "hold2").await;
        let finishes: Vec<_> = runs
            .iter()
            .zip(&epochs)
            .map(|(run, &epoch)| {
                let (log, run) = (Arc::clone(&log), run.clone());
                tokio::spawn(async move {
                    let outcome = common::execution();
                    log.finish_async("shared", &source_of(&run), epoch, &outcome)
                        .await
                })
            })
            .collect();
        tokio::task::yield_now().await;
        let_the_holder_go(&admin, holder).await;
        for finish in finishes {
            assert_eq!(
                within("a batched finish", finish).await.unwrap().unwrap(),
                Receipt::Written
            );
        }
        assert_eq!(writers(&admin, &runs).await, 1, "one transaction");
        for run in &runs {
            let read = log.facts_async("shared", run).await.expect("facts");
            let outcome = read.finished.map(|finished| finished.outcome);
            assert_eq!(outcome, Some(common::execution()), "{run} reads back");
        }
        assert!(
            log.retire_async("shared").await.is_ok(),
            "G5: the root's work ended, it retires"
        );
    });
}

/// GC0: group commit is on by default, with as many slots as the pool
/// has connections; never more than that; `group_commit(0)` turns it off.
#[test]
fn gc0_group_commit_is_on_by_default_with_the_pools_size_and_zero_turns_it_off() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    current_thread().block_on(async {
        let (_, url) = fresh(cluster).await;
        assert_eq!(PostgresOptions::new().get_group_commit(), None);
        let on = open(&url, PostgresOptions::new().pool_size(6).migrate(true))
            .await
            .expect("connect");
        assert_eq!(
            on.group_commits(),
            Some(baton::durable::GroupCommits::default())
        );
        assert_eq!(on.group_commit_slots(), Some(6), "the pool's size");
        for (set, slots) in [(4, 4), (6, 6), (9, 6)] {
            let options = PostgresOptions::new().pool_size(6).group_commit(set);
            assert_eq!(options.get_group_commit(), Some(set));
            let log = open(&url, options).await.expect("connect");
            assert_eq!(log.group_commit_slots(), Some(slots), "{set} slots set");
        }
        let off = open(&url, PostgresOptions::new().group_commit(0))
            .await
            .expect("connect");
        assert_eq!(off.group_commits(), None);
        assert_eq!(off.group_commit_slots(), None);
    });
}
