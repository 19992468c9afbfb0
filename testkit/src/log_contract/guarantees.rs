//! The contract's tests of what a runtime is promised end to end (SPEC
//! §6, G1–G5), generic over a [`Store`] (and, for G2 and retention by
//! age, over [`HoldsFloats`] and [`SweepsEnded`]).

use std::sync::Arc;

use baton::HandoffPause;
use baton::durable::{
    AsyncHandoffLog, Claim, Epoch, LogError, Receipt, Retirement, RunFacts, Sweep,
};

use super::suite::{
    Pause, ROOT, append, claim, facts, finish, outcome, owner, pause, retire, source,
};
use super::{HoldsFloats, Payload, Store, SweepsEnded};
use crate::within::within;

/// G1, G5: a durable handoff keeps its root from retention until the
/// successor it names is final — not claimed yet, then claimed and
/// running, then handed off again to a successor of its own — and the
/// successor's claim is never refused meanwhile; each refused retirement
/// writes nothing (G3). A root the log holds nothing for is not retired
/// (`NothingToRetire`), and no tombstone is left for it.
pub async fn g1_g5_a_handoff_keeps_its_root_until_its_successor_is_final<S: Store>(store: Arc<S>) {
    let log = store.open().await;
    let operator = store.open().await;
    let waiting_on = async |run: &str| match retire(&operator, ROOT).await {
        Err(LogError::RunOpen {
            root_run_id,
            run_id,
        }) if root_run_id == ROOT => {
            assert_eq!(
                run_id, run,
                "G5: the retirement names the Run not final yet"
            );
        }
        other => panic!("G5: the root's work has not ended, yet retire answered {other:?}"),
    };
    let first = source("a");
    let epoch = owner(&log, "a").await;
    assert_eq!(
        append(&log, &first, epoch, &pause("a", "h1"))
            .await
            .unwrap(),
        Receipt::Written
    );
    waiting_on("a-next").await;
    assert_eq!(
        facts(&log, "a-next").await,
        RunFacts::empty(ROOT, "a-next"),
        "G3: the refused retirement wrote nothing"
    );
    // The successor's claim: G1, it is never refused.
    let second = source("a-next");
    let epoch = owner(&log, "a-next").await;
    waiting_on("a-next").await;
    assert_eq!(
        append(&log, &second, epoch, &pause("a-next", "h2"))
            .await
            .unwrap(),
        Receipt::Written
    );
    waiting_on("a-next-next").await;
    let third = source("a-next-next");
    let epoch = owner(&operator, "a-next-next").await;
    assert_eq!(
        finish(&log, &third, epoch, &outcome(3)).await.unwrap(),
        Receipt::Written
    );
    assert_eq!(
        retire(&operator, ROOT).await.unwrap(),
        Retirement::Retired { runs: 3 },
        "G5: the chain ended in a finish"
    );
    for run in ["a", "a-next", "a-next-next"] {
        assert_eq!(claim(&log, run).await.unwrap(), Claim::Retired, "R9");
    }

    assert!(
        matches!(
            retire(&operator, "never-seen-root").await,
            Err(LogError::NothingToRetire { root_run_id }) if root_run_id == "never-seen-root"
        ),
        "G5: a root the log holds nothing for has not ended"
    );
    let read = within(
        "R5: a read of the facts resolves",
        log.facts_async("never-seen-root", "run"),
    )
    .await
    .expect("the facts read back");
    assert_eq!(
        read,
        RunFacts::empty("never-seen-root", "run"),
        "G3: no tombstone was written"
    );
    let first_claim = within(
        "R5: a claim resolves",
        log.claim_async("never-seen-root", "run"),
    )
    .await;
    assert_eq!(
        first_claim.unwrap(),
        Claim::Owner(Epoch::new(1)),
        "G1: the root's first claim is not refused"
    );
}

/// G2: what a store acknowledges reads back equal. A pause or an outcome
/// whose JSON does not decode to an equal value (an `f64` NaN or infinity
/// encodes as `null`) is refused with `Encode` before anything is written
/// (G3: the Run is as it was, and the same epoch still appends); a pause
/// or an outcome that does read back is acknowledged and reads back equal,
/// through the facts and through every later claim.
pub async fn g2_what_a_store_acknowledges_reads_back_equal<S: HoldsFloats>(store: Arc<S>) {
    let log = store.float_log().await;
    let float_pause = |run: &str, value: f64| HandoffPause::new(pause(run, "h").intent, value);
    let claim_of =
        async |run: &str| match within("R5: a claim resolves", log.claim_async(ROOT, run)).await {
            Ok(Claim::Owner(epoch)) => epoch,
            other => panic!("a claim of the open Run {run:?} answered {other:?}"),
        };
    let read = async |run: &str| {
        within("R5: a read resolves", log.facts_async(ROOT, run))
            .await
            .expect("the facts read back")
    };

    let handed = source("handed");
    let epoch = claim_of("handed").await;
    for lossy in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let appended = within(
            "R4: an append resolves",
            log.append_async(ROOT, &handed, epoch, &float_pause("handed", lossy)),
        )
        .await;
        assert!(
            matches!(appended, Err(LogError::Encode(_))),
            "G2: a pause of {lossy} does not read back, yet the append answered {appended:?}"
        );
        let finished = within(
            "R4: a finish resolves",
            log.finish_async(ROOT, &handed, epoch, &lossy),
        )
        .await;
        assert!(
            matches!(finished, Err(LogError::Encode(_))),
            "G2: an outcome of {lossy} does not read back, yet the finish answered {finished:?}"
        );
        let facts = read("handed").await;
        assert_eq!(
            (facts.epoch, facts.pauses.len(), facts.finished.is_none()),
            (epoch, 0, true),
            "G3: the refusal wrote nothing"
        );
    }
    let kept = float_pause("handed", 0.1);
    assert_eq!(
        within(
            "R4: an append resolves",
            log.append_async(ROOT, &handed, epoch, &kept)
        )
        .await
        .unwrap(),
        Receipt::Written,
        "the same epoch still appends"
    );
    assert_eq!(read("handed").await.pauses[0].pause, kept, "G2");
    let again = within("R5: a claim resolves", log.claim_async(ROOT, "handed")).await;
    assert_eq!(again.unwrap(), Claim::HandedOff(kept), "G2");

    let finished = source("finished");
    let epoch = claim_of("finished").await;
    let outcome = -2.5;
    assert_eq!(
        within(
            "R4: a finish resolves",
            log.finish_async(ROOT, &finished, epoch, &outcome)
        )
        .await
        .unwrap(),
        Receipt::Written
    );
    let facts = read("finished").await;
    assert_eq!(facts.finished.map(|row| row.outcome), Some(outcome), "G2");
    let again = within("R5: a claim resolves", log.claim_async(ROOT, "finished")).await;
    assert_eq!(again.unwrap(), Claim::Finished(outcome), "G2");
}

/// Ends Run `run` of `root` with a finish (claiming it first).
async fn finish_run<L: AsyncHandoffLog<Payload>>(log: &L, root: &str, run: &str) {
    let epoch = match within("R5: a claim resolves", log.claim_async(root, run)).await {
        Ok(Claim::Owner(epoch)) => epoch,
        other => panic!("a claim of the open Run {run:?} answered {other:?}"),
    };
    let finished = within(
        "R4: a finish resolves",
        log.finish_async(root, &source(run), epoch, &outcome(1)),
    )
    .await;
    assert_eq!(finished.unwrap(), Receipt::Written);
}

/// Runs a sweep to its end, batch by batch of `limit`: the batches' sum,
/// and how many batches it took.
async fn sweep_all<S: SweepsEnded>(
    store: &S,
    log: &S::Log,
    before: std::time::SystemTime,
    limit: usize,
) -> (Sweep, usize) {
    let mut total = Sweep::default();
    let mut batches = 0;
    loop {
        batches += 1;
        assert!(batches < 100, "G5: a sweep ends");
        let batch = within(
            "R5: a sweep's batch resolves",
            store.retire_ended(log, before, total.next.as_ref(), limit),
        )
        .await
        .expect("a sweep's batch");
        total.retired += batch.retired;
        total.runs += batch.runs;
        total.kept += batch.kept;
        total.roots.extend(batch.roots);
        total.next = batch.next;
        if total.next.is_none() {
            return (total, batches);
        }
    }
}

/// G5 by age: a sweep retires, in batches of a bounded size, every root
/// whose work ended before its cut-off — and only those. A root with a Run
/// still open, or a handoff whose successor is not final (G1: its claim
/// still answers `Owner`), is kept, and so is a root that ended after the
/// cut-off; a root the log holds nothing for is never touched. The sweep
/// always ends, even when every candidate is kept, and a later sweep
/// retires what has ended since.
pub async fn g5_retention_by_age_retires_only_ended_roots_in_bounded_batches<S: SweepsEnded>(
    store: Arc<S>,
) {
    let log = store.open().await;
    finish_run(&log, "done", "a").await;
    // A handoff from "a" to "a-next", and a finished Run beside it.
    let epoch = owner_in(&log, "handed", "a").await;
    let appended = within(
        "R4: an append resolves",
        log.append_async("handed", &source("a"), epoch, &pause_in("handed", "a")),
    )
    .await;
    assert_eq!(appended.unwrap(), Receipt::Written);
    finish_run(&log, "handed", "b").await;
    // A finished Run beside an open one.
    finish_run(&log, "open", "a").await;
    let _ = owner_in(&log, "open", "b").await;

    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let cut_off = std::time::SystemTime::now();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    finish_run(&log, "late", "a").await;

    let (sweep, batches) = sweep_all(&*store, &log, cut_off, 1).await;
    assert_eq!(
        (sweep.retired, sweep.runs, sweep.kept),
        (1, 1, 2),
        "G5: only the root that ended before the cut-off"
    );
    assert_eq!(sweep.roots, ["done"]);
    assert_eq!(batches, 4, "one candidate a batch, then the end");
    assert_eq!(claim_in(&log, "done", "a").await, Claim::Retired);
    let successor = owner_in(&log, "handed", "a-next").await;
    assert!(successor > Epoch::NONE, "G1: the successor is claimable");
    assert!(matches!(
        claim_in(&log, "late", "a").await,
        Claim::Finished(_)
    ));
    assert!(matches!(
        claim_in(&log, "open", "a").await,
        Claim::Finished(_)
    ));

    // The handoff's successor and the open Run end; a later sweep takes
    // them, and the root that ended late, in one batch.
    let finished = within(
        "R4: a finish resolves",
        log.finish_async("handed", &source("a-next"), successor, &outcome(2)),
    )
    .await;
    assert_eq!(finished.unwrap(), Receipt::Written);
    let epoch = owner_in(&log, "open", "b").await;
    let finished = within(
        "R4: a finish resolves",
        log.finish_async("open", &source("b"), epoch, &outcome(2)),
    )
    .await;
    assert_eq!(finished.unwrap(), Receipt::Written);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (sweep, batches) = sweep_all(&*store, &log, std::time::SystemTime::now(), 10).await;
    assert_eq!(
        (sweep.retired, sweep.runs, sweep.kept, batches),
        (3, 6, 0, 1)
    );
    let mut roots = sweep.roots;
    roots.sort();
    assert_eq!(roots, ["handed", "late", "open"]);
    for (root, run) in [
        ("handed", "a"),
        ("handed", "a-next"),
        ("open", "b"),
        ("late", "a"),
    ] {
        assert_eq!(claim_in(&log, root, run).await, Claim::Retired, "R9");
    }
    let (sweep, _) = sweep_all(&*store, &log, std::time::SystemTime::now(), 10).await;
    assert_eq!((sweep.retired, sweep.kept), (0, 0), "nothing left");
}

async fn claim_in<L: AsyncHandoffLog<Payload>>(log: &L, root: &str, run: &str) -> Claim<Payload> {
    within("R5: a claim resolves", log.claim_async(root, run))
        .await
        .expect("a claim")
}

async fn owner_in<L: AsyncHandoffLog<Payload>>(log: &L, root: &str, run: &str) -> Epoch {
    match claim_in(log, root, run).await {
        Claim::Owner(epoch) => epoch,
        other => panic!("a claim of the open Run {run:?} answered {other:?}"),
    }
}

/// A pause handing Run `run` of `root` off to `{run}-next`.
fn pause_in(root: &str, run: &str) -> Pause {
    let mut pause = pause(run, "h");
    std::sync::Arc::make_mut(&mut pause.intent).root_run_id = root.into();
    pause
}
