//! The fixture's OAuth authorization server (`--require-oauth`), driven by hand
//! with plain HTTP requests, as an OAuth client would.

use std::path::Path;

use mcp_runtime_fixtures::oauth::pkce_challenge;
use reqwest::{StatusCode, header};
use serde_json::{Value, json};

use crate::support::*;

const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "the-verifier-of-this-test-is-long-enough-0123456789";

/// A protected fixture and an HTTP client that does not follow redirects.
struct Protected {
    fixture: HttpFixture,
    origin: String,
    http: reqwest::Client,
}

async fn protected(args: &[&str]) -> Protected {
    let fixture = http_fixture(&[&["--require-oauth"], args].concat()).await;
    let origin = fixture.url.strip_suffix("/mcp").unwrap().to_owned();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    Protected {
        fixture,
        origin,
        http,
    }
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

async fn json_of(response: reqwest::Response) -> Value {
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

impl Protected {
    async fn get_json(&self, url: &str) -> Value {
        let response = self.http.get(url).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{url}");
        json_of(response).await
    }

    async fn post_form(&self, path: &str, pairs: &[(&str, &str)]) -> reqwest::Response {
        self.post_form_as(path, pairs, None).await
    }

    /// POST a form, with HTTP Basic client authentication when `basic` is given.
    async fn post_form_as(
        &self,
        path: &str,
        pairs: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}{path}", self.origin))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form(pairs));
        if let Some((id, secret)) = basic {
            request = request.basic_auth(id, Some(secret));
        }
        request.send().await.unwrap()
    }

    /// An MCP `initialize` POST with `token` as bearer, if any.
    async fn initialize(&self, token: Option<&str>) -> reqwest::Response {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "oauth-test", "version": "0" },
            },
        });
        let mut request = self
            .http
            .post(&self.fixture.url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.unwrap()
    }

    /// Dynamic registration of a public client; its id.
    async fn register(&self) -> String {
        let response = self
            .http
            .post(format!("{}/register", self.origin))
            .header(header::CONTENT_TYPE, "application/json")
            .body(
                json!({
                    "client_name": "oauth-test",
                    "redirect_uris": [REDIRECT],
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                })
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        let client = json_of(response).await;
        assert_eq!(client["redirect_uris"], json!([REDIRECT]));
        assert!(client.get("client_secret").is_none(), "{client}");
        client["client_id"].as_str().unwrap().to_owned()
    }

    /// `/authorize` for `client` with the test's PKCE challenge: the code of
    /// the redirect, after checking `state` and `iss`.
    async fn authorize(&self, client: &str) -> String {
        let challenge = pkce_challenge(VERIFIER);
        let query = form(&[
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("resource", &self.fixture.url),
            ("scope", "mcp offline_access"),
            ("state", "xyz"),
        ]);
        let response = self
            .http
            .get(format!("{}/authorize?{query}", self.origin))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
        let location = response.headers()[header::LOCATION].to_str().unwrap();
        let location = url::Url::parse(location).unwrap();
        assert_eq!(location.path(), "/callback");
        let pairs: std::collections::BTreeMap<_, _> = location.query_pairs().into_owned().collect();
        assert_eq!(pairs["state"], "xyz");
        assert_eq!(pairs["iss"], self.origin);
        pairs["code"].clone()
    }

    async fn exchange(&self, client: &str, code: &str, verifier: &str) -> reqwest::Response {
        self.post_form(
            "/token",
            &[
                ("grant_type", "authorization_code"),
                ("client_id", client),
                ("code", code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", verifier),
                ("resource", &self.fixture.url),
            ],
        )
        .await
    }

    /// Register, authorize and exchange: the client id and token response.
    async fn login(&self) -> (String, Value) {
        let client = self.register().await;
        let code = self.authorize(&client).await;
        let response = self.exchange(&client, &code, VERIFIER).await;
        assert_eq!(response.status(), StatusCode::OK);
        (client, json_of(response).await)
    }
}

fn token<'a>(tokens: &'a Value, name: &str) -> &'a str {
    tokens[name].as_str().unwrap()
}

fn oauth_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test]
async fn the_code_flow_with_pkce_reaches_the_mcp_endpoint() {
    let server = protected(&["--oauth-account", "alice"]).await;

    // Discovery, as a client starts it: the challenge, then both metadata.
    let challenge = server.initialize(None).await;
    assert_eq!(challenge.status(), StatusCode::UNAUTHORIZED);
    let prm_url = format!("{}/.well-known/oauth-protected-resource/mcp", server.origin);
    assert_eq!(
        challenge.headers()[header::WWW_AUTHENTICATE],
        format!("Bearer resource_metadata=\"{prm_url}\", scope=\"mcp\"").as_str()
    );
    let prm = server.get_json(&prm_url).await;
    assert_eq!(prm["resource"], server.fixture.url);
    assert_eq!(prm["authorization_servers"], json!([server.origin]));
    assert_eq!(prm["scopes_supported"], json!(["mcp", "offline_access"]));
    let metadata = server
        .get_json(&format!(
            "{}/.well-known/oauth-authorization-server",
            server.origin
        ))
        .await;
    assert_eq!(metadata["issuer"], server.origin);
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );
    assert_eq!(
        metadata["authorization_response_iss_parameter_supported"],
        true
    );
    for endpoint in [
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "revocation_endpoint",
    ] {
        assert!(
            metadata[endpoint]
                .as_str()
                .unwrap()
                .starts_with(&server.origin),
            "{metadata}"
        );
    }

    let (_, tokens) = server.login().await;
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3600);
    assert_eq!(tokens["scope"], "mcp offline_access");
    // The account is named as OpenID Connect names it: the `sub` of an ID token.
    let id_token = tokens["id_token"].as_str().unwrap();
    let payload = id_token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["iss"], server.origin);
    assert!(tokens["refresh_token"].is_string());

    let answer = server
        .initialize(Some(token(&tokens, "access_token")))
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let body = answer.text().await.unwrap();
    assert!(body.contains("\"serverInfo\""), "{body}");
}

#[tokio::test]
async fn a_wrong_verifier_is_invalid_grant() {
    let server = protected(&[]).await;
    let client = server.register().await;
    let code = server.authorize(&client).await;
    let response = server
        .exchange(
            &client,
            &code,
            "another-verifier-that-is-also-long-enough-0123",
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(response).await["error"], "invalid_grant");
}

#[tokio::test]
async fn an_expired_token_is_401_invalid_token() {
    let server = protected(&["--oauth-token-ttl-secs", "0"]).await;
    let (_, tokens) = server.login().await;
    assert_eq!(tokens["expires_in"], 0);
    let answer = server
        .initialize(Some(token(&tokens, "access_token")))
        .await;
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    let challenge = answer.headers()[header::WWW_AUTHENTICATE].to_str().unwrap();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
}

#[tokio::test]
async fn a_refresh_rotates_both_tokens_and_is_logged() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let server = protected(&["--oauth-log", path_str(&log)]).await;
    let (client, tokens) = server.login().await;
    let refresh = |refresh_token: String| {
        let client = client.clone();
        let server = &server;
        async move {
            server
                .post_form(
                    "/token",
                    &[
                        ("grant_type", "refresh_token"),
                        ("client_id", &client),
                        ("refresh_token", &refresh_token),
                    ],
                )
                .await
        }
    };
    let refreshed = refresh(token(&tokens, "refresh_token").into()).await;
    assert_eq!(refreshed.status(), StatusCode::OK);
    let refreshed = json_of(refreshed).await;
    assert_ne!(refreshed["access_token"], tokens["access_token"]);
    assert_ne!(refreshed["refresh_token"], tokens["refresh_token"]);
    let answer = server
        .initialize(Some(token(&refreshed, "access_token")))
        .await;
    assert_eq!(answer.status(), StatusCode::OK);

    let reused = refresh(token(&tokens, "refresh_token").into()).await;
    assert_eq!(reused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(reused).await["error"], "invalid_grant");

    let log = oauth_log(&log);
    let refreshes: Vec<_> = log
        .iter()
        .filter(|line| line["grant_type"] == "refresh_token")
        .map(|line| {
            (
                line["client_id"].as_str().unwrap(),
                line["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        refreshes,
        [(client.as_str(), "ok"), (client.as_str(), "invalid_grant")]
    );
    assert_eq!(
        log.iter()
            .filter(|line| line["endpoint"] == "/register")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_revoked_token_is_401() {
    let server = protected(&[]).await;
    let (client, tokens) = server.login().await;
    let access = token(&tokens, "access_token");
    assert_eq!(
        server.initialize(Some(access)).await.status(),
        StatusCode::OK
    );
    let revoked = server
        .post_form(
            "/revoke",
            &[
                ("client_id", &client),
                ("token", access),
                ("token_type_hint", "access_token"),
            ],
        )
        .await;
    assert_eq!(revoked.status(), StatusCode::OK);
    assert_eq!(
        server.initialize(Some(access)).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a_token_without_the_required_scope_is_403_insufficient_scope() {
    let server = protected(&[
        "--oauth-scope",
        "mcp:tools",
        "--oauth-client",
        "robot:robot-secret",
    ])
    .await;
    let response = server
        .post_form_as(
            "/token",
            &[
                ("grant_type", "client_credentials"),
                ("scope", "offline_access"),
            ],
            Some(("robot", "robot-secret")),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let tokens = json_of(response).await;
    let answer = server
        .initialize(Some(token(&tokens, "access_token")))
        .await;
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    let challenge = answer.headers()[header::WWW_AUTHENTICATE].to_str().unwrap();
    assert!(
        challenge.contains("scope=\"mcp:tools\", error=\"insufficient_scope\""),
        "{challenge}"
    );
}

#[tokio::test]
async fn client_credentials_work_with_basic_and_post_and_only_with_the_secret() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let server = protected(&[
        "--oauth-client",
        "robot:robot-secret",
        "--oauth-log",
        path_str(&log),
    ])
    .await;
    let grant = [("grant_type", "client_credentials")];
    let basic = server
        .post_form_as("/token", &grant, Some(("robot", "robot-secret")))
        .await;
    assert_eq!(basic.status(), StatusCode::OK);
    let basic = json_of(basic).await;
    assert!(basic.get("refresh_token").is_none(), "{basic}");
    let post = server
        .post_form(
            "/token",
            &[
                ("grant_type", "client_credentials"),
                ("client_id", "robot"),
                ("client_secret", "robot-secret"),
                ("resource", &server.fixture.url),
            ],
        )
        .await;
    assert_eq!(post.status(), StatusCode::OK);
    let post = json_of(post).await;
    for tokens in [&basic, &post] {
        let answer = server.initialize(Some(token(tokens, "access_token"))).await;
        assert_eq!(answer.status(), StatusCode::OK);
    }
    let wrong = server
        .post_form_as("/token", &grant, Some(("robot", "not-the-secret")))
        .await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(json_of(wrong).await["error"], "invalid_client");

    let methods: Vec<_> = oauth_log(&log)
        .iter()
        .map(|line| line["auth_method"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        methods,
        [
            "client_secret_basic",
            "client_secret_post",
            "client_secret_basic"
        ]
    );
    let text = std::fs::read_to_string(&log).unwrap();
    for secret in [
        "robot-secret",
        "not-the-secret",
        token(&basic, "access_token"),
        token(&post, "access_token"),
    ] {
        assert!(!text.contains(secret), "`{secret}` in {text}");
    }
}

#[tokio::test]
async fn the_message_log_shows_a_fingerprint_of_the_access_token() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = protected(&["--log", path_str(&log)]).await;
    let (_, tokens) = server.login().await;
    let access = token(&tokens, "access_token");
    assert_eq!(
        server.initialize(Some(access)).await.status(),
        StatusCode::OK
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(access), "{text}");
    let entries = read_log(&log);
    assert_eq!(
        entries.last().unwrap()["http_headers"]["authorization"],
        mcp_runtime_fixtures::oauth::redact_authorization(&format!("Bearer {access}"))
    );
}

#[tokio::test]
async fn only_the_configured_client_authentication_is_advertised_and_accepted() {
    let server = protected(&[
        "--oauth-client",
        "robot:robot-secret",
        "--oauth-auth-method",
        "client_secret_basic",
    ])
    .await;
    let metadata = server
        .get_json(&format!(
            "{}/.well-known/oauth-authorization-server",
            server.origin
        ))
        .await;
    assert_eq!(
        metadata["token_endpoint_auth_methods_supported"],
        json!(["client_secret_basic"])
    );
    let post = server
        .post_form(
            "/token",
            &[
                ("grant_type", "client_credentials"),
                ("client_id", "robot"),
                ("client_secret", "robot-secret"),
            ],
        )
        .await;
    assert_eq!(post.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(json_of(post).await["error"], "invalid_client");
    let basic = server
        .post_form_as(
            "/token",
            &[("grant_type", "client_credentials")],
            Some(("robot", "robot-secret")),
        )
        .await;
    assert_eq!(basic.status(), StatusCode::OK);
}
