//! A throwaway Citus cluster for the tests: a coordinator and two workers,
//! each a [`Cluster`] of its own on loopback with `citus` preloaded,
//! joined as Citus joins nodes (`CREATE EXTENSION citus` on each, then on
//! the coordinator `citus_set_coordinator_host` and one `citus_add_node`
//! per worker), in their `postgres` database. Removed as every cluster is
//! (each node's watchdog). Four shards per distributed table
//! (`citus.shard_count`), so a test's `create_distributed_table` stays
//! quick and every table still spans both workers.
//!
//! Citus is not in the package registries: `scripts/citus/install` builds
//! it into Debian's PostgreSQL 15 (as `.ci/run` does). Without it,
//! [`Citus::start`] prints one line saying the Citus tests are skipped and
//! answers `None`; with `BATON_REQUIRE_CITUS=1` (as `.ci/run` sets) it
//! panics instead.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use super::postgres::{Cluster, server_bin};

/// The variable under which a missing Citus fails the tests.
pub const REQUIRE: &str = "BATON_REQUIRE_CITUS";

/// The database every node runs Citus in.
pub const DATABASE: &str = "postgres";

/// The settings every node starts with.
const SETTINGS: [&str; 3] = [
    "shared_preload_libraries=citus",
    "citus.shard_count=4",
    // Workers connect to one another and to the coordinator.
    "max_connections=300",
];

/// A coordinator and its workers.
pub struct Citus {
    coordinator: Cluster,
    workers: Vec<Cluster>,
}

/// Where Citus's library would be for the server the fixture runs: the
/// `lib` beside the server programs' own directory.
fn citus_library() -> Option<PathBuf> {
    let bin = server_bin()?;
    let initdb = std::fs::canonicalize(bin.join("initdb")).ok()?;
    let lib = initdb.parent()?.parent()?.join("lib").join("citus.so");
    lib.is_file().then_some(lib)
}

/// Says once per `cargo test` that the Citus tests are skipped (see
/// `postgres::say_skipped`).
fn say_skipped() {
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        let marker = std::env::temp_dir().join(format!(
            "baton-citus-skipped-{}",
            std::os::unix::process::parent_id()
        ));
        if std::fs::File::create_new(marker).is_err() {
            return;
        }
        let _ = writeln!(
            std::io::stderr(),
            "baton: Citus tests SKIPPED: no citus.so beside the PostgreSQL server (build it: \
             scripts/citus/install; set {REQUIRE}=1 to fail instead)"
        );
    });
}

impl Citus {
    /// Starts a coordinator and two workers, or `None` if the server or
    /// Citus is missing (and `BATON_REQUIRE_CITUS` is not `1`).
    pub fn start() -> Option<Citus> {
        let required = std::env::var(REQUIRE).is_ok_and(|v| v == "1");
        if citus_library().is_none() {
            assert!(
                !required,
                "{REQUIRE}=1 but Citus is not installed beside the PostgreSQL server: \
                 scripts/citus/install"
            );
            say_skipped();
            return None;
        }
        let start = || Cluster::start_with_settings(&SETTINGS);
        let coordinator = start()?;
        let workers = vec![start()?, start()?];
        let citus = Citus {
            coordinator,
            workers,
        };
        // On a thread of its own: the first test to ask may be inside a
        // runtime already.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime")
                        .block_on(citus.join());
                })
                .join()
                .expect("the Citus nodes joined");
        });
        Some(citus)
    }

    /// The Citus cluster shared by the tests of this binary.
    pub fn shared() -> Option<&'static Citus> {
        static SHARED: OnceLock<Option<Citus>> = OnceLock::new();
        SHARED.get_or_init(Citus::start).as_ref()
    }

    async fn join(&self) {
        for node in std::iter::once(&self.coordinator).chain(&self.workers) {
            node.connect(DATABASE)
                .await
                .batch_execute("CREATE EXTENSION citus")
                .await
                .expect("CREATE EXTENSION citus");
        }
        let coordinator = self.coordinator.connect(DATABASE).await;
        coordinator
            .execute(
                "SELECT citus_set_coordinator_host('127.0.0.1', $1)",
                &[&i32::from(self.coordinator.port())],
            )
            .await
            .expect("citus_set_coordinator_host");
        for worker in &self.workers {
            coordinator
                .execute(
                    "SELECT citus_add_node('127.0.0.1', $1)",
                    &[&i32::from(worker.port())],
                )
                .await
                .expect("citus_add_node");
        }
    }

    /// The coordinator, where a log connects.
    pub fn coordinator(&self) -> &Cluster {
        &self.coordinator
    }

    /// The workers, which hold the shards.
    pub fn workers(&self) -> &[Cluster] {
        &self.workers
    }

    /// A connection string to the coordinator's Citus database.
    pub fn url(&self) -> String {
        self.coordinator.url(DATABASE)
    }

    /// A plain client connection to the coordinator (for a test's own SQL).
    pub async fn connect(&self) -> tokio_postgres::Client {
        self.coordinator.connect(DATABASE).await
    }

    /// A fresh schema name on the cluster, for one store.
    pub fn fresh_schema() -> String {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        format!(
            "citus_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    }
}
