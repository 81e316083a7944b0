//! One server: spawn or connect, handshake, list tools, call tools, shut down.
//!
//! A [`Connection`] owns its transport and, for a local server, its process. The
//! protocol runs on rmcp with three of its defaults changed on purpose:
//! 1. the protocol is started in the server's era (see [`crate::protocol_era`]): a
//!    2026-07-28 server gets `server/discover`, and every request then carries the
//!    protocol keys in `_meta`; a handshake server gets `initialize` offering
//!    [`PROTOCOL_VERSION`](crate::protocol::PROTOCOL_VERSION), not rmcp's newest
//!    version, and its answer must be one of [`ACCEPTED_PROTOCOL_VERSIONS`] (rmcp takes
//!    any; see [`version_gate`]);
//! 2. rmcp's per-peer response cache is off, so a failed `tools/list` is an error rather
//!    than an older answer served again;
//! 3. every request has a timeout, and a request whose future is dropped (timeout or
//!    caller) is followed by `notifications/cancelled`; for tool calls the runtime
//!    sends it itself and writes it before the connection closes ([`cancellation`]).

mod answers;

mod calling;

mod cancellation;

mod client;

pub(crate) mod error;

mod failure;

pub(crate) mod features;

mod in_process;

mod input_rounds;

mod listing;

pub(crate) use listing::Listing;

pub use answers::SERVER_LOG_TARGET;

mod liveness;

#[cfg(feature = "http")]
mod over_http;

#[cfg(feature = "http")]
mod over_sse;

mod over_stdio;

mod progress_tap;

mod reclaim;

mod renumber;

mod subscriptions;

mod tasks;

mod tool_answer;

mod version_gate;

use std::{
    sync::{Arc, Mutex, atomic::AtomicUsize},
    time::Duration,
};

use rmcp::{
    Peer, RoleClient,
    model::{CallToolRequestParams, JsonObject, MetaObject, ProtocolVersion, RequestMetaObject},
    service::{ClientCacheConfig, RunningService},
};
use tokio::sync::{Notify, OnceCell};
use tokio_util::sync::CancellationToken;

use self::{
    calling::{CallFailure, Caller, Deadline},
    client::Client,
    error::CallError,
};
use crate::{
    binding::Binding,
    catalog::TaskSupport,
    host::HostHandlers,
    protocol::ACCEPTED_PROTOCOL_VERSIONS,
    protocol_era::Plan,
    sandbox_metadata::{
        self, CallSandbox, SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY,
    },
    sync::lock,
    tool_result::ToolResult,
    transport::{
        Endpoint,
        error::{ListToolsError, RequestError, StartupError},
        http,
        splice::{SlotGuard, Splicer},
        stdio,
    },
};

/// `tools/list` may not take more pages than this.
pub const MAX_LIST_PAGES: usize = 100;
/// A list may not have more entries than this: `tools/list` by default (`max_tools`
/// raises it), the other lists always.
pub const MAX_LISTED_TOOLS: usize = crate::config::DEFAULT_MAX_TOOLS;
/// How long an exited server's last stderr may take to arrive.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(1);
/// How long a call whose connection ended still waits for an answer the server wrote
/// before the end.
const ANSWER_AFTER_END_WAIT: Duration = Duration::from_millis(500);
/// How long a 2026-07-28 server may take to acknowledge its listen stream as it
/// starts.
const LISTEN_WAIT: Duration = Duration::from_secs(10);
/// How long a server may take to take the host's log level as it starts.
const SET_LEVEL_WAIT: Duration = Duration::from_secs(10);
/// How long closing the protocol may take at shutdown.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// How long shutdown waits for owed `notifications/cancelled` to be written.
const CANCELLATION_WAIT: Duration = Duration::from_secs(2);
/// How many of a failed server's last stderr lines its error quotes.
const STDERR_REPORT_LINES: usize = 5;

/// The experimental capability through which a server opts out of shared listings.
pub const TOOL_CATALOG_CACHE_CAPABILITY: &str = "codex/tool-catalog-cache";

/// A live connection to one server.
pub(crate) struct Connection {
    peer: Peer<RoleClient>,
    /// Taken by [`Connection::shutdown`] to close the protocol; dropping it cancels.
    service: Mutex<Option<RunningService<RoleClient, Client>>>,
    splicer: Splicer,
    /// Whether the server shares this host's filesystem (see [`Binding`]).
    may_offer_launcher: bool,
    process: Mutex<Option<stdio::ServerProcess>>,
    pid: Option<u32>,
    tools_changed: Arc<Notify>,
    /// The host's answers to the server's requests, and the pauses of the call
    /// timeouts while a person answers.
    answers: Arc<answers::Answers>,
    /// Tool calls in flight and the cancellations owed to the server.
    cancellations: cancellation::Cancellations,
    /// Cancelled once the transport's input ended, rmcp dropped the transport, a
    /// local server's process exited ([`liveness`]), or an HTTP server was found gone
    /// ([`http::Streams`]).
    ended: CancellationToken,
    /// An HTTP server's streams: whether the server was found gone and why, and how
    /// the response streams of requests were lost.
    streams: Option<Arc<http::Streams>>,
    /// Why the connection ended, once [`Connection::closed_error`] found out.
    closed: OnceCell<StartupError>,
    /// Whether the server is reached over the legacy HTTP+SSE transport, configured
    /// or found from a Streamable HTTP `url`'s answers.
    legacy_sse: bool,
    /// Whether requests carry an OAuth login's token.
    oauth: bool,
    /// The resources subscribed to, and the 2026-07-28 listen stream.
    subscriptions: subscriptions::Subscriptions,
    /// The server's lists held until it announces a change.
    held: Arc<features::HeldLists>,
    /// The credentials sent to an HTTP server, masked in what it sends back while the
    /// connection lives (a local server's process holds its own).
    _credentials: Vec<crate::redact::Registered>,
}

impl Connection {
    /// [`Connection::connect_with`] for a server known to speak the handshake
    /// revisions: the unit tests' hand-written servers.
    #[cfg(test)]
    pub(crate) async fn connect(
        server: &str,
        endpoint: &Endpoint,
        binding: &Binding,
        on_spawn: impl FnMut(u32),
    ) -> Result<Self, StartupError> {
        Self::connect_with(
            server,
            endpoint,
            binding,
            &Plan::Handshake,
            &HostHandlers::default(),
            on_spawn,
        )
        .await
    }

    /// Starts or reaches the server at `endpoint` and starts the protocol as `plan`
    /// says (a local server's only; a Streamable HTTP server gets `initialize`);
    /// `binding` says where it runs; `host` answers the server's requests (and its
    /// handlers are the capabilities offered); `on_spawn` learns the process id of each local
    /// process as soon as it runs (a probe left unanswered, or answered by a process that then exits, spawns two; three when a server found silent turns out to speak only 2026-07-28).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future ends every server process it started, and withdraws a
    /// probe it was making (see [`crate::protocol_era`]).
    pub(crate) async fn connect_with(
        server: &str,
        endpoint: &Endpoint,
        binding: &Binding,
        plan: &Plan,
        host: &HostHandlers,
        on_spawn: impl FnMut(u32),
    ) -> Result<Self, StartupError> {
        let client = Client::new(server, host);
        let tools_changed = client.tools_changed.clone();
        let answers = client.answers.clone();
        let held = client.held.clone();
        let splicer = Splicer::new();
        // What each transport brings: an HTTP server's streams, and whether it was
        // sent an OAuth token.
        let (service, process, ended, legacy_sse, streams, oauth) = match endpoint {
            Endpoint::Stdio(launch) => {
                let started =
                    over_stdio::start(server, launch, client, &splicer, plan, on_spawn).await?;
                let ended = started.ended;
                (
                    started.service,
                    Some(started.process),
                    ended,
                    false,
                    None,
                    false,
                )
            }
            #[cfg(feature = "http")]
            Endpoint::Http(resolved) => {
                let ended = CancellationToken::new();
                // Over HTTP the era is found from each server's answers (one POST), so
                // only a pinned revision is taken from the plan.
                let pinned = match plan {
                    Plan::Pinned(version) => Some(version.clone()),
                    #[cfg(test)]
                    Plan::Handshake => Some(crate::protocol::PROTOCOL_VERSION),
                    Plan::Auto { .. } => None,
                };
                let reached =
                    over_http::start(server, resolved, client, &splicer, &ended, pinned).await?;
                let streams = Some(reached.streams);
                let legacy_sse = reached.legacy_sse;
                (
                    reached.service,
                    None,
                    ended,
                    legacy_sse,
                    streams,
                    reached.oauth,
                )
            }
            #[cfg(feature = "http")]
            Endpoint::Sse(resolved) => {
                let ended = CancellationToken::new();
                let mut client = client;
                let accepted = match plan {
                    Plan::Pinned(version) if !version.has_initialize() => {
                        return Err(StartupError::PinnedModernOverSse);
                    }
                    Plan::Pinned(version) => {
                        client.info.protocol_version = version.clone();
                        version_gate::Accepted::Pinned(version.clone())
                    }
                    #[cfg(test)]
                    Plan::Handshake => version_gate::Accepted::Spoken,
                    Plan::Auto { .. } => version_gate::Accepted::Spoken,
                };
                let endpoint = over_http::Endpoint::reach(server, resolved).await?;
                let login = endpoint.oauth.clone();
                let (service, sse_streams) = over_sse::start(
                    server, resolved, client, &splicer, &ended, accepted, endpoint,
                )
                .await?;
                // As over Streamable HTTP: logged in once a token was sent.
                let oauth = login.is_some_and(|login| login.has_token());
                (service, None, ended, true, Some(sse_streams), oauth)
            }
        };
        service
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        // A local server's and a legacy SSE server's messages always reach the
        // client; over Streamable HTTP a server's own messages need its optional
        // event stream.
        let messages_always_reach = matches!(endpoint, Endpoint::Stdio(_)) || legacy_sse;
        let connection = Self {
            cancellations: cancellation::Cancellations::new(service.peer().clone()),
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            splicer,
            pid: process.as_ref().map(stdio::ServerProcess::pid),
            may_offer_launcher: binding.may_offer_launcher(),
            process: Mutex::new(process),
            tools_changed,
            answers,
            ended,
            streams,
            closed: OnceCell::new(),
            legacy_sse,
            oauth,
            subscriptions: subscriptions::Subscriptions::default(),
            held,
            _credentials: endpoint.credentials().to_vec(),
        };
        connection.hold_announced_lists(messages_always_reach);
        connection.listen(LISTEN_WAIT).await;
        connection.ask_for_logs().await;
        Ok(connection)
    }

    fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// Asks a handshake-era server that offers logging for the host's log level
    /// (`logging/setLevel`); a 2026-07-28 server is told in each request's `_meta`
    /// instead (see [`calling::Caller`]). A server that refuses still starts.
    async fn ask_for_logs(&self) {
        let Some(level) = self.answers.log_level() else {
            return;
        };
        let offers_logging = self
            .peer()
            .peer_info()
            .is_some_and(|info| info.capabilities.logging.is_some());
        if self.is_stateless() || !offers_logging {
            return;
        }
        let params = serde_json::json!({ "level": level });
        if let Err(error) = self
            .feature_request("logging/setLevel", params, SET_LEVEL_WAIT)
            .await
        {
            tracing::warn!(server = self.answers.server(), error = %crate::transport::error::chain(&error), "the server did not take the log level");
        }
    }

    /// Whether the requests carry an OAuth login's token.
    pub(crate) fn uses_oauth(&self) -> bool {
        self.oauth
    }

    /// Whether the server is reached over the legacy HTTP+SSE transport.
    pub(crate) fn over_legacy_sse(&self) -> bool {
        self.legacy_sse
    }

    /// The protocol version spoken with the server: the one it answered to
    /// `initialize`, or the one selected from its `server/discover` answer.
    pub(crate) fn protocol_version(&self) -> Option<String> {
        self.peer
            .peer_info()
            .map(|info| info.protocol_version.to_string())
    }

    /// The server's `instructions`, from its `initialize` or `server/discover` answer.
    pub(crate) fn instructions(&self) -> Option<String> {
        self.peer
            .peer_info()
            .and_then(|info| info.instructions.clone())
    }

    /// Tells the server the host's roots changed, unless it speaks a revision
    /// without notifications from the client. A failed write is the connection's
    /// end, which the runtime learns otherwise.
    pub(crate) async fn roots_changed(&self) {
        if !self.is_stateless() {
            let _ = self.peer.notify_roots_list_changed().await;
        }
    }

    /// Why the connection is no longer usable, if it has closed: for a local server
    /// that exited, how it exited and its last stderr; for an HTTP server found gone,
    /// how. Once found, the same answer is given to every caller; the process stays
    /// with the connection (for [`Connection::shutdown`] to reap).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future while it waits for the exit status kills the process group.
    pub(crate) async fn closed_error(&self) -> Option<StartupError> {
        if let Some(error) = self.closed.get() {
            return Some(error.clone());
        }
        let exited = lock(&self.process)
            .as_ref()
            .is_some_and(stdio::ServerProcess::has_exited);
        let gone = self.streams.as_ref().and_then(|streams| streams.cause());
        if !exited
            && gone.is_none()
            && !self.peer.is_transport_closed()
            && !self.ended.is_cancelled()
        {
            return None;
        }
        let error = self
            .closed
            .get_or_init(|| async {
                if let Some(cause) = gone {
                    return StartupError::Lost {
                        source: cause.clone(),
                    };
                }
                let process = lock(&self.process).take();
                let Some(mut process) = process else {
                    return StartupError::Closed {
                        stderr_tail: Vec::new(),
                    };
                };
                let error = exit_report(&mut process, |stderr_tail| StartupError::Closed {
                    stderr_tail,
                })
                .await;
                *lock(&self.process) = Some(process);
                error
            })
            .await;
        Some(error.clone())
    }

    /// Whether the connection has ended (see [`Connection::ended`]).
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.is_cancelled()
            || self
                .streams
                .as_ref()
                .is_some_and(|streams| streams.ended().is_cancelled())
            || self.peer.is_transport_closed()
            || lock(&self.process)
                .as_ref()
                .is_some_and(stdio::ServerProcess::has_exited)
    }

    /// Returns once the connection has ended: the server closed it, a local server's
    /// process exited (even if a process it started still holds its stdout), the
    /// session failed, or it was shut down.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future has no effect.
    pub(crate) async fn ended(&self) {
        self.ended.cancelled().await;
    }

    /// Kills a local server's process group now, without a grace period.
    pub(crate) fn kill(&self) {
        drop(lock(&self.process).take());
    }

    /// Writes the `notifications/cancelled` owed for calls given up and for calls
    /// still in flight (waiting at most [`CANCELLATION_WAIT`]), then kills a local
    /// server's process group at once: shutdown for a host that must stop now.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops waiting for the writes; the process group is killed
    /// when the runtime drops the connection.
    pub(crate) async fn abort(&self) {
        self.cancellations.flush(CANCELLATION_WAIT).await;
        self.kill();
    }

    /// The process id of a local server.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Signalled whenever the server sends `notifications/tools/list_changed`.
    pub(crate) fn tools_changed(&self) -> Arc<Notify> {
        self.tools_changed.clone()
    }

    /// `arguments`, the exact JSON text of a call's arguments, as the object rmcp
    /// sends: leaves that would not survive a round trip through `serde_json` travel as
    /// placeholders that the transport replaces by their text (see
    /// [`crate::transport::splice`]). `None` when the text is not a JSON object. The
    /// guards must live until the call has ended.
    pub(crate) fn exact_arguments(
        &self,
        arguments: &serde_json::value::RawValue,
    ) -> Option<(JsonObject, Vec<SlotGuard>)> {
        let mut guards = Vec::new();
        match self.splicer.exact_value(arguments, &mut guards) {
            Ok(serde_json::Value::Object(object)) => Some((object, guards)),
            _ => None,
        }
    }

    /// Whether the server lets other startups share its listings: it opts out by
    /// advertising `capabilities.experimental["codex/tool-catalog-cache"]` with
    /// `"cacheable": false`. A connection that carries an OAuth login shares only under
    /// its login's identity, which the startup puts in the discovery key and checks
    /// against [`Connection::uses_oauth`] (see `manager::startup`).
    pub(crate) fn allows_shared_listing(&self) -> bool {
        let Some(info) = self.peer().peer_info() else {
            return true;
        };
        let cacheable = info
            .capabilities
            .experimental
            .as_ref()
            .and_then(|experimental| experimental.get(TOOL_CATALOG_CACHE_CAPABILITY))
            .and_then(|capability| capability.get("cacheable"));
        cacheable != Some(&serde_json::Value::Bool(false))
    }

    /// Lists every tool of `config`'s server (see [`listing::list_tools`]), at most
    /// its `max_tools`, counting each request in `sent`; each page is bounded by its
    /// startup timeout. The server's grant to
    /// reuse the listing counts only on a 2026-07-28 connection: the hints are that
    /// revision's, and an older server that sends them does not mean them.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future sends `notifications/cancelled` for the page in flight.
    pub(crate) async fn list_tools(
        &self,
        config: &crate::config::ServerConfig,
        sent: &AtomicUsize,
    ) -> Result<Listing, ListToolsError> {
        let (server, page_timeout, max_tools) =
            (&*config.name, config.startup_timeout, config.max_tools);
        let listed = listing::list_tools(
            self.peer(),
            &self.cancellations,
            server,
            listing::Bounds {
                page_timeout,
                max_tools,
            },
            sent,
        );
        match listed.await {
            Ok(mut listing) => {
                if !self.is_stateless() {
                    listing.grant = None;
                }
                Ok(listing)
            }
            Err(ListToolsError::Failed(error)) => {
                Err(ListToolsError::Failed(self.with_exit_report(error).await))
            }
            Err(other) => Err(other),
        }
    }

    /// Whether the connection speaks a revision without a handshake (2026-07-28 or
    /// later).
    fn is_stateless(&self) -> bool {
        self.peer()
            .peer_info()
            .is_some_and(|info| !info.protocol_version.has_initialize())
    }

    /// `error`, or, when it is the end of the connection of a local server that has
    /// exited, how it exited and its last stderr; of an HTTP server found gone, how.
    async fn with_exit_report(&self, error: RequestError) -> RequestError {
        if !matches!(error, RequestError::Closed { .. }) {
            return error;
        }
        self.lost_error().await.unwrap_or(error)
    }

    /// How the connection ended ([`Connection::closed_error`]), as the failure of the
    /// requests it ended: a local server's exit and last stderr, the end of the
    /// connection, or what an HTTP server's transport saw. `None` while it is open.
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::closed_error`].
    pub(crate) async fn lost_error(&self) -> Option<RequestError> {
        match self.closed_error().await? {
            StartupError::Exited {
                status,
                stderr_tail,
            } => Some(RequestError::Exited {
                status,
                stderr_tail,
            }),
            StartupError::Closed { stderr_tail } => Some(RequestError::Closed { stderr_tail }),
            StartupError::Lost { source } => Some(RequestError::Lost {
                source: Arc::new(source),
            }),
            _ => None,
        }
    }

    /// Why a call or a request of the server's features failed, from rmcp's `error`:
    /// with the exit report of a local server that has exited, and, on a 2026-07-28
    /// connection, naming a server that tried to ask the client the handshake way
    /// ([`failure::asked_out_of_era`]).
    async fn request_failure(&self, error: rmcp::ServiceError) -> RequestError {
        let failure = self.with_exit_report(failure::from_service(error)).await;
        if self.is_stateless() {
            failure::asked_out_of_era(failure)
        } else {
            failure
        }
    }

    /// Whether a launcher path on this host may be offered to the server.
    pub(crate) fn may_offer_launcher(&self) -> bool {
        self.may_offer_launcher
    }

    /// Whether the server opted into sandbox metadata in its capabilities: those of
    /// its `initialize` result, or of its `server/discover` result (rmcp keeps either
    /// as the peer's info).
    pub(crate) fn wants_sandbox_metadata(&self) -> bool {
        let info = self.peer().peer_info();
        sandbox_metadata::opts_in(
            info.as_ref()
                .and_then(|info| info.capabilities.experimental.as_ref()),
        )
    }

    /// Calls `tool` with `arguments`, bounded by `timeout` (time a person spends
    /// answering the server's questions not counted); its progress goes to
    /// `progress`. The request's `_meta` is
    /// `meta` (already stripped of the reserved keys) plus, when given, `sandbox`: the
    /// state under both names, byte for byte, and the launcher. A tool whose
    /// `task_support` is required is called as a task on a 2025-11-25 connection; a
    /// 2026-07-28 server may answer any call with a task ([`tasks`]).
    ///
    /// A call in flight when the connection ends (see [`Connection::ended`]) fails at
    /// once, unless the server's answer is already on its way (it gets at most
    /// [`ANSWER_AFTER_END_WAIT`] to arrive); nothing is owed to the server then.
    ///
    /// # Cancel safety
    ///
    /// When the timeout runs out or the future is dropped, the server is sent
    /// `notifications/cancelled` for the request (and `tasks/cancel` for a task):
    /// without waiting for it (the timeout error comes when the timeout runs out),
    /// but before the connection closes.
    #[allow(
        clippy::too_many_arguments,
        reason = "one call's parts, each given by the runtime's caller"
    )]
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        task_support: TaskSupport,
        arguments: Option<JsonObject>,
        mut meta: JsonObject,
        sandbox: Option<CallSandbox>,
        progress: Option<crate::progress::OnProgress>,
        timeout: Duration,
    ) -> Result<ToolResult, CallError> {
        let server = self.answers.server();
        let mut _slot = None;
        if let Some(sandbox) = sandbox {
            let (placeholder, slot) = self.splicer.placeholder(sandbox.state.raw());
            _slot = Some(slot);
            meta.insert(SANDBOX_STATE_KEY.into(), placeholder.clone().into());
            meta.insert(SANDBOX_STATE_META_KEY.into(), placeholder.into());
            if let Some(launcher) = sandbox.launcher {
                let launcher = serde_json::to_value(launcher).expect("a launcher serializes");
                meta.insert(SANDBOX_LAUNCHER_KEY.into(), launcher);
            }
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        params.meta = (!meta.is_empty()).then(|| RequestMetaObject(MetaObject(meta)));
        // Every round, poll and answer of the call within the one timeout; the time a
        // person takes to answer the server does not count ([`answers::Pauses`]).
        let deadline = Deadline::after(timeout, &self.answers);
        let caller = self.caller();
        // A task, like a failure, is off the short path: in a future of its own.
        let called = if task_support == TaskSupport::Required && self.speaks_tasks() {
            Box::pin(tasks::call_as_task(
                &caller,
                params,
                deadline,
                progress.as_ref(),
            ))
            .await
        } else {
            input_rounds::call(&caller, params, deadline, progress.as_ref()).await
        };
        match called {
            Ok(result) => Ok(result),
            Err(CallFailure::TimedOut) => Err(CallError::Timeout {
                server: server.to_owned(),
                tool: tool.to_owned(),
                after: timeout,
            }),
            Err(CallFailure::Failed(error)) => Err(CallError::Failed {
                server: server.to_owned(),
                tool: tool.to_owned(),
                source: Box::pin(self.request_failure(error)).await,
            }),
            Err(CallFailure::Refused(source)) => Err(CallError::Answer {
                server: server.to_owned(),
                tool: tool.to_owned(),
                source,
            }),
            Err(CallFailure::Invalid(source)) => Err(CallError::InvalidResult {
                server: server.to_owned(),
                tool: tool.to_owned(),
                source,
            }),
            Err(CallFailure::Lost(source)) => Err(CallError::Failed {
                server: server.to_owned(),
                tool: tool.to_owned(),
                source,
            }),
        }
    }

    /// Whether the connection speaks 2025-11-25, the one handshake revision with
    /// tasks.
    fn speaks_tasks(&self) -> bool {
        self.peer()
            .peer_info()
            .is_some_and(|info| info.protocol_version == ProtocolVersion::V_2025_11_25)
    }

    /// What this connection's calls send their requests through.
    fn caller(&self) -> Caller<'_> {
        Caller {
            peer: self.peer(),
            cancellations: &self.cancellations,
            answers: &self.answers,
            ended: &self.ended,
            streams: self.streams.as_deref(),
            stateless: self.is_stateless(),
        }
    }

    /// Writes the `notifications/cancelled` owed for calls given up and for calls
    /// still in flight (which then fail), then closes the protocol and waits for it
    /// to finish (which closes a local server's stdin, or ends an HTTP session with
    /// `DELETE`), then ends a local server: if it has not exited after a grace period
    /// its process group gets `SIGTERM`, and after another, `SIGKILL`; this returns
    /// once the whole group is gone (see [`stdio::ServerProcess::shutdown`]).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills the process group at once.
    pub(crate) async fn shutdown(&self) {
        // Both within the one wait, side by side.
        tokio::join!(
            self.subscriptions.close(CANCELLATION_WAIT),
            self.cancellations.flush(CANCELLATION_WAIT),
        );
        let service = lock(&self.service).take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(CLOSE_WAIT).await;
        }
        let process = lock(&self.process).take();
        if let Some(process) = process {
            process.shutdown().await;
        }
    }
}

/// How a local server failed: [`StartupError::Exited`] with its last stderr if it has
/// exited (or does shortly), else `otherwise` given that stderr.
async fn exit_report(
    process: &mut stdio::ServerProcess,
    otherwise: impl FnOnce(Vec<String>) -> StartupError,
) -> StartupError {
    let status = process.exit_status(EXIT_REPORT_WAIT).await;
    let stderr_tail = process.stderr_tail().last(STDERR_REPORT_LINES);
    match status {
        Some(status) => StartupError::Exited {
            status: status.into(),
            stderr_tail,
        },
        None => otherwise(stderr_tail),
    }
}

#[cfg(test)]
impl Connection {
    /// Calls `tool` without arguments, metadata or sandbox, bounded by `timeout`: the
    /// unit tests' call.
    pub(crate) async fn call_plain(
        &self,
        tool: &str,
        timeout: Duration,
    ) -> Result<ToolResult, CallError> {
        self.call_tool(
            tool,
            TaskSupport::Forbidden,
            None,
            JsonObject::new(),
            None,
            None,
            timeout,
        )
        .await
    }
}

/// A local server running `script` in `sh`, with `args` as `$1`, `$2`…, and only
/// `PATH` in its environment: the unit tests' hand-written servers.
#[cfg(test)]
pub(crate) fn sh_server(script: &str, args: &[&str]) -> Endpoint {
    let argv = ["sh", "-c", script, "sh"]
        .into_iter()
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect();
    let env = std::env::var_os("PATH")
        .map(|path| ("PATH".into(), path))
        .into_iter()
        .collect();
    Endpoint::Stdio(stdio::Launch {
        argv,
        env,
        cwd: None,
        max_message_bytes: crate::config::DEFAULT_MAX_MESSAGE_BYTES,
    })
}

#[cfg(test)]
mod tests;
