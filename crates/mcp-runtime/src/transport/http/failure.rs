//! What a failed HTTP exchange means: the [`HttpFailure`] for a network error of the
//! HTTP client or for an answer whose status is not a success.
//!
//! A network error is read by the types in its `source` chain, never by its text
//! (which names the URL, and internals): a refused, reset or closed connection and a
//! timeout are I/O error kinds (a connection closed before any answer is the HTTP
//! client's own error), a failed TLS handshake is the invalid data the TLS stream reports
//! (a refused certificate is the TLS library's error inside it, read for the reason),
//! and a host name that does not resolve is known by [`Resolver`], the resolver the
//! client is built with, whose failure is a type of this module.

use std::borrow::Cow;

use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::transport::error::{HTTP_BODY_EXCERPT_CHARS, HttpFailure};

#[cfg(feature = "tls")]
mod certificate;

/// The system's resolver, whose failures carry [`NotResolved`] so that
/// [`classify`] can tell a host name that does not resolve from other connection
/// failures without reading the HTTP client's messages.
pub(super) struct Resolver;

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let not_resolved = || {
                Box::new(NotResolved { host: host.clone() })
                    as Box<dyn std::error::Error + Send + Sync>
            };
            let addresses = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|_| not_resolved())?;
            let addresses: Vec<_> = addresses.collect();
            if addresses.is_empty() {
                return Err(not_resolved());
            }
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A host name did not resolve: the server's, or its proxy's (which is the only one
/// resolved here when the server is reached through a proxy).
#[derive(Debug, thiserror::Error)]
#[error("the host name does not resolve")]
struct NotResolved {
    host: String,
}

/// What `error`, from the HTTP client talking to `server`, means for the user: a
/// refused, reset or closed connection, an unresolved host, a failed TLS handshake,
/// a timeout or another connection failure. The client's own message is not used: it names the
/// URL (which may carry a secret) and its sources name internals.
pub(crate) fn classify(server: &str, error: &reqwest::Error) -> HttpFailure {
    let server = server.to_owned();
    if error.is_timeout() {
        return HttpFailure::Timeout { server };
    }
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(NotResolved { host }) = cause.downcast_ref() {
            let host = host.clone();
            return HttpFailure::Dns { server, host };
        }
        // The server closed the connection without an answer: the HTTP client's own
        // error, with no I/O error inside.
        if cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
        {
            return HttpFailure::Closed { server };
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            #[cfg(feature = "tls")]
            if let Some(problem) = io
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                .and_then(certificate::problem)
            {
                return HttpFailure::Certificate { server, problem };
            }
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return HttpFailure::Refused { server },
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
                    return HttpFailure::Reset { server };
                }
                // The end of the connection where the answer goes on (a body cut
                // short), or a write to a connection the server closed.
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::BrokenPipe => {
                    return HttpFailure::Closed { server };
                }
                std::io::ErrorKind::TimedOut => return HttpFailure::Timeout { server },
                // The TLS stream reports a failed handshake (a record that is not
                // TLS, a certificate refused) as invalid data.
                std::io::ErrorKind::InvalidData if error.is_connect() => {
                    return HttpFailure::Tls { server };
                }
                _ => {}
            }
            // An I/O error's `source` skips the error it wraps (the TLS stream wraps
            // its own error in another I/O error): that one is read next.
            if let Some(inner) = io.get_ref() {
                source = Some(inner);
                continue;
            }
        }
        source = cause.source();
    }
    let description = if error.is_connect() {
        "the connection failed"
    } else if error.is_body() || error.is_decode() {
        "reading the answer failed"
    } else {
        "the request failed"
    };
    HttpFailure::Connection {
        server,
        description: description.to_owned(),
    }
}

/// The verifier's reason when an error of rmcp's own HTTP client (an authorization
/// server's) comes of a refused certificate.
#[cfg(feature = "oauth")]
pub(crate) use crate::tls_refusal::refused_certificate;

/// The failure an answer with `status` (not a success) stands for, given the start of
/// its body and its `WWW-Authenticate` challenge; `post` says whether the request was
/// a `POST`.
pub(crate) fn status_failure(
    server: &str,
    status: reqwest::StatusCode,
    body: &[u8],
    post: bool,
    challenge: Option<String>,
) -> HttpFailure {
    let server = server.to_owned();
    let challenge = challenge.map(shown_challenge);
    match status.as_u16() {
        401 => HttpFailure::Unauthorized { server, challenge },
        403 => forbidden(server, challenge),
        404 => HttpFailure::NotFound { server },
        405 if post => HttpFailure::LegacySse { server },
        code => HttpFailure::Status {
            server,
            status: code,
            body_excerpt: excerpt(body),
        },
    }
}

/// A `WWW-Authenticate` challenge as it is kept: every credential masked (a server
/// may quote the token it refused).
fn shown_challenge(challenge: String) -> String {
    match crate::redact::credentials(&challenge) {
        std::borrow::Cow::Borrowed(_) => challenge,
        std::borrow::Cow::Owned(masked) => masked,
    }
}

/// Why a redirect past the limit is not followed.
const TOO_MANY_REDIRECTS: &str = "no more than 10 redirects are followed in a row";
const _: () = assert!(super::MAX_REDIRECTS == 10, "`TOO_MANY_REDIRECTS` says 10");

/// The failure of an answer with a redirect `status` that the HTTP client did not
/// follow (see [`super::same_origin_redirects`]), from `url`, the URL that answered,
/// to `location`, its `Location` header: which of the policy's rules stopped it.
pub(crate) fn redirect_failure(
    server: &str,
    status: reqwest::StatusCode,
    url: &url::Url,
    location: Option<&str>,
) -> HttpFailure {
    let target = location.and_then(|location| url.join(location).ok());
    let problem = match &target {
        Some(target) if target.origin() != url.origin() => {
            "a redirect to another origin is never followed, so that the session and the configured headers reach only the server `url` names"
        }
        Some(_) if !matches!(status.as_u16(), 307 | 308) => {
            "only a 307 or 308 redirect is followed, as only those keep the request's method and body"
        }
        Some(_) => TOO_MANY_REDIRECTS,
        None => "",
    };
    HttpFailure::Redirect {
        server: server.to_owned(),
        status: status.as_u16(),
        // Masked, then bounded as a body's excerpt is.
        location: target.map(|target| {
            let url = crate::redact::url(target.as_str());
            let shown = crate::redact::one_line(&crate::redact::credentials(&url)).into_owned();
            match shown.char_indices().nth(HTTP_BODY_EXCERPT_CHARS) {
                Some((end, _)) => format!("{}…", &shown[..end]),
                None => shown,
            }
        }),
        problem,
    }
}

/// A `403`: [`HttpFailure::InsufficientScope`] when its challenge says so (rmcp
/// parses it), else [`HttpFailure::Forbidden`].
fn forbidden(server: String, challenge: Option<String>) -> HttpFailure {
    // Only `scope` and `error` are read: the base URL resolves a relative
    // `resource_metadata`, which is not.
    #[cfg(not(feature = "oauth"))]
    {
        // Without OAuth (rmcp's challenge parser) a `403` is what it says.
        HttpFailure::Forbidden { server, challenge }
    }
    #[cfg(feature = "oauth")]
    let params = challenge.as_deref().and_then(|challenge| {
        let base = url::Url::parse("http://localhost/").ok()?;
        Some(rmcp::transport::auth::WWWAuthenticateParams::parse(
            challenge, &base,
        ))
    });
    #[cfg(feature = "oauth")]
    match params {
        Some(params) if params.is_insufficient_scope() => HttpFailure::InsufficientScope {
            server,
            scopes: params
                .scope
                .iter()
                .flat_map(|scope| scope.split_whitespace())
                .map(str::to_owned)
                .collect(),
        },
        _ => HttpFailure::Forbidden { server, challenge },
    }
}

/// The start of `body` as one line of text: every credential masked, at most
/// [`HTTP_BODY_EXCERPT_CHARS`] characters, control characters and runs of white space
/// as one space, `…` when cut.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = crate::redact::credentials(&text);
    let mut words = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty());
    let mut out = String::new();
    let mut chars = 0;
    let mut cut = false;
    if let Some(first) = words.next() {
        for (index, word) in std::iter::once(first).chain(words).enumerate() {
            let separator = usize::from(index > 0);
            let room = HTTP_BODY_EXCERPT_CHARS.saturating_sub(chars + separator);
            if room == 0 {
                cut = true;
                break;
            }
            if separator == 1 {
                out.push(' ');
            }
            let taken: String = word.chars().take(room).collect();
            chars += separator + taken.chars().count();
            out.push_str(&taken);
            if taken.len() < word.len() {
                cut = true;
                break;
            }
        }
    }
    if cut {
        out.push('…');
    }
    out
}

/// `error` from rmcp's reqwest client with its network failure classified.
pub(super) fn from_rmcp(
    server: &str,
    error: StreamableHttpError<reqwest::Error>,
) -> StreamableHttpError<HttpFailure> {
    use StreamableHttpError as E;
    match error {
        E::Client(error) => E::Client(classify(server, &error)),
        E::HttpStatus(status) => E::HttpStatus(status),
        E::Sse(error) => E::Sse(error),
        E::Io(error) => E::Io(error),
        E::UnexpectedEndOfStream => E::UnexpectedEndOfStream,
        E::UnexpectedServerResponse(text) => {
            E::UnexpectedServerResponse(Cow::Owned(crate::redact::credentials(&text).into_owned()))
        }
        E::ResponseBodyTooLarge { max_size } => E::ResponseBodyTooLarge { max_size },
        E::UnexpectedContentType(content_type) => E::UnexpectedContentType(content_type),
        E::ServerDoesNotSupportSse => E::ServerDoesNotSupportSse,
        E::ServerDoesNotSupportDeleteSession => E::ServerDoesNotSupportDeleteSession,
        E::Deserialize(error) => E::Deserialize(error),
        E::TransportChannelClosed => E::TransportChannelClosed,
        E::MissingSessionIdInResponse => E::MissingSessionIdInResponse,
        E::AuthRequired(error) => E::Client(HttpFailure::Unauthorized {
            server: server.to_owned(),
            challenge: Some(shown_challenge(error.www_authenticate_header)),
        }),
        E::InsufficientScope(error) => E::Client(forbidden(
            server.to_owned(),
            Some(shown_challenge(error.www_authenticate_header)),
        )),
        E::ReservedHeaderConflict(name) => E::ReservedHeaderConflict(name),
        E::SessionExpired => E::SessionExpired,
        other => E::UnexpectedServerResponse(Cow::Owned(
            crate::redact::credentials(&other.to_string()).into_owned(),
        )),
    }
}
