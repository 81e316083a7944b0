//! The fixture's MCP server handler: its tools, its pagination, and the delays,
//! gates and faults tests ask for.
//!
//! The handler is written against rmcp's [`ServerHandler`] directly (no tool
//! router) because the tool set is decided at run time. Tools are listed in a
//! fixed order: the fixed tools `echo`, `fail`, `env`, `pid`, `add_tool`; then
//! the generated `tool_0` … `tool_{N-1}`; then the named ones; then `ask`, `roots`
//! and `sample` (with [`Behaviour::asks`]); then `task_job` (with
//! [`Behaviour::tasks`]); then `bump` (with [`Behaviour::resources`]); then
//! `future` (with [`Behaviour::future`]); then `padding`
//! (with [`Behaviour::list_padding_bytes`]); then those added by calling
//! `add_tool`, in the order they were added.
//!
//! The tool list is shared state: every clone of a [`Fixture`] (the HTTP
//! server makes one per session) sees the same list. Invariants:
//!
//! 1. The list only grows, at its end: `add_tool` appends and nothing removes
//!    or reorders. A cursor (an offset) from an earlier page therefore stays
//!    valid, and a listing that spans an `add_tool` sees every tool once, the
//!    new one on its last page.
//! 2. Tool names are unique: `add_tool` refuses a name already listed.
//! 3. A page is cut from the list under one lock, so its tools and its next
//!    cursor agree.
//! 4. `add_tool` sends `notifications/tools/list_changed` only after the tool
//!    is in the list, so a client that lists on the notification sees it.

use std::{
    borrow::Cow,
    path::PathBuf,
    sync::{Arc, RwLock},
    time::Duration,
};

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        DiscoverRequestMethod, DiscoverResult, ExperimentalCapabilities, Implementation,
        InitializeRequestParams, InitializeResult, InitializeResultMethod, JsonObject,
        ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
        ServerCapabilities, ServerConfig, ServerNotification, Tool,
    },
    service::{Peer, RequestContext},
};
use serde_json::{Value, json};

use crate::{
    fault,
    gate::{Gates, ListGate},
};

/// The cursor every page names in `--repeat-cursor` mode.
pub const REPEATED_CURSOR: &str = "again";

/// How the fixture behaves, as chosen on its command line.
#[derive(Clone, Debug, Default)]
pub struct Behaviour {
    /// Number of generated tools `tool_0` … `tool_{N-1}`.
    pub generated_tools: usize,
    /// Extra tools with exactly these names.
    pub named_tools: Vec<String>,
    /// Tools per `tools/list` page; `None` answers every tool in one page.
    pub page_size: Option<usize>,
    /// Answer every page with the same next cursor, forever.
    pub repeat_cursor: bool,
    /// End the last page with `nextCursor: ""` instead of none (a cursor of `""`
    /// is refused as invalid, as any cursor the fixture did not hand out).
    pub empty_last_cursor: bool,
    /// Wait before answering `initialize`.
    pub init_delay: Duration,
    /// Wait before answering `server/discover` (a server slow to start).
    pub discover_delay: Duration,
    /// Wait before answering each `tools/list`.
    pub list_delay: Duration,
    /// Compute (spin on a CPU) this long before answering each `tools/list`, like a
    /// server that builds its tool list on demand.
    pub list_cpu: Duration,
    /// Wait before answering each `tools/call`.
    pub call_delay: Duration,
    /// Never answer `initialize`.
    pub hang_initialize: bool,
    /// On `initialize`, write a few lines to stderr and exit with this status.
    pub crash_initialize: Option<i32>,
    /// Never answer `tools/list`.
    pub hang_list: bool,
    /// On `tools/list`, write a few lines to stderr and exit with this status.
    pub crash_list: Option<i32>,
    /// On `tools/call`, write a few lines to stderr and exit with this status.
    pub exit_during_call: Option<i32>,
    /// Answer `tools/list` with JSON-RPC error -32603.
    pub fail_list: bool,
    /// List `ask`, `roots` and `sample`, which ask the client (see `asks.rs`).
    pub asks: bool,
    /// List `task_job`, which runs as a task of the 2026-07-28 tasks extension
    /// (see `tasks.rs`), and declare the extension.
    pub tasks: bool,
    /// Offer the resource `fixture://counter`, subscriptions and list changes, and
    /// list `bump`, which changes it (see `resources.rs`).
    pub resources: bool,
    /// With `resources`: also list `fixture://asked`, whose read asks the client
    /// for an elicitation first (see `asks.rs`).
    pub asking_resource: bool,
    /// With `resources`: keep sending on the listen streams a client closed (see
    /// `resources.rs`).
    pub late_streams: bool,
    /// `add_tool` tells every handshake session that the list changed, as a server
    /// whose tools are the same for all its clients does, not only the caller's.
    pub broadcast_tool_changes: bool,
    /// Offer logging: `logging/setLevel` is taken (and logged like every message).
    pub logging: bool,
    /// The `outputSchema` of `echo` (which answers its arguments as structured
    /// content, so a call chooses whether its result conforms).
    pub echo_output_schema: Option<JsonObject>,
    /// Before answering a `tools/call` that carries a progress token, report this
    /// many steps of progress (`1` to `N` of `N`, with a message each).
    pub progress_steps: usize,
    /// List `crash`, whose call exits the process (status 3) while answering it.
    pub crash_tool: bool,
    /// How long to wait after each progress report (none when zero).
    pub progress_interval: Duration,
    /// Before answering a `tools/call`, log this many messages, `debug` and
    /// `warning` in turn, each's data `"TOOL message I"`.
    pub call_log_messages: usize,
    /// List one more tool, `padding`, whose description is this many bytes, so
    /// the `tools/list` answer is at least that long; none when 0.
    pub list_padding_bytes: usize,
    /// Add a text block of this many bytes to every `tools/call` result; none
    /// when 0.
    pub call_result_bytes: usize,
    /// Advertised as `capabilities.experimental`; none when empty.
    pub experimental: ExperimentalCapabilities,
    /// The `instructions` of the `initialize` (and `server/discover`) answer.
    pub instructions: Option<String>,
    /// Wait for gate files in this directory before answering `initialize`
    /// and each `tools/list` (see [`crate::gate`]).
    pub gate_dir: Option<PathBuf>,
    /// Which protocol revisions the server speaks.
    pub era: Era,
    /// As a handshake-only server: never answer `server/discover` (instead of
    /// answering it with "method not found").
    pub silent_discover: bool,
    /// `ttlMs` on every `tools/list` page; none when `None`.
    pub list_ttl_ms: Option<u64>,
    /// `cacheScope` on every `tools/list` page; none when `None`.
    pub list_cache_scope: Option<CacheScope>,
    /// The protocol versions the server supports instead of its era's: versions it
    /// does not support are refused with "unsupported protocol version", and
    /// `initialize` offering one is answered with the newest it supports.
    pub supported_versions: Vec<String>,
    /// List `future`, and answer it (and `task_job` called with `"future": true`)
    /// with what a newer revision adds (see `future.rs`); the transport rewrites
    /// what rmcp writes.
    pub future: bool,
}

/// Which protocol revisions the fixture speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Era {
    /// Only the handshake revisions (`initialize`, 2024-11-05 to 2025-11-25); it
    /// answers `server/discover` with "method not found", as servers written before
    /// 2026-07-28 do.
    #[default]
    Handshake,
    /// Every revision rmcp knows: `initialize` and `server/discover` both work.
    Dual,
    /// Only 2026-07-28 (stateless); it answers `initialize` with "method not found".
    Stateless,
}

/// The fixture server. Cheap to clone: the streamable HTTP server makes one
/// per session.
#[derive(Clone, Debug)]
pub struct Fixture {
    behaviour: Arc<Behaviour>,
    gates: Option<Arc<Gates>>,
    /// Shared by all clones (see the module invariants).
    tools: Arc<RwLock<Vec<Tool>>>,
    /// The tasks of `task_job`, shared by all clones.
    tasks: crate::tasks::Tasks,
    /// The resource and its subscribers, shared by all clones.
    resources: Arc<crate::resources::Resources>,
    /// With `broadcast_tool_changes`: every handshake session.
    listers: Arc<std::sync::Mutex<Vec<Peer<RoleServer>>>>,
}

impl Fixture {
    /// A server that behaves as `behaviour` says.
    pub fn new(behaviour: Behaviour) -> Self {
        let tools = Arc::new(RwLock::new(tools(&behaviour)));
        let gates = behaviour
            .gate_dir
            .clone()
            .map(|dir| Arc::new(Gates::new(dir)));
        let resources = crate::resources::Resources::new(behaviour.late_streams);
        Self {
            behaviour: Arc::new(behaviour),
            gates,
            tools,
            tasks: crate::tasks::Tasks::default(),
            resources: Arc::new(resources),
            listers: Arc::default(),
        }
    }

    /// How this server behaves.
    pub fn behaviour(&self) -> &Behaviour {
        &self.behaviour
    }

    /// The gates this server waits for, with `--gate-dir`.
    pub fn gates(&self) -> Option<&Gates> {
        self.gates.as_deref()
    }

    /// The tools listed now, in order.
    pub fn tools(&self) -> Vec<Tool> {
        self.read_tools().clone()
    }

    fn read_tools(&self) -> std::sync::RwLockReadGuard<'_, Vec<Tool>> {
        // Nothing panics while holding the lock.
        self.tools.read().expect("the tool list lock is poisoned")
    }

    /// One page of tools starting at `cursor`.
    fn page(&self, cursor: Option<&str>) -> Result<ListToolsResult, McpError> {
        let tools = self.read_tools();
        let offset = match cursor {
            None => 0,
            Some(REPEATED_CURSOR) if self.behaviour.repeat_cursor => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|offset| *offset <= tools.len())
                .ok_or_else(|| {
                    McpError::invalid_params(format!("invalid cursor `{cursor}`"), None)
                })?,
        };
        let page_size = self.behaviour.page_size.unwrap_or(tools.len());
        let end = offset.saturating_add(page_size).min(tools.len());
        let mut result = ListToolsResult::with_all_items(tools[offset..end].to_vec());
        result.next_cursor = if self.behaviour.repeat_cursor {
            Some(REPEATED_CURSOR.to_owned())
        } else if end < tools.len() {
            Some(end.to_string())
        } else {
            self.behaviour.empty_last_cursor.then(String::new)
        };
        result.ttl_ms = self.behaviour.list_ttl_ms;
        result.cache_scope = self.behaviour.list_cache_scope;
        Ok(result)
    }

    /// Append a tool named `name` (invariants 1 and 2).
    fn add_tool(&self, name: &str) -> Result<(), McpError> {
        let mut tools = self.tools.write().expect("the tool list lock is poisoned");
        if tools.iter().any(|tool| tool.name == name) {
            return Err(McpError::invalid_params(
                format!("a tool named `{name}` already exists (pick another name)"),
                None,
            ));
        }
        tools.push(Tool::new(name.to_owned(), "added tool", no_arguments()));
        Ok(())
    }

    /// `add_tool {name}`: append the tool, then tell the client the list
    /// changed (invariant 4).
    async fn add_tool_tool(
        &self,
        arguments: &JsonObject,
        peer: &Peer<RoleServer>,
        stateless: bool,
    ) -> Result<CallToolResult, McpError> {
        let name = string_argument("add_tool", arguments, "name")?;
        self.add_tool(name)?;
        if stateless {
            // A 2026-07-28 client hears of it only on its listen streams.
            self.resources
                .to_streams(ServerNotification::ToolListChangedNotification(
                    Default::default(),
                ))
                .await;
        } else if self.behaviour.broadcast_tool_changes {
            let listers = self.listers.lock().expect("not poisoned").clone();
            for lister in listers {
                // A session that ended is no longer told.
                let _ = lister.notify_tool_list_changed().await;
            }
        } else if let Err(error) = peer.notify_tool_list_changed().await {
            return Err(McpError::internal_error(
                format!("cannot send `notifications/tools/list_changed`: {error}"),
                None,
            ));
        }
        Ok(with_structured(
            format!("added {name}"),
            json!({ "added": name }),
        ))
    }

    /// Wait for the call delay.
    async fn before_call(&self) {
        delay(self.behaviour.call_delay).await;
    }

    /// Wait for the `tools/list` gate and the list delay, then say whether
    /// to fail.
    async fn before_list(&self) -> Result<ListGate, McpError> {
        if self.behaviour.hang_list {
            std::future::pending::<()>().await;
        }
        let gate = match &self.gates {
            Some(gates) => gates.tools_list().await.map_err(|error| {
                McpError::internal_error(
                    format!(
                        "cannot read the gate `{}`: {error}",
                        gates.tools_list_path().display()
                    ),
                    None,
                )
            })?,
            None => ListGate::Answer,
        };
        delay(self.behaviour.list_delay).await;
        if !self.behaviour.list_cpu.is_zero() {
            let cpu = self.behaviour.list_cpu;
            tokio::task::spawn_blocking(move || spin(cpu))
                .await
                .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        }
        Ok(gate)
    }
}

/// Wait `duration`, or not at all when it is zero.
///
/// A zero-length `tokio::time::sleep` still waits for the timer's next tick
/// (about a millisecond), which would add that much to every answer.
async fn delay(duration: Duration) {
    if !duration.is_zero() {
        tokio::time::sleep(duration).await;
    }
}

/// Text of exactly `bytes` bytes.
fn padding(bytes: usize) -> String {
    "x".repeat(bytes)
}

/// Keeps one CPU busy for `duration` of this thread's CPU time.
fn spin(duration: Duration) {
    let began = thread_cpu_time();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    while thread_cpu_time().saturating_sub(began) < duration {
        for _ in 0..10_000 {
            state = std::hint::black_box(state.rotate_left(5) ^ 0x2545_f491_4f6c_dd1d);
        }
    }
}

fn thread_cpu_time() -> Duration {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid timespec for the call to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

impl ServerHandler for Fixture {
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if !self.behaviour.supported_versions.is_empty() {
            return Cow::Owned(
                self.behaviour
                    .supported_versions
                    .iter()
                    .map(|version| {
                        serde_json::from_value(serde_json::Value::String(version.clone()))
                            .expect("any string is a protocol version")
                    })
                    .collect(),
            );
        }
        match self.behaviour.era {
            // With a list that stopped at 2025-11-25, rmcp itself would answer a
            // 2026-07-28 `server/discover` with "unsupported protocol version"; servers
            // written before 2026-07-28 answer "method not found" (`discover` below).
            Era::Handshake | Era::Dual => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
            Era::Stateless => Cow::Owned(vec![ProtocolVersion::V_2026_07_28]),
        }
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        delay(self.behaviour.discover_delay).await;
        if self.behaviour.era == Era::Handshake {
            if self.behaviour.silent_discover {
                std::future::pending::<()>().await;
            }
            return Err(McpError::method_not_found::<DiscoverRequestMethod>());
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if self.behaviour.logging {
            capabilities.logging = Some(JsonObject::new());
        }
        if self.behaviour.resources {
            capabilities.resources = ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .build()
                .resources;
        } else if self.behaviour.future {
            capabilities.resources = ServerCapabilities::builder()
                .enable_resources()
                .build()
                .resources;
        }
        if self.behaviour.future {
            capabilities.prompts = ServerCapabilities::builder()
                .enable_prompts()
                .build()
                .prompts;
        }
        if self.behaviour.tasks {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    rmcp::model::TASKS_EXTENSION_ID.to_owned(),
                    JsonObject::new(),
                );
        }
        if !self.behaviour.experimental.is_empty() {
            capabilities.experimental = Some(self.behaviour.experimental.clone());
        }
        let info = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "mcp-fixture",
            env!("CARGO_PKG_VERSION"),
        ));
        match &self.behaviour.instructions {
            Some(instructions) => info.with_instructions(instructions.clone()),
            None => info,
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if self.behaviour.era == Era::Stateless {
            return Err(McpError::method_not_found::<InitializeResultMethod>());
        }
        if self.behaviour.hang_initialize {
            std::future::pending::<()>().await;
        }
        if self.behaviour.broadcast_tool_changes {
            self.listers
                .lock()
                .expect("not poisoned")
                .push(context.peer.clone());
        }
        if let Some(status) = self.behaviour.crash_initialize {
            fault::exit_with_stderr("initialize", status);
        }
        if let Some(gates) = &self.gates {
            gates.initialize().await.map_err(|error| {
                McpError::internal_error(
                    format!(
                        "cannot read the gate `{}`: {error}",
                        gates.initialize_path().display()
                    ),
                    None,
                )
            })?;
        }
        delay(self.behaviour.init_delay).await;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if let Some(status) = self.behaviour.crash_list {
            fault::exit_with_stderr("tools/list", status);
        }
        let gate = tokio::select! {
            gate = self.before_list() => gate?,
            // rmcp drops the answer to a cancelled request anyway; stop waiting.
            () = context.ct.cancelled() => {
                return Err(McpError::internal_error("tools/list cancelled", None));
            }
        };
        if self.behaviour.fail_list || gate == ListGate::Fail {
            return Err(McpError::internal_error(
                "tools/list failed on purpose",
                None,
            ));
        }
        self.page(request.as_ref().and_then(|r| r.cursor.as_deref()))
    }

    #[allow(
        deprecated,
        reason = "rmcp marks logging deprecated (SEP-2577); clients still set it"
    )]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if !self.behaviour.logging {
            return Err(McpError::method_not_found::<
                rmcp::model::SetLevelRequestMethod,
            >());
        }
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        let mut listed = self.resources.list(self.behaviour.resources);
        if self.behaviour.resources && self.behaviour.asking_resource {
            listed.resources.push(crate::asks::resource());
        }
        if self.behaviour.future {
            listed.resources.push(crate::future::marker_resource());
        }
        Ok(listed)
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        if self.behaviour.asking_resource && request.uri == crate::asks::ASKING_RESOURCE {
            let stateless = context
                .protocol_version()
                .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
            return crate::asks::read(&request, &context.peer, stateless).await;
        }
        if self.behaviour.future && request.uri == crate::future::FUTURE_RESOURCE {
            return Ok(rmcp::model::ReadResourceResponse::Complete(
                crate::future::marker_read(),
            ));
        }
        self.resources
            .read(&request.uri)
            .map(rmcp::model::ReadResourceResponse::Complete)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        let prompts = match self.behaviour.future {
            true => vec![crate::future::marker_prompt()],
            false => Vec::new(),
        };
        Ok(rmcp::model::ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        if self.behaviour.future && request.name == crate::future::FUTURE_TOOL {
            return Ok(rmcp::model::GetPromptResponse::Complete(
                crate::future::marker_prompt_result(),
            ));
        }
        Err(McpError::invalid_params(
            format!("no prompt `{}`", request.name),
            None,
        ))
    }

    #[allow(deprecated, reason = "handshake-era clients subscribe this way")]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.resources.subscribe(&request.uri, &context.peer, true);
        Ok(())
    }

    #[allow(deprecated, reason = "handshake-era clients unsubscribe this way")]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.resources.subscribe(&request.uri, &context.peer, false);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(self.resources.accept(requested))
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.resources.listening(
            context.sink().clone(),
            context.request_context().peer.clone(),
        );
        context.cancelled().await;
        Ok(())
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        Ok(rmcp::model::GetTaskResult::new(
            self.tasks.0.get_task(&request.task_id)?,
        ))
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .0
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.0.cancel_task(&request.task_id)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if let Some(status) = self.behaviour.exit_during_call {
            fault::exit_with_stderr("tools/call", status);
        }
        tokio::select! {
            () = self.before_call() => {}
            // rmcp drops the answer to a cancelled request anyway; stop waiting.
            () = context.ct.cancelled() => {
                return Err(McpError::internal_error("tools/call cancelled", None));
            }
        }
        let stateless = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if self.behaviour.asks
            && let Some(answer) = crate::asks::call(
                &request,
                &context.peer,
                stateless,
                context.meta.get_progress_token(),
            )
            .await
        {
            return answer;
        }
        if self.behaviour.tasks && request.name == crate::tasks::TASK_JOB {
            return crate::tasks::call(&self.tasks, &request, &context, self.behaviour.future);
        }
        if self.behaviour.resources && request.name == "bump" {
            return self
                .resources
                .bump(&context.peer, stateless)
                .await
                .map(CallToolResponse::from);
        }
        for message in 1..=self.behaviour.call_log_messages {
            #[allow(
                deprecated,
                reason = "rmcp marks logging deprecated (SEP-2577); servers still log"
            )]
            let level = if message % 2 == 1 {
                rmcp::model::LoggingLevel::Debug
            } else {
                rmcp::model::LoggingLevel::Warning
            };
            #[allow(
                deprecated,
                reason = "rmcp marks logging deprecated (SEP-2577); servers still log"
            )]
            let params = rmcp::model::LoggingMessageNotificationParam::new(
                level,
                Value::String(format!("{} message {message}", request.name)),
            );
            #[allow(
                deprecated,
                reason = "rmcp marks logging deprecated (SEP-2577); servers still log"
            )]
            context
                .peer
                .notify_logging_message(params)
                .await
                .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        }
        if let Some(token) = context.meta.get_progress_token() {
            for step in 1..=self.behaviour.progress_steps {
                let report = ProgressNotificationParam::new(token.clone(), step as f64)
                    .with_total(self.behaviour.progress_steps as f64)
                    .with_message(format!("step {step}"));
                context
                    .peer
                    .notify_progress(report)
                    .await
                    .map_err(|error| McpError::internal_error(error.to_string(), None))?;
                delay(self.behaviour.progress_interval).await;
            }
        }
        if self.behaviour.crash_tool && request.name == "crash" {
            crate::fault::exit_with_stderr("tools/call crash", 3);
        }
        let arguments = request.arguments.unwrap_or_default();
        let mut result = match request.name.as_ref() {
            "echo" => CallToolResult::structured(Value::Object(arguments)),
            "fail" => CallToolResult::error(vec![ContentBlock::text("failed on purpose")]),
            "env" => env_tool(&arguments)?,
            "pid" => with_structured(
                std::process::id().to_string(),
                json!({ "pid": std::process::id() }),
            ),
            crate::future::FUTURE_TOOL if self.behaviour.future => crate::future::marker_result(),
            "add_tool" => {
                self.add_tool_tool(&arguments, &context.peer, stateless)
                    .await?
            }
            name if self.read_tools().iter().any(|tool| tool.name == name) => with_structured(
                format!("called {name}"),
                json!({ "tool": name, "arguments": arguments }),
            ),
            name => {
                return Err(McpError::invalid_params(
                    format!("unknown tool `{name}`"),
                    None,
                ));
            }
        };
        if self.behaviour.call_result_bytes > 0 {
            result.content.push(ContentBlock::text(padding(
                self.behaviour.call_result_bytes,
            )));
        }
        Ok(result.into())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.read_tools()
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }
}

/// `env {name}`: the variable's value in this process, or `<unset>`.
fn env_tool(arguments: &JsonObject) -> Result<CallToolResult, McpError> {
    let name = string_argument("env", arguments, "name")?;
    let value = std::env::var_os(name).map(|value| value.to_string_lossy().into_owned());
    let text = value.clone().unwrap_or_else(|| "<unset>".to_owned());
    Ok(with_structured(
        text,
        json!({ "name": name, "value": value }),
    ))
}

/// The string argument `argument` of the tool `tool`.
fn string_argument<'a>(
    tool: &str,
    arguments: &'a JsonObject,
    argument: &str,
) -> Result<&'a str, McpError> {
    match arguments.get(argument) {
        Some(Value::String(value)) => Ok(value),
        _ => Err(McpError::invalid_params(
            format!("`{tool}` needs a string argument `{argument}`"),
            None,
        )),
    }
}

/// A successful result with one text block and structured content.
fn with_structured(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// The tool list in its fixed order (see the module docs).
fn tools(behaviour: &Behaviour) -> Vec<Tool> {
    let no_arguments = no_arguments();
    let mut echo = Tool::new(
        "echo",
        "Return the arguments as JSON text and as structured content",
        schema(json!({ "type": "object" })),
    );
    echo.output_schema = behaviour.echo_output_schema.clone().map(Arc::new);
    let mut tools = vec![
        echo,
        Tool::new(
            "fail",
            "Always fail with isError: true",
            no_arguments.clone(),
        ),
        Tool::new(
            "env",
            "Read an environment variable of the fixture process",
            schema(json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "Name of the variable" }
                },
                "required": ["name"]
            })),
        ),
        Tool::new("pid", "The fixture's process id", no_arguments.clone()),
        Tool::new(
            "add_tool",
            "Add a tool with this name to the fixture's tool list, then send \
             notifications/tools/list_changed",
            schema(json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "Name of the tool to add" }
                },
                "required": ["name"]
            })),
        ),
    ];
    tools.extend((0..behaviour.generated_tools).map(|i| {
        Tool::new(
            format!("tool_{i}"),
            format!("generated tool {i}"),
            no_arguments.clone(),
        )
    }));
    tools.extend(
        behaviour
            .named_tools
            .iter()
            .map(|name| Tool::new(name.clone(), "named tool", no_arguments.clone())),
    );
    if behaviour.asks {
        tools.extend(crate::asks::tools());
    }
    if behaviour.tasks {
        tools.push(crate::tasks::tool());
    }
    if behaviour.resources {
        tools.push(crate::resources::tool());
    }
    if behaviour.future {
        tools.push(crate::future::marker_tool());
    }
    if behaviour.crash_tool {
        tools.push(Tool::new(
            "crash",
            "Exit the fixture's process (status 3) while answering this call",
            no_arguments.clone(),
        ));
    }
    if behaviour.list_padding_bytes > 0 {
        tools.push(Tool::new(
            "padding",
            padding(behaviour.list_padding_bytes),
            no_arguments.clone(),
        ));
    }
    tools
}

/// The input schema of a tool without arguments.
fn no_arguments() -> Arc<JsonObject> {
    schema(json!({ "type": "object", "properties": {} }))
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(object) => Arc::new(object),
        other => unreachable!("a tool schema literal is an object, not {other}"),
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    fn fixture(behaviour: Behaviour) -> Fixture {
        Fixture::new(behaviour)
    }

    fn names(result: &ListToolsResult) -> Vec<&str> {
        result.tools.iter().map(|tool| tool.name.as_ref()).collect()
    }

    #[tokio::test]
    async fn no_delay_asked_for_answers_without_waiting_for_the_timer() {
        // Real time: a zero-length timer would be pending until the next tick.
        let server = fixture(Behaviour::default());
        assert_eq!(server.before_call().now_or_never(), Some(()));
        assert!(matches!(
            server.before_list().now_or_never(),
            Some(Ok(ListGate::Answer))
        ));

        let slow = fixture(Behaviour {
            list_delay: Duration::from_millis(1),
            call_delay: Duration::from_millis(1),
            ..Behaviour::default()
        });
        assert_eq!(slow.before_call().now_or_never(), None);
        assert!(slow.before_list().now_or_never().is_none());
    }

    #[test]
    fn padding_lists_one_more_tool_that_long() {
        let server = fixture(Behaviour {
            list_padding_bytes: 1000,
            ..Behaviour::default()
        });
        let page = server.page(None).unwrap();
        let padding = page.tools.last().unwrap();
        assert_eq!(padding.name, "padding");
        assert_eq!(padding.description.as_deref().map(str::len), Some(1000));
    }

    #[test]
    fn tools_are_fixed_then_generated_then_named_then_added() {
        let server = fixture(Behaviour {
            generated_tools: 2,
            named_tools: vec!["zeta".into(), "alpha".into()],
            ..Behaviour::default()
        });
        server.add_tool("beta").unwrap();
        server.add_tool("aardvark").unwrap();
        let page = server.page(None).unwrap();
        assert_eq!(
            names(&page),
            [
                "echo", "fail", "env", "pid", "add_tool", "tool_0", "tool_1", "zeta", "alpha",
                "beta", "aardvark"
            ]
        );
        assert_eq!(page.next_cursor, None);
        assert_eq!(
            page.tools[5].description.as_deref(),
            Some("generated tool 0")
        );
        assert_eq!(page.tools[7].description.as_deref(), Some("named tool"));
        assert_eq!(page.tools[9].description.as_deref(), Some("added tool"));
        assert_eq!(server.get_tool("beta"), Some(page.tools[9].clone()));
    }

    #[test]
    fn pages_are_cut_at_the_page_size_and_the_cursor_is_the_offset() {
        let server = fixture(Behaviour {
            generated_tools: 3,
            page_size: Some(3),
            ..Behaviour::default()
        });
        let first = server.page(None).unwrap();
        assert_eq!(names(&first), ["echo", "fail", "env"]);
        assert_eq!(first.next_cursor.as_deref(), Some("3"));
        let second = server.page(Some("3")).unwrap();
        assert_eq!(names(&second), ["pid", "add_tool", "tool_0"]);
        assert_eq!(second.next_cursor.as_deref(), Some("6"));
        let last = server.page(Some("6")).unwrap();
        assert_eq!(names(&last), ["tool_1", "tool_2"]);
        assert_eq!(last.next_cursor, None);
    }

    #[test]
    fn a_listing_that_spans_an_added_tool_sees_every_tool_once() {
        let server = fixture(Behaviour {
            page_size: Some(3),
            ..Behaviour::default()
        });
        let first = server.page(None).unwrap();
        assert_eq!(first.next_cursor.as_deref(), Some("3"));
        server.add_tool("late").unwrap();
        let second = server.page(Some("3")).unwrap();
        assert_eq!(names(&second), ["pid", "add_tool", "late"]);
        assert_eq!(second.next_cursor, None);
    }

    #[test]
    fn added_tools_are_shared_by_clones_and_names_stay_unique() {
        let server = fixture(Behaviour {
            named_tools: vec!["named".into()],
            ..Behaviour::default()
        });
        let session = server.clone();
        session.add_tool("added").unwrap();
        assert_eq!(names(&server.page(None).unwrap()).last(), Some(&"added"));
        for taken in ["added", "named", "echo", "add_tool"] {
            assert!(server.add_tool(taken).is_err(), "`{taken}` was added twice");
        }
        assert_eq!(server.page(None).unwrap().tools.len(), 7);
    }

    #[test]
    fn a_cursor_past_the_end_or_not_a_number_is_rejected() {
        let server = fixture(Behaviour::default());
        assert!(server.page(Some("6")).is_err());
        assert!(server.page(Some("x")).is_err());
        assert!(server.page(Some(REPEATED_CURSOR)).is_err());
        assert!(server.page(Some("5")).unwrap().tools.is_empty());
    }

    #[test]
    fn empty_last_cursor_ends_the_last_page_with_an_empty_cursor() {
        let server = fixture(Behaviour {
            page_size: Some(3),
            empty_last_cursor: true,
            ..Behaviour::default()
        });
        assert_eq!(server.page(None).unwrap().next_cursor.as_deref(), Some("3"));
        assert_eq!(
            server.page(Some("3")).unwrap().next_cursor.as_deref(),
            Some("")
        );
        assert!(server.page(Some("")).is_err());
    }

    #[test]
    fn repeat_cursor_names_the_same_cursor_on_every_page() {
        let server = fixture(Behaviour {
            page_size: Some(2),
            repeat_cursor: true,
            ..Behaviour::default()
        });
        let first = server.page(None).unwrap();
        let again = server.page(Some(REPEATED_CURSOR)).unwrap();
        assert_eq!(first.next_cursor.as_deref(), Some(REPEATED_CURSOR));
        assert_eq!(again.next_cursor.as_deref(), Some(REPEATED_CURSOR));
        assert_eq!(names(&again), ["echo", "fail"]);
    }

    #[test]
    fn experimental_capabilities_are_advertised_only_when_given() {
        let plain = fixture(Behaviour::default()).get_info();
        assert_eq!(plain.capabilities.experimental, None);
        let tools = plain.capabilities.tools.unwrap();
        assert_eq!(tools.list_changed, Some(true));

        let mut experimental = ExperimentalCapabilities::new();
        experimental.insert("x.sandbox".into(), JsonObject::new());
        let info = fixture(Behaviour {
            experimental: experimental.clone(),
            ..Behaviour::default()
        })
        .get_info();
        assert_eq!(info.capabilities.experimental, Some(experimental));
    }

    #[test]
    fn env_reports_unset_variables() {
        let mut arguments = JsonObject::new();
        arguments.insert("name".into(), json!("MCP_FIXTURE_SURELY_UNSET_VARIABLE"));
        let result = env_tool(&arguments).unwrap();
        assert_eq!(result.content[0].as_text().unwrap().text, "<unset>");
        assert_eq!(
            result.structured_content,
            Some(json!({ "name": "MCP_FIXTURE_SURELY_UNSET_VARIABLE", "value": null }))
        );
        assert!(env_tool(&JsonObject::new()).is_err());
    }

    #[test]
    fn string_arguments_must_be_strings() {
        let mut arguments = JsonObject::new();
        arguments.insert("name".into(), json!("x"));
        arguments.insert("number".into(), json!(1));
        assert_eq!(string_argument("t", &arguments, "name").unwrap(), "x");
        let error = string_argument("t", &arguments, "number").unwrap_err();
        assert_eq!(error.message, "`t` needs a string argument `number`");
        assert!(string_argument("t", &arguments, "missing").is_err());
    }
}
