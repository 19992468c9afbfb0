//! The fleet chapter's program (docs/guide/fleet.md), run: the example
//! `postgres_fleet` — the deploy step that migrates, then one host's twenty
//! Runs handed off through its one log, their successors claimed and
//! finished, every Run claimed again and none resumed (R6, R8), and the
//! root retired (G5, R9) — on the tests' own servers, plain and over TLS
//! trusting the fixture's CA alone. Run twice with the same Runs on one
//! database, the second run finds the root retired: every claim answers
//! `Retired`, and it resumes none.

use crate::common::postgres::Cluster;
use crate::postgres_only::runtime;

#[allow(dead_code)] // its `main`, which reads the environment, is not called here
#[path = "../../examples/postgres_fleet.rs"]
mod postgres_fleet;

use baton::durable::PostgresConfig;
use baton::durable::tokio_postgres::NoTls;
use postgres_fleet::{RUNS, Report};

/// What a first run of a host does: every Run handed off, every successor
/// finished, none resumed, all of them retired with the root.
const FIRST: Report = Report {
    handed_off: RUNS,
    finished: RUNS,
    resumed: 0,
    retired: 2 * RUNS,
};

#[test]
fn the_fleet_example_hands_off_twenty_runs_finishes_their_successors_and_retires_its_root() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let config: PostgresConfig = cluster.url(&cluster.database().await).parse().unwrap();
        let first = postgres_fleet::host(config.clone(), NoTls, "a").await;
        assert_eq!(first.map_err(|e| e.to_string()), Ok(FIRST));
        let again = postgres_fleet::host(config, NoTls, "a").await;
        assert_eq!(
            again.map_err(|e| e.to_string()),
            Ok(Report::default()),
            "R6, R9: the same Runs again are retired: none handed off, finished or resumed"
        );
    });
}

#[test]
fn the_fleet_example_runs_over_tls_trusting_the_servers_ca_alone() {
    let Some(cluster) = Cluster::shared_tls() else {
        return;
    };
    runtime().block_on(async {
        let ca = std::env::temp_dir().join(format!("baton-example-ca-{}.pem", std::process::id()));
        std::fs::write(&ca, cluster.ca_pem().expect("the TLS cluster's CA")).unwrap();
        let tls = postgres_fleet::rustls_trusting(ca.to_str().unwrap()).expect("the CA reads");
        let url = format!("{} sslmode=require", cluster.url(&cluster.database().await));
        let report = postgres_fleet::host(url.parse().unwrap(), tls, "tls").await;
        std::fs::remove_file(&ca).unwrap();
        assert_eq!(report.map_err(|e| e.to_string()), Ok(FIRST));
    });
}
