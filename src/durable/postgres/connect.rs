//! Making the pool's connections: TLS, and the runtime they need.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::{Host, LoadBalanceHosts, SslMode};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, Config as PostgresConfig, Connection, NoTls, Socket};

use crate::durable::contract::LogError;

use super::failure::unavailable;

/// Opens the pool's connections: with the TLS connector the user chose,
/// each driven by a task of the current tokio runtime.
pub(super) struct Connector<T> {
    pub(super) tls: T,
}

impl<T> deadpool_postgres::Connect for Connector<T>
where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + Sync,
    T::TlsConnect: Send + Sync,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    fn connect(
        &self,
        config: &PostgresConfig,
    ) -> Pin<
        Box<
            dyn Future<
                    Output = Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>,
                > + Send
                + '_,
        >,
    > {
        let tls = self.tls.clone();
        let config = config.clone();
        Box::pin(async move {
            let connected = connect_to_each_host(&config, tls).await;
            let (client, connection) = match connected {
                Ok(connected) => connected,
                Err(error) => {
                    store_event!(warn, error = %error, "connect failed");
                    return Err(error);
                }
            };
            store_event!(debug, "connected");
            // The task ends when the connection does (closed by either
            // side, or the client dropped); its error is the client's
            // next error.
            let task = tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok((client, task))
        })
    }
}

/// Connects as `config` says, each host in turn within its
/// `connect_timeout`, as libpq does. tokio-postgres bounds only a host's
/// TCP connect by it, and then waits for the server's answer without a
/// bound: a server that accepts the connection and answers nothing (its
/// processes paused, SIGSTOP, or hung) would hold every new connection of
/// a multi-host config forever, and a log given a primary and its standby
/// would never reach the promoted standby (docs/guide/ha.md). With one
/// host, no `connect_timeout`, or `load_balance_hosts=random` (whose
/// order is tokio-postgres's to draw), the whole config goes to
/// tokio-postgres as it is.
async fn connect_to_each_host<T>(
    config: &PostgresConfig,
    tls: T,
) -> Result<(Client, Connection<Socket, T::Stream>), tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket> + Clone,
{
    let hosts = config.get_hosts().len().max(config.get_hostaddrs().len());
    let timeout = config.get_connect_timeout().copied();
    let (Some(timeout), true, LoadBalanceHosts::Disable) =
        (timeout, hosts > 1, config.get_load_balance_hosts())
    else {
        return config.connect(tls).await;
    };
    let mut last = None;
    for i in 0..hosts {
        let one = one_host(config, i);
        match tokio::time::timeout(timeout, one.connect(tls.clone())).await {
            Ok(Ok(connected)) => return Ok(connected),
            Ok(Err(error)) => last = Some(error),
            Err(_) => {
                store_event!(warn, host = i, "no answer within connect_timeout");
                last = Some(silent(i, timeout).await);
            }
        }
    }
    Err(last.expect("at least two hosts were tried"))
}

/// tokio-postgres's error for the `i`-th host, silent past `timeout`: an
/// I/O error of the connection (tokio-postgres makes its errors itself, so
/// the connection it is made on is one that fails at once with it).
async fn silent(i: usize, timeout: Duration) -> tokio_postgres::Error {
    let mut nowhere = PostgresConfig::new();
    nowhere.ssl_mode(SslMode::Disable);
    let stream = Failing(format!(
        "host {} of the config answered nothing within its connect_timeout ({timeout:?})",
        i + 1
    ));
    match nowhere.connect_raw(stream, NoTls).await {
        Err(error) => error,
        Ok(_) => unreachable!("a connection whose every write fails cannot start"),
    }
}

/// A connection whose every read and write fails with a time-out saying
/// why ([`silent`]).
struct Failing(String);

impl Failing {
    fn error(&self) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, self.0.clone())
    }
}

impl AsyncRead for Failing {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Poll::Ready(Err(self.error()))
    }
}

impl AsyncWrite for Failing {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Err(self.error()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Err(self.error()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Err(self.error()))
    }
}

/// `config` with its `i`-th host alone (its host, its hostaddr and its
/// port: the `i`-th, or the one port every host shares), every other
/// setting as it is.
fn one_host(config: &PostgresConfig, i: usize) -> PostgresConfig {
    let mut one = PostgresConfig::new();
    if let Some(user) = config.get_user() {
        one.user(user);
    }
    if let Some(password) = config.get_password() {
        one.password(password);
    }
    if let Some(dbname) = config.get_dbname() {
        one.dbname(dbname);
    }
    if let Some(options) = config.get_options() {
        one.options(options);
    }
    if let Some(name) = config.get_application_name() {
        one.application_name(name);
    }
    one.ssl_mode(config.get_ssl_mode())
        .ssl_negotiation(config.get_ssl_negotiation())
        .keepalives(config.get_keepalives())
        .keepalives_idle(config.get_keepalives_idle())
        .target_session_attrs(config.get_target_session_attrs())
        .channel_binding(config.get_channel_binding())
        .load_balance_hosts(config.get_load_balance_hosts());
    if let Some(timeout) = config.get_connect_timeout() {
        one.connect_timeout(*timeout);
    }
    if let Some(timeout) = config.get_tcp_user_timeout() {
        one.tcp_user_timeout(*timeout);
    }
    if let Some(interval) = config.get_keepalives_interval() {
        one.keepalives_interval(interval);
    }
    if let Some(retries) = config.get_keepalives_retries() {
        one.keepalives_retries(retries);
    }
    match config.get_hosts().get(i) {
        Some(Host::Tcp(host)) => {
            one.host(host);
        }
        #[cfg(unix)]
        Some(Host::Unix(path)) => {
            one.host_path(path);
        }
        None => {}
    }
    if let Some(addr) = config.get_hostaddrs().get(i) {
        one.hostaddr(*addr);
    }
    let ports = config.get_ports();
    if let Some(port) = ports.get(i).or(ports.first()) {
        one.port(*port);
    }
    one
}

/// tokio's timers and sockets panic outside a tokio runtime: answer
/// [`LogError::Unavailable`] instead.
pub(super) fn in_runtime() -> Result<(), LogError> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(|error| unavailable(format!("a PostgresLog needs a tokio runtime: {error}")))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{PostgresConfig, one_host, silent};

    fn parse(conninfo: &str) -> PostgresConfig {
        conninfo.parse().unwrap()
    }

    /// Every setting the config may carry, beside its hosts.
    const SETTINGS: &str = "user=u password=p dbname=d options=-c\\ x=1 application_name=a \
         sslmode=require connect_timeout=3 tcp_user_timeout=4 keepalives=0 \
         keepalives_idle=5 keepalives_interval=6 keepalives_retries=7 \
         target_session_attrs=read-write channel_binding=require";

    /// A host alone keeps every other setting: it is the config that names
    /// that host alone (compared whole, through `Debug`).
    #[test]
    fn one_host_keeps_every_setting_and_takes_its_own_host_and_port() {
        let both = parse(&format!(
            "host=a,b hostaddr=10.0.0.1,10.0.0.2 port=1,2 {SETTINGS}"
        ));
        for (i, (host, addr, port)) in [("a", "10.0.0.1", 1), ("b", "10.0.0.2", 2)]
            .into_iter()
            .enumerate()
        {
            let alone = parse(&format!(
                "host={host} hostaddr={addr} port={port} {SETTINGS}"
            ));
            assert_eq!(format!("{:?}", one_host(&both, i)), format!("{alone:?}"));
        }
        // One port shared by every host.
        let shared = parse(&format!("host=a,b port=7 {SETTINGS}"));
        let alone = parse(&format!("host=b port=7 {SETTINGS}"));
        assert_eq!(format!("{:?}", one_host(&shared, 1)), format!("{alone:?}"));
    }

    #[tokio::test]
    async fn a_silent_host_is_an_io_error_naming_it_and_its_timeout() {
        let error = silent(1, Duration::from_secs(2)).await;
        let chain = format!("{error}: {}", std::error::Error::source(&error).unwrap());
        assert!(
            chain.contains("host 2 of the config answered nothing within its connect_timeout (2s)"),
            "{chain}"
        );
    }
}
