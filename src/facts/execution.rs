//! [`HandoffExecution`]: the original runtime's pause payload, kept as the
//! example payload for docs, tests and examples.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The replay-evidence format version this crate writes and accepts.
pub const REPLAY_VERSION: u32 = 1;

const DIGEST_PREFIX: &str = "sha256:";
const DIGEST_HEX_LEN: usize = 64;

/// A content digest: `sha256:` followed by exactly 64 lowercase hex digits.
///
/// A `Digest` can only be built by [`Digest::parse`] (or by decoding, which
/// calls it), so holding one means it is well formed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Digest(String);

/// Why a string is not a [`Digest`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum DigestError {
    /// It does not start with `sha256:`.
    #[error("digest does not start with \"sha256:\"")]
    MissingPrefix,
    /// The hex part is not exactly 64 digits long.
    #[error("digest has {0} hex digits, expected 64")]
    Length(usize),
    /// The hex part contains something other than `0-9a-f`.
    #[error("digest contains a character that is not a lowercase hex digit")]
    NotLowercaseHex,
}

impl Digest {
    /// Parses `sha256:<64 lowercase hex digits>`.
    ///
    /// # Errors
    ///
    /// [`DigestError::MissingPrefix`], [`DigestError::Length`] (the number
    /// of hex digits found) or [`DigestError::NotLowercaseHex`].
    pub fn parse(text: impl Into<String>) -> Result<Self, DigestError> {
        let text = text.into();
        let hex = text
            .strip_prefix(DIGEST_PREFIX)
            .ok_or(DigestError::MissingPrefix)?;
        if hex.len() != DIGEST_HEX_LEN {
            return Err(DigestError::Length(hex.len()));
        }
        if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(DigestError::NotLowercaseHex);
        }
        Ok(Self(text))
    }

    /// The digest as text, `sha256:…`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Only well-formed digests: 32 arbitrary bytes as `sha256:` and 64
/// lowercase hex digits, so a generated [`HandoffExecution`] is one
/// [`Digest::parse`] accepts.
#[cfg(feature = "arbitrary")]
#[cfg_attr(docsrs, doc(cfg(feature = "arbitrary")))]
impl<'a> arbitrary::Arbitrary<'a> for Digest {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        use std::fmt::Write as _;
        let bytes: [u8; DIGEST_HEX_LEN / 2] = u.arbitrary()?;
        let mut text = String::with_capacity(DIGEST_PREFIX.len() + DIGEST_HEX_LEN);
        text.push_str(DIGEST_PREFIX);
        for byte in bytes {
            let _ = write!(text, "{byte:02x}");
        }
        Ok(Self(text))
    }
}

impl TryFrom<String> for Digest {
    type Error = DigestError;

    fn try_from(text: String) -> Result<Self, DigestError> {
        Self::parse(text)
    }
}

impl From<Digest> for String {
    fn from(digest: Digest) -> String {
        digest.0
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Evidence that lets a successor replay the Run's history deterministically.
///
/// Decodes only from a JSON object with exactly these fields (SPEC §1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ReplayEvidence {
    /// Format version; this crate writes [`REPLAY_VERSION`].
    pub version: u32,
    /// Digest of the replayable history.
    pub digest: Digest,
    /// Digest of the route (model, provider) the history was produced on.
    pub route_identity: Digest,
}

/// The tools the Run had available and loaded.
///
/// Decodes only from a JSON object with exactly these fields (SPEC §1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct HandoffTools {
    /// Digest of the tool catalog.
    pub catalog_digest: Digest,
    /// Names of the tools loaded, in load order.
    pub loaded: Vec<String>,
}

/// Whether the Run may still compact its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CompactionBudget {
    /// Compaction is still available.
    Available,
    /// The compaction budget is used up.
    Exhausted,
}

/// Everything a successor worker needs to continue a Run: the original
/// runtime's pause payload, used as `P` in [`HandoffPause<P>`] by examples
/// and tests.
///
/// Decodes only from a JSON object with these fields and no others (SPEC
/// §1); `main_output_limit` and `replay_base` may be left out, and read as
/// `None`.
///
/// ```
/// use baton::facts::{HandoffExecution, from_json};
///
/// let digest = format!("\"sha256:{}\"", "a".repeat(64));
/// let json = format!(
///     r#"{{"replay":{{"version":1,"digest":{digest},"route_identity":{digest}}},
///         "tools":{{"catalog_digest":{digest},"loaded":[]}},
///         "compaction":"available","supports_vision":false}}"#
/// );
/// let execution: HandoffExecution = from_json(json.as_bytes())?;
/// assert_eq!((execution.main_output_limit, execution.replay_base), (None, None));
/// # Ok::<(), baton::facts::DecodeError>(())
/// ```
///
/// [`HandoffPause<P>`]: crate::HandoffPause
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct HandoffExecution {
    /// Replay evidence for the history so far.
    pub replay: ReplayEvidence,
    /// The tools of the Run.
    pub tools: HandoffTools,
    /// The compaction budget left.
    pub compaction: CompactionBudget,
    /// The output limit of the main model, if any.
    pub main_output_limit: Option<u32>,
    /// Whether the route accepts images.
    pub supports_vision: bool,
    /// Digest of the history the replay starts from, if not the beginning.
    pub replay_base: Option<Digest>,
}

/// Why a [`HandoffExecution`] is not acceptable (beyond its digests, which
/// are checked when built).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum ExecutionError {
    /// `replay.version` is not [`REPLAY_VERSION`].
    #[error("replay.version is {0}, expected {REPLAY_VERSION}")]
    ReplayVersion(u32),
    /// A name in `tools.loaded` is empty or contains a control character.
    #[error("tools.loaded[{0}] is empty or contains a control character")]
    ToolName(usize),
}

impl HandoffExecution {
    /// Checks what the types cannot: the replay version and the tool names.
    ///
    /// # Errors
    ///
    /// [`ExecutionError::ReplayVersion`] for a version other than
    /// [`REPLAY_VERSION`]; [`ExecutionError::ToolName`] with the index of
    /// the first empty or control-character tool name.
    pub fn validate(&self) -> Result<(), ExecutionError> {
        if self.replay.version != REPLAY_VERSION {
            return Err(ExecutionError::ReplayVersion(self.replay.version));
        }
        if let Some(index) = self
            .tools
            .loaded
            .iter()
            .position(|name| name.is_empty() || name.chars().any(char::is_control))
        {
            return Err(ExecutionError::ToolName(index));
        }
        Ok(())
    }
}
