//! The checks every store makes of its input before it writes: ids,
//! intents, and JSON that reads back equal (G2).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::facts::{HandoffPause, Invocation, check_id};

use super::error::LogError;
use super::facts::RunField;

/// The pure checks of every [`HandoffLog::append`](crate::durable::HandoffLog::append)'s input, made before
/// the store is consulted: the Run's ids, the source's other ids (each as
/// [`check_id`] wants it, so no store meets text it cannot hold), then the
/// intent against the source ([`HandoffIntent::validate_for`]).
///
/// A store of your own calls it first, so that it refuses bad input as
/// baton's stores do.
///
/// # Errors
///
/// [`LogError::InvalidRun`] naming the first invalid id (`root_run_id`,
/// `run_id`, `session_id`, `turn_id`, `invocation_id`), else
/// [`LogError::InvalidPause`].
///
/// [`HandoffIntent::validate_for`]: crate::facts::HandoffIntent::validate_for
pub fn check_append<P>(
    root_run_id: &str,
    source: &Invocation,
    pause: &HandoffPause<P>,
) -> Result<(), LogError> {
    check_finish(root_run_id, source)?;
    pause
        .intent
        .validate_for(source, root_run_id)
        .map_err(LogError::InvalidPause)
}

/// The pure checks of every [`HandoffLog::finish`](crate::durable::HandoffLog::finish)'s input, made before the
/// store is consulted: the Run's ids and the source's other ids, each as
/// [`check_id`] wants it.
///
/// # Errors
///
/// [`LogError::InvalidRun`] naming the first invalid id (`root_run_id`,
/// `run_id`, `session_id`, `turn_id`, `invocation_id`).
pub fn check_finish(root_run_id: &str, source: &Invocation) -> Result<(), LogError> {
    check_run(root_run_id, &source.run_id)?;
    for (field, id) in [
        (RunField::SessionId, &source.session_id),
        (RunField::TurnId, &source.turn_id),
        (RunField::InvocationId, &source.invocation_id),
    ] {
        check_id(id).map_err(|error| LogError::InvalidRun { field, error })?;
    }
    Ok(())
}

/// Encodes a pause or an outcome as JSON, as every store writes it, and
/// checks that the encoding decodes back to an equal value (G2: what a
/// store acknowledges reads back equal). Every store — [`MemoryLog`](crate::durable::MemoryLog)
/// included, so that all keep one behaviour — calls it before anything is
/// written, and a store of your own should too.
///
/// ```
/// use baton::durable::{LogError, encode_checked};
///
/// assert_eq!(encode_checked(&vec![1.5_f64])?, "[1.5]");
/// // NaN encodes as `null`, which does not read back as a number.
/// assert!(matches!(encode_checked(&f64::NAN), Err(LogError::Encode(_))));
/// assert!(matches!(encode_checked(&Some(f64::INFINITY)), Err(LogError::Encode(_))));
/// # Ok::<(), LogError>(())
/// ```
///
/// # Errors
///
/// [`LogError::Encode`] if the value does not encode, or its encoding does
/// not decode, or decodes to a value that is not equal to it.
pub fn encode_checked<T>(value: &T) -> Result<String, LogError>
where
    T: Serialize + DeserializeOwned + PartialEq,
{
    let json = serde_json::to_string(value).map_err(LogError::Encode)?;
    let read_back: T = serde_json::from_str(&json).map_err(LogError::Encode)?;
    if read_back != *value {
        return Err(LogError::Encode(
            <serde_json::Error as serde::ser::Error>::custom(
                "the encoding decodes to a value that is not equal to the one encoded",
            ),
        ));
    }
    Ok(json)
}

/// Checks the id of a root Run to retire.
pub(crate) fn check_root(root_run_id: &str) -> Result<(), LogError> {
    check_id(root_run_id).map_err(|error| LogError::InvalidRun {
        field: RunField::RootRunId,
        error,
    })
}

/// Checks the ids of a Run asked about.
pub(crate) fn check_run(root_run_id: &str, run_id: &str) -> Result<(), LogError> {
    check_id(root_run_id).map_err(|error| LogError::InvalidRun {
        field: RunField::RootRunId,
        error,
    })?;
    check_id(run_id).map_err(|error| LogError::InvalidRun {
        field: RunField::RunId,
        error,
    })
}
