//! [`SqliteLog`]'s async form: its blocking work leaves the executor, and
//! a dropped append is resolved as a lost reply.

use std::fmt;
use std::pin::pin;
use std::sync::{Arc, Mutex, mpsc};

use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{TempDb, owner};
use crate::durable::tests::{pause, source};
use crate::durable::{
    AsyncHandoffLog, Claim, Epoch, HandoffLog, LogError, Receipt, Retirement, SqliteLog,
};
use crate::facts::HandoffPause;
use crate::within::{BOUND, poll_once, within};

/// A payload whose encoding — the first part of an append's blocking work,
/// which [`SqliteLog`] runs on its own thread with the transaction and the
/// synced commit — meets another task of the test's runtime: it tells that
/// task it has begun (`entered`), then blocks its thread until the task
/// answers. If the append ran on the executor's thread, the task could not
/// run, and the encoding fails after `BOUND / 2` with
/// `EXECUTOR_BLOCKED`: a failed append, not a hang.
#[derive(Clone)]
struct Rendezvous(Option<Arc<Mutex<Option<Meeting>>>>);

struct Meeting {
    entered: tokio::sync::oneshot::Sender<()>,
    answered: mpsc::Receiver<()>,
}

const EXECUTOR_BLOCKED: &str =
    "the other task never answered: the append's blocking work ran on the executor's thread";

impl Serialize for Rendezvous {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let meeting = self.0.as_ref().and_then(|m| m.lock().unwrap().take());
        if let Some(Meeting { entered, answered }) = meeting {
            let _ = entered.send(());
            answered
                .recv_timeout(BOUND / 2)
                .map_err(|_| S::Error::custom(EXECUTOR_BLOCKED))?;
        }
        serializer.serialize_u32(0)
    }
}

impl<'de> Deserialize<'de> for Rendezvous {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u32::deserialize(deserializer).map(|_| Rendezvous(None))
    }
}

impl PartialEq for Rendezvous {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for Rendezvous {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Rendezvous")
    }
}

/// The point of the async form (issue 20), decided by construction: on a
/// `current_thread` runtime, an append whose blocking work cannot finish
/// until another task of the same runtime has run and answered. It
/// resolves `Written` only if that work left the executor's thread.
#[tokio::test(flavor = "current_thread")]
async fn an_async_append_runs_its_blocking_work_off_a_current_thread_executor() {
    let db = TempDb::new();
    let log: SqliteLog<Rendezvous> = SqliteLog::open(&db.0).unwrap();
    let Claim::Owner(epoch) = log.claim("root", "run").unwrap() else {
        panic!("a fresh Run is open");
    };
    let (entered, on_entered) = tokio::sync::oneshot::channel();
    let (answer, answered) = mpsc::channel();
    let other = tokio::spawn(async move {
        on_entered.await.expect("the append's encoding began");
        answer
            .send(())
            .expect("the append's encoding waits for this");
    });
    let meeting = Meeting { entered, answered };
    let pause = HandoffPause::new(
        pause("h").intent,
        Rendezvous(Some(Arc::new(Mutex::new(Some(meeting))))),
    );
    let appended = within(
        "R4: the async append resolves once the other task has answered",
        log.append_async("root", &source(), epoch, &pause),
    )
    .await;
    let appended = appended.map_err(|error| {
        let mut chain = error.to_string();
        let mut cause = std::error::Error::source(&error);
        while let Some(next) = cause {
            chain = format!("{chain}: {next}");
            cause = next.source();
        }
        chain
    });
    assert_eq!(
        appended,
        Ok(Receipt::Written),
        "the executor's other task ran while the append's blocking work waited"
    );
    within("the other task ends", other).await.unwrap();
    assert_eq!(
        log.facts("root", "run").unwrap().pauses.len(),
        1,
        "R4: durable"
    );
}

/// Polls an append once, which hands it to the log's thread, then drops
/// its future, whatever the poll returned.
fn send_and_drop_append(
    log: &SqliteLog<u32>,
    epoch: Epoch,
    source: &crate::facts::Invocation,
    pause: &HandoffPause<u32>,
) {
    let _ = poll_once(pin!(log.append_async("root", source, epoch, pause)));
}

/// Cancel safety, as documented: an append dropped after its first poll
/// may still commit — the case of a lost reply — and the identical append
/// again resolves it (`AlreadyDurable`); the owner's claim says `HandedOff`.
#[tokio::test]
async fn an_async_append_dropped_in_flight_still_commits_and_a_retry_is_idempotent_r1() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&log);
    let (source, pause) = (source(), pause("h"));
    send_and_drop_append(&log, epoch, &source, &pause);
    // The log's thread runs its jobs in order: this read comes after it.
    let facts = within("the facts are read", log.facts_async("root", "run"))
        .await
        .unwrap();
    assert_eq!(facts.pauses.len(), 1, "the dropped append committed");
    assert_eq!(
        within(
            "R4: the retry resolves",
            log.append_async("root", &source, epoch, &pause)
        )
        .await
        .unwrap(),
        Receipt::AlreadyDurable,
        "the identical append again is idempotent"
    );
    assert!(
        matches!(
            log.claim_async("root", "run").await,
            Ok(Claim::HandedOff(_))
        ),
        "R1: a claim after the lost reply answers HandedOff, no new epoch"
    );
    assert_eq!(log.facts("root", "run").unwrap().epoch, Epoch::new(1));
}

/// `close` waits for the log's thread: an append sent before it (its
/// future polled once, then dropped) is durable when `close` returns, and
/// the connection is closed, so the last close has removed the WAL file;
/// a fresh open of the file reads the append.
#[test]
fn close_runs_the_operations_sent_then_closes_the_connection_r1() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    send_and_drop_append(&log, owner(&log), &source(), &pause("h"));
    log.close();
    let wal = std::path::PathBuf::from(format!("{}-wal", db.0.display()));
    assert!(
        !wal.exists(),
        "the connection outlived close: {wal:?} is still there"
    );
    let reopened: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    assert_eq!(
        reopened.facts("root", "run").unwrap().pauses.len(),
        1,
        "the append sent before close is durable"
    );
}

/// R8 for the async form, by construction as for the append: a finish
/// whose outcome's encoding cannot end until another task of the same
/// `current_thread` runtime has run resolves `Written` only if its
/// blocking work (the encoding, the transaction, the synced commit) left
/// the executor's thread.
#[tokio::test(flavor = "current_thread")]
async fn r8_an_async_finish_runs_its_blocking_work_off_a_current_thread_executor() {
    let db = TempDb::new();
    let log: SqliteLog<Rendezvous> = SqliteLog::open(&db.0).unwrap();
    let Claim::Owner(epoch) = log.claim("root", "run").unwrap() else {
        panic!("a fresh Run is open");
    };
    let (entered, on_entered) = tokio::sync::oneshot::channel();
    let (answer, answered) = mpsc::channel();
    let other = tokio::spawn(async move {
        on_entered.await.expect("the finish's encoding began");
        answer
            .send(())
            .expect("the finish's encoding waits for this");
    });
    let outcome = Rendezvous(Some(Arc::new(Mutex::new(Some(Meeting {
        entered,
        answered,
    })))));
    let finished = within(
        "R4: the async finish resolves once the other task has answered",
        log.finish_async("root", &source(), epoch, &outcome),
    )
    .await
    .map_err(|error| error.to_string());
    assert_eq!(
        finished,
        Ok(Receipt::Written),
        "the executor's other task ran while the finish's blocking work waited"
    );
    within("the other task ends", other).await.unwrap();
    assert!(
        matches!(log.claim("root", "run"), Ok(Claim::Finished(_))),
        "R8: durable, never resumed"
    );
}

/// The async finish and retirement, as the blocking ones and cancel safe
/// as documented: a finish dropped after its first poll may still commit
/// (a lost reply), and the identical finish again resolves it
/// (`AlreadyDurable`); a retirement awaited retires the root once, a
/// second is `AlreadyRetired`; then a claim answers `Retired` and a
/// zombie's finish is refused.
#[tokio::test]
async fn r8_r9_an_async_finish_dropped_in_flight_still_commits_and_retire_async_retires_once() {
    let db = TempDb::new();
    let log: SqliteLog<u32> = SqliteLog::open(&db.0).unwrap();
    let epoch = owner(&log);
    let source = source();
    let _ = poll_once(pin!(log.finish_async("root", &source, epoch, &7)));
    // The log's thread runs its jobs in order: this read comes after it.
    let facts = within("the facts are read", log.facts_async("root", "run"))
        .await
        .unwrap();
    assert_eq!(
        facts.finished.map(|finished| finished.outcome),
        Some(7),
        "the dropped finish committed"
    );
    assert_eq!(
        within(
            "R4: the retry resolves",
            log.finish_async("root", &source, epoch, &7)
        )
        .await
        .unwrap(),
        Receipt::AlreadyDurable,
        "the identical finish again is idempotent"
    );
    assert_eq!(
        within("the claim resolves", log.claim_async("root", "run"))
            .await
            .unwrap(),
        Claim::Finished(7),
        "R8: no new epoch"
    );
    assert_eq!(
        within("the retirement resolves", log.retire_async("root"))
            .await
            .unwrap(),
        Retirement::Retired { runs: 1 }
    );
    assert_eq!(
        within("the retirement resolves", log.retire_async("root"))
            .await
            .unwrap(),
        Retirement::AlreadyRetired
    );
    assert_eq!(
        within("the claim resolves", log.claim_async("root", "run"))
            .await
            .unwrap(),
        Claim::Retired,
        "R9"
    );
    assert!(matches!(
        within(
            "the zombie's finish resolves",
            log.finish_async("root", &source, epoch, &7)
        )
        .await,
        Err(LogError::Retired { .. })
    ));
    assert!(matches!(
        within("an invalid root resolves", log.retire_async("")).await,
        Err(LogError::InvalidRun { .. })
    ));
}
