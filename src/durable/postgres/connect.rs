//! Making the pool's connections: TLS, and the runtime they need.

use std::future::Future;
use std::pin::Pin;

use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, Config as PostgresConfig, Socket};

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
            let connected = config.connect(tls).await;
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

/// tokio's timers and sockets panic outside a tokio runtime: answer
/// [`LogError::Unavailable`] instead.
pub(super) fn in_runtime() -> Result<(), LogError> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(|error| unavailable(format!("a PostgresLog needs a tokio runtime: {error}")))
}
