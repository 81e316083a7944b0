//! One `tools/call` through the runtime, against an rmcp server in this process, at
//! the other end of an in-memory stream: no process, no pipe, no network, so what it
//! measures is the runtime's own work on a call (routing, the connection's framing,
//! the request and its answer, the check of the result). Beside it, the same call
//! made by a plain rmcp client over the same kind of stream, on 2026-07-28 too: the
//! difference is what the runtime adds.
//!
//! It also prints the size of a call's future (what a task that makes a call holds).
//!
//! Run with `cargo bench -p mcp-runtime --bench call`.

use std::{hint::black_box, sync::Arc, time::Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use mcp_runtime::{
    CallOptions, bench_support,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ContentBlock,
        Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
        ServerCapabilities, ServerConfig, Tool,
    },
};
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, ErrorData, RoleServer, ServerHandler, ServiceExt,
    service::RequestContext,
};
use serde_json::json;

/// A server that answers a short text at once: the server should cost as little as
/// one can (as `bench/clients`' bench-server).
#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
}

impl Echo {
    fn new() -> Self {
        let schema: Arc<JsonObject> = Arc::new(
            json!({ "type": "object", "properties": { "x": { "type": "integer" } } })
                .as_object()
                .cloned()
                .expect("an object"),
        );
        Self {
            tools: Arc::new(vec![Tool::new("tool_0", "A benchmark tool", schema)]),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("echo", "0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into())
    }
}

/// The other end of a new stream, with the server serving this end.
fn serve_echo() -> tokio::io::DuplexStream {
    let (client, server) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = Echo::new().serve(tokio::io::split(server)).await {
            let _ = running.waiting().await;
        }
    });
    client
}

fn arguments() -> JsonObject {
    let mut arguments = JsonObject::new();
    arguments.insert("x".to_owned(), json!(1));
    arguments
}

fn call(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let mut group = c.benchmark_group("tools_call");

    let mcp = runtime.block_on(async {
        bench_support::in_process_runtime("echo", serve_echo())
            .await
            .expect("the in-process server starts")
    });
    {
        let future = mcp.call_tool_with("mcp__echo__tool_0", Some(arguments()), CallOptions::new());
        println!(
            "the future of `Runtime::call_tool_with`: {} bytes",
            std::mem::size_of_val(&future)
        );
    }
    group.bench_function("runtime", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iterations {
                    let result = mcp
                        .call_tool("mcp__echo__tool_0", Some(arguments()))
                        .await
                        .expect("the call succeeds");
                    black_box(result);
                }
                start.elapsed()
            })
        })
    });

    let raw = runtime.block_on(async {
        ClientConfig::default()
            .serve_with_lifecycle(
                tokio::io::split(serve_echo()),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("the in-process server starts")
    });
    group.bench_function("raw_rmcp", |b| {
        b.iter_custom(|iterations| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iterations {
                    let result = raw
                        .call_tool(CallToolRequestParams::new("tool_0").with_arguments(arguments()))
                        .await
                        .expect("the call succeeds");
                    black_box(result);
                }
                start.elapsed()
            })
        })
    });
    group.finish();
    runtime.block_on(async {
        mcp.shutdown().await;
        let _ = raw.cancel().await;
    });
}

criterion_group!(benches, call);
criterion_main!(benches);
