//! A Citus worker fails over without a manager (issue 57), the way Citus
//! documents it: the worker's primary killed (SIGKILL of its postmaster),
//! its streaming standby promoted, and the coordinator pointed at it
//! (`citus_update_node`). Each worker is a PostgreSQL primary with a
//! timeline of its own, and the coordinator's never changes; so the floor
//! a claim's epoch must clear is the one of the server that holds its
//! root Run's shard. After the failover every claim of a root on that
//! worker answers above the promoted server's floor (G4, R6: no epoch
//! answered twice), whatever the standby had. With a synchronous standby
//! every acknowledged claim reads back (G2); with an asynchronous one cut
//! off before the last claims, those claims are lost, as docs/SPEC.md §6
//! allows, and their epochs are still never answered again.

use std::io::Write as _;
use std::time::Duration;

use baton::durable::{AsyncHandoffLog, Claim, Epoch, PostgresLog, timeline_floor};

use crate::Payload;
use crate::citus::CitusSchema;
use crate::common::citus::Citus;
use crate::common::postgres::Cluster;
use crate::postgres_only::runtime;

type Log = PostgresLog<Payload>;

const RUN: &str = "run";

/// How long the log may take to answer through the coordinator once it
/// points at the promoted standby.
const PROMOTED: Duration = Duration::from_secs(60);

/// Root Runs whose shard is on `worker`, `count` of them.
async fn roots_on(citus: &Citus, schema: &str, worker: &Cluster, count: usize) -> Vec<String> {
    let admin = citus.connect().await;
    let mut roots = Vec::new();
    for n in 0.. {
        let root = format!("root-{n}");
        let port: i32 = admin
            .query_one(
                "SELECT nodeport::int FROM pg_dist_shard_placement WHERE shardid = \
                 get_shard_id_for_distribution_column($1::text::regclass, $2::text)",
                &[&format!("{schema}.baton_root"), &root],
            )
            .await
            .expect("the root's placement")
            .get(0);
        if port == i32::from(worker.port()) {
            roots.push(root);
        }
        if roots.len() == count {
            return roots;
        }
    }
    unreachable!()
}

/// The epoch a claim answered: the owner's.
async fn owner(log: &Log, root: &str) -> Epoch {
    match log.claim_async(root, RUN).await {
        Ok(Claim::Owner(epoch)) => epoch,
        other => panic!("{root}: the claim answered {other:?}"),
    }
}

/// Kills `worker`'s primary, promotes `standby`, and points the
/// coordinator at it.
async fn fail_over(citus: &Citus, worker: &Cluster, standby: &Cluster) {
    worker.kill_postmaster();
    standby.promote();
    citus
        .connect()
        .await
        .execute(
            "SELECT citus_update_node(nodeid, '127.0.0.1', $1) FROM pg_dist_node \
             WHERE nodeport = $2",
            &[&i32::from(standby.port()), &i32::from(worker.port())],
        )
        .await
        .expect("citus_update_node");
}

/// What a worker's failover kept of `roots`' claims and what it answered
/// after: each root was claimed twice (epochs 1 and 2) before the
/// failover, `cut` (if given) stopping the standby's stream between the
/// two; answers how many of the second claims were lost, and checks that
/// every claim after the failover answers above the promoted server's
/// floor, above every epoch answered before.
async fn claims_across_a_worker_failover(synchronous: bool, cut: bool) -> usize {
    let citus = Citus::start().expect("a Citus cluster");
    let worker = &citus.workers()[0];
    let standby = match synchronous {
        true => worker.synchronous_standby().await,
        false => worker.standby(),
    };
    let store = CitusSchema::new(&citus, true).await;
    let log: Log = store.connect().await.expect("open");
    let roots = roots_on(&citus, &store.schema, worker, 8).await;
    for root in &roots {
        assert_eq!(owner(&log, root).await, Epoch::new(1));
    }
    worker.standbys_caught_up().await;
    if cut {
        // The standby stops streaming: what the primary acknowledges now
        // is on the primary alone.
        let standby_admin = standby.connect("postgres").await;
        standby_admin
            .batch_execute("ALTER SYSTEM SET primary_conninfo = ''")
            .await
            .unwrap();
        standby_admin
            .batch_execute("SELECT pg_reload_conf()")
            .await
            .unwrap();
        let primary_admin = worker.connect("postgres").await;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while primary_admin
            .query_one("SELECT count(*) FROM pg_stat_replication", &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
            > 0
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the standby kept streaming"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let second = Epoch::new(2);
    for root in &roots {
        assert_eq!(owner(&log, root).await, second, "a takeover");
    }
    let killed = std::time::Instant::now();
    fail_over(&citus, worker, &standby).await;
    let floor = timeline_floor(2);
    let mut lost = 0;
    let mut answered_again = None;
    for root in &roots {
        // What the promoted server holds: the second epoch, or (a claim
        // lost) the first.
        let held = facts_once_answered(&log, root).await;
        answered_again.get_or_insert_with(|| killed.elapsed());
        assert!(held == second || held == Epoch::new(1), "{root}: {held:?}");
        lost += usize::from(held != second);
        let epoch = owner(&log, root).await;
        assert!(
            epoch > floor,
            "G4/R6: {root}'s claim on the promoted worker answered {epoch:?}, not above its \
             floor {floor:?}: an epoch an older primary may have answered"
        );
    }
    // Past libtest's capture: the figures of the note and docs/SCALE.md.
    let _ = writeln!(
        std::io::stderr(),
        "citus_failover: {} standby: {lost} of {} acknowledged takeovers lost, every claim \
         after above {floor:?}; the log answered again {:.2} s after the kill",
        if synchronous {
            "synchronous"
        } else {
            "asynchronous"
        },
        roots.len(),
        answered_again.unwrap_or_default().as_secs_f64()
    );
    lost
}

/// The Run's epoch, once the log answers (bounded: R5 within
/// [`PROMOTED`]).
async fn facts_once_answered(log: &Log, root: &str) -> Epoch {
    let answered = tokio::time::timeout(PROMOTED, async {
        loop {
            match log.facts_async(root, RUN).await {
                Ok(facts) => return facts.epoch,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    answered
        .await
        .unwrap_or_else(|_| panic!("R5: the log answers within {PROMOTED:?} of the failover"))
}

/// Synchronous: nothing the log acknowledged is lost (G2), and every claim
/// after the failover answers above the promoted worker's floor.
#[test]
fn g2_g4_a_worker_failover_to_a_synchronous_standby_keeps_every_claim_and_the_fence() {
    if Citus::shared().is_none() {
        return;
    }
    let lost = runtime().block_on(claims_across_a_worker_failover(true, false));
    assert_eq!(
        lost, 0,
        "G2: acknowledged claims lost by a synchronous failover"
    );
}

/// Asynchronous, the standby cut off before the second claims: those
/// claims are lost (all eight), and still no epoch is answered twice: the
/// claims after the failover answer above the floor of the promoted
/// worker's timeline, read on that worker, not on the coordinator.
#[test]
fn g4_r6_a_worker_failover_to_an_asynchronous_standby_answers_no_epoch_twice() {
    if Citus::shared().is_none() {
        return;
    }
    let lost = runtime().block_on(claims_across_a_worker_failover(false, true));
    assert_eq!(lost, 8, "the cut-off standby had only the first claims");
}
