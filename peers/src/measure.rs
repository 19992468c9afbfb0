//! The server the systems share, and what one timed window measures.
//!
//! Every cell gets a fresh database on the one server. Around each timed
//! window the server's own counters are read: the next transaction id (each
//! write transaction takes one, and commits with one WAL flush) and the WAL
//! insert position. They are exact and server-wide, and only one system runs
//! at a time, so their difference over the window, divided by the units, is
//! what one unit costs. CPU comes from `/proc`: this process (the client, in
//! 10 ms clock ticks of all its threads) and every `postgres` process (the
//! server, in ns, from the scheduler's own count).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

use crate::statements::{self, Breakdown, WalDump};

/// The clock tick of `/proc/<pid>/stat` (`USER_HZ`): 100 on Linux, whatever
/// the kernel's own tick.
const TICKS_PER_SECOND: f64 = 100.0;

/// The one throwaway server (started by `scripts/peers`): its URL without
/// a database, and an admin connection to its `postgres` database.
pub struct Server {
    base: String,
    admin: Client,
    /// In the statements mode (`PEERS_STATEMENTS=1`): where `pg_waldump`
    /// and the WAL are, and each window's breakdown by database.
    statements: Option<WalDump>,
    breakdowns: Mutex<Vec<(String, Breakdown)>>,
}

impl Server {
    /// Connects to the server at `base` (`postgres://user@host:port`).
    pub async fn connect(base: &str) -> Server {
        let base = base.trim_end_matches('/').to_owned();
        let admin = connect(&format!("{base}/postgres")).await;
        let statements = (std::env::var("PEERS_STATEMENTS").as_deref() == Ok("1")).then(|| {
            let var = |name: &str| {
                std::env::var(name).unwrap_or_else(|_| panic!("{name}: scripts/peers sets it"))
            };
            WalDump {
                bin: var("PEERS_PG_BIN"),
                data: var("PEERS_PG_DATA"),
            }
        });
        if statements.is_some() {
            admin
                .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                .await
                .expect("CREATE EXTENSION pg_stat_statements");
        }
        Server {
            base,
            admin,
            statements,
            breakdowns: Mutex::new(Vec::new()),
        }
    }

    /// Whether this run is in the statements mode (`PEERS_STATEMENTS=1`).
    pub fn in_statements_mode(&self) -> bool {
        self.statements.is_some()
    }

    /// Each window's breakdown in the statements mode, by the database its
    /// statements ran in (empty otherwise).
    pub fn breakdowns(&self) -> Vec<(String, Breakdown)> {
        self.breakdowns.lock().expect("breakdowns").clone()
    }

    /// The server's version, as `SHOW server_version` says it.
    pub async fn version(&self) -> String {
        let row = self.admin.query_one("SHOW server_version", &[]).await;
        row.expect("server_version").get(0)
    }

    /// Creates the empty database `name` and answers its URL.
    pub async fn fresh_database(&self, name: &str) -> String {
        self.admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        self.url(name)
    }

    /// The URL of the database `name`.
    pub fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    /// The server's counters and both CPU readings, now. The next xid is read
    /// from the current snapshot's `xmax` (the same counter
    /// `pg_current_xact_id()` advances), so reading it takes no xid and
    /// writes no commit record itself.
    async fn counters(&self) -> Counters {
        let row = self
            .admin
            .query_one(
                "SELECT pg_snapshot_xmax(pg_current_snapshot())::text, \
                 pg_current_wal_lsn()::text",
                &[],
            )
            .await
            .expect("the server's counters");
        let xid: String = row.get(0);
        let lsn: String = row.get(1);
        // The `/proc` scan blocks for a few ms: off the runtime's workers,
        // which may be running a system's work (awa's, timed from before
        // this read).
        let (client_ticks, server_ns) =
            tokio::task::spawn_blocking(|| (client_ticks(), server_ns()))
                .await
                .expect("reading /proc");
        Counters {
            xid: xid.parse().expect("an xid"),
            wal: parse_lsn(&lsn),
            client_ticks,
            server_ns,
        }
    }

    /// Opens a timed window: the counters, then the clock (the work
    /// starts after both).
    pub async fn open(&self) -> Window {
        self.reset().await;
        let start = self.counters().await;
        Window {
            start,
            started: Instant::now(),
        }
    }

    /// Opens a timed window whose work began at `started` (awa's jobs,
    /// claimable from their enqueue's commit): the clock runs from then,
    /// the counters are read now.
    pub async fn open_from(&self, started: Instant) -> Window {
        self.reset().await;
        Window {
            start: self.counters().await,
            started,
        }
    }
}

impl Server {
    /// In the statements mode, forgets the statements' figures so far.
    async fn reset(&self) {
        if self.statements.is_some() {
            statements::reset(&self.admin).await;
        }
    }

    /// In the statements mode, keeps the breakdown of the window that
    /// ran from `start` to `end` over `units` units.
    async fn keep(&self, start: &Counters, end: &Counters, units: u64) {
        let Some(dump) = &self.statements else {
            return;
        };
        let read = statements::read(&self.admin, units).await;
        let Some(db) = read.first().map(|(db, _)| db.clone()) else {
            return;
        };
        let breakdown = Breakdown {
            statements: read.into_iter().map(|(_, s)| s).collect(),
            wal: statements::wal(dump, start.wal, end.wal, units),
        };
        self.breakdowns
            .lock()
            .expect("breakdowns")
            .push((db, breakdown));
    }
}

/// A tokio-postgres connection to `url`, driven by its own task.
pub async fn connect(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    tokio::spawn(connection);
    client
}

/// `pg_current_wal_lsn()`'s `X/Y` as a byte position.
fn parse_lsn(lsn: &str) -> u64 {
    let (high, low) = lsn.split_once('/').expect("an LSN");
    let part = |s: &str| u64::from_str_radix(s, 16).expect("an LSN's hex");
    (part(high) << 32) | part(low)
}

struct Counters {
    xid: u64,
    wal: u64,
    client_ticks: u64,
    server_ns: HashMap<u32, u64>,
}

/// A timed window, opened by [`Server::open`].
pub struct Window {
    start: Counters,
    started: Instant,
}

impl Window {
    /// Closes the window over `units` units: the clock, then the counters.
    pub async fn close(self, server: &Server, units: u64) -> Cell {
        let elapsed = self.started.elapsed();
        let end = server.counters().await;
        server.keep(&self.start, &end, units).await;
        Cell {
            units,
            elapsed,
            xacts: end.xid - self.start.xid,
            wal: end.wal - self.start.wal,
            client_ticks: end.client_ticks.saturating_sub(self.start.client_ticks),
            server_ns: server_delta(&self.start.server_ns, &end.server_ns),
            load: load_average_1(),
        }
    }
}

/// What one cell (one system, one k, one round) measured.
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    pub units: u64,
    pub elapsed: Duration,
    /// Write transactions (xids taken) on the whole server in the window.
    pub xacts: u64,
    /// WAL bytes written on the whole server in the window.
    pub wal: u64,
    pub client_ticks: u64,
    pub server_ns: u64,
    /// The machine's 1-minute load average when the window closed.
    pub load: f64,
}

impl Cell {
    pub fn per_second(&self) -> f64 {
        self.units as f64 / self.elapsed.as_secs_f64()
    }
    pub fn xacts_per_unit(&self) -> f64 {
        self.xacts as f64 / self.units as f64
    }
    pub fn wal_per_unit(&self) -> f64 {
        self.wal as f64 / self.units as f64
    }
    /// Client CPU per unit, ms.
    pub fn client_ms(&self) -> f64 {
        self.client_ticks as f64 * 1e3 / TICKS_PER_SECOND / self.units as f64
    }
    /// Server CPU per unit, ms.
    pub fn server_ms(&self) -> f64 {
        self.server_ns as f64 / 1e6 / self.units as f64
    }
}

/// utime + stime of a `/proc/<pid>/stat` line (every thread's, ended
/// threads' included), and its command name.
fn ticks_of(stat: &str) -> Option<(&str, u64)> {
    // The name is in parentheses and may hold spaces: split at the last ')'.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = &stat[open + 1..close];
    let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
    // Fields 14 and 15 of the line; the 12th and 13th after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// This process's CPU, in ticks.
fn client_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    ticks_of(&stat).expect("a stat line").1
}

/// The CPU time of every `postgres` process alive now (the postmaster,
/// the backends, the checkpointer, WAL writer, autovacuum…), in ns, by
/// pid: the first field of `/proc/<pid>/schedstat`, the scheduler's own
/// count. Not the 10 ms ticks of `stat`: a window's CPU is spread over up
/// to k backends, each of which may use less than a tick, and ticks would
/// round each of them down.
fn server_ns() -> HashMap<u32, u64> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path())))
        .filter(|(_, path)| {
            std::fs::read_to_string(path.join("comm")).is_ok_and(|c| c.trim_end() == "postgres")
        })
        .filter_map(|(pid, path)| {
            let schedstat = std::fs::read_to_string(path.join("schedstat")).ok()?;
            Some((pid, schedstat.split(' ').next()?.parse().ok()?))
        })
        .collect()
}

/// The server's CPU between two readings: each process's growth, a process
/// new since `start` counted whole. A process that ended in between (the
/// backends of the previous cell's connections, closing) is left out: its
/// total would otherwise vanish from the sum.
fn server_delta(start: &HashMap<u32, u64>, end: &HashMap<u32, u64>) -> u64 {
    end.iter()
        .map(|(pid, &ticks)| ticks.saturating_sub(start.get(pid).copied().unwrap_or(0)))
        .sum()
}

/// The machine's 1-minute load average, as `/proc/loadavg` says (NaN if
/// unreadable).
pub fn load_average_1() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The machine's load averages (1, 5, 15 min), as `/proc/loadavg` says.
pub fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split(' ').take(3).collect::<Vec<_>>().join(" ")
}

pub use crate::durable_common::{bounded, setting};
