//! The ways to reach a server: a local child process over stdio, a Streamable HTTP
//! endpoint, or a legacy HTTP+SSE endpoint. Each ends in an rmcp transport that
//! [`crate::connection`] runs the protocol over.
//!
//! An [`Endpoint`] is prepared before anything is started: it holds exactly what will be
//! used (the argv, the child's whole environment; the URL, the headers and token with
//! every variable resolved), so the discovery key of a startup is computed from the
//! same values the connection uses.

pub(crate) mod answer_id;
pub(crate) mod error;
#[cfg(feature = "http")]
mod event_lines;
pub(crate) mod framing;
pub(crate) mod hand_back;
#[cfg(feature = "http")]
pub(crate) mod http;
/// The streams of HTTP connections, which a build without HTTP never has.
#[cfg(not(feature = "http"))]
pub(crate) mod http {
    pub(crate) use super::without_http::{Lost, Streams};
}
pub(crate) mod raw_answers;
pub(crate) mod refused;
pub(crate) mod splice;
#[cfg(feature = "http")]
pub(crate) mod sse;
pub(crate) mod stdio;
#[cfg(not(feature = "http"))]
mod without_http;

#[cfg(feature = "http")]
use crate::config::HttpTransport;
use crate::{
    config::{ServerConfig, TransportConfig},
    discovery_key::Detail,
    transport::error::StartupError,
};

/// Exactly how to reach one server.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// A local child process (possibly through an environment's wrapper).
    Stdio(stdio::Launch),
    /// A Streamable HTTP endpoint.
    #[cfg(feature = "http")]
    Http(http::ResolvedHttp),
    /// A legacy HTTP+SSE endpoint (`transport = "sse"`): no Streamable HTTP attempt.
    #[cfg(feature = "http")]
    Sse(http::ResolvedHttp),
}

impl Endpoint {
    /// Resolves `config` against this process's environment. `wrapper` is the command
    /// prefix of the server's execution environment, if it has one.
    pub(crate) fn prepare(
        config: &ServerConfig,
        wrapper: Option<&[String]>,
    ) -> Result<Self, StartupError> {
        Ok(match &config.transport {
            TransportConfig::Stdio(stdio) => {
                Self::Stdio(stdio::Launch::new(stdio, wrapper, config.max_message_bytes))
            }
            #[cfg(not(feature = "http"))]
            TransportConfig::StreamableHttp(_) => {
                return Err(StartupError::FeatureLeftOut {
                    feature: "http",
                    needed_by: "a server with a `url`",
                });
            }
            #[cfg(feature = "http")]
            TransportConfig::StreamableHttp(http) => {
                if !cfg!(feature = "tls") && is_https(&http.url) {
                    return Err(StartupError::TlsUnavailable);
                }
                let resolved = http::ResolvedHttp {
                    max_message_bytes: config.max_message_bytes,
                    ..http::resolve(http, |name| std::env::var_os(name))?
                };
                match http.transport {
                    HttpTransport::Sse => Self::Sse(resolved),
                    HttpTransport::StreamableHttp => Self::Http(resolved),
                }
            }
        })
    }

    /// The credentials sent to an HTTP server, registered for masking (a local
    /// server's are registered by its process, see [`stdio::spawn`]).
    pub(crate) fn credentials(&self) -> &[crate::redact::Registered] {
        match self {
            Self::Stdio(_) => &[],
            #[cfg(feature = "http")]
            Self::Http(http) | Self::Sse(http) => &http.credentials,
        }
    }
}

#[cfg(feature = "http")]
fn is_https(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

/// What identifies a server's endpoint in the keys of shared listings and remembered
/// eras: its command line, working directory and environment, or its transport, URL
/// and headers (the transport is part of the key: the same URL may answer both).
impl crate::discovery_key::KeyInputs for Endpoint {
    fn keeps_era_on_disk(&self) -> bool {
        matches!(self, Endpoint::Stdio(_))
    }

    fn key_fields(&self, detail: Detail, field: &mut dyn FnMut(&[u8])) {
        match self {
            Endpoint::Stdio(launch) => {
                field(b"stdio");
                field(&(launch.argv.len() as u64).to_le_bytes());
                for arg in &launch.argv {
                    field(arg.as_bytes());
                }
                // An inherited working directory is this process's, now: relative
                // paths in argv resolve against it.
                match launch.cwd.clone().or_else(|| std::env::current_dir().ok()) {
                    Some(cwd) => field(cwd.as_os_str().as_encoded_bytes()),
                    None => field(b"<unknown cwd>"),
                }
                // The environment is part of the key whatever `detail` says; on disk,
                // by its names alone (a value may be a credential).
                field(&(launch.env.len() as u64).to_le_bytes());
                for (name, value) in &launch.env {
                    field(name.as_encoded_bytes());
                    if detail != Detail::OnDisk {
                        field(value.as_encoded_bytes());
                    }
                }
            }
            // The transport is part of the key: the same URL may answer both.
            #[cfg(feature = "http")]
            Endpoint::Http(http) | Endpoint::Sse(http) => {
                field(match self {
                    Endpoint::Sse(_) => b"legacy-sse",
                    _ => b"streamable-http",
                });
                field(http.url.as_bytes());
                let mut headers: Vec<_> = http
                    .headers
                    .iter()
                    .filter(|(_, value)| detail == Detail::WithCredentials || !value.is_sensitive())
                    .collect();
                headers.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
                field(&(headers.len() as u64).to_le_bytes());
                for (name, value) in headers {
                    field(name.as_str().as_bytes());
                    if detail != Detail::OnDisk {
                        field(value.as_bytes());
                    }
                }
                if detail == Detail::WithCredentials {
                    match &http.bearer_token {
                        Some(token) => field(token.as_bytes()),
                        None => field(b"<no token>"),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(not(feature = "http"))]
    fn a_server_with_a_url_needs_the_http_feature() {
        let config = ServerConfig::http("web", "http://127.0.0.1:1/mcp");
        let error = Endpoint::prepare(&config, None).unwrap_err();
        assert!(
            matches!(
                error,
                StartupError::FeatureLeftOut {
                    feature: "http",
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "a server with a `url` needs the `http` feature, which this build of mcp-runtime leaves out (build it with that feature)"
        );
    }

    #[test]
    #[cfg(feature = "http")]
    fn an_https_server_needs_the_tls_feature() {
        let config = ServerConfig::http("web", "HTTPS://example.invalid/mcp");
        let prepared = Endpoint::prepare(&config, None);
        if cfg!(feature = "tls") {
            assert!(prepared.is_ok(), "{prepared:?}");
        } else {
            let error = prepared.unwrap_err();
            assert!(matches!(error, StartupError::TlsUnavailable), "{error}");
        }
        let plain = ServerConfig::http("web", "http://127.0.0.1:1/mcp");
        assert!(Endpoint::prepare(&plain, None).is_ok());
    }

    #[test]
    #[cfg(feature = "http")]
    fn transport_sse_forces_the_legacy_transport() {
        let mut config = ServerConfig::http("web", "http://127.0.0.1:1/sse");
        let TransportConfig::StreamableHttp(http) = &mut config.transport else {
            unreachable!("an HTTP server")
        };
        http.transport = HttpTransport::Sse;
        let prepared = Endpoint::prepare(&config, None).unwrap();
        assert!(
            matches!(&prepared, Endpoint::Sse(resolved) if resolved.url == "http://127.0.0.1:1/sse"),
            "{prepared:?}"
        );
    }
}
