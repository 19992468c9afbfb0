//! The fleet chapter's program (docs/guide/fleet.md), run: the example
//! `postgres_fleet` — the deploy step that migrates, then one host's twenty
//! Runs handed off through its one log — on the tests' own servers, plain
//! and over TLS trusting the fixture's CA alone. Run twice on one
//! database, the second run finds every Run handed off and resumes none
//! (R6: a handed-off Run is never resumed).

use crate::common::postgres::Cluster;
use crate::postgres_only::runtime;

#[allow(dead_code)] // its `main`, which reads the environment, is not called here
#[path = "../../examples/postgres_fleet.rs"]
mod postgres_fleet;

use baton::durable::PostgresConfig;
use baton::durable::tokio_postgres::NoTls;

#[test]
fn the_fleet_example_hands_off_twenty_runs_and_resumes_none_of_them_again() {
    let Some(cluster) = Cluster::shared() else {
        return;
    };
    runtime().block_on(async {
        let config: PostgresConfig = cluster.url(&cluster.database().await).parse().unwrap();
        let first = postgres_fleet::host(config.clone(), NoTls).await;
        assert_eq!(
            first.map_err(|e| e.to_string()).ok(),
            Some(20),
            "every Run handed off"
        );
        let again = postgres_fleet::host(config, NoTls).await;
        assert_eq!(
            again.map_err(|e| e.to_string()).ok(),
            Some(0),
            "R6: none resumed"
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
        let handed_off = postgres_fleet::host(url.parse().unwrap(), tls).await;
        std::fs::remove_file(&ca).unwrap();
        assert_eq!(handed_off.map_err(|e| e.to_string()).ok(), Some(20));
    });
}
