//! The tiny subset of A2A v1 (protocol 1.0.x, ProtoJSON: camelCase fields)
//! the residue report needs, written here rather than taken from an A2A
//! SDK.

use serde::{Deserialize, Serialize};

/// An A2A `Artifact`: an output of a task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within its task. Required by the proto.
    pub artifact_id: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The content; at least one part.
    pub parts: Vec<Part>,
}

impl Artifact {
    /// An artifact whose id and name are both `name`.
    pub fn named(name: &str, parts: Vec<Part>) -> Self {
        Self {
            artifact_id: name.to_owned(),
            name: name.to_owned(),
            description: String::new(),
            parts,
        }
    }
}

/// An A2A `Part`: exactly one kind of content, plus its media type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// The content (exactly one of `text`, `raw`, `url`, `data`).
    #[serde(flatten)]
    pub content: Content,
    /// The MIME type of the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

/// The content of a [`Part`]: the proto's `oneof`, so exactly one is set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Content {
    /// Text.
    Text(String),
    /// Bytes, base64-encoded.
    Raw(String),
    /// A URL pointing at the content.
    Url(String),
    /// Any JSON value.
    Data(serde_json::Value),
}

impl Part {
    /// A JSON data part (`application/json`).
    pub fn data(value: serde_json::Value) -> Self {
        Self {
            content: Content::Data(value),
            media_type: Some("application/json".to_owned()),
        }
    }

    /// The data, if this is a data part.
    pub fn as_data(&self) -> Option<&serde_json::Value> {
        match &self.content {
            Content::Data(value) => Some(value),
            Content::Text(_) | Content::Raw(_) | Content::Url(_) => None,
        }
    }
}
