//! [`PostgresSchema`]: where `PostgresLog`'s tables live, the SQL of each
//! schema version, and the explicit migrate step.

use std::fmt;

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use crate::durable::contract::LogError;

use super::failure::unavailable;

/// The schema version this baton writes and reads, kept in the one row of
/// the table `baton_schema` (a database without that table has no schema:
/// version 0). [`PostgresSchema::migrate`] brings an older database to it
/// in place; a log refuses to open on any other version.
pub const POSTGRES_SCHEMA_VERSION: i64 = 5;

/// Version 1. `baton_run` holds each claimed Run's current epoch (a Run
/// never claimed has no row: epoch 0); `baton_handoff_pause` at most one
/// pause per Run (its primary key is the Run), with the epoch it was
/// appended under. The pause is kept whole as `json` (its text exactly as
/// written, not `jsonb`'s normalised form); the key columns are broken out
/// for queries and checked against it on every read. `{s}` is the
/// schema's prefix (empty, or a quoted name and a dot).
const V1: &str = "
CREATE TABLE {s}baton_schema (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version bigint  NOT NULL CHECK (version >= 0)
);
INSERT INTO {s}baton_schema (version) VALUES (1);
CREATE TABLE {s}baton_run (
    root_run_id text   NOT NULL,
    run_id      text   NOT NULL,
    epoch       bigint NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id)
);
CREATE TABLE {s}baton_handoff_pause (
    root_run_id             text   NOT NULL,
    run_id                  text   NOT NULL,
    session_id              text   NOT NULL,
    turn_id                 text   NOT NULL,
    invocation_id           text   NOT NULL,
    handoff_id              text   NOT NULL,
    successor_run_id        text   NOT NULL,
    successor_invocation_id text   NOT NULL,
    pause                   json   NOT NULL,
    epoch                   bigint NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id),
    FOREIGN KEY (root_run_id, run_id) REFERENCES {s}baton_run (root_run_id, run_id)
);
";

/// Version 1 → 2: the pause's foreign key goes. Every write of a pause
/// already reads the Run's row under its lock at the pause's epoch (the
/// fence), so the key checked nothing the fence had not, and it cost the
/// server a second lookup of that row on every append (pgbench here:
/// 1.31–1.39× the bare insert with it, 1.15–1.19× without).
const V2: &str = "
ALTER TABLE {s}baton_handoff_pause DROP CONSTRAINT baton_handoff_pause_root_run_id_run_id_fkey;
UPDATE {s}baton_schema SET version = 2;
";

/// Version 2 → 3: the third fate and retention (SPEC R8–R10).
///
/// - A Run's finish is kept on its own row of `baton_run` (the source's
///   ids and the outcome's JSON text, all four set or none): the row lock
///   every write takes already returns it, so a claim, an append and a
///   finish read the Run's epoch and its finish with one statement, and the
///   append's one-statement form refuses a finished Run by a qualifier on
///   the row it locks (re-checked by the server on the newest version of
///   the row if a finish committed meanwhile). Nullable columns without a
///   default: adding them rewrites nothing.
/// - `baton_root` holds one row per root Run: its lock row while it is live
///   (`retired` false; made by the first claim under it, or by a
///   retirement), its tombstone once retired (`retired` true; the root
///   Run's other rows are gone, R10). A claim, an append and a finish read
///   it by its primary key, so their cost does not grow with the number of
///   retired roots. Nothing needs to be copied into it: a root Run's row is
///   made when first needed.
const V3: &str = "
ALTER TABLE {s}baton_run
    ADD COLUMN finish_session_id    text,
    ADD COLUMN finish_turn_id       text,
    ADD COLUMN finish_invocation_id text,
    ADD COLUMN outcome              json,
    ADD CONSTRAINT baton_run_finish_whole CHECK (
        (finish_session_id IS NULL) = (outcome IS NULL)
        AND (finish_turn_id IS NULL) = (outcome IS NULL)
        AND (finish_invocation_id IS NULL) = (outcome IS NULL)
    );
CREATE TABLE {s}baton_root (
    root_run_id text    PRIMARY KEY,
    retired     boolean NOT NULL DEFAULT false
);
UPDATE {s}baton_schema SET version = 3;
";

/// Version 3 → 4: retention by age (SPEC §6.1, G5). Each pause and each
/// finish records when it was written (`ended_at`, the server's `now()`,
/// the start of the writing transaction); rows written before take the
/// time of the migration. The finishes are indexed by that time (a partial
/// index: only finished Runs' rows), so a sweep
/// ([`PostgresLog::retire_ended_async`](super::PostgresLog::retire_ended_async))
/// reads only the finishes it looks at, oldest first. A pause takes its
/// time from the column's default, so the append's statements are
/// unchanged.
const V4: &str = "
ALTER TABLE {s}baton_handoff_pause ADD COLUMN ended_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE {s}baton_run ADD COLUMN ended_at timestamptz;
UPDATE {s}baton_run SET ended_at = now() WHERE outcome IS NOT NULL;
CREATE INDEX baton_run_by_end ON {s}baton_run (ended_at, root_run_id) WHERE outcome IS NOT NULL;
UPDATE {s}baton_schema SET version = 4;
";

/// Version 4 → 5: a Run's row says whether it has a pause (`paused`), so
/// that a finish is one statement fenced on that row alone. A statement
/// that waited for the Run's row lock re-reads the row's newest version
/// against its `WHERE`, but not other tables: a finish that tested for
/// the pause in `baton_handoff_pause` had to take the lock in a statement
/// of its own first, and then test (see `FinishIfNoPause`). The flag is
/// set in the statement that inserts the Run's pause, whoever sends it:
/// baton's one-statement append updates the Run's row itself, in place
/// of locking it, and says so in the pause's row (`run_paused`); a trigger
/// sets it for every other insert — so a process of an older version still
/// running against this schema (its appends know neither column) cannot
/// leave a Run with both a pause and a finish. A pause is
/// deleted only with its Run (retirement), so the flag is never cleared.
/// Adding a column with a constant default rewrites nothing; the Runs
/// paused already are flagged here. The trigger's function names the table
/// as the log's statements do: qualified by the schema, or found on the
/// `search_path`. On tables distributed by root Run (Citus), which keeps
/// no trigger, the finish keeps its lock: [`distribute`](PostgresSchema::distribute)
/// drops the trigger.
const V5: &str = "
ALTER TABLE {s}baton_run ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE {s}baton_handoff_pause ADD COLUMN run_paused boolean NOT NULL DEFAULT false;
UPDATE {s}baton_run AS run SET paused = true FROM {s}baton_handoff_pause AS pause
    WHERE pause.root_run_id = run.root_run_id AND pause.run_id = run.run_id;
CREATE FUNCTION {s}baton_run_paused() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {s}baton_run SET paused = true
        WHERE root_run_id = NEW.root_run_id AND run_id = NEW.run_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER baton_run_paused AFTER INSERT ON {s}baton_handoff_pause
    FOR EACH ROW WHEN (NOT NEW.run_paused) EXECUTE FUNCTION {s}baton_run_paused();
UPDATE {s}baton_schema SET version = 5;
";

/// The trigger of schema version 5 on `baton_handoff_pause` that flags its
/// Run's row `paused` for every insert of a pause that does not do so
/// itself (baton's one-statement append does). An operator who distributes the tables with Citus by
/// hand drops it first (Citus distributes no table with a trigger), as
/// [`PostgresSchema::distribute`] does: a log on distributed tables reads no
/// flag.
pub const PAUSED_TRIGGER: &str = "baton_run_paused";

/// The script that brings version `i` to `i + 1`, at index `i`. A later
/// version appends one; none is ever edited once released.
const SCRIPTS: [&str; POSTGRES_SCHEMA_VERSION as usize] = [V1, V2, V3, V4, V5];

/// The key of the transaction-scoped advisory lock that orders migrations
/// among processes migrating at once (`baton` in ASCII).
const SCHEMA_LOCK: i64 = 0x0062_6174_6f6e;

/// Where a [`PostgresLog`](super::PostgresLog)'s tables live: a named
/// PostgreSQL schema (namespace), or whatever the connection's
/// `search_path` finds first ([`search_path`](Self::search_path), the
/// default). It also carries the SQL of every schema version, for teams
/// that apply migrations with their own tool, and the migrate step for
/// those that let baton do it.
///
/// ```
/// use baton::durable::{POSTGRES_SCHEMA_VERSION, PostgresSchema};
///
/// let schema = PostgresSchema::named("baton")?;
/// let scripts = schema.migrations();
/// assert_eq!(scripts.len() as i64, POSTGRES_SCHEMA_VERSION);
/// assert!(scripts[0].contains(r#"CREATE TABLE "baton".baton_run"#));
/// assert!(PostgresSchema::named("Robert'); DROP TABLE x; --").is_err());
/// # Ok::<_, baton::durable::InvalidSchemaName>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PostgresSchema {
    name: Option<String>,
}

/// A schema name [`PostgresSchema::named`] refuses: it must be 1 to 63
/// bytes of lowercase ASCII letters, digits and `_`, not starting with a
/// digit and not with `pg_` (PostgreSQL's own).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid PostgreSQL schema name {0:?}: 1 to 63 of a-z, 0-9 and _, not starting with a digit or pg_"
)]
pub struct InvalidSchemaName(pub String);

impl PostgresSchema {
    /// The tables in the first schema of the connection's `search_path`
    /// (`public`, unless the role or database says otherwise), unqualified.
    pub fn search_path() -> Self {
        Self { name: None }
    }

    /// The tables in the schema `name`, qualified with it in every
    /// statement. [`migrate`](Self::migrate) creates the schema if it does
    /// not exist (the role then needs `CREATE` on the database).
    ///
    /// # Errors
    ///
    /// [`InvalidSchemaName`] unless `name` is a plain lowercase identifier,
    /// so it never needs quoting rules beyond double quotes.
    pub fn named(name: &str) -> Result<Self, InvalidSchemaName> {
        let plain = (1..=63).contains(&name.len())
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && !name.starts_with("pg_")
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if plain {
            Ok(Self {
                name: Some(name.to_owned()),
            })
        } else {
            Err(InvalidSchemaName(name.to_owned()))
        }
    }

    /// The schema's name, or `None` for the `search_path`.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// What qualifies a table name: `"name".`, or nothing.
    pub(super) fn prefix(&self) -> String {
        match &self.name {
            Some(name) => format!("\"{name}\"."),
            None => String::new(),
        }
    }

    /// The SQL of every schema version for this schema: element `i` brings
    /// a database at version `i` to version `i + 1` (element 0 creates the
    /// tables in an existing, empty schema), and records the new version in
    /// `baton_schema`, so a log opened afterwards finds it. Apply them in
    /// order, each in one transaction, with the migration tool of your
    /// choice (sqlx, refinery, Flyway, …); or let [`migrate`](Self::migrate)
    /// do it. A released element never changes.
    pub fn migrations(&self) -> Vec<String> {
        let prefix = self.prefix();
        SCRIPTS
            .iter()
            .map(|script| script.trim_start().replace("{s}", &prefix))
            .collect()
    }

    /// The version the database records for this schema (0: none), read on
    /// `client` as it is (no transaction of its own).
    ///
    /// # Errors
    ///
    /// [`LogError::UnknownSchema`] if baton's tables are there without a
    /// recorded version (`found: 0`); [`LogError::Unavailable`] if the
    /// server fails.
    pub async fn version(&self, client: &Client) -> Result<i64, LogError> {
        let prefix = self.prefix();
        let found = client
            .query_typed_one(
                "SELECT to_regclass($1) IS NOT NULL, \
                        to_regclass($2) IS NOT NULL OR to_regclass($3) IS NOT NULL \
                        OR to_regclass($4) IS NOT NULL",
                &[
                    (&format!("{prefix}baton_schema"), Type::TEXT),
                    (&format!("{prefix}baton_run"), Type::TEXT),
                    (&format!("{prefix}baton_handoff_pause"), Type::TEXT),
                    (&format!("{prefix}baton_root"), Type::TEXT),
                ],
            )
            .await
            .map_err(unavailable)?;
        let (versioned, tables): (bool, bool) = (
            found.try_get(0).map_err(unavailable)?,
            found.try_get(1).map_err(unavailable)?,
        );
        if versioned {
            client
                .query_typed_one(&format!("SELECT version FROM {prefix}baton_schema"), &[])
                .await
                .map_err(unavailable)?
                .try_get(0)
                .map_err(unavailable)
        } else if tables {
            Err(LogError::UnknownSchema {
                found: 0,
                expected: POSTGRES_SCHEMA_VERSION,
            })
        } else {
            Ok(0)
        }
    }

    /// Brings the database to [`POSTGRES_SCHEMA_VERSION`] on `client`, in
    /// one transaction of its own under an advisory lock (processes
    /// migrating at once neither race nor see a half-made schema): creates
    /// the schema (namespace) if it is named and missing, then runs the
    /// scripts of [`migrations`](Self::migrations) from the version it
    /// finds. A database already at the version is left as it is. This is
    /// the one operation of baton that runs DDL: the role needs `CREATE`
    /// on the schema (and on the database, to create a named schema), while
    /// a log afterwards needs only `SELECT`, `INSERT`, `UPDATE` and
    /// `DELETE` (the last for [`retire`](crate::durable::AsyncHandoffLog::retire_async)
    /// only) on the tables and `USAGE` on the schema.
    ///
    /// # Errors
    ///
    /// [`LogError::UnknownSchema`] if the database records a newer version
    /// (or holds baton's tables without a version); nothing is changed.
    /// [`LogError::Unavailable`] if the server fails or refuses (the
    /// transaction rolls back: nothing is changed, and migrating again is
    /// safe). [`LogError::OutcomeUnknown`] if the `COMMIT` failed: the
    /// migration may have committed; migrating again is safe (a database
    /// already at the version is left as it is).
    pub async fn migrate(&self, client: &Client) -> Result<(), LogError> {
        client.batch_execute("BEGIN").await.map_err(unavailable)?;
        let migrated = self.migrate_in(client).await;
        let end = if migrated.is_ok() {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        let ended = client.batch_execute(end).await.map_err(|error| {
            if migrated.is_ok() {
                // The COMMIT was sent: the DDL may have committed.
                LogError::OutcomeUnknown(Box::new(error))
            } else {
                unavailable(error)
            }
        });
        migrated.and(ended)
    }

    async fn migrate_in(&self, client: &Client) -> Result<(), LogError> {
        client
            .execute_typed(
                "SELECT pg_advisory_xact_lock($1)",
                &[(&SCHEMA_LOCK, Type::INT8)],
            )
            .await
            .map_err(unavailable)?;
        if let Some(name) = &self.name {
            let exists = client
                .query_typed_one(
                    "SELECT to_regnamespace($1) IS NOT NULL",
                    &[(name, Type::TEXT)],
                )
                .await
                .map_err(unavailable)?
                .try_get::<_, bool>(0)
                .map_err(unavailable)?;
            if !exists {
                client
                    .batch_execute(&format!("CREATE SCHEMA \"{name}\""))
                    .await
                    .map_err(unavailable)?;
            }
        }
        let found = self.version(client).await?;
        let Some(steps) = usize::try_from(found)
            .ok()
            .and_then(|from| SCRIPTS.get(from..))
        else {
            return Err(LogError::UnknownSchema {
                found,
                expected: POSTGRES_SCHEMA_VERSION,
            });
        };
        let prefix = self.prefix();
        for (version, script) in (found + 1..).zip(steps) {
            store_event!(info, version, "migrating");
            let _ = version;
            client
                .batch_execute(&script.replace("{s}", &prefix))
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }
}

impl fmt::Display for PostgresSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => f.write_str(name),
            None => f.write_str("(search_path)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Version 5 makes the trigger under the name `distribute` drops, on
    /// the pause table, qualified as every statement is.
    #[test]
    fn version_5_makes_the_trigger_distribute_drops() {
        let scripts = PostgresSchema::named("baton").unwrap().migrations();
        let v5 = &scripts[4];
        assert!(v5.contains(&format!(
            "CREATE TRIGGER {PAUSED_TRIGGER} AFTER INSERT ON \"baton\".baton_handoff_pause"
        )));
        assert!(v5.contains("UPDATE \"baton\".baton_run SET paused = true"));
    }

    /// A schema name is a plain lowercase identifier of 1 to 63 bytes, not
    /// starting with a digit or `pg_`; anything else is refused, naming it.
    #[test]
    fn only_a_plain_lowercase_identifier_names_a_schema() {
        for good in ["baton", "baton_2", "_log", "a", &"x".repeat(63)] {
            assert!(PostgresSchema::named(good).is_ok(), "{good:?}");
        }
        for bad in [
            "",
            &"x".repeat(64),
            "2baton",
            "pg_baton",
            "Baton",
            "ba-ton",
            "ba ton",
            "bâton",
            "baton\"",
        ] {
            assert_eq!(
                PostgresSchema::named(bad).map(|_| ()),
                Err(InvalidSchemaName(bad.to_owned())),
                "{bad:?}"
            );
        }
    }
}
