//! Logging in to a remote server with OAuth: the authorization code flow with PKCE, as
//! the MCP authorization specification describes it.
//!
//! rmcp's `auth` module does the protocol: discovery from the `WWW-Authenticate`
//! challenge (Protected Resource Metadata, then Authorization Server metadata and
//! OpenID Connect discovery, then the 2025-03-26 fallbacks), the client identity in the
//! specification's order (pre-registered, Client ID Metadata Document, Dynamic Client
//! Registration), PKCE with S256 only, the `resource` parameter, scope selection, the
//! RFC 9207 `iss` check, and the token exchange, whose result it saves in the
//! credential store it is given. What it leaves to its caller is written here:
//! 1. asking the server for its challenge: the server is started as a runtime starts
//!    it, without a login, and the first `401` carries it (a server that starts and
//!    lists its tools needs no login);
//! 2. the redirect: a loopback listener on `127.0.0.1` (the port of
//!    `oauth.callback_port` or `oauth.callback_url`, else one the system picks) that
//!    takes the first request to its path carrying `code` or `error`, answers it with
//!    a short page, and closes;
//! 3. showing the authorization URL to the person, through [`OpenUrl`] (the CLI
//!    runs `$BROWSER` or the system's opener; a GUI host opens its own window);
//! 4. the bound: the whole login fails after the wait it is given, saying so;
//! 5. the client's own settings: a pre-registered client's secret, read from the
//!    variable `oauth.client_secret_env_var` names, and the metadata document URL;
//! 6. step-up: a server that refuses the stored login for lack of a scope
//!    ([`Login::more_scopes`]) is asked for the scopes held and the new ones (rmcp
//!    keeps the scopes held in memory only, so they are read from the store), and
//!    never asked again for scopes already held;
//! 7. saying what failed: one sentence naming the server, the step (discovery,
//!    registration, authorization, token) and what to do ([`LoginError`]), read
//!    from rmcp's error variants and from what the login had found, never from
//!    rmcp's text.
//!
//! Nothing here logs or returns a token: the summary holds the issuer, the client id,
//! the scopes granted, the expiry and the account, never the token.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use oauth2::TokenResponse as _;
use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
};
use url::Url;

mod callback;
mod failure;

pub use self::failure::{LoginError, LoginStep};
use self::{
    callback::{Callback, Redirect},
    failure::{Client, Known},
};
use crate::{
    ListingRegistry, Runtime, StartOptions,
    auth::registration::{self, Registration},
    config::{Config, ServerConfig, TransportConfig},
    manager::error::StartError,
    transport::error::{HttpFailure, StartupError},
};

/// The client name sent with Dynamic Client Registration.
const CLIENT_NAME: &str = "mcp-runtime";

/// Shows the authorization URL to the person logging in.
///
/// The CLI's implementation runs the program named by `$BROWSER`, else the system's
/// opener, else prints the URL; a host with a window of its own opens it there. The
/// login goes on waiting for the redirect whatever this returns, so an opener that
/// cannot open anything should still show the URL somewhere.
pub trait OpenUrl: Send + Sync {
    /// Shows `url`, which carries no secret (the PKCE verifier never leaves this
    /// process).
    fn open(&self, url: &str) -> std::io::Result<()>;
}

/// What a login obtained, for the person to check: never the token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoginSummary {
    /// The authorization server's issuer, when its metadata names one.
    pub issuer: Option<String>,
    /// The client id the login used (pre-registered, a metadata document URL, or
    /// registered for it).
    pub client_id: String,
    /// The scopes granted (as the token response says, else as asked).
    pub scopes: Vec<String>,
    /// When the access token expires, when the token response says.
    pub expires_at: Option<SystemTime>,
    /// The account logged in to: the subject (`sub`) of the OpenID Connect ID token
    /// of the token response, when it has one for this issuer and client.
    pub account: Option<String>,
}

impl LoginSummary {
    /// A summary, for a host that shows logins it made another way.
    pub fn new(
        issuer: Option<String>,
        client_id: String,
        scopes: Vec<String>,
        expires_at: Option<SystemTime>,
    ) -> Self {
        Self {
            issuer,
            client_id,
            scopes,
            expires_at,
            account: None,
        }
    }

    /// This summary, naming the account logged in to.
    pub fn with_account(mut self, account: Option<String>) -> Self {
        self.account = account;
        self
    }
}

/// One login: the server, its OAuth settings and where the result is stored.
#[derive(Clone)]
#[non_exhaustive]
pub struct Login<'a> {
    /// The server, as configured (a Streamable HTTP one).
    pub server: &'a ServerConfig,
    /// Scopes to ask for instead of the configured or discovered ones.
    pub scopes: Option<Vec<String>>,
    /// The store the credentials are saved to (the identity of this server).
    pub store: Arc<dyn CredentialStore>,
    /// How long the person has to finish.
    pub wait: Duration,
    /// Scopes the server asked for beyond the stored login's (the scopes of its
    /// `insufficient_scope` challenge): the login asks for those it holds and these
    /// (step-up authorization).
    pub more_scopes: Vec<String>,
}

impl std::fmt::Debug for Login<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("server", &self.server.name)
            .field("scopes", &self.scopes)
            .field("wait", &self.wait)
            .field("more_scopes", &self.more_scopes)
            .finish_non_exhaustive()
    }
}

impl<'a> Login<'a> {
    /// A login to `server`, saving to `store`, waiting five minutes.
    pub fn new(server: &'a ServerConfig, store: Arc<dyn CredentialStore>) -> Self {
        Self {
            server,
            scopes: None,
            store,
            wait: Duration::from_secs(300),
            more_scopes: Vec::new(),
        }
    }

    /// Runs the login: challenge, discovery, client identity, the person's consent
    /// through `opener`, the exchange; the credentials are saved to the store.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops listening for the redirect; nothing is saved.
    pub async fn run(&self, opener: &dyn OpenUrl) -> Result<LoginSummary, LoginError> {
        let name = &self.server.name;
        let TransportConfig::StreamableHttp(http) = &self.server.transport else {
            return Err(LoginError::NotRemote {
                server: name.clone(),
            });
        };
        let oauth = &self.server.oauth;
        if oauth.grant_type.is_machine() {
            return Err(LoginError::MachineClient {
                server: name.clone(),
            });
        }
        let url = Url::parse(&http.url).map_err(|error| LoginError::Url {
            server: name.clone(),
            reason: format!("its `url` is not a URL: {error} (fix `url`)"),
        })?;
        let secret = oauth
            .client_secret_env_var
            .as_deref()
            .map(|variable| {
                std::env::var(variable)
                    .ok()
                    .filter(|secret| !secret.is_empty())
                    .ok_or_else(|| LoginError::MissingSecret {
                        server: name.clone(),
                        variable: variable.to_owned(),
                    })
            })
            .transpose()?;
        let mut scopes = self.scopes_to_ask().await?;
        let challenge = self.challenge(name).await?;
        let mut known = Known {
            server: name,
            source: None,
            metadata: None,
            client: Client::Unknown,
        };
        let mut manager = AuthorizationManager::new_allowing_private_addresses(url.as_str())
            .await
            .map_err(|error| known.unexpected(LoginStep::Discovery, &error))?;
        manager.set_credential_store(crate::auth::SharedStore(self.store.clone()));
        let resolution = manager
            .resolve_metadata_from_challenge(Some(&challenge))
            .await
            .map_err(|error| known.discovery(error))?;
        let metadata = resolution.metadata.clone();
        known.source = Some(resolution.source);
        known.metadata = Some(&metadata);
        let issuer = metadata.issuer.clone();
        let keepable = registration::keepable(&metadata);
        let metadata_document = oauth.client_metadata_url.is_some()
            && metadata
                .additional_fields
                .get("client_id_metadata_document_supported")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false);
        let manager = match &oauth.resource {
            None => {
                manager.set_metadata(resolution.metadata);
                manager
            }
            // The override (see `crate::auth::resource`): the scopes are chosen from what
            // the discovery at the server's URL found, as they would be without it.
            Some(resource) => {
                if scopes.is_none() {
                    scopes = Some(manager.select_initial_scopes(&[]).await)
                        .filter(|chosen| !chosen.is_empty());
                }
                let mut manager =
                    crate::oauth_client::resource::manager_with(resolution.metadata, resource)
                        .await
                        .map_err(|_| LoginError::Url {
                            server: name.clone(),
                            reason: "its `oauth_resource` is not a URL (fix `oauth_resource`)"
                                .to_owned(),
                        })?;
                manager.set_credential_store(crate::auth::SharedStore(self.store.clone()));
                manager
            }
        };

        // Where neither a configured client nor a metadata document is the client,
        // this login registers one, or uses the one an earlier login registered.
        let registers = oauth.client_id.is_none() && !metadata_document;
        let (listener, reused) = self.listener(registers, issuer.as_deref()).await?;
        let redirect_uri = listener.redirect_uri();
        let mut request = AuthorizationRequest::new(redirect_uri.clone())
            .with_challenge(challenge)
            .with_client_name(CLIENT_NAME)
            .with_initial_scope_selection();
        if let Some(scopes) = scopes {
            request = request.with_scopes(scopes);
        }
        // rmcp takes the identity in the specification's order: the pre-registered
        // client, else the metadata document where the server supports them, else a
        // registration.
        known.client = if let Some(client_id) = &oauth.client_id {
            request = request.with_preregistered_client(client_id.clone());
            let has_secret = secret.is_some();
            if let Some(secret) = secret {
                request = request.with_client_secret(secret);
            }
            Client::Configured { secret: has_secret }
        } else if let Some(registration) = &reused {
            request = request.with_preregistered_client(registration.client_id.clone());
            Client::Reused
        } else if metadata_document {
            Client::MetadataDocument
        } else {
            Client::Registers
        };
        if let Some(url) = &oauth.client_metadata_url {
            request = request.with_client_metadata_url(url.clone());
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, error)| known.session(error))?;
        if let Err(error) = opener.open(session.get_authorization_url()) {
            tracing::warn!(server = %name, %error, "cannot open the authorization URL");
        }
        let redirect = tokio::time::timeout(self.wait, listener.accept())
            .await
            .map_err(|_| known.timed_out(self.wait))??;
        let redirect = match redirect {
            Redirect::Code(redirect) => redirect,
            Redirect::Refused { error, description } => {
                return Err(known.refused(&error, description.as_deref()));
            }
        };
        let token = session
            .handle_callback_url(&redirect)
            .await
            .map_err(|error| known.exchange(error))?;
        let (client_id, _) = session
            .get_credentials()
            .await
            .map_err(|error| LoginError::store(name, error))?;
        if registers && keepable {
            self.keep_registration(&Registration {
                client_id: client_id.clone(),
                redirect_uri,
            })
            .await?;
        }
        // A token response without `scope` grants the scopes asked for (RFC 6749 §5.1).
        let scopes = match token.scopes() {
            Some(scopes) => scopes.iter().map(|scope| scope.to_string()).collect(),
            None => session.auth_manager.get_current_scopes().await,
        };
        let account = crate::auth::account::id_token_subject(&token, issuer.as_deref(), &client_id);
        Ok(LoginSummary {
            issuer,
            client_id,
            scopes,
            expires_at: token.expires_in().map(|after| SystemTime::now() + after),
            account,
        })
    }

    /// The loopback listener of this login, and the registration it uses again when
    /// it `registers` a client at `issuer` and an earlier login's registration there
    /// can serve (see [`registration`], invariant 2): its redirect URI, as configured
    /// or at the port it names, if that port can be bound.
    async fn listener(
        &self,
        registers: bool,
        issuer: Option<&str>,
    ) -> Result<(Callback, Option<Registration>), LoginError> {
        let name = &self.server.name;
        let oauth = &self.server.oauth;
        let stored = match registers {
            true => self
                .store
                .load()
                .await
                .map_err(|error| LoginError::store(name, error))?
                .and_then(|stored| registration::stored(&stored, issuer)),
            false => None,
        };
        let Some(registration) = stored else {
            return Ok((Callback::bind(name, oauth).await?, None));
        };
        if oauth.callback_url.is_some() || oauth.callback_port.is_some() {
            let listener = Callback::bind(name, oauth).await?;
            let same = listener.redirect_uri() == registration.redirect_uri;
            return Ok((listener, same.then_some(registration)));
        }
        match Callback::bind_at(name, &registration.redirect_uri).await {
            Ok(listener) => Ok((listener, Some(registration))),
            Err(error) => {
                tracing::debug!(server = %name, %error, "the registered redirect URI cannot be listened on: registering again");
                Ok((Callback::bind(name, oauth).await?, None))
            }
        }
    }

    /// Keeps `registration` with the login just saved, for the next login.
    async fn keep_registration(&self, registration: &Registration) -> Result<(), LoginError> {
        let failed = |error| LoginError::store(&self.server.name, error);
        let Some(stored) = self.store.load().await.map_err(failed)? else {
            return Ok(());
        };
        self.store
            .save(registration::keep(stored, registration))
            .await
            .map_err(failed)
    }

    /// The scopes to ask for, when they are not left to discovery: those given, else
    /// those configured; for a step-up, those and the ones the stored login holds and
    /// the ones the server asked for, which must add one (or nothing would change).
    async fn scopes_to_ask(&self) -> Result<Option<Vec<String>>, LoginError> {
        let chosen = self.scopes.as_ref().or(self.server.oauth.scopes.as_ref());
        if self.more_scopes.is_empty() {
            return Ok(chosen.cloned());
        }
        let held = self
            .store
            .load()
            .await
            .map_err(|error| LoginError::store(&self.server.name, error))?
            .filter(|stored| stored.token_response.is_some())
            .map(|stored| stored.granted_scopes)
            .unwrap_or_default();
        if self.more_scopes.iter().all(|scope| held.contains(scope)) {
            return Err(LoginError::ScopesHeld {
                server: self.server.name.clone(),
                scopes: self.more_scopes.clone(),
            });
        }
        let mut scopes = held;
        for scope in chosen.into_iter().flatten().chain(&self.more_scopes) {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        Ok(Some(scopes))
    }

    /// The challenge of the first request the server refuses: it is started as a
    /// runtime starts it, without an OAuth login, since a server may leave
    /// `initialize` open and protect only its tools.
    async fn challenge(&self, name: &str) -> Result<String, LoginError> {
        let mut server = self.server.clone();
        server.required = false;
        let mut config = Config::default();
        config.servers.insert(name.to_owned(), server);
        let options = StartOptions::new()
            .wait_for_all()
            .with_listing_registry(ListingRegistry::new());
        // The server is not `required`: its startup's failure is in its status, and a
        // start that fails names it (never no server).
        let runtime = Runtime::start(config, options).await.map_err(|error| {
            let StartError::RequiredServersFailed { failures } = error;
            let failure = failures.into_iter().next().map(|(_, error)| error);
            LoginError::Unreachable {
                server: name.to_owned(),
                source: Arc::new(failure.unwrap_or(StartupError::Cancelled)),
            }
        })?;
        let status = runtime.servers().into_iter().next();
        runtime.shutdown().await;
        let Some(status) = status else {
            return Err(LoginError::NotRemote {
                server: name.to_owned(),
            });
        };
        match status
            .error
            .as_ref()
            .map(|error| (error, error.http_failure()))
        {
            None => Err(LoginError::NotProtected {
                server: name.to_owned(),
            }),
            // A 401 without a challenge still asks for a login: discovery then starts
            // from the well-known locations.
            Some((_, Some(HttpFailure::Unauthorized { challenge, .. }))) => {
                Ok(challenge.clone().unwrap_or_else(|| "Bearer".to_owned()))
            }
            Some((error, _)) => Err(LoginError::Unreachable {
                server: name.to_owned(),
                source: Arc::new(error.clone()),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store holding a login that was granted `scopes`.
    async fn logged_in_with(scopes: &[&str]) -> Arc<dyn CredentialStore> {
        let store = Arc::new(rmcp::transport::auth::InMemoryCredentialStore::new());
        let token = serde_json::from_value(serde_json::json!({
            "access_token": "at_1",
            "token_type": "Bearer",
        }))
        .unwrap();
        let scopes = scopes.iter().map(|scope| scope.to_string()).collect();
        store
            .save(rmcp::transport::auth::StoredCredentials::new(
                "client".into(),
                Some(token),
                scopes,
                None,
            ))
            .await
            .unwrap();
        store
    }

    #[tokio::test]
    async fn a_step_up_asks_for_the_scopes_held_and_the_new_ones_and_never_for_none_new() {
        let server = ServerConfig::http("web", "http://127.0.0.1:9/mcp");
        let mut login = Login::new(&server, logged_in_with(&["mcp:basic"]).await);
        assert_eq!(
            login.scopes_to_ask().await.unwrap(),
            None,
            "discovery decides"
        );
        login.more_scopes = vec!["mcp:write".into()];
        assert_eq!(
            login.scopes_to_ask().await.unwrap(),
            Some(vec!["mcp:basic".into(), "mcp:write".into()])
        );
        login.more_scopes = vec!["mcp:basic".into()];
        let error = login.scopes_to_ask().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "server `web` refused a request for scopes its login holds already (`mcp:basic`): a new login would not change that (ask the server's administrator)"
        );
    }

    #[tokio::test]
    async fn a_server_that_cannot_be_reached_keeps_its_startup_failure_as_the_source() {
        // A port nothing listens on: the connection is refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = ServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"));
        let login = Login::new(&server, logged_in_with(&[]).await);
        let error = login.challenge("web").await.unwrap_err();
        let LoginError::Unreachable { source, .. } = &error else {
            panic!("not unreachable: {error:?}");
        };
        assert!(
            matches!(source.http_failure(), Some(HttpFailure::Refused { .. })),
            "{source:?}"
        );
        // Said once: the login's sentence, then the startup's.
        let message = crate::error::chain(&error);
        assert!(
            message.starts_with("server `web` did not ask for a login: ")
                && message.ends_with("server `web` refused the connection (check that it is running and that `url` names its host and port)")
                && message.matches("refused").count() == 1,
            "{message}"
        );
    }
}
