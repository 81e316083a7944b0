//! What the runtime tells about each server: its state, how it is reached, its
//! status.

use std::time::Duration;

use crate::{
    config::{ApprovalMode, HttpTransport, ServerConfig, TransportConfig},
    connection::Connection,
    transport::error::{RequestError, StartupError},
};

/// The state of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerState {
    /// Its startup is still in progress: the runtime returned from its start before
    /// this (optional) server was ready. It joins the catalog when it is; a call to it
    /// waits for it, within its `startup_timeout_sec`.
    Starting,
    /// Started, handshake done, tools listed.
    Ready,
    /// Its startup failed; see [`ServerStatus::error`].
    Failed,
    /// Its startup was cancelled before it finished.
    Cancelled,
    /// It was ready, then stopped (its process exited or its connection closed); its
    /// next call starts it again. See [`ServerStatus::unavailable`].
    Unavailable,
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

    /// `starting`, `ready`, `failed`, `cancelled` or `unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Unavailable => "unavailable",
        }
    }
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    /// A local child process (possibly run through an environment's wrapper).
    Stdio,
    /// A Streamable HTTP endpoint (or one not reached yet).
    StreamableHttp,
    /// A legacy HTTP+SSE endpoint: configured with `transport = "sse"`, or found from
    /// a Streamable HTTP `url`'s answers once connected.
    Sse,
}

impl TransportKind {
    /// `stdio`, `streamable_http` or `sse`, as the configuration spells a transport.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::StreamableHttp => "streamable_http",
            Self::Sse => "sse",
        }
    }

    pub(super) fn of(config: &ServerConfig) -> Self {
        match &config.transport {
            TransportConfig::Stdio(_) => Self::Stdio,
            TransportConfig::StreamableHttp(http) if http.transport == HttpTransport::Sse => {
                Self::Sse
            }
            TransportConfig::StreamableHttp(_) => Self::StreamableHttp,
        }
    }
}

/// How a remote server is authorized, as `servers` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthState {
    /// Its requests carry a stored OAuth login's token (`logged_in`).
    LoggedIn,
    /// It asked for authorization that it was not given, or refused its stored login:
    /// `mcp-runtime login NAME` is the way on (`needs_login`).
    NeedsLogin,
    /// Its stored OAuth login, as read when it started, has an access token past its
    /// expiry and no refresh token to renew it: it needs a new login at its next start,
    /// or already failed to start for that (`expired`).
    Expired,
    /// Its requests carry the token of `bearer_token_env_var` (`bearer`).
    Bearer,
}

impl AuthState {
    /// `logged_in`, `needs_login`, `expired` or `bearer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LoggedIn => "logged_in",
            Self::NeedsLogin => "needs_login",
            Self::Expired => "expired",
            Self::Bearer => "bearer",
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
    /// How long its startup took until it settled; while it is
    /// [`ServerState::Starting`], how long it has been starting.
    pub startup_time: Duration,
    /// Why it failed, when it did: its startup, or the last attempt to start it
    /// again after it stopped.
    pub error: Option<StartupError>,
    /// Why it stopped, while it is [`ServerState::Unavailable`] (or
    /// [`ServerState::Failed`] after it stopped and could not be started again).
    pub unavailable: Option<RequestError>,
    /// How many times it was started again since the runtime started.
    pub restarts: u32,
    /// Its process id, for a ready local server.
    pub pid: Option<u32>,
    /// The protocol version spoken with it, while it has a connection: `2026-07-28`
    /// for a server that answered `server/discover`, else the handshake revision it
    /// answered to `initialize`.
    pub protocol_version: Option<String>,
    /// What the server says about how to use it (`instructions` of its `initialize`
    /// or `server/discover` answer), while it has a connection: for the host to give
    /// its model.
    pub instructions: Option<String>,
    /// How it is authorized: `None` for a server that asks for nothing (and for a
    /// local one).
    pub auth: Option<AuthState>,
    /// How many of its tools are exposed.
    pub tools: usize,
    /// How many `tools/list` requests this runtime sent for the server's startup
    /// listing: 0 when another startup's listing was shared with it.
    pub tools_list_requests: usize,
    /// Whether its startup listing was one the server granted to an earlier startup
    /// for reuse (a 2026-07-28 `ttlMs`; see `docs/shared-listings.md`).
    pub served_from_cache: bool,
    /// Its `supports_parallel_tool_calls`: the host may run several calls of this
    /// server's tools at once.
    pub supports_parallel_tool_calls: bool,
    /// Its `default_tools_approval_mode`: whether the host asks a person before one of
    /// its tools runs, for tools without an `approval_mode` of their own.
    pub default_tools_approval_mode: Option<ApprovalMode>,
}

/// How `config`'s server is authorized (see [`AuthState`]) at `now`: by an OAuth
/// login that ran out (`login`, as stored when it started), by the OAuth login its
/// connection carries, by a bearer token, or not, when it failed asking for one.
pub(super) fn auth_state(
    config: &crate::config::ServerConfig,
    connection: Option<&Connection>,
    error: Option<&crate::transport::error::StartupError>,
    login: Option<crate::discovery_key::StoredLogin>,
    now: std::time::SystemTime,
) -> Option<AuthState> {
    use crate::{config::TransportConfig, transport::error::HttpFailure};
    let TransportConfig::StreamableHttp(http) = &config.transport else {
        return None;
    };
    // Before the connection: a live one still carries the token until it is refused.
    // A machine client gets a new token itself: its token running out is nothing to
    // show.
    let machine = config.oauth.grant_type.is_machine();
    if !machine && login.is_some_and(|login| login.is_expired_at(now)) {
        return Some(AuthState::Expired);
    }
    if connection.is_some_and(Connection::uses_oauth) {
        return Some(AuthState::LoggedIn);
    }
    if let Some(HttpFailure::NeedsLogin { .. } | HttpFailure::Unauthorized { .. }) =
        error.and_then(crate::transport::error::StartupError::http_failure)
    {
        return Some(AuthState::NeedsLogin);
    }
    http.bearer_token_env_var
        .is_some()
        .then_some(AuthState::Bearer)
}
