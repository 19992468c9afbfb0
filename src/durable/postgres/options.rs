//! How a `PostgresLog` is opened: [`PostgresOptions`].

use std::time::Duration;

use super::schema::PostgresSchema;

/// How a [`PostgresLog`](super::PostgresLog) is opened: the size of its pool, its operation
/// timeout, the schema its tables are in, whether opening it migrates that
/// schema, and whether it prepares its statements.
///
/// ```
/// use std::time::Duration;
///
/// use baton::durable::{PostgresOptions, PostgresSchema};
///
/// let options = PostgresOptions::new()
///     .pool_size(16)
///     .timeout(Duration::from_secs(5))
///     .schema(PostgresSchema::named("baton")?)
///     .migrate(true);
/// assert_eq!(options.get_pool_size(), 16);
/// # Ok::<_, baton::durable::InvalidSchemaName>(())
/// ```
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    pub(super) pool_size: usize,
    pub(super) timeout: Duration,
    pub(super) schema: PostgresSchema,
    pub(super) migrate: bool,
    pub(super) prepared_statements: bool,
    pub(super) require_synchronous_standby: bool,
    pub(super) group_commit: Option<usize>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl PostgresOptions {
    /// The defaults: a pool of [`DEFAULT_POOL_SIZE`](Self::DEFAULT_POOL_SIZE)
    /// connections, an operation timeout of
    /// [`DEFAULT_TIMEOUT`](Self::DEFAULT_TIMEOUT), the tables found by the
    /// `search_path`, no migration, prepared statements, group commit with
    /// as many slots as the pool has connections.
    pub fn new() -> Self {
        Self {
            pool_size: Self::DEFAULT_POOL_SIZE,
            timeout: Self::DEFAULT_TIMEOUT,
            schema: PostgresSchema::search_path(),
            migrate: false,
            prepared_statements: true,
            require_synchronous_standby: false,
            group_commit: None,
        }
    }

    /// How many connections a log's pool holds at most, unless set.
    pub const DEFAULT_POOL_SIZE: usize = 16;

    /// How long one operation may take, unless set.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// At most `size` connections (at least 1), opened as operations need
    /// them: up to `size` operations of different Runs run at once, and one
    /// Run's slow operation (a row lock held elsewhere, a connection cut
    /// off) holds one connection, never the others. Ignored by
    /// [`PostgresLog::with_pool`](super::PostgresLog::with_pool), whose pool is sized by its builder.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How long one operation may take (at least 1 ms), from waiting for a
    /// connection to its commit's answer: an operation still running then
    /// answers [`LogError::OutcomeUnknown`](crate::durable::LogError::OutcomeUnknown) (or
    /// [`LogError::Unavailable`](crate::durable::LogError::Unavailable) if it had sent nothing), and its
    /// statement still running is cancelled (a cancel request, over a
    /// connection made as the log's are) and its transaction rolled back
    /// before the log's next operation runs, which therefore reads the
    /// outcome, final. A log on a caller's pool
    /// ([`PostgresLog::with_pool`](super::PostgresLog::with_pool)) cannot send a cancel request: it waits
    /// for that statement up to the timeout again, then closes the
    /// connection, and the server ends the statement in its own time —
    /// which a Run's first claim and an append, each a statement of its
    /// own with no server-side timeout, may outlive. Every transaction baton runs sets its
    /// `statement_timeout`, `lock_timeout` and
    /// `idle_in_transaction_session_timeout` to it (`SET LOCAL`: nothing
    /// outlives the transaction), so a transaction whose client vanished (a
    /// paused or cut-off host) does not hold a Run's row lock for longer.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The schema (namespace) of the log's tables.
    pub fn schema(mut self, schema: PostgresSchema) -> Self {
        self.schema = schema;
        self
    }

    /// Whether opening the log first runs [`PostgresSchema::migrate`]
    /// (default: no, and opening runs no DDL; a database at another schema
    /// version is then refused with [`LogError::UnknownSchema`](crate::durable::LogError::UnknownSchema)). Meant for
    /// development and tests; a fleet migrates once, as a deploy step.
    pub fn migrate(mut self, migrate: bool) -> Self {
        self.migrate = migrate;
        self
    }

    /// Whether the log prepares its statements, once per connection
    /// (default: yes). Say no behind a pooler in transaction mode that
    /// does not keep prepared statements (PgBouncer before 1.21, or
    /// without `max_prepared_statements`): each statement is then sent
    /// with its parameters' types and parsed by the server every time, in
    /// the same single round trip.
    pub fn prepared_statements(mut self, prepared: bool) -> Self {
        self.prepared_statements = prepared;
        self
    }

    /// Group commit (default: as many slots as the pool has connections;
    /// never more than that; `0` turns it off): at most `slots` of the log's
    /// claims, appends and finishes run at once as without it, each its
    /// own transaction; when all are busy, the writes of the others wait,
    /// and each slot given back sends up to 64 of them, at most one of
    /// each Run, in one transaction, so that under load many units of
    /// work share one commit. A lone operation never waits (a batch of
    /// one). Only a write on the facts an operation usually finds — a
    /// Run's first claim, an append or a finish at the Run's current epoch
    /// with no pause — is batched; the rest run alone, as they would.
    ///
    /// What each operation of a batch is answered: its own answer if the
    /// batch committed (a write that found its facts other runs its own
    /// transaction then); if the batch rolled back (one of its statements
    /// failed: an append that found a pause, a deadlock, a lock timeout),
    /// nothing of it was written and each operation runs alone, as it
    /// would without group commit; if the commit's reply was lost, or the
    /// time ran out once it was sent,
    /// [`LogError::OutcomeUnknown`](crate::durable::LogError::OutcomeUnknown)
    /// for each, as for one operation. A batch waits at most 20 ms for a
    /// lock another transaction holds (a Run's row lock held by a slow
    /// transaction); then it rolls back, and its operations run alone, so
    /// no Run's write waits behind another Run's lock for longer; and a
    /// write that has waited 20 ms for a slot is sent without one, so
    /// operations holding every slot (each waiting for a lock) hold up no
    /// other Run's write for longer either. Not used
    /// on tables distributed by
    /// root Run (a batch would span shards), nor by a log that requires a
    /// synchronous standby on them.
    ///
    /// With the default, writes wait for a slot only when every
    /// connection of the pool is busy writing, where they would otherwise
    /// wait for a connection: a log with a connection for each concurrent
    /// Run batches nothing, and a fleet host of many Runs on a small pool
    /// shares its commits. Fewer slots batch sooner, which pays only
    /// where the server's CPU runs out first: on this project's 2-core
    /// server, with a connection per Run, 4 slots cost 11–26 % at 8
    /// concurrent Runs and gained 16–27 % (claim and finish) at 32
    /// (benches/README.md, "Group commit").
    pub fn group_commit(mut self, slots: usize) -> Self {
        self.group_commit = Some(slots);
        self
    }

    /// Whether the log refuses a server that acknowledges a commit before
    /// a standby has flushed it (default: no), for its whole life: for an
    /// operator who wants every promise of docs/SPEC.md §6 to hold across
    /// a failover, not only the fence.
    ///
    /// - **Opening** reads the server's
    ///   [`PostgresReplication`](super::PostgresReplication) and, unless
    ///   it [waits for a standby](super::PostgresReplication::waits_for_a_standby),
    ///   answers [`LogError::NotALog`](crate::durable::LogError::NotALog)
    ///   naming both settings, before migrating anything.
    /// - **Every write** after that is checked again where it runs, as
    ///   the server then is (a failover to a standby that has none of its
    ///   own, a manager that dropped the synchronous standby, a role's or
    ///   a database's `synchronous_commit`): a guard sent in the same
    ///   flight as the write, before it, aborts the write's transaction
    ///   unless the session waits for a standby, and the operation answers
    ///   [`LogError::Unavailable`](crate::durable::LogError::Unavailable)
    ///   with [`NoSynchronousStandby`](super::NoSynchronousStandby) as its
    ///   source: nothing was written, and the same operation may be sent
    ///   again. The guard is plain SQL (two `current_setting` reads); a
    ///   write that is one autocommit statement carries it in its own
    ///   `WHERE` on one server, and is sent as `BEGIN`, the guard, the
    ///   statement and `COMMIT` in one flight on tables distributed by
    ///   root Run: no round trip more either way. In the caller's transaction
    ///   (`claim_in` and its siblings) the settings are read with the
    ///   isolation level, and a refusal leaves that transaction usable.
    ///   Reads are not checked.
    ///
    /// What the guard cannot close: a setting changed between the guard
    /// and the `COMMIT` of the same flight, and a commit already waiting
    /// for a standby that PostgreSQL releases when the standby is dropped
    /// from `synchronous_standby_names` (docs/guide/ha.md, "What baton
    /// cannot see").
    pub fn require_synchronous_standby(mut self, require: bool) -> Self {
        self.require_synchronous_standby = require;
        self
    }

    /// The pool size set.
    pub fn get_pool_size(&self) -> usize {
        self.pool_size
    }

    /// The operation timeout set.
    pub fn get_timeout(&self) -> Duration {
        self.timeout
    }

    /// The group commit slots set, or `None` for the default: as many as
    /// the pool has connections (see [`group_commit`](Self::group_commit)).
    pub fn get_group_commit(&self) -> Option<usize> {
        self.group_commit
    }
}
