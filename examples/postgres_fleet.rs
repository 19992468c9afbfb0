//! One host of a fleet on a shared PostgreSQL log: the deploy step that
//! migrates, then the process's one log (a pool, TLS when a CA is given),
//! shared by its Runs, and what each error tells the caller to do.
//!
//! ```text
//! BATON_PG_URL="host=... user=... dbname=..." \
//!     cargo run --example postgres_fleet --features postgres
//! ```
//!
//! With `BATON_PG_CA=/path/ca.pem` the log connects over TLS (rustls,
//! tokio-postgres-rustls), trusting that CA alone; add `sslmode=require` to
//! the URL so a server without TLS is refused, never used in plaintext.
//! `scripts/postgres` starts a throwaway server and prints a URL. Without
//! `BATON_PG_URL` the example says how to run it and exits.

use std::sync::Arc;
use std::time::Duration;

use baton::durable::tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use baton::durable::tokio_postgres::{NoTls, Socket};
use baton::durable::{
    AsyncHandoffLog, Claim, LogError, PostgresConfig, PostgresLog, PostgresOptions, PostgresSchema,
};
use baton::facts::{CompactionBudget, Digest, HandoffTools, REPLAY_VERSION, ReplayEvidence};
use baton::{HandoffExecution, HandoffIntent, HandoffPause, Invocation};

type Log = PostgresLog<HandoffExecution>;

fn pause(run: &str) -> HandoffPause<HandoffExecution> {
    let digest = |c: char| Digest::parse(format!("sha256:{}", c.to_string().repeat(64)));
    let digest = |c| digest(c).expect("64 hex digits");
    let execution = HandoffExecution {
        replay: ReplayEvidence {
            version: REPLAY_VERSION,
            digest: digest('a'),
            route_identity: digest('b'),
        },
        tools: HandoffTools {
            catalog_digest: digest('c'),
            loaded: vec!["shell".into()],
        },
        compaction: CompactionBudget::Available,
        main_output_limit: None,
        supports_vision: false,
        replay_base: None,
    };
    let intent = HandoffIntent {
        handoff_id: format!("{run}-handoff"),
        host_epoch: "host-1".into(),
        root_run_id: "root".into(),
        successor_run_id: format!("{run}-next"),
        successor_invocation_id: format!("{run}-next-invocation"),
        claim_id: "claim".into(),
    };
    HandoffPause::new(intent, execution)
}

/// What a caller does with each error of the log.
fn advice(error: &LogError) -> &'static str {
    match error {
        LogError::Fenced { .. } => "a newer owner holds the Run: stop this worker",
        LogError::Unavailable(_) => "nothing was written: send the same operation again",
        LogError::OutcomeUnknown(_) => {
            "maybe written: read the facts, or append the identical pause again"
        }
        _ => "the log's answer: nothing was written",
    }
}

/// The rustls connector trusting the CA certificates in the PEM file `ca`.
pub fn rustls_trusting(
    ca: &str,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, Box<dyn std::error::Error>> {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in rustls::pki_types::pem::PemObject::pem_file_iter(ca)? {
        roots.add(certificate?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Ok(url) = std::env::var("BATON_PG_URL") else {
        println!(
            "set BATON_PG_URL to a PostgreSQL connection string (scripts/postgres prints one)"
        );
        return Ok(());
    };
    let config: PostgresConfig = url.parse()?;
    match std::env::var("BATON_PG_CA") {
        Ok(ca) => host(config, rustls_trusting(&ca)?).await?,
        Err(_) => host(config, NoTls).await?,
    };
    Ok(())
}

/// The deploy step, then one host's Runs through its one log, every
/// connection made with `tls`; answers how many Runs it handed off.
/// (`tests/log_contract/postgres_example.rs` runs it on the tests' own
/// servers, plain and over TLS.)
pub async fn host<T>(config: PostgresConfig, tls: T) -> Result<usize, Box<dyn std::error::Error>>
where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + Sync,
    T::TlsConnect: Send + Sync,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    // The deploy step, once, with a role that may run DDL (here the same).
    let (admin, connection) = config.connect(tls.clone()).await?;
    tokio::spawn(connection);
    PostgresSchema::named("baton_example")?
        .migrate(&admin)
        .await?;
    println!("migrated schema baton_example");

    // The process's one log, shared by its Runs.
    let options = PostgresOptions::new()
        .schema(PostgresSchema::named("baton_example")?)
        .pool_size(8)
        .timeout(Duration::from_secs(5));
    let log: Arc<Log> = Arc::new(PostgresLog::connect_with(config, tls, options).await?);
    let host = format!("{}", std::process::id());
    // Twenty Runs of this host at once, through its one log.
    let runs: Vec<_> = (0..20)
        .map(|i| {
            let (log, run) = (Arc::clone(&log), format!("run-{host}-{i}"));
            tokio::spawn(async move {
                let Claim::Owner(epoch) = log.claim_async("root", &run).await? else {
                    return Ok::<_, LogError>(false); // handed off: never resume it
                };
                let source = Invocation {
                    session_id: "session".into(),
                    turn_id: "turn".into(),
                    run_id: run.clone(),
                    invocation_id: format!("{run}-invocation"),
                };
                let _receipt = log
                    .append_async("root", &source, epoch, &pause(&run))
                    .await?;
                Ok(true)
            })
        })
        .collect();
    let mut handed_off = 0;
    for run in runs {
        match run.await? {
            Ok(true) => handed_off += 1,
            Ok(false) => {}
            Err(error) => println!("{error}: {}", advice(&error)),
        }
    }
    println!("{handed_off} Runs handed off through one log ({log:?})");
    let again = log.claim_async("root", &format!("run-{host}-0")).await?;
    println!(
        "claimed again, run-{host}-0 is {}",
        match again {
            Claim::HandedOff(_) => "handed off: never resumed",
            Claim::Finished(_) | Claim::Retired => "finished or retired (not expected)",
            Claim::Owner(_) => "open (not expected)",
        }
    );
    Ok(handed_off)
}
