//! A reference server for the official MCP conformance suite's server scenarios,
//! built on rmcp's server side (the `conformance-server` binary).
//!
//! It offers what the scenarios call, under the names they call:
//!
//! - tools with fixed results (text, image, audio, embedded resources, a tool
//!   error, a JSON Schema 2020-12 input schema, an `x-mcp-header` parameter), see
//!   [`catalog`];
//! - tools that report while they run: `test_tool_with_progress` (three progress
//!   reports), `test_tool_with_logging` and `test_logging_tool` (log messages);
//! - tools (and one prompt) that ask the client something first, elicitation,
//!   sampling or roots, see [`asking`]: as `input_required` results to a
//!   2026-07-28 request, as requests of the server's own in a handshake session;
//! - `test_trigger_tool_change` and `test_trigger_prompt_change`, which announce a
//!   changed tool or prompt list on every open `subscriptions/listen` stream that
//!   asked for it (and, in a handshake session, to that session);
//! - resources (`test://static-text`, `test://static-binary`,
//!   `test://watched-resource`, the template `test://template/{id}/data`), prompts,
//!   completion, `logging/setLevel` and, for handshake sessions,
//!   `resources/subscribe`.
//!
//! By default it speaks both eras as rmcp serves them: the handshake revisions
//! (`initialize`, sessions over HTTP) and 2026-07-28 (`server/discover`, every
//! request on its own, `_meta` and header checks, caching hints). rmcp does the
//! protocol checks; this module only answers requests.
//!
//! With [`Conformance::handshake_only`] the server is a pre-2026 one: it supports
//! only the handshake revisions, so rmcp refuses every 2026-07-28 request,
//! `server/discover` included, with `-32022` naming them (the answer SEP-2575 gives
//! a client to fall back to `initialize`), and every question is a request of the
//! server's own. The tools that ask keep their names and answers, so a gateway in
//! front of such a server can offer them to 2026-07-28 clients as `input_required`
//! results.
//!
//! Shared state: every clone of a [`Conformance`] (rmcp makes one per HTTP session
//! and per 2026-07-28 request) holds the same key for request states and the same
//! channel of list changes. Invariants:
//!
//! 1. A request state is sealed and opened with the one key of the process, so a
//!    state sealed for one request is accepted on any later one, by any clone.
//! 2. A list change reaches the `subscriptions/listen` streams open when it is
//!    sent; a stream opened later does not see it.

use std::{borrow::Cow, io::Write as _, sync::Arc};

use anyhow::Context as _;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, InputResponses,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        PaginatedRequestParams, Prompt, PromptMessage, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, Role, ServerCapabilities, ServerConfig, SubscribeRequestParams,
        SubscriptionFilter, Tool, UnsubscribeRequestParams,
    },
    service::{RequestContext, SubscriptionContext},
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use tokio::{net::TcpListener, sync::broadcast};

use self::{
    asking::{Conversation, Round},
    state::Sealer,
};
use crate::http::MCP_PATH;

mod asking;
mod catalog;
mod reporting;
mod state;

/// A list whose change the trigger tools announce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListChange {
    Tools,
    Prompts,
}

/// The conformance server's handler; cheap to clone (see the module docs).
#[derive(Clone, Debug)]
pub struct Conformance {
    handshake_only: bool,
    /// Seals the `requestState` of `input_required` results (invariant 1).
    sealer: Sealer,
    /// List changes, to the open `subscriptions/listen` streams (invariant 2).
    changes: broadcast::Sender<ListChange>,
}

impl Conformance {
    /// A server of both eras.
    pub fn new() -> Self {
        Self {
            handshake_only: false,
            sealer: Sealer::new(),
            changes: broadcast::channel(16).0,
        }
    }

    /// A server of the handshake revisions only (see the module docs).
    pub fn handshake_only() -> Self {
        Self {
            handshake_only: true,
            ..Self::new()
        }
    }

    /// Whether `context` is a request of a handshake revision.
    fn is_handshake(context: &RequestContext<RoleServer>) -> bool {
        context
            .protocol_version()
            .is_none_or(|version| version.as_str() < ProtocolVersion::V_2026_07_28.as_str())
    }

    /// Runs a conversation in the era of the request: to its end in a handshake
    /// session, one round under 2026-07-28.
    async fn converse(
        &self,
        conversation: Conversation,
        input_responses: Option<&InputResponses>,
        request_state: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Round, McpError> {
        let capabilities = context.client_capabilities().unwrap_or_default();
        conversation.check_capabilities(&capabilities)?;
        if Self::is_handshake(context) {
            asking::converse(&conversation, &context.peer, &capabilities)
                .await
                .map(Round::Done)
        } else {
            asking::answer_round(
                &conversation,
                input_responses,
                request_state,
                &capabilities,
                &self.sealer,
            )
        }
    }

    /// Announces a changed list to the open listen streams and, in a handshake
    /// session, to the session.
    async fn trigger(
        &self,
        change: ListChange,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        // No stream may be open: nobody to tell is no failure.
        let _ = self.changes.send(change);
        if Self::is_handshake(context) {
            let sent = match change {
                ListChange::Tools => context.peer.notify_tool_list_changed().await,
                ListChange::Prompts => context.peer.notify_prompt_list_changed().await,
            };
            sent.map_err(|error| McpError::internal_error(error.to_string(), None))?;
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "Mutation triggered",
        )]))
    }
}

impl Default for Conformance {
    fn default() -> Self {
        Self::new()
    }
}

/// The tools, in their listed order.
fn tools() -> Vec<Tool> {
    let described =
        |(name, description)| catalog::tool(name, description, catalog::no_parameters());
    let mut tools: Vec<Tool> = catalog::tools().collect();
    tools.extend(reporting::TOOLS.iter().copied().map(described));
    tools.extend(asking::tools().map(|(name, description)| {
        let schema = match name {
            "test_sampling" => parameter("prompt", "The prompt to send to the LLM"),
            "test_elicitation" => parameter("message", "The message to show the user"),
            _ => catalog::no_parameters(),
        };
        catalog::tool(name, description, schema)
    }));
    tools.extend(
        [
            (
                "test_trigger_tool_change",
                "Announces a changed tool list to the open listen streams",
            ),
            (
                "test_trigger_prompt_change",
                "Announces a changed prompt list to the open listen streams",
            ),
        ]
        .map(described),
    );
    tools
}

/// An input schema with one required string parameter.
fn parameter(name: &str, description: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": { name: { "type": "string", "description": description } },
        "required": [name]
    })
}

impl ServerHandler for Conformance {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_completions()
            .build();
        reporting::declare_logging(&mut capabilities);
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "mcp-runtime-conformance-server",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.handshake_only {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.clone().unwrap_or_default();
        if let Some(result) = catalog::call(&request.name, &arguments) {
            return Ok(result.into());
        }
        if let Some(conversation) = Conversation::tool(&request.name, arguments) {
            let round = self
                .converse(
                    conversation,
                    request.input_responses.as_ref(),
                    request.request_state.as_deref(),
                    &context,
                )
                .await?;
            return Ok(match round {
                Round::Done(text) => CallToolResult::success(vec![ContentBlock::text(text)]).into(),
                Round::InputRequired(result) => result.into(),
            });
        }
        match request.name.as_ref() {
            "test_trigger_tool_change" => self.trigger(ListChange::Tools, &context).await,
            "test_trigger_prompt_change" => self.trigger(ListChange::Prompts, &context).await,
            name => reporting::call(name, &context).await,
        }
        .map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(catalog::resources()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            catalog::resource_templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        catalog::read(&request.uri).map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // The resources never change, so a subscription needs no bookkeeping.
        catalog::read(&request.uri).map(drop)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        catalog::read(&request.uri).map(drop)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut prompts = catalog::prompts();
        prompts.push(Prompt::new(asking::PROMPT.0, Some(asking::PROMPT.1), None));
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let arguments = request.arguments.clone().unwrap_or_default();
        if let Some(result) = catalog::prompt(&request.name, &arguments) {
            return result.map(Into::into);
        }
        let Some(conversation) = Conversation::prompt(&request.name) else {
            return Err(McpError::invalid_params(
                format!("no prompt `{}`", request.name),
                None,
            ));
        };
        let round = self
            .converse(
                conversation,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
                &context,
            )
            .await?;
        Ok(match round {
            Round::Done(text) => {
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).into()
            }
            Round::InputRequired(result) => result.into(),
        })
    }

    #[allow(
        deprecated,
        reason = "rmcp marks logging deprecated (SEP-2577); the suite still sets a level"
    )]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // The logging tools log at `info`, which every client of the suite asks for.
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The resources asked for are taken too, as `resources/subscribe` takes them
        // in a handshake session; none of them ever changes.
        let resources = requested.resource_subscriptions.clone().unwrap_or_default();
        Some(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .prompts_list_changed()
                .resource_subscriptions(resources)
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // rmcp has sent the acknowledgment already; a change sent between it and
        // this subscription is missed (invariant 2), but a client sends its change
        // only after it has read the acknowledgment.
        let mut changes = self.changes.subscribe();
        let accepted = context.accepted().clone();
        loop {
            let change = tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => change,
            };
            let sent = match change {
                Ok(ListChange::Tools) if accepted.tools_list_changed == Some(true) => {
                    context.sink().notify_tool_list_changed().await
                }
                Ok(ListChange::Prompts) if accepted.prompts_list_changed == Some(true) => {
                    context.sink().notify_prompt_list_changed().await
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => Ok(()),
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            if sent.is_err() {
                // The stream is gone: the client stopped listening.
                return Ok(());
            }
        }
    }
}

/// Binds `addr`, prints `listening on http://ADDR/mcp` on stdout, and serves
/// `server` over Streamable HTTP at `/mcp` (404 elsewhere) until the process is
/// killed.
///
/// # Cancel safety
///
/// Dropping the future stops accepting connections; connections already
/// accepted run on in their own tasks.
pub async fn serve_http(server: Conformance, addr: &str) -> anyhow::Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on `{addr}`"))?;
    let local = listener.local_addr()?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{local}{MCP_PATH}")?;
        stdout.flush()?;
    }
    let mcp = Arc::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    ));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                eprintln!("conformance-server: accept failed: {error}");
                continue;
            }
        };
        let mcp = mcp.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let mcp = mcp.clone();
                async move {
                    Ok::<_, std::convert::Infallible>(if request.uri().path() == MCP_PATH {
                        mcp.handle(request).await
                    } else {
                        let mut response = Response::new(Full::new("not found".into()).boxed());
                        *response.status_mut() = StatusCode::NOT_FOUND;
                        response
                    })
                }
            });
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                eprintln!("conformance-server: connection failed: {error}");
            }
        });
    }
}

/// Serves `server` over stdio until the client closes stdin.
///
/// # Cancel safety
///
/// Dropping the future stops serving; requests in flight are dropped.
pub async fn serve_stdio(server: Conformance) -> anyhow::Result<()> {
    server
        .serve(rmcp::transport::stdio())
        .await
        .context("cannot start serving over stdio")?
        .waiting()
        .await
        .context("the stdio server failed")?;
    Ok(())
}
