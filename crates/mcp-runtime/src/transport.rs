//! The ways to reach a server: a local child process over stdio, a Streamable HTTP
//! endpoint, or a legacy HTTP+SSE endpoint. Each ends in an rmcp transport that
//! [`crate::connection`] runs the protocol over.
//!
//! An [`Endpoint`] is prepared before anything is started: it holds exactly what will be
//! used (the argv, the child's whole environment; the URL, the headers and token with
//! every variable resolved), so the discovery key of a startup is computed from the
//! same values the connection uses.

pub(crate) mod answer_id;
pub(crate) mod framing;
pub(crate) mod http;
pub(crate) mod raw_answers;
pub(crate) mod refused;
pub(crate) mod splice;
pub(crate) mod sse;
pub(crate) mod stdio;

use crate::{
    config::{HttpTransport, ServerConfig, TransportConfig},
    error::StartupError,
};

/// Exactly how to reach one server.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// A local child process (possibly through an environment's wrapper).
    Stdio(stdio::Launch),
    /// A Streamable HTTP endpoint.
    Http(http::ResolvedHttp),
    /// A legacy HTTP+SSE endpoint (`transport = "sse"`): no Streamable HTTP attempt.
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
            Self::Http(http) | Self::Sse(http) => &http.credentials,
        }
    }
}

fn is_https(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
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
