//! `[serve]`: how `mcp-runtime serve` serves the configured servers (mcp-runtime's own
//! table; Codex ignores it).

use std::time::Duration;

/// Default `[serve] session_idle_sec`.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(600);
/// Default `[serve] listing_burst_sec`.
pub const DEFAULT_LISTING_BURST: Duration = Duration::from_secs(1);
/// Default `[serve] max_sessions`.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
/// Default `[serve] max_exposed_tools`.
pub const DEFAULT_MAX_EXPOSED_TOOLS: usize = 64;
/// Default `[serve] max_request_bytes`: rmcp's bound on a request body.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// The `[serve]` table.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServeConfig {
    /// `tool_names`: the names the served `tools/list` gives.
    pub tool_names: ToolNames,
    /// `expose`: every tool in `tools/list`, or a search over them.
    pub expose: Expose,
    /// `always_expose`: the qualified names of the tools a search-mode list always
    /// holds.
    pub always_expose: Vec<String>,
    /// `max_exposed_tools`: how many found tools a search-mode session's list holds
    /// at most; the least recently found leave first.
    pub max_exposed_tools: usize,
    /// `session_idle_sec`: a client session with nothing in flight for this long
    /// ends, and its servers with it.
    pub session_idle: Duration,
    /// `listing_burst_sec`: sessions whose servers start up to this long after
    /// another session's sent their `tools/list` take its answer (a burst of sessions
    /// costs one listing per server); zero shares only among startups that overlap.
    pub listing_burst: Duration,
    /// `max_sessions`: how many client sessions are served at once.
    pub max_sessions: usize,
    /// `max_request_bytes`: the bound on a request's body.
    pub max_request_bytes: usize,
    /// `allowed_hosts`: the `Host` values accepted besides the loopback names and
    /// the listen address.
    pub allowed_hosts: Vec<String>,
    /// `allowed_origins`: the browser origins accepted besides loopback ones
    /// (`https://app.example.com`, `http://localhost:*`).
    pub allowed_origins: Vec<String>,
    /// `[serve.auth]`: how clients authenticate; `None` when the table is absent.
    pub auth: Option<ServeAuth>,
    /// `[serve.fleet]`: the Redis this gateway's replicas share listings through;
    /// `None` when the table is absent.
    pub fleet: Option<ServeFleet>,
}

/// `[serve.fleet]`: where the replicas of one gateway find each other.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeFleet {
    /// `redis_url_env_var`: the environment variable holding the Redis URL
    /// (`redis://…`, `rediss://…`, `unix://…`), which may carry a password.
    pub redis_url_env_var: String,
    /// `key_env_var`: the environment variable holding the fleet key, at least 32
    /// bytes, the same on every replica.
    pub key_env_var: String,
    /// `replica`: this replica's name in `/healthz` and the logs; the host's name and
    /// the process id when absent.
    pub replica: Option<String>,
    /// `redis_timeout_ms`: how long a call to Redis may take before the replica goes
    /// on without the fleet, up to [`MAX_REDIS_TIMEOUT`]; the fleet's default (250
    /// ms) when absent.
    pub redis_timeout: Option<Duration>,
}

/// The longest `redis_timeout_ms`: a listing's leader renews its 3-second lease
/// every second, and a renewal that waits longer than this may see it lapse.
pub const MAX_REDIS_TIMEOUT: Duration = Duration::from_secs(1);

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            tool_names: ToolNames::default(),
            expose: Expose::default(),
            always_expose: Vec::new(),
            max_exposed_tools: DEFAULT_MAX_EXPOSED_TOOLS,
            session_idle: DEFAULT_SESSION_IDLE,
            listing_burst: DEFAULT_LISTING_BURST,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            auth: None,
            fleet: None,
        }
    }
}

/// `[serve] tool_names`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolNames {
    /// `"qualified"`: the names `mcp-runtime tools` prints (`mcp__server__tool`).
    #[default]
    Qualified,
    /// `"original"`: the servers' own names; a name two servers share takes its
    /// qualified form.
    Original,
}

/// `[serve] expose`: what a client's `tools/list` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Expose {
    /// `"all"`: every tool of the catalog.
    #[default]
    All,
    /// `"search"`: a tool that searches the catalog, one that calls any tool by its
    /// qualified name, the `always_expose` tools, and those the session has found.
    Search,
}

/// A server's `connections`: how `mcp-runtime serve` connects to it for its client
/// sessions (mcp-runtime's own key; a runtime of one host has one connection to each
/// server whatever it says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Connections {
    /// `"session"`: each client session has its own connection, so its roots,
    /// sandbox state and login stay its own.
    #[default]
    Session,
    /// `"shared"`: one connection serves every session; a question the server asks
    /// goes to the session whose request it asks for.
    Shared,
}

/// `[serve.auth]`: how a client proves who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeAuth {
    /// `bearer_token_env_var`: the environment variable holding the one token every
    /// client sends as `Authorization: Bearer …`.
    BearerTokenEnvVar(String),
    /// `issuer` and `audience`: the gateway is an OAuth resource server, and each
    /// client sends a JWT access token its authorization server issued.
    Jwt(JwtAuth),
}

/// `[serve.auth]` of an OAuth resource server: which JWT access tokens it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JwtAuth {
    /// `issuer`: the authorization server, as its tokens' `iss` names it; its
    /// metadata gives the signing keys' location unless `jwks_uri` does.
    pub issuer: String,
    /// `audience`: this resource's URL (`https://gateway.example.com/mcp`), which a
    /// token's `aud` must hold; also the `resource` of its Protected Resource
    /// Metadata.
    pub audience: String,
    /// `jwks_uri`: where the issuer's signing keys (a JWK Set) are, when its metadata
    /// is not to be asked.
    pub jwks_uri: Option<String>,
    /// `scopes`: the scopes every token must carry.
    pub scopes: Vec<String>,
}

impl JwtAuth {
    /// Tokens of `issuer` for `audience`, their keys where the issuer's metadata says,
    /// no scope required.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            jwks_uri: None,
            scopes: Vec::new(),
        }
    }
}
