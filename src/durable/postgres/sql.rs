//! The SQL of the operations: each statement's text for a log's schema
//! and timeout, its parameter types, and a connection's cache of them.

use std::sync::atomic::AtomicI64;
use std::time::Duration;

use deadpool_postgres::ClientWrapper;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row, Statement};

use super::failure::Failure;
pub(super) use super::layout::Layout;
use super::lease::Lease;
use super::replication::{GUARD, GUARD_CONDITION};
use super::schema::PostgresSchema;

/// The statements of the operations, by what they do.
#[derive(Clone, Copy, Debug)]
pub(super) enum Which {
    LockRun,
    ReadEpoch,
    ReadPause,
    InsertRun,
    UpdateEpoch,
    InsertPause,
    AppendIfCurrent,
    ReadRoot,
    FinishRun,
    LockRoot,
    LockRuns,
    ReadPauses,
    RetireRoot,
    LockRoots,
    LockRunsOf,
    ReadPausesOf,
    RetireRoots,
    FinishIfNoPause,
    Timeline,
    EnsureRoot,
    FinishUnpaused,
}

pub(super) const TEXT1: &[Type] = &[Type::TEXT];
pub(super) const TEXT2: &[Type] = &[Type::TEXT, Type::TEXT];
pub(super) const PAUSE_ROW: &[Type] = &[
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
];

impl Which {
    /// Every statement, in the order of their texts.
    pub(super) const ALL: [Which; 21] = [
        Which::LockRun,
        Which::ReadEpoch,
        Which::ReadPause,
        Which::InsertRun,
        Which::UpdateEpoch,
        Which::InsertPause,
        Which::AppendIfCurrent,
        Which::ReadRoot,
        Which::FinishRun,
        Which::LockRoot,
        Which::LockRuns,
        Which::ReadPauses,
        Which::RetireRoot,
        Which::LockRoots,
        Which::LockRunsOf,
        Which::ReadPausesOf,
        Which::RetireRoots,
        Which::FinishIfNoPause,
        Which::Timeline,
        Which::EnsureRoot,
        Which::FinishUnpaused,
    ];

    /// The types of the statement's parameters, as it is prepared or sent.
    pub(super) fn types(self, layout: Layout) -> &'static [Type] {
        match self {
            // Read on the root Run's own server (see `Sql::new`).
            Which::Timeline if layout == Layout::ByRootRun => TEXT1,
            Which::LockRun | Which::ReadEpoch | Which::ReadPause => TEXT2,
            Which::InsertRun if layout == Layout::ByRootRun => {
                &[Type::TEXT, Type::TEXT, Type::INT8]
            }
            Which::InsertRun => &[Type::TEXT, Type::TEXT, Type::INT8, Type::INT8],
            Which::Timeline => &[],
            Which::EnsureRoot => TEXT1,
            Which::UpdateEpoch => &[Type::TEXT, Type::TEXT, Type::INT8, Type::INT8],
            Which::InsertPause | Which::AppendIfCurrent => PAUSE_ROW,
            Which::ReadRoot
            | Which::LockRoot
            | Which::LockRuns
            | Which::ReadPauses
            | Which::RetireRoot => TEXT1,
            Which::LockRoots | Which::LockRunsOf | Which::ReadPausesOf | Which::RetireRoots => {
                &[Type::TEXT_ARRAY]
            }
            Which::FinishRun | Which::FinishIfNoPause | Which::FinishUnpaused => &[
                Type::TEXT,
                Type::TEXT,
                Type::TEXT,
                Type::TEXT,
                Type::TEXT,
                Type::TEXT,
                Type::INT8,
            ],
        }
    }
}

/// The server's timeline: the number PostgreSQL gives each history of a
/// cluster, one more at every promotion of a standby (and every
/// point-in-time recovery). Read from the name of the WAL file being
/// written (its first 8 hex digits), which any role may read; a server in
/// recovery (a standby) refuses it, as it refuses every write.
pub(super) const TIMELINE: &str =
    "('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint";

/// The longest a group commit's batch waits for a lock (its `SET LOCAL
/// lock_timeout`): a write of the batch whose Run's lock another
/// transaction holds longer fails it, the batch rolls back, and each of
/// its operations runs alone, so no Run's write waits behind another
/// Run's lock for longer than this.
pub(super) const BATCH_LOCK_WAIT: Duration = Duration::from_millis(20);

/// The texts of a log's statements, for its schema and timeout.
pub(super) struct Sql {
    pub(super) begin_write: String,
    /// A group commit's batch's `BEGIN`: as [`begin_write`](Self::begin_write),
    /// but waiting at most [`BATCH_LOCK_WAIT`] for a lock.
    pub(super) begin_batch: String,
    pub(super) begin_read: String,
    /// The guard of a log that requires a synchronous standby
    /// ([`GUARD`]), sent before every write;
    /// `None` without the requirement.
    pub(super) guard: Option<&'static str>,
    /// Whether the one-statement forms carry the guard's test themselves
    /// (one server, a synchronous standby required).
    pub(super) guard_inline: bool,
    pub(super) statements: [String; 21],
    /// How the tables are laid out: the statements that differ on a
    /// database distributed by `root_run_id` (see [`Layout`]).
    pub(super) layout: Layout,
    /// The server's timeline (see [`TIMELINE`]) this log last read: a
    /// Run's first claim, one statement, assumes it (and writes only if it
    /// is the server's), every transaction that claims reads it anew.
    pub(super) timeline: AtomicI64,
}

impl Sql {
    pub(super) fn new(
        schema: &PostgresSchema,
        timeout: Duration,
        layout: Layout,
        standby_required: bool,
    ) -> Self {
        let s = schema.prefix();
        let key = "WHERE root_run_id = $1 AND run_id = $2";
        let millis = u32::try_from(timeout.as_millis())
            .unwrap_or(u32::MAX)
            .clamp(1, i32::MAX as u32);
        let timeouts_waiting = |lock: u32| {
            format!(
                "SET LOCAL statement_timeout = {millis}; SET LOCAL lock_timeout = {lock}; \
                 SET LOCAL idle_in_transaction_session_timeout = {millis}"
            )
        };
        let timeouts = timeouts_waiting(millis);
        let batch_lock = millis.min(BATCH_LOCK_WAIT.as_millis() as u32);
        let pause_columns = "root_run_id, run_id, session_id, turn_id, invocation_id, \
                             handoff_id, successor_run_id, successor_invocation_id, pause, epoch";
        // A Run's epoch and its finish, as `run_facts` reads them.
        let run_columns =
            "epoch, finish_session_id, finish_turn_id, finish_invocation_id, outcome::text";
        let pause_read = "session_id, turn_id, invocation_id, handoff_id, \
                          successor_run_id, successor_invocation_id, pause::text";
        // On one server a log that requires a synchronous standby puts
        // the guard's test in the one-statement forms' own `WHERE`: they
        // stay one statement, their own transaction, and write nothing
        // unless it held (it fails the statement otherwise).
        let guarded = if standby_required && layout == Layout::OneServer {
            format!(" AND {GUARD_CONDITION}")
        } else {
            String::new()
        };
        let (insert_run, timeline) = match layout {
            // A new Run's row, only under a live root Run (R9): the
            // root's row is made here if it has none (a root Run's
            // first claim), else held `FOR SHARE` unless retired. A
            // retirement takes that row exclusively before it reads
            // the root's Runs, so the two are ordered: a claim that
            // waited for a retirement's commit finds the row, as the
            // server re-reads it then, retired (no row: nothing
            // inserted, and the claim's transaction reads the
            // tombstone); a retirement that waited for this claim's
            // commit reads its Run. Both in this one statement,
            // so a Run's first claim stays one write.
            // Only on the server's timeline `$4`, the one the claim's
            // epoch was chosen above (G4 across a failover).
            Layout::OneServer => (
                format!(
                    "WITH new_root AS ( \
                         INSERT INTO {s}baton_root (root_run_id) SELECT $1 \
                         WHERE {TIMELINE} = $4 \
                         ON CONFLICT (root_run_id) DO NOTHING RETURNING 1), \
                     live_root AS ( \
                         SELECT 1 FROM {s}baton_root WHERE root_run_id = $1 AND NOT retired \
                         AND {TIMELINE} = $4 FOR SHARE) \
                     INSERT INTO {s}baton_run (root_run_id, run_id, epoch) \
                     SELECT $1, $2, $3 \
                     WHERE (EXISTS (SELECT 1 FROM new_root) OR EXISTS (SELECT 1 FROM live_root)){guarded} \
                     ON CONFLICT (root_run_id, run_id) DO NOTHING"
                ),
                format!("SELECT {TIMELINE}"),
            ),
            // Distributed by `root_run_id`, every statement runs on the
            // root Run's shard alone (a router query): Citus would plan
            // the CTEs above each on its own, into intermediate results,
            // and evaluate the timeline on its coordinator. So a claim's
            // transaction makes the root Run's row first (`EnsureRoot`),
            // reads the timeline of the server that holds the root's
            // shard (a one-row aggregate of the root's table, evaluated
            // there), and inserts a new Run from the root's row held `FOR
            // SHARE` unless retired: the same order with a retirement as
            // above. The timeline is not checked again (no `$4`): this
            // form is only sent in the transaction that read it, on that
            // server (a promotion ends the transaction), and a volatile
            // function here would pull the statement to the coordinator.
            Layout::ByRootRun => (
                format!(
                    "INSERT INTO {s}baton_run (root_run_id, run_id, epoch) \
                     SELECT root_run_id, $2, $3 FROM {s}baton_root \
                     WHERE root_run_id = $1 AND NOT retired FOR SHARE \
                     ON CONFLICT (root_run_id, run_id) DO NOTHING"
                ),
                format!("SELECT {TIMELINE}, count(*) FROM {s}baton_root WHERE root_run_id = $1"),
            ),
        };
        Self {
            begin_write: format!("BEGIN ISOLATION LEVEL READ COMMITTED; {timeouts}"),
            begin_batch: format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; {}",
                timeouts_waiting(batch_lock)
            ),
            begin_read: format!("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; {timeouts}"),
            guard: standby_required.then_some(GUARD),
            guard_inline: !guarded.is_empty(),
            statements: [
                format!("SELECT {run_columns} FROM {s}baton_run {key} FOR UPDATE"),
                format!("SELECT {run_columns} FROM {s}baton_run {key}"),
                format!("SELECT {pause_read} FROM {s}baton_handoff_pause {key}"),
                insert_run,
                format!("UPDATE {s}baton_run SET epoch = $3 {key} AND epoch = $4"),
                format!(
                    "INSERT INTO {s}baton_handoff_pause ({pause_columns}) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CAST($9::text AS json), $10)"
                ),
                // The append's one-statement form: the row lock of the Run
                // at the append's epoch, unfinished, and the insert only if
                // it holds; a pause already there fails it on the pause's
                // key (the facts for which the rule writes: no pause, no
                // finish). A finish committed while this waited for the
                // row's lock is seen: the server re-reads the locked row's
                // newest version against the qualifiers; a retirement's
                // delete leaves no row. The pause's key and epoch are the
                // locked row's own columns, so a database distributed by
                // `root_run_id` runs it on the root Run's shard (an insert
                // from a select of a colocated table by its distribution
                // column), as one statement; from a CTE, Citus pulls the
                // rows to its coordinator and inserts them in a second
                // step. No `ON CONFLICT`: its speculative
                // insertion costs every append (pgbench here: 0.313-0.330
                // ms with it, 0.292-0.298 ms without), while the key's
                // refusal costs only the rare append that finds a pause.
                //
                // On one server (schema version 5) the statement flags the
                // Run's row `paused` itself, by updating it in place of
                // the lock (the update holds the same lock, and re-reads
                // the row the same way), and marks its pause so (`run_paused`):
                // the trigger that flags a pause's Run for any other
                // insert (an older baton's, the transaction's form) then
                // does not run. The key's refusal rolls the flag back
                // with the rest of the statement.
                match layout {
                    Layout::OneServer => format!(
                        "WITH run AS ( \
                             UPDATE {s}baton_run SET paused = true \
                             {key} AND epoch = $10 AND outcome IS NULL{guarded} \
                             RETURNING root_run_id, run_id, epoch) \
                         INSERT INTO {s}baton_handoff_pause ({pause_columns}, run_paused) \
                         SELECT root_run_id, run_id, $3, $4, $5, $6, $7, $8, \
                                CAST($9::text AS json), epoch, true \
                         FROM run"
                    ),
                    Layout::ByRootRun => format!(
                        "INSERT INTO {s}baton_handoff_pause ({pause_columns}) \
                         SELECT root_run_id, run_id, $3, $4, $5, $6, $7, $8, \
                                CAST($9::text AS json), epoch \
                         FROM {s}baton_run {key} AND epoch = $10 AND outcome IS NULL FOR UPDATE"
                    ),
                },
                format!("SELECT retired FROM {s}baton_root WHERE root_run_id = $1"),
                format!(
                    "UPDATE {s}baton_run SET finish_session_id = $3, finish_turn_id = $4, \
                            finish_invocation_id = $5, outcome = CAST($6::text AS json), \
                            ended_at = now() \
                     {key} AND epoch = $7 AND outcome IS NULL"
                ),
                // A retirement's lock: the root Run's row, made if missing,
                // locked exclusively (`FOR NO KEY UPDATE`, which waits for
                // and blocks every new Run's `FOR SHARE` and insert of it),
                // answering whether it is retired already.
                format!(
                    "INSERT INTO {s}baton_root AS root (root_run_id) VALUES ($1) \
                     ON CONFLICT (root_run_id) DO UPDATE SET retired = root.retired \
                     RETURNING retired"
                ),
                format!(
                    "SELECT run_id, {run_columns}, ended_at FROM {s}baton_run \
                     WHERE root_run_id = $1 ORDER BY run_id FOR UPDATE"
                ),
                format!(
                    "SELECT run_id, {pause_read}, ended_at FROM {s}baton_handoff_pause \
                     WHERE root_run_id = $1"
                ),
                format!(
                    "WITH pauses AS (DELETE FROM {s}baton_handoff_pause WHERE root_run_id = $1), \
                          runs AS (DELETE FROM {s}baton_run WHERE root_run_id = $1) \
                     UPDATE {s}baton_root SET retired = true WHERE root_run_id = $1"
                ),
                // A sweep's batch, set-based: the four statements above
                // over an array of root Runs (the roots' rows locked in
                // their order, so two batches never lock them crosswise),
                // each row with its root Run last.
                format!(
                    "INSERT INTO {s}baton_root AS root (root_run_id) \
                     SELECT unnest($1::text[]) ORDER BY 1 \
                     ON CONFLICT (root_run_id) DO UPDATE SET retired = root.retired \
                     RETURNING retired, root_run_id"
                ),
                format!(
                    "SELECT run_id, {run_columns}, ended_at, root_run_id FROM {s}baton_run \
                     WHERE root_run_id = ANY($1) ORDER BY root_run_id, run_id FOR UPDATE"
                ),
                format!(
                    "SELECT run_id, {pause_read}, ended_at, root_run_id \
                     FROM {s}baton_handoff_pause WHERE root_run_id = ANY($1)"
                ),
                format!(
                    "WITH pauses AS (DELETE FROM {s}baton_handoff_pause \
                                     WHERE root_run_id = ANY($1)), \
                          runs AS (DELETE FROM {s}baton_run WHERE root_run_id = ANY($1)) \
                     UPDATE {s}baton_root SET retired = true WHERE root_run_id = ANY($1)"
                ),
                // The finish of the one-flight form on tables distributed
                // by root Run (which keep no `paused` flag: Citus keeps no
                // trigger), after the Run's row lock (`LockRun`, the
                // statement before it in the same transaction): it writes
                // only on the facts for which the rule writes — the
                // finish's epoch current, no finish, no pause. Its snapshot is taken when it starts, once the
                // lock is held, so it sees a pause an append committed
                // while the lock was awaited (no other writer of the Run
                // gets past that lock meanwhile).
                format!(
                    "UPDATE {s}baton_run SET finish_session_id = $3, finish_turn_id = $4, \
                            finish_invocation_id = $5, outcome = CAST($6::text AS json), \
                            ended_at = now() \
                     {key} AND epoch = $7 AND outcome IS NULL \
                     AND NOT EXISTS (SELECT 1 FROM {s}baton_handoff_pause {key})"
                ),
                timeline,
                format!(
                    "INSERT INTO {s}baton_root (root_run_id) VALUES ($1) \
                     ON CONFLICT (root_run_id) DO NOTHING"
                ),
                // The finish as one statement, its own transaction, on one
                // server: it writes only on the facts for which the rule
                // writes — the finish's epoch current, no finish, no pause
                // (`paused`, which the server sets on the Run's row in the
                // statement that inserts its pause, schema version 5). A
                // statement that waited for the Run's row lock re-reads
                // the row's newest version against this `WHERE`, so it
                // sees an epoch, a finish or a pause committed meanwhile.
                format!(
                    "UPDATE {s}baton_run SET finish_session_id = $3, finish_turn_id = $4, \
                            finish_invocation_id = $5, outcome = CAST($6::text AS json), \
                            ended_at = now() \
                     {key} AND epoch = $7 AND outcome IS NULL AND NOT paused{guarded}"
                ),
            ],
            layout,
            timeline: AtomicI64::new(1),
        }
    }

    pub(super) fn text(&self, which: Which) -> &str {
        &self.statements[which as usize]
    }

    /// Every statement a log of this layout sends for its operations.
    pub(super) fn sent(&self) -> Vec<PostgresStatement> {
        Which::ALL
            .into_iter()
            .filter(|which| match self.layout {
                Layout::OneServer => !matches!(which, Which::EnsureRoot | Which::FinishIfNoPause),
                Layout::ByRootRun => !matches!(
                    which,
                    Which::LockRoots
                        | Which::LockRunsOf
                        | Which::ReadPausesOf
                        | Which::RetireRoots
                        | Which::FinishUnpaused
                ),
            })
            .map(|which| PostgresStatement {
                name: format!("{which:?}"),
                text: self.text(which).to_owned(),
                types: which.types(self.layout).to_vec(),
            })
            .collect()
    }
}

/// One statement a [`PostgresLog`](super::PostgresLog) sends for its
/// operations ([`PostgresLog::statements`](super::PostgresLog::statements)):
/// for a review of the SQL baton runs, or to `PREPARE` and `EXPLAIN` each
/// on the server, as baton's own tests do on Citus to show that every one
/// runs on one shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresStatement {
    /// What it does, e.g. `LockRun` (the Run's row lock) or `InsertRun`
    /// (a Run's first claim).
    pub name: String,
    /// Its text, as sent, for the log's schema and timeout.
    pub text: String,
    /// Its parameters' types, in order (`$1` is the root Run in every
    /// statement that has parameters, except a sweep's, whose `$1` is an
    /// array of them).
    pub types: Vec<Type>,
}

/// One statement, ready to send: prepared on the connection, or its text
/// and its parameters' types (parsed by the server each time, into the
/// unnamed statement: nothing outlives the request).
pub(super) enum Stmt<'a> {
    Prepared(Statement),
    Unnamed(&'a str, &'static [Type]),
}

pub(super) type Param<'a> = &'a (dyn ToSql + Sync);

impl Stmt<'_> {
    /// Executes the statement: the request is sent when the future is
    /// first polled (so [`flight2`](super::flight::flight2) keeps the order), in both forms.
    pub(super) async fn execute(
        &self,
        client: &Client,
        params: &[Param<'_>],
    ) -> Result<u64, tokio_postgres::Error> {
        match self {
            Stmt::Prepared(statement) => client.execute(statement, params).await,
            Stmt::Unnamed(text, types) => {
                let typed: Vec<(Param<'_>, Type)> =
                    params.iter().copied().zip(types.iter().cloned()).collect();
                client.execute_typed(text, &typed).await
            }
        }
    }

    /// Runs the query for its rows, sent at the first poll.
    pub(super) async fn query(
        &self,
        client: &Client,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        match self {
            Stmt::Prepared(statement) => client.query(statement, params).await,
            Stmt::Unnamed(text, types) => {
                let typed: Vec<(Param<'_>, Type)> =
                    params.iter().copied().zip(types.iter().cloned()).collect();
                client.query_typed(text, &typed).await
            }
        }
    }

    /// Runs the query for at most one row, sent at the first poll.
    pub(super) async fn query_opt(
        &self,
        client: &Client,
        params: &[Param<'_>],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        match self {
            Stmt::Prepared(statement) => client.query_opt(statement, params).await,
            Stmt::Unnamed(text, types) => {
                let typed: Vec<(Param<'_>, Type)> =
                    params.iter().copied().zip(types.iter().cloned()).collect();
                client.query_typed_opt(text, &typed).await
            }
        }
    }
}

/// A connection with what an operation needs to use it: one of the pool's,
/// or the one a caller's transaction is on.
pub(super) struct Conn<'a> {
    pub(super) client: &'a Client,
    /// The pool's connection with its statement cache, if the log prepares
    /// its statements; `None`: every statement is sent by its text.
    pub(super) cache: Option<&'a ClientWrapper>,
    pub(super) sql: &'a Sql,
}

impl<'a> Conn<'a> {
    /// The connection `lease` holds, as an operation's statements use it
    /// (`None` once the lease has ended).
    pub(super) fn leased(lease: &'a Lease, sql: &'a Sql, prepared: bool) -> Option<Self> {
        lease.object().map(|object| {
            let wrapper: &ClientWrapper = object;
            Conn {
                client: wrapper,
                cache: prepared.then_some(wrapper),
                sql,
            }
        })
    }

    /// The guard of a log that requires a synchronous standby, prepared on
    /// this connection once (or sent by its text); `None` without the
    /// requirement.
    pub(super) async fn guard(&self) -> Result<Option<Stmt<'a>>, Failure> {
        let Some(text) = self.sql.guard else {
            return Ok(None);
        };
        Ok(Some(match self.cache {
            Some(cache) => Stmt::Prepared(cache.prepare_typed_cached(text, &[]).await?),
            None => Stmt::Unnamed(text, &[]),
        }))
    }

    /// The statement `which`: prepared on this connection once (then from
    /// its cache), or sent by its text.
    pub(super) async fn statement(&self, which: Which) -> Result<Stmt<'a>, Failure> {
        let text = self.sql.text(which);
        match self.cache {
            Some(cache) => Ok(Stmt::Prepared(
                cache
                    .prepare_typed_cached(text, which.types(self.sql.layout))
                    .await?,
            )),
            None => Ok(Stmt::Unnamed(text, which.types(self.sql.layout))),
        }
    }
}

#[cfg(test)]
#[path = "sql_tests.rs"]
mod tests;
