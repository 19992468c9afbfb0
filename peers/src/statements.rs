//! Where a unit's WAL bytes and server time go (`PEERS_STATEMENTS=1`):
//! per statement, from `pg_stat_statements` (reset when a window opens,
//! read when it closes), and per kind of WAL record, from `pg_waldump
//! --stats=record` over the window's WAL. `scripts/peers` loads the
//! extension only in this mode: it adds a little to every statement's cost,
//! so the throughput of such a run is not the one to quote.

use std::process::Command;

use tokio_postgres::Client;

/// One statement's cost per unit of its cell.
#[derive(Clone, Debug)]
pub struct Statement {
    /// The statement's text as `pg_stat_statements` normalises it.
    pub query: String,
    pub calls: f64,
    /// Execution time, ms (the server's own clock, not CPU alone).
    pub exec_ms: f64,
    /// Planning time, ms (0 for a prepared statement whose generic plan is
    /// cached: `pg_stat_statements.track_planning` is on).
    pub plan_ms: f64,
    pub rows: f64,
    pub wal_bytes: f64,
    pub wal_fpi: f64,
    /// Shared buffers dirtied.
    pub dirtied: f64,
}

/// One kind of WAL record, per unit.
#[derive(Clone, Debug)]
pub struct WalKind {
    /// `pg_waldump`'s name: resource manager / record type.
    pub kind: String,
    pub records: f64,
    pub bytes: f64,
    /// Of which full-page images.
    pub fpi_bytes: f64,
}

/// What one window's statements and WAL were.
#[derive(Clone, Debug, Default)]
pub struct Breakdown {
    pub statements: Vec<Statement>,
    pub wal: Vec<WalKind>,
}

/// Where `pg_waldump` and the cluster's WAL are (`PEERS_PG_BIN`,
/// `PEERS_PG_DATA`, set by `scripts/peers` in this mode).
#[derive(Clone, Debug)]
pub struct WalDump {
    pub bin: String,
    pub data: String,
}

/// Forgets every statement's figures: the next window starts from zero.
pub async fn reset(admin: &Client) {
    admin
        .batch_execute("SELECT pg_stat_statements_reset()")
        .await
        .expect("pg_stat_statements_reset (is the extension loaded?)");
}

/// Every statement run since [`reset`], but the admin connection's own (in
/// the `postgres` database), per unit: the database they ran in, and them.
pub async fn read(admin: &Client, units: u64) -> Vec<(String, Statement)> {
    let rows = admin
        .query(
            "SELECT d.datname::text, s.query, s.calls::float8, s.total_exec_time, \
                    s.total_plan_time, s.rows::float8, s.wal_bytes::float8, \
                    s.wal_fpi::float8, s.shared_blks_dirtied::float8 \
             FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid \
             WHERE d.datname <> 'postgres' AND s.toplevel \
             ORDER BY s.total_exec_time DESC",
            &[],
        )
        .await
        .expect("reading pg_stat_statements");
    let n = units as f64;
    rows.iter()
        .map(|r| {
            let statement = Statement {
                query: r
                    .get::<_, String>(1)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
                calls: r.get::<_, f64>(2) / n,
                exec_ms: r.get::<_, f64>(3) / n,
                plan_ms: r.get::<_, f64>(4) / n,
                rows: r.get::<_, f64>(5) / n,
                wal_bytes: r.get::<_, f64>(6) / n,
                wal_fpi: r.get::<_, f64>(7) / n,
                dirtied: r.get::<_, f64>(8) / n,
            };
            (r.get(0), statement)
        })
        .collect()
}

/// `X/Y` of a byte position, as `pg_waldump` takes it.
fn lsn(at: u64) -> String {
    format!("{:X}/{:X}", at >> 32, at & 0xffff_ffff)
}

/// The WAL records between `start` and `end`, by kind, per unit; the
/// largest first.
pub fn wal(dump: &WalDump, start: u64, end: u64, units: u64) -> Vec<WalKind> {
    let out = Command::new(format!("{}/pg_waldump", dump.bin))
        .args(["--stats=record", "-p"])
        .arg(format!("{}/pg_wal", dump.data))
        .args(["-s", &lsn(start), "-e", &lsn(end)])
        .output()
        .expect("running pg_waldump");
    assert!(
        out.status.success(),
        "pg_waldump over {}..{}: {}",
        lsn(start),
        lsn(end),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let n = units as f64;
    let mut kinds: Vec<WalKind> = text
        .lines()
        .filter_map(|line| {
            // `Kind  N (pct)  record (pct)  fpi (pct)  combined (pct)`
            let fields: Vec<&str> = line
                .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
                .filter(|f| !f.is_empty())
                .collect();
            let number = |i: usize| fields.get(i)?.parse::<f64>().ok();
            let kind = fields.first()?;
            if !kind.contains('/') {
                return None;
            }
            Some(WalKind {
                kind: (*kind).to_owned(),
                records: number(1)? / n,
                bytes: number(7)? / n,
                fpi_bytes: number(5)? / n,
            })
        })
        .collect();
    kinds.sort_by(|a, b| b.bytes.total_cmp(&a.bytes));
    kinds
}
