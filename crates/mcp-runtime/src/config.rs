//! Configuration: which MCP servers to run and how.
//!
//! The format is TOML and key-compatible with Codex's `[mcp_servers.NAME]` tables, so a
//! Codex `config.toml` can be used as it is: unknown top-level keys (Codex's `model`,
//! `[profiles.*]`, `[features]`, …) are ignored, while an unknown key inside a server
//! table is an error (a typo there would otherwise silently change what runs), with the
//! closest known key as a suggestion. Every error names the file, the table and the key,
//! and every error in a file is reported at once ([`ConfigError::errors`](crate::ConfigError::errors)).
//!
//! # The keys followed
//!
//! The server keys are those of Codex's `RawMcpServerConfig`
//! (`codex-rs/config/src/mcp_types.rs`) in the newest version read for this work, the
//! one that holds `http_headers_helper`, `environment_id`, `auth`, `omit_tools_from`,
//! `oauth.callback_url`/`callback_port` and `tools.TOOL.output_token_limit` (the
//! approval values and their meaning as in `codex-rs/core/src/mcp_tool_call.rs` at
//! Codex commit `ca466061d64f0b44f416135c7fd06aa7af850bbc`), plus
//! `experimental_environment`, the name `environment_id` had before, from the version
//! at Codex commit `00b17c2659c96ab3d0ae8de723b4ce2d686850b1`. The top-level
//! `mcp_oauth_credentials_store` is Codex's `ConfigToml` key of that name.
//! Every key falls in one of three groups:
//!
//! 1. Honoured: mcp-runtime acts on it, or carries it to the host
//!    ([`ServerConfig::tools`], [`ServerConfig::approval_mode`],
//!    [`ServerConfig::supports_parallel_tool_calls`]), or keeps it for OAuth
//!    ([`ServerConfig::oauth`], [`Config::oauth_credentials_store`]).
//! 2. Accepted with a warning: a key Codex knows whose effect mcp-runtime does not have
//!    (`http_headers_helper`, `env_vars` with `source = "remote"`, `environment_id`,
//!    `name`, `omit_tools_from`, …). Its value is checked as Codex checks it, and the
//!    file loads with one [`ConfigWarning`] per server and key saying what does not
//!    happen and what to use instead. A value that asks for what mcp-runtime does anyway
//!    (`environment_id = "local"`) loads silently.
//! 3. mcp-runtime's own: `environment`, `share_tool_listing`, `max_message_bytes`,
//!    `max_tools`, `protocol`, `connections` ([`Connections`]), `transport`, the `[environments.NAME]` tables, and the
//!    `[serve]` table of `mcp-runtime serve` ([`ServeConfig`]).
//!
//! Where Codex decides something, mcp-runtime decides the same: with both
//! `startup_timeout_sec` and `startup_timeout_ms` the seconds win; an `Authorization`
//! header in `http_headers` is accepted (its value is never shown); a literal
//! `bearer_token` is refused; OAuth keys on a stdio server are an error.
//!
//! # Why key by key
//!
//! Parsing is done key by key over a [`toml::Table`] rather than through a serde
//! `Raw*` struct destructured into the validated type. Serde's derive stops a struct at
//! its first error and words it in serde's terms (`invalid type: string, expected u64`),
//! while every error here names the file, the table and the key, says what the value
//! must be, never repeats a value that may be secret, and is reported together with
//! every other error of the file. A `Raw*` struct whose fields are all
//! [`toml::Value`] would keep those messages but add a third list of every key next to
//! the parser and the key lists of the `keys` module; instead, those lists are the
//! single record of what a table may hold. A test loads a complete Codex `config.toml`
//! with every key (`config/testdata/codex-full.toml`), and property tests check that
//! every error points at a table and key of the document.

pub(crate) mod checks;
mod hosts;
pub use self::hosts::import_file;
mod keys;
mod parse;
mod serve;
pub use self::serve::{
    Connections, DEFAULT_LISTING_BURST, DEFAULT_MAX_EXPOSED_TOOLS, DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE, Expose, JwtAuth, MAX_REDIS_TIMEOUT, ServeAuth,
    ServeConfig, ServeFleet, ToolNames,
};
pub(crate) mod servers;
#[cfg(test)]
mod tests;

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

pub(crate) mod error;

pub(crate) use self::servers::{Config, ServerConfig};

/// Default `startup_timeout_sec`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `tool_timeout_sec`.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);
/// Default `max_message_bytes`: 64 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Default `max_tools`.
pub const DEFAULT_MAX_TOOLS: usize = 10_000;

/// The longest server name accepted, in bytes: a name is part of every qualified tool
/// name and of every message about its server, so it is kept to a size a terminal shows.
pub const MAX_SERVER_NAME_BYTES: usize = 256;

/// The environment variables every stdio server receives from the parent, when set.
///
/// Everything else is cleared: a server sees another variable only when its table
/// names it in `env_vars` or sets it in `env`.
pub const INHERITED_ENV_VARS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
];

/// A setting that loads but is not acted on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigWarning {
    /// The file.
    pub path: PathBuf,
    /// The table, for example `mcp_servers.github`.
    pub table: String,
    /// The key.
    pub key: String,
    /// Why it has no effect, finishing a sentence about the key.
    pub reason: String,
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: [{}] `{}` {}",
            self.path.display(),
            self.table,
            self.key,
            self.reason
        )
    }
}

/// `mcp_oauth_credentials_store`: where OAuth tokens are kept (Codex's key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CredentialsStore {
    /// The OS keyring when one is usable, else the file.
    #[default]
    Auto,
    /// The OS keyring only.
    Keyring,
    /// A `0600` file in the user's configuration directory.
    File,
}

/// `default_tools_approval_mode` and `[mcp_servers.X.tools.T] approval_mode`: whether
/// the host asks a person before a tool runs (Codex's values). mcp-runtime carries it
/// to the host; it never asks anyone itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalMode {
    /// The host decides from the tool's annotations (`auto`, Codex's default): it asks
    /// when the tool says it is destructive, runs a tool that says it is read-only, and
    /// otherwise asks unless the tool says it is neither destructive nor open-world.
    Auto,
    /// The host asks before every call (`prompt`).
    Prompt,
    /// The host asks unless the tool declares itself read-only (`readOnlyHint`); a tool
    /// without annotations counts as one that writes (`writes`).
    Writes,
    /// The tool is approved: the host calls it without asking (`approve`).
    Approve,
}

impl ApprovalMode {
    /// `auto`, `prompt`, `writes` or `approve`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Prompt => "prompt",
            Self::Writes => "writes",
            Self::Approve => "approve",
        }
    }
}

/// One `[mcp_servers.X.tools.TOOL]` table: settings the host applies to one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolConfig {
    /// `approval_mode`: overrides the server's `default_tools_approval_mode`.
    pub approval_mode: Option<ApprovalMode>,
    /// `output_token_limit`: the most tokens of this tool's output the host should
    /// give the model.
    pub output_token_limit: Option<u64>,
}

/// The OAuth keys of a server table (`scopes`, `oauth`, `oauth_resource`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// `scopes`: the scopes to ask for, overriding the server's.
    pub scopes: Option<Vec<String>>,
    /// `oauth.client_id`: a pre-registered client.
    pub client_id: Option<String>,
    /// `oauth.client_secret_env_var`: the variable holding that client's secret (a
    /// confidential client); the secret is never written in the file.
    pub client_secret_env_var: Option<String>,
    /// `oauth.client_metadata_url`: the `https` URL of this client's metadata document
    /// (a Client ID Metadata Document), its client id where the authorization server
    /// supports them and no `client_id` is set.
    pub client_metadata_url: Option<String>,
    /// `oauth.grant_type`: how tokens are obtained.
    pub grant_type: GrantType,
    /// `oauth.private_key_env_var`: the variable holding the client's private key (PEM),
    /// for `private_key_jwt` authentication of a machine client.
    pub private_key_env_var: Option<String>,
    /// `oauth.signing_algorithm`: the algorithm of that key's assertions.
    pub signing_algorithm: SigningAlgorithm,
    /// `oauth.assertion_env_var`: the variable holding a workload's identity token
    /// (a JWT its platform issued), for `grant_type = "jwt_bearer"`.
    pub assertion_env_var: Option<String>,
    /// `oauth.assertion_file`: the file holding it, read at each token request (a
    /// platform rotates it there); relative to the configuration file.
    pub assertion_file: Option<PathBuf>,
    /// `oauth.callback_url`: the redirect URL registered for that client.
    pub callback_url: Option<String>,
    /// `oauth.callback_port`: the local port the login listens on.
    pub callback_port: Option<u16>,
    /// `oauth_resource`: the `resource` parameter (RFC 8707), overriding the server URL.
    pub resource: Option<String>,
}

/// `oauth.grant_type`: how a remote server's access tokens are obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantType {
    /// `authorization_code`: a person logs in through a browser (`mcp-runtime login`).
    #[default]
    AuthorizationCode,
    /// `client_credentials`: a machine client authenticates itself with its secret or
    /// private key, with no person; tokens are obtained when the server asks for one.
    ClientCredentials,
    /// `jwt_bearer`: a workload presents the identity token its platform issued
    /// (RFC 7523 JWT bearer grant; workload identity federation), with no person;
    /// tokens are obtained when the server asks for one.
    JwtBearer,
}

impl GrantType {
    /// Whether tokens are obtained without a person (and without `login`).
    pub fn is_machine(self) -> bool {
        matches!(self, Self::ClientCredentials | Self::JwtBearer)
    }
}

/// `oauth.signing_algorithm`: the JWS algorithm of a `private_key_jwt` assertion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// `RS256`.
    Rs256,
    /// `RS384`.
    Rs384,
    /// `RS512`.
    Rs512,
    /// `ES256`, the default.
    #[default]
    Es256,
    /// `ES384`.
    Es384,
}

impl SigningAlgorithm {
    /// Every algorithm, with its name in the file.
    pub(crate) const ALL: [(&'static str, Self); 5] = [
        ("RS256", Self::Rs256),
        ("RS384", Self::Rs384),
        ("RS512", Self::Rs512),
        ("ES256", Self::Es256),
        ("ES384", Self::Es384),
    ];

    /// The algorithm's name, as in JWS and the file.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, algorithm)| *algorithm == self)
            .map_or("ES256", |(name, _)| name)
    }
}

/// `protocol`: the MCP protocol revision spoken with a server (mcp-runtime's key).
///
/// With `auto`, the default, mcp-runtime finds out which era the server belongs to: it
/// probes with `server/discover` (2026-07-28, stateless), and falls back to the
/// `initialize` handshake offering 2025-11-25 (accepting the older handshake
/// revisions) when the server does not speak it. Any other value pins one revision:
/// no probe, and a server that does not speak it fails to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// Find out the server's era, once per server configuration (`auto`).
    #[default]
    Auto,
    /// Only 2026-07-28, the stateless revision: `server/discover`, no `initialize`.
    V2026_07_28,
    /// Only the 2025-11-25 handshake.
    V2025_11_25,
    /// Only the 2025-06-18 handshake.
    V2025_06_18,
    /// Only the 2025-03-26 handshake.
    V2025_03_26,
    /// Only the 2024-11-05 handshake.
    V2024_11_05,
}

impl Protocol {
    /// Every value, in the order the configuration documents them.
    pub const ALL: [Self; 6] = [
        Self::Auto,
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// The value as written in the configuration: `auto` or a revision's date.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::V2026_07_28 => "2026-07-28",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2024_11_05 => "2024-11-05",
        }
    }

    /// The value written `text` in the configuration.
    pub fn from_config(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|value| value.as_str() == text)
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TransportConfig {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio(StdioConfig),
    /// A Streamable HTTP endpoint.
    StreamableHttp(HttpConfig),
}

/// The stdio keys of a server table. Its `Debug` output shows the names in `env`,
/// never their values.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct StdioConfig {
    /// `command`: the program.
    pub command: String,
    /// `args`: its arguments.
    pub args: Vec<String>,
    /// `env`: literal variables set for the child, applied last.
    pub env: BTreeMap<String, String>,
    /// `env_vars`: names forwarded from the parent's environment.
    pub env_vars: Vec<String>,
    /// `cwd`: the child's working directory.
    pub cwd: Option<PathBuf>,
}

/// The Streamable HTTP keys of a server table. Its `Debug` output shows the names in
/// `http_headers`, never their values, and `url` masked by [`crate::redact::url`].
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpConfig {
    /// `url`: the endpoint.
    pub url: String,
    /// `bearer_token_env_var`: the variable holding the bearer token.
    pub bearer_token_env_var: Option<String>,
    /// `http_headers`: literal headers sent with every request.
    pub http_headers: BTreeMap<String, String>,
    /// `env_http_headers`: header name to the variable holding its value.
    pub env_http_headers: BTreeMap<String, String>,
    /// `transport`: which HTTP transport the server speaks.
    pub transport: HttpTransport,
    /// `ca_certificate`: a PEM file of CA certificates trusted for this server besides
    /// the system's roots; a relative path is relative to the configuration file.
    pub ca_certificate: Option<PathBuf>,
}

/// `transport = "streamable_http" | "sse"`: the HTTP transport of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpTransport {
    /// Streamable HTTP, the default (`streamable_http`).
    #[default]
    StreamableHttp,
    /// The legacy HTTP+SSE transport of protocol revision 2024-11-05 (`sse`).
    Sse,
}

impl std::fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("env_vars", &self.env_vars)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &crate::redact::url(&self.url))
            .field("bearer_token_env_var", &self.bearer_token_env_var)
            .field(
                "http_headers",
                &self.http_headers.keys().collect::<Vec<_>>(),
            )
            .field("env_http_headers", &self.env_http_headers)
            .field("transport", &self.transport)
            .field("ca_certificate", &self.ca_certificate)
            .finish()
    }
}

/// Where a stdio server runs (`environment = "local"` or `"NAME"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Environment {
    /// On this host, as a child process of the runtime.
    #[default]
    Local,
    /// Through the command prefix of `[environments.NAME]`.
    Named(String),
}

/// One `[environments.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EnvironmentConfig {
    /// `wrapper`: the command prefix that runs a program in that environment, for
    /// example `["ssh", "-T", "host"]`.
    pub wrapper: Vec<String>,
}

impl EnvironmentConfig {
    /// An environment that runs programs through `wrapper`.
    pub fn new(wrapper: Vec<String>) -> Self {
        Self { wrapper }
    }
}
