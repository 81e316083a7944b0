//! A connection to a 2026-07-28 server at the other end of an in-process byte stream:
//! the benchmarks' connection (see `bench_support`), which runs every part of a local
//! server's connection (its framing, the splice of sandbox states, the watch of its
//! end) but the process, so that what they measure is the runtime's own work.

use std::sync::Mutex;

use rmcp::{ClientLifecycleMode, ClientServiceExt, model::ProtocolVersion};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use super::{Client, Connection, LISTEN_WAIT, liveness};
use crate::{
    host::HostHandlers,
    transport::{
        error::StartupError,
        framing::StdioTransport,
        splice::{Splicer, SplicingWriter},
    },
};

impl Connection {
    /// Starts the protocol with the 2026-07-28 server `server` at the other end of
    /// `stream` (`server/discover`), as with a local server of that era.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the stream.
    pub(crate) async fn in_process(
        server: &str,
        stream: tokio::io::DuplexStream,
        host: &HostHandlers,
    ) -> Result<Self, StartupError> {
        let client = Client::new(server, host);
        let tools_changed = client.tools_changed.clone();
        let answers = client.answers.clone();
        let held = client.held.clone();
        let splicer = Splicer::new();
        let (read, write) = tokio::io::split(stream);
        let transport = StdioTransport::new(
            server,
            read,
            SplicingWriter::new(write, splicer.clone()),
            crate::config::DEFAULT_MAX_MESSAGE_BYTES,
        );
        let ended = CancellationToken::new();
        let transport = liveness::Watched::new(transport, ended.clone());
        let transport = client.tap(transport);
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let service = client
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|error| StartupError::Handshake {
                source: super::failure::from_initialize(error),
                stderr_tail: Vec::new(),
            })?;
        service
            .peer()
            .set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
            .await;
        let connection = Self {
            cancellations: super::cancellation::Cancellations::new(service.peer().clone()),
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            splicer,
            pid: None,
            may_offer_launcher: true,
            process: Mutex::new(None),
            tools_changed,
            answers,
            ended,
            streams: None,
            closed: OnceCell::new(),
            legacy_sse: false,
            oauth: false,
            subscriptions: super::subscriptions::Subscriptions::default(),
            held,
            _credentials: Vec::new(),
        };
        connection.hold_announced_lists(true);
        connection.listen(LISTEN_WAIT).await;
        Ok(connection)
    }
}
