//! `facts_json`: arbitrary bytes decoded as each JSON fact.
//!
//! Decoding never panics (SPEC §1 "Facts"). Whatever decodes and validates
//! must round-trip: its encoding decodes back equal and encodes again to the
//! same bytes, and it says what the input said — the input's JSON value,
//! with `null` for optional fields it left out, is the encoding's value.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Rejected, source};
use crate::facts::{HandoffExecution, HandoffIntent, HandoffPause, Invocation, from_json};

/// The largest input tried, in bytes; a fact is far smaller.
pub const MAX_BYTES: usize = 4096;

/// The `facts_json` target: decodes `data` as [`Invocation`],
/// [`HandoffIntent`] and `HandoffPause<HandoffExecution>`. Panics if a valid
/// fact does not round-trip.
pub fn facts_json(data: &[u8]) -> Result<(), Rejected> {
    if data.len() > MAX_BYTES {
        return Err(Rejected);
    }
    round_trips(data);
    Ok(())
}

/// The body of [`facts_json()`]: which of the three facts `data` decoded to
/// and validated as, each checked to round-trip.
pub fn round_trips(data: &[u8]) -> [bool; 3] {
    [
        round_trip::<Invocation>(data, |_| true),
        round_trip::<HandoffIntent>(data, |intent| intent.validate(&source()).is_ok()),
        round_trip::<HandoffPause<HandoffExecution>>(data, |pause| {
            pause.intent.validate(&source()).is_ok() && pause.execution.validate().is_ok()
        }),
    ]
}

/// Decodes `data` as `T`; if it decodes and is `valid`, checks the round
/// trip and returns `true`.
fn round_trip<T>(data: &[u8], valid: impl Fn(&T) -> bool) -> bool
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let Ok(fact) = from_json::<T>(data) else {
        return false;
    };
    if !valid(&fact) {
        return false;
    }
    let type_name = std::any::type_name::<T>();
    let encoded = serde_json::to_vec(&fact).expect("a fact always encodes");
    let again: T = from_json(&encoded)
        .unwrap_or_else(|error| panic!("{type_name}: its own encoding fails to decode: {error}"));
    assert_eq!(again, fact, "{type_name}: decodes back different");
    let twice = serde_json::to_vec(&again).expect("a fact always encodes");
    assert_eq!(
        twice, encoded,
        "{type_name}: encodes differently the second time"
    );
    let mut said: Value = serde_json::from_slice(data).expect("the input decoded, so it is JSON");
    let encoded: Value = serde_json::from_slice(&encoded).expect("an encoding is JSON");
    fill_left_out_nulls(&mut said, &encoded);
    assert_eq!(
        said, encoded,
        "{type_name}: the encoding says something else than the input"
    );
    true
}

/// Adds to `said` every object member that `encoded` has as `null` and
/// `said` leaves out (serde reads a missing `Option` field as `None`).
fn fill_left_out_nulls(said: &mut Value, encoded: &Value) {
    match (said, encoded) {
        (Value::Object(said), Value::Object(encoded)) => {
            for (key, value) in encoded {
                match said.get_mut(key) {
                    Some(inner) => fill_left_out_nulls(inner, value),
                    None if value.is_null() => {
                        said.insert(key.clone(), Value::Null);
                    }
                    None => {}
                }
            }
        }
        (Value::Array(said), Value::Array(encoded)) => {
            for (inner, value) in said.iter_mut().zip(encoded) {
                fill_left_out_nulls(inner, value);
            }
        }
        _ => {}
    }
}
