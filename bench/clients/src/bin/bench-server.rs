//! A minimal rmcp stdio server that does nothing else: `--tools N` tools named
//! `tool_0` … `tool_{N-1}`, each with a tiny input schema, whose call answers a short
//! text at once. No delays, no pagination, no logging: what the benchmarks measure
//! is the client, so the server should cost as little as a real one can.
//!
//! With `--list-log FILE` it appends a line to FILE for each `tools/list` it answers,
//! so that a benchmark can count the listings a burst of startups asked for, across
//! every process (bench/compare, scenario j).

use std::{io::Write, path::PathBuf, sync::Arc};

use clap::Parser;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
        Tool,
    },
    service::RequestContext,
};
use serde_json::json;

/// The command line.
#[derive(Parser)]
struct Args {
    /// How many tools to offer.
    #[arg(long, default_value_t = 20)]
    tools: usize,
    /// Append `tools/list` and a newline to this file for each `tools/list` answered.
    #[arg(long)]
    list_log: Option<PathBuf>,
}

/// The handler: the tool list, built once, and where to log each listing.
#[derive(Clone)]
struct BenchServer {
    tools: Arc<Vec<Tool>>,
    list_log: Option<Arc<PathBuf>>,
}

impl BenchServer {
    fn new(count: usize, list_log: Option<PathBuf>) -> Self {
        let schema: Arc<JsonObject> = Arc::new(
            json!({ "type": "object", "properties": { "x": { "type": "integer" } } })
                .as_object()
                .cloned()
                .expect("an object"),
        );
        let tools = (0..count)
            .map(|i| Tool::new(format!("tool_{i}"), "A benchmark tool", schema.clone()))
            .collect();
        Self {
            tools: Arc::new(tools),
            list_log: list_log.map(Arc::new),
        }
    }
}

impl ServerHandler for BenchServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("bench-server", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if let Some(path) = &self.list_log {
            // One `write` of a short line to a file opened for appending: the lines of
            // many processes do not interleave.
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path.as_path())
                .and_then(|mut file| file.write_all(b"tools/list\n"))
                .map_err(|error| {
                    ErrorData::internal_error(
                        format!("cannot append to `{}`: {error}", path.display()),
                        None,
                    )
                })?;
        }
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let known = request
            .name
            .strip_prefix("tool_")
            .and_then(|index| index.parse::<usize>().ok())
            .is_some_and(|index| index < self.tools.len());
        if !known {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let server = BenchServer::new(args.tools, args.list_log)
        .serve(rmcp::transport::stdio())
        .await?;
    server.waiting().await?;
    Ok(())
}
