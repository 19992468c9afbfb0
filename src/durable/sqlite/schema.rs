//! The SQLite log's schema: its version, the statements that create it
//! and upgrade it, and the file's recorded version.

use std::time::SystemTime;

use rusqlite::Connection;

use crate::durable::contract::LogError;

use super::error::storage;

/// The schema version this baton writes and reads, kept in SQLite's
/// `PRAGMA user_version` (0 means "no schema yet"). A file of version 1
/// (before owner epochs), 2 (before finishing and retention) or 3 (before
/// retention by age) is upgraded in place when opened.
pub const SCHEMA_VERSION: i64 = 4;

/// Schema version 1. One row per handed-off Run: the primary key is the Run
/// (`root_run_id`, `run_id`), so a second pause for a Run cannot be stored.
/// The pause is kept whole as JSON; the key columns are broken out for
/// queries and checked against it on every read.
pub(super) const SCHEMA_V1: &str = "
CREATE TABLE handoff_pause (
    root_run_id             TEXT NOT NULL,
    run_id                  TEXT NOT NULL,
    session_id              TEXT NOT NULL,
    turn_id                 TEXT NOT NULL,
    invocation_id           TEXT NOT NULL,
    handoff_id              TEXT NOT NULL,
    successor_run_id        TEXT NOT NULL,
    successor_invocation_id TEXT NOT NULL,
    pause                   TEXT NOT NULL CHECK (json_valid(pause)),
    PRIMARY KEY (root_run_id, run_id)
) STRICT, WITHOUT ROWID;
";

/// Version 1 → 2: owner epochs (SPEC §6). `run_epoch` holds each claimed
/// Run's current epoch (a Run never claimed has no row: epoch 0); each pause
/// row records the epoch it was appended under (0 for rows of version 1,
/// written before epochs existed).
pub(super) const MIGRATE_V2: &str = "
ALTER TABLE handoff_pause ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0 CHECK (epoch >= 0);
CREATE TABLE run_epoch (
    root_run_id TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    epoch       INTEGER NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id)
) STRICT, WITHOUT ROWID;
";

/// Version 2 → 3: finishing and retention (R8, R9, R10). `run_finish`
/// holds each finished Run's outcome (as JSON), the invocation that
/// finished it and the epoch it finished under; `retired_root` holds one
/// tombstone per retired root Run, whose other rows are gone. Every table
/// is keyed by the root Run first, so a retirement finds a root's Runs by
/// its primary keys, and a claim or a write finds its tombstone by one
/// primary-key lookup, however many roots were retired.
pub(super) const MIGRATE_V3: &str = "
CREATE TABLE run_finish (
    root_run_id   TEXT NOT NULL,
    run_id        TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    turn_id       TEXT NOT NULL,
    invocation_id TEXT NOT NULL,
    outcome       TEXT NOT NULL CHECK (json_valid(outcome)),
    epoch         INTEGER NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE retired_root (
    root_run_id TEXT NOT NULL PRIMARY KEY
) STRICT, WITHOUT ROWID;
";

/// Version 3 → 4: retention by age (SPEC §6.1, G5). Each pause and each
/// finish records when it was written (`ended_at`, microseconds since the
/// UNIX epoch, by the writing process's clock); rows written before take
/// the time of the upgrade (`{now}`). The finishes are indexed by that
/// time, so a sweep ([`SqliteLog::retire_ended`](super::SqliteLog::retire_ended)) reads only the finishes
/// it looks at, oldest first.
pub(super) const MIGRATE_V4: &str = "
ALTER TABLE handoff_pause ADD COLUMN ended_at INTEGER;
ALTER TABLE run_finish ADD COLUMN ended_at INTEGER;
UPDATE handoff_pause SET ended_at = {now};
UPDATE run_finish SET ended_at = {now};
CREATE INDEX run_finish_by_end ON run_finish (ended_at, root_run_id);
";

/// The file's schema version (`PRAGMA user_version`).
pub(super) fn version(connection: &Connection) -> Result<i64, LogError> {
    connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(storage)
}

/// A time as the log stores it: microseconds since the UNIX epoch
/// (negative before it), saturating far outside.
pub(super) fn micros(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_micros()).map_or(i64::MIN, |m| -m),
    }
}
