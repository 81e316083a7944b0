use super::*;

fn metadata(registration: Option<&str>) -> AuthorizationMetadata {
    let mut metadata = AuthorizationMetadata::default();
    metadata.authorization_endpoint = "https://as.test/authorize".into();
    metadata.token_endpoint = "https://as.test/token".into();
    metadata.registration_endpoint = registration.map(str::to_owned);
    metadata
}

fn known<'a>(
    source: AuthorizationMetadataSource,
    metadata: &'a AuthorizationMetadata,
    client: Client,
) -> Known<'a> {
    Known {
        server: "web",
        source: Some(source),
        metadata: Some(metadata),
        client,
    }
}

/// rmcp's error for a failed registration, as it nests it.
fn registration_failed() -> AuthError {
    AuthError::RegistrationFailed(
        "Dynamic registration failed: Registration failed: HTTP 404 Not Found: not found".into(),
    )
}

/// Asserts the rule every login failure keeps: one sentence, naming the server, with
/// what to do, and nothing of rmcp's own text.
fn assert_one_sentence(error: &LoginError) -> String {
    let text = error.to_string();
    assert!(text.contains("server `web`"), "{text}");
    assert!(text.ends_with(')'), "what to do closes it: {text}");
    assert!(std::error::Error::source(error).is_none(), "{text}");
    for rmcp in [
        "Registration failed",
        "Dynamic registration",
        "HTTP 404",
        "OAuth token exchange failed",
        "OAuth metadata discovery failed",
        "Internal error",
    ] {
        assert!(!text.contains(rmcp), "`{rmcp}` in: {text}");
    }
    text
}

#[test]
fn a_server_without_metadata_says_so_and_names_the_settings_that_help() {
    let metadata = metadata(Some("http://127.0.0.1:9/register"));
    let known = known(
        AuthorizationMetadataSource::LegacyEndpointFallback,
        &metadata,
        Client::Registers,
    );
    let error = known.session(registration_failed());
    assert_eq!(error.step(), Some(LoginStep::Registration));
    assert_eq!(
        assert_one_sentence(&error),
        "cannot log in to server `web`: it publishes no OAuth metadata, and registering a client at its default endpoint `http://127.0.0.1:9/register` failed (if the server takes a fixed token, name its variable with `bearer_token_env_var`; if it has a pre-registered OAuth client, set `oauth.client_id`)"
    );
}

#[test]
fn a_failed_registration_names_the_endpoint_and_the_pre_registered_client() {
    let with = metadata(Some("https://as.test/register?x=1"));
    let error = known(
        AuthorizationMetadataSource::ProtectedResourceMetadata,
        &with,
        Client::Registers,
    )
    .session(registration_failed());
    assert_eq!(
        assert_one_sentence(&error),
        "cannot log in to server `web`: registering a client at `https://as.test/register?x=*****` failed (register a client with its authorization server, then set `oauth.client_id`, and `oauth.client_secret_env_var` for a confidential one)"
    );
    let without = metadata(None);
    let error = known(
        AuthorizationMetadataSource::AuthorizationServerMetadata,
        &without,
        Client::Registers,
    )
    .session(AuthError::RegistrationFailed(
        "Dynamic client registration not supported".into(),
    ));
    let text = assert_one_sentence(&error);
    assert!(
        text.contains("its authorization server offers no client registration"),
        "{text}"
    );
    let document = known(
        AuthorizationMetadataSource::AuthorizationServerMetadata,
        &without,
        Client::MetadataDocument,
    )
    .session(AuthError::RegistrationFailed(
        "client_metadata_url must be …".into(),
    ));
    assert!(
        assert_one_sentence(&document).contains("`oauth.client_metadata_url`"),
        "{document}"
    );
}

#[test]
fn each_step_says_what_failed_in_its_own_words() {
    let metadata = metadata(Some("https://as.test/register"));
    let known = known(
        AuthorizationMetadataSource::ProtectedResourceMetadata,
        &metadata,
        Client::Configured { secret: false },
    );
    let url = url::Url::parse("https://as.test/.well-known/oauth-authorization-server").unwrap();
    let cases = [
        (
            known.discovery(AuthError::DiscoveryRequestFailed {
                url: url.clone(),
                source: Box::new(std::io::Error::other("refused")),
            }),
            LoginStep::Discovery,
            "`https://as.test/.well-known/oauth-authorization-server` cannot be fetched",
        ),
        (
            known.discovery(AuthError::ProtectedResourceMetadataInvalid {
                url: url.clone(),
                reason: Box::new(ProtectedResourceMetadataInvalidReason::MissingResource),
            }),
            LoginStep::Discovery,
            "it has no `resource`",
        ),
        (
            known.discovery(AuthError::AuthorizationServersUnavailable {
                resource_metadata_url: url,
                authorization_servers: vec!["https://as.test".into()],
            }),
            LoginStep::Discovery,
            "none of its authorization servers (`https://as.test`)",
        ),
        (
            known.session(AuthError::PkceUnsupported),
            LoginStep::Authorization,
            "PKCE with `S256`",
        ),
        (
            known.refused("access_denied", Some("the user\nsaid no")),
            LoginStep::Authorization,
            "refused the authorization: `access_denied` (the user\\nsaid no) (run the login again, and approve it",
        ),
        (
            known.exchange(AuthError::TokenExchangeFailed(
                "Server returned error response: invalid_client".into(),
            )),
            LoginStep::Token,
            "exchanging the authorization code for tokens at `https://as.test/token` failed (check `oauth.client_id`; a confidential client also needs `oauth.client_secret_env_var`",
        ),
        (
            known.exchange(AuthError::AuthorizationServerMismatch {
                expected_issuer: "https://as.test".into(),
                received_issuer: "https://evil.test".into(),
            }),
            LoginStep::Authorization,
            "its `iss` is not that server's issuer",
        ),
        (
            known.exchange(AuthError::AuthorizationFailed(
                "Authorization callback missing state".into(),
            )),
            LoginStep::Authorization,
            "`code` or `state` is missing or unknown",
        ),
    ];
    for (error, step, part) in cases {
        assert_eq!(error.step(), Some(step), "{error}");
        let text = assert_one_sentence(&error);
        assert!(text.contains(part), "expected `{part}` in: {text}");
    }
}

#[test]
fn the_token_exchange_never_shows_what_the_authorization_server_answered() {
    let metadata = metadata(None);
    let known = known(
        AuthorizationMetadataSource::AuthorizationServerMetadata,
        &metadata,
        Client::Registers,
    );
    let error = known.exchange(AuthError::TokenExchangeFailed(
        "Parse error: {\"error\":\"invalid_grant\",\"echo\":\"code_s3cr3t\"}".into(),
    ));
    let text = assert_one_sentence(&error);
    assert!(!text.contains("s3cr3t"), "{text}");
    let unknown = known.exchange(AuthError::InternalError("state s3cr3t".into()));
    let text = assert_one_sentence(&unknown);
    assert!(
        text.contains("(`InternalError`)") && !text.contains("s3cr3t"),
        "{text}"
    );
}

#[test]
fn a_store_failure_names_the_server_and_keeps_its_cause_once_in_the_store_s_words() {
    let error = LoginError::store(
        "web",
        AuthError::CredentialStoreError("the keyring is locked".into()),
    );
    assert_eq!(
        error.to_string(),
        "cannot log in to server `web`: its login cannot be read or kept (check `mcp_oauth_credentials_store`, and that the keyring or the token file can be used)"
    );
    let cause = std::error::Error::source(&error).map(ToString::to_string);
    assert_eq!(cause.as_deref(), Some("the keyring is locked"));
    assert_eq!(
        crate::error::chain(&error),
        "cannot log in to server `web`: its login cannot be read or kept (check `mcp_oauth_credentials_store`, and that the keyring or the token file can be used): the keyring is locked",
        "a program printing the chain stops at the store's words"
    );
    // Another kind of error from a host's store is named, not quoted.
    let other = LoginError::store("web", AuthError::InternalError("s3cr3t".into()));
    assert_eq!(
        std::error::Error::source(&other).map(ToString::to_string),
        Some("the token store failed (`InternalError`)".to_owned())
    );
}

#[test]
fn no_redirect_from_an_assumed_endpoint_says_the_endpoint_may_not_exist() {
    let wait = std::time::Duration::from_secs(5);
    let metadata = metadata(None);
    let assumed = known(
        AuthorizationMetadataSource::LegacyEndpointFallback,
        &metadata,
        Client::Configured { secret: false },
    );
    let error = assumed.timed_out(wait);
    assert_eq!(error.step(), Some(LoginStep::Authorization));
    assert!(
        assert_one_sentence(&error).contains(
            "no authorization came back within 5s, and as it publishes no OAuth metadata, its assumed authorization endpoint `https://as.test/authorize` may not exist"
        ),
        "{error}"
    );
    let discovered = known(
        AuthorizationMetadataSource::ProtectedResourceMetadata,
        &metadata,
        Client::Registers,
    );
    assert_eq!(
        discovered.timed_out(wait).to_string(),
        "the login to server `web` was not completed within 5s (run the login again, and finish it in the browser)"
    );
}

#[cfg(feature = "tls")]
#[test]
fn a_refused_certificate_of_the_authorization_server_says_the_verifiers_reason() {
    let metadata = metadata(None);
    let known = known(
        AuthorizationMetadataSource::ProtectedResourceMetadata,
        &metadata,
        Client::Registers,
    );
    // As the HTTP client reports it: the TLS error inside an I/O error.
    let refused = std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
    );
    let error = known.discovery(AuthError::DiscoveryRequestFailed {
        url: url::Url::parse("https://as.test/.well-known/oauth-authorization-server").unwrap(),
        source: Box::new(std::io::Error::other(refused)),
    });
    assert_eq!(
        assert_one_sentence(&error),
        "cannot log in to server `web`: discovering its OAuth metadata failed: `https://as.test/.well-known/oauth-authorization-server` presented a TLS certificate that is not trusted (`UnknownIssuer`) (a login trusts the system's CAs and those of `SSL_CERT_FILE`, not `ca_certificate`: name the CA that issued it with `SSL_CERT_FILE`)"
    );
}
