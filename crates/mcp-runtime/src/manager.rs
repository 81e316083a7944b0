//! Many servers at once: concurrent startup with events, the shared catalog, routing of
//! tool calls, refreshes and shutdown.
//!
//! Invariants:
//! 1. The set of servers is fixed when [`Runtime::start`] begins; only their states,
//!    tool listings and connections change afterwards. A server still starting when
//!    the start returns joins when it is ready, as the `joining` module describes. A
//!    server that stops after it was ready keeps its tools in the catalog and is
//!    started again by its next call or refresh, as the `supervisor` module describes;
//!    a server whose startup failed is never started again.
//! 2. A server's listing is replaced only by a listing whose `tools/list` was sent
//!    later (a generation number is taken before the request), so an older answer
//!    that arrives late never overwrites a newer one.
//! 3. Whenever a listing changes, the published catalog has the tools of every server
//!    whose listing was stored since it was published replaced
//!    ([`Catalog::with_server`]; the others are shared as they are), so the qualified
//!    names always follow the rule in [`crate::catalog`] (every server is declared up
//!    front, catalog invariant 4).
//! 4. A published catalog never goes back to older listings, and catalogs are named
//!    in the order of their listings. Storing a listing bumps the listings' version
//!    under their lock. A catalog is built from the current listings (the servers
//!    whose listing was stored since the published catalog replaced) and published in
//!    one step under the catalog channel's lock (`send_if_modified`), and only if
//!    their version is newer than the published one's (a publication fence); nothing
//!    in that step awaits, and a stale catalog is never built. So once a refresh that stored a listing returns, the
//!    published catalog includes that listing or a newer one, and the naming registry
//!    never names older listings after newer ones (which would record the newer
//!    tools as departed). Lock order: the catalog channel, then the listings, then
//!    the naming registry (each held only to copy the listings or to name).
//! 5. Every server process belongs to the runtime: dropping the [`Runtime`] (or the
//!    future of [`Runtime::start`]) kills every process group it started, including
//!    those of startups still in progress (joining invariant 3). Between refreshes,
//!    background refresh tasks and the startup task hold only a weak reference to the
//!    servers.
//!    A connection a restart replaces is shut down before the new one is installed.

pub(crate) mod error;

mod features;

mod in_process;

pub use features::{Prompts, Resources, ServerPrompt, ServerResource, ServerResourceTemplate};

mod joining;

mod options;

mod publication;

mod startup;

mod status;

mod supervisor;

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use rmcp::model::JsonObject;
use serde_json::value::RawValue;
use tokio::sync::{mpsc::UnboundedSender, watch};
use tokio_util::task::AbortOnDropHandle;

use self::{
    error::StartError,
    publication::{Listing, Listings, refresh_on_change},
    status::auth_state,
};
pub use self::{
    options::{DEFAULT_OPTIONAL_GRACE, DEFAULT_SCOPE, StartOptions},
    startup::{StartupEvent, StartupSummary},
    status::{AuthState, ServerState, ServerStatus, TransportKind},
};
use crate::{
    authority::{CallAuthority, probe::LauncherProbe},
    catalog::Catalog,
    config::{Config, ServerConfig},
    connection::{Connection, error::CallError},
    sandbox_metadata::{self, CallSandbox},
    sync::lock,
    tool_result::ToolResult,
    transport::error::{ListToolsError, RequestError, RestartError},
};

/// Per-call options of [`Runtime::call_tool_with`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    meta: Option<JsonObject>,
    authority: Option<CallAuthority>,
    progress: Option<crate::progress::OnProgress>,
}

impl CallOptions {
    /// No `_meta`, the runtime's default authority.
    pub fn new() -> Self {
        Self::default()
    }

    /// A `_meta` object the host passes through to the server. Sandbox keys in it are
    /// dropped; the runtime sets its own.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The progress the server reports during the call goes to `on_progress` (see
    /// [`OnProgress`](crate::OnProgress)); without it no progress is asked for.
    pub fn with_progress(mut self, on_progress: crate::progress::OnProgress) -> Self {
        self.progress = Some(on_progress);
        self
    }

    /// The authority of this call: its sandbox state and launcher candidate.
    pub fn with_authority(mut self, authority: CallAuthority) -> Self {
        self.authority = Some(authority);
        self
    }
}

/// A call's arguments: an object, or the exact JSON text of one.
enum Arguments<'a> {
    Object(Option<JsonObject>),
    Exact(&'a RawValue),
}

/// A running set of MCP servers.
///
/// Dropping it kills every server process it started (each process group); call
/// [`Runtime::shutdown`] to give servers a grace period first.
pub struct Runtime {
    shared: Arc<Shared>,
    /// The startups still in progress when the start returned, as a task (see the
    /// `joining` module); dropping the handle aborts it.
    _startups: Option<AbortOnDropHandle<()>>,
}

struct Shared {
    servers: BTreeMap<String, Server>,
    /// When the start began.
    began: Instant,
    /// Cancels the startups still in progress.
    startups_cancel: CancellationToken,
    /// Closed when the startup task has ended.
    startups_done: watch::Receiver<()>,
    /// Where startup and restart events go.
    events: Option<UnboundedSender<StartupEvent>>,
    /// See [`StartOptions::with_first_restart_pause`].
    first_restart_pause: Duration,
    /// Where restarts find their servers' protocol eras.
    eras: crate::protocol_era::Detection,
    /// See [`StartOptions::with_credentials`].
    credentials: Option<startup::TokenStore>,
    /// See [`StartOptions::with_host`].
    host: crate::host::HostHandlers,
    /// The tools' output schemas, compiled.
    validators: crate::output_schema::Validators,
    default_authority: RwLock<Option<CallAuthority>>,
    listings: Mutex<Listings>,
    catalog: watch::Sender<Arc<Catalog>>,
    /// The listings' version the published catalog was built from. Changed only
    /// inside `catalog.send_if_modified`, whose lock orders every publication.
    published: AtomicU64,
    /// Cancelled once the runtime ends, however it ends (`shutdown`, `abort`, drop):
    /// refreshes that fail from then on are expected, and a restart in progress is
    /// given up (supervisor invariant 5).
    closing: CancellationToken,
    /// Set once a shutdown ended: every caller of `shutdown` waits for the one that
    /// runs (a runtime shared through an `Arc` may be closed by several holders).
    shut_down: tokio::sync::OnceCell<()>,
    /// The servers of the configuration that are disabled (`enabled = false`): a call
    /// to one of their tools says so.
    disabled: Vec<String>,
}

struct Server {
    config: ServerConfig,
    /// How its first startup ended, once it has (see the `joining` module).
    settled: watch::Sender<Option<Arc<joining::Settled>>>,
    live: Mutex<supervisor::Live>,
    /// Held by whoever replaces the connection (supervisor invariant 1 and 2).
    restarting: tokio::sync::Mutex<()>,
    /// The generation of the current connection, for the background refresh.
    generation: watch::Sender<u64>,
    /// How many restarts succeeded.
    restarts: AtomicU64,
    /// Refreshes its listing when it announces a change, once it has started.
    refresher: Mutex<Option<AbortOnDropHandle<()>>>,
}

impl Server {
    /// A server that is starting.
    fn new(config: ServerConfig) -> Self {
        Self {
            config,
            settled: watch::Sender::new(None),
            live: Mutex::new(supervisor::Live::default()),
            restarting: tokio::sync::Mutex::new(()),
            generation: watch::Sender::new(0),
            restarts: AtomicU64::new(0),
            refresher: Mutex::new(None),
        }
    }

    /// The current connection, usable or not.
    fn connection(&self) -> Option<Arc<Connection>> {
        lock(&self.live).connection.clone()
    }
}

impl Runtime {
    /// Starts every enabled server of `config` concurrently and returns once the
    /// runtime is usable: by default when every `required` server is ready and then
    /// every optional one has settled or a grace of 1 s has passed
    /// ([`StartOptions::with_optional_grace`]); with [`StartOptions::wait_for_all`],
    /// when every server has settled (ready, failed or cancelled).
    ///
    /// Servers still starting when it returns are [`ServerState::Starting`]; they go
    /// on starting in the background and join the catalog when they are ready, which
    /// [`Self::subscribe_catalog`] announces (and their [`StartupEvent::Ready`]). A call
    /// to one of them waits for it.
    ///
    /// Each startup (spawn or connect, handshake, tool listing) is bounded by its
    /// server's `startup_timeout_sec`. Progress is sent to `options`' event channel.
    /// A `required` server that does not become ready fails the whole start as soon
    /// as it fails; the other startups are then cancelled and the servers that did
    /// start shut down.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills every server process started so far; servers whose
    /// startup had not settled are reported as [`StartupEvent::Cancelled`].
    ///
    /// # Concurrent calls
    ///
    /// Starts running at the same time (in this runtime or others sharing the
    /// [`ListingRegistry`](crate::ListingRegistry) of `options`) coalesce their startup
    /// `tools/list` per discovery key, as the registry's docs describe; each keeps its
    /// own connection. Startups that go on after the start returned keep taking part.
    pub async fn start(config: Config, mut options: StartOptions) -> Result<Self, StartError> {
        // The runtime's own changes, even when its host's handlers serve another.
        options.host.changes = crate::changes::Changes::with_backlog(options.change_backlog);
        let cancel = options.cancel().child_token();
        let servers = config
            .enabled_servers()
            .map(|server| (server.name.clone(), Server::new(server.clone())))
            .collect();
        let (done, startups_done) = watch::channel(());
        let mut shared = Shared::new(servers, BTreeMap::new(), options.other_servers());
        shared.events = options.events();
        shared.first_restart_pause = options.first_restart_pause();
        shared.eras = options.era_detection();
        shared.credentials = options.credentials();
        shared.host = options.host();
        shared.disabled = config
            .servers
            .values()
            .filter(|server| !server.enabled)
            .map(|server| server.name.clone())
            .collect();
        shared.startups_cancel = cancel.clone();
        shared.startups_done = startups_done;
        let shared = Arc::new(shared);
        let wait = options.wait();
        // The startups run inside this future until the runtime is usable, so that
        // dropping it drops them (and ends their processes) at once; the rest of them
        // then move to a task of their own.
        let mut startups = Box::pin(joining::drive(
            Arc::downgrade(&shared),
            config,
            options.with_cancellation(cancel),
            done,
        ));
        let mut startups_ended = false;
        {
            let usable = shared.wait_until_usable(wait);
            tokio::pin!(usable);
            tokio::select! {
                usable = &mut usable => usable,
                () = &mut startups => {
                    startups_ended = true;
                    usable.await
                }
            }?;
        }
        Ok(Self {
            shared,
            // An ended future is never polled again.
            _startups: (!startups_ended).then(|| AbortOnDropHandle::new(tokio::spawn(startups))),
        })
    }

    /// The status of every enabled server, in name order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        let catalog = self.catalog();
        self.shared
            .servers
            .iter()
            .map(|(name, server)| {
                let settled = server.settled();
                let live = lock(&server.live);
                let usable = live.usable().is_some();
                let started = settled.as_ref().is_some_and(|s| s.binding.is_some());
                let state = if let Some(settled) = settled.as_ref().filter(|_| !started) {
                    ServerState::of(settled.error.as_ref())
                } else if settled.is_none() {
                    ServerState::Starting
                } else if usable {
                    ServerState::Ready
                } else if live.backoff.attempts() >= supervisor::MAX_ATTEMPTS {
                    ServerState::Failed
                } else {
                    ServerState::Unavailable
                };
                let unavailable = (!usable && started).then(|| {
                    live.lost.clone().unwrap_or_else(|| RequestError::Closed {
                        stderr_tail: Vec::new(),
                    })
                });
                let error = live
                    .last_error
                    .clone()
                    .or_else(|| settled.as_ref().and_then(|s| s.error.clone()));
                let login = settled.as_ref().and_then(|s| s.login);
                let auth = auth_state(
                    &server.config,
                    live.connection.as_deref(),
                    error.as_ref(),
                    login,
                    std::time::SystemTime::now(),
                );
                ServerStatus {
                    name: name.clone(),
                    state,
                    transport: match &live.connection {
                        Some(connection) if connection.over_legacy_sse() => TransportKind::Sse,
                        _ => TransportKind::of(&server.config),
                    },
                    startup_time: settled
                        .as_ref()
                        .map_or_else(|| self.shared.began.elapsed(), |s| s.startup_time),
                    error,
                    unavailable,
                    restarts: server.restarts.load(Ordering::Relaxed) as u32,
                    pid: live.connection.as_ref().and_then(|c| c.pid()),
                    protocol_version: live.connection.as_ref().and_then(|c| c.protocol_version()),
                    instructions: live.connection.as_ref().and_then(|c| c.instructions()),
                    auth,
                    tools: catalog.server_tools(name).len(),
                    tools_list_requests: settled.as_ref().map_or(0, |s| s.tools_list_requests),
                    served_from_cache: settled.as_ref().is_some_and(|s| s.served_from_cache),
                    supports_parallel_tool_calls: server.config.supports_parallel_tool_calls,
                    default_tools_approval_mode: server.config.default_tools_approval_mode,
                }
            })
            .collect()
    }

    /// A snapshot of the catalog: every exposed tool under its qualified name.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared.catalog.borrow().clone()
    }

    /// A receiver that sees every new catalog, for a host that re-sends the tool list
    /// to its model when a server's tools change.
    pub fn subscribe_catalog(&self) -> watch::Receiver<Arc<Catalog>> {
        self.shared.catalog.subscribe()
    }

    /// Calls the tool with this qualified name, bounded by its server's
    /// `tool_timeout_sec`, under the runtime's default authority (if one is set). The
    /// result comes back as the server returned it ([`ToolResult`]: every field and
    /// content block, those of a later revision or an extension included); an
    /// `isError` result is a successful call.
    ///
    /// A call to a server still [`ServerState::Starting`] (told from the name's
    /// `mcp__SERVER__` prefix) first waits for it to settle, which its
    /// `startup_timeout_sec` bounds; a call to a server whose startup failed fails at
    /// once with [`CallError::ServerNotStarted`], carrying that startup error.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future sends the server `notifications/cancelled` for the call;
    /// so does running out of time. Neither waits for it to be written, but
    /// [`Self::shutdown`] does before it closes the connection (dropping the runtime
    /// instead kills the servers at once, and what is not written yet is lost).
    ///
    /// # Concurrent calls
    ///
    /// Calls run concurrently, each as its own request on the server's connection.
    ///
    /// # A server that stopped
    ///
    /// A call in flight when its server's process exits (or its connection closes)
    /// fails at once with [`CallError::ServerLost`], naming the exit status and the
    /// last stderr. The server is then [`ServerState::Unavailable`] and the next call
    /// starts it again (a new process, or a new HTTP session) and lists its tools on
    /// the new connection before it is sent; concurrent calls wait for that one
    /// restart. A failed restart fails the call with [`CallError::Restart`]; the next
    /// attempt is allowed after a pause that doubles from 1 s to 30 s, and after 5
    /// attempts without a successful call in between the server stays stopped until
    /// [`Self::restart`]. Each step is reported on the event channel of
    /// [`StartOptions::with_events`].
    pub async fn call_tool(
        &self,
        qualified_name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<ToolResult, CallError> {
        self.call_tool_with(qualified_name, arguments, CallOptions::new())
            .await
    }

    /// [`Self::call_tool`] with a `_meta` to pass through and the authority of this
    /// call (which replaces the runtime's default).
    ///
    /// A server that opted into sandbox metadata receives the authority's state (under
    /// both names, byte for byte) and, if it is a local stdio server and the launcher
    /// passes the capability probe, the launcher. Any of those keys in `options`' `_meta`
    /// or in the arguments is dropped first; other servers receive none of them.
    /// Arguments are never read for authority. A launcher probe (at most 5 s, once per
    /// launcher file) runs before the call and does not count against its timeout.
    ///
    /// # Cancel safety
    ///
    /// As [`Self::call_tool`]. A launcher probe in progress is abandoned.
    ///
    /// # Concurrent calls
    ///
    /// As [`Self::call_tool`]; concurrent calls naming the same new launcher file share
    /// one probe run.
    pub async fn call_tool_with(
        &self,
        qualified_name: &str,
        arguments: Option<JsonObject>,
        options: CallOptions,
    ) -> Result<ToolResult, CallError> {
        self.call(qualified_name, Arguments::Object(arguments), options)
            .await
    }

    /// [`Self::call_tool_with`] with the arguments as JSON text (an object), which the
    /// server receives exactly as written: numbers beyond `f64` keep every digit,
    /// strings keep their escapes. Only the whitespace between tokens may change, and
    /// the reserved sandbox keys are dropped as for [`Self::call_tool_with`].
    ///
    /// # Cancel safety
    ///
    /// As [`Self::call_tool`].
    ///
    /// # Concurrent calls
    ///
    /// As [`Self::call_tool`].
    pub async fn call_tool_exact(
        &self,
        qualified_name: &str,
        arguments: &RawValue,
        options: CallOptions,
    ) -> Result<ToolResult, CallError> {
        self.call(qualified_name, Arguments::Exact(arguments), options)
            .await
    }

    /// The call of [`Self::call_tool`] and its siblings. The common case, a tool of
    /// the catalog on a server whose connection is usable, takes one short path: one
    /// look in the catalog (whose tool the result is checked against), one look for
    /// the server, its connection taken at once, the arguments moved into the request.
    /// Waiting for a server, starting it again, probing a launcher and reporting a lost
    /// connection are off that path, each in a future of its own.
    async fn call(
        &self,
        qualified_name: &str,
        arguments: Arguments<'_>,
        options: CallOptions,
    ) -> Result<ToolResult, CallError> {
        let tool = self.shared.route(qualified_name).await?;
        let server_name = &tool.server;
        let server = &self.shared.servers[&**server_name];
        let usable = lock(&server.live).usable();
        let (connection, generation) =
            match usable {
                Some(usable) => usable,
                None => Box::pin(self.shared.available(server_name))
                    .await
                    .map_err(|error| match error {
                        RestartError::NeverStarted { server } => {
                            CallError::ServerUnavailable { server }
                        }
                        error => CallError::Restart(error),
                    })?,
            };
        // The slots of exact arguments live until the call has ended.
        let (arguments, _argument_slots) = match arguments {
            Arguments::Object(arguments) => (arguments, Vec::new()),
            Arguments::Exact(raw) => {
                let (object, slots) = connection.exact_arguments(raw).ok_or_else(|| {
                    CallError::ArgumentsNotAnObject {
                        name: qualified_name.to_owned(),
                    }
                })?;
                (Some(object), slots)
            }
        };
        let mut meta = options.meta.unwrap_or_default();
        sandbox_metadata::strip_reserved_keys(&mut meta);
        let arguments = arguments.map(|mut arguments| {
            sandbox_metadata::strip_reserved_arguments(&mut arguments);
            arguments
        });
        let authority = options.authority.or_else(|| self.default_authority());
        let sandbox = match authority {
            Some(authority) if connection.wants_sandbox_metadata() => {
                let launcher = match &authority.codex_executable {
                    Some(path) if connection.may_offer_launcher() => {
                        Box::pin(LauncherProbe::global().verified(path)).await
                    }
                    _ => None,
                };
                Some(CallSandbox {
                    state: authority.state,
                    launcher,
                })
            }
            _ => None,
        };
        let result = connection
            .call_tool(
                &tool.tool.name,
                tool.task_support,
                arguments,
                meta,
                sandbox,
                options.progress,
                server.config.tool_timeout,
            )
            .await;
        match result {
            Ok(result) => {
                server.succeeded(generation);
                match self.output_mismatch(qualified_name, server_name, &tool.tool, &result) {
                    None => Ok(result),
                    Some(message) => Err(CallError::OutputMismatch {
                        server: server_name.to_string(),
                        tool: tool.tool.name.to_string(),
                        message,
                        result: Box::new(result),
                    }),
                }
            }
            // A request that failed because the connection ended: say how it ended.
            Err(CallError::Failed {
                server,
                tool,
                source:
                    RequestError::Exited { .. }
                    | RequestError::Closed { .. }
                    | RequestError::Lost { .. },
            }) if let Some(lost) = Box::pin(connection.lost_error()).await => {
                self.shared.lost(&server, generation, &lost);
                Err(CallError::ServerLost {
                    server,
                    tool,
                    source: lost,
                    local: connection.pid().is_some(),
                })
            }
            Err(error) => Err(error),
        }
    }

    /// Sets the authority used by calls that do not bring their own; `None` clears it.
    pub fn set_default_authority(&self, authority: Option<CallAuthority>) {
        *crate::sync::write(&self.shared.default_authority) = authority;
    }

    fn default_authority(&self) -> Option<CallAuthority> {
        crate::sync::read(&self.shared.default_authority).clone()
    }

    /// Lists `server`'s tools again, on its own connection, and updates the catalog.
    /// A server still starting is waited for first.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the request; the catalog keeps its listing.
    ///
    /// # Concurrent calls
    ///
    /// Concurrent refreshes each send their own `tools/list`; the catalog keeps the
    /// answer to the request that was sent last, and never goes back to an older
    /// listing of any server (see the module's invariant 4).
    pub async fn refresh_tools(&self, server: &str) -> Result<(), ListToolsError> {
        self.shared.refresh(server).await
    }

    /// Starts `server` again: shuts its current connection down (if any), then starts
    /// it as a restart after it stopped does, and resets its count of attempts. A
    /// server still starting is waited for first.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future ends the new server process, if one was started; the
    /// server is then unavailable and its next call starts it.
    ///
    /// # Concurrent calls
    ///
    /// Calls to the server wait for the restart, then use the new connection.
    pub async fn restart(&self, server: &str) -> Result<(), RestartError> {
        self.shared.restart(server).await.map(drop)
    }

    /// How `result` fails the `outputSchema` of `tool`, the tool called, if it does
    /// (see [`crate::output_schema`]).
    fn output_mismatch(
        &self,
        qualified_name: &str,
        server: &str,
        tool: &Arc<rmcp::model::Tool>,
        result: &ToolResult,
    ) -> Option<String> {
        self.shared
            .validators
            .check(server, qualified_name, tool, result)
            .err()
    }

    /// Tells every server with a connection that the host's roots changed
    /// (`notifications/roots/list_changed`), when the host offers roots (see
    /// [`crate::host::Roots`]); a server asks for them again when it needs them. A
    /// 2026-07-28 server is not told: that revision has no notifications from the
    /// client, and it asks for the roots with each request that needs them.
    pub async fn roots_changed(&self) {
        if self.shared.host.roots.is_none() {
            return;
        }
        let connections: Vec<_> = self
            .shared
            .servers
            .values()
            .filter_map(|server| {
                lock(&server.live)
                    .usable()
                    .map(|(connection, _)| connection)
            })
            .collect();
        futures::future::join_all(
            connections
                .iter()
                .map(|connection| connection.roots_changed()),
        )
        .await;
    }

    /// Cancels the startups still in progress and waits for them to end (with the
    /// processes they spawned), then shuts every server down, concurrently: writes the
    /// `notifications/cancelled`
    /// owed for calls that timed out or were dropped, closes its connection, then
    /// `SIGTERM` to its process group and `SIGKILL` after a grace period. Returns once
    /// every server's whole process group is gone (each waits a bounded time for
    /// leftover members to be reaped).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills what is left at once.
    pub async fn shutdown(self) {
        self.close().await;
    }

    /// Shuts every server down as [`Self::shutdown`] does, for a runtime that others
    /// still hold (one shared through an `Arc` by many clients). The servers stop for
    /// good: none restarts, and a later call fails as one to a server that stopped.
    ///
    /// Concurrent calls share one shutdown: each returns once it has ended.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills at once the processes it was shutting down; the
    /// servers it had not reached yet end with the runtime's drop, or with another
    /// call's shutdown.
    pub async fn close(&self) {
        self.shared.shutdown().await;
    }

    /// Ends every server now, for a host that must stop at once (an interrupt): writes
    /// the `notifications/cancelled` owed for calls that timed out or were dropped,
    /// and for calls still in flight (waiting at most two seconds for those writes),
    /// then kills every process group without a grace period. Dropping the runtime
    /// kills at once too, but cannot wait for what is owed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills what is left at once.
    pub async fn abort(self) {
        self.shared.closing.cancel();
        // Startups still in progress end their processes at once when cancelled.
        self.shared.stop_startups().await;
        let connections = self
            .shared
            .servers
            .values()
            .filter_map(|server| server.connection());
        futures::future::join_all(connections.map(|connection| async move {
            connection.abort().await;
        }))
        .await;
    }
}

impl std::fmt::Debug for Runtime {
    /// The servers' names and states; nothing of their configuration (which may name
    /// secrets).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let states: BTreeMap<String, &'static str> = self
            .servers()
            .into_iter()
            .map(|status| (status.name, status.state.as_str()))
            .collect();
        f.debug_struct("Runtime")
            .field("servers", &states)
            .finish_non_exhaustive()
    }
}

impl Drop for Runtime {
    /// Kills every server's process group at once, even while a background refresh
    /// still holds the servers; the startups still in progress end with the startup
    /// task, which dropping the runtime aborts.
    fn drop(&mut self) {
        // Before the connections are read: a restart that installs its connection
        // after this sees it and ends that connection itself (supervisor invariant 5).
        self.shared.closing.cancel();
        // The startup task is aborted with its handle; cancelling first ends its
        // startups even if it is being polled right now.
        self.shared.startups_cancel.cancel();
        for server in self.shared.servers.values() {
            if let Some(connection) = server.connection() {
                connection.kill();
            }
        }
    }
}

impl Shared {
    /// The state of a runtime of `servers`, whose catalog names their tools as if
    /// `others` were started too. Every server's namespace is decided among all of
    /// them before any tool is named (invariant 1: they are known now), so it does
    /// not depend on the order in which they become ready.
    fn new(
        servers: BTreeMap<String, Server>,
        listings: BTreeMap<String, Listing>,
        others: &[String],
    ) -> Self {
        let declared: Vec<String> = servers.keys().chain(others).cloned().collect();
        let shared = Self {
            servers,
            began: Instant::now(),
            startups_cancel: CancellationToken::new(),
            startups_done: watch::channel(()).1,
            events: None,
            first_restart_pause: supervisor::FIRST_BACKOFF,
            eras: crate::protocol_era::Detection::default(),
            credentials: None,
            host: crate::host::HostHandlers::default(),
            validators: Default::default(),
            default_authority: RwLock::new(None),
            listings: Mutex::new(Listings {
                version: 0,
                by_server: listings,
            }),
            catalog: watch::Sender::new(Arc::new(Catalog::for_servers(declared))),
            published: AtomicU64::new(0),
            closing: CancellationToken::new(),
            shut_down: tokio::sync::OnceCell::new(),
            disabled: Vec::new(),
        };
        // The listings a runtime begins with (in tests), at version 0.
        shared.catalog.send_modify(|current| {
            debug_assert_eq!(lock(&shared.listings).version, 0, "nothing was stored yet");
            *current = Arc::new(shared.build_catalog(current));
        });
        shared
    }

    /// Shuts every server down once; a second caller waits for the first's shutdown
    /// (and takes it over if the first is dropped).
    async fn shutdown(&self) {
        self.shut_down.get_or_init(|| self.shut_down_now()).await;
    }

    async fn shut_down_now(&self) {
        self.closing.cancel();
        // Before the connections: a server that joins meanwhile is shut down below.
        self.stop_startups().await;
        futures::future::join_all(self.servers.values().map(|server| async move {
            // A watcher ending a stopped server's process holds this lock: wait for it.
            let _restarting = server.restarting.lock().await;
            if let Some(connection) = server.connection() {
                connection.shutdown().await;
            }
        }))
        .await;
    }

    fn send(&self, event: StartupEvent) {
        if let Some(events) = &self.events {
            // A host that stopped listening does not stop the runtime.
            let _ = events.send(event);
        }
    }
}

#[cfg(test)]
mod tests;
