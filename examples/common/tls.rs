//! The TLS connector both PostgreSQL examples use (`postgres_fleet`,
//! `postgres_runtime`), included by path: a directory of examples without
//! a `main.rs` is no example of its own.

use std::sync::Arc;

/// The rustls connector trusting the CA certificates in the PEM file `ca`
/// alone (ring provider; tokio-postgres-rustls 0.14, rustls 0.23).
pub fn rustls_trusting(
    ca: &str,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, Box<dyn std::error::Error + Send + Sync>> {
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
