//! How a database lays out baton's tables: all on one server, or
//! distributed by `root_run_id` on Citus (docs/SCALE.md); read from the
//! server's catalog when a log opens, and judged by a pure rule that
//! refuses every other layout.

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use crate::durable::contract::LogError;

use super::failure::unavailable;
use super::schema::{PAUSED_TRIGGER, POSTGRES_SCHEMA_VERSION, PostgresSchema};

/// Where baton's Run tables are, as the log's statements must reach them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Tables of one server (or local tables of a Citus coordinator).
    OneServer,
    /// `baton_root`, `baton_run` and `baton_handoff_pause` distributed by
    /// `root_run_id` on Citus, colocated: each operation runs on the shard
    /// of its root Run.
    ByRootRun,
}

/// The three tables every operation reads or writes, by their unqualified
/// names, in the order the judge names them.
pub(crate) const RUN_TABLES: [&str; 3] = ["baton_root", "baton_run", "baton_handoff_pause"];

/// One Run table as Citus's catalog (`pg_dist_partition`) describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Distributed {
    /// The table's unqualified name.
    pub(crate) table: String,
    /// `partmethod`: `h` hash-distributed, `n` a reference or a
    /// single-shard table, `a`/`r` Citus's older methods.
    pub(crate) method: String,
    /// The distribution column, if it has one.
    pub(crate) column: Option<String>,
    /// The colocation group.
    pub(crate) colocation: i32,
}

/// The rule: no Run table distributed is [`Layout::OneServer`]; all three
/// hash-distributed by `root_run_id` in one colocation group is
/// [`Layout::ByRootRun`]; anything else would let an operation's
/// statements reach several shards, or its rows sit where its lock is not,
/// and is refused, naming each table that is wrong.
pub(crate) fn judge(found: &[Distributed]) -> Result<Layout, String> {
    if found.is_empty() {
        return Ok(Layout::OneServer);
    }
    let mut wrong = Vec::new();
    for table in RUN_TABLES {
        match found.iter().find(|d| d.table == table) {
            None => wrong.push(format!("{table} is a local table of the coordinator")),
            Some(d) if d.method != "h" => wrong.push(format!(
                "{table} is not hash-distributed (partmethod {:?}: a reference or single-shard \
                 table, or an older method)",
                d.method
            )),
            Some(d) if d.column.as_deref() != Some("root_run_id") => wrong.push(format!(
                "{table} is distributed by {}, not root_run_id",
                d.column.as_deref().unwrap_or("no column")
            )),
            Some(_) => {}
        }
    }
    let groups: Vec<i32> = RUN_TABLES
        .iter()
        .filter_map(|table| found.iter().find(|d| d.table == *table))
        .map(|d| d.colocation)
        .collect();
    if wrong.is_empty() && groups.windows(2).any(|pair| pair[0] != pair[1]) {
        wrong.push(format!(
            "baton_root, baton_run and baton_handoff_pause are not colocated (colocation ids \
             {groups:?})"
        ));
    }
    if wrong.is_empty() {
        Ok(Layout::ByRootRun)
    } else {
        Err(format!(
            "baton's tables are distributed in a way its fence cannot keep: {}; distribute all \
             three by root_run_id, colocated (PostgresSchema::distribute), or none",
            wrong.join("; ")
        ))
    }
}

/// Reads the layout of `schema`'s tables on `client`'s server: Citus's
/// catalog if the extension is there, else one server.
///
/// # Errors
///
/// [`LogError::NotALog`] if [`judge`] refuses what it found (permanent:
/// nothing was read or written through the log); [`LogError::Unavailable`]
/// if the server fails.
pub(crate) async fn read(schema: &PostgresSchema, client: &Client) -> Result<Layout, LogError> {
    let citus: bool = client
        .query_typed_one(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')",
            &[],
        )
        .await
        .and_then(|row| row.try_get(0))
        .map_err(unavailable)?;
    if !citus {
        return Ok(Layout::OneServer);
    }
    let prefix = schema.prefix();
    let names: Vec<String> = RUN_TABLES
        .iter()
        .map(|table| format!("{prefix}{table}"))
        .collect();
    let rows = client
        .query_typed(
            "SELECT c.relname::text, p.partmethod::text, \
                    column_to_column_name(p.logicalrelid, p.partkey)::text, p.colocationid \
             FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid \
             WHERE p.logicalrelid = ANY(ARRAY[to_regclass($1), to_regclass($2), to_regclass($3)])",
            &[
                (&names[0], Type::TEXT),
                (&names[1], Type::TEXT),
                (&names[2], Type::TEXT),
            ],
        )
        .await
        .map_err(unavailable)?;
    let found = rows
        .iter()
        .map(|row| {
            Ok(Distributed {
                table: row.try_get(0)?,
                method: row.try_get(1)?,
                column: row.try_get(2)?,
                colocation: row.try_get(3)?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()
        .map_err(unavailable)?;
    judge(&found).map_err(|reason| LogError::NotALog {
        reason,
        source: None,
    })
}

impl PostgresSchema {
    /// The operator's step for a database distributed with Citus
    /// (docs/SCALE.md), run on its coordinator after
    /// [`migrate`](Self::migrate): distributes `baton_root`, `baton_run`
    /// and `baton_handoff_pause` by `root_run_id`, colocated with
    /// `baton_root` (`create_distributed_table`; Citus distributes no
    /// table with a trigger, so this drops the one schema version 5 puts on
    /// `baton_handoff_pause`, [`PAUSED_TRIGGER`], which a log on
    /// distributed tables does not read), and makes the one-row
    /// `baton_schema` a reference table (`create_reference_table`), so that
    /// each operation of a log runs on the shard of its root Run. A table
    /// already distributed is left as it is; the layout found at the end
    /// must be the one a log opens on, or this fails. Run it on a new
    /// database: Citus copies the rows of a table that has some, and
    /// leaves their local copy on disk until
    /// `truncate_local_data_after_distributing_table`.
    ///
    /// # Errors
    ///
    /// [`LogError::UnknownSchema`] unless the database is at
    /// [`POSTGRES_SCHEMA_VERSION`]; [`LogError::NotALog`] if the tables end
    /// up distributed otherwise (some were distributed another way
    /// before: the error names them); [`LogError::Unavailable`] if the
    /// server fails or refuses (Citus is not installed, or the role may
    /// not distribute the tables).
    pub async fn distribute(&self, client: &Client) -> Result<(), LogError> {
        let found = self.version(client).await?;
        if found != POSTGRES_SCHEMA_VERSION {
            return Err(LogError::UnknownSchema {
                found,
                expected: POSTGRES_SCHEMA_VERSION,
            });
        }
        let prefix = self.prefix();
        let root = format!("{prefix}baton_root");
        for (table, reference) in [
            ("baton_root", false),
            ("baton_run", false),
            ("baton_handoff_pause", false),
            ("baton_schema", true),
        ] {
            let name = format!("{prefix}{table}");
            let distributed: bool = client
                .query_typed_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_dist_partition \
                     WHERE logicalrelid = to_regclass($1))",
                    &[(&name, Type::TEXT)],
                )
                .await
                .and_then(|row| row.try_get(0))
                .map_err(unavailable)?;
            if distributed {
                continue;
            }
            if table == "baton_handoff_pause" {
                // Citus distributes no table with a trigger; on tables
                // distributed by root Run a finish keeps its lock and reads
                // no `paused` flag (schema version 5).
                client
                    .batch_execute(&format!(
                        "DROP TRIGGER IF EXISTS {PAUSED_TRIGGER} ON {name}"
                    ))
                    .await
                    .map_err(unavailable)?;
            }
            let made = if reference {
                client
                    .execute_typed("SELECT create_reference_table($1)", &[(&name, Type::TEXT)])
                    .await
            } else {
                client
                    .execute_typed(
                        "SELECT create_distributed_table($1, 'root_run_id', \
                         colocate_with => $2)",
                        &[
                            (&name, Type::TEXT),
                            (if name == root { &"default" } else { &root }, Type::TEXT),
                        ],
                    )
                    .await
            };
            made.map_err(unavailable)?;
        }
        match read(self, client).await? {
            Layout::ByRootRun => Ok(()),
            Layout::OneServer => Err(LogError::NotALog {
                reason: "the tables are not distributed after distributing them".into(),
                source: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by(table: &str, method: &str, column: Option<&str>, colocation: i32) -> Distributed {
        Distributed {
            table: table.into(),
            method: method.into(),
            column: column.map(Into::into),
            colocation,
        }
    }

    fn all_by_root(colocations: [i32; 3]) -> Vec<Distributed> {
        RUN_TABLES
            .iter()
            .zip(colocations)
            .map(|(table, group)| by(table, "h", Some("root_run_id"), group))
            .collect()
    }

    /// Nothing distributed is one server; all three by `root_run_id` in
    /// one group is distributed by root Run.
    #[test]
    fn local_tables_and_tables_colocated_by_root_run_id_are_a_log() {
        assert_eq!(judge(&[]), Ok(Layout::OneServer));
        assert_eq!(judge(&all_by_root([3, 3, 3])), Ok(Layout::ByRootRun));
    }

    /// Every other layout is refused, naming the table and what is wrong
    /// with it: another column, not colocated, a reference table, one
    /// table left local.
    #[test]
    fn every_other_layout_is_refused_naming_what_is_wrong() {
        let mut by_run = all_by_root([1, 1, 1]);
        by_run[1].column = Some("run_id".into());
        let mut reference = all_by_root([1, 1, 1]);
        reference[2] = by("baton_handoff_pause", "n", None, 2);
        let mut one_local = all_by_root([1, 1, 1]);
        one_local.remove(0);
        for (found, says) in [
            (
                by_run,
                "baton_run is distributed by run_id, not root_run_id",
            ),
            (all_by_root([1, 1, 2]), "are not colocated"),
            (reference, "baton_handoff_pause is not hash-distributed"),
            (one_local, "baton_root is a local table of the coordinator"),
        ] {
            let refused = judge(&found).expect_err("refused");
            assert!(refused.contains(says), "{refused}");
        }
    }
}
