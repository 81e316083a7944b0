use rmcp::transport::auth::{InMemoryCredentialStore, OAuthTokenResponse};

use super::*;

#[tokio::test]
async fn a_server_with_nothing_stored_is_reached_without_oauth() {
    // The URL is never contacted: nothing is discovered for a server without a
    // login.
    let login = OAuthLogin::start(
        "web",
        "http://127.0.0.1:9/mcp",
        &OAuthStore::new(Arc::new(InMemoryCredentialStore::new())),
        reqwest::Client::new(),
    )
    .await
    .unwrap();
    assert!(login.is_none());
}

#[test]
fn a_refused_login_says_a_new_login_is_needed_naming_no_command() {
    assert_eq!(
        HttpFailure::NeedsLogin {
            server: "github".into()
        }
        .to_string(),
        "server `github` needs a new login"
    );
}

fn stored(expires_in: Option<u64>, received_at: u64) -> StoredCredentials {
    let mut token = serde_json::json!({"access_token": "at_1", "token_type": "bearer"});
    if let Some(expires_in) = expires_in {
        token["expires_in"] = expires_in.into();
    }
    let token: OAuthTokenResponse = serde_json::from_value(token).unwrap();
    StoredCredentials::new("c".into(), Some(token), Vec::new(), Some(received_at))
}

#[test]
fn a_token_is_renewed_before_rmcp_would_refresh_it() {
    // An hour-long token received at 1000: fresh until 60 s before its expiry,
    // earlier than rmcp's 30 s.
    let hour = stored(Some(3600), 1000);
    assert_eq!(fresh(&hour, 1000 + 3539).as_deref(), Some("at_1"));
    assert_eq!(fresh(&hour, 1000 + 3541), None);
    assert_eq!(fresh(&hour, 1000 + 3600 - 30), None);
    // A 40 s token: half its lifetime.
    let short = stored(Some(40), 1000);
    assert_eq!(fresh(&short, 1019).as_deref(), Some("at_1"));
    assert_eq!(fresh(&short, 1021), None);
    // Expired at once.
    assert_eq!(fresh(&stored(Some(0), 1000), 1000), None);
    // No known expiry: used as it is.
    assert_eq!(
        fresh(&stored(None, 1000), u64::MAX).as_deref(),
        Some("at_1")
    );
}

/// A fake authorization server on loopback: its RFC 8414 metadata (Basic
/// authentication only), and a token endpoint that refreshes only for client
/// `conf` authenticating with secret `s3cr3t`. Returns its origin and the
/// `Authorization` header of each token request.
async fn authorization_server() -> (String, Arc<std::sync::Mutex<Vec<Option<String>>>>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let metadata = serde_json::json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    })
    .to_string();
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "conf:s3cr3t")
    );
    let requests = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut chunk = [0u8; 4096];
            // Headers, then the body its `Content-Length` announces.
            let (head, length) = loop {
                let read = stream.read(&mut chunk).await.unwrap();
                request.extend_from_slice(&chunk[..read]);
                let text = String::from_utf8_lossy(&request).into_owned();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|line| {
                            let (name, value) = line.split_once(':')?;
                            name.eq_ignore_ascii_case("content-length")
                                .then(|| value.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    break (text[..end].to_owned(), end + 4 + length);
                }
            };
            while request.len() < length {
                let read = stream.read(&mut chunk).await.unwrap();
                request.extend_from_slice(&chunk[..read]);
            }
            let line = head.lines().next().unwrap_or_default().to_owned();
            let (status, body) = if line.starts_with("GET /.well-known/oauth-authorization-server ")
            {
                ("200 OK", metadata.clone())
            } else if line.starts_with("POST /token ") {
                let authorization = head.lines().find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("authorization")
                        .then(|| value.trim().to_owned())
                });
                let accepted = authorization.as_deref() == Some(basic.as_str());
                requests.lock().unwrap().push(authorization);
                if accepted {
                    let token = r#"{"access_token":"at_new","token_type":"bearer","expires_in":3600,"refresh_token":"rt_2"}"#;
                    ("200 OK", token.to_owned())
                } else {
                    (
                        "401 Unauthorized",
                        r#"{"error":"invalid_client"}"#.to_owned(),
                    )
                }
            } else {
                ("404 Not Found", "{}".to_owned())
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (origin, seen)
}

/// A login of client `conf` whose hour-long token was received two hours ago.
async fn stale_login() -> Arc<dyn CredentialStore> {
    let token: OAuthTokenResponse = serde_json::from_value(serde_json::json!({
        "access_token": "at_old",
        "token_type": "bearer",
        "expires_in": 3600,
        "refresh_token": "rt_1",
    }))
    .unwrap();
    let store = Arc::new(InMemoryCredentialStore::new());
    let received = now_epoch_secs() - 7200;
    store
        .save(StoredCredentials::new(
            "conf".into(),
            Some(token),
            Vec::new(),
            Some(received),
        ))
        .await
        .unwrap();
    store
}

#[tokio::test]
async fn a_confidential_client_refreshes_with_its_secret() {
    let (origin, seen) = authorization_server().await;
    let url = format!("{origin}/mcp");
    let confidential = ClientAuth {
        client_id: "conf".into(),
        credential: ClientCredential::Secret("s3cr3t".into()),
        variable: "CONF_SECRET".into(),
        machine: false,
        scopes: None,
        resource: None,
        _registered: Vec::new(),
    };
    let oauth = OAuthStore {
        store: stale_login().await,
        client: Some(confidential),
        resource: None,
    };
    let login = OAuthLogin::start("web", &url, &oauth, reqwest::Client::new())
        .await
        .unwrap()
        .expect("a stored login");
    assert_eq!(login.token().await.unwrap().as_deref(), Some("at_new"));
    assert_eq!(seen.lock().unwrap().len(), 1);

    // Without the secret (as rmcp's `initialize_from_store` leaves the client),
    // the authorization server refuses the refresh.
    let oauth = OAuthStore::new(stale_login().await);
    let login = OAuthLogin::start("web", &url, &oauth, reqwest::Client::new())
        .await
        .unwrap()
        .expect("a stored login");
    let error = login.token().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "server `web`'s OAuth login cannot be used: refreshing its access token failed without the authorization server refusing it (try again later, or log in again)"
    );
    assert_eq!(seen.lock().unwrap()[1], None, "no client authentication");
}

#[test]
fn client_auth_debug_shows_no_secret() {
    let auth = ClientAuth {
        client_id: "robot".into(),
        credential: ClientCredential::Secret("s3cr3t-value".into()),
        variable: "ROBOT_SECRET".into(),
        machine: true,
        scopes: None,
        resource: None,
        _registered: Vec::new(),
    };
    let key = ClientAuth {
        credential: ClientCredential::PrivateKey {
            pem: "-----BEGIN PRIVATE KEY-----\nMIGk\n".into(),
            algorithm: SigningAlgorithm::Es256,
        },
        ..auth.clone()
    };
    let debug = format!("{auth:?} {key:?}");
    assert!(!debug.contains("s3cr3t"), "{debug}");
    assert!(!debug.contains("MIGk"), "{debug}");
    assert!(debug.contains("ES256"), "{debug}");
}

#[test]
fn a_client_secret_or_key_is_read_from_its_variable_and_named_never_shown() {
    let mut oauth = OAuthConfig::default();
    assert!(
        resolve_oauth(&oauth, |_| None).unwrap().is_none(),
        "no client"
    );
    oauth.client_id = Some("robot".into());
    assert!(
        resolve_oauth(&oauth, |_| None).unwrap().is_none(),
        "a public pre-registered client"
    );
    oauth.client_secret_env_var = Some("ROBOT_SECRET".into());
    oauth.grant_type = GrantType::ClientCredentials;
    let error = resolve_oauth(&oauth, |_| Some(OsString::new())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "environment variable `ROBOT_SECRET` named by `oauth.client_secret_env_var` is not set or is empty"
    );
    let client = resolve_oauth(&oauth, |name| {
        (name == "ROBOT_SECRET").then(|| "s3cr3t-value".into())
    })
    .unwrap()
    .unwrap();
    assert!(client.machine);
    assert!(
        matches!(&client.credential, ClientCredential::Secret(secret) if secret == "s3cr3t-value")
    );
    assert!(!format!("{client:?}").contains("s3cr3t"));

    // A PEM key spans lines, which a header could not carry: it is never sent.
    oauth.client_secret_env_var = None;
    oauth.private_key_env_var = Some("ROBOT_KEY".into());
    oauth.signing_algorithm = SigningAlgorithm::Es384;
    let pem = "-----BEGIN PRIVATE KEY-----\nMIGk\n-----END PRIVATE KEY-----\n";
    let client = resolve_oauth(&oauth, |name| (name == "ROBOT_KEY").then(|| pem.into()))
        .unwrap()
        .unwrap();
    assert!(matches!(
        &client.credential,
        ClientCredential::PrivateKey { pem: read, algorithm: SigningAlgorithm::Es384 } if read == pem
    ));
    assert!(!format!("{client:?}").contains("MIGk"));
    let error = resolve_oauth(&oauth, |_| None).unwrap_err();
    assert_eq!(
        error.to_string(),
        "environment variable `ROBOT_KEY` named by `oauth.private_key_env_var` is not set or is empty"
    );
}

#[cfg(feature = "tls")]
#[test]
fn a_refused_certificate_of_the_authorization_server_says_the_verifiers_reason() {
    let refused = std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        rustls::Error::InvalidCertificate(rustls::CertificateError::Expired),
    );
    let error = AuthError::DiscoveryRequestFailed {
        url: url::Url::parse("https://as.test/.well-known/oauth-authorization-server").unwrap(),
        source: Box::new(refused),
    };
    assert_eq!(
        describe(&error),
        "its authorization server presented a TLS certificate that is not trusted (`Expired`): name the CA that issued it with `SSL_CERT_FILE` (`ca_certificate` does not reach the authorization server)"
    );
}
