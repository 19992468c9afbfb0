//! `facts_json`: arbitrary bytes decoded as each JSON fact.
//!
//! Decoding never panics (SPEC §1 "Facts"). Whatever decodes and validates
//! must round-trip: its encoding decodes back equal and encodes again to the
//! same bytes, and it says what the input said — the input's JSON value,
//! with `null` for optional fields it left out and structs given by
//! position (serde also accepts a struct as an array of its fields) lined
//! up with their members, is the encoding's value.

use std::fmt;

use serde::de::{DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
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
    let said: Value = serde_json::from_slice(data).expect("the input decoded, so it is JSON");
    let encoded: Ordered = serde_json::from_slice(&encoded).expect("an encoding is JSON");
    assert!(
        says(&said, &encoded),
        "{type_name}: the encoding says something else than the input:\n  \
         input    {said}\n  encoding {encoded:?}"
    );
    true
}

/// A JSON value with its object members in document order (`Value` sorts
/// them), so that an object can be lined up with an array that gave the same
/// struct by position.
#[derive(Debug)]
enum Ordered {
    Object(Vec<(String, Ordered)>),
    Array(Vec<Ordered>),
    Scalar(Value),
}

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = Ordered;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::Bool(value)))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(value)))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(value)))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(value)))
    }

    fn visit_str<E>(self, value: &str) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::from(value)))
    }

    fn visit_unit<E>(self) -> Result<Ordered, E> {
        Ok(Ordered::Scalar(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Ordered, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Ordered::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry()? {
            members.push(member);
        }
        Ok(Ordered::Object(members))
    }
}

/// Whether the input's JSON value `said` says what the encoding `encoded`
/// says. A member the input leaves out must be `null` in the encoding (serde
/// reads a missing `Option` as `None`); a struct the input gives as an array
/// (serde's positional form of a struct) must list the encoding's members
/// in order.
fn says(said: &Value, encoded: &Ordered) -> bool {
    match (said, encoded) {
        (Value::Object(said), Ordered::Object(members)) => {
            said.keys()
                .all(|key| members.iter().any(|(name, _)| name == key))
                && members.iter().all(|(name, value)| match said.get(name) {
                    Some(inner) => says(inner, value),
                    None => matches!(value, Ordered::Scalar(Value::Null)),
                })
        }
        (Value::Array(said), Ordered::Object(members)) => {
            said.len() == members.len()
                && said
                    .iter()
                    .zip(members)
                    .all(|(inner, (_, value))| says(inner, value))
        }
        (Value::Array(said), Ordered::Array(items)) => {
            said.len() == items.len() && said.iter().zip(items).all(|(a, b)| says(a, b))
        }
        (said, Ordered::Scalar(value)) => said == value,
        (_, Ordered::Object(_) | Ordered::Array(_)) => false,
    }
}
