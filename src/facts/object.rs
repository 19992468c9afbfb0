//! Facts decode only from JSON objects (SPEC §1).
//!
//! serde's derived `Deserialize` for a struct also accepts a sequence of its
//! fields by position, so `["h","e","run","run-2","inv-2","c"]` would decode
//! as a [`HandoffIntent`]. A fact from another host that drops its field
//! names is malformed: its meaning hangs on an order nobody agreed to. So
//! each fact's `Deserialize` is written here: a private mirror derives the
//! decoding with `#[serde(remote = …)]` (the compiler checks that it names
//! exactly the fact's fields, with their types), and [`ObjectOnly`] lets it
//! see only a map. Anything else is the derive's own typed error, naming the
//! fact: `invalid type: sequence, expected HandoffIntent as a JSON object`.
//!
//! Nested facts go through their own `Deserialize`, so an array in place of
//! the `intent` of a pause, or of its `execution.replay`, is refused the same
//! way, at its path.

use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, forward_to_deserialize_any};

use super::{
    CompactionBudget, Digest, HandoffExecution, HandoffIntent, HandoffPause, HandoffTools,
    Invocation, ReplayEvidence,
};

/// A deserializer that hands a struct's visitor only a JSON object: it
/// forwards `deserialize_struct` with the visitor wrapped in [`MapOnly`].
/// The mirrors below call nothing else; every other request is forwarded
/// unchanged.
struct ObjectOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for ObjectOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_struct(name, fields, MapOnly { name, visitor })
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// A struct visitor that accepts a map only: a sequence (or a scalar) is
/// serde's "invalid type" error, expecting the named object.
struct MapOnly<V> {
    name: &'static str,
    visitor: V,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for MapOnly<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} as a JSON object", self.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(map)
    }
}

/// `impl Deserialize for $fact`, decoding through the mirror `$wire` and
/// [`ObjectOnly`].
macro_rules! object_only {
    ($fact:ident $(<$p:ident>)?, $wire:ident) => {
        impl<'de, $($p: Deserialize<'de>)?> Deserialize<'de> for $fact$(<$p>)? {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $wire::deserialize(ObjectOnly(deserializer))
            }
        }
    };
}

#[derive(Deserialize)]
#[serde(remote = "Invocation", rename = "Invocation", deny_unknown_fields)]
struct InvocationWire {
    session_id: String,
    turn_id: String,
    run_id: String,
    invocation_id: String,
}
object_only!(Invocation, InvocationWire);

#[derive(Deserialize)]
#[serde(
    remote = "HandoffIntent",
    rename = "HandoffIntent",
    deny_unknown_fields
)]
struct HandoffIntentWire {
    handoff_id: String,
    host_epoch: String,
    root_run_id: String,
    successor_run_id: String,
    successor_invocation_id: String,
    claim_id: String,
}
object_only!(HandoffIntent, HandoffIntentWire);

#[derive(Deserialize)]
#[serde(remote = "HandoffPause", rename = "HandoffPause", deny_unknown_fields)]
struct HandoffPauseWire<P> {
    intent: Arc<HandoffIntent>,
    execution: P,
}
object_only!(HandoffPause<P>, HandoffPauseWire);

#[derive(Deserialize)]
#[serde(
    remote = "ReplayEvidence",
    rename = "ReplayEvidence",
    deny_unknown_fields
)]
struct ReplayEvidenceWire {
    version: u32,
    digest: Digest,
    route_identity: Digest,
}
object_only!(ReplayEvidence, ReplayEvidenceWire);

#[derive(Deserialize)]
#[serde(remote = "HandoffTools", rename = "HandoffTools", deny_unknown_fields)]
struct HandoffToolsWire {
    catalog_digest: Digest,
    loaded: Vec<String>,
}
object_only!(HandoffTools, HandoffToolsWire);

#[derive(Deserialize)]
#[serde(
    remote = "HandoffExecution",
    rename = "HandoffExecution",
    deny_unknown_fields
)]
struct HandoffExecutionWire {
    replay: ReplayEvidence,
    tools: HandoffTools,
    compaction: CompactionBudget,
    main_output_limit: Option<u32>,
    supports_vision: bool,
    replay_base: Option<Digest>,
}
object_only!(HandoffExecution, HandoffExecutionWire);
