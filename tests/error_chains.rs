//! Error chains print each cause once: an error either says its cause in
//! its message or returns it from `source()`, never both. A reporter that
//! walks the chain (`anyhow`'s `{:#}`, `eyre`, a log line per cause) would
//! otherwise print "invalid handoff intent: claim_id is empty" and then
//! "claim_id is empty" again.

use std::error::Error;
use std::str::FromStr;

use baton::facts::{
    Digest, ExecutionError, Field, HandoffExecution, HandoffIntent, HandoffPause, IdError,
    IntentError, from_json,
};
use baton::ledger::RegisterError;
use baton::{GateError, Phase};

/// The messages of `error` and of every source below it, outermost first.
fn chain(error: &dyn Error) -> Vec<String> {
    let mut messages = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(error) = cause {
        messages.push(error.to_string());
        cause = error.source();
    }
    messages
}

/// No message in `error`'s chain contains the message of a cause below it.
fn assert_prints_each_cause_once(error: &dyn Error) {
    let messages = chain(error);
    for (at, outer) in messages.iter().enumerate() {
        for inner in &messages[at + 1..] {
            assert!(
                !outer.contains(inner.as_str()),
                "{outer:?} repeats its source {inner:?} (chain {messages:?})"
            );
        }
    }
}

fn intent_errors() -> Vec<IntentError> {
    vec![
        IntentError::Empty(Field::ClaimId),
        IntentError::TooLong {
            field: Field::HandoffId,
            len: 300,
        },
        IntentError::ControlCharacter(Field::HostEpoch),
        IntentError::SuccessorIsSource(Field::SuccessorRunId),
        IntentError::OtherRootRun {
            expected: "run".into(),
            found: "other".into(),
        },
    ]
}

/// Every error of the gate and of the facts it checks: a cause is printed
/// once, whichever way a reporter reads the chain.
#[test]
fn no_gate_or_intent_error_repeats_its_source_in_its_message() {
    for error in intent_errors() {
        assert_prints_each_cause_once(&error);
        assert_prints_each_cause_once(&GateError::from(error));
    }
    for error in [
        GateError::Busy,
        GateError::HandedOff,
        GateError::Closed,
        GateError::TicketsExhausted,
    ] {
        assert_prints_each_cause_once(&error);
    }
    for error in [
        baton::ReadyError::Released,
        baton::ReadyError::HandedOff,
        baton::ReadyError::Closed,
    ] {
        assert_prints_each_cause_once(&error);
    }
    for error in [
        baton::CommitError::Canceled,
        baton::CommitError::Released,
        baton::CommitError::HandedOff,
        baton::CommitError::Closed,
    ] {
        assert_prints_each_cause_once(&error);
    }
    assert_prints_each_cause_once(&baton::WaitError::Closed);
    assert_prints_each_cause_once(&baton::BoundaryError::HandedOff);
    assert_prints_each_cause_once(&baton::BoundaryError::Closed);
}

/// The invalid-input message still says why: the cause is printed once,
/// not dropped.
#[test]
fn an_invalid_input_error_says_its_cause_in_its_message() {
    let error = GateError::from(IntentError::Empty(Field::ClaimId));
    assert_eq!(chain(&error), ["invalid handoff intent: claim_id is empty"]);
}

/// A decoding error names the path and the fault once.
#[test]
fn no_decode_error_repeats_its_source_in_its_message() {
    let digest = format!("\"sha256:{}\"", "a".repeat(64));
    let bad_digest = format!(
        r#"{{"replay":{{"version":1,"digest":"sha256:ABC","route_identity":{digest}}},"tools":{{"catalog_digest":{digest},"loaded":[]}},"compaction":"available","main_output_limit":null,"supports_vision":false,"replay_base":null}}"#
    );
    let inputs: [&[u8]; 6] = [
        b"",
        br#"{"handoff_id": 3}"#,
        br#"{"handoff_id": "h"}"#,
        br#"["h","e","run","run-2","inv-2","c"]"#,
        b"{} trailing",
        b"\xff",
    ];
    for input in inputs {
        let error = from_json::<HandoffIntent>(input).unwrap_err();
        assert_prints_each_cause_once(&error);
    }
    let error = from_json::<HandoffExecution>(bad_digest.as_bytes()).unwrap_err();
    assert_prints_each_cause_once(&error);
    let error = from_json::<HandoffPause<u32>>(br#"{"intent": []}"#).unwrap_err();
    assert_prints_each_cause_once(&error);
    let error = from_json::<HandoffIntent>(br#"{"handoff_id": 3}"#).unwrap_err();
    assert_eq!(
        chain(&error),
        ["handoff_id: invalid type: integer `3`, expected a string at line 1 column 16"]
    );
}

/// The ledger's, the cancel signal's and the payload's errors print each
/// cause once too.
#[test]
fn no_ledger_cancel_or_payload_error_repeats_its_source_in_its_message() {
    for error in [
        IdError::Empty,
        IdError::TooLong(300),
        IdError::ControlCharacter,
    ] {
        assert_prints_each_cause_once(&error);
        assert_prints_each_cause_once(&RegisterError::InvalidId(error));
    }
    for error in [
        RegisterError::NoTaskInScope,
        RegisterError::OtherTask {
            scoped: "a".into(),
            found: "b".into(),
        },
        RegisterError::DuplicateId,
    ] {
        assert_prints_each_cause_once(&error);
    }
    for text in [
        "sha512:",
        "sha256:abc",
        &format!("sha256:{}", "A".repeat(64)),
    ] {
        assert_prints_each_cause_once(&Digest::parse(text).unwrap_err());
    }
    assert_prints_each_cause_once(&ExecutionError::ReplayVersion(0));
    assert_prints_each_cause_once(&ExecutionError::ToolName(1));
    assert_prints_each_cause_once(&Phase::from_str("Turn").unwrap_err());
}

/// The log's refusals name what happened to the operation that was sent,
/// not to another: a finish refused on a handed-off Run speaks of no
/// pause it never offered, and an intent for another root Run appended
/// straight to the log speaks of no gate.
#[test]
fn the_logs_refusals_name_the_operation_they_refuse() {
    use baton::durable::{Claim, HandoffLog, LogError, MemoryLog};

    let log: MemoryLog<u32> = MemoryLog::new();
    let source = baton::Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    };
    let intent = |root: &str| HandoffIntent {
        handoff_id: "handoff".into(),
        host_epoch: "host".into(),
        root_run_id: root.into(),
        successor_run_id: "successor".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    };
    let Ok(Claim::Owner(epoch)) = log.claim("root", "run") else {
        panic!("the claim")
    };
    let other_root = log.append(
        "root",
        &source,
        epoch,
        &HandoffPause::new(intent("elsewhere"), 1),
    );
    let Err(error @ LogError::InvalidPause(_)) = other_root else {
        panic!("{other_root:?}")
    };
    let message = chain(&error).join(": ");
    assert!(
        message.contains("\"elsewhere\"") && !message.contains("gate"),
        "{message}"
    );
    let handed_off = log.append(
        "root",
        &source,
        epoch,
        &HandoffPause::new(intent("root"), 1),
    );
    assert_eq!(handed_off.unwrap(), baton::durable::Receipt::Written);
    let finished = log.finish("root", &source, epoch, &2);
    let Err(error @ LogError::AlreadyHandedOff { .. }) = finished else {
        panic!("{finished:?}")
    };
    assert!(!error.to_string().contains("pause"), "{error}");
}

/// `Unavailable` says what happened in its message and why in its
/// `source()`, which a reporter walking the chain prints (as
/// `LogError::Unavailable`'s docs say).
#[cfg(feature = "sqlite")]
#[test]
fn an_unavailable_store_says_why_in_its_source() {
    let dir = std::env::temp_dir().join(format!("baton-no-such-dir-{}", std::process::id()));
    let opened = baton::durable::SqliteLog::<u32>::open(dir.join("log.sqlite"));
    let Err(error @ baton::durable::LogError::Unavailable(_)) = opened else {
        panic!("{opened:?}")
    };
    let messages = chain(&error);
    assert!(
        messages.len() >= 2,
        "a cause below the message: {messages:?}"
    );
    assert_prints_each_cause_once(&error);
}
