//! Logging out of a remote server: its tokens revoked at the authorization server
//! where it offers revocation (RFC 7009), then its stored login deleted.
//!
//! rmcp has no revocation, so it is written here: the authorization server's metadata
//! is discovered again (as a runtime's start does) and its `revocation_endpoint` is
//! sent the refresh token, which revokes the whole grant at most servers, then the
//! access token, each as a form `POST` authenticated as the login's client.
//!
//! Invariants:
//! 1. The stored login is deleted whatever the revocation did: a revocation that
//!    failed is reported ([`Revocation::Failed`]), not an error of the logout.
//! 2. A token is sent only to the revocation endpoint the authorization server
//!    published in its metadata (never to one synthesized from the server's URL), and,
//!    when the login recorded its issuer, only if that metadata is the same issuer's:
//!    a server that now names another authorization server is sent nothing.
//! 3. No token appears in the result, an error or a log line: a failure is described
//!    by an HTTP status and the server's OAuth `error` code, never its body.

use std::{sync::Arc, time::Duration};

use oauth2::TokenResponse as _;
use rmcp::transport::auth::{AuthorizationManager, CredentialStore};

use crate::{
    auth::store::StoreError,
    config::{ServerConfig, TransportConfig},
};

/// How long one revocation request may take.
const REVOKE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a logout did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Logout {
    /// Nothing was stored for the server.
    NotLoggedIn,
    /// The stored login was deleted, after the revocation said.
    LoggedOut(Revocation),
}

/// What became of the tokens at the authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Revocation {
    /// Every token stored was revoked.
    Revoked,
    /// The authorization server names no `revocation_endpoint`: the tokens stay valid
    /// there until they expire.
    NotOffered,
    /// Only a client registration was stored: there was nothing to revoke.
    NothingToRevoke,
    /// The revocation failed; the login was deleted all the same.
    Failed {
        /// Why, in words that quote no token.
        reason: String,
    },
}

/// Why a logout failed: the store could not be read or changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogoutError {
    /// The token store failed.
    #[error("cannot {action} the OAuth token store")]
    Store {
        /// `read` or `change`.
        action: &'static str,
        /// The store's error, in its own words.
        #[source]
        source: StoreError,
    },
}

/// Logs out of `server`, whose login is in `store`: revokes its tokens where the
/// authorization server offers revocation, then deletes the login (module docs).
///
/// # Cancel safety
///
/// Dropping the future before the login is deleted leaves it stored; a token already
/// revoked then fails at its next use, and the server asks for a new login.
pub async fn logout(
    server: &ServerConfig,
    store: Arc<dyn CredentialStore>,
) -> Result<Logout, LogoutError> {
    let stored = store.load().await.map_err(|error| LogoutError::Store {
        action: "read",
        source: StoreError::reported(error),
    })?;
    let Some(stored) = stored else {
        return Ok(Logout::NotLoggedIn);
    };
    let revocation = match &stored.token_response {
        None => Revocation::NothingToRevoke,
        Some(token) => {
            let mut tokens = Vec::new();
            if let Some(refresh) = token.refresh_token() {
                tokens.push((refresh.secret().as_str(), "refresh_token"));
            }
            tokens.push((token.access_token().secret().as_str(), "access_token"));
            revoke(server, stored.issuer.as_deref(), &stored.client_id, &tokens).await
        }
    };
    store.clear().await.map_err(|error| LogoutError::Store {
        action: "change",
        source: StoreError::reported(error),
    })?;
    Ok(Logout::LoggedOut(revocation))
}

/// Revokes `tokens` (each with its `token_type_hint`) of `client_id`, issued by
/// `issuer`, at the revocation endpoint of `server`'s authorization server.
async fn revoke(
    server: &ServerConfig,
    issuer: Option<&str>,
    client_id: &str,
    tokens: &[(&str, &str)],
) -> Revocation {
    let failed = |reason: &str| Revocation::Failed {
        reason: reason.to_owned(),
    };
    let TransportConfig::StreamableHttp(http) = &server.transport else {
        return failed("the server is not a remote server");
    };
    let metadata =
        match AuthorizationManager::new_allowing_private_addresses(http.url.as_str()).await {
            Ok(manager) => manager.resolve_metadata().await,
            Err(error) => Err(error),
        };
    // Metadata synthesized from the server's URL (the 2025-03-26 fallback) is no
    // word of the authorization server's: nothing is sent on its strength.
    let Some(metadata) = metadata
        .ok()
        .filter(|resolution| resolution.source.is_discovered())
        .map(|resolution| resolution.metadata)
    else {
        return failed("its authorization server's metadata cannot be found");
    };
    if let Some(issuer) = issuer
        && metadata.issuer.as_deref() != Some(issuer)
    {
        return failed(
            "the server names another authorization server than the one that issued its tokens",
        );
    }
    let Some(endpoint) = metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(serde_json::Value::as_str)
    else {
        return Revocation::NotOffered;
    };
    let Ok(client) = reqwest::Client::builder()
        .timeout(REVOKE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    else {
        return failed("no HTTP client can be made");
    };
    let secret = server
        .oauth
        .client_secret_env_var
        .as_deref()
        .and_then(|name| std::env::var(name).ok())
        .filter(|secret| !secret.is_empty());
    for (token, hint) in tokens {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", token)
            .append_pair("token_type_hint", hint);
        let mut request = client.post(endpoint).header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        );
        // RFC 7009 §2.1: a confidential client authenticates as at the token
        // endpoint (HTTP Basic, RFC 6749 §2.3.1); a public one names itself.
        match &secret {
            Some(secret) => {
                request = request.basic_auth(form_encode(client_id), Some(form_encode(secret)))
            }
            None => {
                form.append_pair("client_id", client_id);
            }
        }
        let answer = request.body(form.finish()).send().await;
        let response = match answer {
            Ok(response) => response,
            Err(_) => return failed("the authorization server cannot be reached"),
        };
        let status = response.status();
        if !status.is_success() {
            let code = response
                .json::<serde_json::Value>()
                .await
                .ok()
                .and_then(|body| {
                    body.get("error")
                        .and_then(|e| e.as_str())
                        .map(str::to_owned)
                })
                .filter(|code| code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            let reason = match code {
                Some(code) => format!(
                    "the revocation endpoint answered HTTP {} (`{code}`)",
                    status.as_u16()
                ),
                None => format!("the revocation endpoint answered HTTP {}", status.as_u16()),
            };
            return Revocation::Failed { reason };
        }
    }
    Revocation::Revoked
}

/// `text` form-encoded, as client credentials are before Basic encoding (RFC 6749
/// §2.3.1).
fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
