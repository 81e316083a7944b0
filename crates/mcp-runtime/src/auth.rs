//! OAuth for remote servers: logging in, where tokens are kept, and the credentials a
//! login leaves.
//!
//! The protocol is rmcp's `auth` module (discovery, client registration, PKCE, token
//! exchange and refresh); this module adds what a runtime needs around it: the
//! logout that revokes a login ([`logout`]), the token store ([`store`]: the OS
//! keyring or a `0600` file), and where a runtime finds the credentials a login left
//! ([`CredentialSource`], given with [`crate::StartOptions::with_credentials`];
//! [`store::Store`] is one). The login a person completes in a browser is
//! [`crate::login`], a layer above the runtime, which it starts to find the server's
//! challenge. A remote server with credentials in its store is sent the access token
//! on every request, refreshed before it expires and once more when the server
//! refuses it; one without is reached as configured.

pub(crate) mod account;
pub mod logout;
pub(crate) mod registration;
pub mod store;

use std::sync::Arc;

use rmcp::transport::auth::AuthError;
/// The store of one server identity's credentials, as rmcp defines it: a host's token
/// store implements it (see [`CredentialSource`]).
pub use rmcp::transport::auth::{CredentialStore, InMemoryCredentialStore, StoredCredentials};

use crate::config::OAuthConfig;

/// Where a runtime finds the OAuth credentials of the remote servers it starts: the
/// token store of a host.
///
/// rmcp's [`CredentialStore`] holds the credentials of one server identity (its
/// `load` takes no key), so a source hands out one store per identity.
pub trait CredentialSource: Send + Sync {
    /// The store of the server `server` at `url`, with its OAuth settings `oauth`
    /// (a pre-registered client, a resource). A store holding nothing means the
    /// server was never logged in to: it is reached as configured.
    fn store_for(&self, server: &str, url: &str, oauth: &OAuthConfig) -> Arc<dyn CredentialStore>;
}

/// A shared store, as rmcp's manager takes one (by value).
pub(crate) struct SharedStore(pub(crate) Arc<dyn CredentialStore>);

#[async_trait::async_trait]
impl CredentialStore for SharedStore {
    async fn load(&self) -> Result<Option<rmcp::transport::auth::StoredCredentials>, AuthError> {
        self.0.load().await
    }

    async fn save(
        &self,
        credentials: rmcp::transport::auth::StoredCredentials,
    ) -> Result<(), AuthError> {
        self.0.save(credentials).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().await
    }

    async fn on_refresh_token_rejected(
        &self,
        credentials: &rmcp::transport::auth::StoredCredentials,
    ) -> Result<(), AuthError> {
        self.0.on_refresh_token_rejected(credentials).await
    }

    async fn acquire_refresh_guard(
        &self,
    ) -> Result<Option<rmcp::transport::auth::CredentialRefreshGuard>, AuthError> {
        self.0.acquire_refresh_guard().await
    }
}

impl CredentialSource for store::Store {
    /// The entry of the identity (URL, configured client id, resource) of the server;
    /// a URL that does not parse has no login (an empty store).
    fn store_for(&self, _server: &str, url: &str, oauth: &OAuthConfig) -> Arc<dyn CredentialStore> {
        match url::Url::parse(url) {
            Ok(url) => self.credentials(store::StoreKey::new(
                &url,
                oauth.client_id.as_deref(),
                oauth.resource.as_deref(),
            )),
            Err(_) => Arc::new(InMemoryCredentialStore::new()),
        }
    }
}
