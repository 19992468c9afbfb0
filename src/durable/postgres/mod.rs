//! [`PostgresLog`]: the durable handoff log on a PostgreSQL server, for
//! runtimes whose workers and owners run on several hosts (feature
//! `postgres`, on tokio-postgres and a deadpool-postgres pool).
#![cfg_attr(docsrs, doc(cfg(feature = "postgres")))]

/// A `tracing` event of the PostgreSQL store (target `baton::postgres`),
/// compiled only with the `tracing` feature.
macro_rules! store_event {
    ($level:ident, $($arg:tt)+) => {{
        #[cfg(feature = "tracing")]
        tracing::$level!(target: "baton::postgres", $($arg)+);
    }};
}

mod assumed;
mod attempts;
mod connect;
mod decide;
mod end;
mod failure;
mod flight;
mod group;
mod in_tx;
mod layout;
mod lease;
mod op;
mod operations;
mod options;
mod read;
mod replication;
mod schema;
mod sql;
mod sweep;
mod transaction;

use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{CancelToken, NoTls, Socket};

use self::connect::{Connector, in_runtime};
use self::failure::unavailable;
use self::flight::flight2;
use self::lease::{Cancel, CancelSent, Settling};
use self::sql::{Param, Sql};
use super::row::corrupt;
use crate::durable::contract::LogError;

pub use group::GroupCommits;
pub use options::PostgresOptions;
pub use replication::{NoSynchronousStandby, PostgresReplication};
pub use schema::{InvalidSchemaName, PAUSED_TRIGGER, POSTGRES_SCHEMA_VERSION, PostgresSchema};
pub use sql::PostgresStatement;

/// How to reach the server: tokio-postgres's connection settings, parsed
/// from a `key=value` string or a `postgresql://` URL with
/// [`str::parse`] (see tokio-postgres's `Config` for every key). Its
/// `sslmode` is honoured by the TLS connector given to
/// [`PostgresLog::connect_with`]; with [`NoTls`]
/// (what [`PostgresLog::connect`] uses), `sslmode=require` fails to connect.
pub use tokio_postgres::Config as PostgresConfig;

/// The pool crate [`PostgresLog::with_pool`] takes a pool of, re-exported
/// so a user builds it with the very version baton was built with.
pub use deadpool_postgres;

/// The PostgreSQL client crate, re-exported for its TLS traits
/// ([`MakeTlsConnect`]) and [`NoTls`].
pub use tokio_postgres;

/// The durable handoff log on a PostgreSQL server: the store for runtimes
/// whose workers and owners run on several hosts and already run
/// PostgreSQL. The fleet's durability is the server's (its WAL, its
/// `synchronous_commit`, its replicas): baton adds no replication of its
/// own, it uses the server's transactions correctly.
///
/// **Failover.** Given a primary and its standby (`host=a,b …
/// target_session_attrs=read-write`), a log follows the standby once it
/// is promoted. Every epoch a claim answers is above its server's
/// timeline floor, `(timeline − 1) · 2^40` ([`claim_step_above`]): a
/// promotion begins a new timeline, so even with asynchronous replication,
/// which may lose the last acknowledged writes, no epoch the old primary
/// answered is answered again (SPEC §6, "Replication and failover").
///
/// [`claim_step_above`]: crate::durable::claim_step_above
/// **The contract** is SPEC §6's, as for every [`HandoffLog`](super::HandoffLog):
/// each claim and append is one `READ COMMITTED` transaction that first
/// takes the Run's row lock (`SELECT … FOR UPDATE` on `baton_run`) and only
/// then reads the Run's pause and writes, so nothing comes between what it
/// reads and what it writes: two claims never issue one epoch, two
/// workers racing to hand off one Run cannot both succeed, and a claim and
/// a zombie's append are ordered one way or the other. A Run's first claim
/// has no row to lock yet: it inserts the row `ON CONFLICT DO NOTHING`,
/// and if another claim inserted it first (no row affected) its
/// transaction runs again, now finding the row to lock. A finish is
/// fenced as an append, under the same row lock (it is kept on the Run's
/// row, so the lock returns it); the tombstone of a retired root Run is
/// read after the lock, in the same transaction. `facts` reads the epoch,
/// the finish, the pause and the tombstone from one `REPEATABLE READ`
/// snapshot.
///
/// **Retirement against claims.** `retire` locks every Run of its root
/// (`FOR UPDATE`), so every write of an existing Run, which locks its row
/// first, is ordered with it, and a write that waited finds the row gone
/// and then reads the tombstone ([`LogError::Retired`]). A *new* Run has
/// no row to lock: a claim of one could slip past the Runs the retirement
/// read and leave a Run under the tombstone. So each root Run has a row of
/// its own in `baton_root` — its lock row while live, its tombstone once
/// retired — that the retirement locks exclusively before it reads the
/// Runs, and that a new Run's insert holds `FOR SHARE` in the same
/// statement (or makes, for a root Run's first Run). The server re-reads
/// a row it waited for against the statement's conditions, so an insert
/// that waited for a retirement finds the root retired and inserts
/// nothing; a retirement that waited for an insert reads its Run. A row
/// lock rather than an advisory lock (`pg_advisory_xact_lock_shared`),
/// because the one-statement first claim must stay one statement: a lock
/// taken inside a statement comes after the statement's snapshot, which
/// would miss a tombstone committed while it waited, while a locked row is
/// read again at its newest version. Either is transaction-scoped, and
/// works through PgBouncer's transaction pooling; a claim or an append
/// reads the root's row by its primary key, so neither grows slower with
/// the number of retired roots.
///
/// **One round trip, or three.** A Run's first claim, and an append or a
/// finish at the Run's current epoch with no pause yet — what a healthy
/// fleet does — are one statement each, their own transaction: the pure
/// rule is asked, in Rust, what it writes for exactly those facts, and the
/// statement writes it only if the Run's facts are those (the claim's
/// insert `ON CONFLICT DO NOTHING`; the append's insert from the Run's row
/// at its epoch, which it flags `paused` (on Citus: locks), refused by
/// the pause's key if a pause is there; the finish's update of the Run's
/// row at its epoch, unfinished and not `paused`), decided by its count
/// of affected rows. When the facts are other (a takeover's claim, a
/// fenced or repeated append) nothing was written, and the operation runs
/// its transaction, in two flights (pipelined: tokio-postgres sends
/// requests in the order their futures are first polled, and the server
/// runs them in that order): `BEGIN` with its `SET LOCAL` timeouts, the
/// row lock and the pause read together; then the write and `COMMIT`
/// together (`COMMIT` alone when there is nothing to write, `ROLLBACK`
/// after a refusal). The pure rule decides in between, in Rust, as in
/// every store. On tables distributed by root Run (Citus, which keeps no
/// trigger, so no `paused` flag) a finish is one round trip too, though
/// not one statement: its whole transaction goes in one flight (`BEGIN`,
/// the row lock, the finish only on the facts for which the rule writes,
/// `COMMIT`; see `Write::alone`).
///
/// **Group commit.** Under load those writes share transactions: while
/// more than [`PostgresOptions::group_commit`] of them are in flight
/// (by default, as many as the pool has connections), the others wait
/// and go together, up to 64 of different Runs in one transaction, each
/// answered from its own statement's count as it would be alone; a batch
/// that rolls back runs each of its operations alone, and a lost commit
/// reply is [`LogError::OutcomeUnknown`] for each (docs/SPEC.md §6,
/// "Group commit"). [`group_commits`](Self::group_commits) counts what
/// was sent.
///
/// **Errors say what to do.** A refusal ([`LogError::Fenced`],
/// [`LogError::AlreadyHandedOff`], …) is the log's answer and is never
/// retried. [`LogError::Unavailable`]: nothing was committed (the server
/// could not be reached, TLS or authentication failed, a failure before
/// the commit was sent), so the same operation may be sent again.
/// [`LogError::OutcomeUnknown`]: the connection was lost once the commit
/// (for the one-statement forms: the statement) was sent, or the operation
/// outlived its timeout; reading the facts (or appending the identical row
/// again, idempotent) resolves it. Inside, a serialization failure
/// (SQLSTATE 40001) or a deadlock (40P01), and a connection lost before
/// the commit was sent, run the whole transaction again, up to a few
/// times, before either is answered.
///
/// **A pool, and no head-of-line blocking.** A log runs each operation on
/// a connection of its own from a pool (deadpool-postgres; at most
/// [`PostgresOptions::pool_size`] connections, opened as needed), so one
/// Run's slow operation — a row lock held by another host, a connection
/// cut off until its timeout — holds one connection and delays no other
/// Run's. A connection that failed, or whose operation timed out, is
/// closed, and the pool opens another; so a log outlives the faults of its
/// network and its server. An operation whose future is dropped mid-way
/// leaves its connection to a task that ends what it sent (a `ROLLBACK`
/// after it, on the same connection) before the connection is used again,
/// and the log's next operation waits for that, so it sees whatever the
/// dropped one committed. A process opens one log and shares it (`&self`
/// operations; the log is `Send` and `Sync`).
///
/// **No session state.** Nothing is set on a connection beyond one
/// transaction (`SET LOCAL`), and with
/// [`prepared_statements(false)`](PostgresOptions::prepared_statements) no
/// statement outlives one either: the log runs behind PgBouncer in
/// transaction pooling mode.
///
/// **Schema.** Version [`POSTGRES_SCHEMA_VERSION`], tables `baton_schema`,
/// `baton_run` (with each Run's finish, and whether it has a pause),
/// `baton_handoff_pause` (with the trigger [`PAUSED_TRIGGER`], which flags
/// the pause's Run) and `baton_root` (each root Run's lock row, or
/// tombstone) in the
/// [`PostgresSchema`] the options name. Opening a log runs no DDL: it checks the version and
/// refuses another ([`LogError::UnknownSchema`]). Migrate as a deploy step
/// ([`PostgresSchema::migrate`], or the SQL of
/// [`PostgresSchema::migrations`] with your own tool), or let the log do
/// it when it opens ([`PostgresOptions::migrate`]). After that the log's
/// role needs only `USAGE` on the schema and `SELECT`, `INSERT` and
/// `UPDATE` on the tables, and `DELETE` too to retire root Runs.
///
/// **Inside a transaction of the caller's.** [`claim_in`](Self::claim_in),
/// [`append_in`](Self::append_in), [`finish_in`](Self::finish_in) and
/// [`retire_in`](Self::retire_in) run the same rule on a `READ COMMITTED`
/// transaction the caller owns, so the log's write commits (or rolls
/// back) with the caller's own rows; the caller runs it again after a
/// serialization failure (see [their docs](#inside-the-callers-transaction)).
///
/// **Runtime.** tokio-postgres's sockets and timers are tokio's: the
/// futures of a `PostgresLog` must be polled within a tokio runtime (any
/// flavour) with its I/O and time drivers (`enable_all`), which also runs
/// the tasks that drive the connections. Polled outside any runtime, an
/// operation answers [`LogError::Unavailable`] instead of panicking. Its
/// timeout is a tokio timer, and tokio documents that a timer panics in a
/// runtime built without the time driver; baton cannot ask first, so give
/// it a runtime with `enable_all`. There is no blocking
/// [`HandoffLog`](super::HandoffLog) form, which would hide a runtime of
/// its own; block on the async form ([`AsyncHandoffLog`](crate::durable::AsyncHandoffLog)) where blocking
/// is wanted.
///
/// ```no_run
/// use baton::durable::{AsyncHandoffLog, Claim, PostgresConfig, PostgresLog};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config: PostgresConfig = "host=db.internal user=baton dbname=baton".parse()?;
/// let log: PostgresLog<u32> = PostgresLog::connect(config).await?;
/// let Claim::Owner(epoch) = log.claim_async("root-run", "run").await? else {
///     return Ok(()); // handed off already: never resume it
/// };
/// println!("start the Run's worker with epoch {epoch}");
/// # Ok(())
/// # }
/// ```
pub struct PostgresLog<P> {
    /// Unwind safe as asserted: the pool's state is its queue of idle
    /// connections, each whole or closed; an operation interrupted mid-way
    /// (dropped, or unwound by a panic) hands its connection to a task
    /// that settles it (see [`Lease`](lease::Lease)).
    pool: AssertUnwindSafe<Pool>,
    timeout: Duration,
    schema: PostgresSchema,
    sql: Arc<Sql>,
    prepared: bool,
    /// The connections of operations that ended mid-way, being settled.
    settling: Arc<Settling>,
    /// The log's group commit, if it has one ([`PostgresOptions::group_commit`]).
    group: Option<Arc<group::Group>>,
    /// The payload type of the pauses the log holds (`fn() -> P`: the log
    /// owns no `P`, so it is `Send` and `Sync` whatever `P` is).
    payload: PhantomData<fn() -> P>,
}

impl<P> std::fmt::Debug for PostgresLog<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password: the config is the pool's, not shown.
        let status = self.pool.status();
        f.debug_struct("PostgresLog")
            .field("pool_size", &status.max_size)
            .field("connections", &status.size)
            .field("timeout", &self.timeout)
            .field("schema", &self.schema)
            .field("prepared_statements", &self.prepared)
            .finish()
    }
}

impl<P> PostgresLog<P> {
    /// Opens a log on the server `config` names, without TLS, with the
    /// default [`PostgresOptions`]: a pool of 16 connections, a 10 s
    /// operation timeout, the tables on the `search_path`, no migration.
    /// The database must be at [`POSTGRES_SCHEMA_VERSION`] already (see
    /// [`PostgresSchema::migrate`]). Must be awaited within a tokio
    /// runtime, which drives the connections from then on.
    ///
    /// # Errors
    ///
    /// As [`connect_with`](Self::connect_with).
    pub async fn connect(config: PostgresConfig) -> Result<Self, LogError> {
        Self::connect_with(config, NoTls, PostgresOptions::new()).await
    }

    /// Opens a log on the server `config` names, its connections made
    /// with `tls` (tokio-postgres's [`MakeTlsConnect`]: e.g.
    /// tokio-postgres-rustls's `MakeRustlsConnect`, or
    /// [`NoTls`]), as `options` say. One connection
    /// is opened at once, to check the schema (and migrate it, if the
    /// options say so); the others as operations need them. With several
    /// hosts and a `connect_timeout`, each host is given that long to
    /// answer a new connection before the next is tried, as libpq does
    /// (tokio-postgres bounds only the TCP connect by it, so a paused or
    /// hung primary would hold every new connection; docs/guide/ha.md).
    ///
    /// # Errors
    ///
    /// [`LogError::UnknownSchema`] if the database is at another schema
    /// version than [`POSTGRES_SCHEMA_VERSION`] (0: none; an older one:
    /// migrate it) or holds baton's tables without a version;
    /// [`LogError::Unavailable`] if the server cannot be reached, TLS or
    /// authentication fails (e.g. `sslmode=require` against a server
    /// without TLS), or the server fails, within the options' timeout, or
    /// if it is not awaited within a tokio runtime. With
    /// [`PostgresOptions::migrate`], also what [`PostgresSchema::migrate`]
    /// answers ([`LogError::OutcomeUnknown`] if its `COMMIT` failed). With
    /// [`PostgresOptions::require_synchronous_standby`],
    /// [`LogError::NotALog`] (permanent) if the server acknowledges a
    /// commit before any standby has it; then nothing is migrated.
    pub async fn connect_with<T>(
        config: PostgresConfig,
        tls: T,
        options: PostgresOptions,
    ) -> Result<Self, LogError>
    where
        T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        T::Stream: Send + Sync,
        T::TlsConnect: Send + Sync,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        let manager = Manager::from_connect(
            config,
            Connector { tls: tls.clone() },
            ManagerConfig {
                // Only a closed connection is refused: a dropped
                // operation's connection is settled before it comes back.
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .build()
            .map_err(unavailable)?;
        let cancel: Cancel = Arc::new(move |token: CancelToken| -> CancelSent {
            let tls = tls.clone();
            Box::pin(async move {
                if let Err(error) = token.cancel_query(tls).await {
                    store_event!(warn, error = %error, "cancel request not sent");
                    let _ = error;
                }
            })
        });
        Self::open(pool, options, Some(cancel)).await
    }

    /// Opens a log on a pool the caller built (its size, TLS and
    /// connection hooks are the caller's; the options' pool size is
    /// ignored; so is the per-host `connect_timeout` of
    /// [`connect_with`](Self::connect_with), its connections being the
    /// builder's). Its connections must carry no open transaction when
    /// idle; baton sets nothing on them. The log cannot cancel a
    /// statement of an operation that timed out (it knows no way to reach
    /// the server outside the pool): see [`PostgresOptions::timeout`].
    ///
    /// # Errors
    ///
    /// As [`connect_with`](Self::connect_with).
    pub async fn with_pool(pool: Pool, options: PostgresOptions) -> Result<Self, LogError> {
        Self::open(pool, options, None).await
    }

    /// [`with_pool`](Self::with_pool), with the way to send a cancel
    /// request to the pool's server, if known.
    async fn open(
        pool: Pool,
        options: PostgresOptions,
        cancel: Option<Cancel>,
    ) -> Result<Self, LogError> {
        in_runtime()?;
        let mut log = Self {
            pool: AssertUnwindSafe(pool),
            timeout: options.timeout,
            sql: Arc::new(Sql::new(
                &options.schema,
                options.timeout,
                layout::Layout::OneServer,
                options.require_synchronous_standby,
            )),
            schema: options.schema,
            prepared: options.prepared_statements,
            settling: Settling::new(cancel),
            group: None,
            payload: PhantomData,
        };
        let checked = tokio::time::timeout(log.timeout, async {
            let object = log.pool.get().await.map_err(unavailable)?;
            if options.require_synchronous_standby {
                PostgresReplication::read(&object).await?.required()?;
            }
            if options.migrate {
                log.schema.migrate(&object).await?;
            }
            match log.schema.version(&object).await? {
                POSTGRES_SCHEMA_VERSION => layout::read(&log.schema, &object).await,
                found => Err(LogError::UnknownSchema {
                    found,
                    expected: POSTGRES_SCHEMA_VERSION,
                }),
            }
        })
        .await;
        let layout = checked.unwrap_or_else(|_| {
            Err(unavailable(format!(
                "the log did not open within {:?}",
                log.timeout
            )))
        })?;
        log.sql = Arc::new(Sql::new(
            &log.schema,
            log.timeout,
            layout,
            options.require_synchronous_standby,
        ));
        // Off where a batch would span shards (distributed by root Run),
        // and where a write needs a guard of its own before it.
        let groups = layout == layout::Layout::OneServer
            && (log.sql.guard.is_none() || log.sql.guard_inline);
        let connections = log.pool.status().max_size;
        let slots = options.group_commit.unwrap_or(connections).min(connections);
        if slots > 0 && groups {
            log.group = Some(group::Group::new(
                slots,
                log.pool.0.clone(),
                Arc::clone(&log.sql),
                Arc::clone(&log.settling),
                log.prepared,
                log.timeout,
            ));
        }
        Ok(log)
    }

    /// What the server the log writes to acknowledges a commit after
    /// ([`PostgresReplication`]), read now on one of the log's connections:
    /// whether a failover keeps what the log acknowledged
    /// (docs/SPEC.md §6, "Replication and failover"). An operator, or a
    /// high-availability manager, may change it at any time; with
    /// [`PostgresOptions::require_synchronous_standby`] the log checks it
    /// when it opens and again at every write.
    ///
    /// # Errors
    ///
    /// [`LogError::Unavailable`] if the server cannot be reached or fails
    /// within the log's timeout.
    pub async fn replication(&self) -> Result<PostgresReplication, LogError> {
        let read = async {
            let object = self.pool.get().await.map_err(unavailable)?;
            PostgresReplication::read(&object).await
        };
        tokio::time::timeout(self.timeout, read)
            .await
            .unwrap_or_else(|_| {
                Err(unavailable(format!(
                    "the server's replication was not read within {:?}",
                    self.timeout
                )))
            })
    }

    /// The operation timeout (see [`PostgresOptions::timeout`]).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The schema the log's tables are in.
    pub fn schema(&self) -> &PostgresSchema {
        &self.schema
    }

    /// Whether the log found its tables distributed by `root_run_id` on
    /// Citus when it opened ([`PostgresSchema::distribute`]; docs/SCALE.md):
    /// its statements are then the forms that run each operation on the
    /// shard of its root Run ([`statements`](Self::statements)).
    pub fn is_distributed(&self) -> bool {
        self.sql.layout == layout::Layout::ByRootRun
    }

    /// Every statement the log sends for its operations, with its
    /// parameters' types, for the layout it found when it opened. Besides
    /// these its operations send only `BEGIN` (with its `SET LOCAL`
    /// timeouts), `COMMIT`, `ROLLBACK`, the guard of a log that requires a
    /// synchronous standby (one `SELECT` of its settings), the sweep's read of its candidates
    /// (one read across every root Run, by design) and, in a caller's
    /// transaction, one read of its isolation level; opening the log reads
    /// the schema's version and the tables' layout.
    ///
    /// ```
    /// # async fn run(log: &baton::durable::PostgresLog<u32>) {
    /// for statement in log.statements() {
    ///     println!("{}: {}", statement.name, statement.text);
    /// }
    /// # }
    /// ```
    pub fn statements(&self) -> Vec<PostgresStatement> {
        self.sql.sent()
    }

    /// How many slots the log's group commit has: as set, at most the
    /// pool's size, and by default the pool's size; `None` if the log has
    /// none ([`PostgresOptions::group_commit`]).
    pub fn group_commit_slots(&self) -> Option<usize> {
        self.group.as_ref().map(|group| group.slots())
    }

    /// What the log's group commit has sent so far, for metrics; `None`
    /// if the log has none ([`PostgresOptions::group_commit`]).
    pub fn group_commits(&self) -> Option<GroupCommits> {
        self.group.as_ref().map(|group| group.counts())
    }

    /// The log's pool: its [`status`](deadpool_postgres::Pool::status)
    /// for metrics, or a connection for the runtime's own SQL (given back
    /// when dropped).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}
