//! The bodies of baton's cargo-fuzz targets (SPEC §5 "fuzzing").
//!
//! Each target in `fuzz/fuzz_targets/` is one line calling a function here,
//! so the very same code runs under libFuzzer (nightly, ASan) and from a
//! stable `cargo test` that replays the committed corpora
//! (`tests/fuzz_replay.rs`, through [`Target::replay`]):
//!
//! - [`gate_table()`]: operation sequences applied to the core table, each step
//!   checked against an independent ghost reference for S1–S9;
//! - [`gate_adapter()`]: operation sequences through the async adapter,
//!   including drops of every handle and future, driven by hand and compared
//!   step by step with the core;
//! - [`facts_json()`]: arbitrary bytes decoded as the JSON facts;
//! - [`ledger_table()`]: operation sequences applied to the ledger core,
//!   each answer checked against an independent ghost and D1–D6 after
//!   every step;
//! - [`log_table()`]: operation sequences applied to the durable handoff
//!   logs (`MemoryLog`, and `SqliteLog` with the `sqlite` feature), each
//!   answer compared with an independent ghost of SPEC §6 and R1, R3, R6,
//!   R7, R8 and R9 checked on every answer, lost replies and restarts
//!   included; [`log_store`] is its body on a store of your own, and
//!   [`Blocking`] lets it drive an async-only store (`PostgresLog`).
//!
//! A body returns `Err(Rejected)` for an input too large to be meaningful
//! (the target turns it into `Corpus::Reject`) and panics on a violation,
//! with a message naming the rule (its SPEC id, or the SPEC section) and
//! the operations that led there.
//!
//! Each body is public so that you can run it in your own CI, against the
//! baton version you ship.

use std::fmt;

use arbitrary::{Arbitrary, Unstructured};

use baton::facts::{HandoffIntent, Invocation};

/// A broken rule: its SPEC id and what happened.
#[derive(Debug)]
pub struct Violation {
    rule: &'static str,
    detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violated: {}", self.rule, self.detail)
    }
}

/// Fails with `rule` unless `holds`; the detail is only formatted on failure.
macro_rules! ensure {
    ($holds:expr, $rule:expr, $($detail:tt)+) => {
        if !$holds {
            return Err($crate::fuzz::Violation { rule: $rule, detail: format!($($detail)+) });
        }
    };
}

/// Writes `ops` as the Rust expression `Ops(vec![…])`, one op a line with
/// its index, each prefixed with `path::` (the enum's name).
fn write_ops<T: fmt::Debug>(f: &mut fmt::Formatter<'_>, path: &str, ops: &[T]) -> fmt::Result {
    writeln!(f, "Ops(vec![")?;
    for (index, op) in ops.iter().enumerate() {
        writeln!(f, "    /* {index:>3} */ {path}::{op:?},")?;
    }
    write!(f, "])")
}

/// Defines a target's input, `Ops`: its module's `Op`s in order, decoded
/// up to its `MAX_OPS + 1` of them, printed by [`write_ops`]. One
/// definition for the targets whose input is nothing but operations.
macro_rules! ops_input {
    () => {
        /// A fuzz input: the operations, in order. Decoding stops after
        /// `MAX_OPS + 1` operations: the input is rejected anyway.
        #[derive(Clone)]
        pub struct Ops(pub Vec<Op>);

        impl<'a> arbitrary::Arbitrary<'a> for Ops {
            fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
                u.arbitrary().map(Ops)
            }

            fn arbitrary_take_rest(u: arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
                super::take_ops(u, MAX_OPS).map(Ops)
            }
        }

        /// Prints as the Rust expression that rebuilds the input, one op a
        /// line.
        impl std::fmt::Debug for Ops {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                super::write_ops(f, "Op", &self.0)
            }
        }
    };
}

mod blocking;
pub mod facts_json;
pub mod gate_adapter;
pub mod gate_table;
mod ghost;
mod ledger_ghost;
mod ledger_ops;
pub mod ledger_table;
mod log_ghost;
mod log_ops;
mod log_stores;
pub mod log_table;

pub use blocking::Blocking;
pub use facts_json::facts_json;
pub use gate_adapter::gate_adapter;
pub use gate_table::gate_table;
pub use ledger_table::ledger_table;
pub use log_table::{log_store, log_table};

/// An input the fuzzer should not keep in its corpus: it is larger than any
/// meaningful case, so time spent on it is time lost (`Corpus::Reject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejected;

/// The fuzz targets, by the names of their files in `fuzz/fuzz_targets/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// [`gate_table()`]
    GateTable,
    /// [`gate_adapter()`]
    GateAdapter,
    /// [`facts_json()`]
    FactsJson,
    /// [`ledger_table()`]
    LedgerTable,
    /// [`log_table()`]
    LogTable,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 5] = [
        Self::GateTable,
        Self::GateAdapter,
        Self::FactsJson,
        Self::LedgerTable,
        Self::LogTable,
    ];

    /// The target's name: its file in `fuzz/fuzz_targets/`, its corpus and
    /// regression folders.
    pub const fn name(self) -> &'static str {
        match self {
            Self::GateTable => "gate_table",
            Self::GateAdapter => "gate_adapter",
            Self::FactsJson => "facts_json",
            Self::LedgerTable => "ledger_table",
            Self::LogTable => "log_table",
        }
    }

    /// Runs the target's body on the raw bytes of a corpus or crash file,
    /// decoded exactly as `libfuzzer-sys`'s `fuzz_target!` decodes them
    /// (bytes that do not decode are rejected there too, unrun).
    pub fn replay(self, bytes: &[u8]) -> Result<(), Rejected> {
        match self {
            Self::GateTable => decode(bytes).ok_or(Rejected).and_then(gate_table),
            Self::GateAdapter => decode(bytes).ok_or(Rejected).and_then(gate_adapter),
            Self::FactsJson => facts_json(bytes),
            Self::LedgerTable => decode(bytes).ok_or(Rejected).and_then(ledger_table),
            Self::LogTable => decode(bytes).ok_or(Rejected).and_then(log_table),
        }
    }

    /// What the target's input decodes to, as its `Debug` reproduction
    /// (`None`: libFuzzer would not run the body on these bytes).
    pub fn describe(self, bytes: &[u8]) -> Option<String> {
        match self {
            Self::GateTable => decode::<gate_table::Ops>(bytes).map(|ops| format!("{ops:#?}")),
            Self::GateAdapter => decode::<gate_adapter::Ops>(bytes).map(|ops| format!("{ops:#?}")),
            Self::FactsJson => Some(format!("{:?}", String::from_utf8_lossy(bytes))),
            Self::LedgerTable => decode::<ledger_table::Ops>(bytes).map(|ops| format!("{ops:#?}")),
            Self::LogTable => decode::<log_table::Ops>(bytes).map(|ops| format!("{ops:#?}")),
        }
    }
}

/// Decodes a typed fuzz input as `libfuzzer-sys` 0.4 does: too few bytes for
/// the type's minimum size, or a decoding error, and the body is not run.
pub fn decode<'a, T: Arbitrary<'a>>(bytes: &'a [u8]) -> Option<T> {
    if bytes.len() < T::size_hint(0).0 {
        return None;
    }
    T::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

/// Replays every file in `dir` (sorted by name; none if it is missing)
/// through `body`, each decoded as [`decode`] does, as a stable `cargo test`
/// replays a committed corpus or crash folder of your own fuzz target.
/// Returns how many files decoded and ran; files that do not decode are
/// skipped, as libFuzzer skips them.
///
/// # Panics
///
/// If `dir` cannot be read, naming it; whatever `body` panics with, after
/// printing which file it was running.
pub fn replay_dir<T>(dir: &std::path::Path, mut body: impl FnMut(T)) -> usize
where
    T: for<'a> Arbitrary<'a>,
{
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|entry| entry.expect("a readable directory entry").path())
            .filter(|path| path.is_file())
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => panic!("{}: {error}", dir.display()),
    };
    files.sort();
    let mut replayed = 0;
    for file in files {
        let bytes =
            std::fs::read(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        if let Some(input) = decode::<T>(&bytes) {
            /// Prints the file being replayed if its body unwinds.
            struct Replaying<'a>(&'a std::path::Path);
            impl Drop for Replaying<'_> {
                fn drop(&mut self) {
                    eprintln!("replay_dir: failed on {}", self.0.display());
                }
            }
            let replaying = Replaying(&file);
            body(input);
            std::mem::forget(replaying);
            replayed += 1;
        }
    }
    replayed
}

/// Decodes the rest of `u` as operations, as `Vec::arbitrary_take_rest`
/// does, but stops after `max + 1`: enough to see the input is too long.
fn take_ops<'a, T: Arbitrary<'a>>(u: Unstructured<'a>, max: usize) -> arbitrary::Result<Vec<T>> {
    u.arbitrary_take_rest_iter()?.take(max + 1).collect()
}

/// The Run every fuzzed gate guards: root Run `run`, invocation `invocation`.
fn source() -> Invocation {
    Invocation {
        session_id: "session".into(),
        turn_id: "turn".into(),
        run_id: "run".into(),
        invocation_id: "invocation".into(),
    }
}

/// The root Run of every fuzzed gate.
const ROOT_RUN: &str = "run";

/// A valid intent for [`source`], told apart by its `handoff_id`.
fn intent_named(handoff_id: &str) -> HandoffIntent {
    HandoffIntent {
        handoff_id: handoff_id.into(),
        host_epoch: "host".into(),
        root_run_id: ROOT_RUN.into(),
        successor_run_id: "successor-run".into(),
        successor_invocation_id: "successor-invocation".into(),
        claim_id: "claim".into(),
    }
}
