//! Many servers at once: concurrent startup with events, the shared catalog, routing of
//! tool calls, refreshes and shutdown.
//!
//! Invariants:
//! 1. The set of servers is fixed when [`Runtime::start`] returns; only their tool
//!    listings change afterwards.
//! 2. A server's listing is replaced only by a listing whose `tools/list` was sent
//!    later (a generation number is taken before the request), so an older answer
//!    that arrives late never overwrites a newer one.
//! 3. The catalog is rebuilt from all current listings whenever one changes, so the
//!    qualified names always follow the rule in [`crate::catalog`].
//! 4. Every server process belongs to the runtime: dropping the [`Runtime`] (or the
//!    future of [`Runtime::start`]) kills every process group it started. Between
//!    refreshes, background refresh tasks hold only a weak reference to the servers.

mod startup;

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex, RwLock, Weak,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::model::{CallToolResult, JsonObject, Tool};
use tokio::sync::watch;
use tokio_util::task::AbortOnDropHandle;

pub use self::startup::{DEFAULT_SCOPE, StartOptions, StartupEvent, StartupSummary};
use crate::{
    authority::{CallAuthority, probe::LauncherProbe},
    catalog::Catalog,
    config::{Config, ServerConfig, TransportConfig},
    connection::Connection,
    error::{CallError, ListToolsError, StartError, StartupError},
    sandbox_metadata::{self, CallSandbox},
    shared_listing::SharedTools,
};

/// The state of a server once its startup has settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerState {
    /// Started, handshake done, tools listed.
    Ready,
    /// Its startup failed; see [`ServerStatus::error`].
    Failed,
    /// Its startup was cancelled before it finished.
    Cancelled,
}

impl ServerState {
    /// The state a startup that ended with `error` (or none) settles in.
    pub(crate) fn of(error: Option<&StartupError>) -> Self {
        match error {
            None => Self::Ready,
            Some(StartupError::Cancelled) => Self::Cancelled,
            Some(_) => Self::Failed,
        }
    }

    /// `ready`, `failed` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    /// A local child process (possibly run through an environment's wrapper).
    Stdio,
    /// A Streamable HTTP endpoint.
    StreamableHttp,
}

impl TransportKind {
    /// `stdio` or `streamable-http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::StreamableHttp => "streamable-http",
        }
    }

    fn of(config: &ServerConfig) -> Self {
        match config.transport {
            TransportConfig::Stdio(_) => Self::Stdio,
            TransportConfig::StreamableHttp(_) => Self::StreamableHttp,
        }
    }
}

/// What the runtime knows about one server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// Its state.
    pub state: ServerState,
    /// How it is reached.
    pub transport: TransportKind,
    /// How long its startup took until it settled.
    pub startup_time: Duration,
    /// Why it failed, when it did.
    pub error: Option<StartupError>,
    /// Its process id, for a ready local server.
    pub pid: Option<u32>,
    /// How many of its tools are exposed.
    pub tools: usize,
    /// How many `tools/list` requests this runtime sent for the server's startup
    /// listing: 0 when another startup's listing was shared with it.
    pub tools_list_requests: usize,
}

/// Per-call options of [`Runtime::call_tool_with`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    meta: Option<JsonObject>,
    authority: Option<CallAuthority>,
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

    /// The authority of this call: its sandbox state and launcher candidate.
    pub fn with_authority(mut self, authority: CallAuthority) -> Self {
        self.authority = Some(authority);
        self
    }
}

/// A running set of MCP servers.
///
/// Dropping it kills every server process it started (each process group); call
/// [`Runtime::shutdown`] to give servers a grace period first.
pub struct Runtime {
    shared: Arc<Shared>,
    _refreshers: Vec<AbortOnDropHandle<()>>,
}

struct Shared {
    servers: BTreeMap<String, Server>,
    default_authority: RwLock<Option<CallAuthority>>,
    catalog: watch::Sender<Arc<Catalog>>,
    /// Set once shutdown begins: refreshes that fail from then on are expected.
    closing: AtomicBool,
}

struct Server {
    config: ServerConfig,
    startup_time: Duration,
    error: Option<StartupError>,
    connection: Option<Arc<Connection>>,
    tools_list_requests: usize,
    listing: Mutex<Listing>,
}

/// A server's current tool listing and the generation of the request it came from.
struct Listing {
    /// The generation of the listing held in `tools`.
    stored: u64,
    /// The generation the next request takes.
    next: u64,
    tools: SharedTools,
}

impl Runtime {
    /// Starts every enabled server of `config` concurrently and waits until each has
    /// become ready, failed or been cancelled.
    ///
    /// Each startup (spawn or connect, handshake, tool listing) is bounded by its
    /// server's `startup_timeout_sec`. Progress is sent to `options`' event channel.
    /// A `required` server that does not become ready fails the whole start; the
    /// servers that did start are then shut down.
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
    /// `tools/list` per discovery key, as [`crate::shared_listing`] describes; each
    /// keeps its own connection.
    pub async fn start(config: Config, options: StartOptions) -> Result<Self, StartError> {
        let outcomes = startup::start_all(&config, &options).await;
        let mut servers = BTreeMap::new();
        let mut required_failures = Vec::new();
        for outcome in outcomes {
            let name = outcome.config.name.clone();
            let (started, error) = match outcome.result {
                Ok(started) => (Some(started), None),
                Err(error) => (None, Some(error)),
            };
            if outcome.config.required
                && let Some(error) = &error
            {
                required_failures.push((name.clone(), error.clone()));
            }
            servers.insert(
                name,
                Server {
                    config: outcome.config,
                    startup_time: outcome.elapsed,
                    error,
                    tools_list_requests: outcome.tools_list_requests,
                    listing: Mutex::new(Listing {
                        stored: 0,
                        next: 1,
                        tools: started
                            .as_ref()
                            .map(|s| s.tools.clone())
                            .unwrap_or_default(),
                    }),
                    connection: started.map(|s| Arc::new(s.connection)),
                },
            );
        }
        let shared = Arc::new(Shared {
            catalog: watch::Sender::new(Arc::new(Shared::build_catalog(&servers))),
            servers,
            default_authority: RwLock::new(None),
            closing: AtomicBool::new(false),
        });
        if !required_failures.is_empty() {
            shared.shutdown().await;
            return Err(StartError::RequiredServersFailed {
                failures: required_failures,
            });
        }
        let refreshers = shared
            .servers
            .iter()
            .filter_map(|(name, server)| {
                let notify = server.connection.as_ref()?.tools_changed();
                let weak = Arc::downgrade(&shared);
                let name = name.clone();
                Some(AbortOnDropHandle::new(tokio::spawn(refresh_on_change(
                    weak, name, notify,
                ))))
            })
            .collect();
        Ok(Self {
            shared,
            _refreshers: refreshers,
        })
    }

    /// The status of every enabled server, in name order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        let catalog = self.catalog();
        self.shared
            .servers
            .iter()
            .map(|(name, server)| ServerStatus {
                name: name.clone(),
                state: ServerState::of(server.error.as_ref()),
                transport: TransportKind::of(&server.config),
                startup_time: server.startup_time,
                error: server.error.clone(),
                pid: server.connection.as_ref().and_then(|c| c.pid()),
                tools: catalog.tools().iter().filter(|t| t.server == *name).count(),
                tools_list_requests: server.tools_list_requests,
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
    /// `tool_timeout_sec`, under the runtime's default authority (if one is set). An
    /// `isError` result is a successful call: it comes back as the server sent it.
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
    pub async fn call_tool(
        &self,
        qualified_name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, CallError> {
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
    ) -> Result<CallToolResult, CallError> {
        let catalog = self.catalog();
        let tool = catalog
            .resolve(qualified_name)
            .ok_or_else(|| CallError::UnknownTool {
                name: qualified_name.to_owned(),
            })?;
        let server = &self.shared.servers[&tool.server];
        let connection = server
            .connection
            .clone()
            .ok_or_else(|| CallError::ServerUnavailable {
                server: tool.server.clone(),
            })?;
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
                        LauncherProbe::global().verified(path).await
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
        connection
            .call_tool(
                &tool.server,
                &tool.tool.name,
                arguments,
                meta,
                sandbox,
                server.config.tool_timeout,
            )
            .await
    }

    /// Sets the authority used by calls that do not bring their own; `None` clears it.
    pub fn set_default_authority(&self, authority: Option<CallAuthority>) {
        *self
            .shared
            .default_authority
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = authority;
    }

    fn default_authority(&self) -> Option<CallAuthority> {
        self.shared
            .default_authority
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Lists `server`'s tools again, on its own connection, and updates the catalog.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the request; the catalog keeps its listing.
    ///
    /// # Concurrent calls
    ///
    /// Concurrent refreshes each send their own `tools/list`; the catalog keeps the
    /// answer to the request that was sent last.
    pub async fn refresh_tools(&self, server: &str) -> Result<(), ListToolsError> {
        self.shared.refresh(server).await
    }

    /// Shuts every server down, concurrently: writes the `notifications/cancelled`
    /// owed for calls that timed out or were dropped, closes its connection, then
    /// `SIGTERM` to its process group and `SIGKILL` after a grace period. Returns once
    /// every server's whole process group is gone (each waits a bounded time for
    /// leftover members to be reaped).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future kills what is left at once.
    pub async fn shutdown(self) {
        self.shared.shutdown().await;
    }
}

impl Drop for Runtime {
    /// Kills every server's process group at once, even while a background refresh
    /// still holds the servers.
    fn drop(&mut self) {
        for server in self.shared.servers.values() {
            if let Some(connection) = &server.connection {
                connection.kill();
            }
        }
    }
}

impl Shared {
    fn build_catalog(servers: &BTreeMap<String, Server>) -> Catalog {
        let listings: Vec<(&str, Vec<Tool>)> = servers
            .iter()
            .filter(|(_, server)| server.connection.is_some())
            .map(|(name, server)| {
                let listing = server
                    .listing
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let exposed = listing
                    .tools
                    .iter()
                    .filter(|tool| server.config.exposes_tool(&tool.name))
                    .cloned()
                    .collect();
                (name.as_str(), exposed)
            })
            .collect();
        Catalog::build(
            listings
                .iter()
                .map(|(name, tools)| (*name, tools.as_slice())),
        )
    }

    async fn refresh(&self, name: &str) -> Result<(), ListToolsError> {
        let server = self
            .servers
            .get(name)
            .ok_or_else(|| ListToolsError::UnknownServer {
                server: name.to_owned(),
            })?;
        let connection =
            server
                .connection
                .clone()
                .ok_or_else(|| ListToolsError::ServerUnavailable {
                    server: name.to_owned(),
                })?;
        let generation = {
            let mut listing = server.listing.lock().unwrap_or_else(|p| p.into_inner());
            listing.next += 1;
            listing.next - 1
        };
        let tools = connection
            .list_tools(server.config.startup_timeout, &AtomicUsize::new(0))
            .await?;
        {
            let mut listing = server.listing.lock().unwrap_or_else(|p| p.into_inner());
            if generation <= listing.stored {
                return Ok(());
            }
            listing.stored = generation;
            listing.tools = Arc::new(tools);
        }
        self.catalog
            .send_replace(Arc::new(Self::build_catalog(&self.servers)));
        Ok(())
    }

    async fn shutdown(&self) {
        self.closing.store(true, Ordering::Relaxed);
        let connections = self
            .servers
            .values()
            .filter_map(|server| server.connection.clone());
        futures::future::join_all(connections.map(|connection| async move {
            connection.shutdown().await;
        }))
        .await;
    }
}

/// Refreshes `name`'s listing each time its server announces a change, for as long as
/// the runtime exists.
async fn refresh_on_change(shared: Weak<Shared>, name: String, changed: Arc<tokio::sync::Notify>) {
    loop {
        changed.notified().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if let Err(error) = shared.refresh(&name).await
            && !shared.closing.load(Ordering::Relaxed)
        {
            tracing::warn!(server = %name, error = %crate::error::chain(&error), "refreshing tools after list_changed failed");
        }
    }
}
