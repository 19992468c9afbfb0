//! A fleet's PostgreSQL fails over (issue 49): a primary and its hot
//! standby (`Cluster::standby`: a base backup streaming the primary's WAL),
//! one `PostgresLog` given both hosts with `target_session_attrs =
//! read-write`, the primary's postmaster killed (SIGKILL) and the standby
//! promoted. With synchronous replication (`synchronous_standby_names =
//! '*'` on the primary), the same log object answers again once the
//! standby is promoted, without being reopened, and every write it
//! acknowledged before the failover is there: each acknowledged handoff
//! reads back and its Run is claimed `HandedOff` (G1, G2, R1), each open
//! Run keeps the epoch last answered, and its next claim answers a greater
//! one (G4: no epoch answered to two claims). What an asynchronous standby
//! keeps is its replication's, not baton's (docs/SPEC.md §6, "Replication").

use std::time::{Duration, Instant};

use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, PostgresLog, PostgresOptions, Receipt, RunFacts,
    timeline_floor,
};

use crate::Payload;
use crate::common::postgres::{Cluster, multi_host};
use crate::common::within;
use crate::postgres_fates::source_of;
use crate::postgres_only::{fresh, open, pause, runtime};

type Log = PostgresLog<Payload>;

const ROOT: &str = "run";

/// Both servers, the primary first, for a log that opens on the one
/// accepting writes (`target_session_attrs=read-write`).
pub(crate) fn both(primary: &Cluster, standby: &Cluster, dbname: &str) -> String {
    multi_host(&[primary.port(), standby.port()], dbname)
}

/// The options of the logs here: migrating, a 5 s timeout.
fn options() -> PostgresOptions {
    PostgresOptions::new()
        .migrate(true)
        .timeout(Duration::from_secs(5))
}

/// One log given both servers ([`both`]), migrating.
async fn log_on_both(primary: &Cluster, standby: &Cluster, dbname: &str) -> Log {
    let url = both(primary, standby, dbname);
    open(&url, options()).await.expect("the log on the primary")
}

/// Whether a log requiring a synchronous standby opens on `url`.
async fn opens_requiring_a_synchronous_standby(url: &str) -> Result<Log, LogError> {
    open(url, options().require_synchronous_standby(true)).await
}

/// How long the log may take to answer on the promoted standby: each
/// pooled connection to a paused primary takes an operation's timeout
/// (5 s here) to give up, a new connection its `connect_timeout` (2 s).
const PROMOTED: Duration = Duration::from_secs(30);

/// The facts of `run`, once the log answers again after the failover
/// (bounded: R5, within [`PROMOTED`]).
async fn facts_once_promoted(log: &Log, run: &str) -> RunFacts<Payload> {
    let answered = tokio::time::timeout(PROMOTED, async {
        loop {
            match log.facts_async(ROOT, run).await {
                Ok(facts) => return facts,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
    answered.await.unwrap_or_else(|_| {
        panic!("R5: the log answers on the promoted standby within {PROMOTED:?}")
    })
}

#[test]
fn g1_g2_g4_a_synchronous_failover_keeps_every_acknowledged_write_and_the_fence() {
    let Some(primary) = Cluster::start() else {
        return;
    };
    runtime().block_on(async {
        let dbname = primary.database().await;
        let standby = primary.synchronous_standby().await;
        let log = log_on_both(&primary, &standby, &dbname).await;
        // Know your server: it waits for its standby, so a log requiring
        // that opens.
        let replication = within("R5", log.replication()).await.unwrap();
        assert!(replication.waits_for_a_standby(), "{replication:?}");
        assert_eq!(replication.synchronous_standby_names, "*");
        let url = both(&primary, &standby, &dbname);
        let required = opens_requiring_a_synchronous_standby(&url).await;
        assert!(required.is_ok(), "{:?}", required.err());
        let answered = ten_runs(&log, "run").await;
        primary.kill_postmaster();
        standby.promote();
        // The same log, never reopened: its pool reaches the new primary.
        every_acknowledged_write_is_there(&log, &answered).await;
    });
}

/// Ten Runs `{prefix}-0` … `{prefix}-9` claimed, the even ones handed
/// off, the odd ones left open: each Run, the epoch answered, and whether
/// its pause was acknowledged.
pub(crate) async fn ten_runs(log: &Log, prefix: &str) -> Vec<(String, Epoch, bool)> {
    let mut answered = Vec::new();
    for i in 0..10 {
        let run = format!("{prefix}-{i}");
        let Ok(Claim::Owner(epoch)) = within("R5", log.claim_async(ROOT, &run)).await else {
            panic!("{run} is open");
        };
        if i % 2 == 0 {
            let (source, pause) = (source_of(&run), pause());
            let append = log.append_async(ROOT, &source, epoch, &pause);
            assert_eq!(within("R5", append).await.unwrap(), Receipt::Written);
        }
        answered.push((run, epoch, i % 2 == 0));
    }
    answered
}

/// Once the log answers on the promoted standby: every acknowledged epoch
/// and pause reads back (G2), each handed-off Run is claimed `HandedOff`
/// (R1, G1), and each open one answers an epoch above the one it had
/// (G4), which is returned, by Run.
async fn every_acknowledged_write_is_there(
    log: &Log,
    answered: &[(String, Epoch, bool)],
) -> Vec<(String, Epoch)> {
    let first = facts_once_promoted(log, "run-0").await;
    assert_eq!(first.pauses.len(), 1, "G2: run-0's acknowledged pause");
    let mut next_epochs = Vec::new();
    for (run, epoch, handed_off) in answered {
        let facts = within("R5", log.facts_async(ROOT, run)).await.unwrap();
        assert_eq!(facts.epoch, *epoch, "G2: {run}'s acknowledged epoch");
        assert_eq!(
            facts.pauses.len(),
            usize::from(*handed_off),
            "G2: {run}'s acknowledged pause"
        );
        let claim = within("R5", log.claim_async(ROOT, run)).await.unwrap();
        match claim {
            Claim::HandedOff(_) => assert!(*handed_off, "R1: {run} was never handed off"),
            Claim::Owner(next) => {
                assert!(!handed_off, "G1/R1: {run}'s handoff was lost: resumed");
                assert!(next > *epoch, "G4: {run} answered {next} after {epoch}");
                next_epochs.push((run.clone(), next));
            }
            other => panic!("{run}: {other:?}"),
        }
    }
    next_epochs
}

/// A primary paused (SIGSTOP of the postmaster and every backend: cut
/// off, not dead, its sockets open and silent) while its standby, caught
/// up, is promoted, as an HA manager does when it loses sight of the
/// primary. The same log finds the new primary within a bound (its pooled
/// connections to the paused one time out; its new ones give up on it
/// after `connect_timeout`, as libpq does), and every acknowledged write
/// is there. Then the old primary comes back unfenced, as PostgreSQL lets
/// it, and a log on it alone claims an open Run: `answered` says how
/// (docs/guide/ha.md).
async fn a_paused_primary_fails_over(synchronous: bool, answered_on_the_old: fn(&LogError)) {
    let Some(primary) = Cluster::start() else {
        return;
    };
    let dbname = primary.database().await;
    let standby = if synchronous {
        primary.synchronous_standby().await
    } else {
        primary.standby()
    };
    let log = log_on_both(&primary, &standby, &dbname).await;
    let answered = ten_runs(&log, "run").await;
    if !synchronous {
        primary.standbys_caught_up().await;
    }

    primary.signal_all("-STOP");
    standby.promote();
    let promoted = every_acknowledged_write_is_there(&log, &answered).await;
    let (run, new_epoch) = promoted.first().cloned().expect("an open Run");
    assert!(
        new_epoch > timeline_floor(2),
        "G4: {run} answered {new_epoch} on the promoted server's timeline"
    );

    // The old primary wakes, unfenced: a log on it alone.
    primary.signal_all("-CONT");
    let old = open(&primary.url(&dbname), options())
        .await
        .expect("the old primary still answers");
    match within("R5", old.claim_async(ROOT, &run)).await {
        Ok(Claim::Owner(old_epoch)) => {
            assert!(
                !synchronous,
                "a synchronous old primary acknowledged a claim"
            );
            assert!(
                old_epoch < new_epoch && old_epoch <= timeline_floor(2),
                "G4: the old primary answered {old_epoch}, the promoted one {new_epoch}"
            );
        }
        Ok(other) => panic!("{run} on the old primary: {other:?}"),
        Err(error) => answered_on_the_old(&error),
    }
    drop(old);
    primary.signal_all("-KILL");
}

/// Synchronous: the old primary, back, acknowledges nothing — its commits
/// wait for the standby it lost, so the claim there answers
/// `OutcomeUnknown` at the log's timeout, and no acknowledged write can
/// be lost with it (G2).
#[test]
fn g2_g4_a_synchronous_primary_paused_not_dead_fails_over_and_acknowledges_nothing_after() {
    runtime().block_on(a_paused_primary_fails_over(true, |error| {
        assert!(
            matches!(error, LogError::OutcomeUnknown(_)),
            "the synchronous old primary's claim: {error:?}"
        );
    }));
}

/// Asynchronous: the old primary, back, acknowledges a claim — which is
/// lost once it is rebuilt — but on its own, older timeline: the epoch
/// is below every epoch of the promoted server, so two owners never hold
/// one number (G4).
#[test]
fn g4_an_asynchronous_primary_paused_not_dead_that_comes_back_never_shares_an_epoch() {
    runtime().block_on(a_paused_primary_fails_over(false, |error| {
        panic!("the asynchronous old primary's claim: {error:?}")
    }));
}

/// G4 across an asynchronous failover that loses acknowledged claims, by
/// construction: the standby is stopped, so what the primary acknowledges
/// next never reaches it — a takeover's claim of one Run (epoch 2) and a
/// first claim of another (epoch 1) — then the primary is killed, the
/// standby started and promoted. The acknowledged claims are lost (the
/// replication's limit, G2), but the new primary never answers their
/// epochs again: a promotion begins a new timeline, and every epoch a
/// claim answers on it is above every epoch of the earlier one. A zombie
/// holding a lost epoch is refused (`EpochNotIssued`, then `Fenced`) and
/// writes nothing.
#[test]
fn g4_an_asynchronous_failover_that_loses_claims_never_answers_their_epochs_again() {
    let Some(primary) = Cluster::start() else {
        return;
    };
    runtime().block_on(async {
        let dbname = primary.database().await;
        let standby = primary.standby();
        let log = log_on_both(&primary, &standby, &dbname).await;
        // Know your server: a streaming standby no commit waits for.
        let replication = within("R5", log.replication()).await.unwrap();
        assert!(!replication.waits_for_a_standby(), "{replication:?}");
        let url = both(&primary, &standby, &dbname);
        let refused = opens_requiring_a_synchronous_standby(&url).await;
        assert!(
            matches!(&refused, Err(LogError::NotALog { reason, .. })
                if reason.contains("synchronous_standby_names = ''")),
            "{:?}",
            refused.err()
        );
        let first = within("R5", log.claim_async(ROOT, "run-a")).await.unwrap();
        assert_eq!(first, Claim::Owner(Epoch::new(1)));
        // The standby has everything so far, then stops receiving.
        primary.standbys_caught_up().await;
        standby.stop();
        let lost_takeover = within("R5", log.claim_async(ROOT, "run-a")).await.unwrap();
        let lost_first = within("R5", log.claim_async(ROOT, "run-b")).await.unwrap();
        assert_eq!(
            (lost_takeover, lost_first),
            (Claim::Owner(Epoch::new(2)), Claim::Owner(Epoch::new(1))),
            "acknowledged by the primary alone"
        );

        primary.kill_postmaster();
        standby.restart();
        standby.promote();

        let facts = facts_once_promoted(&log, "run-a").await;
        assert_eq!(facts.epoch, Epoch::new(1), "the takeover's claim was lost");
        let Ok(Claim::Owner(a)) = within("R5", log.claim_async(ROOT, "run-a")).await else {
            panic!("run-a is open");
        };
        let Ok(Claim::Owner(b)) = within("R5", log.claim_async(ROOT, "run-b")).await else {
            panic!("run-b is open");
        };
        assert!(
            a > Epoch::new(2) && b > Epoch::new(1),
            "G4: epochs answered before the failover answered again: run-a {a}, run-b {b}"
        );
        // The zombie that held the lost epoch 2 of run-a writes nothing.
        let (source, pause) = (source_of("run-a"), pause());
        let zombie = log.append_async(ROOT, &source, Epoch::new(2), &pause);
        assert!(
            matches!(within("R5", zombie).await, Err(LogError::Fenced { .. })),
            "R7: the zombie of a lost epoch is fenced"
        );
        let facts = within("R5", log.facts_async(ROOT, "run-a")).await.unwrap();
        assert_eq!((facts.epoch, facts.pauses.len()), (a, 0));
    });
}

/// Know your server, on one server without a standby: the log says so,
/// and a log requiring a synchronous standby is refused with a permanent
/// `NotALog` naming both settings, before it migrates anything (G3: the
/// database is left without baton's tables).
#[test]
fn a_log_requiring_a_synchronous_standby_refuses_a_server_without_one_and_writes_nothing() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let (_, url) = fresh(cluster).await;
        for _ in 0..2 {
            let refused = opens_requiring_a_synchronous_standby(&url).await;
            assert!(
                matches!(&refused, Err(LogError::NotALog { reason, .. })
                    if reason.contains("synchronous_commit = on")
                        && reason.contains("synchronous_standby_names = ''")),
                "{:?}",
                refused.err()
            );
        }
        let unmigrated = open(&url, PostgresOptions::new()).await;
        assert!(
            matches!(unmigrated, Err(LogError::UnknownSchema { found: 0, .. })),
            "G3: the refused open migrated nothing"
        );
        let log = open(&url, options()).await.unwrap();
        let replication = within("R5", log.replication()).await.unwrap();
        assert_eq!(
            (
                replication.synchronous_commit.as_str(),
                replication.synchronous_standby_names.as_str(),
                replication.waits_for_a_standby()
            ),
            ("on", "", false)
        );
    });
}

/// Fixture hygiene (issue 58): a server a test paused (SIGSTOP of every
/// process) and never continued — the test died between the two — is
/// still removed with its `Cluster`: its watchdog continues it, stops it,
/// and kills it if it does not stop.
#[test]
fn a_paused_server_is_removed_with_its_cluster() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let pid = cluster.postmaster_pid();
    cluster.signal_all("-STOP");
    let stopped = Instant::now();
    drop(cluster);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Gone, or a zombie its parent has not reaped yet: never stopped.
    let state = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.trim_start().chars().next());
    assert!(
        matches!(state, None | Some(Some('Z'))),
        "the paused postmaster {pid} outlived its cluster: {stat}"
    );
    println!(
        "a paused server removed in {:.2} s",
        stopped.elapsed().as_secs_f64()
    );
}
