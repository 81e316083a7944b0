//! The configuration and one server's: the two types a host names, at the crate's
//! root; the parts they are made of are the `config` module's.

use std::{collections::BTreeMap, path::Path, time::Duration};

use super::{
    ApprovalMode, ConfigWarning, CredentialsStore, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_TOOLS,
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, Environment, EnvironmentConfig, HttpConfig,
    HttpTransport, OAuthConfig, Protocol, StdioConfig, ToolConfig, TransportConfig,
    error::ConfigError, hosts, parse,
};

/// A parsed configuration: the servers and the execution environments they may use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The servers, by name.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Named execution environments (`[environments.NAME]`).
    pub environments: BTreeMap<String, EnvironmentConfig>,
    /// `mcp_oauth_credentials_store`: where OAuth tokens are kept.
    pub oauth_credentials_store: CredentialsStore,
    /// `[serve]`: how `mcp-runtime serve` serves the servers.
    pub serve: super::ServeConfig,
    /// What the file holds that loads but is not acted on (a key Codex knows that
    /// mcp-runtime does not implement), one entry per server and key.
    pub warnings: Vec<ConfigWarning>,
}

/// One `[mcp_servers.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The server's name, the key of its table.
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// `enabled`: whether to start it at all.
    pub enabled: bool,
    /// `required`: whether its failure fails the whole start.
    pub required: bool,
    /// `startup_timeout_sec`: bound on spawn/connect, handshake and tool listing.
    pub startup_timeout: Duration,
    /// `tool_timeout_sec`: bound on each tool call.
    pub tool_timeout: Duration,
    /// `enabled_tools`: when set, only these tools are exposed (applied first).
    pub enabled_tools: Option<Vec<String>>,
    /// `disabled_tools`: these tools are never exposed (applied after `enabled_tools`).
    pub disabled_tools: Vec<String>,
    /// `environment`: where a stdio server runs.
    pub environment: Environment,
    /// `share_tool_listing`: whether overlapping startups may share this server's
    /// `tools/list` answer.
    pub share_tool_listing: bool,
    /// `max_message_bytes`: the largest message accepted from the server (one stdio
    /// line, one SSE event or one JSON body); a larger one fails the request it
    /// answers at once.
    pub max_message_bytes: usize,
    /// `max_tools`: the most tools the server may list (counted as it lists them,
    /// usable or not); a listing with more fails the server's startup.
    pub max_tools: usize,
    /// `supports_parallel_tool_calls`: the host may run several calls of this server's
    /// tools at once (the runtime always can; this tells the host the server's tools
    /// tolerate it).
    pub supports_parallel_tool_calls: bool,
    /// `default_tools_approval_mode`: the approval mode of every tool without its own.
    pub default_tools_approval_mode: Option<ApprovalMode>,
    /// `[mcp_servers.X.tools.TOOL]`: per-tool settings, by raw tool name.
    pub tools: BTreeMap<String, ToolConfig>,
    /// The OAuth keys, for a Streamable HTTP server.
    pub oauth: OAuthConfig,
    /// `protocol`: which protocol revision to speak, or `auto` to find out.
    pub protocol: Protocol,
    /// `connections`: whether `mcp-runtime serve` gives each client session a
    /// connection of its own to the server, or one to all of them.
    pub connections: super::Connections,
}

impl ServerConfig {
    /// A stdio server with every other setting at its default.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        Self::new(
            name.into(),
            TransportConfig::Stdio(StdioConfig {
                command: command.into(),
                args,
                env: BTreeMap::new(),
                env_vars: Vec::new(),
                cwd: None,
            }),
        )
    }

    /// A Streamable HTTP server with every other setting at its default.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name.into(),
            TransportConfig::StreamableHttp(HttpConfig {
                url: url.into(),
                bearer_token_env_var: None,
                http_headers: BTreeMap::new(),
                env_http_headers: BTreeMap::new(),
                transport: HttpTransport::StreamableHttp,
                ca_certificate: None,
            }),
        )
    }

    pub(super) fn new(name: String, transport: TransportConfig) -> Self {
        Self {
            name,
            transport,
            enabled: true,
            required: false,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            environment: Environment::Local,
            share_tool_listing: true,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_tools: DEFAULT_MAX_TOOLS,
            supports_parallel_tool_calls: false,
            default_tools_approval_mode: None,
            tools: BTreeMap::new(),
            oauth: OAuthConfig::default(),
            protocol: Protocol::Auto,
            connections: super::Connections::Session,
        }
    }

    /// Whether `enabled_tools` and `disabled_tools` let the model see `tool`.
    pub fn exposes_tool(&self, tool: &str) -> bool {
        let allowed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|enabled| enabled.iter().any(|name| name == tool));
        allowed && !self.disabled_tools.iter().any(|name| name == tool)
    }

    /// Sets `startup_timeout_sec`.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Sets `tool_timeout_sec`.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }

    /// Sets `max_message_bytes`.
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Sets `max_tools`.
    pub fn with_max_tools(mut self, tools: usize) -> Self {
        self.max_tools = tools;
        self
    }

    /// The approval mode of `tool`: its own, else the server's default.
    pub fn approval_mode(&self, tool: &str) -> Option<ApprovalMode> {
        self.tools
            .get(tool)
            .and_then(|settings| settings.approval_mode)
            .or(self.default_tools_approval_mode)
    }

    /// Sets `protocol`.
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Sets `connections`.
    pub fn with_connections(mut self, connections: super::Connections) -> Self {
        self.connections = connections;
        self
    }

    /// Sets `required`.
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }
}

impl Config {
    /// Reads and parses a configuration file: Codex's TOML, or the JSON file of another
    /// host (Claude Desktop, Claude Code, VS Code, Cursor), told apart by content.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source: source.into(),
        })?;
        Self::parse(&text, path)
    }

    /// Parses configuration text; `origin` names it in error messages. JSON text is
    /// another host's file, converted to TOML first.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, ConfigError> {
        if hosts::looks_like_json(text) {
            return hosts::load(text, origin, &hosts::process_vars);
        }
        parse::parse(text, origin)
    }

    /// Reads the configuration file at `path` as it is written, for showing it to a
    /// person: a TOML file as [`Config::load`] reads it (TOML has no variables); another
    /// host's JSON file validated as [`import_file`](super::import_file) validates it, each `${…}` kept as
    /// written. No variable of the environment is ever expanded, so what is shown never
    /// holds the value of one (a token passed in `args` or `url`).
    pub fn load_as_written(path: &Path) -> Result<Self, ConfigError> {
        hosts::load_as_written(path)
    }

    /// The servers that are enabled, in name order.
    pub fn enabled_servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.values().filter(|server| server.enabled)
    }
}
