//! A runtime of one server reached through an in-process stream: the benchmarks'
//! runtime (see `bench_support`). Its calls take the path of every call (routing,
//! the server's connection, the call itself, the check of the result); only its
//! start differs, made here from a connection already started.

use std::{
    collections::BTreeMap,
    sync::{Arc, atomic::AtomicUsize},
    time::Duration,
};

use super::{Runtime, Server, Shared, startup};
use crate::{
    binding::Binding, config::ServerConfig, connection::Connection, transport::error::StartupError,
};

impl Runtime {
    /// A runtime of the one 2026-07-28 server `server` at the other end of `stream`,
    /// its tools listed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the stream.
    pub(crate) async fn in_process(
        server: &str,
        stream: tokio::io::DuplexStream,
    ) -> Result<Self, StartupError> {
        let config = ServerConfig::stdio(server, "in-process", Vec::new());
        let shared = Shared::new(
            BTreeMap::from([(server.to_owned(), Server::new(config.clone()))]),
            BTreeMap::new(),
            &[],
        );
        let connection = Connection::in_process(server, stream, &shared.host).await?;
        let listing = connection
            .list_tools(&config, &AtomicUsize::new(0))
            .await
            .map_err(StartupError::ListTools)?;
        let shared = Arc::new(shared);
        shared.install(startup::Outcome {
            config,
            elapsed: Duration::ZERO,
            tools_list_requests: 1,
            served_from_cache: false,
            listing_keys: None,
            binding: Some(Binding::Local),
            login: None,
            result: Ok(startup::Started {
                connection,
                tools: Arc::new(listing.tools),
            }),
        });
        Ok(Self {
            shared,
            _startups: None,
        })
    }
}
