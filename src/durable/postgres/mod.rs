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

mod in_tx;
mod lease;
mod schema;
mod sweep;

use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, SystemTime};

use deadpool_postgres::{ClientWrapper, Manager, ManagerConfig, Pool, RecyclingMethod};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::error::SqlState;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{CancelToken, Client, NoTls, Row, Socket, Statement};

use self::lease::{Cancel, CancelSent, Lease, Settling};
use super::async_log::AsyncHandoffLog;
use super::fence::{
    AppendStep, Claim, Epoch, Fate, Retirement, append_step, claim_step, finish_step, retire_step,
};
use super::log::{
    LogError, Receipt, check_append, check_finish, check_root, check_run, encode_checked,
};
use super::reconcile::{Appended, Finished, RunFacts};
use super::row::{checked_row, corrupt, decoded_outcome};
use super::sweep::{SweepStep, sweep_step};
use crate::facts::{HandoffPause, Invocation};

pub use schema::{InvalidSchemaName, POSTGRES_SCHEMA_VERSION, PostgresSchema};

/// How to reach the server: tokio-postgres's connection settings, parsed
/// from a `key=value` string or a `postgresql://` URL with
/// [`str::parse`] (see tokio-postgres's `Config` for every key). Its
/// `sslmode` is honoured by the TLS connector given to
/// [`PostgresLog::connect_with`]; with [`NoTls`](tokio_postgres::NoTls)
/// (what [`PostgresLog::connect`] uses), `sslmode=require` fails to connect.
pub use tokio_postgres::Config as PostgresConfig;

/// The pool crate [`PostgresLog::with_pool`] takes a pool of, re-exported
/// so a user builds it with the very version baton was built with.
pub use deadpool_postgres;

/// The PostgreSQL client crate, re-exported for its TLS traits
/// ([`MakeTlsConnect`]) and [`NoTls`](tokio_postgres::NoTls).
pub use tokio_postgres;

/// How many times one operation runs its transaction when the server
/// answers a serialization failure (SQLSTATE 40001), a deadlock (40P01),
/// or the connection is lost before the commit was sent.
const ATTEMPTS: u32 = 8;

/// How a [`PostgresLog`] is opened: the size of its pool, its operation
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
    pool_size: usize,
    timeout: Duration,
    schema: PostgresSchema,
    migrate: bool,
    prepared_statements: bool,
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
    /// `search_path`, no migration, prepared statements.
    pub fn new() -> Self {
        Self {
            pool_size: Self::DEFAULT_POOL_SIZE,
            timeout: Self::DEFAULT_TIMEOUT,
            schema: PostgresSchema::search_path(),
            migrate: false,
            prepared_statements: true,
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
    /// [`PostgresLog::with_pool`], whose pool is sized by its builder.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How long one operation may take (at least 1 ms), from waiting for a
    /// connection to its commit's answer: an operation still running then
    /// answers [`LogError::OutcomeUnknown`] (or
    /// [`LogError::Unavailable`] if it had sent nothing), and its
    /// statement still running is cancelled (a cancel request, over a
    /// connection made as the log's are) and its transaction rolled back
    /// before the log's next operation runs, which therefore reads the
    /// outcome, final. A log on a caller's pool
    /// ([`PostgresLog::with_pool`]) cannot send a cancel request: it waits
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
    /// version is then refused with [`LogError::UnknownSchema`]). Meant for
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

    /// The pool size set.
    pub fn get_pool_size(&self) -> usize {
        self.pool_size
    }

    /// The operation timeout set.
    pub fn get_timeout(&self) -> Duration {
        self.timeout
    }
}

/// The durable handoff log on a PostgreSQL server: the store for runtimes
/// whose workers and owners run on several hosts and already run
/// PostgreSQL. The fleet's durability is the server's (its WAL, its
/// `synchronous_commit`, its replicas): baton adds no replication of its
/// own, it uses the server's transactions correctly.
///
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
/// **One round trip, or three.** A Run's first claim and an append at the
/// Run's current epoch with no pause yet — what a healthy fleet does —
/// are one statement each, their own transaction: the pure rule is asked,
/// in Rust, what it writes for exactly those facts, and the statement
/// writes it only if the Run's facts are those (the claim's insert `ON
/// CONFLICT DO NOTHING`; the append's insert from the Run's row locked at
/// its epoch, refused by the pause's key if a pause is there), decided by
/// its count of affected rows. When the facts are other (a takeover's claim, a
/// fenced or repeated append) nothing was written, and the operation runs
/// its transaction, in two flights (pipelined: tokio-postgres sends
/// requests in the order their futures are first polled, and the server
/// runs them in that order): `BEGIN` with its `SET LOCAL` timeouts, the
/// row lock and the pause read together; then the write and `COMMIT`
/// together (`COMMIT` alone when there is nothing to write, `ROLLBACK`
/// after a refusal). The pure rule decides in between, in Rust, as in
/// every store.
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
/// `baton_run` (with each Run's finish), `baton_handoff_pause` and
/// `baton_root` (each root Run's lock row, or tombstone) in the
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
/// operation answers [`LogError::Unavailable`] instead of panicking; within
/// a runtime built without the time driver it panics, as every tokio timer
/// does there (tokio offers no way to ask first). There is no blocking
/// [`HandoffLog`](super::HandoffLog) form, which would hide a runtime of
/// its own; block on the async form ([`AsyncHandoffLog`]) where blocking
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
    /// that settles it (see [`Lease`]).
    pool: AssertUnwindSafe<Pool>,
    timeout: Duration,
    schema: PostgresSchema,
    sql: Arc<Sql>,
    prepared: bool,
    /// The connections of operations that ended mid-way, being settled.
    settling: Arc<Settling>,
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

fn unavailable(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> LogError {
    LogError::Unavailable(error.into())
}

/// Why one attempt at an operation's transaction did not succeed.
enum Failure {
    /// The log's answer (a refusal, bad facts): returned as it is.
    Answer(LogError),
    /// The server answered an error; `retry` if it is a serialization
    /// failure or a deadlock, else it is [`LogError::Unavailable`]. The
    /// transaction did not commit.
    Server {
        error: tokio_postgres::Error,
        retry: bool,
    },
    /// A Run's first claim lost the race to insert its row: run again.
    Raced,
    /// The connection failed before the commit was sent: nothing
    /// committed; run again on a new connection.
    Lost(tokio_postgres::Error),
    /// The connection failed while the commit was in flight: the outcome
    /// is unknown.
    Unknown(tokio_postgres::Error),
}

impl From<LogError> for Failure {
    fn from(error: LogError) -> Self {
        Failure::Answer(error)
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        match error.code() {
            // The server ends the session: shutting down, crashed, or the
            // connection is broken (classes 57P and 08).
            Some(code) if code.code().starts_with("57P") || code.code().starts_with("08") => {
                Failure::Lost(error)
            }
            Some(code) => {
                let retry = *code == SqlState::T_R_SERIALIZATION_FAILURE
                    || *code == SqlState::T_R_DEADLOCK_DETECTED;
                Failure::Server { error, retry }
            }
            None => Failure::Lost(error),
        }
    }
}

/// An epoch as stored (`bigint`).
fn stored(epoch: Epoch) -> Result<i64, LogError> {
    i64::try_from(epoch.get()).map_err(|_| LogError::EpochsExhausted)
}

/// A stored epoch (column `index`) as an [`Epoch`]: positive, as the
/// schema's check says.
fn epoch_of(row: &Row, index: usize, run_id: &str) -> Result<Epoch, Failure> {
    let value: i64 = column(row, index, run_id)?;
    match u64::try_from(value) {
        Ok(epoch) if epoch > 0 => Ok(Epoch::new(epoch)),
        _ => Err(corrupt(run_id, "the stored epoch is not positive").into()),
    }
}

/// Column `index` of a row read for the Run `run_id`; a column of another
/// type than baton's schema says means the table was altered outside baton.
fn column<T>(row: &Row, index: usize, run_id: &str) -> Result<T, Failure>
where
    T: for<'r> tokio_postgres::types::FromSql<'r>,
{
    row.try_get(index)
        .map_err(|error| corrupt(run_id, format_args!("column {index}: {error}")).into())
}

/// What one operation does inside its transaction.
enum Op<'a, P> {
    Claim {
        root_run_id: &'a str,
        run_id: &'a str,
    },
    Append {
        root_run_id: &'a str,
        source: &'a Invocation,
        epoch: Epoch,
        pause: &'a HandoffPause<P>,
        json: String,
    },
    Finish {
        root_run_id: &'a str,
        source: &'a Invocation,
        epoch: Epoch,
        outcome: &'a P,
        json: String,
    },
    /// `retire(root)`.
    Retire { root_run_id: &'a str },
    /// A batch of a sweep: each of `roots` looked at against the cut-off
    /// `before`, all in one transaction.
    Sweep {
        roots: &'a [String],
        before: SystemTime,
    },
    Facts {
        root_run_id: &'a str,
        run_id: &'a str,
    },
}

impl<P> Op<'_, P> {
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    fn name(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "claim",
            Op::Append { .. } => "append",
            Op::Finish { .. } => "finish",
            Op::Retire { .. } => "retire",
            Op::Sweep { .. } => "sweep",
            Op::Facts { .. } => "facts",
        }
    }

    /// The Run the operation is about (a retirement's: the root Run, and
    /// no Run id).
    fn run(&self) -> (&str, &str) {
        match *self {
            Op::Claim {
                root_run_id,
                run_id,
            }
            | Op::Facts {
                root_run_id,
                run_id,
            } => (root_run_id, run_id),
            Op::Append {
                root_run_id,
                source,
                ..
            }
            | Op::Finish {
                root_run_id,
                source,
                ..
            } => (root_run_id, source.run_id.as_str()),
            Op::Retire { root_run_id } => (root_run_id, ""),
            // A batch: its first root, for the events.
            Op::Sweep { roots, .. } => (roots.first().map_or("", String::as_str), ""),
        }
    }
}

/// What an operation answered.
enum Answer<P> {
    Claim(Claim<P>),
    /// An append's or a finish's.
    Receipt(Receipt),
    Retire(Retirement),
    /// A sweep's batch: its look at each root, in the batch's order.
    Swept(Vec<SweepStep>),
    Facts(RunFacts<P>),
}

/// The statements of the operations, by what they do.
#[derive(Clone, Copy)]
enum Which {
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
}

const TEXT1: &[Type] = &[Type::TEXT];
const TEXT2: &[Type] = &[Type::TEXT, Type::TEXT];
const PAUSE_ROW: &[Type] = &[
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
    /// The types of the statement's parameters, as it is prepared or sent.
    fn types(self) -> &'static [Type] {
        match self {
            Which::LockRun | Which::ReadEpoch | Which::ReadPause => TEXT2,
            Which::InsertRun => &[Type::TEXT, Type::TEXT, Type::INT8],
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
            Which::FinishRun => &[
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

/// The texts of a log's statements, for its schema and timeout.
struct Sql {
    begin_write: String,
    begin_read: String,
    statements: [String; 17],
}

impl Sql {
    fn new(schema: &PostgresSchema, timeout: Duration) -> Self {
        let s = schema.prefix();
        let key = "WHERE root_run_id = $1 AND run_id = $2";
        let millis = u32::try_from(timeout.as_millis())
            .unwrap_or(u32::MAX)
            .clamp(1, i32::MAX as u32);
        let timeouts = format!(
            "SET LOCAL statement_timeout = {millis}; SET LOCAL lock_timeout = {millis}; \
             SET LOCAL idle_in_transaction_session_timeout = {millis}"
        );
        let pause_columns = "root_run_id, run_id, session_id, turn_id, invocation_id, \
                             handoff_id, successor_run_id, successor_invocation_id, pause, epoch";
        // A Run's epoch and its finish, as `run_facts` reads them.
        let run_columns =
            "epoch, finish_session_id, finish_turn_id, finish_invocation_id, outcome::text";
        let pause_read = "session_id, turn_id, invocation_id, handoff_id, \
                          successor_run_id, successor_invocation_id, pause::text";
        Self {
            begin_write: format!("BEGIN ISOLATION LEVEL READ COMMITTED; {timeouts}"),
            begin_read: format!("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; {timeouts}"),
            statements: [
                format!("SELECT {run_columns} FROM {s}baton_run {key} FOR UPDATE"),
                format!("SELECT {run_columns} FROM {s}baton_run {key}"),
                format!("SELECT {pause_read} FROM {s}baton_handoff_pause {key}"),
                // A new Run's row, only under a live root Run (R9): the
                // root's row is made here if it has none (a root Run's
                // first claim), else held `FOR SHARE` unless retired. A
                // retirement takes that row exclusively before it reads
                // the root's Runs, so the two are ordered: a claim that
                // waited for a retirement's commit finds the row, as the
                // server re-reads it then, retired (no row: nothing
                // inserted, and the claim's transaction reads the
                // tombstone); a retirement that waited for this claim's
                // commit reads its Run, open. Both in this one statement,
                // so a Run's first claim stays one write.
                format!(
                    "WITH new_root AS ( \
                         INSERT INTO {s}baton_root (root_run_id) VALUES ($1) \
                         ON CONFLICT (root_run_id) DO NOTHING RETURNING 1), \
                     live_root AS ( \
                         SELECT 1 FROM {s}baton_root WHERE root_run_id = $1 AND NOT retired \
                         FOR SHARE) \
                     INSERT INTO {s}baton_run (root_run_id, run_id, epoch) \
                     SELECT $1, $2, $3 \
                     WHERE EXISTS (SELECT 1 FROM new_root) OR EXISTS (SELECT 1 FROM live_root) \
                     ON CONFLICT (root_run_id, run_id) DO NOTHING"
                ),
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
                // delete leaves no row. No `ON CONFLICT`: its speculative
                // insertion costs every append (pgbench here: 0.313-0.330
                // ms with it, 0.292-0.298 ms without), while the key's
                // refusal costs only the rare append that finds a pause.
                format!(
                    "WITH run AS (SELECT epoch FROM {s}baton_run {key} AND epoch = $10 \
                                  AND outcome IS NULL FOR UPDATE) \
                     INSERT INTO {s}baton_handoff_pause ({pause_columns}) \
                     SELECT $1, $2, $3, $4, $5, $6, $7, $8, CAST($9::text AS json), $10 \
                     FROM run"
                ),
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
            ],
        }
    }

    fn text(&self, which: Which) -> &str {
        &self.statements[which as usize]
    }
}

/// One statement, ready to send: prepared on the connection, or its text
/// and its parameters' types (parsed by the server each time, into the
/// unnamed statement: nothing outlives the request).
enum Stmt<'a> {
    Prepared(Statement),
    Unnamed(&'a str, &'static [Type]),
}

type Param<'a> = &'a (dyn ToSql + Sync);

impl Stmt<'_> {
    /// Executes the statement: the request is sent when the future is
    /// first polled (so [`flight2`] keeps the order), in both forms.
    async fn execute(
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
    async fn query(
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
    async fn query_opt(
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
struct Conn<'a> {
    client: &'a Client,
    /// The pool's connection with its statement cache, if the log prepares
    /// its statements; `None`: every statement is sent by its text.
    cache: Option<&'a ClientWrapper>,
    sql: &'a Sql,
}

impl<'a> Conn<'a> {
    /// The statement `which`: prepared on this connection once (then from
    /// its cache), or sent by its text.
    async fn statement(&self, which: Which) -> Result<Stmt<'a>, Failure> {
        let text = self.sql.text(which);
        match self.cache {
            Some(cache) => Ok(Stmt::Prepared(
                cache.prepare_typed_cached(text, which.types()).await?,
            )),
            None => Ok(Stmt::Unnamed(text, which.types())),
        }
    }
}

/// Opens the pool's connections: with the TLS connector the user chose,
/// each driven by a task of the current tokio runtime.
struct Connector<T> {
    tls: T,
}

impl<T> deadpool_postgres::Connect for Connector<T>
where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + Sync,
    T::TlsConnect: Send + Sync,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    fn connect(
        &self,
        config: &PostgresConfig,
    ) -> Pin<
        Box<
            dyn Future<
                    Output = Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>,
                > + Send
                + '_,
        >,
    > {
        let tls = self.tls.clone();
        let config = config.clone();
        Box::pin(async move {
            let connected = config.connect(tls).await;
            let (client, connection) = match connected {
                Ok(connected) => connected,
                Err(error) => {
                    store_event!(warn, error = %error, "connect failed");
                    return Err(error);
                }
            };
            store_event!(debug, "connected");
            // The task ends when the connection does (closed by either
            // side, or the client dropped); its error is the client's
            // next error.
            let task = tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok((client, task))
        })
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
    /// [`NoTls`](tokio_postgres::NoTls)), as `options` say. One connection
    /// is opened at once, to check the schema (and migrate it, if the
    /// options say so); the others as operations need them.
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
    /// answers ([`LogError::OutcomeUnknown`] if its `COMMIT` failed).
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
    /// ignored). Its connections must carry no open transaction when
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
        let log = Self {
            pool: AssertUnwindSafe(pool),
            timeout: options.timeout,
            sql: Arc::new(Sql::new(&options.schema, options.timeout)),
            schema: options.schema,
            prepared: options.prepared_statements,
            settling: Settling::new(cancel),
            payload: PhantomData,
        };
        let checked = tokio::time::timeout(log.timeout, async {
            let object = log.pool.get().await.map_err(unavailable)?;
            if options.migrate {
                log.schema.migrate(&object).await?;
            }
            match log.schema.version(&object).await? {
                POSTGRES_SCHEMA_VERSION => Ok(()),
                found => Err(LogError::UnknownSchema {
                    found,
                    expected: POSTGRES_SCHEMA_VERSION,
                }),
            }
        })
        .await;
        checked.unwrap_or_else(|_| {
            Err(unavailable(format!(
                "the log did not open within {:?}",
                log.timeout
            )))
        })?;
        Ok(log)
    }

    /// The operation timeout (see [`PostgresOptions::timeout`]).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The schema the log's tables are in.
    pub fn schema(&self) -> &PostgresSchema {
        &self.schema
    }

    /// The log's pool: its [`status`](deadpool_postgres::Pool::status)
    /// for metrics, or a connection for the runtime's own SQL (given back
    /// when dropped).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

/// tokio's timers and sockets panic outside a tokio runtime: answer
/// [`LogError::Unavailable`] instead.
fn in_runtime() -> Result<(), LogError> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(|error| unavailable(format!("a PostgresLog needs a tokio runtime: {error}")))
}

/// The connection `lease` holds, as an operation's statements use it.
fn conn<'a>(lease: &'a Lease, sql: &'a Sql, prepared: bool) -> Option<Conn<'a>> {
    lease.object().map(|object| {
        let wrapper: &ClientWrapper = object;
        Conn {
            client: wrapper,
            cache: prepared.then_some(wrapper),
            sql,
        }
    })
}

/// The operations: each one transaction on a connection of the pool.
impl<P> PostgresLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    /// Runs `op` as one transaction, again after a serialization failure,
    /// a deadlock or a connection lost before the commit; all of it within
    /// the log's timeout.
    async fn execute(&self, op: Op<'_, P>) -> Result<Answer<P>, LogError> {
        in_runtime()?;
        let mut held: Option<Lease> = None;
        let mut tried = 0;
        let answer = tokio::time::timeout(self.timeout, async {
            self.settling.done().await;
            self.attempts(&mut held, &mut tried, &op).await
        })
        .await;
        let answer = answer.unwrap_or_else(|_| {
            store_event!(
                warn,
                op = op.name(),
                root_run_id = op.run().0,
                run_id = op.run().1,
                timeout_ms = self.timeout.as_millis() as u64,
                sent = held.is_some(),
                "timed out"
            );
            let Some(lease) = held.take() else {
                // Between tries, each ended without a commit sent: a
                // server error rolled it back, or it was lost before.
                return Err(unavailable(if tried == 0 {
                    format!(
                        "the operation did not start within {:?} (no connection); nothing was sent",
                        self.timeout
                    )
                } else {
                    format!(
                        "the operation did not finish within {:?}: {tried} tries, each ended \
                         before its commit; nothing was committed",
                        self.timeout
                    )
                }));
            };
            // Timed out mid-way: the connection may be inside a
            // transaction, a statement in flight. Settled (cancelled,
            // rolled back) before the log's next operation runs.
            lease.time_out();
            Err(LogError::OutcomeUnknown(
                format!(
                    "the operation did not finish within {:?}; its outcome is unknown",
                    self.timeout
                )
                .into(),
            ))
        });
        match op {
            Op::Facts { .. } => answer.map_err(LogError::of_a_read),
            Op::Claim { .. }
            | Op::Append { .. }
            | Op::Finish { .. }
            | Op::Retire { .. }
            | Op::Sweep { .. } => answer,
        }
    }

    /// The tries of `op`, counted in `tried` as each gets its connection.
    async fn attempts(
        &self,
        held: &mut Option<Lease>,
        tried: &mut u32,
        op: &Op<'_, P>,
    ) -> Result<Answer<P>, LogError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= ATTEMPTS;
            let object = self.pool.get().await.map_err(|error| {
                store_event!(warn, error = %error, "no connection");
                unavailable(error)
            })?;
            *tried = attempt;
            let lease = held.insert(Lease::new(object, &self.settling, self.timeout));
            let outcome = match conn(lease, &self.sql, self.prepared) {
                // Boxed: the transaction's future is large (its flights of
                // statements), and the caller's stack need not hold it.
                Some(conn) => Box::pin(transaction(&conn, op)).await,
                None => Err(Failure::Raced), // not reached: the lease was just made
            };
            let Some(lease) = held.take() else {
                return Err(unavailable("the operation's connection went missing"));
            };
            let why = match outcome {
                Ok(answer) => {
                    lease.release();
                    return Ok(answer);
                }
                Err(Failure::Answer(error)) => {
                    lease.release();
                    return Err(error);
                }
                Err(Failure::Unknown(error)) => {
                    lease.discard();
                    store_event!(
                        warn,
                        op = op.name(),
                        root_run_id = op.run().0,
                        run_id = op.run().1,
                        error = %error,
                        "outcome unknown"
                    );
                    return Err(LogError::OutcomeUnknown(Box::new(error)));
                }
                Err(Failure::Server { error, retry }) => {
                    lease.release();
                    if !retry || last {
                        return Err(unavailable(error));
                    }
                    if error.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED) {
                        "deadlock"
                    } else {
                        "serialization failure"
                    }
                }
                Err(Failure::Raced) => {
                    lease.release();
                    if last {
                        return Err(unavailable("a Run's first claims kept racing"));
                    }
                    "first claims raced"
                }
                Err(Failure::Lost(error)) => {
                    lease.discard();
                    if last {
                        return Err(unavailable(error));
                    }
                    "connection lost before the commit"
                }
            };
            store_event!(
                debug,
                op = op.name(),
                root_run_id = op.run().0,
                run_id = op.run().1,
                attempt,
                why,
                "retry"
            );
            let _ = why;
            // A little more each time: contention clears, a server restarts.
            tokio::time::sleep(Duration::from_millis(u64::from(attempt) * 5)).await;
        }
    }
}

/// Polls `a` then `b` until both are done. tokio-postgres sends a request
/// when its future is first polled, so the two go to the server in one
/// flight, in this order, and their answers come back in one round trip
/// (pipelining).
async fn flight2<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut first, mut second) = (None, None);
    std::future::poll_fn(|cx| {
        if first.is_none() {
            if let Poll::Ready(done) = a.as_mut().poll(cx) {
                first = Some(done);
            }
        }
        if second.is_none() {
            if let Poll::Ready(done) = b.as_mut().poll(cx) {
                second = Some(done);
            }
        }
        match (first.take(), second.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                (first, second) = (a, b);
                Poll::Pending
            }
        }
    })
    .await
}

/// [`flight2`] of three.
async fn flight3<A: Future, B: Future, C: Future>(
    a: A,
    b: B,
    c: C,
) -> (A::Output, B::Output, C::Output) {
    let ((a, b), c) = flight2(flight2(a, b), c).await;
    (a, b, c)
}

/// One attempt at `op`'s transaction, in two flights: `BEGIN` (with its
/// `SET LOCAL` timeouts), the Run's row lock (which returns its epoch and
/// its finish), its pause read and its root Run's tombstone read together;
/// then the write and `COMMIT` together (or `COMMIT` alone when there is
/// nothing to write, `ROLLBACK` after a refusal). A retirement's first
/// flight locks the root Run's row and then every Run of it (see
/// [`RootRead`]).
///
/// The server runs a flight's statements in order, each to its end before
/// the next, so the pause and the tombstone are read by statements of
/// their own after the lock is held, with a snapshot taken then (`READ
/// COMMITTED`): nothing written by another transaction of the Run can come
/// between what this one reads and what it writes, as every writer takes
/// the same lock first (a retirement too, for every Run of its root). If a
/// statement fails, the server refuses the rest of its transaction, and a
/// `COMMIT` sent with a failed write rolls back.
async fn transaction<P>(conn: &Conn<'_>, op: &Op<'_, P>) -> Result<Answer<P>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    if let Some(answer) = write_if_as_assumed(conn, op).await? {
        return Ok(answer);
    }
    let client: &Client = conn.client;
    let begin = match op {
        Op::Facts { .. } => &conn.sql.begin_read,
        _ => &conn.sql.begin_write,
    };
    if let Op::Sweep { roots, before } = *op {
        return sweep::batch::<P>(conn, roots, before).await;
    }
    if let Op::Retire { root_run_id } = *op {
        let read = RootRead::prepare(conn).await?;
        let (begun, rows) =
            flight2(client.batch_execute(begin), read.read(client, root_run_id)).await;
        let decided = begun
            .map_err(Failure::from)
            .and(rows)
            .and_then(|rows| retirement::<P>(root_run_id, rows, None));
        let step = match decided {
            Ok(step) => step,
            Err(failure) => return Err(abort(client, failure).await),
        };
        if step.removes() {
            let retire = match conn.statement(Which::RetireRoot).await {
                Ok(retire) => retire,
                Err(failure) => return Err(abort(client, failure).await),
            };
            let params: [Param<'_>; 1] = [&root_run_id];
            if commit(client, Some(retire.execute(client, &params))).await? != 1 {
                return Err(
                    corrupt(root_run_id, "the root Run's row changed under its lock").into(),
                );
            }
        } else {
            commit(client, None::<std::future::Ready<_>>).await?;
        }
        return Ok(step.answer());
    }
    let (root_run_id, run_id) = op.run();
    let read = RunRead::prepare(conn, matches!(op, Op::Facts { .. })).await?;
    let (begun, facts) = flight2(
        client.batch_execute(begin),
        read.read(client, root_run_id, run_id),
    )
    .await;
    let decided = begun
        .map_err(Failure::from)
        .and(facts)
        .and_then(|(locked, facts)| decide(op, facts, locked));
    let (answer, write) = match decided {
        Ok(decided) => decided,
        Err(failure) => return Err(abort(client, failure).await),
    };
    let Some(write) = write else {
        commit(client, None::<std::future::Ready<_>>).await?;
        return Ok(answer);
    };
    let statement = match conn.statement(write.which()).await {
        Ok(statement) => statement,
        Err(failure) => return Err(abort(client, failure).await),
    };
    let params = write.params(op);
    let count = commit(client, Some(statement.execute(client, &params))).await?;
    write.check(count, run_id)?;
    Ok(answer)
}

/// The reads of one Run, prepared: its row (locked, for a write), its
/// pause, its root Run's tombstone.
struct RunRead<'a> {
    run: Stmt<'a>,
    pause: Stmt<'a>,
    root: Stmt<'a>,
}

impl<'a> RunRead<'a> {
    /// The statements; `read_only`: the Run's row unlocked (a read of the
    /// facts, in its `REPEATABLE READ` snapshot).
    async fn prepare(conn: &Conn<'a>, read_only: bool) -> Result<Self, Failure> {
        let run = if read_only {
            Which::ReadEpoch
        } else {
            Which::LockRun
        };
        Ok(Self {
            run: conn.statement(run).await?,
            pause: conn.statement(Which::ReadPause).await?,
            root: conn.statement(Which::ReadRoot).await?,
        })
    }

    /// The three reads, in one flight, in this order (the Run's row lock
    /// first), all sent at the first poll; whether the Run has a row, and
    /// its facts.
    async fn read<P: DeserializeOwned>(
        &self,
        client: &Client,
        root_run_id: &str,
        run_id: &str,
    ) -> Result<(bool, RunFacts<P>), Failure> {
        let key: [Param<'_>; 2] = [&root_run_id, &run_id];
        let root: [Param<'_>; 1] = [&root_run_id];
        let (run_row, pause_row, root_row) = flight3(
            self.run.query_opt(client, &key),
            self.pause.query_opt(client, &key),
            self.root.query_opt(client, &root),
        )
        .await;
        let (run_row, pause_row, root_row) = (run_row?, pause_row?, root_row?);
        let mut facts = RunFacts::empty(root_run_id, run_id);
        if let Some(row) = &run_row {
            facts.epoch = epoch_of(row, 0, run_id)?;
            facts.finished = decode_finish(row, 1, run_id)?;
        }
        facts
            .pauses
            .extend(decode_pause(pause_row.as_ref(), 0, root_run_id, run_id)?);
        if let Some(row) = &root_row {
            facts.retired = column(row, 0, run_id)?;
        }
        Ok((run_row.is_some(), facts))
    }
}

/// What a retirement reads, prepared: the root Run's row (locked, made if
/// missing), then every Run of it (locked) with its finish, then their
/// pauses.
struct RootRead<'a> {
    root: Stmt<'a>,
    runs: Stmt<'a>,
    pauses: Stmt<'a>,
}

/// What a retirement read: whether the root Run is retired, its Runs' rows
/// and their pauses' rows.
struct RootRows {
    retired: bool,
    runs: Vec<Row>,
    pauses: Vec<Row>,
}

impl<'a> RootRead<'a> {
    async fn prepare(conn: &Conn<'a>) -> Result<Self, Failure> {
        Ok(Self {
            root: conn.statement(Which::LockRoot).await?,
            runs: conn.statement(Which::LockRuns).await?,
            pauses: conn.statement(Which::ReadPauses).await?,
        })
    }

    /// The three reads, in one flight, in this order: once the root Run's
    /// row is locked no new Run of it is inserted, and once its Runs' rows
    /// are locked no pause or finish of them is written, so the pauses read
    /// last are all there are.
    async fn read(&self, client: &Client, root_run_id: &str) -> Result<RootRows, Failure> {
        let root: [Param<'_>; 1] = [&root_run_id];
        let (root_row, runs, pauses) = flight3(
            self.root.query_opt(client, &root),
            self.runs.query(client, &root),
            self.pauses.query(client, &root),
        )
        .await;
        let retired = match root_row? {
            Some(row) => column(&row, 0, root_run_id)?,
            None => return Err(corrupt(root_run_id, "the root Run's row was not returned").into()),
        };
        Ok(RootRows {
            retired,
            runs: runs?,
            pauses: pauses?,
        })
    }
}

/// What a retirement decided for its root: by name ([`retire_step`]), or
/// in a sweep ([`sweep_step`]).
enum RootStep {
    Named(Retirement),
    Swept(SweepStep),
}

impl RootStep {
    /// Whether the root's rows go (and its tombstone is written).
    fn removes(&self) -> bool {
        matches!(
            self,
            RootStep::Named(Retirement::Retired { .. }) | RootStep::Swept(SweepStep::Retire { .. })
        )
    }

    fn answer<P>(self) -> Answer<P> {
        match self {
            RootStep::Named(retirement) => Answer::Retire(retirement),
            RootStep::Swept(step) => Answer::Swept(vec![step]),
        }
    }
}

/// The rule of `retire` ([`retire_step`]), or with `before` a sweep's
/// ([`sweep_step`], the latest end of the root's Runs read with them), on
/// what a retirement read: each Run's fate from its pause (first, as every
/// store reads it) or its finish.
fn retirement<P>(
    root_run_id: &str,
    rows: RootRows,
    before: Option<SystemTime>,
) -> Result<RootStep, Failure>
where
    P: PartialEq + DeserializeOwned,
{
    let mut latest: Option<SystemTime> = None;
    for (row, at) in rows
        .runs
        .iter()
        .map(|row| (row, 6))
        .chain(rows.pauses.iter().map(|row| (row, 8)))
    {
        let ended: Option<SystemTime> = column(row, at, root_run_id)?;
        latest = latest.max(ended);
    }
    let mut pauses: Vec<(String, Appended<P>)> = Vec::with_capacity(rows.pauses.len());
    for row in &rows.pauses {
        let run_id: String = column(row, 0, root_run_id)?;
        if let Some(pause) = decode_pause(Some(row), 1, root_run_id, &run_id)? {
            pauses.push((run_id, pause));
        }
    }
    let mut runs: Vec<(String, Option<Finished<P>>)> = Vec::with_capacity(rows.runs.len());
    for row in &rows.runs {
        let run_id: String = column(row, 0, root_run_id)?;
        epoch_of(row, 1, &run_id)?;
        let finished = decode_finish(row, 2, &run_id)?;
        runs.push((run_id, finished));
    }
    let fates = runs.iter().map(|(run_id, finished)| {
        let pause = pauses.iter().find(|(of, _)| of == run_id);
        let fate = match (pause, finished) {
            (Some((_, pause)), _) => Fate::HandedOff(pause),
            (None, Some(finished)) => Fate::Finished(finished),
            (None, None) => Fate::Open,
        };
        (run_id.as_str(), fate)
    });
    Ok(match before {
        None => RootStep::Named(retire_step(root_run_id, rows.retired, fates)?),
        Some(before) => RootStep::Swept(sweep_step(
            root_run_id,
            rows.retired,
            fates,
            latest,
            before,
        )?),
    })
}

/// The Run's fate as the write rules read it: retired, handed off (the
/// pause first, as every store reads it), finished, or open.
fn fate_of<P>(facts: &RunFacts<P>) -> Fate<'_, P> {
    if facts.retired {
        Fate::Retired
    } else if let Some(pause) = facts.pauses.first() {
        Fate::HandedOff(pause)
    } else if let Some(finished) = &facts.finished {
        Fate::Finished(finished)
    } else {
        Fate::Open
    }
}

/// What a claim, an append or a finish writes, once the rule decided.
#[derive(Clone, Copy)]
enum Write {
    /// A takeover: the Run's epoch, from `old` (under its row lock).
    UpdateEpoch { new: i64, old: i64 },
    /// A Run's first claim: its row, under a live root Run.
    InsertRun { new: i64 },
    /// The pause, at the Run's epoch `at`.
    InsertPause { at: i64 },
    /// The finish, at the Run's epoch `at` (under its row lock).
    Finish { at: i64 },
}

impl Write {
    fn which(self) -> Which {
        match self {
            Write::UpdateEpoch { .. } => Which::UpdateEpoch,
            Write::InsertRun { .. } => Which::InsertRun,
            Write::InsertPause { .. } => Which::InsertPause,
            Write::Finish { .. } => Which::FinishRun,
        }
    }

    /// The statement's parameters, from the operation's input.
    fn params<'a, P>(&'a self, op: &'a Op<'a, P>) -> Vec<Param<'a>> {
        match (self, op) {
            (
                Write::UpdateEpoch { new, old },
                Op::Claim {
                    root_run_id,
                    run_id,
                },
            ) => {
                let params: [Param<'a>; 4] = [root_run_id, run_id, new, old];
                params.to_vec()
            }
            (
                Write::InsertRun { new },
                Op::Claim {
                    root_run_id,
                    run_id,
                },
            ) => {
                let params: [Param<'a>; 3] = [root_run_id, run_id, new];
                params.to_vec()
            }
            (
                Write::InsertPause { at },
                Op::Append {
                    root_run_id,
                    source,
                    pause,
                    json,
                    ..
                },
            ) => pause_params(root_run_id, source, pause, json, at).to_vec(),
            (
                Write::Finish { at },
                Op::Finish {
                    root_run_id,
                    source,
                    json,
                    ..
                },
            ) => finish_params(root_run_id, source, json, at).to_vec(),
            // Not reached: `decide` makes each write for its operation.
            _ => Vec::new(),
        }
    }

    /// What the write's count of affected rows means: a first claim that
    /// inserted nothing lost the race for the Run's row (or met a
    /// retirement), to run again; a write under the Run's row lock that
    /// wrote nothing means the store was altered under baton.
    fn check(self, count: u64, run_id: &str) -> Result<(), Failure> {
        match (self, count) {
            (_, 1) | (Write::InsertPause { .. }, _) => Ok(()),
            (Write::InsertRun { .. }, _) => Err(Failure::Raced),
            (Write::UpdateEpoch { .. } | Write::Finish { .. }, _) => {
                Err(corrupt(run_id, "the Run's row changed under its row lock").into())
            }
        }
    }
}

/// The rule on the facts read inside the transaction: the answer, and what
/// to write (`None`: nothing).
fn decide<P>(
    op: &Op<'_, P>,
    facts: RunFacts<P>,
    locked: bool,
) -> Result<(Answer<P>, Option<Write>), Failure>
where
    P: PartialEq + Clone,
{
    match *op {
        Op::Facts { .. } => Ok((Answer::Facts(facts), None)),
        Op::Retire { .. } | Op::Sweep { .. } => {
            Err(unavailable("a retirement has its own transaction").into())
        }
        Op::Claim { .. } => {
            let step = claim_step(&facts)?;
            let Some(epoch) = step.write else {
                return Ok((Answer::Claim(step.answer), None));
            };
            let new = stored(epoch)?;
            let write = if locked {
                Write::UpdateEpoch {
                    new,
                    old: stored(facts.epoch)?,
                }
            } else {
                Write::InsertRun { new }
            };
            Ok((Answer::Claim(step.answer), Some(write)))
        }
        Op::Append {
            root_run_id,
            source,
            epoch,
            pause,
            ..
        } => {
            let step = append_step(
                root_run_id,
                facts.epoch,
                fate_of(&facts),
                epoch,
                (source, pause),
            )?;
            let write = (step == AppendStep::Write)
                .then(|| stored(epoch).map(|at| Write::InsertPause { at }))
                .transpose()?;
            Ok((Answer::Receipt(step.receipt()), write))
        }
        Op::Finish {
            root_run_id,
            source,
            epoch,
            outcome,
            ..
        } => {
            let step = finish_step(
                root_run_id,
                facts.epoch,
                fate_of(&facts),
                epoch,
                (source, outcome),
            )?;
            let write = (step == AppendStep::Write)
                .then(|| stored(epoch).map(|at| Write::Finish { at }))
                .transpose()?;
            Ok((Answer::Receipt(step.receipt()), write))
        }
    }
}

/// The seven parameters of a finish (`FinishRun`): the Run's key, the
/// source's ids, the outcome's JSON text and the epoch it is written at.
fn finish_params<'a>(
    root_run_id: &'a &'a str,
    source: &'a Invocation,
    json: &'a String,
    at: &'a i64,
) -> [Param<'a>; 7] {
    [
        root_run_id,
        &source.run_id,
        &source.session_id,
        &source.turn_id,
        &source.invocation_id,
        json,
        at,
    ]
}

/// The ten parameters of a pause's row, in `baton_handoff_pause`'s column
/// order, as both of its inserts (`InsertPause` and `AppendIfCurrent`)
/// bind them: the Run's key, the source's and the intent's ids, the pause's
/// JSON text and the epoch it is appended under.
fn pause_params<'a, P>(
    root_run_id: &'a &'a str,
    source: &'a Invocation,
    pause: &'a HandoffPause<P>,
    json: &'a String,
    at: &'a i64,
) -> [Param<'a>; 10] {
    let intent = &pause.intent;
    [
        root_run_id,
        &source.run_id,
        &source.session_id,
        &source.turn_id,
        &source.invocation_id,
        &intent.handoff_id,
        &intent.successor_run_id,
        &intent.successor_invocation_id,
        json,
        at,
    ]
}

/// The one-statement form of a claim or an append, tried first: the pure
/// rule is asked what it does for the facts an operation usually finds —
/// a Run's first claim finds no row (no epoch, no pause: a pause needs the
/// Run's row), an append finds its own epoch current and no pause — and
/// one statement writes what the rule answered *only if* the Run's facts
/// are those, deciding by its count of affected rows: the claim's
/// `INSERT … ON CONFLICT DO NOTHING`, the append's insert from the Run's
/// row locked at the append's epoch (`FOR UPDATE`: a claim that would
/// move the epoch waits for it, or it for the claim, which it then sees),
/// refused by the pause's primary key if a pause is there (a unique
/// violation: nothing written). The statement is its own
/// transaction (autocommit), so the write is durable in one round trip,
/// like the bare store's own insert. `None` when the facts are not those
/// (no row affected, or the pause's key refused it: nothing written): the
/// operation then runs its
/// transaction, which reads the facts under the lock and asks the rule
/// again. `Facts` and any claim or append for which the rule does not
/// write on those facts have no such form.
///
/// A failure of the statement is read as a commit's: a serialization
/// failure or a deadlock committed nothing (run again); a connection lost
/// while it was in flight may have committed (unknown).
async fn write_if_as_assumed<P>(
    conn: &Conn<'_>,
    op: &Op<'_, P>,
) -> Result<Option<Answer<P>>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let client: &Client = conn.client;
    let (written, answer) = match *op {
        Op::Facts { .. } | Op::Finish { .. } | Op::Retire { .. } | Op::Sweep { .. } => {
            return Ok(None);
        }
        Op::Claim {
            root_run_id,
            run_id,
        } => {
            let step = claim_step(&RunFacts::<P>::empty(root_run_id, run_id))?;
            let Some(epoch) = step.write else {
                return Ok(None);
            };
            let Ok(new) = stored(epoch) else {
                return Ok(None);
            };
            let insert = conn.statement(Which::InsertRun).await?;
            let params: [Param<'_>; 3] = [&root_run_id, &run_id, &new];
            let inserted = insert.execute(client, &params).await;
            (inserted, Answer::Claim(step.answer))
        }
        Op::Append {
            root_run_id,
            source,
            epoch,
            pause,
            ref json,
        } => {
            // The rule on the facts the statement requires: the append's
            // epoch is the Run's, and the Run is open (no pause, no finish,
            // its root Run not retired: the Run has its row).
            let step = match append_step(root_run_id, epoch, Fate::Open, epoch, (source, pause)) {
                Ok(step) => step,
                Err(_) => return Ok(None),
            };
            if step != AppendStep::Write {
                return Ok(None);
            }
            let Ok(at) = stored(epoch) else {
                return Ok(None); // no such epoch is stored: the rule refuses it
            };
            let insert = conn.statement(Which::AppendIfCurrent).await?;
            let params = pause_params(&root_run_id, source, pause, json, &at);
            let inserted = insert.execute(client, &params).await;
            (inserted, Answer::Receipt(step.receipt()))
        }
    };
    match written {
        Ok(1) => Ok(Some(answer)),
        Ok(0) => Ok(None),
        Ok(_) => Err(corrupt(op.run().1, "one Run's write affected several rows").into()),
        // The append found a pause: its statement, its own transaction,
        // committed nothing.
        Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => Ok(None),
        Err(error) => Err(match Failure::from(error) {
            retry @ Failure::Server { retry: true, .. } => retry,
            // The server refused the statement: it committed nothing.
            refused @ Failure::Server { .. } => refused,
            Failure::Lost(error) | Failure::Unknown(error) => Failure::Unknown(error),
            other @ (Failure::Answer(_) | Failure::Raced) => other,
        }),
    }
}

/// Ends a transaction that will not commit (a refusal, a failed
/// statement): `ROLLBACK`, unless the connection is gone. The failure to
/// answer.
async fn abort(client: &Client, failure: Failure) -> Failure {
    if matches!(failure, Failure::Lost(_)) {
        return failure;
    }
    match client.batch_execute("ROLLBACK").await {
        Ok(()) => failure,
        Err(error) => Failure::from(error),
    }
}

/// Sends `write` (if any) and `COMMIT` in one flight; the write's count of
/// affected rows (0 without a write).
async fn commit<W>(client: &Client, write: Option<W>) -> Result<u64, Failure>
where
    W: Future<Output = Result<u64, tokio_postgres::Error>>,
{
    let (written, committed) = match write {
        Some(write) => flight2(write, client.batch_execute("COMMIT")).await,
        None => (Ok(0), client.batch_execute("COMMIT").await),
    };
    match (written, committed) {
        (Ok(count), Ok(())) => Ok(count),
        // The write failed on the server: its transaction was aborted, and
        // the COMMIT sent with it rolled back.
        (Err(error), Ok(())) if error.code().is_some() => Err(error.into()),
        (Ok(_), Err(error)) | (Err(_), Err(error)) | (Err(error), Ok(())) => {
            Err(match Failure::from(error) {
                // A serialization failure or a deadlock at the commit:
                // nothing committed, run again.
                retry @ Failure::Server { retry: true, .. } => retry,
                // Anything else once the commit was sent (a lost
                // connection, the server ending the session): it may have
                // committed.
                Failure::Server { error, .. } | Failure::Lost(error) | Failure::Unknown(error) => {
                    Failure::Unknown(error)
                }
                other @ (Failure::Answer(_) | Failure::Raced) => other,
            })
        }
    }
}

/// The pause row read for a Run (its seven columns from `at` on), decoded
/// and checked against its columns.
fn decode_pause<P: DeserializeOwned>(
    row: Option<&Row>,
    at: usize,
    root_run_id: &str,
    run_id: &str,
) -> Result<Option<Appended<P>>, Failure> {
    let Some(row) = row else {
        return Ok(None);
    };
    let source = Invocation {
        session_id: column(row, at, run_id)?,
        turn_id: column(row, at + 1, run_id)?,
        run_id: run_id.to_owned(),
        invocation_id: column(row, at + 2, run_id)?,
    };
    let columns = [
        column(row, at + 3, run_id)?,
        column(row, at + 4, run_id)?,
        column(row, at + 5, run_id)?,
    ];
    let json: String = column(row, at + 6, run_id)?;
    Ok(Some(checked_row(root_run_id, source, columns, &json)?))
}

/// The finish kept on a Run's row (its four columns from `at` on: the
/// source's ids and the outcome's JSON text, all set or none), decoded.
fn decode_finish<P: DeserializeOwned>(
    row: &Row,
    at: usize,
    run_id: &str,
) -> Result<Option<Finished<P>>, Failure> {
    let Some(json) = column::<Option<String>>(row, at + 3, run_id)? else {
        return Ok(None);
    };
    let id = |index: usize| -> Result<String, Failure> {
        column::<Option<String>>(row, index, run_id)?
            .ok_or_else(|| corrupt(run_id, "the Run's finish is not whole").into())
    };
    let source = Invocation {
        session_id: id(at)?,
        turn_id: id(at + 1)?,
        run_id: run_id.to_owned(),
        invocation_id: id(at + 2)?,
    };
    let outcome = decoded_outcome(run_id, &json)?;
    Ok(Some(Finished { source, outcome }))
}

fn unexpected<T>() -> Result<T, LogError> {
    Err(unavailable(
        "the log answered another operation's kind of answer",
    ))
}

/// Each operation is one transaction on a connection of the log's pool (see
/// the type's docs), within its timeout.
impl<P> AsyncHandoffLog<P> for PostgresLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    async fn claim_async(&self, root_run_id: &str, run_id: &str) -> Result<Claim<P>, LogError> {
        check_run(root_run_id, run_id)?;
        match self
            .execute(Op::Claim {
                root_run_id,
                run_id,
            })
            .await?
        {
            Answer::Claim(claim) => Ok(claim),
            _ => unexpected(),
        }
    }

    async fn append_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        pause: &HandoffPause<P>,
    ) -> Result<Receipt, LogError> {
        check_append(root_run_id, source, pause)?;
        let json = encode_checked(pause)?;
        match self
            .execute(Op::Append {
                root_run_id,
                source,
                epoch,
                pause,
                json,
            })
            .await?
        {
            Answer::Receipt(receipt) => Ok(receipt),
            _ => unexpected(),
        }
    }

    /// One transaction, in two flights, as a takeover's claim: the Run's
    /// row lock (its epoch and its finish), its pause and its root Run's
    /// tombstone read, then [`finish_step`]'s write (the finish, on the
    /// Run's row) and `COMMIT`.
    async fn finish_async(
        &self,
        root_run_id: &str,
        source: &Invocation,
        epoch: Epoch,
        outcome: &P,
    ) -> Result<Receipt, LogError> {
        check_finish(root_run_id, source)?;
        let json = encode_checked(outcome)?;
        match self
            .execute(Op::Finish {
                root_run_id,
                source,
                epoch,
                outcome,
                json,
            })
            .await?
        {
            Answer::Receipt(receipt) => Ok(receipt),
            _ => unexpected(),
        }
    }

    /// One transaction, in two flights: the root Run's row locked
    /// exclusively (made if missing), every Run of it locked, and their
    /// pauses read; then, if [`retire_step`] retires it, one statement that
    /// deletes the Runs' rows and their pauses and marks the root's row
    /// retired (its tombstone), and `COMMIT`. Needs `DELETE` on the tables.
    async fn retire_async(&self, root_run_id: &str) -> Result<Retirement, LogError> {
        check_root(root_run_id)?;
        match self.execute(Op::Retire { root_run_id }).await? {
            Answer::Retire(retirement) => Ok(retirement),
            _ => unexpected(),
        }
    }

    async fn facts_async(&self, root_run_id: &str, run_id: &str) -> Result<RunFacts<P>, LogError> {
        check_run(root_run_id, run_id)?;
        match self
            .execute(Op::Facts {
                root_run_id,
                run_id,
            })
            .await?
        {
            Answer::Facts(facts) => Ok(facts),
            _ => unexpected(),
        }
    }
}
