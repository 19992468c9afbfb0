//! The facts a handoff is about, as serde types: where the Run is
//! ([`Invocation`]), what a requester asks for ([`HandoffIntent`]) and what the
//! worker prepared for the successor ([`HandoffPause`]).
//!
//! Facts arrive from other hosts, so every identifier of an intent is checked
//! by [`HandoffIntent::validate`] (and a log checks an append's source too,
//! [`check_append`](crate::durable::check_append)), and decoding malformed
//! JSON with [`from_json`] yields a [`DecodeError`] naming the path of the
//! field at fault (never a panic). Unknown fields are rejected: a fact that
//! says more than this version understands is not silently truncated. A
//! fact decodes only from a JSON object: the array of its fields by
//! position, which serde's derive would accept, is refused like any other
//! malformed fact.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use thiserror::Error;

mod execution;
mod object;

pub use execution::{
    CompactionBudget, Digest, DigestError, ExecutionError, HandoffExecution, HandoffTools,
    REPLAY_VERSION, ReplayEvidence,
};

/// The longest identifier accepted, in bytes (UTF-8).
///
/// Identifiers are opaque keys (UUIDs, ULIDs, `scheme:path` names); 256 bytes
/// holds any of them with room to spare while bounding what one intent can
/// make the gate store and compare.
pub const MAX_ID_BYTES: usize = 256;

/// Where a Run is: the session, turn, Run and invocation it executes in.
///
/// Decodes only from a JSON object with exactly these fields (SPEC §1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Invocation {
    /// The conversation session.
    pub session_id: String,
    /// The turn within the session.
    pub turn_id: String,
    /// The Run being executed.
    pub run_id: String,
    /// This particular invocation (one worker's execution) of the Run.
    pub invocation_id: String,
}

/// What a requester asks for: continue the Run under a successor.
///
/// Decodes only from a JSON object with exactly these fields (SPEC §1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct HandoffIntent {
    /// Identifies this handoff.
    pub handoff_id: String,
    /// The epoch of the host that asks, for the runtime to fence out stale
    /// hosts with (baton only checks that it is a valid id).
    pub host_epoch: String,
    /// The logical Run; a handoff never changes it.
    pub root_run_id: String,
    /// The Run the successor will execute; differs from the source's.
    pub successor_run_id: String,
    /// The successor's invocation; differs from the source's.
    pub successor_invocation_id: String,
    /// The requester's claim on the Run.
    pub claim_id: String,
}

/// The prepared pause: everything a successor needs to continue the Run.
///
/// `P` is the runtime's own payload; [`HandoffExecution`] is an example.
///
/// The intent is shared, not copied: a worker's preflight receives the
/// reserved intent as an `Arc` and puts that same `Arc` in its pause, so
/// preparing, holding, committing and sealing a pause never copies its ids.
/// On the wire it is the plain intent object.
///
/// Decodes only from a JSON object with exactly these fields (SPEC §1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct HandoffPause<P> {
    /// The intent this pause answers; must equal the requested one.
    pub intent: Arc<HandoffIntent>,
    /// The runtime's payload for the successor.
    pub execution: P,
}

impl<P> HandoffPause<P> {
    /// A pause answering `intent` (a [`HandoffIntent`], or the `Arc` a
    /// preflight receives) with the runtime's `execution` payload.
    pub fn new(intent: impl Into<Arc<HandoffIntent>>, execution: P) -> Self {
        Self {
            intent: intent.into(),
            execution,
        }
    }
}

/// A field of [`HandoffIntent`], named as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// `handoff_id`
    HandoffId,
    /// `host_epoch`
    HostEpoch,
    /// `root_run_id`
    RootRunId,
    /// `successor_run_id`
    SuccessorRunId,
    /// `successor_invocation_id`
    SuccessorInvocationId,
    /// `claim_id`
    ClaimId,
}

impl Field {
    /// The field's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::HandoffId => "handoff_id",
            Self::HostEpoch => "host_epoch",
            Self::RootRunId => "root_run_id",
            Self::SuccessorRunId => "successor_run_id",
            Self::SuccessorInvocationId => "successor_invocation_id",
            Self::ClaimId => "claim_id",
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an intent is not acceptable. Every variant names the field at fault.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum IntentError {
    /// The identifier is the empty string.
    #[error("{0} is empty")]
    Empty(Field),
    /// The identifier is longer than [`MAX_ID_BYTES`].
    #[error("{field} is {len} bytes, over the {MAX_ID_BYTES}-byte limit")]
    TooLong {
        /// The field at fault.
        field: Field,
        /// Its length in bytes.
        len: usize,
    },
    /// The identifier contains a control character (`char::is_control`).
    #[error("{0} contains a control character")]
    ControlCharacter(Field),
    /// The successor would be the source itself.
    #[error("{0} equals the source's")]
    SuccessorIsSource(Field),
    /// The intent names another logical Run than the one it is used with
    /// (the gate's, or the root Run of the log's append): "handoff changes
    /// the logical Run".
    #[error("the intent names root Run {found:?}, not {expected:?}, the root Run it is used with")]
    OtherRootRun {
        /// The root Run the intent is used with.
        expected: String,
        /// The intent's `root_run_id`.
        found: String,
    },
}

/// Why a string is not an acceptable identifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum IdError {
    /// It is the empty string.
    #[error("empty")]
    Empty,
    /// It is longer than [`MAX_ID_BYTES`]; the length in bytes.
    #[error("{0} bytes, over the {MAX_ID_BYTES}-byte limit")]
    TooLong(usize),
    /// It contains a control character (`char::is_control`).
    #[error("contains a control character")]
    ControlCharacter,
}

/// Checks an identifier: non-empty, at most [`MAX_ID_BYTES`] bytes, no
/// control characters. Every identifier baton accepts passes this.
///
/// # Errors
///
/// [`IdError::Empty`], [`IdError::TooLong`] (with the length in bytes) or
/// [`IdError::ControlCharacter`], checked in that order.
pub fn check_id(id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty);
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong(id.len()));
    }
    if has_control_character(id) {
        return Err(IdError::ControlCharacter);
    }
    Ok(())
}

/// A non-empty id of at most [`MAX_ID_BYTES`] printable ASCII bytes: valid
/// for [`check_id`], which accepts more (non-ASCII text) and says why it
/// refuses.
#[inline]
fn is_plain_id(id: &str) -> bool {
    (1..=MAX_ID_BYTES).contains(&id.len()) && is_printable_ascii(id.as_bytes())
}

/// `id.chars().any(char::is_control)`, on bytes: the control characters
/// are C0 (`00`–`1F`), DEL (`7F`) and C1 (`U+0080`–`U+009F`, encoded
/// `C2 80`–`C2 9F`). No other UTF-8 sequence contains these bytes in that
/// order, since a `C2` byte only ever starts a two-byte sequence.
fn has_control_character(id: &str) -> bool {
    // Printable ASCII (`20`–`7E`), the common case, holds none.
    if is_printable_ascii(id.as_bytes()) {
        return false;
    }
    let bytes = id.as_bytes();
    bytes.iter().any(|&b| b < 0x20 || b == 0x7f)
        || (!id.is_ascii()
            && bytes
                .windows(2)
                .any(|pair| pair[0] == 0xc2 && (0x80..=0x9f).contains(&pair[1])))
}

/// Whether every byte is printable ASCII (`20`–`7E`), eight bytes at a time.
/// Ids are short, so the tail is read as (overlapping) whole words rather
/// than byte by byte: a byte loop, or a vector loop that needs 16 or 32
/// bytes to start, spends most of its time there.
#[inline]
fn is_printable_ascii(bytes: &[u8]) -> bool {
    let word = |eight: &[u8; 8]| is_printable_word(u64::from_le_bytes(*eight));
    match (bytes.first_chunk::<4>(), bytes.last_chunk::<8>()) {
        // 8 bytes or more: whole words, then the last eight (overlapping).
        (_, Some(last)) => {
            let mut words = bytes.chunks_exact(8);
            let mut printable = word(last);
            for eight in &mut words {
                printable &= eight.first_chunk::<8>().is_some_and(word);
            }
            printable
        }
        // 4 to 7: the first four and the last four (overlapping).
        (Some(&[a, b, c, d]), None) => bytes
            .last_chunk::<4>()
            .is_some_and(|&[e, f, g, h]| word(&[a, b, c, d, e, f, g, h])),
        // 0 to 3: the first, middle and last byte cover them all; spaces
        // (printable) pad the word.
        (None, None) => match (bytes.first(), bytes.get(bytes.len() / 2), bytes.last()) {
            (Some(&a), Some(&b), Some(&c)) => word(&[a, b, c, b' ', b' ', b' ', b' ', b' ']),
            _ => true,
        },
    }
}

/// Whether all eight bytes of `word` are printable ASCII. The classic
/// "has a byte less than n" test (exact as a yes/no for n ≤ 128) finds a
/// byte below `20`; adding one to every byte sets the high bit exactly for
/// `7F`, and `| word` for bytes of `80` and above (a carry out of an `FF`
/// byte only lands beside a byte already found).
#[inline]
fn is_printable_word(word: u64) -> bool {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let del_or_above = (word.wrapping_add(ONES) | word) & HIGH;
    below_space == 0 && del_or_above == 0
}

fn check_field(field: Field, id: &str) -> Result<(), IntentError> {
    check_id(id).map_err(|error| match error {
        IdError::Empty => IntentError::Empty(field),
        IdError::TooLong(len) => IntentError::TooLong { field, len },
        IdError::ControlCharacter => IntentError::ControlCharacter(field),
    })
}

impl HandoffIntent {
    /// Checks the intent against the source Run it would take over: every id
    /// is non-empty, at most [`MAX_ID_BYTES`] and free of control characters,
    /// and the successor Run and invocation differ from the source's.
    ///
    /// Fields are checked in declaration order; the first fault is returned.
    ///
    /// # Errors
    ///
    /// [`IntentError::Empty`], [`IntentError::TooLong`] or
    /// [`IntentError::ControlCharacter`] naming the first field at fault;
    /// [`IntentError::SuccessorIsSource`] if the successor Run or invocation
    /// is the source's.
    pub fn validate(&self, source: &Invocation) -> Result<(), IntentError> {
        // Nearly every intent is six plain ids; only one that is not pays
        // for finding which field is at fault and why.
        if !self.fields().iter().all(|(_, id)| is_plain_id(id)) {
            for (field, id) in self.fields() {
                check_field(field, id)?;
            }
        }
        if self.successor_run_id == source.run_id {
            return Err(IntentError::SuccessorIsSource(Field::SuccessorRunId));
        }
        if self.successor_invocation_id == source.invocation_id {
            return Err(IntentError::SuccessorIsSource(Field::SuccessorInvocationId));
        }
        Ok(())
    }

    /// [`validate`](Self::validate), then checks that the intent keeps the
    /// logical Run `root_run_id`. This is exactly what a gate accepts.
    ///
    /// # Errors
    ///
    /// What [`validate`](Self::validate) returns, then
    /// [`IntentError::OtherRootRun`] if the intent names another root Run.
    pub fn validate_for(&self, source: &Invocation, root_run_id: &str) -> Result<(), IntentError> {
        self.validate(source)?;
        if self.root_run_id != root_run_id {
            return Err(IntentError::OtherRootRun {
                expected: root_run_id.to_owned(),
                found: self.root_run_id.clone(),
            });
        }
        Ok(())
    }

    fn fields(&self) -> [(Field, &str); 6] {
        [
            (Field::HandoffId, &self.handoff_id),
            (Field::HostEpoch, &self.host_epoch),
            (Field::RootRunId, &self.root_run_id),
            (Field::SuccessorRunId, &self.successor_run_id),
            (Field::SuccessorInvocationId, &self.successor_invocation_id),
            (Field::ClaimId, &self.claim_id),
        ]
    }
}

/// A fact could not be decoded from JSON.
///
/// The message is the path and what is wrong there, e.g. ``handoff_id:
/// invalid type: integer `3`, expected a string at line 1 column 16``; it
/// says everything, so [`source`](std::error::Error::source) is `None` (a
/// reporter that walks the chain prints the cause once).
#[derive(Debug, Error)]
#[error("{path}: {error}")]
pub struct DecodeError {
    path: String,
    error: serde_json::Error,
}

impl DecodeError {
    /// Where in the document decoding failed, e.g. `execution.replay.digest`
    /// (`.` for the document itself).
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Decodes a fact from JSON bytes. Malformed input of any kind (bad UTF-8,
/// syntax, types, missing or unknown fields, bad digests) is a
/// [`DecodeError`] naming the path of the field at fault.
///
/// # Errors
///
/// A [`DecodeError`] for any malformed input; its
/// [`path`](DecodeError::path) says where (`.` for the document itself,
/// e.g. trailing bytes).
///
/// ```
/// use baton::facts::{from_json, HandoffIntent};
///
/// let error = from_json::<HandoffIntent>(br#"{"handoff_id": 3}"#).unwrap_err();
/// assert_eq!(error.path(), "handoff_id");
/// ```
pub fn from_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut decoder = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut decoder).map_err(|error| DecodeError {
        path: error.path().to_string(),
        error: error.into_inner(),
    })?;
    decoder.end().map_err(|error| DecodeError {
        path: ".".into(),
        error,
    })?;
    Ok(value)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod control_characters {
    use super::{MAX_ID_BYTES, has_control_character, is_plain_id, is_printable_ascii};

    /// The word-at-a-time check is exact, not merely a safe shortcut (a
    /// shortcut that said "no" too often would only be slower, so the
    /// byte scan's tests could not see it): every byte value at every
    /// position of 0 to 40 bytes (five words and every tail length), and
    /// two odd bytes at once.
    #[test]
    fn the_word_check_is_exactly_printable_ascii() {
        let reference = |bytes: &[u8]| bytes.iter().all(|b| (0x20..0x7f).contains(b));
        assert!(is_printable_ascii(b""));
        for len in 1..=40 {
            for at in 0..len {
                for byte in 0..=u8::MAX {
                    let mut bytes = vec![b'~'; len];
                    bytes[at] = byte;
                    assert_eq!(is_printable_ascii(&bytes), reference(&bytes), "{bytes:?}");
                    bytes[len - 1 - at] = byte ^ 0x80;
                    assert_eq!(is_printable_ascii(&bytes), reference(&bytes), "{bytes:?}");
                }
            }
            let printable: Vec<u8> = (0x20..0x7f).cycle().skip(len).take(len).collect();
            assert!(is_printable_ascii(&printable), "{printable:?}");
        }
    }

    /// A plain id is exactly a 1 to 256 byte printable ASCII one.
    #[test]
    fn a_plain_id_is_one_to_max_printable_ascii_bytes() {
        assert!(!is_plain_id(""));
        assert!(is_plain_id("a"));
        assert!(is_plain_id(&"a".repeat(MAX_ID_BYTES)));
        assert!(!is_plain_id(&"a".repeat(MAX_ID_BYTES + 1)));
        assert!(!is_plain_id("a\u{7f}"));
        assert!(!is_plain_id("é"));
    }

    /// The byte scan agrees with `char::is_control` on every code point.
    #[test]
    fn the_byte_scan_finds_exactly_the_control_characters() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            for text in [format!("{c}"), format!("a{c}b"), format!("é{c}")] {
                assert_eq!(
                    has_control_character(&text),
                    c.is_control(),
                    "{c:?} in {text:?}"
                );
            }
        }
    }
}
