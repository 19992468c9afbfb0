//! The physical baseline: one prepared autocommit `INSERT` of a small row
//! (text primary key, bigint, json) on a plain tokio-postgres connection.
//! One write transaction, one commit, one WAL flush per unit: what this
//! server and disk allow for one durable commit at k concurrent sessions.
//! A unit of n transactions can go at most bare ÷ n per second.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use crate::measure::{Cell, Server, bounded, connect};

/// The longest one cell may take.
const LIMIT: Duration = Duration::from_secs(900);

/// The unit, prepared on each connection before the timing.
const INSERT: &str = "INSERT INTO bare VALUES ($1, $2, CAST($3::text AS json))";

/// One connection and its prepared insert.
type Session = Arc<(Client, Statement)>;

/// `units` inserts on `sessions` (one task each), keys starting with `tag`.
async fn inserts(sessions: &[Session], tag: &str, units: usize) {
    let k = sessions.len();
    let tasks: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(w, session)| {
            let (session, tag) = (Arc::clone(session), format!("{tag}-w{w}"));
            let share = units / k + usize::from(w < units % k);
            tokio::spawn(async move {
                let (client, insert) = &*session;
                for i in 0..share {
                    let key = format!("{tag}-{i}");
                    let json = format!(r#"{{"run_id":"{key}"}}"#);
                    let row: [&(dyn ToSql + Sync); 3] = [&key, &(i as i64), &json];
                    client.execute(insert, &row).await.expect("insert");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a bare worker");
    }
}

/// One bare cell: a fresh database, `k` connections, `warm_up` untimed
/// inserts, then `units` timed ones.
pub async fn cell(server: &Server, db: &str, k: usize, warm_up: usize, units: usize) -> Cell {
    let url = server.fresh_database(db).await;
    connect(&url)
        .await
        .batch_execute("CREATE TABLE bare (k text PRIMARY KEY, n bigint NOT NULL, v json NOT NULL)")
        .await
        .expect("CREATE TABLE bare");
    let mut sessions = Vec::with_capacity(k);
    for _ in 0..k {
        let client = connect(&url).await;
        let insert = client.prepare(INSERT).await.expect("prepare");
        sessions.push(Arc::new((client, insert)));
    }
    bounded("bare warm-up", LIMIT, inserts(&sessions, "warm", warm_up)).await;
    let window = server.open().await;
    bounded(db, LIMIT, inserts(&sessions, "timed", units)).await;
    window.close(server, units as u64).await
}
