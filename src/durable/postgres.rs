//! [`PostgresLog`]: the durable handoff log on a PostgreSQL server, for
//! runtimes whose workers and owners run on several hosts (feature
//! `postgres`, on tokio-postgres).
#![cfg_attr(docsrs, doc(cfg(feature = "postgres")))]

use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Row, Statement};

use super::async_log::AsyncHandoffLog;
use super::fence::{AppendStep, Claim, Epoch, append_step, claim_step};
use super::log::{LogError, Receipt, check_append, check_run};
use super::reconcile::{Appended, RunFacts};
use super::row::{checked_row, corrupt};
use crate::facts::{HandoffPause, Invocation};

/// How to reach the server: tokio-postgres's connection settings, parsed
/// from a `key=value` string or a `postgresql://` URL with
/// [`str::parse`] (see tokio-postgres's `Config` for every key). TLS is
/// not offered: reach the server over a network you trust, or through a
/// local TLS tunnel.
pub use tokio_postgres::Config as PostgresConfig;

/// The schema version this baton writes and reads, kept in the one row of
/// the table `baton_schema` (a database without that table has no schema
/// yet). A database of an older version is upgraded in place when a log
/// connects, one step after another in one transaction.
pub const POSTGRES_SCHEMA_VERSION: i64 = 1;

/// The steps from one schema version to the next: step `i` brings version
/// `i` to version `i + 1`. A later version appends a step; none is ever
/// edited once released.
const MIGRATIONS: [&str; POSTGRES_SCHEMA_VERSION as usize] = [SCHEMA_V1];

/// Version 1. `baton_run` holds each claimed Run's current epoch (a Run
/// never claimed has no row: epoch 0); `baton_handoff_pause` at most one
/// pause per Run (its primary key is the Run), of a claimed Run only (the
/// foreign key), with the epoch it was appended under. The pause is kept
/// whole as `json` (its text exactly as written, not `jsonb`'s
/// normalised form); the key columns are broken out for queries and
/// checked against it on every read.
const SCHEMA_V1: &str = "
CREATE TABLE baton_run (
    root_run_id text   NOT NULL,
    run_id      text   NOT NULL,
    epoch       bigint NOT NULL CHECK (epoch > 0),
    PRIMARY KEY (root_run_id, run_id)
);
CREATE TABLE baton_handoff_pause (
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
    FOREIGN KEY (root_run_id, run_id) REFERENCES baton_run (root_run_id, run_id)
);
";

/// The key of the transaction-scoped advisory lock that orders the
/// schema's creation and upgrades among logs connecting at once (`baton`
/// in ASCII).
const SCHEMA_LOCK: i64 = 0x0062_6174_6f6e;

/// How many times one operation runs its transaction when the server
/// answers a serialization failure (SQLSTATE 40001), a deadlock (40P01),
/// or the connection is lost before the commit was sent.
const ATTEMPTS: u32 = 8;

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
/// transaction runs again, now finding the row to lock. `facts` reads the
/// epoch and the pause from one `REPEATABLE READ` snapshot.
///
/// **One round trip, or three.** A Run's first claim and an append at the
/// Run's current epoch with no pause yet — what a healthy fleet does —
/// are one statement each, their own transaction: the pure rule is asked,
/// in Rust, what it writes for exactly those facts, and the statement
/// writes it only if the Run's facts are those (the claim's insert `ON
/// CONFLICT DO NOTHING`; the append's insert from the Run's row locked at
/// its epoch, `ON CONFLICT DO NOTHING` on the pause), decided by its count
/// of affected rows. When the facts are other (a takeover's claim, a
/// fenced or repeated append) nothing was written, and the operation runs
/// its transaction, in two flights (pipelined: tokio-postgres sends
/// requests in the order their futures are first polled, and the server
/// runs them in that order): `BEGIN`, the row lock and the pause read
/// together; then the write and `COMMIT` together (`COMMIT` alone when
/// there is nothing to write, `ROLLBACK` after a refusal). The pure rule
/// decides in between, in Rust, as in every store.
///
/// **Retries and refusals.** A serialization failure (SQLSTATE 40001) or a
/// deadlock (40P01), and a connection lost before the commit was sent
/// (nothing can have committed), run the whole transaction again, up to a
/// few times. A refusal ([`LogError::Fenced`], [`LogError::AlreadyHandedOff`],
/// …) is the log's answer and is never retried. A connection lost once
/// the commit was sent (for the one-statement forms: once the statement
/// was sent), or an operation that outlives its timeout, is
/// [`LogError::Storage`]: the outcome is unknown, and reading the facts
/// (or appending the identical row again, idempotent) resolves it.
///
/// **One connection per log.** A log holds one connection and runs its
/// operations on it one at a time, in the order they were first polled
/// (a fair async mutex). Each operation is one short transaction, and the
/// processes of a fleet — each worker, each owner — open a log of their
/// own, so the server sees one connection per process, which a pool would
/// not improve; a process that wants several operations in flight at once
/// opens several logs. The connection is opened by
/// [`connect`](Self::connect), and opened again by the next operation once
/// it is lost (a server restart, a partition), so a log outlives the
/// faults of its network and its server. On each connection baton sets
/// `statement_timeout`, `lock_timeout` and
/// `idle_in_transaction_session_timeout` to the operation timeout, so a
/// transaction whose client vanished (a paused or cut-off host) does not
/// hold a Run's row lock for longer than that.
///
/// **Schema.** Version [`POSTGRES_SCHEMA_VERSION`], in the connection's
/// current schema (`search_path`): tables `baton_schema`, `baton_run` and
/// `baton_handoff_pause`. [`connect`](Self::connect) creates it, or
/// upgrades an older version in place, in one transaction under an
/// advisory lock, so logs connecting at once neither race nor see a
/// half-made schema; a newer or foreign schema is
/// [`LogError::UnknownSchema`].
///
/// **Runtime.** tokio-postgres's sockets and timers are tokio's: the
/// futures of a `PostgresLog` must be polled within a tokio runtime (any
/// flavour), which also runs the task that drives the connection. Polled
/// outside one, an operation answers [`LogError::Storage`], never panics.
/// There is no blocking [`HandoffLog`](super::HandoffLog) form, which
/// would hide a runtime of its own; block on the async form
/// ([`AsyncHandoffLog`]) where blocking is wanted.
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
    config: PostgresConfig,
    timeout: Duration,
    /// Unwind safe as asserted: an operation interrupted mid-way (dropped,
    /// or unwound by a panic) leaves `dirty` set, and the next operation
    /// first ends what it left on the connection (`settle_dropped`).
    session: AssertUnwindSafe<tokio::sync::Mutex<Session>>,
    /// The payload type of the pauses the log holds (`fn() -> P`: the log
    /// owns no `P`, so it is `Send` and `Sync` whatever `P` is).
    payload: PhantomData<fn() -> P>,
}

/// The log's connection, if it has one that is usable.
struct Session {
    connected: Option<Connected>,
    /// An operation began on the connection and has not finished it (its
    /// future was dropped mid-way): the connection may be inside a
    /// transaction, or still running what it sent, so the next operation
    /// first settles it (`settle_dropped`).
    dirty: bool,
}

/// An open connection and its prepared statements.
struct Connected {
    client: Client,
    statements: Statements,
}

/// The statements of the operations, prepared once per connection.
struct Statements {
    lock_run: Statement,
    read_epoch: Statement,
    read_pause: Statement,
    insert_run: Statement,
    update_epoch: Statement,
    insert_pause: Statement,
    append_if_current: Statement,
}

impl<P> std::fmt::Debug for PostgresLog<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("PostgresLog")
            .field("hosts", &self.config.get_hosts())
            .field("ports", &self.config.get_ports())
            .field("user", &self.config.get_user())
            .field("dbname", &self.config.get_dbname())
            .field("timeout", &self.timeout)
            .finish()
    }
}

fn storage(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> LogError {
    LogError::Storage(error.into())
}

/// Why one attempt at an operation's transaction did not succeed.
enum Failure {
    /// The log's answer (a refusal, bad facts): returned as it is.
    Answer(LogError),
    /// The server answered an error; `retry` if it is a serialization
    /// failure or a deadlock, else it is [`LogError::Storage`]. The
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

/// A stored epoch as an [`Epoch`]: positive, as the schema's check says.
fn epoch_of(row: &Row, run_id: &str) -> Result<Epoch, Failure> {
    let value: i64 = column(row, 0, run_id)?;
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
    Facts {
        root_run_id: &'a str,
        run_id: &'a str,
    },
}

/// What an operation answered.
enum Answer<P> {
    Claim(Claim<P>),
    Append(Receipt),
    Facts(RunFacts<P>),
}

impl<P> PostgresLog<P> {
    /// Connects to the server `config` names, and creates the schema in
    /// its database (or upgrades an older one in place) in one
    /// transaction. Must be awaited within a tokio runtime, which drives
    /// the connection from then on (see the type's docs).
    ///
    /// # Errors
    ///
    /// [`LogError::UnknownSchema`] if the database records a newer schema
    /// version (or holds baton's tables without a version);
    /// [`LogError::Storage`] if the server cannot be reached, refuses the
    /// connection, or fails.
    pub async fn connect(config: PostgresConfig) -> Result<Self, LogError> {
        Self::connect_with_timeout(config, Self::DEFAULT_TIMEOUT).await
    }

    /// How long one operation may take, from its first statement (or its
    /// reconnection) to its commit's answer, unless the log was opened by
    /// [`connect_with_timeout`](Self::connect_with_timeout).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// [`connect`](Self::connect), with an operation timeout of `timeout`
    /// (at least 1 ms): an operation still running then answers
    /// [`LogError::Storage`] (outcome unknown), and its connection is
    /// closed. The server-side timeouts baton sets on each connection (see
    /// the type's docs) follow it: the time a vanished client's transaction
    /// may hold a Run's row lock.
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn connect_with_timeout(
        config: PostgresConfig,
        timeout: Duration,
    ) -> Result<Self, LogError> {
        let log = Self {
            config,
            timeout: timeout.max(Duration::from_millis(1)),
            session: AssertUnwindSafe(tokio::sync::Mutex::new(Session {
                connected: None,
                dirty: false,
            })),
            payload: PhantomData,
        };
        in_runtime()?;
        let client = within(log.timeout, log.open()).await?;
        within(log.timeout, migrate(&client)).await?;
        let statements = within(log.timeout, prepare(&client))
            .await?
            .map_err(storage)?;
        log.session.lock().await.connected = Some(Connected { client, statements });
        Ok(log)
    }

    /// The operation timeout (see
    /// [`connect_with_timeout`](Self::connect_with_timeout)).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Opens a connection, starts its driving task on the current tokio
    /// runtime, and sets the session's server-side timeouts.
    async fn open(&self) -> Result<Client, LogError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|error| storage(format!("a PostgresLog needs a tokio runtime: {error}")))?;
        let (client, connection) = self.config.connect(NoTls).await.map_err(storage)?;
        // The task ends when the connection does (closed by either side, or
        // the client dropped); its error is the client's next error.
        drop(runtime.spawn(connection));
        let millis = u32::try_from(self.timeout.as_millis())
            .unwrap_or(u32::MAX)
            .clamp(1, i32::MAX as u32);
        client
            .batch_execute(&format!(
                "SET statement_timeout = {millis}; SET lock_timeout = {millis}; \
                 SET idle_in_transaction_session_timeout = {millis}"
            ))
            .await
            .map_err(storage)?;
        Ok(client)
    }
}

/// tokio's timers and sockets panic outside a tokio runtime: answer
/// [`LogError::Storage`] instead.
fn in_runtime() -> Result<(), LogError> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(|error| storage(format!("a PostgresLog needs a tokio runtime: {error}")))
}

/// Awaits `future` for at most `timeout`; past it, [`LogError::Storage`].
async fn within<T>(
    timeout: Duration,
    future: impl Future<Output = Result<T, LogError>>,
) -> Result<T, LogError> {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or_else(|_| {
            Err(storage(format!(
                "the operation did not finish within {timeout:?}; its outcome is unknown"
            )))
        })
}

/// Brings the database to [`POSTGRES_SCHEMA_VERSION`] in one transaction,
/// under the schema's advisory lock: creates the schema in a database
/// without one, or runs the upgrade steps from the version it has.
async fn migrate(client: &Client) -> Result<(), LogError> {
    client.batch_execute("BEGIN").await.map_err(storage)?;
    let migrated = migrate_in(client).await;
    let end = if migrated.is_ok() {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    let ended = client.batch_execute(end).await.map_err(storage);
    migrated.and(ended)
}

async fn migrate_in(client: &Client) -> Result<(), LogError> {
    client
        .execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .await
        .map_err(storage)?;
    let found = client
        .query_one(
            "SELECT to_regclass('baton_schema') IS NOT NULL, \
                    to_regclass('baton_run') IS NOT NULL \
                    OR to_regclass('baton_handoff_pause') IS NOT NULL",
            &[],
        )
        .await
        .map_err(storage)?;
    let (versioned, tables): (bool, bool) = (
        found.try_get(0).map_err(storage)?,
        found.try_get(1).map_err(storage)?,
    );
    let version: i64 = if versioned {
        client
            .query_one("SELECT version FROM baton_schema", &[])
            .await
            .map_err(storage)?
            .try_get(0)
            .map_err(storage)?
    } else if tables {
        return Err(LogError::UnknownSchema {
            found: 0,
            expected: POSTGRES_SCHEMA_VERSION,
        });
    } else {
        client
            .batch_execute(
                "CREATE TABLE baton_schema (\
                     one     boolean PRIMARY KEY DEFAULT true CHECK (one), \
                     version bigint  NOT NULL CHECK (version >= 0)\
                 ); \
                 INSERT INTO baton_schema (version) VALUES (0);",
            )
            .await
            .map_err(storage)?;
        0
    };
    let Some(steps) = usize::try_from(version)
        .ok()
        .and_then(|from| MIGRATIONS.get(from..))
    else {
        return Err(LogError::UnknownSchema {
            found: version,
            expected: POSTGRES_SCHEMA_VERSION,
        });
    };
    if steps.is_empty() {
        return Ok(());
    }
    for step in steps {
        client.batch_execute(step).await.map_err(storage)?;
    }
    client
        .execute(
            "UPDATE baton_schema SET version = $1",
            &[&POSTGRES_SCHEMA_VERSION],
        )
        .await
        .map_err(storage)?;
    Ok(())
}

async fn prepare(client: &Client) -> Result<Result<Statements, tokio_postgres::Error>, LogError> {
    let key = "WHERE root_run_id = $1 AND run_id = $2";
    let statements = async {
        Ok(Statements {
            lock_run: client
                .prepare(&format!("SELECT epoch FROM baton_run {key} FOR UPDATE"))
                .await?,
            read_epoch: client
                .prepare(&format!("SELECT epoch FROM baton_run {key}"))
                .await?,
            read_pause: client
                .prepare(&format!(
                    "SELECT session_id, turn_id, invocation_id, handoff_id, \
                            successor_run_id, successor_invocation_id, pause::text \
                     FROM baton_handoff_pause {key}"
                ))
                .await?,
            insert_run: client
                .prepare(
                    "INSERT INTO baton_run (root_run_id, run_id, epoch) VALUES ($1, $2, $3) \
                     ON CONFLICT (root_run_id, run_id) DO NOTHING",
                )
                .await?,
            update_epoch: client
                .prepare(&format!(
                    "UPDATE baton_run SET epoch = $3 {key} AND epoch = $4"
                ))
                .await?,
            insert_pause: client
                .prepare(
                    "INSERT INTO baton_handoff_pause (root_run_id, run_id, session_id, \
                         turn_id, invocation_id, handoff_id, successor_run_id, \
                         successor_invocation_id, pause, epoch) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CAST($9::text AS json), $10)",
                )
                .await?,
            // The append's one-statement form: the row lock of the Run at
            // the append's epoch, and the insert only if it holds and no
            // pause is there yet (the facts for which the rule writes).
            append_if_current: client
                .prepare(&format!(
                    "WITH run AS (SELECT epoch FROM baton_run {key} AND epoch = $10 FOR UPDATE) \
                     INSERT INTO baton_handoff_pause (root_run_id, run_id, session_id, \
                         turn_id, invocation_id, handoff_id, successor_run_id, \
                         successor_invocation_id, pause, epoch) \
                     SELECT $1, $2, $3, $4, $5, $6, $7, $8, CAST($9::text AS json), $10 \
                     FROM run \
                     ON CONFLICT (root_run_id, run_id) DO NOTHING"
                ))
                .await?,
        })
    };
    Ok(statements.await)
}

/// The operations: each one transaction on the log's connection.
impl<P> PostgresLog<P>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    /// Runs `op` as one transaction, again after a serialization failure,
    /// a deadlock or a connection lost before the commit; all of it within
    /// the log's timeout.
    async fn execute(&self, op: Op<'_, P>) -> Result<Answer<P>, LogError> {
        in_runtime()?;
        let mut session = self.session.lock().await;
        let settle = std::mem::replace(&mut session.dirty, true);
        let answer = tokio::time::timeout(self.timeout, async {
            if settle {
                settle_dropped(&mut session).await;
            }
            self.attempts(&mut session, &op).await
        })
        .await;
        session.dirty = false;
        answer.unwrap_or_else(|_| {
            // Timed out mid-way: the connection may be inside a
            // transaction, or cut off. Never reuse it.
            session.connected = None;
            Err(storage(format!(
                "the operation did not finish within {:?}; its outcome is unknown",
                self.timeout
            )))
        })
    }

    async fn attempts(&self, session: &mut Session, op: &Op<'_, P>) -> Result<Answer<P>, LogError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= ATTEMPTS;
            if session
                .connected
                .as_ref()
                .is_none_or(|c| c.client.is_closed())
            {
                session.connected = None;
                let client = self.open().await?;
                let statements = prepare(&client).await?.map_err(storage)?;
                session.connected = Some(Connected { client, statements });
            }
            let Some(connected) = session.connected.as_ref() else {
                continue; // just connected above
            };
            match transaction(connected, op).await {
                Ok(answer) => return Ok(answer),
                Err(Failure::Answer(error)) => return Err(error),
                Err(Failure::Unknown(error)) => {
                    session.connected = None;
                    return Err(storage(error));
                }
                Err(Failure::Server { error, retry }) => {
                    if !retry || last {
                        return Err(storage(error));
                    }
                }
                Err(Failure::Raced) => {
                    if last {
                        return Err(storage("a Run's first claims kept racing"));
                    }
                }
                Err(Failure::Lost(error)) => {
                    session.connected = None;
                    if last {
                        return Err(storage(error));
                    }
                }
            }
            // A little more each time: contention clears, a server restarts.
            tokio::time::sleep(Duration::from_millis(u64::from(attempt) * 5)).await;
        }
    }
}

/// Ends what an operation dropped mid-way left on the connection, before
/// the next one runs: its transaction may still be open, and what it sent
/// may still be running (a one-statement write, a `COMMIT`). A `ROLLBACK`
/// on the same connection runs after all of that (the server runs one
/// connection's requests in order) and ends the transaction if one is
/// open (else it is a no-op), so the next operation — a read of the facts
/// resolving the dropped one — sees whatever it committed. A connection
/// that cannot run it is closed (the server rolls back what did not
/// commit), as is one already closed.
async fn settle_dropped(session: &mut Session) {
    if let Some(connected) = &session.connected {
        if connected.client.batch_execute("ROLLBACK").await.is_err() {
            session.connected = None;
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

/// One attempt at `op`'s transaction, in two flights: `BEGIN`, the Run's
/// row lock and its pause read together; then the write and `COMMIT`
/// together (or `COMMIT` alone when there is nothing to write, `ROLLBACK`
/// after a refusal).
///
/// The server runs a flight's statements in order, each to its end before
/// the next, so the pause is read by a statement of its own after the lock
/// is held, with a snapshot taken then (`READ COMMITTED`): nothing written
/// by another transaction of the Run can come between what this one reads
/// and what it writes, as every writer takes the same lock first. If a
/// statement fails, the server refuses the rest of its transaction, and a
/// `COMMIT` sent with a failed write rolls back.
async fn transaction<P>(connected: &Connected, op: &Op<'_, P>) -> Result<Answer<P>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    if let Some(answer) = write_if_as_assumed(connected, op).await? {
        return Ok(answer);
    }
    let (client, statements) = (&connected.client, &connected.statements);
    let (root_run_id, run_id) = match *op {
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
        } => (root_run_id, source.run_id.as_str()),
    };
    let key: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&root_run_id, &run_id];
    let (begin, read_epoch) = match op {
        Op::Facts { .. } => (
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            &statements.read_epoch,
        ),
        Op::Claim { .. } | Op::Append { .. } => {
            ("BEGIN ISOLATION LEVEL READ COMMITTED", &statements.lock_run)
        }
    };
    let (begun, epoch_row, pause_row) = flight3(
        client.batch_execute(begin),
        client.query_opt(read_epoch, &key),
        client.query_opt(&statements.read_pause, &key),
    )
    .await;
    let read = begun
        .map_err(Failure::from)
        .and_then(|()| Ok((epoch_row?, pause_row?)))
        .and_then(|(epoch_row, pause_row)| {
            let mut facts = RunFacts::empty(root_run_id, run_id);
            if let Some(row) = &epoch_row {
                facts.epoch = epoch_of(row, run_id)?;
            }
            facts
                .pauses
                .extend(decode_pause(pause_row, root_run_id, run_id)?);
            Ok((epoch_row.is_some(), facts))
        });
    let (locked, facts) = match read {
        Ok(read) => read,
        Err(failure) => return Err(abort(client, failure).await),
    };
    match *op {
        Op::Facts { .. } => {
            commit(client, None::<std::future::Ready<_>>).await?;
            Ok(Answer::Facts(facts))
        }
        Op::Claim { .. } => {
            let step = match claim_step(&facts) {
                Ok(step) => step,
                Err(refusal) => return Err(abort(client, refusal.into()).await),
            };
            let Some(epoch) = step.write else {
                commit(client, None::<std::future::Ready<_>>).await?;
                return Ok(Answer::Claim(step.answer));
            };
            let new = match stored(epoch) {
                Ok(new) => new,
                Err(refusal) => return Err(abort(client, refusal.into()).await),
            };
            if locked {
                // Under the row lock the epoch cannot have moved: a count
                // other than 1 is a store altered under baton.
                let old = stored(facts.epoch)?;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                    [&root_run_id, &run_id, &new, &old];
                let updated = client.execute(&statements.update_epoch, &params);
                if commit(client, Some(updated)).await? != 1 {
                    return Err(LogError::Storage(
                        "the Run's epoch changed under its row lock".into(),
                    )
                    .into());
                }
            } else {
                // No row to lock: the insert decides. Another first claim
                // that inserted the row first (this one waited for it to
                // commit) leaves no row affected, and this transaction
                // committed nothing: run again.
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
                    [&root_run_id, &run_id, &new];
                let inserted = client.execute(&statements.insert_run, &params);
                if commit(client, Some(inserted)).await? != 1 {
                    return Err(Failure::Raced);
                }
            }
            Ok(Answer::Claim(step.answer))
        }
        Op::Append {
            source,
            epoch,
            pause,
            ref json,
            ..
        } => {
            let step = match append_step(
                root_run_id,
                facts.epoch,
                facts.pauses.first(),
                epoch,
                (source, pause),
            ) {
                Ok(step) => step,
                Err(refusal) => return Err(abort(client, refusal.into()).await),
            };
            if step == AppendStep::Write {
                let at = stored(epoch)?;
                let params = pause_params(&root_run_id, source, pause, json, &at);
                let inserted = client.execute(&statements.insert_pause, &params);
                commit(client, Some(inserted)).await?;
            } else {
                commit(client, None::<std::future::Ready<_>>).await?;
            }
            Ok(Answer::Append(step.receipt()))
        }
    }
}

/// The ten parameters of a pause's row, in `baton_handoff_pause`'s column
/// order, as both of its inserts (`insert_pause` and `append_if_current`)
/// bind them: the Run's key, the source's and the intent's ids, the pause's
/// JSON text and the epoch it is appended under.
fn pause_params<'a, P>(
    root_run_id: &'a &'a str,
    source: &'a Invocation,
    pause: &'a HandoffPause<P>,
    json: &'a String,
    at: &'a i64,
) -> [&'a (dyn tokio_postgres::types::ToSql + Sync); 10] {
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
/// `ON CONFLICT DO NOTHING` on the pause. The statement is its own
/// transaction (autocommit), so the write is durable in one round trip,
/// like the bare store's own insert. `None` when the facts are not those
/// (no row affected, nothing written): the operation then runs its
/// transaction, which reads the facts under the lock and asks the rule
/// again. `Facts` and any claim or append for which the rule does not
/// write on those facts have no such form.
///
/// A failure of the statement is read as a commit's: a serialization
/// failure or a deadlock committed nothing (run again); a connection lost
/// while it was in flight may have committed (unknown).
async fn write_if_as_assumed<P>(
    connected: &Connected,
    op: &Op<'_, P>,
) -> Result<Option<Answer<P>>, Failure>
where
    P: PartialEq + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let (client, statements) = (&connected.client, &connected.statements);
    let (written, answer) = match *op {
        Op::Facts { .. } => return Ok(None),
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
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
                [&root_run_id, &run_id, &new];
            let inserted = client.execute(&statements.insert_run, &params).await;
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
            // epoch is the Run's, and no pause is durable.
            let step = match append_step(root_run_id, epoch, None, epoch, (source, pause)) {
                Ok(step) => step,
                Err(_) => return Ok(None),
            };
            if step != AppendStep::Write {
                return Ok(None);
            }
            let Ok(at) = stored(epoch) else {
                return Ok(None); // no such epoch is stored: the rule refuses it
            };
            let params = pause_params(&root_run_id, source, pause, json, &at);
            let inserted = client.execute(&statements.append_if_current, &params).await;
            (inserted, Answer::Append(step.receipt()))
        }
    };
    match written {
        Ok(1) => Ok(Some(answer)),
        Ok(0) => Ok(None),
        Ok(_) => Err(LogError::Storage("one Run's write affected several rows".into()).into()),
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

/// The pause row read for a Run, decoded and checked against its columns.
fn decode_pause<P: DeserializeOwned>(
    row: Option<Row>,
    root_run_id: &str,
    run_id: &str,
) -> Result<Option<Appended<P>>, Failure> {
    let Some(row) = row else {
        return Ok(None);
    };
    let source = Invocation {
        session_id: column(&row, 0, run_id)?,
        turn_id: column(&row, 1, run_id)?,
        run_id: run_id.to_owned(),
        invocation_id: column(&row, 2, run_id)?,
    };
    let columns = [
        column(&row, 3, run_id)?,
        column(&row, 4, run_id)?,
        column(&row, 5, run_id)?,
    ];
    let json: String = column(&row, 6, run_id)?;
    Ok(Some(checked_row(root_run_id, source, columns, &json)?))
}

fn unexpected<T>() -> Result<T, LogError> {
    Err(storage(
        "the log answered another operation's kind of answer",
    ))
}

/// Each operation is one transaction on the log's one connection (see the
/// type's docs), within its timeout.
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
            Answer::Append(_) | Answer::Facts(_) => unexpected(),
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
        let json = serde_json::to_string(pause).map_err(LogError::Encode)?;
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
            Answer::Append(receipt) => Ok(receipt),
            Answer::Claim(_) | Answer::Facts(_) => unexpected(),
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
            Answer::Claim(_) | Answer::Append(_) => unexpected(),
        }
    }
}
