//! The runtime served as one MCP server: every configured server's tools behind one
//! `tools/list`, under the names `mcp-runtime tools` prints, and each `tools/call`
//! routed to its server.
//!
//! [`Gateway`] is rmcp's [`ServerHandler`] over a [`Runtime`]: a host serves it over
//! any rmcp transport, and `mcp-runtime serve` serves it to one client on stdio.
//!
//! Invariants:
//! 1. `tools/list` answers the runtime's catalog as it is when asked: every tool
//!    under its qualified name, in qualified-name order, with its definition as its
//!    server listed it (the fields rmcp models). The servers' `enabled_tools` and
//!    `disabled_tools` apply, as they do to the catalog.
//! 2. A call goes to the tool's server with that server's `tool_timeout_sec`. A name
//!    the catalog does not hold is refused as invalid params, naming the nearest
//!    name. A call the runtime cannot complete (its server failed to start, timed
//!    out, or was lost) is answered as a tool error (`isError`) whose text is the
//!    runtime's message, credentials masked: the model reads why, and the other
//!    servers go on serving.
//! 3. The client's cancellation of a call reaches the upstream server: the gateway
//!    stops waiting for the call, and the runtime sends the server
//!    `notifications/cancelled` for it.
//! 4. Every change of the catalog (a server that joins late, restarts, or announces
//!    new tools) reaches a handshake-era client as `notifications/tools/list_changed`,
//!    for as long as the gateway serves it. (A 2026-07-28 client's listen stream is
//!    not served yet.)
//! 5. Nothing of the client's request but the tool's name and arguments goes
//!    upstream: its `_meta` (protocol keys, progress token) is the client's
//!    connection's, not the upstream's.
//! 6. Resources keep their URIs: `resources/list` and `resources/templates/list` are
//!    every running server's, in server-name order (a server whose list fails is
//!    left out and logged), and `resources/read` goes to the one server that lists
//!    the URI or a template it could come from. A URI no server lists is refused as
//!    not found, one two servers list as invalid params.
//! 7. A call whose client asked for progress (a `progressToken`) gets the upstream
//!    server's progress reports under that token, in the server's order, all of
//!    them before the call's result.

#![deny(missing_docs)]

use std::sync::{Arc, Mutex};

use mcp_runtime::{CallError, CallOptions, FeatureError, OnProgress, Progress, Runtime};
use rmcp::{
    ErrorData, Peer, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ProgressNotificationParam, ProgressToken, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, ResultType, ServerCapabilities, ServerConfig, Tool,
    },
    service::{NotificationContext, RequestContext},
};
use tokio_util::task::AbortOnDropHandle;

/// The runtime as one MCP server (see the crate docs).
#[derive(Clone)]
pub struct Gateway {
    runtime: Arc<Runtime>,
    /// Sends the client `notifications/tools/list_changed` at each change of the
    /// catalog, once the client is initialized (invariant 4); ends with the gateway.
    announcer: Arc<Mutex<Option<AbortOnDropHandle<()>>>>,
}

impl Gateway {
    /// A gateway serving `runtime`'s servers.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Self {
            runtime,
            announcer: Arc::default(),
        }
    }

    /// The runtime served.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The tools of the catalog, each under its qualified name (invariant 1).
    fn tools(&self) -> Vec<Tool> {
        let catalog = self.runtime.catalog();
        catalog
            .tools()
            .map(|tool| {
                let mut listed = Tool::clone(&tool.tool);
                listed.name = tool.qualified_name.to_string().into();
                listed
            })
            .collect()
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .build();
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "mcp-runtime",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut catalog = self.runtime.subscribe_catalog();
        let peer = context.peer;
        let announcer = tokio::spawn(async move {
            catalog.borrow_and_update();
            while catalog.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    // The client is gone.
                    return;
                }
            }
        });
        *self
            .announcer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) =
            Some(AbortOnDropHandle::new(announcer));
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let listed = self.runtime.resources().await;
        log_failures(&listed.failures);
        Ok(ListResourcesResult::with_all_items(
            listed
                .resources
                .into_iter()
                .map(|entry| entry.resource)
                .collect(),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let listed = self.runtime.resources().await;
        log_failures(&listed.failures);
        Ok(ListResourceTemplatesResult::with_all_items(
            listed
                .templates
                .into_iter()
                .map(|entry| entry.template)
                .collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let read = self
            .runtime
            .read_resource(&request.uri, None)
            .await
            .map_err(|error| {
                let message = mcp_runtime::error::chain(&error);
                match error {
                    FeatureError::NotFound { .. } => ErrorData::resource_not_found(message, None),
                    FeatureError::Ambiguous { .. } => ErrorData::invalid_params(message, None),
                    _ => ErrorData::internal_error(message, None),
                }
            })?;
        serde_json::from_value::<ReadResourceResult>(serde_json::Value::Object(read.into_object()))
            .map(|mut result| {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                ReadResourceResponse::from(result)
            })
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("the server's resource cannot be passed on: {error}"),
                    None,
                )
            })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut options = CallOptions::new();
        let mut forwarder = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (reports, received) = tokio::sync::mpsc::unbounded_channel();
            options = options.with_progress(OnProgress::new(move |report| {
                // The receiver lives until the call has ended.
                let _ = reports.send(report);
            }));
            let peer = context.peer.clone();
            forwarder = Some(AbortOnDropHandle::new(tokio::spawn(forward_progress(
                peer, token, received,
            ))));
        }
        let call = self
            .runtime
            .call_tool_with(&request.name, request.arguments, options);
        // rmcp cancels the token when the client cancels the call, but does not stop
        // the handler: dropping the call here is what reaches the server (invariant 3).
        let result = tokio::select! {
            result = call => result,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the client cancelled the call", None));
            }
        };
        // The call and its progress callback are gone: the forwarder sends what is
        // left and ends, before the result goes out (invariant 7).
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        match result {
            Ok(result) => serde_json::from_value::<CallToolResult>(serde_json::Value::Object(
                result.into_object(),
            ))
            .map(|mut result| {
                // A handshake-era server's result has no `resultType`, which a
                // 2026-07-28 client requires; a complete result is what it is.
                result.result_type.get_or_insert(ResultType::COMPLETE);
                CallToolResponse::from(result)
            })
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("the server's result cannot be passed on: {error}"),
                    None,
                )
            }),
            Err(error @ CallError::UnknownTool { .. }) => Err(ErrorData::invalid_params(
                mcp_runtime::error::chain(&error),
                None,
            )),
            Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(
                mcp_runtime::error::chain(&error),
            )])
            .into()),
        }
    }
}

/// Logs the servers whose lists failed: the client gets the others' (invariant 6).
fn log_failures(failures: &[FeatureError]) {
    for failure in failures {
        tracing::warn!(error = %mcp_runtime::error::chain(failure), "a server's list is left out");
    }
}

/// Sends the client each of a call's progress `reports` under its own `token`, until
/// the call has ended (invariant 7).
async fn forward_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut reports: tokio::sync::mpsc::UnboundedReceiver<Progress>,
) {
    while let Some(report) = reports.recv().await {
        let mut notification = ProgressNotificationParam::new(token.clone(), report.progress);
        notification.total = report.total;
        notification.message = report.message;
        if peer.notify_progress(notification).await.is_err() {
            // The client is gone.
            return;
        }
    }
}
