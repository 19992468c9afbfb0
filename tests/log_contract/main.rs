//! The canonical log's contract (SPEC §6), one suite run unchanged against
//! every store: `MemoryLog`, `SqliteLog` (feature `sqlite`) and
//! `PostgresLog` (feature `postgres`, on a throwaway server the fixture
//! starts; skipped with one printed line when the server programs are
//! missing, unless `BATON_REQUIRE_POSTGRES=1`). The PostgreSQL logs run as
//! a role with only DML rights on a schema the operator migrated, three
//! ways: direct (`postgres::`), over TLS to a server with a certificate the
//! fixture makes (`postgres_tls::`), and through PgBouncer in transaction
//! pooling mode with no prepared statements (`postgres_bouncer::`).
//!
//! Each store is a [`Store`]: a fresh, empty log that more connections can
//! be opened to (for `MemoryLog`, handles on one shared log). The suite's
//! tests are the test kit's (`baton_testkit::log_contract`, the harness a
//! user's store runs through too), generic over it and named with the
//! rule ids they check; `baton_testkit::log_contract!` instantiates every
//! one of them for each store, so `cargo test --test log_contract memory::`
//! (or `sqlite::`, `postgres::`) runs one store's. Each operation is
//! awaited within the shared bound (R5: every operation resolves). What
//! only one store has (a schema, a server to crash) is tested beside, in
//! `postgres_*.rs` (`postgres_only.rs` says which file holds what), and
//! for SQLite in the library's unit tests.
// The kit's contract harness, like its fuzz bodies, is not built under
// `--cfg loom` (it drives stores outside a loom model).
#![cfg(not(loom))]

#[path = "../common/mod.rs"]
mod common;

#[cfg(all(unix, feature = "postgres"))]
mod citus;
#[cfg(all(unix, feature = "postgres"))]
mod citus_failover;
#[cfg(all(unix, feature = "postgres"))]
mod citus_layout;
#[cfg(all(unix, feature = "postgres"))]
mod managed_failover;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_commits;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_drops;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_example;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_failover;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_fates;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_finish;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_group;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_group_faults;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_in_tx;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_migration;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_network;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_only;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_retries;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_runtime;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_scale;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_schema;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_sessions;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_standby_guard;
#[cfg(all(unix, feature = "postgres"))]
mod postgres_tls_bouncer;

// The contract itself lives in the test kit (`baton_testkit::log_contract`),
// where a user's store is held to it too; these are its names here.
pub use baton_testkit::log_contract::{HoldsFloats, Payload, Shared, Store, SweepsEnded, run};

#[allow(unused_imports)]
use baton::durable::{AsyncHandoffLog, LogError, MemoryLog, RunFacts, Sweep, SweepCursor};
#[allow(unused_imports)]
use std::future::Future;
#[allow(unused_imports)]
use std::time::SystemTime;

// --- MemoryLog: handles on one shared log. ---

async fn memory() -> Option<Shared<MemoryLog<Payload>>> {
    Some(Shared::new(MemoryLog::new()))
}

baton_testkit::log_contract!(memory, memory;
    g2_what_a_store_acknowledges_reads_back_equal,
    g5_retention_by_age_retires_only_ended_roots_in_bounded_batches,
);

// --- SqliteLog: connections to one file. ---

#[cfg(feature = "sqlite")]
mod sqlite_store {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    use baton::durable::SqliteLog;

    use super::*;

    /// A fresh SQLite file, removed (with its WAL) on drop.
    pub struct SqliteFile(PathBuf);

    impl Drop for SqliteFile {
        fn drop(&mut self) {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
            }
        }
    }

    impl Store for SqliteFile {
        type Log = SqliteLog<Payload>;
        async fn open(&self) -> SqliteLog<Payload> {
            SqliteLog::open(&self.0).expect("open the SQLite log")
        }
    }

    impl SweepsEnded for SqliteFile {
        fn retire_ended(
            &self,
            log: &SqliteLog<Payload>,
            before: SystemTime,
            from: Option<&SweepCursor>,
            limit: usize,
        ) -> impl Future<Output = Result<Sweep, LogError>> + Send {
            log.retire_ended_async(before, from, limit)
        }
    }

    impl HoldsFloats for SqliteFile {
        type FloatLog = SqliteLog<f64>;
        async fn float_log(&self) -> SqliteLog<f64> {
            SqliteLog::open(&self.0).expect("open the SQLite log")
        }
    }

    pub async fn sqlite() -> Option<SqliteFile> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "baton-contract-{}-{}.sqlite",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = SqliteFile(path);
        drop(SqliteFile(file.0.clone())); // a leftover of an earlier run
        Some(file)
    }
}

#[cfg(feature = "sqlite")]
use sqlite_store::sqlite;
#[cfg(feature = "sqlite")]
baton_testkit::log_contract!(sqlite, sqlite;
    g2_what_a_store_acknowledges_reads_back_equal,
    g5_retention_by_age_retires_only_ended_roots_in_bounded_batches,
);

/// `HoldsReads` for a PostgreSQL store of the suite (a `dbname` on the
/// cluster `$cluster()` gives): the hold of
/// [`read_across_a_takeover`](postgres_store::read_across_a_takeover).
#[cfg(all(unix, feature = "postgres"))]
macro_rules! holds_reads {
    ($store:ty, $cluster:expr) => {
        impl HoldsReads for $store {
            async fn read_across_a_takeover(
                &self,
                log: &PostgresLog<Payload>,
                root: &str,
                run: &str,
                source: &Invocation,
                pause: &HandoffPause<Payload>,
            ) -> Result<RunFacts<Payload>, LogError> {
                let cluster = $cluster().expect("the store's cluster");
                read_across_a_takeover(cluster, &self.dbname, log, root, run, source, pause).await
            }
        }
    };
}

// --- PostgresLog: connections to a fresh database of the shared cluster. ---

#[cfg(all(unix, feature = "postgres"))]
mod postgres_store {
    use baton::durable::{PostgresLog, PostgresOptions, PostgresSchema};
    use baton::{HandoffPause, Invocation};
    use baton_testkit::log_contract::HoldsReads;
    use baton_testkit::within::within;

    use super::*;
    use crate::common::postgres::{Cluster, USER};

    /// The schema the contract suite's logs keep their tables in.
    pub const SCHEMA: &str = "baton_log";

    /// The role the contract suite's logs run as: no DDL rights at all.
    pub const DML_ROLE: &str = "baton_dml";

    /// A fresh database of the binary's throwaway cluster, migrated by
    /// the operator (the superuser, the explicit step) into [`SCHEMA`],
    /// and reached as [`DML_ROLE`].
    pub struct PostgresDatabase {
        pub dbname: String,
        pub url: String,
    }

    impl PostgresDatabase {
        /// A log on the database, in [`SCHEMA`], with payloads `Q`.
        async fn connect<Q>(&self) -> PostgresLog<Q> {
            let options = PostgresOptions::new().schema(PostgresSchema::named(SCHEMA).unwrap());
            PostgresLog::connect_with(
                self.url.parse().expect("a connection string"),
                baton::durable::tokio_postgres::NoTls,
                options,
            )
            .await
            .expect("connect the PostgreSQL log")
        }
    }

    impl Store for PostgresDatabase {
        type Log = PostgresLog<Payload>;
        async fn open(&self) -> PostgresLog<Payload> {
            self.connect().await
        }
    }

    impl SweepsEnded for PostgresDatabase {
        async fn retire_ended(
            &self,
            log: &PostgresLog<Payload>,
            before: SystemTime,
            from: Option<&SweepCursor>,
            limit: usize,
        ) -> Result<Sweep, LogError> {
            log.retire_ended_async(before, from, limit).await
        }
    }

    impl HoldsFloats for PostgresDatabase {
        type FloatLog = PostgresLog<f64>;
        async fn float_log(&self) -> PostgresLog<f64> {
            self.connect().await
        }
    }

    /// Migrates `dbname` into [`SCHEMA`] as the superuser, grants
    /// [`DML_ROLE`] (made once per cluster) only `USAGE` on the schema and
    /// `SELECT`, `INSERT`, `UPDATE` on its tables, and answers a
    /// connection string for that role.
    pub async fn dml_only(cluster: &Cluster, dbname: &str) -> String {
        let admin = cluster.connect(dbname).await;
        PostgresSchema::named(SCHEMA)
            .unwrap()
            .migrate(&admin)
            .await
            .expect("the operator's migration");
        admin
            .batch_execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
            .await
            .expect("the revoke");
        grant_dml_only(&admin, SCHEMA).await;
        as_dml_role(&cluster.url(dbname))
    }

    /// Makes [`DML_ROLE`] (once per cluster) and grants it only `USAGE` on
    /// `schema` and `SELECT`, `INSERT`, `UPDATE`, `DELETE` on its tables.
    pub async fn grant_dml_only(admin: &tokio_postgres::Client, schema: &str) {
        admin
            .batch_execute(&format!(
                "DO $$ BEGIN CREATE ROLE {DML_ROLE} LOGIN; \
                 EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$; \
                 GRANT USAGE ON SCHEMA {schema} TO {DML_ROLE}; \
                 GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} \
                 TO {DML_ROLE}"
            ))
            .await
            .expect("the DML-only role and its grants");
    }

    /// The connection string `url` (the superuser's) for [`DML_ROLE`].
    pub fn as_dml_role(url: &str) -> String {
        url.replace(&format!("user={USER} "), &format!("user={DML_ROLE} "))
    }

    pub async fn postgres() -> Option<PostgresDatabase> {
        let cluster = Cluster::shared()?;
        let dbname = cluster.database().await;
        Some(PostgresDatabase {
            url: dml_only(cluster, &dbname).await,
            dbname,
        })
    }

    holds_reads!(PostgresDatabase, Cluster::shared);

    /// Writes `pause` (appended from `source` within `root`) under `epoch`
    /// into `table` by hand, as another writer (or an older baton) would:
    /// its columns and its JSON.
    pub async fn insert_pause_row(
        admin: &tokio_postgres::Client,
        table: &str,
        root: &str,
        source: &Invocation,
        pause: &HandoffPause<Payload>,
        epoch: i64,
    ) {
        let json = serde_json::to_string(pause).expect("the pause's JSON");
        let intent = &pause.intent;
        admin
            .execute(
                &format!(
                    "INSERT INTO {table} VALUES \
                     ($1, $2, $3, $4, $5, $6, $7, $8, CAST($9::text AS json), $10)"
                ),
                &[
                    &root,
                    &source.run_id,
                    &source.session_id,
                    &source.turn_id,
                    &source.invocation_id,
                    &intent.handoff_id,
                    &intent.successor_run_id,
                    &intent.successor_invocation_id,
                    &json,
                    &epoch,
                ],
            )
            .await
            .expect("the pause row");
    }

    /// Waits (bounded) until a backend of `admin`'s database waits for a
    /// lock: an operation another session holds up has reached that hold.
    pub async fn until_a_backend_waits_for_a_lock(admin: &tokio_postgres::Client) {
        until_backends_wait_for_locks(admin, 1).await;
    }

    /// Waits (bounded) until `n` backends of `admin`'s database wait for a
    /// lock.
    pub async fn until_backends_wait_for_locks(admin: &tokio_postgres::Client, n: i64) {
        within("the operations reach the held lock", async {
            loop {
                // `admin` may be in a transaction, which keeps its first
                // view of `pg_stat_activity` to its end unless cleared.
                admin
                    .batch_execute("SELECT pg_stat_clear_snapshot()")
                    .await
                    .expect("pg_stat_clear_snapshot");
                let row = admin
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity \
                         WHERE datname = current_database() AND wait_event_type = 'Lock'",
                        &[],
                    )
                    .await
                    .expect("pg_stat_activity");
                if row.get::<_, i64>(0) >= n {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await;
    }

    /// The hold of [`HoldsReads`] on PostgreSQL, by construction: another
    /// session (the operator's) takes the pause table `ACCESS EXCLUSIVE`,
    /// so the log's read — one `REPEATABLE READ` transaction, the epoch
    /// then the pauses, pipelined — takes its snapshot at the epoch and
    /// waits at the pause table (seen in `pg_stat_activity`); that session
    /// then takes the Run over (its next epoch) and appends the pause
    /// under it, as the store's claim and append write them, and commits,
    /// which lets the read go on. A read answering the new epoch began
    /// after the writes: the hold was not real, and this panics.
    pub async fn read_across_a_takeover<L: AsyncHandoffLog<Payload>>(
        cluster: &Cluster,
        dbname: &str,
        log: &L,
        root: &str,
        run: &str,
        source: &Invocation,
        pause: &HandoffPause<Payload>,
    ) -> Result<RunFacts<Payload>, LogError> {
        // A read first, so the pool's connection has its statements
        // prepared (a prepare would wait for the lock before the read's
        // transaction began), and the epoch the read must see.
        let before = within("R5", log.facts_async(root, run)).await?.epoch;
        let admin = cluster.connect(dbname).await;
        admin
            .batch_execute(&format!(
                "BEGIN; LOCK TABLE {SCHEMA}.baton_handoff_pause IN ACCESS EXCLUSIVE MODE"
            ))
            .await
            .expect("the lock");
        let writer = async {
            until_a_backend_waits_for_a_lock(&admin).await;
            let next = i64::try_from(before.next().expect("a next epoch").get()).unwrap();
            admin
                .execute(
                    &format!(
                        "UPDATE {SCHEMA}.baton_run SET epoch = $3 \
                         WHERE root_run_id = $1 AND run_id = $2"
                    ),
                    &[&root, &run, &next],
                )
                .await
                .expect("the takeover");
            let table = format!("{SCHEMA}.baton_handoff_pause");
            insert_pause_row(&admin, &table, root, source, pause, next).await;
            admin.batch_execute("COMMIT").await.expect("the commit");
        };
        let (read, ()) = tokio::join!(log.facts_async(root, run), writer);
        if let Ok(read) = &read {
            assert_eq!(
                read.epoch, before,
                "the hold was not real: the read began after the writes"
            );
        }
        read
    }
}

#[cfg(all(unix, feature = "postgres"))]
use postgres_store::postgres;
#[cfg(all(unix, feature = "postgres"))]
baton_testkit::log_contract!(postgres, postgres;
    r3_the_facts_are_one_snapshot_even_across_a_takeover_and_a_handoff,
    g2_what_a_store_acknowledges_reads_back_equal,
    g5_retention_by_age_retires_only_ended_roots_in_bounded_batches,
);

// --- PostgresLog over TLS: rustls, trusting only the TLS cluster's CA. ---

#[cfg(all(unix, feature = "postgres"))]
mod postgres_tls_store {
    use std::sync::Arc;

    use baton::durable::{PostgresLog, PostgresOptions, PostgresSchema};
    use tokio_postgres_rustls::MakeRustlsConnect;

    use super::*;
    use crate::common::postgres::Cluster;
    use crate::postgres_store::{SCHEMA, dml_only, read_across_a_takeover};
    use baton::{HandoffPause, Invocation};
    use baton_testkit::log_contract::HoldsReads;

    /// rustls's connector for tokio-postgres, on the ring provider,
    /// trusting only the certificates `roots` (DER).
    pub fn rustls_trusting(roots: &[&[u8]]) -> MakeRustlsConnect {
        let mut store = rustls::RootCertStore::empty();
        for root in roots {
            store
                .add(rustls::pki_types::CertificateDer::from(root.to_vec()))
                .expect("a root certificate");
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring's protocol versions")
        .with_root_certificates(store)
        .with_no_client_auth();
        MakeRustlsConnect::new(config)
    }

    /// A fresh database of the binary's TLS cluster, migrated and granted
    /// as [`postgres_store`](super::postgres_store)'s, reached as its
    /// DML-only role over TLS (`sslmode=require`, the cluster's CA the one
    /// root trusted).
    pub struct PostgresTlsDatabase {
        pub dbname: String,
        pub url: String,
        pub tls: MakeRustlsConnect,
    }

    impl Store for PostgresTlsDatabase {
        type Log = PostgresLog<Payload>;
        async fn open(&self) -> PostgresLog<Payload> {
            let options = PostgresOptions::new().schema(PostgresSchema::named(SCHEMA).unwrap());
            PostgresLog::connect_with(
                self.url.parse().expect("a connection string"),
                self.tls.clone(),
                options,
            )
            .await
            .expect("connect the PostgreSQL log over TLS")
        }
    }

    holds_reads!(PostgresTlsDatabase, Cluster::shared_tls);

    pub async fn postgres_tls() -> Option<PostgresTlsDatabase> {
        let cluster = Cluster::shared_tls()?;
        let dbname = cluster.database().await;
        let url = format!("{} sslmode=require", dml_only(cluster, &dbname).await);
        Some(PostgresTlsDatabase {
            dbname,
            url,
            tls: rustls_trusting(&[cluster.ca_der().expect("the TLS cluster's CA")]),
        })
    }
}

#[cfg(all(unix, feature = "postgres"))]
use postgres_tls_store::postgres_tls;
#[cfg(all(unix, feature = "postgres"))]
baton_testkit::log_contract!(postgres_tls, postgres_tls, holds_reads);

// --- PostgresLog through PgBouncer (transaction pooling), unprepared. ---

#[cfg(all(unix, feature = "postgres"))]
mod postgres_bouncer_store {
    use std::sync::OnceLock;

    use baton::durable::{PostgresLog, PostgresOptions, PostgresSchema};

    use super::*;
    use crate::common::pgbouncer::Bouncer;
    use crate::common::postgres::{Cluster, USER};
    use crate::postgres_store::{DML_ROLE, SCHEMA, dml_only, read_across_a_takeover};
    use baton::{HandoffPause, Invocation};
    use baton_testkit::log_contract::HoldsReads;

    /// The PgBouncer of this binary, in front of its shared cluster,
    /// letting in the superuser and [`DML_ROLE`].
    pub fn bouncer() -> Option<&'static Bouncer> {
        static SHARED: OnceLock<Option<Bouncer>> = OnceLock::new();
        SHARED
            .get_or_init(|| Bouncer::start(Cluster::shared()?, &[USER, DML_ROLE]))
            .as_ref()
    }

    /// What a log behind a transaction-pooling PgBouncer is opened with:
    /// the suite's schema, no prepared statements.
    pub fn options() -> PostgresOptions {
        PostgresOptions::new()
            .schema(PostgresSchema::named(SCHEMA).unwrap())
            .prepared_statements(false)
    }

    /// A fresh database of the binary's shared cluster, migrated and
    /// granted directly on the server (as an operator would), reached as
    /// the DML-only role through [`bouncer`].
    pub struct PostgresBouncedDatabase {
        pub dbname: String,
        pub url: String,
    }

    impl Store for PostgresBouncedDatabase {
        type Log = PostgresLog<Payload>;
        async fn open(&self) -> PostgresLog<Payload> {
            PostgresLog::connect_with(
                self.url.parse().expect("a connection string"),
                baton::durable::tokio_postgres::NoTls,
                options(),
            )
            .await
            .expect("connect the PostgreSQL log through PgBouncer")
        }
    }

    holds_reads!(PostgresBouncedDatabase, Cluster::shared);

    pub async fn postgres_bouncer() -> Option<PostgresBouncedDatabase> {
        let cluster = Cluster::shared()?;
        let bouncer = bouncer()?;
        let dbname = cluster.database().await;
        dml_only(cluster, &dbname).await;
        Some(PostgresBouncedDatabase {
            url: bouncer.url(DML_ROLE, &dbname),
            dbname,
        })
    }
}

#[cfg(all(unix, feature = "postgres"))]
use postgres_bouncer_store::postgres_bouncer;
#[cfg(all(unix, feature = "postgres"))]
baton_testkit::log_contract!(postgres_bouncer, postgres_bouncer, holds_reads);
