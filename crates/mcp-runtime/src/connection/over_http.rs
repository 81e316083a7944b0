//! Starting the protocol with a Streamable HTTP server.

use rmcp::{RoleClient, ServiceExt, service::RunningService};
use tokio_util::sync::CancellationToken;

use super::{Client, failure, liveness};
use crate::{
    error::StartupError,
    transport::{http, splice::Splicer},
};

/// Reaches the server at `resolved` and runs the handshake. `ended` is cancelled when
/// the connection ends.
pub(super) async fn start(
    server: &str,
    resolved: &http::ResolvedHttp,
    client: Client,
    splicer: &Splicer,
    ended: &CancellationToken,
) -> Result<RunningService<RoleClient, Client>, StartupError> {
    let transport = http::transport(server, resolved, splicer.clone())?;
    client
        .serve(liveness::Watched::new(transport, ended.clone()))
        .await
        .map_err(|error| StartupError::Handshake {
            source: failure::from_initialize(error),
            stderr_tail: Vec::new(),
        })
}
