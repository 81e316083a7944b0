//! The OAuth login of a Streamable HTTP server, used on its requests.
//!
//! A server someone logged in to (see [`crate::auth::login`]) has its credentials in
//! a store; the transport of each of its connections holds one [`OAuthLogin`] over
//! rmcp's `AuthorizationManager` with that store. rmcp's `AuthClient` does the same
//! for a client it wraps, but wrapping would give the transport of an OAuth server
//! another type than every other one's; the two steps it takes are taken here
//! instead, with rmcp's manager doing the OAuth:
//! 1. every request carries the access token, refreshed first when it is about to
//!    expire (rmcp's `get_access_token`);
//! 2. a request the server answers `401` is refreshed once and sent once more; a
//!    second `401`, or a refresh the authorization server refuses, means the login
//!    must be done again, and says so ([`HttpFailure::NeedsLogin`]).
//!
//! Neither the token nor the store's contents appear in any error or log line.

use std::sync::Arc;

use rmcp::transport::auth::{AuthError, AuthorizationManager, CredentialStore};
use tokio::sync::Mutex;

use crate::error::{HttpFailure, StartupError};

/// A server's OAuth login, shared by the requests of one connection.
#[derive(Clone)]
pub(crate) struct OAuthLogin {
    server: Arc<str>,
    manager: Arc<Mutex<AuthorizationManager>>,
}

impl std::fmt::Debug for OAuthLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthLogin")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl OAuthLogin {
    /// The login of `server` at `url`, from `store`; `None` when nothing is stored
    /// (the server was never logged in to).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the metadata discovery it may be making.
    pub(crate) async fn from_store(
        server: &str,
        url: &str,
        store: Arc<dyn CredentialStore>,
    ) -> Result<Option<Self>, StartupError> {
        let failed = |error: AuthError| {
            StartupError::Login(HttpFailure::OAuth {
                server: server.to_owned(),
                description: describe(&error),
            })
        };
        let stored = store.load().await.map_err(failed)?;
        if stored.is_none_or(|stored| stored.token_response.is_none()) {
            return Ok(None);
        }
        let mut manager = AuthorizationManager::new_allowing_private_addresses(url)
            .await
            .map_err(failed)?;
        manager.set_credential_store(crate::auth::SharedStore(store));
        // Discovery is needed for a refresh (the token endpoint), and tells whether the
        // authorization server changed since the login (rmcp then drops the tokens).
        if !manager.initialize_from_store().await.map_err(failed)? {
            return Err(StartupError::Login(HttpFailure::NeedsLogin {
                server: server.to_owned(),
            }));
        }
        Ok(Some(Self {
            server: server.into(),
            manager: Arc::new(Mutex::new(manager)),
        }))
    }

    /// The access token to send, refreshed first when it is about to expire.
    pub(crate) async fn token(&self) -> Result<String, HttpFailure> {
        let manager = self.manager.lock().await;
        manager
            .get_access_token()
            .await
            .map_err(|error| self.failure(&error))
    }

    /// A new access token after the server refused `sent`: refreshed, unless another
    /// request of this connection refreshed it already.
    pub(crate) async fn refreshed(&self, sent: &str) -> Result<String, HttpFailure> {
        let manager = self.manager.lock().await;
        let current = manager
            .get_access_token()
            .await
            .map_err(|error| self.failure(&error))?;
        if current != sent {
            return Ok(current);
        }
        let response = manager
            .refresh_token()
            .await
            .map_err(|error| self.failure(&error))?;
        let fresh = oauth2::TokenResponse::access_token(&response)
            .secret()
            .to_owned();
        if fresh == sent {
            return Err(self.needs_login());
        }
        Ok(fresh)
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

/// What went wrong, in words that carry no token: the kind of failure, never the
/// authorization server's body (which may echo what was sent).
fn describe(error: &AuthError) -> String {
    match error {
        AuthError::MetadataError(_) | AuthError::NoAuthorizationSupport => {
            "its authorization server's metadata cannot be found".to_owned()
        }
        AuthError::TokenRefreshFailed(_) => "refreshing the access token failed".to_owned(),
        AuthError::CredentialStoreError(_) => "the credential store failed".to_owned(),
        AuthError::HttpError(_) => "the authorization server cannot be reached".to_owned(),
        _ => "the OAuth exchange failed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::transport::auth::InMemoryCredentialStore;

    use super::*;

    #[tokio::test]
    async fn a_server_with_nothing_stored_is_reached_without_oauth() {
        // The URL is never contacted: nothing is discovered for a server without a
        // login.
        let login = OAuthLogin::from_store(
            "web",
            "http://127.0.0.1:9/mcp",
            Arc::new(InMemoryCredentialStore::new()),
        )
        .await
        .unwrap();
        assert!(login.is_none());
    }

    #[test]
    fn a_refused_login_says_how_to_log_in_again() {
        assert_eq!(
            HttpFailure::NeedsLogin {
                server: "github".into()
            }
            .to_string(),
            "server `github` needs a new login: run `mcp-runtime login github`"
        );
    }
}
