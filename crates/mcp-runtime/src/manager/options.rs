//! How to start a runtime: [`StartOptions`], and when [`Runtime::start`](super::Runtime::start)
//! returns.

use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::{StartupEvent, startup::TokenStore};
use crate::{
    host::HostHandlers,
    protocol::client_config,
    protocol_era::{DEFAULT_PROBE_BOUND, Detection, EraCache},
    shared_listing::ListingRegistry,
};

pub use crate::discovery_key::DEFAULT_SCOPE;

/// How long [`Runtime::start`](super::Runtime::start) waits, by default, for optional
/// servers once the required ones are ready.
pub const DEFAULT_OPTIONAL_GRACE: Duration = Duration::from_secs(1);

/// When [`Runtime::start`](super::Runtime::start) returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Once every required server is ready and then every optional one has settled or
    /// this long has passed, whichever comes first.
    RequiredThenGrace(Duration),
    /// Once every server has settled.
    All,
}

/// How to start a [`Runtime`](super::Runtime).
#[derive(Clone)]
#[non_exhaustive]
pub struct StartOptions {
    pub(super) events: Option<UnboundedSender<StartupEvent>>,
    pub(super) cancel: CancellationToken,
    pub(super) scope: String,
    pub(super) registry: ListingRegistry,
    pub(super) share_listings: bool,
    pub(super) first_restart_pause: Duration,
    pub(super) wait: Wait,
    pub(super) other_servers: Vec<String>,
    pub(super) probe_bound: Duration,
    /// Where local servers' eras are kept across processes, if anywhere.
    pub(super) era_cache: Option<EraCache>,
    /// The token store of the host, for the OAuth logins of remote servers.
    pub(super) credentials: Option<TokenStore>,
    /// How the host answers the servers' requests.
    pub(super) host: HostHandlers,
    /// How many changes a slow receiver of the runtime's changes may fall behind.
    pub(super) change_backlog: usize,
}

impl Default for StartOptions {
    fn default() -> Self {
        Self {
            events: None,
            cancel: CancellationToken::new(),
            scope: DEFAULT_SCOPE.to_owned(),
            registry: ListingRegistry::global().clone(),
            share_listings: true,
            first_restart_pause: super::supervisor::FIRST_BACKOFF,
            wait: Wait::RequiredThenGrace(DEFAULT_OPTIONAL_GRACE),
            other_servers: Vec::new(),
            probe_bound: DEFAULT_PROBE_BOUND,
            era_cache: None,
            credentials: None,
            host: HostHandlers::default(),
            change_backlog: crate::changes::DEFAULT_CHANGE_BACKLOG,
        }
    }
}

impl std::fmt::Debug for StartOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartOptions")
            .field("scope", &self.scope)
            .field("share_listings", &self.share_listings)
            .field("wait", &self.wait)
            .field("probe_bound", &self.probe_bound)
            .field("era_cache", &self.era_cache)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl StartOptions {
    /// Default options: no events, no cancellation, shared listings in the
    /// process-wide registry under the scope [`DEFAULT_SCOPE`], and a start that
    /// returns once the required servers are ready plus a grace of
    /// [`DEFAULT_OPTIONAL_GRACE`] for the optional ones.
    pub fn new() -> Self {
        Self::default()
    }

    /// Once every `required` server is ready, waits at most `grace` more for the
    /// optional servers still starting, then lets [`Runtime::start`](super::Runtime::start)
    /// return (1 s by default). Those servers go on starting in the background and join
    /// the catalog when they are ready. A zero grace returns as soon as the required
    /// servers are ready.
    pub fn with_optional_grace(mut self, grace: Duration) -> Self {
        self.wait = Wait::RequiredThenGrace(grace);
        self
    }

    /// Lets [`Runtime::start`](super::Runtime::start) return only once every server
    /// has settled: ready, failed or cancelled. For a report of every server, or a
    /// benchmark.
    pub fn wait_for_all(mut self) -> Self {
        self.wait = Wait::All;
        self
    }

    pub(super) fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    pub(super) fn wait(&self) -> Wait {
        self.wait
    }

    /// The discovery scope this runtime's catalog belongs to (an account, a workspace,
    /// a group of agent sessions). Startups share listings only within one scope.
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }

    /// Shares listings through `registry` instead of the process-wide one.
    pub fn with_listing_registry(mut self, registry: ListingRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// Counts this runtime's startups that begin up to `window` after an equivalent
    /// startup sent its `tools/list` into that startup's burst, in the same registry
    /// (see [`ListingRegistry::with_burst_window`]). Call it after
    /// [`Self::with_listing_registry`], which replaces the registry with its window.
    pub fn with_listing_burst(mut self, window: Duration) -> Self {
        self.registry = self.registry.with_burst_window(window);
        self
    }

    /// Keeps up to `backlog` changes (at least one; [`DEFAULT_CHANGE_BACKLOG`] by
    /// default) for a receiver of [`Runtime::changes`](super::Runtime::changes) that
    /// falls behind; one that falls further is told how many it missed. The slots are
    /// allocated when the runtime starts: a host that runs many runtimes, and catches
    /// up on a missed change by reading again what it watches, can keep fewer.
    ///
    /// [`DEFAULT_CHANGE_BACKLOG`]: crate::DEFAULT_CHANGE_BACKLOG
    pub fn with_change_backlog(mut self, backlog: usize) -> Self {
        self.change_backlog = backlog;
        self
    }

    /// Whether this runtime's startups publish and take shared listings at all.
    pub fn with_shared_listings(mut self, share: bool) -> Self {
        self.share_listings = share;
        self
    }

    /// Sends startup progress to `events`, and afterwards, for the runtime's whole
    /// life, each server that stops and each attempt to start it again
    /// ([`StartupEvent::Unavailable`] and the restart events).
    pub fn with_events(mut self, events: UnboundedSender<StartupEvent>) -> Self {
        self.events = Some(events);
        self
    }

    /// The channel events are sent to, if any.
    pub(super) fn events(&self) -> Option<UnboundedSender<StartupEvent>> {
        self.events.clone()
    }

    /// How long to wait after a server's first failed restart before the next call
    /// may try again (1 s by default). The pause doubles with each further failure,
    /// up to 30 s or this first pause, whichever is longer.
    pub fn with_first_restart_pause(mut self, pause: Duration) -> Self {
        self.first_restart_pause = pause;
        self
    }

    pub(super) fn first_restart_pause(&self) -> Duration {
        self.first_restart_pause
    }

    /// Names the tools as if the servers `names` were started too: servers the host
    /// configured but leaves out of this runtime. A server of this runtime whose name
    /// sanitizes like one of them gets the hashed namespace, as in a runtime that
    /// starts them all, so its tools have the names a full runtime shows (see
    /// [`crate::naming`]). For a host that starts only the server a call needs;
    /// a host that starts every server it configured does not need it.
    pub fn with_other_configured_servers(
        mut self,
        names: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.other_servers = names.into_iter().map(Into::into).collect();
        self
    }

    pub(super) fn other_servers(&self) -> &[String] {
        &self.other_servers
    }

    /// The host's token store: a remote server whose store holds an OAuth login is
    /// sent its access token (see [`crate::auth`]). Without one, no server uses
    /// OAuth.
    #[cfg(feature = "oauth")]
    pub fn with_credentials(
        mut self,
        source: std::sync::Arc<dyn crate::auth::CredentialSource>,
    ) -> Self {
        self.credentials = Some(source);
        self
    }

    /// How long the probe of a local server's protocol era (`protocol = "auto"`, era
    /// not known yet) waits for the answer to `server/discover` before it takes the
    /// server for one of the handshake revisions (2 s by default).
    pub fn with_protocol_probe_bound(mut self, bound: Duration) -> Self {
        self.probe_bound = bound;
        self
    }

    /// Keeps the protocol era found for each local server with `protocol = "auto"` in
    /// `cache`, and starts each in the era kept there by an earlier process, without
    /// the probe: a handshake server is sent `initialize` at once. A server that answers
    /// in the other era is started in it, and the cache learns. Without this, eras are
    /// remembered within the process alone (in the listing registry).
    pub fn with_era_cache(mut self, cache: EraCache) -> Self {
        self.era_cache = Some(cache);
        self
    }

    /// The host's answers to the servers' requests: elicitation, sampling, roots
    /// (see [`crate::host`]). What `handlers` answer is what every server is offered;
    /// without this, nothing is offered.
    pub fn with_host(mut self, handlers: HostHandlers) -> Self {
        self.host = handlers;
        self
    }

    /// The host's handlers.
    pub(super) fn host(&self) -> HostHandlers {
        self.host.clone()
    }

    /// The host's token store, if it gave one.
    pub(super) fn credentials(&self) -> Option<TokenStore> {
        self.credentials.clone()
    }

    /// What this runtime's startups and restarts need to find their servers' eras.
    pub(super) fn era_detection(&self) -> Detection {
        Detection {
            memory: self.registry.eras().clone(),
            scope: self.scope.clone(),
            probe_bound: self.probe_bound,
            offered: client_config(&self.host),
            cache: self.era_cache.clone(),
        }
    }

    /// Cancels every startup still in progress when `cancel` is cancelled; those
    /// servers end up [`Cancelled`](super::ServerState::Cancelled).
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}
