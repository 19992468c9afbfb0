//! The contract's read-back cases: the facts read back exactly what was
//! appended, as one snapshot, durable for every connection; a dropped
//! append resolved by the facts (R3, R4).

use std::pin::pin;
use std::sync::Arc;

use baton::durable::{Appended, AsyncHandoffLog, Claim, Epoch, Receipt};

use super::suite::{ROOT, append, claim, facts, owner, pause, row, source};
use super::{HoldsReads, Store};
use crate::within::{poll_once, within};

/// R3: what a claim decides is what the log holds: the facts read back
/// exactly the rows appended (the whole pause, payload included), with the
/// Run's epoch; each Run — each hop of a chain, the same run id under
/// another root Run, a Run never claimed — has facts of its own.
pub async fn r3_the_facts_read_back_exactly_what_was_appended_and_each_run_is_its_own<S: Store>(
    store: Arc<S>,
) {
    let log = store.open().await;
    let first = owner(&log, "a").await;
    let hop = pause("a", "h1");
    let _ = append(&log, &source("a"), first, &hop).await.unwrap();
    let next = owner(&log, "a-next").await;
    assert_eq!(next, Epoch::new(1), "each Run has its own epochs");
    let mut onward = pause("a-next", "h2");
    Arc::make_mut(&mut onward.intent).host_epoch = "another-host".into();
    let mut onward_source = source("a-next");
    onward_source.invocation_id = "a-next-invocation-1".into();
    let _ = append(&log, &onward_source, next, &onward).await.unwrap();

    let read = facts(&log, "a").await;
    assert_eq!(
        (read.root_run_id.as_str(), read.run_id.as_str(), read.epoch),
        (ROOT, "a", first)
    );
    assert_eq!(
        read.pauses,
        row("a", &hop),
        "R3: the row whole, payload included"
    );
    let read = facts(&log, "a-next").await;
    assert_eq!(
        read.pauses,
        vec![Appended {
            source: onward_source,
            pause: onward.clone()
        }]
    );
    assert_eq!(
        claim(&log, "a-next").await.unwrap(),
        Claim::HandedOff(onward),
        "R3: the claim answers what the facts hold"
    );
    let never = facts(&log, "never-claimed").await;
    assert_eq!((never.epoch, never.pauses.len()), (Epoch::NONE, 0));
    let elsewhere = within("R5", log.facts_async("other-root", "a"))
        .await
        .unwrap();
    assert_eq!((elsewhere.epoch, elsewhere.pauses.len()), (Epoch::NONE, 0));
    assert_eq!(
        within("R5", log.claim_async("other-root", "a"))
            .await
            .unwrap(),
        Claim::Owner(Epoch::new(1)),
        "the same run id under another root Run is another Run"
    );
}

/// R4: an acknowledged append is durable: a connection opened after the
/// appending one is gone reads it back, and its claim answers it.
pub async fn r4_an_acknowledged_append_is_durable_for_every_connection<S: Store>(store: Arc<S>) {
    let handoff = pause("run", "h");
    let epoch = {
        let log = store.open().await;
        let epoch = owner(&log, "run").await;
        assert_eq!(
            append(&log, &source("run"), epoch, &handoff).await.unwrap(),
            Receipt::Written
        );
        epoch
    };
    let later = store.open().await;
    let read = facts(&later, "run").await;
    assert_eq!((read.epoch, read.pauses), (epoch, row("run", &handoff)));
    assert_eq!(
        claim(&later, "run").await.unwrap(),
        Claim::HandedOff(handoff)
    );
}

/// A dropped append (its future polled once, then dropped: a caller that
/// gave up) is the case of a lost reply: it may or may not have committed,
/// and the facts decide — read on the same connection, then the identical
/// append again answers exactly what they said, and the log goes on.
pub async fn a_dropped_append_is_resolved_by_the_facts_and_an_identical_retry<S: Store>(
    store: Arc<S>,
) {
    let log = store.open().await;
    let epoch = owner(&log, "run").await;
    let handoff = pause("run", "h");
    let run_source = source("run");
    {
        let mut dropped = pin!(log.append_async(ROOT, &run_source, epoch, &handoff));
        let _ = poll_once(dropped.as_mut());
    }
    let read = facts(&log, "run").await;
    let expected = match read.pauses.len() {
        0 => Receipt::Written,
        1 => {
            assert_eq!(read.pauses, row("run", &handoff));
            Receipt::AlreadyDurable
        }
        n => panic!("{n} pauses for one Run"),
    };
    assert_eq!(
        append(&log, &source("run"), epoch, &handoff).await.unwrap(),
        expected,
        "the retry answers what the facts said"
    );
    assert_eq!(
        claim(&log, "run").await.unwrap(),
        Claim::HandedOff(handoff),
        "the log goes on after a dropped operation"
    );
}

/// R3: a read of the facts is one snapshot. The store holds a read between
/// its two reads (the epoch, then the pauses) while the Run is taken over
/// and handed off under the new epoch, both committed; the read must
/// answer facts that were true together at one moment — the Run before
/// the takeover, after it, or after the handoff — never the old epoch with
/// the new epoch's pause (a worker would see a pause its epoch could not
/// have written) or any other mix.
pub async fn r3_the_facts_are_one_snapshot_even_across_a_takeover_and_a_handoff<S: HoldsReads>(
    store: Arc<S>,
) {
    let log = store.open().await;
    let epoch = owner(&log, "run").await;
    let handoff = pause("run", "h");
    let read = within(
        "R5: a held read resolves once it is let go",
        store.read_across_a_takeover(&log, ROOT, "run", &source("run"), &handoff),
    )
    .await
    .expect("the held read answers");
    let next = epoch.next().expect("an epoch after the first");
    let true_once = [
        (epoch, Vec::new()),
        (next, Vec::new()),
        (next, row("run", &handoff)),
    ];
    assert!(
        true_once.contains(&(read.epoch, read.pauses.clone())),
        "R3: one snapshot: the read answered epoch {} with {} pause(s) (epoch {} had none, epoch {} \
         one), never true together",
        read.epoch,
        read.pauses.len(),
        epoch,
        next
    );
    let now = facts(&log, "run").await;
    assert_eq!(
        (now.epoch, now.pauses),
        (next, row("run", &handoff)),
        "the takeover and the handoff committed while the read was held"
    );
}

// --- A Run's whole life: the third fate, and retention (§6.1). ---
