//! Concurrent startup of every enabled server, with progress events.
//!
//! Every server's startup is one future (prepare the endpoint, take a stamp from the
//! listing registry, spawn or connect, handshake, get the listing: shared or its own),
//! bounded by its `startup_timeout_sec` and raced against the host's cancellation. The
//! futures run concurrently in one `FuturesUnordered` inside the caller's future (the
//! runtime's startup task, see the `joining` module), so dropping that future drops
//! every startup, and with them every process they spawned. Each outcome is handed
//! over as soon as it is known, before its final event is sent: a host that sees a
//! server's `Ready` finds its tools in the catalog.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::{StreamExt, stream::FuturesUnordered};
use tokio::{sync::mpsc::UnboundedSender, time::Instant};

use crate::{
    binding::Binding,
    config::{Config, ServerConfig},
    connection::Connection,
    discovery_key::{LoginIdentity, StoredLogin},
    host::HostHandlers,
    protocol::client_config,
    protocol_era::Detection,
    shared_listing::{
        self, FleetTurn, LeaderGuard, ListingRegistry, Next, SharedTools, Startup, StartupKeys,
    },
    sync::lock,
    transport::{
        Endpoint,
        error::{RequestError, StartupError},
    },
};

use super::options::StartOptions;

/// Progress of a start, one event per step of each server, then a summary.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StartupEvent {
    /// The server's startup began.
    Starting {
        /// The server.
        server: String,
    },
    /// The server's process was spawned (local stdio servers only). Sent once per
    /// process: a startup that probes the protocol era of a server that leaves the
    /// probe unanswered, or exits after answering it, spawns two (three when a silent
    /// server turns out to speak only 2026-07-28), and the last one sent is the
    /// server's.
    Spawned {
        /// The server.
        server: String,
        /// Its process id, which is also its process group id.
        pid: u32,
    },
    /// The handshake is done and the startup needs the server's tools. Sent again with
    /// `shared: false` when a waiting startup takes over after the listing it waited
    /// for failed.
    ListingTools {
        /// The server.
        server: String,
        /// `false`: the startup sends `tools/list` on its own connection; `true`: it
        /// waits for another startup's listing.
        shared: bool,
    },
    /// The server is ready, and its tools are in the catalog already (also when it
    /// became ready after [`Runtime::start`](super::Runtime::start) returned).
    Ready {
        /// The server.
        server: String,
        /// How many tools it listed.
        tools: usize,
        /// How long its startup took.
        elapsed: Duration,
    },
    /// The server's startup failed.
    Failed {
        /// The server.
        server: String,
        /// Why ([`crate::error::chain`] writes it on one line).
        error: Arc<StartupError>,
        /// How long it took to fail.
        elapsed: Duration,
    },
    /// The server's startup was cancelled.
    Cancelled {
        /// The server.
        server: String,
    },
    /// Every startup has settled: sent before [`Runtime::start`](super::Runtime::start)
    /// returns with [`StartOptions::wait_for_all`], and possibly after it otherwise.
    Summary(StartupSummary),
    /// A server that was ready stopped: its process exited or its connection closed.
    /// Its tools stay in the catalog; its next call starts it again. Sent after
    /// [`StartupEvent::Summary`], like the restart events below: the channel of
    /// [`StartOptions::with_events`] keeps reporting for the runtime's whole life.
    Unavailable {
        /// The server.
        server: String,
        /// How it stopped: a local server's exit status and last stderr
        /// ([`RequestError::Exited`]), the end of its connection
        /// ([`RequestError::Closed`]), or what an HTTP server's transport saw
        /// ([`RequestError::Lost`]).
        error: Arc<RequestError>,
    },
    /// An attempt to start a stopped server again began. Its `Spawned` event follows
    /// for a local server.
    Restarting {
        /// The server.
        server: String,
        /// Which attempt since the server was last usable, from 1.
        attempt: u32,
    },
    /// A restart succeeded: the server is ready again, with its tools listed anew on
    /// its new connection.
    Restarted {
        /// The server.
        server: String,
        /// Which attempt succeeded.
        attempt: u32,
        /// How many tools it listed.
        tools: usize,
        /// How long the attempt took.
        elapsed: Duration,
    },
    /// A restart attempt failed.
    RestartFailed {
        /// The server.
        server: String,
        /// Which attempt failed.
        attempt: u32,
        /// Why.
        error: Arc<StartupError>,
        /// How long until the next attempt is allowed; `None` when no attempt is left
        /// (the server stays stopped until it is restarted explicitly).
        retry_in: Option<Duration>,
    },
}

/// How a start went, once every server has settled.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct StartupSummary {
    /// Servers that are ready.
    pub ready: Vec<String>,
    /// Servers that failed.
    pub failed: Vec<String>,
    /// Servers whose startup was cancelled.
    pub cancelled: Vec<String>,
    /// Wall time until the last server settled.
    pub elapsed: Duration,
}

/// A started server: its connection and its tools.
pub(super) struct Started {
    pub(super) connection: Connection,
    pub(super) tools: SharedTools,
}

/// How one server's startup ended.
pub(super) struct Outcome {
    pub(super) config: ServerConfig,
    pub(super) elapsed: Duration,
    /// How many `tools/list` requests the startup sent itself, whatever its result.
    pub(super) tools_list_requests: usize,
    /// Whether its listing was one the server granted to an earlier startup.
    pub(super) served_from_cache: bool,
    /// Where a listing the server granted for it is kept, to revoke it when the
    /// server's tools change.
    pub(super) listing_keys: Option<(ListingRegistry, StartupKeys)>,
    /// Where the server runs, for a server that started.
    pub(super) binding: Option<Binding>,
    /// The OAuth login stored for the server when its startup began, if any.
    pub(super) login: Option<StoredLogin>,
    pub(super) result: Result<Started, StartupError>,
}

impl Outcome {
    /// The event that reports this outcome.
    fn event(&self) -> StartupEvent {
        let server = self.config.name.clone();
        let elapsed = self.elapsed;
        match &self.result {
            Ok(started) => StartupEvent::Ready {
                server,
                tools: started
                    .tools
                    .iter()
                    .filter(|listed| self.config.exposes_tool(&listed.tool.name))
                    .count(),
                elapsed,
            },
            Err(StartupError::Cancelled) => StartupEvent::Cancelled { server },
            Err(error) => StartupEvent::Failed {
                server,
                error: Arc::new(error.clone()),
                elapsed,
            },
        }
    }
}

/// Starts every enabled server concurrently and hands each outcome to `settled` as
/// soon as it is known, then sends its final event; once all have settled, sends the
/// summary.
///
/// # Cancel safety
///
/// Dropping the future drops every startup still in progress (ending its process)
/// and reports it [`StartupEvent::Cancelled`].
pub(super) async fn start_all(
    config: &Config,
    options: &StartOptions,
    mut settled: impl FnMut(Outcome),
) {
    let began = Instant::now();
    let mut pending: FuturesUnordered<_> = config
        .enabled_servers()
        .map(|server| start_one(server, Binding::of(server, config), options))
        .collect();
    let mut summary = StartupSummary::default();
    while let Some((outcome, report)) = pending.next().await {
        let names = match &outcome.result {
            Ok(_) => &mut summary.ready,
            Err(StartupError::Cancelled) => &mut summary.cancelled,
            Err(_) => &mut summary.failed,
        };
        names.push(outcome.config.name.clone());
        let event = outcome.event();
        settled(outcome);
        report.settle(event);
    }
    summary.ready.sort();
    summary.failed.sort();
    summary.cancelled.sort();
    summary.elapsed = began.elapsed();
    send(&options.events, StartupEvent::Summary(summary));
}

/// Starts one server. The final event is left to the caller: the [`Report`] sends it
/// when told, or reports the startup cancelled if it is dropped first.
async fn start_one(
    config: &ServerConfig,
    binding: Result<Binding, StartupError>,
    options: &StartOptions,
) -> (Outcome, Report) {
    let began = Instant::now();
    let server = config.name.clone();
    let report = Report {
        events: options.events.clone(),
        server: server.clone(),
        settled: false,
    };
    report.send(StartupEvent::Starting {
        server: server.clone(),
    });
    let progress = Progress::default();
    let bound = binding.as_ref().ok().cloned();
    let startup = async {
        let binding = binding?;
        let endpoint = endpoint(config, &binding, options.credentials.as_ref())?;
        let login = stored_login(config, &endpoint).await;
        *lock(&progress.login) = login;
        let identity = login.and_then(|login| login.identity);
        // Stamped before anything is sent: a listing requested from now on may serve it.
        let ticket = (options.share_listings && config.share_tool_listing).then(|| {
            let keys = StartupKeys::new(
                &client_config(&options.host),
                &options.scope,
                &server,
                &endpoint,
                &config.environment,
                config.protocol,
                identity.as_ref(),
            );
            *lock(&progress.listing_keys) = Some((options.registry.clone(), keys));
            options.registry.begin(keys)
        });
        let plan = options.era_detection().plan(config, &endpoint);
        // The connecting and the listing are boxed: each is held only while it runs,
        // rather than the largest of them for the whole startup of every server
        // (all of them are in flight at once).
        let connection = Box::pin(Connection::connect_with(
            &server,
            &endpoint,
            &binding,
            &plan,
            &options.host,
            |pid| {
                report.send(StartupEvent::Spawned {
                    server: server.clone(),
                    pid,
                });
            },
        ))
        .await?;
        // A connection with an OAuth login shares only under the identity of its login
        // (see `shared_listing`, invariant 1): one whose login has none, or that found
        // another login than the one read above, lists on its own.
        let ticket = ticket.filter(|_| {
            connection.allows_shared_listing() && connection.uses_oauth() == identity.is_some()
        });
        let keyed = identity.map(|identity| (&endpoint, identity));
        // None for a timeout no clock reaches (`Duration::MAX`, say).
        let deadline = began.checked_add(config.startup_timeout);
        let tools = Box::pin(list(
            &connection,
            ticket,
            config,
            keyed,
            &report,
            &progress,
            deadline,
        ))
        .await?;
        Ok(Started { connection, tools })
    };
    let result = tokio::select! {
        biased;
        () = options.cancel.cancelled() => Err(StartupError::Cancelled),
        result = tokio::time::timeout(config.startup_timeout, startup) => match result {
            Ok(result) => result,
            Err(_) => Err(StartupError::Timeout {
                after: config.startup_timeout,
                waiting_for_shared_listing: progress.waiting.load(Ordering::Relaxed),
            }),
        },
    };
    let outcome = Outcome {
        config: config.clone(),
        elapsed: began.elapsed(),
        tools_list_requests: progress.requests.load(Ordering::Relaxed),
        served_from_cache: progress.served_from_cache.load(Ordering::Relaxed),
        listing_keys: lock(&progress.listing_keys).take(),
        login: *lock(&progress.login),
        binding: bound.filter(|_| result.is_ok()),
        result,
    };
    (outcome, report)
}

/// Starts `config`'s server again, alone: a new process or session, the protocol
/// started in the era `eras` knows (probed when unknown),
/// and its tools listed on its own connection (never a shared listing: the server
/// stopped, so any listing of it may be stale), bounded by `startup_timeout_sec`.
///
/// # Cancel safety
///
/// Dropping the future ends the server process, if one was started.
pub(super) async fn restart_one(
    config: &ServerConfig,
    binding: &Binding,
    eras: &Detection,
    credentials: Option<&TokenStore>,
    host: &HostHandlers,
    on_spawn: impl FnMut(u32),
) -> Result<Started, StartupError> {
    let server = &config.name;
    let attempt = async {
        let endpoint = endpoint(config, binding, credentials)?;
        // The era found by the startups (or by an earlier restart) is used as it is.
        let plan = eras.plan(config, &endpoint);
        let connection =
            Connection::connect_with(server, &endpoint, binding, &plan, host, on_spawn).await?;
        let listing = connection
            .list_tools(config, &AtomicUsize::new(0))
            .await
            .map_err(StartupError::ListTools)?;
        Ok(Started {
            connection,
            tools: Arc::new(listing.tools),
        })
    };
    tokio::time::timeout(config.startup_timeout, attempt)
        .await
        .unwrap_or(Err(StartupError::Timeout {
            after: config.startup_timeout,
            waiting_for_shared_listing: false,
        }))
}

/// Gets the startup listing: a shared one when `ticket` finds one, else from the
/// server on this startup's own connection (counting its requests in `progress`).
/// `keyed` is the OAuth login the ticket's key holds, reached through its endpoint:
/// a listing is shared only if the store still holds that login once it is listed.
async fn list(
    connection: &Connection,
    ticket: Option<Startup>,
    config: &ServerConfig,
    keyed: Option<(&Endpoint, LoginIdentity)>,
    report: &Report,
    progress: &Progress,
    deadline: Option<Instant>,
) -> Result<SharedTools, StartupError> {
    let own = |leader: Option<LeaderGuard>| async move {
        report.send(StartupEvent::ListingTools {
            server: config.name.clone(),
            shared: false,
        });
        let listing = connection
            .list_tools(config, &progress.requests)
            .await
            .map_err(StartupError::ListTools)?;
        let tools = Arc::new(listing.tools);
        if let Some(leader) = leader {
            // rmcp reads the store for every request: a login replaced while the
            // request was made (another account's, maybe) lists for this startup
            // alone. Dropping the guard hands the attempt over to a waiter.
            let replaced = match keyed {
                Some((endpoint, identity)) => {
                    let now = stored_login(config, endpoint).await;
                    now.and_then(|login| login.identity) != Some(identity)
                }
                None => false,
            };
            if replaced {
                tracing::debug!(
                    server = %config.name,
                    "the OAuth login changed while listing; the listing is not shared"
                );
                drop(leader);
            } else {
                leader
                    .publish_everywhere(tools.clone(), listing.grant)
                    .await;
            }
        }
        Ok(tools)
    };
    let Some(mut ticket) = ticket else {
        return own(None).await;
    };
    // A wait for another process's listing leaves half the time left to list alone.
    let until = deadline.map(|deadline| {
        let now = Instant::now();
        now + deadline.saturating_duration_since(now) / 2
    });
    let mut announced_wait = false;
    let shared = loop {
        match ticket.next() {
            Next::Take(tools) => break tools,
            Next::Granted(tools) => {
                progress.served_from_cache.store(true, Ordering::Relaxed);
                break tools;
            }
            Next::Lead(leader) => match leader.across_fleet(until, &progress.waiting).await {
                FleetTurn::Lead(leader) => return own(Some(leader)).await,
                FleetTurn::Shared { tools, granted } => {
                    progress.served_from_cache.store(granted, Ordering::Relaxed);
                    break tools;
                }
            },
            Next::Wait(attempt) => {
                if !std::mem::replace(&mut announced_wait, true) {
                    report.send(StartupEvent::ListingTools {
                        server: config.name.clone(),
                        shared: true,
                    });
                }
                progress.waiting.store(true, Ordering::Relaxed);
                let shared = shared_listing::wait(attempt).await;
                progress.waiting.store(false, Ordering::Relaxed);
                if let Some(tools) = shared {
                    break tools;
                }
            }
        }
    };
    // A shared listing says nothing about this startup's own server: it must still be
    // there.
    match connection.closed_error().await {
        Some(error) => Err(error),
        None => Ok(shared),
    }
}

/// What a startup's own future records for the outside: it is dropped on a timeout.
#[derive(Default)]
struct Progress {
    /// Whether it is waiting for another startup's listing.
    waiting: AtomicBool,
    /// How many `tools/list` requests it sent.
    requests: AtomicUsize,
    /// Whether it took a listing the server granted to an earlier startup.
    served_from_cache: AtomicBool,
    /// Its keys in the listing registry, once computed.
    listing_keys: Mutex<Option<(ListingRegistry, StartupKeys)>>,
    /// The OAuth login stored for it, once read.
    login: Mutex<Option<StoredLogin>>,
}

/// Sends one server's events; if the startup is dropped before it settles, reports
/// it as cancelled.
struct Report {
    events: Option<UnboundedSender<StartupEvent>>,
    server: String,
    settled: bool,
}

impl Report {
    fn send(&self, event: StartupEvent) {
        send(&self.events, event);
    }

    /// Sends the startup's final event.
    fn settle(mut self, event: StartupEvent) {
        self.settled = true;
        self.send(event);
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if !self.settled {
            self.send(StartupEvent::Cancelled {
                server: self.server.clone(),
            });
        }
    }
}

fn send(events: &Option<UnboundedSender<StartupEvent>>, event: StartupEvent) {
    if let Some(events) = events {
        // A host that stopped listening does not stop the start.
        let _ = events.send(event);
    }
}

/// The host's token store (see [`StartOptions::with_credentials`]), which a build
/// without the `oauth` feature has no way to give.
#[cfg(feature = "oauth")]
pub(crate) type TokenStore = Arc<dyn crate::auth::CredentialSource>;
/// The host's token store, which a build without the `oauth` feature has no way to
/// give: a type with no value.
#[cfg(not(feature = "oauth"))]
#[derive(Clone)]
pub(crate) enum TokenStore {}

/// The OAuth login stored for `config`'s server reached through `endpoint`: read once,
/// before anything is sent, for its identity (the discovery key) and its expiry (the
/// server's auth state). A store that cannot be read counts as no login here; the
/// connection reports the store's error itself.
///
/// # Cancel safety
///
/// Dropping the future abandons the read.
#[cfg(feature = "oauth")]
async fn stored_login(config: &ServerConfig, endpoint: &Endpoint) -> Option<StoredLogin> {
    let (Endpoint::Http(resolved) | Endpoint::Sse(resolved)) = endpoint else {
        return None;
    };
    let stored = resolved.oauth_store.as_ref()?.store.load().await.ok()??;
    let resource = config.oauth.resource.as_deref().unwrap_or(&resolved.url);
    StoredLogin::of(&stored, resource)
}

/// No login is stored where a build has no OAuth.
#[cfg(not(feature = "oauth"))]
async fn stored_login(_config: &ServerConfig, _endpoint: &Endpoint) -> Option<StoredLogin> {
    None
}

/// `config`'s endpoint, resolved against this process's environment; a remote
/// server's with its OAuth store when the host gave a token store, and with its
/// pre-registered client's secret or key read from the environment. A machine client
/// (`grant_type = "client_credentials"`) gets its tokens without a person, so it has
/// a store even when the host gave none: one in memory, for this runtime.
fn endpoint(
    config: &ServerConfig,
    binding: &Binding,
    credentials: Option<&TokenStore>,
) -> Result<Endpoint, StartupError> {
    #[cfg(not(feature = "oauth"))]
    {
        let _ = credentials;
        let endpoint = Endpoint::prepare(config, binding.wrapper())?;
        if config.oauth != crate::config::OAuthConfig::default() {
            return Err(StartupError::FeatureLeftOut {
                feature: "oauth",
                needed_by: "a server with OAuth settings",
            });
        }
        Ok(endpoint)
    }
    #[cfg(feature = "oauth")]
    {
        with_oauth(config, binding, credentials)
    }
}

/// [`endpoint`], with OAuth.
#[cfg(feature = "oauth")]
fn with_oauth(
    config: &ServerConfig,
    binding: &Binding,
    credentials: Option<&TokenStore>,
) -> Result<Endpoint, StartupError> {
    use crate::transport::http::{OAuthStore, resolve_oauth};
    let mut endpoint = Endpoint::prepare(config, binding.wrapper())?;
    if let Endpoint::Http(resolved) | Endpoint::Sse(resolved) = &mut endpoint {
        let client = resolve_oauth(&config.oauth, |name| std::env::var_os(name))?;
        let store = match credentials {
            Some(source) => Some(source.store_for(&config.name, &resolved.url, &config.oauth)),
            None if client.as_ref().is_some_and(|client| client.machine) => {
                Some(Arc::new(crate::auth::InMemoryCredentialStore::new()) as Arc<_>)
            }
            None => None,
        };
        resolved.oauth_store = store.map(|store| OAuthStore {
            store,
            client,
            resource: config.oauth.resource.clone(),
        });
    }
    Ok(endpoint)
}
