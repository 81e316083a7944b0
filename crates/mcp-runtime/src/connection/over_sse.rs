//! Starting the protocol with a legacy HTTP+SSE server (protocol revision 2024-11-05).
//!
//! Not yet written: reaching such a server fails with
//! [`StartupError::LegacySseUnsupported`].

#![allow(dead_code)]

use rmcp::{RoleClient, service::RunningService};
use tokio_util::sync::CancellationToken;

use super::Client;
use crate::{
    error::StartupError,
    transport::{http, splice::Splicer},
};

/// Reaches the legacy HTTP+SSE server at `resolved` and runs the handshake.
pub(super) async fn start(
    _server: &str,
    _resolved: &http::ResolvedHttp,
    _client: Client,
    _splicer: &Splicer,
    _ended: &CancellationToken,
) -> Result<RunningService<RoleClient, Client>, StartupError> {
    Err(StartupError::LegacySseUnsupported)
}
