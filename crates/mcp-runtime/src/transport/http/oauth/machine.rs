//! Machine clients: access tokens from the client credentials grant, with no person
//! and no `login` (`oauth.grant_type = "client_credentials"`).
//!
//! rmcp does the OAuth of it: discovery from the server's `401` challenge
//! (`resolve_metadata_from_challenge`: Protected Resource Metadata, then the
//! authorization server's), the check that the authorization server takes the
//! client's authentication (`validate_client_credentials_metadata`), the choice of
//! `client_secret_basic` or `client_secret_post` from its metadata
//! (`configure_client_credentials`: Basic only when it is the one advertised), the
//! token request with its `private_key_jwt` assertion, and saving the token in the
//! store (`exchange_client_credentials`).
//!
//! What is written here, and why:
//! 1. When: a token is obtained when the server answers `401` (the first request of a
//!    runtime without a valid stored token is sent without one, so that the server's
//!    challenge says where to get one: no `GET` probe of the server), and again when
//!    the stored one is about to expire or is refused once. There is no refresh token:
//!    the client's credentials get a new one.
//! 2. The scopes: `scopes` from the configuration, else the challenge's `scope`, else
//!    none.
//! 3. The `resource` (RFC 8707): `oauth_resource` when set, else the `resource` of
//!    the server's Protected Resource Metadata, verbatim. rmcp refuses a client
//!    credentials exchange without a `resource` and keeps the one it discovered to
//!    itself, so the metadata document named by the challenge (else the well-known
//!    locations of RFC 9728, path first) is read here for it; without one, the server
//!    URL as configured.
//! 4. The errors, in words that quote neither the secret nor the authorization
//!    server's answer (which may echo what was sent): an OAuth error code of RFC 6749
//!    §5.2 found in rmcp's message is named, and the variable holding the secret or
//!    key is named as the thing to check.
//!
//! The secret or key is read from the environment at startup (see
//! `transport::http::resolve_oauth`), never from the file.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, ClientCredentialsConfig,
    CredentialStore, WWWAuthenticateParams,
};
use url::Url;

use super::{ClientAuth, ClientCredential, HeldTokens, Unguarded};
use crate::transport::error::{HttpFailure, StartupError};

/// The most of a metadata document read.
const METADATA_READ_BYTES: usize = 64 * 1024;

/// The OAuth error codes of a token response (RFC 6749 §5.2, RFC 8707 §2), which an
/// error may name: a fixed vocabulary, never an echo of what was sent.
pub(super) const TOKEN_ERROR_CODES: [&str; 7] = [
    "invalid_client",
    "invalid_grant",
    "invalid_request",
    "invalid_scope",
    "invalid_target",
    "unauthorized_client",
    "unsupported_grant_type",
];

/// A machine client of one server.
pub(crate) struct MachineClient {
    server: String,
    url: String,
    client: ClientAuth,
    http: reqwest::Client,
}

impl MachineClient {
    /// The machine client `client` of `server` at `url`, reading metadata with `http`.
    ///
    /// # Errors
    ///
    /// A `private_key_jwt` client in a build without the `client-credentials-jwt`
    /// feature.
    pub(crate) fn new(
        server: &str,
        url: &str,
        client: ClientAuth,
        http: reqwest::Client,
    ) -> Result<Self, StartupError> {
        if let ClientCredential::PrivateKey { .. } = client.credential
            && !cfg!(feature = "client-credentials-jwt")
        {
            return Err(StartupError::Login(lacks_jwt(server)));
        }
        Ok(Self {
            server: server.to_owned(),
            url: url.to_owned(),
            client,
            http,
        })
    }

    /// A new access token, from the authorization server the server's `challenge`
    /// leads to, saved in `store`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the exchange; a token already received is saved
    /// or not, whole.
    pub(crate) async fn obtain(
        &self,
        store: Arc<dyn CredentialStore>,
        challenge: Option<&str>,
    ) -> Result<String, HttpFailure> {
        let failed = |error: AuthError| self.failure(&error);
        // A `401` without a challenge still asks for a token: discovery then starts
        // from the well-known locations.
        let challenge = challenge.unwrap_or("Bearer");
        let mut manager = AuthorizationManager::new_allowing_private_addresses(self.url.as_str())
            .await
            .map_err(failed)?;
        manager.set_credential_store(Unguarded {
            store: store.clone(),
            tokens: HeldTokens::default(),
        });
        let resolution = manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
            .map_err(failed)?;
        let metadata = resolution.metadata.clone();
        manager.set_metadata(resolution.metadata);
        let params = Url::parse(&self.url)
            .map(|base| WWWAuthenticateParams::parse(challenge, &base))
            .unwrap_or_default();
        let scopes = match &self.client.scopes {
            Some(scopes) => scopes.clone(),
            None => params
                .scope
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        };
        let resource = match &self.client.resource {
            Some(resource) => resource.clone(),
            None => self.resource(params.resource_metadata_url).await,
        };
        if let ClientCredential::Assertion(assertion) = &self.client.credential {
            let grant = super::workload::Grant {
                server: &self.server,
                client_id: &self.client.client_id,
                source: &self.client.variable,
                http: &self.http,
            };
            return grant
                .exchange(assertion, &metadata, scopes, resource, store.as_ref())
                .await;
        }
        let config = self.config(scopes, resource)?;
        manager
            .validate_client_credentials_metadata(&config)
            .map_err(|error| self.unsupported(&metadata, &error))?;
        manager
            .configure_client_credentials(&config)
            .map_err(failed)?;
        let response = exchange(manager, config).await.map_err(failed)?;
        tracing::debug!(server = %self.server, client_id = %self.client.client_id, "obtained an access token with the client credentials");
        Ok(oauth2::TokenResponse::access_token(&response)
            .secret()
            .to_owned())
    }

    /// rmcp's configuration of this client's exchange.
    fn config(
        &self,
        scopes: Vec<String>,
        resource: String,
    ) -> Result<ClientCredentialsConfig, HttpFailure> {
        let client_id = self.client.client_id.clone();
        match &self.client.credential {
            ClientCredential::Secret(secret) => Ok(ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret: secret.clone(),
                scopes,
                resource: Some(resource),
            }),
            #[cfg(feature = "client-credentials-jwt")]
            ClientCredential::PrivateKey { pem, algorithm } => {
                Ok(ClientCredentialsConfig::PrivateKeyJwt {
                    client_id,
                    signing_key: pem.as_bytes().to_vec(),
                    signing_algorithm: jwt_algorithm(*algorithm),
                    // The assertion's audience is the issuer, as rmcp sets it.
                    token_endpoint_audience: None,
                    scopes,
                    resource: Some(resource),
                })
            }
            #[cfg(not(feature = "client-credentials-jwt"))]
            ClientCredential::PrivateKey { .. } => Err(lacks_jwt(&self.server)),
            ClientCredential::Assertion(_) => {
                unreachable!("a workload's token is exchanged by `workload`")
            }
        }
    }

    /// The `resource` of the server's Protected Resource Metadata, verbatim: at
    /// `advertised` (the challenge's `resource_metadata`), else at the well-known
    /// locations; else the server URL as configured.
    async fn resource(&self, advertised: Option<Url>) -> String {
        let candidates = match advertised {
            Some(url) => vec![url],
            None => well_known_metadata(&self.url),
        };
        for candidate in candidates {
            if let Some(resource) = self.metadata_resource(candidate).await {
                return resource;
            }
        }
        self.url.clone()
    }

    /// The `resource` member of the metadata document at `url`, if it has one.
    async fn metadata_resource(&self, url: Url) -> Option<String> {
        let response = self.http.get(url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = crate::transport::http::read_start(response, METADATA_READ_BYTES).await;
        let document: serde_json::Value = serde_json::from_slice(&body).ok()?;
        document.get("resource")?.as_str().map(str::to_owned)
    }

    /// The failure of a request the server refused with a token just obtained.
    pub(crate) fn refused(&self) -> HttpFailure {
        HttpFailure::OAuth {
            server: self.server.clone(),
            description: format!(
                "the server refused the access token that client `{}` obtained with its client credentials (check the client's permissions at its authorization server)",
                self.client.client_id
            ),
        }
    }

    /// What `error` means for this client, quoting nothing it was sent (module docs,
    /// item 4).
    fn failure(&self, error: &AuthError) -> HttpFailure {
        let client = &self.client.client_id;
        let variable = &self.client.variable;
        let description = match error {
            AuthError::ClientCredentialsError(message) => {
                // rmcp keeps the token endpoint's error only as text: its variant holds
                // a `String` (`exchange_client_credentials` writes `Token exchange
                // failed: {e}` with oauth2's error, which names the code), and no typed
                // error of the answer reaches the caller. So the code is looked for in
                // it, from a fixed vocabulary. The integration test
                // `oauth_machine::a_wrong_secret_fails_the_start_in_one_line_naming_the_server_never_the_secret`
                // runs rmcp's exchange against the fixture's refusal and fails if
                // rmcp's text stops naming the code.
                let code = TOKEN_ERROR_CODES
                    .iter()
                    .find(|code| message.contains(*code))
                    .map(|code| format!(" (`{code}`)"))
                    .unwrap_or_default();
                format!(
                    "its authorization server gave client `{client}` no token{code}: check the {} in `{variable}`",
                    self.credential_name()
                )
            }
            #[cfg(feature = "client-credentials-jwt")]
            AuthError::JwtSigningError(_) => format!(
                "the private key in `{variable}` cannot sign a `{}` assertion (it must be a PEM key of that algorithm)",
                self.algorithm().unwrap_or_default()
            ),
            other => super::describe(other),
        };
        HttpFailure::OAuth {
            server: self.server.clone(),
            description,
        }
    }

    /// What rmcp's check of the authorization server's `metadata` refused: known
    /// from the metadata itself (which rmcp's error only quotes), the client's
    /// authentication method, else its signing algorithm.
    fn unsupported(&self, metadata: &AuthorizationMetadata, error: &AuthError) -> HttpFailure {
        let client = &self.client.client_id;
        let methods = metadata
            .additional_fields
            .get("token_endpoint_auth_methods_supported")
            .and_then(serde_json::Value::as_array);
        let accepted = |names: &[&str]| {
            methods.is_none_or(|methods| {
                methods
                    .iter()
                    .any(|method| names.iter().any(|name| method == name))
            })
        };
        let method_accepted = match self.client.credential {
            ClientCredential::Secret(_) => accepted(&["client_secret_basic", "client_secret_post"]),
            ClientCredential::PrivateKey { .. } => accepted(&["private_key_jwt"]),
            ClientCredential::Assertion(_) => true,
        };
        let description = match (method_accepted, self.algorithm()) {
            (false, _) => format!(
                "its authorization server does not accept the {} authentication of client `{client}`",
                self.method()
            ),
            (true, Some(algorithm)) => format!(
                "its authorization server does not accept `{algorithm}` assertions (set `oauth.signing_algorithm` to one it does)"
            ),
            (true, None) => return self.failure(error),
        };
        HttpFailure::OAuth {
            server: self.server.clone(),
            description,
        }
    }

    fn method(&self) -> &'static str {
        match self.client.credential {
            ClientCredential::Secret(_) => "`client_secret_basic` or `client_secret_post`",
            ClientCredential::PrivateKey { .. } => "`private_key_jwt`",
            ClientCredential::Assertion(_) => "`jwt-bearer`",
        }
    }

    fn credential_name(&self) -> &'static str {
        match self.client.credential {
            ClientCredential::Secret(_) => "secret",
            ClientCredential::PrivateKey { .. } => "private key",
            ClientCredential::Assertion(_) => "identity token",
        }
    }

    fn algorithm(&self) -> Option<&'static str> {
        match self.client.credential {
            ClientCredential::Secret(_) | ClientCredential::Assertion(_) => None,
            ClientCredential::PrivateKey { algorithm, .. } => Some(algorithm.as_str()),
        }
    }
}

/// rmcp's `exchange_client_credentials` with `config`, on a blocking thread of its
/// own.
///
/// With the `client-credentials-jwt` feature, rmcp's future is not `Send` (its JWT
/// path holds a `form_urlencoded::Serializer`, which borrows a `dyn Fn` that is not
/// `Sync`, across an `await`), and the transport's futures must be. It is driven by
/// [`tokio::runtime::Handle::block_on`] on a blocking thread instead: the runtime's
/// threads (or, on a current-thread runtime, the thread awaiting this) drive its I/O.
///
/// # Cancel safety
///
/// Dropping the future leaves the exchange to finish on its thread, saving the token
/// it gets.
async fn exchange(
    manager: AuthorizationManager,
    config: ClientCredentialsConfig,
) -> Result<rmcp::transport::auth::OAuthTokenResponse, AuthError> {
    let runtime = tokio::runtime::Handle::current();
    let exchanged = tokio::task::spawn_blocking(move || {
        runtime.block_on(async move { manager.exchange_client_credentials(&config).await })
    })
    .await;
    match exchanged {
        Ok(result) => result,
        Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Err(_) => Err(AuthError::InternalError(
            "the token exchange was cancelled by the runtime shutting down".into(),
        )),
    }
}

/// The failure of a `private_key_jwt` client in a build without it.
fn lacks_jwt(server: &str) -> HttpFailure {
    HttpFailure::OAuth {
        server: server.to_owned(),
        description: "this build of mcp-runtime lacks the `client-credentials-jwt` feature that `private_key_env_var` (`private_key_jwt`) needs (build it with that feature)".to_owned(),
    }
}

#[cfg(feature = "client-credentials-jwt")]
fn jwt_algorithm(
    algorithm: crate::config::SigningAlgorithm,
) -> rmcp::transport::auth::JwtSigningAlgorithm {
    use crate::config::SigningAlgorithm;
    use rmcp::transport::auth::JwtSigningAlgorithm;
    match algorithm {
        SigningAlgorithm::Rs256 => JwtSigningAlgorithm::RS256,
        SigningAlgorithm::Rs384 => JwtSigningAlgorithm::RS384,
        SigningAlgorithm::Rs512 => JwtSigningAlgorithm::RS512,
        SigningAlgorithm::Es256 => JwtSigningAlgorithm::ES256,
        SigningAlgorithm::Es384 => JwtSigningAlgorithm::ES384,
    }
}

/// The well-known locations of the Protected Resource Metadata of the resource at
/// `url`, in RFC 9728's order: inserted before the URL's path, then at the root.
fn well_known_metadata(url: &str) -> Vec<Url> {
    const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
    let Ok(url) = Url::parse(url) else {
        return Vec::new();
    };
    let path = url.path().trim_end_matches('/');
    let mut root = url.clone();
    root.set_query(None);
    root.set_fragment(None);
    root.set_path(WELL_KNOWN);
    let mut candidates = Vec::new();
    if !path.is_empty() {
        let mut inserted = root.clone();
        inserted.set_path(&format!("{WELL_KNOWN}{path}"));
        candidates.push(inserted);
    }
    candidates.push(root);
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SigningAlgorithm;

    fn client(credential: ClientCredential) -> MachineClient {
        let client = ClientAuth {
            client_id: "robot".into(),
            credential,
            variable: "ROBOT_SECRET".into(),
            machine: true,
            scopes: None,
            resource: None,
            _registered: Vec::new(),
        };
        MachineClient {
            server: "web".into(),
            url: "http://127.0.0.1:9/mcp".into(),
            client,
            http: reqwest::Client::new(),
        }
    }

    #[test]
    fn metadata_is_looked_for_with_the_path_first() {
        let urls = |url| {
            well_known_metadata(url)
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            urls("https://mcp.example.com/v1/mcp?x=1"),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            urls("https://mcp.example.com/"),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn a_refused_exchange_names_the_code_and_the_variable_never_what_was_sent() {
        let machine = client(ClientCredential::Secret("s3cr3t".into()));
        let error = AuthError::ClientCredentialsError(
            "Token exchange failed: Server returned error response: invalid_client: client `robot` sent s3cr3t".into(),
        );
        assert_eq!(
            machine.failure(&error).to_string(),
            "server `web`'s OAuth login cannot be used: its authorization server gave client `robot` no token (`invalid_client`): check the secret in `ROBOT_SECRET`"
        );
    }

    #[test]
    fn an_unsupported_method_or_algorithm_is_told_from_the_metadata_not_rmcps_text() {
        let machine = client(ClientCredential::PrivateKey {
            pem: String::new(),
            algorithm: SigningAlgorithm::Es384,
        });
        let metadata = |methods: serde_json::Value| {
            let mut metadata = AuthorizationMetadata::default();
            metadata
                .additional_fields
                .insert("token_endpoint_auth_methods_supported".into(), methods);
            metadata
        };
        // rmcp's text is the same for both: only the metadata tells them apart.
        let refused = AuthError::ClientCredentialsError("unsupported".into());
        let method = machine.unsupported(
            &metadata(serde_json::json!(["client_secret_basic"])),
            &refused,
        );
        assert!(
            method.to_string().ends_with(
                "does not accept the `private_key_jwt` authentication of client `robot`"
            ),
            "{method}"
        );
        let algorithm =
            machine.unsupported(&metadata(serde_json::json!(["private_key_jwt"])), &refused);
        assert!(
            algorithm
                .to_string()
                .contains("does not accept `ES384` assertions"),
            "{algorithm}"
        );
    }

    #[cfg(not(feature = "client-credentials-jwt"))]
    #[test]
    fn a_build_without_jwt_refuses_a_private_key_client_saying_why() {
        let machine = client(ClientCredential::PrivateKey {
            pem: String::new(),
            algorithm: SigningAlgorithm::Es256,
        });
        let error = MachineClient::new("web", "http://x/", machine.client, reqwest::Client::new())
            .err()
            .unwrap();
        assert!(
            error
                .to_string()
                .contains("lacks the `client-credentials-jwt` feature"),
            "{error}"
        );
    }
}
