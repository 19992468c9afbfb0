//! `facts_json`: arbitrary bytes decoded as each JSON fact.
//!
//! Decoding never panics (SPEC §1 "Facts"). Facts decode only from JSON
//! objects (SPEC §1): whatever decodes, valid or not, had a JSON object
//! wherever its encoding has one, and its encoding with any one of its
//! objects given as the array of its members by position (serde's derive
//! would accept that for a struct) is refused. Whatever decodes and
//! validates must round-trip: its encoding decodes back equal and encodes
//! again to the same bytes, and it says what the input said — the input's
//! JSON value, with `null` for optional fields it left out, is the
//! encoding's value.

use std::fmt;

use serde::de::{DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Rejected, source};
use baton::facts::{HandoffExecution, HandoffIntent, HandoffPause, Invocation, from_json};

/// The largest input tried, in bytes; a fact is far smaller.
pub const MAX_BYTES: usize = 4096;

/// The `facts_json` target: decodes `data` as [`Invocation`],
/// [`HandoffIntent`] and `HandoffPause<HandoffExecution>`. Panics if a fact
/// decodes from anything but objects, or a valid one does not round-trip.
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

/// Decodes `data` as `T`; if it decodes, checks that it came from objects
/// only; if it is also `valid`, checks the round trip and returns `true`.
fn round_trip<T>(data: &[u8], valid: impl Fn(&T) -> bool) -> bool
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let Ok(fact) = from_json::<T>(data) else {
        return false;
    };
    let type_name = std::any::type_name::<T>();
    let encoded = serde_json::to_vec(&fact).expect("a fact always encodes");
    let said: Value = serde_json::from_slice(data).expect("the input decoded, so it is JSON");
    let ordered: Ordered = serde_json::from_slice(&encoded).expect("an encoding is JSON");
    assert!(
        objects_where_objects(&said, &ordered),
        "{type_name}: decodes from something else than an object where its encoding has one:\n  \
         input    {said}\n  encoding {ordered:?}"
    );
    for at in 0..ordered.objects() {
        let positional = ordered.positional(at).to_string();
        assert!(
            from_json::<T>(positional.as_bytes()).is_err(),
            "{type_name}: decodes from an array where an object belongs: {positional}"
        );
    }
    if !valid(&fact) {
        return false;
    }
    let again: T = from_json(&encoded)
        .unwrap_or_else(|error| panic!("{type_name}: its own encoding fails to decode: {error}"));
    assert_eq!(again, fact, "{type_name}: decodes back different");
    let twice = serde_json::to_vec(&again).expect("a fact always encodes");
    assert_eq!(
        twice, encoded,
        "{type_name}: encodes differently the second time"
    );
    assert!(
        says(&said, &ordered),
        "{type_name}: the encoding says something else than the input:\n  \
         input    {said}\n  encoding {ordered:?}"
    );
    true
}

/// Whether the input's JSON value `said` has an object wherever the
/// encoding `encoded` has one (members the input leaves out aside).
fn objects_where_objects(said: &Value, encoded: &Ordered) -> bool {
    match (said, encoded) {
        (Value::Object(said), Ordered::Object(members)) => members.iter().all(|(name, value)| {
            said.get(name)
                .is_none_or(|inner| objects_where_objects(inner, value))
        }),
        (_, Ordered::Object(_)) => false,
        (Value::Array(said), Ordered::Array(items)) => {
            said.len() == items.len()
                && said
                    .iter()
                    .zip(items)
                    .all(|(a, b)| objects_where_objects(a, b))
        }
        _ => true,
    }
}

/// A JSON value with its object members in document order (`Value` sorts
/// them), so that an object can be turned into the array that gives the
/// same struct by position.
#[derive(Debug)]
enum Ordered {
    Object(Vec<(String, Ordered)>),
    Array(Vec<Ordered>),
    Scalar(Value),
}

impl Ordered {
    /// The number of objects in the value, itself included.
    fn objects(&self) -> usize {
        match self {
            Self::Object(members) => 1 + members.iter().map(|(_, v)| v.objects()).sum::<usize>(),
            Self::Array(items) => items.iter().map(Self::objects).sum(),
            Self::Scalar(_) => 0,
        }
    }

    /// The value, with its object number `positional` (counted in document
    /// order from 0, outer before inner) given as the array of its members'
    /// values instead: serde's positional form of a struct.
    fn positional(&self, positional: usize) -> Value {
        self.to_value(Some(positional), &mut 0)
    }

    /// [`positional`](Self::positional), counting objects in `seen`; `None`
    /// keeps every object.
    fn to_value(&self, positional: Option<usize>, seen: &mut usize) -> Value {
        match self {
            Self::Object(members) => {
                let number = *seen;
                *seen += 1;
                if positional == Some(number) {
                    let values = members.iter().map(|(_, v)| v.to_value(None, seen));
                    Value::Array(values.collect())
                } else {
                    let members = members
                        .iter()
                        .map(|(name, v)| (name.clone(), v.to_value(positional, seen)));
                    Value::Object(members.collect())
                }
            }
            Self::Array(items) => {
                Value::Array(items.iter().map(|v| v.to_value(positional, seen)).collect())
            }
            Self::Scalar(value) => value.clone(),
        }
    }
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
/// reads a missing `Option` as `None`); where the encoding has an object
/// the input must have had one (an array is not a fact, SPEC §1).
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
        (Value::Array(said), Ordered::Array(items)) => {
            said.len() == items.len() && said.iter().zip(items).all(|(a, b)| says(a, b))
        }
        (said, Ordered::Scalar(value)) => said == value,
        (_, Ordered::Object(_) | Ordered::Array(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The positional form of each object of a valid pause, one at a time,
    /// outer before inner.
    #[test]
    fn each_object_of_an_encoding_can_be_given_by_position() {
        let json = br#"{"a":{"b":1,"c":{"d":2}},"e":[{"f":3}]}"#;
        let value: Ordered = serde_json::from_slice(json).unwrap();
        assert_eq!(value.objects(), 4);
        let forms: Vec<String> = (0..4).map(|at| value.positional(at).to_string()).collect();
        assert_eq!(
            forms,
            [
                r#"[{"b":1,"c":{"d":2}},[{"f":3}]]"#,
                r#"{"a":[1,{"d":2}],"e":[{"f":3}]}"#,
                r#"{"a":{"b":1,"c":[2]},"e":[{"f":3}]}"#,
                r#"{"a":{"b":1,"c":{"d":2}},"e":[[3]]}"#,
            ]
        );
    }

    /// SPEC §1: an intent (valid or not), a pause whose intent or replay
    /// evidence is given by position, and an invocation by position (the
    /// valid ones are in the corpus) are refused as every fact; the same
    /// facts as objects are accepted.
    #[test]
    fn an_array_where_an_object_belongs_decodes_as_no_fact() {
        let intent = r#"["h","e","run","run-2","inv-2","c"]"#;
        let object = r#"{"handoff_id":"h","host_epoch":"e","root_run_id":"run","successor_run_id":"run-2","successor_invocation_id":"inv-2","claim_id":"c"}"#;
        let digest = format!("\"sha256:{}\"", "a".repeat(64));
        let replay = format!(r#"{{"version":1,"digest":{digest},"route_identity":{digest}}}"#);
        let execution = |replay: &str| {
            format!(
                r#"{{"replay":{replay},"tools":{{"catalog_digest":{digest},"loaded":["shell"]}},"compaction":"available","main_output_limit":4096,"supports_vision":false,"replay_base":null}}"#
            )
        };
        let pause = |intent: &str, replay: &str| {
            format!(r#"{{"intent":{intent},"execution":{}}}"#, execution(replay))
        };
        let by_position = [
            intent.to_owned(),
            // Would not validate (an empty handoff_id): refused all the same.
            r#"["","e","run","run-2","inv-2","c"]"#.to_owned(),
            r#"["session","turn","run","invocation"]"#.to_owned(),
            pause(intent, &replay),
            pause(object, &format!("[1,{digest},{digest}]")),
        ];
        for json in &by_position {
            assert_eq!(round_trips(json.as_bytes()), [false; 3], "{json}");
        }
        assert_eq!(round_trips(object.as_bytes()), [false, true, false]);
        assert_eq!(
            round_trips(pause(object, &replay).as_bytes()),
            [false, false, true]
        );
    }
}
