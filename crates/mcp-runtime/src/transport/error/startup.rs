//! [`StartupError`]: why one server could not be started, from its transport (a
//! program that cannot be spawned, a header or proxy that cannot be used) up to its
//! handshake and first `tools/list`.

use std::{sync::Arc, time::Duration};

use super::{HttpFailure, ListToolsError, ProcessExit, RequestError, secs, stderr_suffix};

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
        /// How it exited: its exit code, or the signal that ended it.
        status: ProcessExit,
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
    #[error("cannot set up the HTTP client (its TLS backend cannot be initialized)")]
    HttpClient {
        /// The HTTP client's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The server's `url` cannot be parsed as a URL.
    #[error("`url` is not a valid URL (check `url`)")]
    InvalidUrl {
        /// The URL parser's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
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
