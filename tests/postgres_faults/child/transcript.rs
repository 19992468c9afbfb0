//! A campaign process's history, as it writes it: its records, numbered,
//! in a file of its own.

use std::cell::Cell;
use std::io::Write;
use std::sync::Mutex;

use baton::durable::LogError;

use super::now_us;
use crate::var;

/// This process's operations, numbered.
pub(super) struct History {
    next: Cell<u64>,
}

/// This process's history: a file of its own (`BATON_FAULT_HISTORY`), so
/// nothing else printed (libtest's `test fault_child ... `, a panic)
/// shares its lines; and the records written to it so far.
static TRANSCRIPT: Mutex<Option<(std::fs::File, u64)>> = Mutex::new(None);

/// Appends one record, `<n> <µs> <line>`, numbered from 1 in the order
/// written, in one `write` of a whole line. A record that cannot be
/// written panics the process, and the parent, missing its trailer,
/// fails the campaign.
pub(super) fn say(line: &str) {
    let mut transcript = TRANSCRIPT.lock().unwrap();
    let (file, written) = transcript.get_or_insert_with(|| {
        let path = var("BATON_FAULT_HISTORY");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("the history file {path}: {e}"));
        (file, 0)
    });
    *written += 1;
    let record = format!("{written} {} {line}\n", now_us());
    file.write_all(record.as_bytes())
        .expect("a history record is written");
}

/// The trailer a process writes as it ends normally: how many records
/// came before it (a process killed by the campaign has none).
pub(super) fn say_end() {
    let written = TRANSCRIPT.lock().unwrap().as_ref().map_or(0, |(_, n)| *n);
    say(&format!("- end {written}"));
}

impl History {
    /// A history with no operation yet.
    pub(super) fn new() -> Self {
        History { next: Cell::new(0) }
    }

    pub(super) fn invoke(&self, what: &str) -> u64 {
        let op = self.next.get() + 1;
        self.next.set(op);
        say(&format!("{op} invoke {what}"));
        op
    }
    pub(super) fn complete(&self, op: u64, outcome: &str) {
        say(&format!("{op} {outcome}"));
    }
}

/// How an operation that was not acknowledged is recorded: its refusal
/// by kind (with the epoch or Run it names), `unknown` or `unavailable`.
pub(super) fn refusal(error: &LogError) -> String {
    match error {
        LogError::Fenced { current, .. } => format!("refused fenced {current}"),
        LogError::AlreadyHandedOff { .. } => "refused already-handed-off".into(),
        LogError::AlreadyFinished { .. } => "refused already-finished".into(),
        LogError::Retired { .. } => "refused retired".into(),
        LogError::RunOpen { run_id, .. } => format!("refused run-open {run_id}"),
        LogError::NothingToRetire { .. } => "refused nothing-to-retire".into(),
        LogError::EpochNotIssued { current, .. } => format!("refused epoch-not-issued {current}"),
        LogError::OutcomeUnknown(_) => "unknown".into(),
        LogError::Unavailable(_) => "unavailable".into(),
        other => format!("refused other {}", format!("{other:?}").replace(' ', "_")),
    }
}
