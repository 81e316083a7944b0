//! Errors, one enum per area.
//!
//! Every message is lowercase, names values in backticks and, where the user can act,
//! says what to do. Errors that several tasks may observe (a startup failure is read by
//! the runtime, its events and its summary) are cheap to clone: their sources sit in an
//! [`Arc`].

use std::{path::PathBuf, sync::Arc, time::Duration};

use crate::redact::shown;

mod refused;
pub(crate) use self::refused::sent;
pub use self::refused::{MessageRefused, SENT_CHARS};

/// A configuration file could not be read or does not describe a valid set of servers.
///
/// Every variant names the file, and where it applies the `[mcp_servers.NAME]` table
/// and the key.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The file is not valid TOML.
    #[error("`{}` is not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's description, with line and column.
        message: String,
    },
    /// A server name does not match `^[A-Za-z0-9_-]+$`.
    #[error(
        "`{}`: server name `{}` in `[mcp_servers]` may only contain letters, digits, `_` and `-`",
        path.display(),
        shown(name)
    )]
    InvalidServerName {
        /// The file.
        path: PathBuf,
        /// The offending name.
        name: String,
    },
    /// A server name is longer than [`crate::config::MAX_SERVER_NAME_BYTES`].
    #[error(
        "`{}`: server name `{}` in `[mcp_servers]` is {} bytes long, more than the {limit} allowed (use a shorter name)",
        path.display(),
        shown(&excerpt(name)),
        name.len()
    )]
    ServerNameTooLong {
        /// The file.
        path: PathBuf,
        /// The offending name (the message shows only its start).
        name: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// A table has a key that neither mcp-runtime nor Codex knows.
    #[error(
        "`{}`: unknown key `{}` in `[{table}]` ({})",
        path.display(),
        shown(key),
        spelling_hint(suggestion.as_deref())
    )]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The table, for example `mcp_servers.github`.
        table: String,
        /// The unknown key.
        key: String,
        /// The known key closest to it, when one is close.
        suggestion: Option<String>,
    },
    /// A key that only a Streamable HTTP server can use is in a stdio server's table.
    #[error(
        "`{}`: key `{key}` in `[{table}]` applies only to a server with `url` (remove it from this stdio server)",
        path.display()
    )]
    UrlOnlyKey {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The key.
        key: String,
    },
    /// A top-level key has a value of the wrong type or out of range.
    #[error("`{}`: top-level key `{key}` must be {expected}", path.display())]
    InvalidTopLevelValue {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// What the value must be.
        expected: String,
    },
    /// A key has a value of the wrong type or out of range.
    #[error(
        "`{}`: key `{}` in `[{table}]` must be {expected}",
        path.display(),
        shown(key)
    )]
    InvalidValue {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// What the value must be, for example `a positive number of seconds`.
        expected: String,
    },
    /// A value, or one item or entry of an array or table, cannot work where it is used:
    /// a NUL byte in an argument, `=` in a variable name, an invalid HTTP header.
    #[error("`{}`: key `{key}` in `[{table}]`: {entry} {problem}", path.display())]
    InvalidEntry {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// Which value, item or entry, for example `item 2` or ``variable `A=B` ``; never
        /// a value that may be secret.
        entry: String,
        /// What is wrong with it and what to do.
        problem: String,
    },
    /// A server table mixes stdio and Streamable HTTP keys.
    #[error(
        "`{}`: `[{table}]` mixes stdio key `{stdio_key}` with HTTP key `{http_key}` (a server is either `command` or `url`)",
        path.display()
    )]
    MixedTransport {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// A stdio key present in the table.
        stdio_key: String,
        /// An HTTP key present in the table.
        http_key: String,
    },
    /// A server table has neither `command` nor `url`.
    #[error(
        "`{}`: `[{table}]` needs key `command` (a stdio server) or key `url` (a Streamable HTTP server)",
        path.display()
    )]
    MissingTransport {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
    },
    /// A bearer token was written into the file.
    #[error(
        "`{}`: key `{key}` in `[{table}]` holds a literal token, which is refused (name an environment variable with `bearer_token_env_var`)",
        path.display()
    )]
    LiteralToken {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The key that held the token.
        key: String,
    },
    /// A server names an execution environment that is not defined.
    #[error(
        "`{}`: key `environment` in `[{table}]` names `{environment}`, which is neither `local` nor a defined `[environments.{environment}]`",
        path.display()
    )]
    UnknownEnvironment {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The name that was not found.
        environment: String,
    },
    /// A JSON file of another host is not valid JSON.
    #[error("`{}` is not valid JSON: {message}", path.display())]
    JsonSyntax {
        /// The file.
        path: PathBuf,
        /// The parser's description, with line and column.
        message: String,
    },
    /// A file is not one of the formats mcp-runtime reads, or its top level is not
    /// what that format needs (see [`crate::config::hosts`]).
    #[error("`{}` {problem}", path.display())]
    HostFile {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do, finishing a sentence about the file.
        problem: String,
    },
    /// A server name of another host's JSON file cannot name an mcp-runtime server.
    #[error(
        "`{}`: server name `{}` in `{table}` {}",
        path.display(),
        shown(&excerpt(name)),
        shown(problem)
    )]
    HostServerName {
        /// The file.
        path: PathBuf,
        /// The object holding the servers, for example `mcpServers`.
        table: String,
        /// The name (the message shows only its start).
        name: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A key of a server in another host's JSON file: unknown, of the wrong type, or
    /// holding a `${…}` reference that cannot be resolved.
    #[error(
        "`{}`: key `{}` in `[{}]`{} {}",
        path.display(),
        shown(key),
        shown(table),
        shown(&entry_of(entry)),
        shown(problem)
    )]
    HostKey {
        /// The file.
        path: PathBuf,
        /// The server's object, for example `servers.github`.
        table: String,
        /// The key.
        key: String,
        /// Which item or entry of the key, for example `item 2` or ``variable `A` ``.
        entry: Option<String>,
        /// What is wrong and what to do, finishing a sentence about the key; never a
        /// value that may be secret.
        problem: String,
    },
    /// Several errors, all found in one file: parsing goes on after an error so that
    /// the user can fix every one at once. The message is one line per error, each a
    /// whole message that names the file.
    #[error("{}", join(errors))]
    Several {
        /// Each error, none of them [`ConfigError::Several`].
        errors: Vec<ConfigError>,
    },
}

impl ConfigError {
    /// The errors this one stands for: each of [`ConfigError::Several`], or itself.
    pub fn errors(&self) -> &[ConfigError] {
        match self {
            Self::Several { errors } => errors,
            error => std::slice::from_ref(error),
        }
    }
}

/// What to do about an unknown key.
fn spelling_hint(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(known) => format!("did you mean `{known}`?"),
        None => "check its spelling".to_owned(),
    }
}

/// The start of a name too long to show whole.
fn excerpt(name: &str) -> String {
    const SHOWN_CHARS: usize = 32;
    match name.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{}…", &name[..end]),
        None => name.to_owned(),
    }
}

/// `: ENTRY`, naming an item or entry after its key.
fn entry_of(entry: &Option<String>) -> String {
    entry
        .as_ref()
        .map_or_else(String::new, |entry| format!(": {entry}"))
}

fn join(errors: &[ConfigError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One server could not be started.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StartupError {
    /// The server's program could not be started.
    #[error("cannot start `{program}` (check `command` and `cwd`)")]
    Spawn {
        /// The program that was run.
        program: String,
        /// Why spawning failed.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// An environment variable the configuration refers to is not set or empty.
    #[error("environment variable `{variable}` named by `{key}` is not set or is empty")]
    MissingEnvVar {
        /// The configuration key that named it.
        key: &'static str,
        /// The variable's name (never its value).
        variable: String,
    },
    /// An environment variable the configuration refers to holds a value that cannot be
    /// sent: not valid UTF-8, or a byte no HTTP header can hold (a line break).
    #[error("environment variable `{variable}` named by `{key}` {problem}")]
    InvalidEnvVar {
        /// The configuration key that named it.
        key: &'static str,
        /// The variable's name (never its value).
        variable: String,
        /// What is wrong with the value and what to do, for example ``contains a line
        /// break, which an HTTP header cannot hold (remove it)``.
        problem: &'static str,
    },
    /// A header name or value from the configuration is not valid in HTTP.
    #[error("header `{name}` from `{key}` is not a valid HTTP header")]
    InvalidHeader {
        /// The configuration key.
        key: &'static str,
        /// The header's name.
        name: String,
    },
    /// The server process exited before it finished starting.
    #[error(
        "server process exited during startup ({status}){}",
        stderr_suffix(stderr_tail)
    )]
    Exited {
        /// How it exited, for example `exit status: 3`.
        status: String,
        /// Its last lines of stderr.
        stderr_tail: Vec<String>,
    },
    /// The connection closed during startup, the process still running or not local.
    #[error("the connection closed during startup{}", stderr_suffix(stderr_tail))]
    Closed {
        /// The server's last lines of stderr, when it is a local process.
        stderr_tail: Vec<String>,
    },
    /// The server's OAuth login cannot be used: it needs a new one, or the stored one
    /// could not be read or refreshed.
    #[error(transparent)]
    Login(HttpFailure),
    /// The connection to an HTTP server was lost: the server refused, reset or closed
    /// a connection its transport opened, or its legacy HTTP+SSE event stream broke.
    #[error("the connection was lost")]
    Lost {
        /// What the transport saw.
        #[source]
        source: HttpFailure,
    },
    /// The `initialize` handshake failed.
    #[error("handshake failed{}", stderr_suffix(stderr_tail))]
    Handshake {
        /// Why.
        #[source]
        source: RequestError,
        /// The server's last lines of stderr, when it is a local process.
        stderr_tail: Vec<String>,
    },
    /// The server answered `initialize` with a protocol revision mcp-runtime does not
    /// speak.
    #[error(
        "the server answered `initialize` with protocol version `{answered}`, which mcp-runtime does not speak (it offered `{}`, and also speaks {})",
        crate::protocol::PROTOCOL_VERSION,
        older_protocol_versions()
    )]
    UnsupportedProtocolVersion {
        /// The version the server answered with (as it wrote it).
        answered: String,
    },
    /// `protocol` pins a handshake revision, and the server answered `initialize`
    /// with another.
    #[error(
        "the server answered `initialize` with protocol version `{answered}`, and `protocol` pins `{pinned}` (set `protocol` to `auto`, or to a version the server speaks)"
    )]
    PinnedProtocolVersionRefused {
        /// The version `protocol` pins.
        pinned: String,
        /// The version the server answered with (as it wrote it).
        answered: String,
    },
    /// `protocol` pins 2026-07-28, and the server answered `server/discover` as a
    /// server of the handshake revisions (or did not answer it).
    #[error(
        "the server does not speak protocol version `2026-07-28`, which `protocol` pins: it {} (set `protocol` to `auto` or to a handshake revision)",
        if source.is_some() { "refused `server/discover`" } else { "did not answer `server/discover`" }
    )]
    PinnedModernRefused {
        /// The server's answer to `server/discover`, when it gave one.
        #[source]
        source: Option<RequestError>,
    },
    /// `protocol` pins 2026-07-28 for a server reached with the legacy HTTP+SSE
    /// transport, which carries only the handshake revisions.
    #[error(
        "`protocol` pins `2026-07-28`, which the legacy HTTP+SSE transport (`transport = \"sse\"`) cannot carry (set `protocol` to `auto` or to a handshake revision)"
    )]
    PinnedModernOverSse,
    /// The server supports none of the protocol versions mcp-runtime offered.
    #[error("{}", no_shared_version(offered, supported, *pinned))]
    NoSharedProtocolVersion {
        /// The versions offered: every one mcp-runtime speaks, or the one `protocol`
        /// pins.
        offered: Vec<String>,
        /// The versions the server says it supports (as it wrote them).
        supported: Vec<String>,
        /// Whether `protocol` pinned the version offered.
        pinned: bool,
    },
    /// The HTTP client could not be set up.
    #[error("cannot set up the HTTP client: {message}")]
    HttpClient {
        /// What went wrong.
        message: String,
    },
    /// Listing the server's tools failed.
    #[error("listing tools failed")]
    ListTools(#[source] ListToolsError),
    /// The startup did not finish within `startup_timeout_sec`.
    #[error(
        "did not finish starting within {}{} (raise `startup_timeout_sec`)",
        secs(*after),
        if *waiting_for_shared_listing { " while waiting for another startup's shared tool listing" } else { "" }
    )]
    Timeout {
        /// The configured startup timeout.
        after: Duration,
        /// Whether time ran out while waiting for another startup's `tools/list`.
        waiting_for_shared_listing: bool,
    },
    /// The server names an execution environment that is not defined.
    #[error(
        "environment `{environment}` is not defined or has an empty `wrapper` (add `[environments.{environment}]` with a `wrapper`)"
    )]
    UndefinedEnvironment {
        /// The environment's name.
        environment: String,
    },
    /// The startup was cancelled before it finished.
    #[error("startup was cancelled")]
    Cancelled,
    /// The server's `url` is `https://` and this build of mcp-runtime has no TLS.
    #[error(
        "the server's `url` is `https://`, and this build of mcp-runtime leaves out TLS (build it with its `tls` feature)"
    )]
    TlsUnavailable,
    /// The server needs a part of mcp-runtime that this build leaves out.
    #[error(
        "{needed_by} needs the `{feature}` feature, which this build of mcp-runtime leaves out (build it with that feature)"
    )]
    FeatureLeftOut {
        /// The library's cargo feature.
        feature: &'static str,
        /// What in the server's config needs it.
        needed_by: &'static str,
    },
    /// A proxy variable of the environment names no usable proxy.
    #[error("environment variable `{variable}` {problem}")]
    ProxyVariable {
        /// The variable's name (never its value, which may hold a password).
        variable: &'static str,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A CA certificate file cannot be used.
    #[error("cannot use the CA certificate file `{path}` named by {origin}: {problem}")]
    CaCertificate {
        /// The setting that named the file: `` `ca_certificate` `` or the variable.
        origin: &'static str,
        /// The file's path.
        path: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// The server's `url`, reached as a legacy HTTP+SSE server, answered its `GET`
    /// with something other than an event stream.
    #[error(
        "`url` answered with {} instead of an event stream, so it is not the endpoint of a legacy HTTP+SSE server (check `url`: such servers often serve `/sse`; or remove `transport = \"sse\"`)",
        content_type_phrase(content_type.as_deref())
    )]
    SseNotEventStream {
        /// The media type of the answer, if it had one.
        content_type: Option<String>,
    },
    /// The `GET` that opens a legacy HTTP+SSE server's event stream was answered with
    /// a status that is not a success.
    #[error(
        "the server's `url` did not open a legacy HTTP+SSE event stream (check `url`; a server that speaks Streamable HTTP needs no `transport = \"sse\"`)"
    )]
    SseStream {
        /// The answer.
        #[source]
        source: HttpFailure,
    },
    /// A legacy HTTP+SSE server's event stream ended before it named the endpoint to
    /// send messages to.
    #[error(
        "the legacy HTTP+SSE server's event stream ended before it announced its message endpoint (check that `url` is the server's SSE endpoint)"
    )]
    SseNoEndpoint,
    /// A legacy HTTP+SSE server named an endpoint that mcp-runtime does not send
    /// messages to.
    #[error("cannot use the legacy HTTP+SSE server's message endpoint: {problem}")]
    SseEndpoint {
        /// What is wrong with it and what to do.
        problem: String,
    },
}

/// `` `text/html` ``, or that there was no media type.
fn content_type_phrase(content_type: Option<&str>) -> String {
    match content_type {
        Some(content_type) => format!("`{}`", crate::redact::one_line(content_type)),
        None => "no content type".to_owned(),
    }
}

/// The accepted revisions other than the one offered, for a message: `` `a`, `b` and `c` ``.
fn older_protocol_versions() -> String {
    let older: Vec<String> = crate::protocol::ACCEPTED_PROTOCOL_VERSIONS
        .iter()
        .filter(|version| **version != crate::protocol::PROTOCOL_VERSION)
        .map(|version| format!("`{version}`"))
        .collect();
    match older.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "no other".to_owned(),
    }
}

/// `` `a`, `b` and `c` ``.
fn listed(versions: &[String]) -> String {
    let quoted: Vec<String> = versions
        .iter()
        .map(|version| format!("`{version}`"))
        .collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

fn no_shared_version(offered: &[String], supported: &[String], pinned: bool) -> String {
    let server = if supported.is_empty() {
        "it names no version it supports".to_owned()
    } else {
        format!("it supports {}", listed(supported))
    };
    if pinned {
        format!(
            "the server shares no protocol version with mcp-runtime: {server}, and `protocol` pins {} (set `protocol` to `auto` or to a version the server supports)",
            listed(offered)
        )
    } else {
        format!(
            "the server shares no protocol version with mcp-runtime: {server}, and mcp-runtime speaks {} (upgrade the server or mcp-runtime)",
            listed(offered)
        )
    }
}

fn stderr_suffix(tail: &[String]) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; last stderr: {}", tail.join(" | "))
    }
}

pub(crate) fn secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}s")
    } else {
        format!("{secs}s")
    }
}

/// `scopes` for a message: each in backticks, or that none is named.
fn scopes_named(scopes: &[String]) -> String {
    if scopes.is_empty() {
        return "the server names none".to_owned();
    }
    scopes
        .iter()
        .map(|scope| format!("`{}`", shown(scope)))
        .collect::<Vec<_>>()
        .join(", ")
}

impl CallError {
    /// The HTTP failure that ended the call, if it was one: of the call's request,
    /// or of its server's startup.
    pub fn http_failure(&self) -> Option<&HttpFailure> {
        match self {
            Self::Failed {
                source: RequestError::Http(failure),
                ..
            } => Some(failure),
            Self::ServerNotStarted { source, .. } => source.http_failure(),
            _ => None,
        }
    }
}

impl StartupError {
    /// The HTTP failure that ended the startup, if it was one: of the handshake, or
    /// of `tools/list`.
    pub fn http_failure(&self) -> Option<&HttpFailure> {
        match self {
            Self::Login(failure)
            | Self::Handshake {
                source: RequestError::Http(failure),
                ..
            }
            | Self::ListTools(ListToolsError::Failed(RequestError::Http(failure))) => Some(failure),
            _ => None,
        }
    }
}

/// `tools/list` could not be followed to its end.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ListToolsError {
    /// The server answered a cursor it had already answered.
    #[error("the server repeated cursor `{cursor}` (its pagination loops)")]
    RepeatedCursor {
        /// The repeated cursor, escaped and cut to a length a message can quote.
        cursor: String,
    },
    /// More pages than the guard allows.
    #[error("the server returned more than {limit} pages")]
    TooManyPages {
        /// The page limit.
        limit: usize,
    },
    /// More tools than `max_tools` allows.
    #[error("the server listed more than {limit} tools (raise `max_tools`)")]
    TooManyTools {
        /// The tool limit, `max_tools`.
        limit: usize,
    },
    /// The server's answer is not a usable `tools/list` result, or no answer came in
    /// time.
    #[error("{message}")]
    Request {
        /// What went wrong.
        message: String,
    },
    /// The request failed: the server's JSON-RPC error, an HTTP failure or the end of
    /// the connection.
    #[error(transparent)]
    Failed(RequestError),
    /// No server has this name.
    #[error("no server is named `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server is not running.
    #[error("server `{server}` is not running")]
    ServerUnavailable {
        /// The server.
        server: String,
    },
    /// The server had stopped and could not be started again.
    #[error(transparent)]
    Restart(RestartError),
}

/// ` (did you mean `NEAREST`?)`, or nothing without a name near enough.
fn did_you_mean(nearest: Option<&str>) -> String {
    nearest
        .map(|nearest| format!(" (did you mean `{nearest}`?)"))
        .unwrap_or_default()
}

/// A `tools/call` through the runtime failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool has this qualified name.
    #[error("no tool is named `{name}`{}", did_you_mean(nearest.as_deref()))]
    #[non_exhaustive]
    UnknownTool {
        /// The qualified name asked for.
        name: String,
        /// The listed tool whose name is nearest to it, when one is near enough to be
        /// what was meant (Codex's names turn `-` into `_`, for one).
        nearest: Option<String>,
    },
    /// The tool's server is not running.
    #[error("server `{server}` is not running")]
    ServerUnavailable {
        /// The server.
        server: String,
    },
    /// The tool's server is disabled in the configuration (`enabled = false`, or
    /// `"disabled": true` in a JSON host's file), so it was not started.
    #[error(
        "server `{server}` is disabled, so its tools cannot be called (to call them, remove its `enabled = false` line, or its `\"disabled\": true` in a JSON config file)"
    )]
    ServerDisabled {
        /// The server.
        server: String,
    },
    /// The tool's server did not start: its startup failed, timed out or was
    /// cancelled. The server is not started again by calls.
    #[error("server `{server}` did not start")]
    ServerNotStarted {
        /// The server.
        server: String,
        /// Why its startup failed.
        #[source]
        source: StartupError,
    },
    /// The arguments given as JSON text are not a JSON object.
    #[error("the arguments of tool `{name}` must be a JSON object")]
    ArgumentsNotAnObject {
        /// The qualified name of the tool.
        name: String,
    },
    /// The call did not finish within `tool_timeout_sec`; the server was sent
    /// `notifications/cancelled`.
    #[error(
        "tool `{tool}` on server `{server}` did not answer within {} (raise `tool_timeout_sec`)",
        secs(*after)
    )]
    Timeout {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// The configured tool timeout.
        after: Duration,
    },
    /// The request failed: the server's JSON-RPC error, an HTTP failure or the end of
    /// the connection.
    #[error("tool `{tool}` on server `{server}` failed")]
    Failed {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// Why.
        #[source]
        source: RequestError,
    },
    /// The server's answer is not a tool result.
    #[error("tool `{tool}` on server `{server}` failed: {message}")]
    Request {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// What went wrong.
        message: String,
    },
    /// The server's connection ended during the call: a local server exited, or the
    /// session ended. The server is unavailable until its next call starts it again
    /// (a local server) or connects to it again (a remote one).
    #[error(
        "tool `{tool}` on server `{server}` failed: {reason} (the next call {})",
        if *local { "starts the server again" } else { "connects to the server again" }
    )]
    ServerLost {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// How the connection ended: a local server's exit status and last stderr.
        reason: String,
        /// Whether the server is a local process, which the runtime starts.
        local: bool,
    },
    /// The result does not conform to the tool's `outputSchema` (a result with
    /// `isError: true` is never checked).
    #[error(
        "tool `{tool}` on server `{server}` answered a result its `outputSchema` refuses: {message}"
    )]
    OutputMismatch {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// Where and how the result is wrong.
        message: String,
        /// The result as the server returned it.
        result: Box<crate::ToolResult>,
    },
    /// The tool's server had stopped and could not be started again.
    #[error(transparent)]
    Restart(RestartError),
}

/// A request for a server's resources, prompts or completions failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureError {
    /// No server has this name.
    #[error("no server is named `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server does not offer the feature in its capabilities.
    #[error("server `{server}` offers no {feature}")]
    NotOffered {
        /// The server.
        server: String,
        /// `resources`, `resource subscriptions`, `prompts` or `completions`.
        feature: &'static str,
    },
    /// No server offers the resource or prompt asked for.
    #[error("no server offers {kind} `{name}`")]
    NotFound {
        /// `resource` or `prompt`.
        kind: &'static str,
        /// Its URI or name.
        name: String,
    },
    /// More than one server offers the resource or prompt asked for.
    #[error(
        "{kind} `{name}` is offered by more than one server ({}): name the server",
        quoted(servers)
    )]
    Ambiguous {
        /// `resource` or `prompt`.
        kind: &'static str,
        /// Its URI or name.
        name: String,
        /// The servers that offer it, in name order.
        servers: Vec<String>,
    },
    /// No answer within the server's `tool_timeout_sec`; the server was sent
    /// `notifications/cancelled`.
    #[error(
        "server `{server}` did not answer `{method}` within {} (raise `tool_timeout_sec`)",
        secs(*after)
    )]
    Timeout {
        /// The server.
        server: String,
        /// The request's method.
        method: &'static str,
        /// The bound.
        after: Duration,
    },
    /// The request failed: the server's JSON-RPC error, an HTTP failure or the end of
    /// the connection.
    #[error("server `{server}` failed `{method}`")]
    Failed {
        /// The server.
        server: String,
        /// The request's method.
        method: &'static str,
        /// Why.
        #[source]
        source: RequestError,
    },
    /// The server's answer is not what the method answers, or its list broke a guard.
    #[error("server `{server}` answered `{method}` wrongly: {message}")]
    Answer {
        /// The server.
        server: String,
        /// The request's method.
        method: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The server is not running and could not be started again.
    #[error(transparent)]
    Restart(RestartError),
}

/// `a`, `b` as a message lists names.
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A server that stopped after it was ready could not be started again.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RestartError {
    /// No server has this name.
    #[error("no server is named `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server did not start with the runtime, so there is nothing to restart.
    #[error(
        "server `{server}` did not start with the runtime and is not restarted (fix its startup error and start the runtime again)"
    )]
    NeverStarted {
        /// The server.
        server: String,
    },
    /// A restart attempt failed.
    #[error(
        "server `{server}` stopped and starting it again failed (attempt {attempt} of {limit})"
    )]
    Failed {
        /// The server.
        server: String,
        /// Which attempt this was, from 1.
        attempt: u32,
        /// How many attempts are made before the server is left stopped.
        limit: u32,
        /// Why the attempt failed.
        #[source]
        source: Arc<StartupError>,
    },
    /// The last attempt failed and the next one is not due yet.
    #[error(
        "server `{server}` stopped and its last restart failed; the next attempt is allowed in {} (call again then)",
        secs(*retry_in)
    )]
    BackingOff {
        /// The server.
        server: String,
        /// How long until the next attempt is allowed.
        retry_in: Duration,
    },
    /// Every allowed attempt was made; the server stays stopped.
    #[error(
        "server `{server}` stopped and was started again {attempts} times without a successful call; it stays stopped until it is restarted explicitly"
    )]
    GaveUp {
        /// The server.
        server: String,
        /// How many attempts were made.
        attempts: u32,
    },
    /// The runtime is shutting down.
    #[error("server `{server}` is not restarted: the runtime is shutting down")]
    ShuttingDown {
        /// The server.
        server: String,
    },
}

/// Starting the runtime failed as a whole.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// One or more `required` servers did not become ready.
    #[error("required {} failed to start: {}", if failures.len() == 1 { "server" } else { "servers" }, describe_failures(failures))]
    RequiredServersFailed {
        /// Each failed required server and why.
        failures: Vec<(String, StartupError)>,
    },
}

fn describe_failures(failures: &[(String, StartupError)]) -> String {
    failures
        .iter()
        .map(|(name, error)| format!("`{name}`: {}", crate::error::chain(error)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A request to a server failed below the level of what was asked: the server
/// answered with a JSON-RPC error, the HTTP exchange failed, or the connection ended.
///
/// The protocol library's own error stays reachable as the `source` of
/// [`RequestError::Server`] and [`RequestError::Other`], for a program that wants it;
/// [`chain`] stops before it, as its text is written for the library's developers.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Server {
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
        /// The protocol library's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// An HTTP request failed.
    #[error(transparent)]
    Http(HttpFailure),
    /// The runtime refused the server's answer: over the client's size limit, or not
    /// one it can read.
    #[error(transparent)]
    Refused(MessageRefused),
    /// Under protocol version 2026-07-28, the server failed the request because it
    /// could not send a request of its own (`elicitation/create`,
    /// `sampling/createMessage` or `roots/list`): that revision has no such requests,
    /// its servers ask through an input-required result. The server's fault.
    #[error(
        "the server tried to send `{method}` as a request of its own, which protocol version `2026-07-28` does not have (a server of that revision asks through an input-required result): a fault of the server; until it is fixed, set `protocol = \"2025-11-25\"` for this server"
    )]
    AskedOutOfEra {
        /// The request it tried to send.
        method: &'static str,
        /// The server's error.
        #[source]
        source: Arc<RequestError>,
    },
    /// The server process exited.
    #[error("the server process exited ({status}){}", stderr_suffix(stderr_tail))]
    Exited {
        /// How it exited, for example `exit status: 3`.
        status: String,
        /// Its last lines of stderr.
        stderr_tail: Vec<String>,
    },
    /// The connection closed, the process still running or not local.
    #[error("the connection closed{}", stderr_suffix(stderr_tail))]
    Closed {
        /// The server's last lines of stderr, when it is a local process.
        stderr_tail: Vec<String>,
    },
    /// The connection to an HTTP server was lost: its transport found the server gone
    /// (see [`StartupError::Lost`]).
    #[error("the connection was lost")]
    Lost {
        /// What the transport saw.
        #[source]
        source: Arc<HttpFailure>,
    },
    /// The event stream that was to carry the answer (Streamable HTTP) ended before
    /// the answer and was not resumed. The request reached the server: it may have
    /// run.
    #[error(
        "the server's event stream ended before the answer{} ({})",
        resuming.suffix(),
        stream_lost_fix(source.as_deref())
    )]
    StreamLost {
        /// What became of resuming the stream.
        resuming: Resuming,
        /// Why resuming it failed, else why it ended; none when the server ended it.
        #[source]
        source: Option<Arc<HttpFailure>>,
    },
    /// Anything else the protocol library reported.
    #[error("{description}")]
    Other {
        /// What went wrong, in words.
        description: String,
        /// The protocol library's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

/// What became of resuming an event stream that ended before the answer it was to
/// carry ([`RequestError::StreamLost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resuming {
    /// The stream cannot be resumed: the server gave its events no ids.
    Impossible,
    /// Resuming it failed, or the server is gone.
    Failed,
    /// It was not resumed before the call's deadline.
    OutOfTime {
        /// The call's timeout.
        after: Duration,
    },
}

impl Resuming {
    fn suffix(self) -> String {
        match self {
            Self::Impossible => String::new(),
            Self::Failed => ", and resuming it failed".to_owned(),
            Self::OutOfTime { after } => {
                format!(", and it was not resumed within {}", secs(after))
            }
        }
    }
}

/// What to do about a call whose answer's stream was lost for `source`: know that it
/// may have run, and check the server, unless `source` says so already.
fn stream_lost_fix(source: Option<&HttpFailure>) -> &'static str {
    match source {
        Some(
            HttpFailure::Refused { .. } | HttpFailure::Reset { .. } | HttpFailure::Closed { .. },
        ) => "the call may have run",
        _ => "the call may have run; check that the server is still running before calling again",
    }
}

/// How an HTTP request to a Streamable HTTP server failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HttpFailure {
    /// `401`: the server wants credentials.
    #[error(
        "server `{server}` answered HTTP 401: authorization is needed (log in with `mcp-runtime login {server}` if it uses OAuth, or name a token's variable with `bearer_token_env_var`, or send a header with `env_http_headers`)"
    )]
    Unauthorized {
        /// The server.
        server: String,
        /// Its `WWW-Authenticate` challenge, where an OAuth login starts.
        challenge: Option<String>,
    },
    /// The server's OAuth login is missing, expired beyond refresh, or refused.
    #[error("server `{server}` needs a new login: run `mcp-runtime login {server}`")]
    NeedsLogin {
        /// The server.
        server: String,
    },
    /// Using the server's OAuth login failed another way.
    #[error("server `{server}`'s OAuth login cannot be used: {description}")]
    OAuth {
        /// The server.
        server: String,
        /// What went wrong, without any token.
        description: String,
    },
    /// `403`: the server refused the credentials sent.
    #[error(
        "server `{server}` answered HTTP 403: the credentials were refused (check the token named by `bearer_token_env_var` or the headers of `env_http_headers`)"
    )]
    Forbidden {
        /// The server.
        server: String,
        /// Its `WWW-Authenticate` challenge (an `insufficient_scope` one names the
        /// scope needed).
        challenge: Option<String>,
    },
    /// `403` with an `insufficient_scope` challenge: the OAuth login lacks a scope
    /// the request needs. A new login asking for the scopes held and these ones
    /// (`mcp-runtime login` does) may be granted them.
    #[error(
        "server `{server}` needs a login with more scopes ({}): run `mcp-runtime login {server}`",
        scopes_named(scopes)
    )]
    InsufficientScope {
        /// The server.
        server: String,
        /// The scopes its challenge names (empty when it names none).
        scopes: Vec<String>,
    },
    /// `404` without a session: nothing answers MCP at this URL.
    #[error("server `{server}` answered HTTP 404: no MCP endpoint is at this URL (check `url`)")]
    NotFound {
        /// The server.
        server: String,
    },
    /// `405` to a `POST`: most likely a server of the older HTTP+SSE transport. A
    /// start in `auto` mode falls back to that transport on its own, so this is seen
    /// where it cannot (a pinned `2026-07-28`, a session already started).
    #[error(
        "server `{server}` answered HTTP 405 to a POST: it is probably a legacy HTTP+SSE server (set `transport = \"sse\"`, or leave `protocol` at `auto` to fall back to it)"
    )]
    LegacySse {
        /// The server.
        server: String,
    },
    /// Another status that is not a success.
    #[error(
        "server `{server}` answered HTTP {status}{}",
        body_suffix(body_excerpt)
    )]
    Status {
        /// The server.
        server: String,
        /// The status code.
        status: u16,
        /// The start of the body, as text, at most [`HTTP_BODY_EXCERPT_CHARS`]
        /// characters.
        body_excerpt: String,
    },
    /// A redirect the HTTP client does not follow: one to another origin, one whose
    /// status would change the request (only `307` and `308` keep it), or one past
    /// the limit of redirects.
    #[error(
        "server `{server}` answered HTTP {status}, {}",
        redirect_explained(location.as_deref(), problem)
    )]
    Redirect {
        /// The server.
        server: String,
        /// The status code.
        status: u16,
        /// Where it redirects (its `Location`, resolved), credentials and query
        /// values masked; `None` when it names nowhere.
        location: Option<String>,
        /// Why it is not followed.
        problem: &'static str,
    },
    /// The connection was refused.
    #[error(
        "server `{server}` refused the connection (check that it is running and that `url` names its host and port)"
    )]
    Refused {
        /// The server.
        server: String,
    },
    /// The server reset the connection: it stopped, or something on the way cut the
    /// connection.
    #[error("server `{server}` reset the connection (check that it is still running)")]
    Reset {
        /// The server.
        server: String,
    },
    /// The server closed the connection before its answer was complete: it stopped,
    /// or dropped the request.
    #[error(
        "server `{server}` closed the connection before its answer was complete (check that it is still running)"
    )]
    Closed {
        /// The server.
        server: String,
    },
    /// The host name could not be resolved.
    #[error("the host `{host}` of server `{server}` cannot be resolved (check `url`)")]
    Dns {
        /// The server.
        server: String,
        /// The host name.
        host: String,
    },
    /// The TLS handshake failed.
    #[error(
        "the TLS handshake with server `{server}` failed (check that it serves HTTPS, or use `http://` in `url`)"
    )]
    Tls {
        /// The server.
        server: String,
    },
    /// The server's TLS certificate was refused.
    #[error("server `{server}` presented a TLS certificate that is not trusted: {problem}")]
    Certificate {
        /// The server.
        server: String,
        /// Why (the verifier's reason), and what to do.
        problem: String,
    },
    /// The server is reached through a proxy, and the proxy could not be reached or
    /// did not open a connection to the server.
    #[error(
        "cannot reach server `{server}` through the proxy `{proxy}` of `{variable}`: {problem}"
    )]
    Proxy {
        /// The server.
        server: String,
        /// The proxy's URL, its user information masked.
        proxy: String,
        /// The variable that named it.
        variable: &'static str,
        /// What failed, and what to do.
        problem: &'static str,
    },
    /// The request timed out.
    #[error("the HTTP request to server `{server}` timed out")]
    Timeout {
        /// The server.
        server: String,
    },
    /// The connection could not be made for another reason, or broke.
    #[error("cannot reach server `{server}`: {description} (check `url` and the network)")]
    Connection {
        /// The server.
        server: String,
        /// What the HTTP client reported.
        description: String,
    },
    /// An event of a stream that answers no request was over the client's size
    /// limit, so the stream was not read further.
    #[error(
        "server `{server}` sent an event over the client's limit of {limit} bytes on its own event stream (raise `max_message_bytes`)"
    )]
    EventTooLarge {
        /// The server.
        server: String,
        /// The limit, `max_message_bytes`.
        limit: usize,
    },
}

/// The rest of an [`HttpFailure::Redirect`]'s message: where to, why it is not
/// followed, and what to do.
fn redirect_explained(location: Option<&str>, problem: &str) -> String {
    match location {
        Some(location) => format!(
            "a redirect to `{location}`, which is not followed: {problem} (if that is the server, set `url` to it)"
        ),
        None => "a redirect that names no `Location` (check `url`)".to_owned(),
    }
}

/// How many characters of an HTTP error body [`HttpFailure::Status`] keeps.
pub const HTTP_BODY_EXCERPT_CHARS: usize = 200;

fn body_suffix(excerpt: &str) -> String {
    if excerpt.is_empty() {
        String::new()
    } else {
        format!(": {excerpt}")
    }
}

/// Whether `error` is one of this crate's errors, whose text is written for users
/// (a program printing an error chain of its own stops where [`chain`] would).
///
/// Every public error type of the crate is one, those of other areas (a login, the
/// token store, a tool result) too: the types are only compared here.
pub fn is_ours(error: &(dyn std::error::Error + 'static)) -> bool {
    is::<ConfigError>(error)
        || is::<StartupError>(error)
        || is::<ListToolsError>(error)
        || is::<CallError>(error)
        || is::<FeatureError>(error)
        || is::<StartError>(error)
        || is::<RestartError>(error)
        || is::<RequestError>(error)
        || is::<HttpFailure>(error)
        || is::<MessageRefused>(error)
        || is::<AuthorityError>(error)
        || is::<crate::InvalidToolResult>(error)
        || is::<crate::sandbox_metadata::InvalidSandboxState>(error)
        || is_ours_in_oauth(error)
}

/// Whether `error` is a `T`, or a `T` shared in an `Arc` (as sources are).
fn is<T: std::error::Error + 'static>(error: &(dyn std::error::Error + 'static)) -> bool {
    error.is::<T>() || error.is::<Arc<T>>()
}

/// [`is_ours`] for the errors of OAuth.
#[cfg(feature = "oauth")]
fn is_ours_in_oauth(error: &(dyn std::error::Error + 'static)) -> bool {
    is::<crate::login::LoginError>(error)
        || is::<crate::auth::logout::LogoutError>(error)
        || is::<crate::auth::store::StoreError>(error)
}

#[cfg(not(feature = "oauth"))]
fn is_ours_in_oauth(_error: &(dyn std::error::Error + 'static)) -> bool {
    false
}

/// An error and its sources on one line, joined with `: `, every credential in use
/// masked ([`crate::redact::credentials`]). The chain stops at the first source that
/// is not one of this crate's errors (an I/O error is kept, its text names no
/// internals): the protocol library's errors stay available through `source` but
/// their text (type names, debug dumps) is not for users.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let io = cause.is::<std::io::Error>() || cause.is::<Arc<std::io::Error>>();
        if !is_ours(cause) && !io {
            break;
        }
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    // Server text is masked where it enters an error; this is the net under that.
    match crate::redact::credentials(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(masked) => masked,
    }
}

/// A request's sandbox authority cannot be used (server side).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthorityError {
    /// `_meta` is not a JSON object, or a sandbox key has a value of the wrong shape.
    #[error("`{key}` in the request's `_meta` is malformed: {message}")]
    Malformed {
        /// The key (or `_meta` itself).
        key: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The state and its deprecated copy differ.
    #[error(
        "`codex/sandbox-state` and `codex/sandbox-state-meta` differ; a host must send identical copies"
    )]
    MismatchedCopies,
    /// The launcher path is not absolute.
    #[error("the sandbox launcher `{path}` is not an absolute path")]
    RelativeLauncher {
        /// The path as sent.
        path: String,
    },
    /// No launcher was supplied and the operator did not allow running unsandboxed.
    #[error(
        "the host supplied no sandbox launcher (`codex/sandbox-launcher`), so the command cannot run sandboxed; refusing to run it unsandboxed (the host must offer a launcher, or the server's operator must allow unsandboxed runs)"
    )]
    NoLauncher,
    /// Something bound to one authority was asked for under another.
    #[error(
        "this was created under a different sandbox authority and cannot be reused under this call's; create a new one"
    )]
    Changed,
}

#[cfg(test)]
mod tests;
