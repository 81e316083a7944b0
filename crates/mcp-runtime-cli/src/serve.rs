//! `mcp-runtime serve`: the configured servers served as one MCP server
//! ([`mcp_runtime_serve::Gateway`]) to one client on stdin and stdout, until stdin
//! closes; then every server the runtime started is shut down.

use std::sync::Arc;

use anyhow::Context;
use mcp_runtime::Runtime;
use mcp_runtime_serve::Gateway;
use rmcp::{ServiceExt, service::ServerInitializeError};

/// Serves `runtime` on stdio until the client closes stdin, then shuts it down.
///
/// # Cancel safety
///
/// Dropping the future drops the runtime, which ends every server process it started.
pub async fn stdio(runtime: Runtime) -> anyhow::Result<()> {
    let runtime = Arc::new(runtime);
    let served = Gateway::new(runtime.clone())
        .serve(rmcp::transport::stdio())
        .await;
    let ended = match served {
        Ok(running) => running
            .waiting()
            .await
            .map(drop)
            .context("serving the client"),
        // stdin closed before `initialize`: nobody to serve.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(error) => Err(error).context("the client's handshake failed"),
    };
    // The service and its handler are gone: the runtime is this function's again.
    match Arc::try_unwrap(runtime) {
        Ok(runtime) => runtime.shutdown().await,
        Err(_) => tracing::warn!("the runtime is still shared; its servers end when it is dropped"),
    }
    ended
}
