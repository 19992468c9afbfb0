//! The SQLite half of the retention bench: its storage stages and its
//! growth rounds (see `retention.rs` for what each measures).

use super::*;

type Sqlite = SqliteLog<HandoffExecution>;

/// One chain under `root` through the API: 3 handoffs, then a finish.
fn sqlite_chain(log: &Sqlite, root: &str) {
    for k in 0..CHAIN {
        let run = hop(root, k);
        let Claim::Owner(epoch) = log.claim(root, &run).unwrap() else {
            panic!("{run}: a fresh Run was not owned");
        };
        if k + 1 < CHAIN {
            let _ = log
                .append(
                    root,
                    &source(&run),
                    epoch,
                    &pause(root, &run, &hop(root, k + 1)),
                )
                .unwrap();
        } else {
            let _ = log
                .finish(root, &source(&run), epoch, &execution())
                .unwrap();
        }
    }
}

const SQLITE_TABLES: [&str; 4] = ["run_epoch", "handoff_pause", "run_finish", "retired_root"];

fn sqlite_count(raw: &rusqlite::Connection, table: &str) -> u64 {
    let n: i64 = raw
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
            row.get(0)
        })
        .unwrap();
    n as u64
}

fn sqlite_pragma(raw: &rusqlite::Connection, name: &str) -> u64 {
    let n: i64 = raw
        .pragma_query_value(None, name, |row| row.get(0))
        .unwrap();
    n as u64
}

/// One row of the SQLite storage table: the rows per table, and the bytes.
fn sqlite_stage(file: &TempFile, stage: &str, vacuum: bool, live: usize) {
    let raw = rusqlite::Connection::open(&file.0).unwrap();
    raw.busy_timeout(Duration::from_secs(30)).unwrap();
    if vacuum {
        raw.execute_batch("VACUUM").unwrap();
    }
    raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
        assert_eq!(row.get::<_, i64>(0)?, 0, "the checkpoint was blocked");
        Ok(())
    })
    .unwrap();
    let counts: Vec<u64> = SQLITE_TABLES
        .iter()
        .map(|t| sqlite_count(&raw, t))
        .collect();
    let total: u64 = counts.iter().sum();
    let page = sqlite_pragma(&raw, "page_size");
    let pages = sqlite_pragma(&raw, "page_count") * page;
    let free = sqlite_pragma(&raw, "freelist_count") * page;
    let on_disk = file.size("") + file.size("-wal");
    // Each table's pages (its B-tree and overflow pages) by `dbstat`.
    let by_table = SQLITE_TABLES
        .iter()
        .map(|t| {
            raw.query_row(
                "SELECT coalesce(sum(pgsize), 0), \
                        coalesce(sum(pagetype = 'overflow'), 0) FROM dbstat WHERE name = ?1",
                [t],
                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)),
            )
            .map(|(bytes, overflow)| {
                if overflow > 0 {
                    format!(
                        "{} ({} overflow pages)",
                        thousands(bytes as u64),
                        thousands(overflow as u64)
                    )
                } else {
                    thousands(bytes as u64)
                }
            })
            .unwrap_or_else(|_| "(no dbstat)".to_owned())
        })
        .collect::<Vec<_>>()
        .join(" / ");
    println!(
        "| {stage} | {} | {} | {} | {} | {} | {} | {} ({} free) | {} | {} | {by_table} |",
        thousands(counts[0]),
        thousands(counts[1]),
        thousands(counts[2]),
        thousands(counts[3]),
        thousands(total),
        per_live(total, live),
        thousands(on_disk),
        thousands(free),
        thousands(pages),
        per_live(on_disk, live),
    );
}

pub(super) fn sqlite_storage(runs: usize, open: usize) {
    let roots = runs / CHAIN;
    let file = TempFile::new(Path::new("/dev/shm"), "storage");
    let log: Sqlite = SqliteLog::open(&file.0).unwrap();
    let started = Instant::now();
    for i in 0..roots {
        sqlite_chain(&log, &format!("final-{}", hashed(1, i as u64)));
    }
    for j in 0..open {
        let root = format!("open-{}", hashed(2, j as u64));
        assert!(matches!(
            log.claim(&root, &hop(&root, 0)).unwrap(),
            Claim::Owner(_)
        ));
    }
    let written = started.elapsed();
    println!();
    println!(
        "### SQLite (file in /dev/shm): {} final Runs ({} roots × {CHAIN}: 3 handoffs, a \
         finish) and {open} open Runs",
        thousands((roots * CHAIN) as u64),
        thousands(roots as u64)
    );
    println!();
    println!(
        "| stage | run_epoch | handoff_pause | run_finish | retired_root | rows total | rows / \
         live Run | bytes: file + wal, checkpointed | bytes: page_count × page_size | bytes / \
         live Run (file + wal) | bytes by table (dbstat: run_epoch / handoff_pause / run_finish / \
         retired_root) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    sqlite_stage(&file, "before retention", false, open);
    sqlite_stage(&file, "before retention, after VACUUM", true, open);
    let sizes: (f64, f64) = rusqlite::Connection::open(&file.0)
        .unwrap()
        .query_row(
            "SELECT (SELECT avg(length(pause)) FROM handoff_pause), \
                    (SELECT avg(length(outcome)) FROM run_finish)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    let started = Instant::now();
    for i in 0..roots {
        let root = format!("final-{}", hashed(1, i as u64));
        assert_eq!(
            log.retire(&root).unwrap(),
            Retirement::Retired { runs: CHAIN }
        );
    }
    let retired = started.elapsed();
    sqlite_stage(&file, "after retention", false, open);
    sqlite_stage(&file, "after retention, after VACUUM", true, open);
    println!();
    println!(
        "Written through the API in {:.1} s ({} claims, {} appends, {} finishes); {} \
         retirements in {:.1} s. A pause's JSON is {:.0} bytes, an outcome's {:.0} (averages).",
        written.as_secs_f64(),
        thousands((roots * CHAIN + open) as u64),
        thousands((roots * (CHAIN - 1)) as u64),
        thousands(roots as u64),
        thousands(roots as u64),
        retired.as_secs_f64(),
        sizes.0,
        sizes.1
    );
    drop(log);
}

/// A store holding `history` tombstones: `API_ROOTS` roots retired through
/// the API, checked, then the rest in bulk.
fn sqlite_history(dir: &Path, history: usize) -> (TempFile, Sqlite) {
    let file = TempFile::new(dir, &format!("history-{history}"));
    let log: Sqlite = SqliteLog::open(&file.0).unwrap();
    let api: Vec<String> = (0..API_ROOTS)
        .map(|i| format!("api-{}", hashed(3, i as u64)))
        .collect();
    for root in &api {
        sqlite_chain(&log, root);
        assert_eq!(
            log.retire(root).unwrap(),
            Retirement::Retired { runs: CHAIN }
        );
    }
    let mut raw = rusqlite::Connection::open(&file.0).unwrap();
    raw.busy_timeout(Duration::from_secs(30)).unwrap();
    // What the API's retirements left: the tombstones, nothing else.
    let tables: Vec<String> = raw
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut known: Vec<&str> = SQLITE_TABLES.to_vec();
    known.sort();
    assert_eq!(tables, known, "the log's tables");
    for table in SQLITE_TABLES {
        let want = if table == "retired_root" {
            API_ROOTS
        } else {
            0
        };
        assert_eq!(
            sqlite_count(&raw, table),
            want as u64,
            "{table} after retire"
        );
    }
    let tx = raw.transaction().unwrap();
    {
        let mut insert = tx
            .prepare("INSERT INTO retired_root (root_run_id) VALUES (?1)")
            .unwrap();
        for i in API_ROOTS..history {
            insert.execute([hashed(4, i as u64)]).unwrap();
        }
    }
    tx.commit().unwrap();
    // Every column but the key of an API tombstone equals a bulk one's.
    let row_of = |root: &str| -> Vec<rusqlite::types::Value> {
        raw.query_row(
            "SELECT * FROM retired_root WHERE root_run_id = ?1",
            [root],
            |row| {
                (0..row.as_ref().column_count())
                    .map(|i| row.get(i))
                    .collect::<Result<Vec<_>, _>>()
            },
        )
        .unwrap()
    };
    let (by_api, bulk) = (row_of(&api[0]), row_of(&hashed(4, API_ROOTS as u64)));
    assert_eq!(by_api.len(), bulk.len());
    assert_eq!(by_api[1..], bulk[1..], "a bulk tombstone is not the API's");
    assert_eq!(sqlite_count(&raw, "retired_root"), history as u64);
    raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    (file, log)
}

/// `n` Runs, one at a time: a claim of a fresh Run under a fresh root,
/// then its pause's append.
fn sqlite_runs(log: &Sqlite, tag: u64, n: usize) -> Latencies {
    let mut out = Latencies::default();
    for i in 0..n {
        let root = hashed(tag, i as u64);
        let run = format!("{root}-run");
        let (source, pause) = (source(&run), pause(&root, &run, &format!("{root}-next")));
        let started = Instant::now();
        let Claim::Owner(epoch) = log.claim(&root, &run).unwrap() else {
            panic!("{run}: a fresh Run was not owned");
        };
        let claimed = Instant::now();
        let _ = log.append(&root, &source, epoch, &pause).unwrap();
        out.push(claimed - started, claimed.elapsed());
    }
    out
}

pub(super) fn sqlite_growth(history: usize, ops: usize, rounds: usize) {
    let dir = std::env::temp_dir();
    let (_small_file, small) = sqlite_history(&dir, 1000);
    let (_big_file, big) = sqlite_history(&dir, history);
    sqlite_runs(&small, 100, WARM_UP);
    sqlite_runs(&big, 100, WARM_UP);
    let mut all = Vec::new();
    for round in 0..rounds as u64 {
        // 1k, 1M, then 1M, 1k: neither goes first every time.
        let (s, b) = if round % 2 == 0 {
            let s = sqlite_runs(&small, 200 + round, ops);
            (s, sqlite_runs(&big, 200 + round, ops))
        } else {
            let b = sqlite_runs(&big, 200 + round, ops);
            (sqlite_runs(&small, 200 + round, ops), b)
        };
        all.push((s, b));
    }
    print_history(
        &format!(
            "SQLite (file in {}, WAL, synchronous = FULL)",
            dir.display()
        ),
        history,
        &all,
    );
}
