//! What the server a `PostgresLog` writes to acknowledges a commit after:
//! [`PostgresReplication`] (docs/SPEC.md §6, "Replication and failover").

use tokio_postgres::Client;

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
    /// standby has it: some standby is named, and `synchronous_commit` is
    /// `on`, `remote_apply` or `remote_write` (at `remote_write` the
    /// standby has written the commit but not yet flushed it: it survives
    /// the standby server's crash, not its host's). With `local` or `off`,
    /// or no standby named, a commit is acknowledged first.
    pub fn waits_for_a_standby(&self) -> bool {
        !self.synchronous_standby_names.trim().is_empty()
            && matches!(
                self.synchronous_commit.as_str(),
                "on" | "remote_apply" | "remote_write"
            )
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
    fn a_commit_waits_for_a_standby_only_if_one_is_named_and_the_commit_is_remote() {
        for (commit, waits) in [
            ("on", true),
            ("remote_apply", true),
            ("remote_write", true),
            ("local", false),
            ("off", false),
        ] {
            assert_eq!(
                replication(commit, "*").waits_for_a_standby(),
                waits,
                "{commit}"
            );
            assert_eq!(
                replication(commit, "FIRST 1 (s1, s2)").waits_for_a_standby(),
                waits
            );
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
