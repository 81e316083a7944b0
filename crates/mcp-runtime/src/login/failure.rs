//! Why a login failed: [`LoginError`], one sentence that names the server, the step
//! that failed (discovery, registration, authorization, token) and what to do.
//!
//! rmcp reports a failed step as an [`AuthError`], whose text nests its own
//! (`Registration failed: Dynamic registration failed: Registration failed: HTTP 404
//! …`) and may quote what the authorization server answered. So the step is read
//! from where the login was when it failed and from the error's variant, never from
//! its text; what the login knew then (whether discovery found metadata, which
//! endpoint it used, how the client is identified) says what failed and what to do.
//! rmcp's error is not the message's source: its text goes to the debug log for the
//! steps that send no credential (discovery, registration), and only its variant for
//! the others, whose answers may echo one.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, AuthorizationMetadataSource,
    ProtectedResourceMetadataInvalidReason,
};

use crate::{auth::store::StoreError, transport::error::StartupError};

/// Why a login failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The server's URL cannot be used.
    #[error("cannot log in to server `{server}`: {reason}")]
    Url {
        /// The server.
        server: String,
        /// What is wrong with it, and what to do.
        reason: String,
    },
    /// The server started and listed its tools without asking for authorization.
    #[error(
        "server `{server}` does not ask for a login: it started and listed its tools without one"
    )]
    NotProtected {
        /// The server.
        server: String,
    },
    /// The server is not a remote one.
    #[error("server `{server}` is not a remote server: only a server with `url` logs in")]
    NotRemote {
        /// The server.
        server: String,
    },
    /// The server failed to start for another reason than a login.
    #[error("server `{server}` did not ask for a login")]
    Unreachable {
        /// The server.
        server: String,
        /// Why its startup failed.
        #[source]
        source: Arc<StartupError>,
    },
    /// The loopback listener for the redirect could not be set up.
    #[error(
        "cannot log in to server `{server}`: listening for the login's redirect on {address} failed (free that port, or name another with `oauth.callback_port`)"
    )]
    Callback {
        /// The server.
        server: String,
        /// The address it tried.
        address: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// No redirect came back in time.
    #[error("the login to server `{server}` was not completed within {}s (run the login again, and finish it in the browser)", .after.as_secs())]
    TimedOut {
        /// The server.
        server: String,
        /// The wait.
        after: std::time::Duration,
    },
    /// The server refuses a request for a scope the stored login holds already: a new
    /// login would be granted nothing more.
    #[error(
        "server `{server}` refused a request for scopes its login holds already ({}): a new login would not change that (ask the server's administrator)",
        .scopes.iter().map(|scope| format!("`{scope}`")).collect::<Vec<_>>().join(", ")
    )]
    ScopesHeld {
        /// The server.
        server: String,
        /// The scopes it asked for.
        scopes: Vec<String>,
    },
    /// The server is a machine client's (`grant_type = "client_credentials"`): it gets
    /// its tokens without a person.
    #[error(
        "server `{server}` needs no login: its `oauth.grant_type` gets tokens without a person, when the server asks for one"
    )]
    MachineClient {
        /// The server.
        server: String,
    },
    /// The variable naming the pre-registered client's secret is not set.
    #[error(
        "cannot log in to server `{server}`: environment variable `{variable}` named by `oauth.client_secret_env_var` is not set or is empty (set it to the client's secret)"
    )]
    MissingSecret {
        /// The server.
        server: String,
        /// The variable.
        variable: String,
    },
    /// The token store cannot be read or written.
    #[error(
        "cannot log in to server `{server}`: its login cannot be read or kept (check `mcp_oauth_credentials_store`, and that the keyring or the token file can be used)"
    )]
    Store {
        /// The server.
        server: String,
        /// The store's error, in its own words.
        #[source]
        source: StoreError,
    },
    /// A step of the OAuth protocol failed.
    #[error("cannot log in to server `{server}`: {problem} ({fix})")]
    Step {
        /// The server.
        server: String,
        /// The step that failed.
        step: LoginStep,
        /// What failed, in words that carry no credential.
        problem: String,
        /// What to do.
        fix: String,
    },
}

/// The step of a login that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginStep {
    /// Finding the authorization server and its metadata.
    Discovery,
    /// Registering a client (Dynamic Client Registration), or identifying it.
    Registration,
    /// The person's authorization in the browser, and its redirect.
    Authorization,
    /// Exchanging the authorization code for tokens.
    Token,
}

impl LoginError {
    /// The step that failed, for a failure of the OAuth protocol.
    pub fn step(&self) -> Option<LoginStep> {
        match self {
            Self::Step { step, .. } => Some(*step),
            Self::TimedOut { .. } => Some(LoginStep::Authorization),
            _ => None,
        }
    }

    fn step_failed(server: &str, step: LoginStep, problem: String, fix: impl Into<String>) -> Self {
        Self::Step {
            server: server.to_owned(),
            step,
            problem,
            fix: fix.into(),
        }
    }

    /// The token store's `error`, or a failure of the store during another step.
    pub(super) fn store(server: &str, error: AuthError) -> Self {
        Self::Store {
            server: server.to_owned(),
            source: StoreError::reported(error),
        }
    }
}

/// What a login knew when a step failed: where it was and what it had found.
#[derive(Debug, Clone, Copy)]
pub(super) struct Known<'a> {
    /// The server.
    pub(super) server: &'a str,
    /// How the authorization server's metadata was found; `None` before discovery.
    pub(super) source: Option<AuthorizationMetadataSource>,
    /// The metadata found (or the endpoints assumed without any).
    pub(super) metadata: Option<&'a AuthorizationMetadata>,
    /// How the client is identified.
    pub(super) client: Client,
}

/// How a login's client is identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Client {
    /// Not chosen yet.
    Unknown,
    /// `oauth.client_id`, with or without a secret.
    Configured {
        /// Whether `oauth.client_secret_env_var` gave a secret.
        secret: bool,
    },
    /// `oauth.client_metadata_url`.
    MetadataDocument,
    /// A client an earlier login registered.
    Reused,
    /// A client this login registers.
    Registers,
}

/// What to do when the server's OAuth cannot be used as published.
const ASK_OPERATOR: &str =
    "check `url`; if it is right, the server's OAuth setup needs fixing by its operator";

/// What to do when a network step failed.
const CHECK_REACHABLE: &str = "check that the server and its authorization server can be reached from here, then log in again";

impl Known<'_> {
    /// The failure of discovery with `error`.
    pub(super) fn discovery(&self, error: AuthError) -> LoginError {
        tracing::debug!(server = self.server, error = %error, "OAuth discovery failed");
        let fail = |problem: String, fix: &str| {
            LoginError::step_failed(self.server, LoginStep::Discovery, problem, fix)
        };
        match &error {
            AuthError::DiscoveryRequestFailed { url, source } => {
                match crate::tls_refusal::refused_certificate(source.as_ref()) {
                    // rmcp's own HTTP client reaches the authorization server: it
                    // trusts what the system and `SSL_CERT_FILE` trust.
                    Some(reason) => fail(
                        format!(
                            "discovering its OAuth metadata failed: `{}` presented a TLS certificate that is not trusted (`{reason}`)",
                            crate::redact::url(url.as_str())
                        ),
                        "a login trusts the system's CAs and those of `SSL_CERT_FILE`, not `ca_certificate`: name the CA that issued it with `SSL_CERT_FILE`",
                    ),
                    None => fail(
                        format!(
                            "discovering its OAuth metadata failed: `{}` cannot be fetched",
                            crate::redact::url(url.as_str())
                        ),
                        CHECK_REACHABLE,
                    ),
                }
            }
            AuthError::ProtectedResourceMetadataInvalid { url, reason } => fail(
                format!(
                    "its protected resource metadata at `{}` cannot be used: {}",
                    crate::redact::url(url.as_str()),
                    metadata_problem(reason)
                ),
                ASK_OPERATOR,
            ),
            AuthError::AuthorizationServersUnavailable {
                authorization_servers,
                ..
            } => fail(
                format!(
                    "none of its authorization servers ({}) publishes usable metadata",
                    urls(authorization_servers)
                ),
                "check that they can be reached from here; if they can, their OAuth setup needs fixing by their operator",
            ),
            AuthError::UrlError(_) => fail(
                "discovering its OAuth metadata failed: a URL of it is not valid".to_owned(),
                ASK_OPERATOR,
            ),
            _ => fail(
                "discovering its OAuth metadata failed".to_owned(),
                CHECK_REACHABLE,
            ),
        }
    }

    /// The failure of the authorization session's start with `error`: the client's
    /// identity (a registration), the authorization server's checks, or its URL.
    pub(super) fn session(&self, error: AuthError) -> LoginError {
        match error {
            AuthError::RegistrationFailed(_) => self.registration(&error),
            AuthError::PkceUnsupported => self.authorization_unsupported(
                "its authorization server does not support PKCE with `S256`, which the MCP authorization specification requires",
            ),
            // rmcp's check of `response_types_supported`.
            AuthError::InvalidScope(_) => self.authorization_unsupported(
                "its authorization server does not offer the authorization code flow (`response_types_supported` lacks `code`)",
            ),
            AuthError::OAuthError(_) => {
                tracing::debug!(server = self.server, error = %error, "the authorization server's endpoints cannot be used");
                LoginError::step_failed(
                    self.server,
                    LoginStep::Discovery,
                    "its authorization server's metadata names an endpoint that is not a valid URL"
                        .to_owned(),
                    ASK_OPERATOR,
                )
            }
            AuthError::CredentialStoreError(_) => LoginError::store(self.server, error),
            other => self.unexpected(LoginStep::Authorization, &other),
        }
    }

    /// The failure of the client's registration (or of its metadata document URL).
    fn registration(&self, error: &AuthError) -> LoginError {
        tracing::debug!(server = self.server, error = %error, "the OAuth client registration failed");
        let fail = |problem: String, fix: &str| {
            LoginError::step_failed(self.server, LoginStep::Registration, problem, fix)
        };
        const PRE_REGISTER: &str = "register a client with its authorization server, then set `oauth.client_id`, and `oauth.client_secret_env_var` for a confidential one";
        let endpoint = self
            .metadata
            .and_then(|metadata| metadata.registration_endpoint.as_deref());
        match (self.client, self.source, endpoint) {
            (Client::MetadataDocument, _, _) => fail(
                "`oauth.client_metadata_url` cannot be the client's id".to_owned(),
                "set it to an HTTPS URL with a path, where the client's metadata document is served",
            ),
            (_, Some(AuthorizationMetadataSource::LegacyEndpointFallback), endpoint) => fail(
                format!(
                    "it publishes no OAuth metadata, and registering a client at its default endpoint{} failed",
                    endpoint
                        .map(|url| format!(" `{}`", crate::redact::url(url)))
                        .unwrap_or_default()
                ),
                "if the server takes a fixed token, name its variable with `bearer_token_env_var`; if it has a pre-registered OAuth client, set `oauth.client_id`",
            ),
            (_, _, None) => fail(
                "its authorization server offers no client registration".to_owned(),
                PRE_REGISTER,
            ),
            (_, _, Some(url)) => fail(
                format!(
                    "registering a client at `{}` failed",
                    crate::redact::url(url)
                ),
                PRE_REGISTER,
            ),
        }
    }

    fn authorization_unsupported(&self, problem: &str) -> LoginError {
        LoginError::step_failed(
            self.server,
            LoginStep::Authorization,
            problem.to_owned(),
            "the server's OAuth setup needs fixing by its operator",
        )
    }

    /// No redirect came back within `wait`: where the server publishes no metadata,
    /// the authorization endpoint assumed for it may not exist, and the login says so.
    pub(super) fn timed_out(&self, wait: std::time::Duration) -> LoginError {
        let assumed = self
            .metadata
            .filter(|_| self.source == Some(AuthorizationMetadataSource::LegacyEndpointFallback));
        match assumed {
            None => LoginError::TimedOut {
                server: self.server.to_owned(),
                after: wait,
            },
            Some(metadata) => LoginError::step_failed(
                self.server,
                LoginStep::Authorization,
                format!(
                    "no authorization came back within {}s, and as it publishes no OAuth metadata, its assumed authorization endpoint `{}` may not exist",
                    wait.as_secs(),
                    crate::redact::url(&metadata.authorization_endpoint)
                ),
                "if the server takes a fixed token, name its variable with `bearer_token_env_var`; else check `url`",
            ),
        }
    }

    /// The authorization server sent the person back with `error` and its
    /// `description`.
    pub(super) fn refused(&self, error: &str, description: Option<&str>) -> LoginError {
        let fix = match error {
            "access_denied" => "run the login again, and approve it in the browser",
            "invalid_scope" => {
                "ask for scopes it grants, with `--scopes` or the server's `scopes`, then log in again"
            }
            "unauthorized_client" | "invalid_client" | "invalid_request" => {
                "check `oauth.client_id` and `oauth.callback_url` (or the registered redirect URI), then log in again"
            }
            _ => "run the login again; if it fails again, ask the authorization server's operator",
        };
        LoginError::step_failed(
            self.server,
            LoginStep::Authorization,
            format!(
                "the authorization server refused the authorization: `{}`{}",
                shown(error),
                description
                    .map(|description| format!(" ({})", shown(description)))
                    .unwrap_or_default()
            ),
            fix,
        )
    }

    /// The failure of the redirect's handling and the token exchange with `error`.
    pub(super) fn exchange(&self, error: AuthError) -> LoginError {
        // The exchange sends the code, the verifier and a client secret: an answer
        // may echo one, so only the variant is logged.
        tracing::debug!(
            server = self.server,
            error = crate::oauth_client::error_name(&error),
            "the OAuth token exchange failed"
        );
        let endpoint = self
            .metadata
            .map(|metadata| format!(" at `{}`", crate::redact::url(&metadata.token_endpoint)))
            .unwrap_or_default();
        let client_fix = match self.client {
            Client::Configured { secret: false } => {
                "check `oauth.client_id`; a confidential client also needs `oauth.client_secret_env_var`; then log in again"
            }
            Client::Configured { secret: true } => {
                "check `oauth.client_id` and the secret `oauth.client_secret_env_var` names, then log in again"
            }
            _ => "run the login again; if it fails again, ask the authorization server's operator",
        };
        let fail = |step, problem: String, fix: &str| {
            LoginError::step_failed(self.server, step, problem, fix)
        };
        match error {
            AuthError::TokenExchangeFailed(_) => fail(
                LoginStep::Token,
                format!("exchanging the authorization code for tokens{endpoint} failed"),
                client_fix,
            ),
            AuthError::HttpError(_) => fail(
                LoginStep::Token,
                format!("the token endpoint{endpoint} cannot be reached"),
                CHECK_REACHABLE,
            ),
            AuthError::InvalidTokenType(_) => fail(
                LoginStep::Token,
                format!("the token endpoint{endpoint} answered with a token that is not a `Bearer` one"),
                "the authorization server's setup needs fixing by its operator",
            ),
            AuthError::AuthorizationServerMismatch { .. }
            | AuthError::AuthorizationServerMissingIssuer { .. } => fail(
                LoginStep::Authorization,
                "the redirect does not come from the authorization server that was asked (its `iss` is not that server's issuer)".to_owned(),
                "run the login again; if it fails again, ask the authorization server's operator",
            ),
            AuthError::AuthorizationFailed(_) | AuthError::UrlError(_) => fail(
                LoginStep::Authorization,
                "the authorization server's redirect cannot be used (its `code` or `state` is missing or unknown)".to_owned(),
                "run the login again, and finish it in the browser it opens",
            ),
            AuthError::CredentialStoreError(_) => LoginError::store(self.server, error),
            other => self.unexpected(LoginStep::Token, &other),
        }
    }

    /// A failure that none of the steps' own rules name.
    pub(super) fn unexpected(&self, step: LoginStep, error: &AuthError) -> LoginError {
        tracing::debug!(
            server = self.server,
            error = crate::oauth_client::error_name(error),
            "the OAuth login failed"
        );
        LoginError::step_failed(
            self.server,
            step,
            format!(
                "the OAuth login failed (`{}`)",
                crate::oauth_client::error_name(error)
            ),
            "run the login again; the debug log says more",
        )
    }
}

/// What is wrong with protected resource metadata, by `reason`.
fn metadata_problem(reason: &ProtectedResourceMetadataInvalidReason) -> String {
    use ProtectedResourceMetadataInvalidReason as R;
    match reason {
        R::MissingResource => "it has no `resource`".to_owned(),
        R::ResourceNotAUrl { .. } => "its `resource` is not a URL".to_owned(),
        R::ResourceHasFragment { .. } => "its `resource` has a fragment".to_owned(),
        R::ResourceMismatch {
            reference,
            permitted,
        } => format!(
            "its `resource` `{}` is not the server's `{}`",
            crate::redact::url(permitted.as_str()),
            crate::redact::url(reference.as_str())
        ),
        R::NotAMetadataDocument => {
            "it names neither a `resource` nor an authorization server".to_owned()
        }
        _ => "it is not valid".to_owned(),
    }
}

/// `servers`, in backticks, masked.
fn urls(servers: &[String]) -> String {
    servers
        .iter()
        .map(|url| format!("`{}`", crate::redact::url(url)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Text an authorization server sent, every credential masked, on one line and
/// bounded.
fn shown(text: &str) -> String {
    const MAX: usize = 200;
    let masked = crate::redact::credentials(text);
    let line = crate::redact::one_line(&masked);
    match line.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.into_owned(),
    }
}

#[cfg(test)]
mod tests;
