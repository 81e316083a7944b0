//! [`HttpFailure`]: how an HTTP request to a server failed, one variant per thing the
//! user can check.
//!
//! It is defined apart from the HTTP transport itself (`transport::http`) because the
//! errors of every transport name it ([`super::RequestError::Http`],
//! [`super::StartupError::Login`]), whichever transports a build holds.

use crate::redact::shown;

/// How an HTTP request to a Streamable HTTP server failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HttpFailure {
    /// `401`: the server wants credentials.
    #[error(
        "server `{server}` answered HTTP 401: authorization is needed (name a token's variable with `bearer_token_env_var`, send a header with `env_http_headers`, or log in to it if it uses OAuth)"
    )]
    Unauthorized {
        /// The server.
        server: String,
        /// Its `WWW-Authenticate` challenge, where an OAuth login starts.
        challenge: Option<String>,
    },
    /// The server's OAuth login is missing, expired beyond refresh, or refused.
    #[error("server `{server}` needs a new login")]
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
    /// (the command line's `login` does) may be granted them.
    #[error(
        "server `{server}` needs a login with more scopes ({})",
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
