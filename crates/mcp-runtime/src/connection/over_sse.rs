//! Starting the protocol with a legacy HTTP+SSE server (protocol revision 2024-11-05).
//!
//! Reached when a server is configured with `transport = "sse"`, and when a
//! Streamable HTTP `url` turns out to be a legacy server. The handshake is the same
//! `initialize` as over the other transports, and the version answered is checked
//! here, whichever way the server was reached.

use std::sync::Arc;

use rmcp::{RoleClient, ServiceExt, service::RunningService};
use tokio_util::sync::CancellationToken;

use super::{
    Client, failure, liveness,
    over_http::Endpoint,
    version_gate::{Accepted, Gate},
};
use crate::transport::{error::StartupError, http, splice::Splicer, sse};

/// Opens the event stream of the legacy HTTP+SSE server at `resolved`, waits for its
/// message endpoint and runs the handshake through `endpoint`, whose OAuth login's
/// token, if it has one, every request carries. `ended` is cancelled when the connection
/// ends; the [`http::Streams`] returned say why, when the event stream broke.
///
/// # Cancel safety
///
/// Dropping the future drops the event stream, which ends the session.
pub(super) async fn start(
    server: &str,
    resolved: &http::ResolvedHttp,
    client: Client,
    splicer: &Splicer,
    ended: &CancellationToken,
    accepted: Accepted,
    endpoint: Endpoint,
) -> Result<(RunningService<RoleClient, Client>, Arc<http::Streams>), StartupError> {
    let Endpoint { http, oauth } = endpoint;
    let transport = sse::connect(server, resolved, http, splicer.clone(), oauth).await?;
    let streams = transport.streams();
    let (transport, refusal) = Gate::new(
        liveness::Watched::new(transport, ended.clone()),
        server,
        accepted,
    );
    let transport = client.tap(transport);
    // Dropping the transport ends the connection.
    let service = client.serve(transport).await.map_err(|error| {
        refusal.take().unwrap_or_else(|| StartupError::Handshake {
            source: failure::from_initialize(error),
            stderr_tail: Vec::new(),
        })
    })?;
    Ok((service, streams))
}
