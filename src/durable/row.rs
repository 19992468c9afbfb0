//! A stored pause row as the server stores read it back: decoded, and
//! checked against the key columns broken out beside it.

use serde::de::DeserializeOwned;

use super::contract::{Appended, LogError};
use crate::facts::{HandoffPause, Invocation, from_json};

/// A row whose columns disagree with its pause, or whose pause does not
/// decode: the store was altered outside baton.
pub(crate) fn corrupt(run_id: &str, reason: impl std::fmt::Display) -> LogError {
    LogError::Corrupt {
        run_id: run_id.to_owned(),
        reason: reason.to_string(),
    }
}

/// Decodes the pause `json` of the row stored for `root_run_id`'s Run
/// `source.run_id`, and checks its intent's ids against the row's `columns`
/// (`handoff_id`, `successor_run_id`, `successor_invocation_id`) and its
/// root Run against the key.
pub(crate) fn checked_row<P: DeserializeOwned>(
    root_run_id: &str,
    source: Invocation,
    columns: [String; 3],
    json: &str,
) -> Result<Appended<P>, LogError> {
    let run_id = source.run_id.as_str();
    let pause: HandoffPause<P> = from_json(json.as_bytes())
        .map_err(|error| corrupt(run_id, format_args!("the pause does not decode: {error}")))?;
    let intent = &pause.intent;
    let in_json = [
        &intent.handoff_id,
        &intent.successor_run_id,
        &intent.successor_invocation_id,
    ];
    if columns.iter().ne(in_json) || intent.root_run_id != root_run_id {
        return Err(corrupt(
            run_id,
            "the key columns disagree with the stored pause",
        ));
    }
    Ok(Appended { source, pause })
}

/// Decodes the outcome `json` of the finish row stored for the Run
/// `run_id` (any JSON value the outcome's `Deserialize` takes).
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn decoded_outcome<P: DeserializeOwned>(
    run_id: &str,
    json: &str,
) -> Result<P, LogError> {
    serde_json::from_str(json)
        .map_err(|error| corrupt(run_id, format_args!("the outcome does not decode: {error}")))
}
