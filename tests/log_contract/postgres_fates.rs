//! The third fate and retention on PostgreSQL (issue 35, SPEC R8, R9,
//! R10): a finished Run, a retired root, what the tables keep, a claim
//! racing a retirement, and the sweep by age through its index (G5).

use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton::durable::{AsyncHandoffLog, Claim, Epoch, LogError, Receipt, Retirement};

use crate::Payload;
use crate::common::postgres::Cluster;
use crate::common::{self, within};
use crate::postgres_only::*;

/// An outcome other than [`common::execution`] (the one these tests
/// finish with).
pub(crate) fn other_outcome() -> Payload {
    let mut outcome = common::execution();
    outcome.supports_vision = true;
    outcome
}

/// The invocation of the Run `run` (of [`ROOT`]).
pub(crate) fn source_of(run: &str) -> baton::Invocation {
    let mut source = common::source();
    source.run_id = run.into();
    source
}

/// Finishes `(ROOT, run)` under `epoch` with `outcome`, bounded (R5).
pub(crate) async fn finish(
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
pub(crate) async fn owner_of(log: &Log, run: &str) -> Epoch {
    match within("R5", log.claim_async(ROOT, run)).await {
        Ok(Claim::Owner(epoch)) => epoch,
        other => panic!("the Run {run} is not open: {other:?}"),
    }
}

/// Claims and finishes `successor-run`, the successor the shared pause
/// names, so that the handoff's root may be retired (G5).
pub(crate) async fn finish_the_successor(log: &Log) {
    let epoch = owner_of(log, "successor-run").await;
    assert_eq!(
        finish(log, "successor-run", epoch, &common::execution())
            .await
            .unwrap(),
        Receipt::Written
    );
}

/// How many rows `table` holds for the root Run [`ROOT`].
pub(crate) async fn rows_of(admin: &tokio_postgres::Client, table: &str) -> i64 {
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
pub(crate) async fn rows(admin: &tokio_postgres::Client) -> (i64, i64, i64) {
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
