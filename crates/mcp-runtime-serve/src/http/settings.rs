//! What a listener needs settled before it accepts a connection: where it listens,
//! who may call it, and which `Host` and `Origin` values it takes.

use std::{net::SocketAddr, time::Duration};

use mcp_runtime::config::{ServeAuth, ServeConfig};
use sha2::{Digest, Sha256};

/// The HTTP listener's settings, checked ([`Settings::new`]).
#[derive(Clone)]
pub struct Settings {
    pub(crate) auth: Auth,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) max_sessions: usize,
    pub(crate) max_request_bytes: usize,
    pub(crate) session_idle: Duration,
    pub(crate) drain: Duration,
}

impl std::fmt::Debug for Settings {
    /// Everything but the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("authenticated", &!matches!(self.auth, Auth::None))
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_sessions", &self.max_sessions)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("session_idle", &self.session_idle)
            .finish_non_exhaustive()
    }
}

/// How clients are authenticated.
#[derive(Clone)]
pub(crate) enum Auth {
    /// Nobody is asked (a loopback listener without `[serve.auth]`).
    None,
    /// Every client sends this token as `Authorization: Bearer …`; kept as its
    /// SHA-256, compared digest to digest.
    Bearer([u8; 32]),
}

/// Why a listener refuses to start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// A listener reachable from other machines, with nobody authenticated.
    #[error(
        "refusing to listen on {listen} without authentication: anyone who can reach it could use every configured server. \
         Listen on loopback (127.0.0.1), or add `[serve.auth]` with `bearer_token_env_var = \"NAME\"` to the config and set NAME to a long random token"
    )]
    Unauthenticated {
        /// The address asked for.
        listen: SocketAddr,
    },
    /// A listener on every interface, with no names to accept in `Host`.
    #[error(
        "listening on {listen} needs the host names clients use: add them as `[serve] allowed_hosts = [\"gateway.example.com\"]` (requests naming another Host are refused, against DNS rebinding)"
    )]
    NoAllowedHosts {
        /// The address asked for.
        listen: SocketAddr,
    },
    /// A way of authenticating this listener does not know.
    #[error("`[serve.auth]`: this listener cannot authenticate clients with {0}")]
    UnknownAuth(String),
    /// `[serve.auth] bearer_token_env_var` names a variable that is not set.
    #[error(
        "`[serve.auth] bearer_token_env_var` names `{variable}`, which is not set or is empty: set it to the token clients send"
    )]
    TokenNotSet {
        /// The variable's name.
        variable: String,
    },
}

/// How long calls in flight may run on once shutdown begins.
pub const DRAIN: Duration = Duration::from_secs(10);

impl Settings {
    /// The settings of a listener on `listen` under `serve`, the token read from the
    /// environment now; refused when the listener would not be safe.
    pub fn new(serve: &ServeConfig, listen: SocketAddr) -> Result<Self, Refused> {
        let auth = match &serve.auth {
            None if !listen.ip().is_loopback() => return Err(Refused::Unauthenticated { listen }),
            None => Auth::None,
            Some(ServeAuth::BearerTokenEnvVar(variable)) => {
                match std::env::var(variable)
                    .ok()
                    .filter(|token| !token.is_empty())
                {
                    Some(token) => Auth::Bearer(Sha256::digest(token.as_bytes()).into()),
                    None => {
                        return Err(Refused::TokenNotSet {
                            variable: variable.clone(),
                        });
                    }
                }
            }
            Some(other) => return Err(Refused::UnknownAuth(format!("{other:?}"))),
        };
        let mut allowed_hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        if listen.ip().is_unspecified() {
            if serve.allowed_hosts.is_empty() {
                return Err(Refused::NoAllowedHosts { listen });
            }
        } else if !listen.ip().is_loopback() {
            allowed_hosts.push(listen.ip().to_string());
        }
        allowed_hosts.extend(serve.allowed_hosts.iter().cloned());
        let mut allowed_origins: Vec<String> =
            ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .into_iter()
                .map(str::to_owned)
                .collect();
        allowed_origins.extend(serve.allowed_origins.iter().cloned());
        Ok(Self {
            auth,
            allowed_hosts,
            allowed_origins,
            max_sessions: serve.max_sessions,
            max_request_bytes: serve.max_request_bytes,
            session_idle: serve.session_idle,
            drain: DRAIN,
        })
    }

    /// The settings, calls in flight given `drain` at shutdown.
    pub fn with_drain(mut self, drain: Duration) -> Self {
        self.drain = drain;
        self
    }
}

impl Auth {
    /// Whether a request with `authorization` (its `Authorization` header) may pass.
    pub(crate) fn admits(&self, authorization: Option<&[u8]>) -> bool {
        match self {
            Self::None => true,
            Self::Bearer(digest) => authorization
                .and_then(|value| value.strip_prefix(b"Bearer "))
                .is_some_and(|token| Sha256::digest(token).as_slice() == digest),
        }
    }

    /// The principal of an admitted request.
    pub(crate) fn principal(&self) -> &'static str {
        match self {
            Self::None => "local",
            Self::Bearer(_) => "bearer",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_listener_others_can_reach_needs_authentication_and_host_names() {
        let serve = ServeConfig::default();
        assert!(Settings::new(&serve, addr("127.0.0.1:0")).is_ok());
        assert!(Settings::new(&serve, addr("[::1]:0")).is_ok());
        let refused = Settings::new(&serve, addr("0.0.0.0:8080")).unwrap_err();
        assert!(matches!(refused, Refused::Unauthenticated { .. }));
        assert!(refused.to_string().contains("[serve.auth]"), "{refused}");

        let mut serve = ServeConfig::default();
        serve.auth = Some(ServeAuth::BearerTokenEnvVar("PATH".into()));
        let refused = Settings::new(&serve, addr("0.0.0.0:8080")).unwrap_err();
        assert!(
            matches!(refused, Refused::NoAllowedHosts { .. }),
            "{refused}"
        );
        serve.allowed_hosts = vec!["gw.example.com".into()];
        let settings = Settings::new(&serve, addr("0.0.0.0:8080")).unwrap();
        assert!(
            settings
                .allowed_hosts
                .contains(&"gw.example.com".to_owned())
        );
        let settings = Settings::new(&serve, addr("10.1.2.3:8080")).unwrap();
        assert!(settings.allowed_hosts.contains(&"10.1.2.3".to_owned()));
    }

    #[test]
    fn an_unset_token_variable_is_refused_by_name() {
        let mut serve = ServeConfig::default();
        serve.auth = Some(ServeAuth::BearerTokenEnvVar(
            "MCP_RUNTIME_TEST_TOKEN_NEVER_SET".into(),
        ));
        let refused = Settings::new(&serve, addr("127.0.0.1:0")).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("`MCP_RUNTIME_TEST_TOKEN_NEVER_SET`, which is not set"),
            "{refused}"
        );
    }

    #[test]
    fn only_the_token_itself_is_admitted() {
        let auth = Auth::Bearer(Sha256::digest(b"s3cret-token").into());
        assert!(auth.admits(Some(b"Bearer s3cret-token")));
        for wrong in [
            None,
            Some(&b"Bearer s3cret-toke"[..]),
            Some(b"Bearer s3cret-token "),
            Some(b"bearer s3cret-token"),
            Some(b"s3cret-token"),
            Some(b"Basic s3cret-token"),
        ] {
            assert!(!auth.admits(wrong), "{wrong:?}");
        }
        assert!(Auth::None.admits(None));
    }
}
