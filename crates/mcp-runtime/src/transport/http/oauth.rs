//! The OAuth credentials of a Streamable HTTP server, used on its requests: a login a
//! person made (see [`crate::login`]), or a machine client's ([`machine`]).
//!
//! A server with OAuth has its credentials in a store; the transport of each of its
//! connections holds one [`OAuthLogin`] over that store. rmcp's `AuthClient` does the
//! same for a client it wraps, but wrapping would give the transport of an OAuth server
//! another type than every other one's; the steps it takes are taken here instead,
//! with rmcp's `AuthorizationManager` doing the OAuth:
//! 1. every request carries the stored access token; one about to expire is renewed
//!    first (a login's is refreshed by rmcp's `get_access_token`; a machine client's
//!    is replaced at the server's next `401`, see [`machine`]);
//! 2. a request the server answers `401` is sent once more with a renewed token; a
//!    second `401`, or a refresh the authorization server refuses, means the login must
//!    be done again, and says so ([`HttpFailure::NeedsLogin`]).
//!
//! # Invariants
//!
//! 1. A token is renewed only under the store's refresh guard
//!    ([`CredentialStore::acquire_refresh_guard`], one lock per identity shared by every
//!    process), taken here, and the store is read again under it: a token another
//!    runtime renewed meanwhile is used as it is, so runtimes racing to renew one token
//!    renew it once. rmcp's `refresh_token` takes the guard too, but then refreshes
//!    whatever it loads, without looking at its expiry (the second of two racing
//!    runtimes would refresh again, with the first one's rotated refresh token); so
//!    rmcp's manager is given the store without its guard ([`Unguarded`]), and every
//!    call into it that may refresh is made holding the guard taken here.
//! 2. Within one process, one connection renews at a time (the [`Mutex`] around the
//!    state); the guard of invariant 1 would serialize them anyway, this keeps a
//!    process from waiting on its own lock file.
//! 3. Neither a token, a client secret, a private key nor the store's contents appear
//!    in any error, log line or `Debug` output.

pub(crate) mod machine;
pub(crate) mod workload;

use std::{
    ffi::OsString,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use base64::Engine as _;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, CredentialRefreshGuard, CredentialStore, OAuthClientConfig,
    StoredCredentials,
};
use tokio::sync::Mutex;

use crate::{
    config::{GrantType, OAuthConfig, SigningAlgorithm},
    redact::Registered,
    transport::error::{HttpFailure, StartupError},
};

/// How long before its expiry a stored access token is renewed.
///
/// rmcp's `get_access_token` refreshes 30 s before expiry (its `REFRESH_BUFFER_SECS`,
/// at most half the token's lifetime). This margin is the larger one, so that
/// whenever rmcp would refresh, this module has taken the refresh guard first
/// (invariant 1).
const EXPIRY_MARGIN_SECS: u64 = 60;

/// A server's OAuth settings, as its transport uses them: where its tokens are kept
/// and, for a pre-registered confidential or machine client, how it authenticates.
#[derive(Clone)]
pub(crate) struct OAuthStore {
    /// The store of the server's identity.
    pub(crate) store: Arc<dyn CredentialStore>,
    /// The pre-registered client's authentication, when the configuration gives one.
    pub(crate) client: Option<ClientAuth>,
    /// `oauth_resource`: the `resource` a login's refresh sends, instead of the one
    /// the server's metadata names.
    pub(crate) resource: Option<String>,
}

#[cfg(test)]
impl OAuthStore {
    /// `store`, for a server without a configured client secret or key.
    pub(crate) fn new(store: Arc<dyn CredentialStore>) -> Self {
        Self {
            store,
            client: None,
            resource: None,
        }
    }
}

/// A pre-registered client's authentication, read from the environment: what a
/// confidential client refreshes with, and what a machine client gets its tokens with.
#[derive(Clone)]
pub(crate) struct ClientAuth {
    /// `oauth.client_id`.
    pub(crate) client_id: String,
    /// The secret or the private key.
    pub(crate) credential: ClientCredential,
    /// The variable the credential was read from, for the messages that tell what to
    /// check.
    pub(crate) variable: String,
    /// `oauth.grant_type = "client_credentials"`: tokens without a person.
    pub(crate) machine: bool,
    /// `scopes`: the scopes to ask for, overriding the server's.
    pub(crate) scopes: Option<Vec<String>>,
    /// `oauth_resource`: the `resource` parameter, verbatim.
    pub(crate) resource: Option<String>,
    /// The secret (also as `client_secret_basic` sends it) or the assertion's value,
    /// masked in what servers send back while this lives
    /// ([`crate::redact::credentials`]).
    pub(crate) _registered: Vec<Registered>,
}

/// How a pre-registered client authenticates at the token endpoint.
#[derive(Clone)]
pub(crate) enum ClientCredential {
    /// `client_secret_basic` or `client_secret_post` (rmcp chooses from the
    /// authorization server's metadata).
    Secret(String),
    /// `private_key_jwt`: a PEM key signing an assertion with `algorithm`.
    PrivateKey {
        // Signed with only in a build with the `client-credentials-jwt` feature.
        #[cfg_attr(not(feature = "client-credentials-jwt"), allow(dead_code))]
        pem: String,
        algorithm: SigningAlgorithm,
    },
    /// A workload's identity token, presented with the JWT bearer grant (see
    /// [`workload`]).
    Assertion(workload::Assertion),
}

impl std::fmt::Debug for OAuthStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthStore")
            .field("client", &self.client)
            .field(
                "resource",
                &self.resource.as_deref().map(crate::redact::url),
            )
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let credential = match &self.credential {
            ClientCredential::Secret(_) => "client_secret".to_owned(),
            ClientCredential::PrivateKey { algorithm, .. } => {
                format!("private_key_jwt {}", algorithm.as_str())
            }
            ClientCredential::Assertion(_) => "jwt_bearer".to_owned(),
        };
        f.debug_struct("ClientAuth")
            .field("client_id", &self.client_id)
            .field("credential", &credential)
            .field("variable", &self.variable)
            .field("machine", &self.machine)
            .field("scopes", &self.scopes)
            .field(
                "resource",
                &self.resource.as_deref().map(crate::redact::url),
            )
            .finish()
    }
}

/// The pre-registered client of `oauth` with its secret or private key, read through
/// `env` as [`super::resolve`] reads its variables: `None` for a client without either (a
/// public or dynamically registered one). A variable that is missing or empty is an
/// error naming the key and the variable, never the value.
pub(crate) fn resolve_oauth(
    oauth: &OAuthConfig,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<Option<ClientAuth>, StartupError> {
    let Some(client_id) = &oauth.client_id else {
        return Ok(None);
    };
    if oauth.grant_type == GrantType::JwtBearer {
        let (assertion, source) = match (&oauth.assertion_env_var, &oauth.assertion_file) {
            (Some(variable), _) => (
                workload::Assertion::Value(super::required_header_var(
                    &env,
                    "oauth.assertion_env_var",
                    variable,
                )?),
                variable.clone(),
            ),
            (None, Some(path)) => (
                workload::Assertion::File(path.clone()),
                path.display().to_string(),
            ),
            (None, None) => return Ok(None),
        };
        let registered = match &assertion {
            workload::Assertion::Value(value) => {
                crate::redact::register(value).into_iter().collect()
            }
            workload::Assertion::File(_) => Vec::new(),
        };
        return Ok(Some(ClientAuth {
            client_id: client_id.clone(),
            credential: ClientCredential::Assertion(assertion),
            variable: source,
            machine: true,
            scopes: oauth.scopes.clone(),
            resource: oauth.resource.clone(),
            _registered: registered,
        }));
    }
    let (credential, variable) = match (&oauth.client_secret_env_var, &oauth.private_key_env_var) {
        (Some(variable), _) => (
            ClientCredential::Secret(super::required_header_var(
                &env,
                "oauth.client_secret_env_var",
                variable,
            )?),
            variable,
        ),
        // A PEM key spans lines: it is signed with, never sent.
        (None, Some(variable)) => (
            ClientCredential::PrivateKey {
                pem: super::required_var(&env, "oauth.private_key_env_var", variable)?,
                algorithm: oauth.signing_algorithm,
            },
            variable,
        ),
        (None, None) => return Ok(None),
    };
    let registered = match &credential {
        ClientCredential::Secret(secret) => {
            // Also as `client_secret_basic` sends it (RFC 6749, 2.3.1).
            let basic = base64::engine::general_purpose::STANDARD.encode(format!(
                "{}:{}",
                form_urlencoded(client_id),
                form_urlencoded(secret)
            ));
            crate::redact::register(secret)
                .into_iter()
                .chain(crate::redact::register(&basic))
                .collect()
        }
        ClientCredential::PrivateKey { .. } | ClientCredential::Assertion(_) => Vec::new(),
    };
    Ok(Some(ClientAuth {
        client_id: client_id.clone(),
        credential,
        variable: variable.clone(),
        machine: oauth.grant_type == GrantType::ClientCredentials,
        scopes: oauth.scopes.clone(),
        resource: oauth.resource.clone(),
        _registered: registered,
    }))
}

/// `text` encoded as `application/x-www-form-urlencoded` encodes it.
fn form_urlencoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A server's OAuth credentials, shared by the requests of one connection.
#[derive(Clone)]
pub(crate) struct OAuthLogin {
    server: Arc<str>,
    store: Arc<dyn CredentialStore>,
    kind: Arc<Mutex<Kind>>,
    /// Whether a request of this connection has carried a token ([`Self::has_token`]).
    sent_token: Arc<AtomicBool>,
    /// The tokens of late, masked in what servers send back.
    tokens: HeldTokens,
}

/// The access and refresh tokens a connection sent or read of late, registered for
/// masking ([`crate::redact::credentials`]) until [`HeldTokens::KEPT`] newer ones
/// replace them or the connection ends.
#[derive(Clone, Default)]
struct HeldTokens(Arc<std::sync::Mutex<std::collections::VecDeque<(String, Registered)>>>);

impl HeldTokens {
    /// How many tokens are held: the access and refresh tokens of the current login
    /// and of the one before (a request in flight may carry that one still).
    const KEPT: usize = 4;

    fn hold(&self, token: &str) {
        let mut held = crate::sync::lock(&self.0);
        if held.iter().any(|(value, _)| value == token) {
            return;
        }
        let Some(registered) = crate::redact::register(token) else {
            return;
        };
        if held.len() == Self::KEPT {
            held.pop_front();
        }
        held.push_back((token.to_owned(), registered));
    }

    /// Holds the tokens of `stored`.
    fn hold_stored(&self, stored: Option<&StoredCredentials>) {
        use oauth2::TokenResponse as _;
        let Some(token) = stored.and_then(|stored| stored.token_response.as_ref()) else {
            return;
        };
        self.hold(token.access_token().secret());
        if let Some(refresh) = token.refresh_token() {
            self.hold(refresh.secret());
        }
    }
}

/// Who renews the tokens.
enum Kind {
    /// A login a person made: rmcp's manager refreshes it.
    Login(Box<AuthorizationManager>),
    /// A machine client, which gets a new token with its own credentials.
    Machine(Box<machine::MachineClient>),
}

impl std::fmt::Debug for OAuthLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthLogin")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl OAuthLogin {
    /// The OAuth credentials of `server` at `url` in `oauth`: a machine client's,
    /// always (it gets its first token when the server first asks for one); a login's
    /// when the store holds one; `None` otherwise (the server was never logged in to).
    /// `http` is the server's HTTP client, which a machine client reads the server's
    /// resource metadata with.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the metadata discovery it may be making.
    pub(crate) async fn start(
        server: &str,
        url: &str,
        oauth: &OAuthStore,
        http: reqwest::Client,
    ) -> Result<Option<Self>, StartupError> {
        if let Some(client) = oauth.client.as_ref().filter(|client| client.machine) {
            let machine = machine::MachineClient::new(server, url, client.clone(), http)?;
            return Ok(Some(Self::with(
                server,
                oauth.store.clone(),
                Kind::Machine(Box::new(machine)),
                HeldTokens::default(),
            )));
        }
        Self::from_store(server, url, oauth).await
    }

    fn with(server: &str, store: Arc<dyn CredentialStore>, kind: Kind, tokens: HeldTokens) -> Self {
        Self {
            server: server.into(),
            store,
            kind: Arc::new(Mutex::new(kind)),
            sent_token: Arc::new(AtomicBool::new(false)),
            tokens,
        }
    }

    /// The login stored for `server`, refreshed by rmcp's manager; `None` when
    /// nothing is stored.
    async fn from_store(
        server: &str,
        url: &str,
        oauth: &OAuthStore,
    ) -> Result<Option<Self>, StartupError> {
        let failed = |error: AuthError| {
            StartupError::Login(HttpFailure::OAuth {
                server: server.to_owned(),
                description: describe(&error),
            })
        };
        let store = &oauth.store;
        let stored = store.load().await.map_err(failed)?;
        let Some(stored) = stored.filter(|stored| stored.token_response.is_some()) else {
            return Ok(None);
        };
        let tokens = HeldTokens::default();
        tokens.hold_stored(Some(&stored));
        let mut manager = AuthorizationManager::new_allowing_private_addresses(url)
            .await
            .map_err(failed)?;
        if let Some(resource) = &oauth.resource {
            manager = crate::oauth_client::resource::manager_for(manager, resource)
                .await
                .map_err(failed)?;
        }
        manager.set_credential_store(Unguarded {
            store: store.clone(),
            tokens: tokens.clone(),
        });
        // Discovery is needed for a refresh (the token endpoint), and tells whether the
        // authorization server changed since the login (rmcp then drops the tokens).
        if !manager.initialize_from_store().await.map_err(failed)? {
            return Err(StartupError::Login(HttpFailure::NeedsLogin {
                server: server.to_owned(),
            }));
        }
        // rmcp's `initialize_from_store` configures the stored client id through
        // `configure_client_id`, which leaves the client secret out: a confidential
        // client would then refresh as a public one, and its authorization server
        // refuses that. Configured again here with the secret, as rmcp configured it
        // otherwise (the redirect URI is the server URL, as `configure_client_id` sets
        // it; a refresh sends none).
        if let Some(ClientAuth {
            client_id,
            credential: ClientCredential::Secret(secret),
            ..
        }) = &oauth.client
            && *client_id == stored.client_id
        {
            manager
                .configure_client(
                    OAuthClientConfig::new(client_id.clone(), url).with_client_secret(secret),
                )
                .map_err(failed)?;
        }
        Ok(Some(Self::with(
            server,
            store.clone(),
            Kind::Login(Box::new(manager)),
            tokens,
        )))
    }

    /// Whether a request of this connection has carried an access token.
    pub(crate) fn has_token(&self) -> bool {
        self.sent_token.load(Ordering::Relaxed)
    }

    /// The access token to send, renewed first when it is about to expire; `None` for
    /// a machine client without a valid token, whose request is then sent without
    /// one so that the server's `401` tells where to get one.
    pub(crate) async fn token(&self) -> Result<Option<String>, HttpFailure> {
        if let Some(token) = self.fresh_token(None).await? {
            return Ok(self.sending(Some(token)));
        }
        let kind = self.kind.lock().await;
        let token = match &*kind {
            Kind::Login(manager) => {
                let _guard = self.guard().await?;
                // rmcp loads again, under the guard (invariant 1): a token another
                // runtime refreshed meanwhile is fresh and returned as it is.
                let token = manager
                    .get_access_token()
                    .await
                    .map_err(|error| self.failure(&error))?;
                Some(token)
            }
            Kind::Machine(_) => None,
        };
        Ok(self.sending(token))
    }

    /// A new access token after the server refused `sent` (`None`: no token was
    /// sent), with `challenge`, its `WWW-Authenticate`: a token another request or
    /// runtime renewed meanwhile, else a refreshed one (a login's) or a new one (a
    /// machine client's).
    pub(crate) async fn refreshed(
        &self,
        sent: Option<&str>,
        challenge: Option<&str>,
    ) -> Result<String, HttpFailure> {
        let kind = self.kind.lock().await;
        let _guard = self.guard().await?;
        let token = match &*kind {
            Kind::Login(manager) => {
                let current = manager
                    .get_access_token()
                    .await
                    .map_err(|error| self.failure(&error))?;
                if Some(current.as_str()) != sent {
                    current
                } else {
                    let response = manager
                        .refresh_token()
                        .await
                        .map_err(|error| self.failure(&error))?;
                    let fresh = oauth2::TokenResponse::access_token(&response)
                        .secret()
                        .to_owned();
                    if Some(fresh.as_str()) == sent {
                        return Err(self.needs_login());
                    }
                    fresh
                }
            }
            Kind::Machine(machine) => match self.fresh_token(sent).await? {
                Some(token) => token,
                None => machine.obtain(self.store.clone(), challenge).await?,
            },
        };
        self.tokens.hold(&token);
        self.sent_token.store(true, Ordering::Relaxed);
        Ok(token)
    }

    /// The failure of a request the server refused twice: once with the stored or
    /// renewed token, once more with the one renewed after that.
    pub(crate) async fn refused(&self) -> HttpFailure {
        match &*self.kind.lock().await {
            Kind::Login(_) => self.needs_login(),
            Kind::Machine(machine) => machine.refused(),
        }
    }

    /// The stored access token, unless it expires within [`EXPIRY_MARGIN_SECS`] or is
    /// `other_than`.
    async fn fresh_token(&self, other_than: Option<&str>) -> Result<Option<String>, HttpFailure> {
        let stored = self
            .store
            .load()
            .await
            .map_err(|error| self.failure(&error))?;
        Ok(stored
            .as_ref()
            .and_then(|stored| fresh(stored, now_epoch_secs()))
            .filter(|token| Some(token.as_str()) != other_than))
    }

    /// The refresh guard of the store (invariant 1), if it has one.
    async fn guard(&self) -> Result<Option<CredentialRefreshGuard>, HttpFailure> {
        self.store
            .acquire_refresh_guard()
            .await
            .map_err(|error| self.failure(&error))
    }

    fn sending(&self, token: Option<String>) -> Option<String> {
        if let Some(token) = &token {
            self.tokens.hold(token);
            self.sent_token.store(true, Ordering::Relaxed);
        }
        token
    }

    /// The failure `error` stands for: a new login when the authorization server
    /// refuses the stored one, else what went wrong.
    fn failure(&self, error: &AuthError) -> HttpFailure {
        match error {
            AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_) => {
                self.needs_login()
            }
            other => HttpFailure::OAuth {
                server: self.server.to_string(),
                description: describe(other),
            },
        }
    }

    pub(crate) fn needs_login(&self) -> HttpFailure {
        HttpFailure::NeedsLogin {
            server: self.server.to_string(),
        }
    }
}

/// The access token of `stored`, unless it expires within [`EXPIRY_MARGIN_SECS`] of
/// `now` (seconds since the epoch), or within half its lifetime for a short-lived one.
/// A token without a known expiry is taken as valid, as rmcp takes it.
fn fresh(stored: &StoredCredentials, now: u64) -> Option<String> {
    use oauth2::TokenResponse as _;
    let token = stored.token_response.as_ref()?;
    if let (Some(lifetime), Some(received)) = (token.expires_in(), stored.token_received_at) {
        let remaining = lifetime
            .as_secs()
            .saturating_sub(now.saturating_sub(received));
        let margin = EXPIRY_MARGIN_SECS.min(lifetime.as_secs() / 2).max(1);
        if remaining < margin {
            return None;
        }
    }
    Some(token.access_token().secret().to_owned())
}

fn now_epoch_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// The store as rmcp's manager sees it: without the refresh guard, which
/// [`OAuthLogin`] takes itself around every call into the manager that may refresh
/// (invariant 1). Taking it in rmcp too would wait for a lock this process holds.
/// The tokens it loads and saves (a refresh's new ones) are held for masking.
struct Unguarded {
    store: Arc<dyn CredentialStore>,
    tokens: HeldTokens,
}

#[async_trait::async_trait]
impl CredentialStore for Unguarded {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let stored = self.store.load().await?;
        self.tokens.hold_stored(stored.as_ref());
        Ok(stored)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.tokens.hold_stored(Some(&credentials));
        self.store.save(credentials).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.clear().await
    }

    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        self.store.on_refresh_token_rejected(credentials).await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        Ok(None)
    }
}

/// What went wrong using a server's login, and what to do, in words that carry no
/// token: the kind of failure (rmcp's variant), never the authorization server's body
/// (which may echo what was sent).
fn describe(error: &AuthError) -> String {
    let log_in = "log in again";
    if let AuthError::DiscoveryRequestFailed { source, .. } = error
        && let Some(reason) = super::refused_certificate(source.as_ref())
    {
        // rmcp's own HTTP client: it trusts the system's CAs and `SSL_CERT_FILE`.
        return format!(
            "its authorization server presented a TLS certificate that is not trusted (`{reason}`): name the CA that issued it with `SSL_CERT_FILE` (`ca_certificate` does not reach the authorization server)"
        );
    }
    match error {
        AuthError::MetadataError(_)
        | AuthError::NoAuthorizationSupport
        | AuthError::DiscoveryRequestFailed { .. }
        | AuthError::AuthorizationServersUnavailable { .. }
        | AuthError::ProtectedResourceMetadataInvalid { .. } => format!(
            "its authorization server's metadata cannot be found (check that it can be reached from here, or {log_in})"
        ),
        AuthError::TokenRefreshFailed(_) => format!(
            "refreshing its access token failed without the authorization server refusing it (try again later, or {log_in})"
        ),
        AuthError::CredentialStoreError(_) => "the OAuth token store failed (check `mcp_oauth_credentials_store`, and that the keyring or the token file can be used)".to_owned(),
        AuthError::HttpError(_) => {
            "its authorization server cannot be reached (check the network, then try again)"
                .to_owned()
        }
        other => format!(
            "the OAuth exchange failed (`{}`): {log_in}",
            crate::oauth_client::error_name(other)
        ),
    }
}

#[cfg(test)]
mod tests;
