//! What the server a `PostgresLog` writes to acknowledges a commit after:
//! [`PostgresReplication`] (docs/SPEC.md §6, "Replication and failover"),
//! and the guard that holds a log to a synchronous standby for its whole
//! life ([`NoSynchronousStandby`]).

use std::fmt;

use tokio_postgres::Client;
use tokio_postgres::error::DbError;

use super::failure::unavailable;
use crate::durable::contract::LogError;

/// How the server a log writes to acknowledges a commit, as the log's own
/// sessions see it: PostgreSQL's `synchronous_commit` and
/// `synchronous_standby_names` ([`PostgresLog::replication`]). Whether a
/// failover keeps what the log acknowledged depends on it (docs/SPEC.md
/// §6, "Replication and failover"): with a synchronous standby every
/// promise holds across one; without, the fence holds (no epoch is
/// answered twice) but the last acknowledged writes may be lost.
///
/// ```
/// use baton::durable::PostgresReplication;
///
/// let quorum = PostgresReplication {
///     synchronous_commit: "on".into(),
///     synchronous_standby_names: "ANY 1 (a, b)".into(),
/// };
/// assert!(quorum.waits_for_a_standby());
/// let default = PostgresReplication {
///     synchronous_commit: "on".into(),
///     synchronous_standby_names: String::new(),
/// };
/// assert!(!default.waits_for_a_standby());
/// ```
///
/// [`PostgresLog::replication`]: super::PostgresLog::replication
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresReplication {
    /// `synchronous_commit` in the log's sessions: `on`, `remote_apply`,
    /// `remote_write`, `local` or `off` (a role's or a database's setting
    /// included).
    pub synchronous_commit: String,
    /// `synchronous_standby_names`: the standbys a commit waits for (a
    /// list, `FIRST n (…)` or `ANY n (…)`), empty for none.
    pub synchronous_standby_names: String,
}

impl PostgresReplication {
    /// Whether the server acknowledges a commit only once a synchronous
    /// standby has flushed it to disk: some standby is named (one, a list,
    /// `FIRST n (…)` or a quorum `ANY n (…)`), and `synchronous_commit` is
    /// `on` or `remote_apply`. Then every promise holds across a failover
    /// to that standby (docs/SPEC.md §6). At `remote_write` the standby
    /// has written the commit but not flushed it: it is lost if the
    /// standby's host fails with the primary's (a power cut), so it is
    /// `false` here, as at `local`, `off` or with no standby named, where
    /// a commit is acknowledged first.
    pub fn waits_for_a_standby(&self) -> bool {
        !self.synchronous_standby_names.trim().is_empty()
            && matches!(self.synchronous_commit.as_str(), "on" | "remote_apply")
    }

    /// Reads both settings on `client`, one of the log's connections.
    pub(super) async fn read(client: &Client) -> Result<Self, LogError> {
        let row = client
            .query_one(
                "SELECT current_setting('synchronous_commit'), \
                        current_setting('synchronous_standby_names')",
                &[],
            )
            .await
            .map_err(unavailable)?;
        Ok(Self {
            synchronous_commit: row.try_get(0).map_err(unavailable)?,
            synchronous_standby_names: row.try_get(1).map_err(unavailable)?,
        })
    }

    /// [`LogError::NotALog`] if the server acknowledges a commit before a
    /// standby has it: the refusal of
    /// [`PostgresOptions::require_synchronous_standby`](super::PostgresOptions::require_synchronous_standby).
    pub(super) fn required(self) -> Result<(), LogError> {
        if self.waits_for_a_standby() {
            return Ok(());
        }
        Err(LogError::NotALog {
            reason: format!(
                "the server acknowledges a commit before any standby has it \
                 (synchronous_commit = {}, synchronous_standby_names = '{}'), and the log \
                 requires a synchronous standby: name one in synchronous_standby_names with \
                 synchronous_commit = on, or open the log without \
                 PostgresOptions::require_synchronous_standby",
                self.synchronous_commit, self.synchronous_standby_names
            ),
            source: None,
        })
    }
}

/// What the guard's refusal says, in the server's error (and its log).
const REFUSAL: &str = "baton: no synchronous standby (synchronous_commit = ";
const NAMES: &str = ", synchronous_standby_names = '";

/// The guard's test, an SQL condition: true if the session, as it is when
/// the condition runs, commits only once a standby has flushed the commit
/// ([`PostgresReplication::waits_for_a_standby`]); else it fails the
/// statement, casting to `int` a text that names both settings
/// (`invalid_text_representation`, 22P02), read back by
/// [`NoSynchronousStandby::raised`]. Plain SQL, no PL/pgSQL block to
/// compile at every write; `current_setting` is not folded at planning,
/// so the cast runs only when the test fails. It is never false: a
/// statement it is part of writes only if it held.
macro_rules! guard_condition {
    () => {
        "(CASE \
         WHEN btrim(current_setting('synchronous_standby_names')) <> '' \
          AND current_setting('synchronous_commit') IN ('on', 'remote_apply') THEN true \
         ELSE CAST('baton: no synchronous standby (synchronous_commit = ' \
                   || current_setting('synchronous_commit') \
                   || ', synchronous_standby_names = ''' \
                   || current_setting('synchronous_standby_names') || ''')' AS int) = 0 END)"
    };
}

/// [`guard_condition!`], for a statement of its own.
pub(super) const GUARD_CONDITION: &str = guard_condition!();

/// The guard of a log that requires a synchronous standby, one prepared
/// statement sent in the flight of every write, before the write and its
/// `COMMIT`: it fails — and so aborts the transaction: the write is not
/// made, the `COMMIT` rolls back — unless the session waits for a standby
/// ([`GUARD_CONDITION`]). On one server the one-statement forms carry the
/// condition in their own `WHERE` instead.
pub(super) const GUARD: &str = concat!("SELECT ", guard_condition!());

/// Why a log that requires a synchronous standby
/// ([`PostgresOptions::require_synchronous_standby`]) refused a write: the
/// server it reached would have acknowledged the commit before any
/// standby had it — typically a promoted standby that has no standby of
/// its own yet, or a primary whose high-availability manager dropped its
/// synchronous standby to stay writable. It is the
/// [`source`](std::error::Error::source) of a [`LogError::Unavailable`]:
/// nothing was written, and the same operation may be sent again once the
/// server has a synchronous standby (docs/guide/ha.md).
///
/// ```
/// use baton::durable::{LogError, NoSynchronousStandby};
///
/// fn no_standby(error: &LogError) -> Option<&NoSynchronousStandby> {
///     match error {
///         LogError::Unavailable(source) => source.downcast_ref(),
///         _ => None,
///     }
/// }
/// # let _ = no_standby;
/// ```
///
/// [`PostgresOptions::require_synchronous_standby`]: super::PostgresOptions::require_synchronous_standby
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoSynchronousStandby {
    /// The server's settings as the refused write's session saw them.
    pub found: PostgresReplication,
}

impl NoSynchronousStandby {
    /// Whether `error` is the guard's refusal.
    pub(super) fn is(error: &tokio_postgres::Error) -> bool {
        error.as_db_error().and_then(Self::raised).is_some()
    }

    /// The refusal the guard raised, if `error` is it: the settings it
    /// names, read from the text the guard failed to cast (the error's
    /// message quotes it whatever the server's language).
    pub(super) fn raised(error: &DbError) -> Option<Self> {
        let (_, found) = error.message().split_once(REFUSAL)?;
        let (synchronous_commit, rest) = found.split_once(NAMES)?;
        // The text ends with `')`, the message with its closing quote.
        let names = rest.rsplit_once("')")?.0;
        Some(Self {
            found: PostgresReplication {
                synchronous_commit: synchronous_commit.to_owned(),
                synchronous_standby_names: names.to_owned(),
            },
        })
    }
}

impl fmt::Display for NoSynchronousStandby {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the server would acknowledge the commit before any standby has it \
             (synchronous_commit = {}, synchronous_standby_names = '{}'), and the log \
             requires a synchronous standby: nothing was written",
            self.found.synchronous_commit, self.found.synchronous_standby_names
        )
    }
}

impl std::error::Error for NoSynchronousStandby {}

#[cfg(test)]
mod tests {
    use super::PostgresReplication;

    fn replication(commit: &str, names: &str) -> PostgresReplication {
        PostgresReplication {
            synchronous_commit: commit.into(),
            synchronous_standby_names: names.into(),
        }
    }

    /// Every `synchronous_commit` against a named standby and none.
    #[test]
    fn a_commit_waits_for_a_standby_only_if_one_is_named_and_the_commit_is_flushed_there() {
        for (commit, waits) in [
            ("on", true),
            ("remote_apply", true),
            ("remote_write", false),
            ("local", false),
            ("off", false),
        ] {
            assert_eq!(
                replication(commit, "*").waits_for_a_standby(),
                waits,
                "{commit}"
            );
            for names in ["FIRST 1 (s1, s2)", "ANY 1 (s1, s2)", "s1"] {
                assert_eq!(
                    replication(commit, names).waits_for_a_standby(),
                    waits,
                    "{commit} {names}"
                );
            }
            assert!(!replication(commit, "").waits_for_a_standby(), "{commit}");
            assert!(!replication(commit, "  ").waits_for_a_standby(), "{commit}");
        }
    }

    #[test]
    fn the_requirement_refuses_a_server_without_a_synchronous_standby_naming_both_settings() {
        assert!(replication("on", "*").required().is_ok());
        let refused = replication("local", "*").required().unwrap_err();
        let message = refused.to_string();
        assert!(
            matches!(refused, crate::durable::LogError::NotALog { .. }),
            "{refused:?}"
        );
        assert!(
            message.contains("synchronous_commit = local")
                && message.contains("synchronous_standby_names = '*'"),
            "{message}"
        );
    }
}
