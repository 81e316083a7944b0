//! A proxy that does nothing else, on rmcp: `rmcp-proxy COMMAND [ARGS…]` starts
//! COMMAND as a stdio MCP server and serves its tools on stdio, each `tools/list`
//! and `tools/call` passed through as it is. No catalog, no naming, no timeouts, no
//! progress: the floor of what a gateway on rmcp adds to a call (bench/compare,
//! scenario g).

use rmcp::{
    ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig,
    },
    service::{Peer, RequestContext},
    transport::TokioChildProcess,
};

/// The handler: the upstream server's peer.
#[derive(Clone)]
struct Proxy {
    upstream: Peer<RoleClient>,
}

/// The upstream's failure, as the client is told it.
fn failed(error: rmcp::ServiceError) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-proxy", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream.list_tools(request).await.map_err(failed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.upstream
            .call_tool(request)
            .await
            .map(CallToolResponse::from)
            .map_err(failed)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let program = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: rmcp-proxy COMMAND [ARGS…]"))?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let upstream = ().serve(TokioChildProcess::new(command)?).await?;
    let proxy = Proxy {
        upstream: upstream.peer().clone(),
    };
    let served = proxy.serve(rmcp::transport::stdio()).await?;
    served.waiting().await?;
    upstream.cancel().await?;
    Ok(())
}
