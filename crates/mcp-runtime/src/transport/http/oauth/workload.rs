//! Workloads: access tokens for the identity token a workload's platform issued (a
//! Kubernetes service account token, a cloud's workload identity, a SPIFFE JWT), with
//! the JWT bearer grant of RFC 7523 §2.1 (`oauth.grant_type = "jwt_bearer"`, the
//! MCP workload identity federation extension, SEP-1933).
//!
//! rmcp has no client for this grant (its enterprise module redeems only the ID-JAG
//! it obtained itself), so the token request is written here: one form `POST` to the
//! token endpoint of the metadata that [`super::machine`] discovered the way it does
//! for every machine client, with `grant_type`, `assertion`, `client_id` (a public
//! client: the assertion is the credential), `resource` and `scope` when there are
//! scopes to ask for. The answer is a token response as any other, saved in the
//! store like rmcp saves one.
//!
//! Invariants:
//! 1. The assertion is read when a token is needed: a file is read again each time,
//!    since platforms rotate the token in place.
//! 2. A refused grant is not tried again another way (no other grant, no retry):
//!    the error names the OAuth error code (of a fixed vocabulary) and where the
//!    assertion came from, never the assertion or the server's own words.

use std::path::PathBuf;

use oauth2::TokenResponse as _;
use rmcp::transport::auth::{
    AuthorizationMetadata, CredentialStore, OAuthTokenResponse, StoredCredentials,
};

use crate::transport::error::HttpFailure;

/// The grant type of RFC 7523 §2.1.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The most of a token endpoint's answer read.
const ANSWER_READ_BYTES: usize = 64 * 1024;

/// Where a workload's identity token is read from.
#[derive(Clone)]
pub(crate) enum Assertion {
    /// Read from `oauth.assertion_env_var` at startup.
    Value(String),
    /// `oauth.assertion_file`, read at each token request (invariant 1).
    File(PathBuf),
}

/// One workload's grant at the token endpoint.
pub(crate) struct Grant<'a> {
    /// The server, for messages.
    pub(crate) server: &'a str,
    /// `oauth.client_id`.
    pub(crate) client_id: &'a str,
    /// Where the assertion came from, for messages: its variable or file.
    pub(crate) source: &'a str,
    /// The server's HTTP client (its proxies and certificates).
    pub(crate) http: &'a reqwest::Client,
}

impl Grant<'_> {
    /// A token for `assertion` at the token endpoint of `metadata`, for `resource`
    /// and `scopes`, saved in `store`; the access token.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the request; nothing is saved.
    pub(crate) async fn exchange(
        &self,
        assertion: &Assertion,
        metadata: &AuthorizationMetadata,
        scopes: Vec<String>,
        resource: String,
        store: &dyn CredentialStore,
    ) -> Result<String, HttpFailure> {
        let assertion = match assertion {
            Assertion::Value(value) => value.clone(),
            Assertion::File(path) => tokio::fs::read_to_string(path)
                .await
                .map_err(|error| {
                    self.failed(format!(
                        "its workload identity token cannot be read from `{}`: {error}",
                        path.display()
                    ))
                })?
                .trim()
                .to_owned(),
        };
        let mut form = vec![
            ("grant_type", JWT_BEARER.to_owned()),
            ("assertion", assertion),
            ("client_id", self.client_id.to_owned()),
            ("resource", resource),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&form)
            .finish();
        let response = self
            .http
            .post(&metadata.token_endpoint)
            .header(http::header::ACCEPT, "application/json")
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await
            .map_err(|_| self.failed("its authorization server cannot be reached".to_owned()))?;
        let status = response.status();
        let body = crate::transport::http::read_start(response, ANSWER_READ_BYTES).await;
        if !status.is_success() {
            return Err(self.refused(&body));
        }
        let token: OAuthTokenResponse = serde_json::from_slice(&body).map_err(|_| {
            self.failed("its authorization server answered with no token response".to_owned())
        })?;
        let granted = match token.scopes() {
            Some(granted) => granted.iter().map(|scope| scope.to_string()).collect(),
            None => scopes,
        };
        let access = token.access_token().secret().to_owned();
        let received = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        store
            .save(
                StoredCredentials::new(
                    self.client_id.to_owned(),
                    Some(token),
                    granted,
                    Some(received),
                )
                .with_issuer(metadata.issuer.clone()),
            )
            .await
            .map_err(|_| self.failed("the credential store failed".to_owned()))?;
        tracing::debug!(server = %self.server, client_id = %self.client_id, "obtained an access token for the workload's identity token");
        Ok(access)
    }

    /// The failure of a refused grant (invariant 2).
    fn refused(&self, body: &[u8]) -> HttpFailure {
        let code = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|answer| {
                let error = answer.get("error")?.as_str()?.to_owned();
                super::machine::TOKEN_ERROR_CODES
                    .iter()
                    .find(|code| **code == error)
                    .copied()
            })
            .map(|code| format!(" (`{code}`)"))
            .unwrap_or_default();
        self.failed(format!(
            "its authorization server gave workload `{}` no token for its identity token{code}: check the token in `{}`",
            self.client_id, self.source
        ))
    }

    fn failed(&self, description: String) -> HttpFailure {
        HttpFailure::OAuth {
            server: self.server.to_owned(),
            description,
        }
    }
}
