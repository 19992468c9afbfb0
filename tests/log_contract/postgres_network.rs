//! `PostgresLog` over a network and a server that can crash: lost replies,
//! lost connections, blackholed operations, crashes and restarts, a pool
//! that no one Run's lock or cut connection holds up, and what each
//! refusal and failure costs on the wire.

use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use baton::durable::{AsyncHandoffLog, Claim, Epoch, LogError, PostgresOptions, Receipt};

use crate::common::postgres::Cluster;
use crate::common::proxy::Mode;
use crate::common::{self, poll_once, within};
use crate::postgres_only::*;

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
