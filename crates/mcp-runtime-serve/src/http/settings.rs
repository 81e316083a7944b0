//! What a listener needs settled before it accepts a connection: where it listens,
//! who may call it, and which `Host` and `Origin` values it takes.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use mcp_runtime::config::{ServeAuth, ServeConfig};
use sha2::{Digest, Sha256};

use super::jwt::{Refusal, Verifier};

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
    /// The fleet this replica shares listings with, for `/healthz`.
    pub(crate) fleet: Option<mcp_runtime::fleet::Fleet>,
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
            .field("fleet", &self.fleet)
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
    /// Every client sends a JWT access token of the configured issuer, for this
    /// resource.
    Jwt(Arc<Verifier>),
}

/// Why a listener refuses to start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// A listener reachable from other machines, with nobody authenticated.
    #[error(
        "refusing to listen on {listen} without authentication: anyone who can reach it could use every configured server. \
         Listen on loopback (127.0.0.1), or add `[serve.auth]` to the config: `bearer_token_env_var = \"NAME\"` with NAME set to a long random token, or `issuer` and `audience` for your authorization server's access tokens"
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
    /// `[serve.auth]` of an OAuth resource server that cannot be served.
    #[error("`[serve.auth]`: {0}")]
    BadAuth(String),
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
            Some(ServeAuth::Jwt(jwt)) => Auth::Jwt(Arc::new(
                Verifier::new(jwt.clone()).map_err(Refused::BadAuth)?,
            )),
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
            fleet: None,
        })
    }

    /// The settings of a replica of the fleet `fleet`: `/healthz` reports it.
    pub fn with_fleet(mut self, fleet: mcp_runtime::fleet::Fleet) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// The settings, calls in flight given `drain` at shutdown.
    pub fn with_drain(mut self, drain: Duration) -> Self {
        self.drain = drain;
        self
    }
}

impl Auth {
    /// The principal of a request with `authorization` (its `Authorization` header),
    /// or why it may not pass.
    pub(crate) async fn check(&self, authorization: Option<&[u8]>) -> Result<String, Refusal> {
        match self {
            Self::None => Ok("local".to_owned()),
            Self::Bearer(digest) => match authorization {
                None => Err(Refusal::Missing),
                Some(value) => super::bearer::token(value)
                    .filter(|token| Sha256::digest(token).as_slice() == digest)
                    .map(|_| "bearer".to_owned())
                    .ok_or_else(|| Refusal::Invalid("not the configured token".into())),
            },
            Self::Jwt(verifier) => verifier.check(authorization).await,
        }
    }

    /// The `WWW-Authenticate` value of `refusal`.
    pub(crate) fn challenge(&self, refusal: &Refusal) -> String {
        match self {
            Self::Jwt(verifier) => verifier.challenge(refusal),
            Self::None | Self::Bearer(_) => match refusal {
                Refusal::Missing => "Bearer realm=\"mcp-runtime\"".to_owned(),
                _ => "Bearer realm=\"mcp-runtime\", error=\"invalid_token\"".to_owned(),
            },
        }
    }

    /// The OAuth resource server's verifier, if clients send JWT access tokens.
    pub(crate) fn verifier(&self) -> Option<&Verifier> {
        match self {
            Self::Jwt(verifier) => Some(verifier),
            Self::None | Self::Bearer(_) => None,
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

    #[tokio::test]
    async fn only_the_token_itself_is_admitted() {
        let auth = Auth::Bearer(Sha256::digest(b"s3cret-token").into());
        for right in [&b"Bearer s3cret-token"[..], b"bearer s3cret-token"] {
            assert_eq!(auth.check(Some(right)).await.unwrap(), "bearer");
        }
        for wrong in [
            None,
            Some(&b"Bearer s3cret-toke"[..]),
            Some(b"Bearer s3cret-token "),
            Some(b"s3cret-token"),
            Some(b"Basic s3cret-token"),
        ] {
            assert!(auth.check(wrong).await.is_err(), "{wrong:?}");
        }
        assert_eq!(Auth::None.check(None).await.unwrap(), "local");
    }
}
