//! The worker's last step: [`seal_step`] cell by cell, and the error chain.

use std::error::Error as _;

use super::*;
use crate::facts::{Field, IdError, IntentError};

/// Every answer an append can give, with the step R2/R7 require of it:
/// `Some(fenced)` for a close, `None` for a seal.
fn every_answer() -> Vec<(Result<Receipt, LogError>, Option<bool>)> {
    let (one, two) = (Epoch::new(1), Epoch::new(2));
    vec![
        (Ok(Receipt::Written), None),
        (Ok(Receipt::AlreadyDurable), None),
        (
            Err(LogError::Fenced {
                epoch: one,
                current: two,
            }),
            Some(true),
        ),
        (
            Err(LogError::InvalidPause(IntentError::Empty(Field::HandoffId))),
            Some(false),
        ),
        (
            Err(LogError::InvalidRun {
                field: "run_id",
                error: IdError::Empty,
            }),
            Some(false),
        ),
        (
            Err(LogError::AlreadyHandedOff {
                root_run_id: "root".into(),
                run_id: "run".into(),
            }),
            Some(false),
        ),
        (
            Err(LogError::EpochNotIssued {
                epoch: two,
                current: one,
            }),
            Some(false),
        ),
        (Err(LogError::EpochsExhausted), Some(false)),
        (
            Err(LogError::Contradictory(
                crate::durable::ReconcileError::ConflictingPauses { count: 2 },
            )),
            Some(false),
        ),
        (
            Err(LogError::UnknownSchema {
                found: 9,
                expected: 2,
            }),
            Some(false),
        ),
        (
            Err(LogError::Corrupt {
                run_id: "run".into(),
                reason: "altered".into(),
            }),
            Some(false),
        ),
        (
            Err(LogError::Encode(
                serde_json::from_str::<u32>("x").unwrap_err(),
            )),
            Some(false),
        ),
        (
            Err(LogError::Storage("the reply was lost".into())),
            Some(false),
        ),
    ]
}

/// R2 / R7, cell by cell: only an acknowledged append seals (with its
/// receipt); `Fenced` closes and says stop; every other error closes with
/// the log's error inside.
#[test]
fn seal_step_seals_only_an_acknowledged_append_and_closes_on_every_error_r2_r7() {
    for (answer, expected) in every_answer() {
        let shown = format!("{answer:?}");
        let receipt = answer.as_ref().ok().copied();
        let log_error = answer.as_ref().err().map(ToString::to_string);
        match (seal_step(answer), expected) {
            (SealStep::Seal(got), None) => assert_eq!(Some(got), receipt, "{shown}"),
            (SealStep::Close(SealError::Fenced { epoch, current }), Some(true)) => {
                assert_eq!((epoch, current), (Epoch::new(1), Epoch::new(2)), "{shown}")
            }
            (SealStep::Close(SealError::Append(inner)), Some(false)) => {
                assert_eq!(
                    Some(inner.to_string()),
                    log_error,
                    "{shown}: the log's own error"
                )
            }
            (step, expected) => panic!("R2/R7: {shown} gave {step:?}, expected {expected:?}"),
        }
    }
}

/// The error chain names each cause once: `SealError::Append`'s message
/// does not repeat the `LogError` its `source()` returns, nor
/// `LogError::Storage`'s the store's error.
#[test]
fn a_failed_appends_error_chain_prints_each_cause_once() {
    let error = SealError::Append(LogError::Storage("disk full".into()));
    let mut chain = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(next) = cause {
        chain.push(next.to_string());
        cause = next.source();
    }
    assert_eq!(
        chain,
        [
            "the durable append failed; the gate is closed without a seal",
            "storage failed",
            "disk full",
        ]
    );
    let encode = LogError::Encode(serde_json::from_str::<u32>("x").unwrap_err());
    let inner = encode
        .source()
        .expect("the JSON error is the source")
        .to_string();
    assert!(!encode.to_string().contains(&inner), "{encode}");
}
