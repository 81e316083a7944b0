//! The authorization server's invariants, with the clock as an argument.

use super::*;

const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

fn server(config: Config, log: Option<File>) -> AuthServer {
    AuthServer::new(config, "http://127.0.0.1:1", "/mcp", log)
}

fn post(server: &AuthServer, path: &str, form: &[(&str, &str)], now: Instant) -> Response<String> {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    server.answer(
        &Method::POST,
        path,
        None,
        &HeaderMap::new(),
        body.as_bytes(),
        now,
    )
}

fn json_of(response: &Response<String>) -> Value {
    serde_json::from_str(response.body()).unwrap()
}

fn register(server: &AuthServer) -> String {
    let body = json!({ "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none" });
    let response = server.answer(
        &Method::POST,
        REGISTER_PATH,
        None,
        &HeaderMap::new(),
        body.to_string().as_bytes(),
        Instant::now(),
    );
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{}",
        response.body()
    );
    json_of(&response)["client_id"].as_str().unwrap().into()
}

/// The query of the redirect `/authorize` answers with.
fn authorize(
    server: &AuthServer,
    client: &str,
    extra: &[(&str, &str)],
) -> BTreeMap<String, String> {
    let challenge = pkce_challenge(VERIFIER);
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("resource", "http://127.0.0.1:1/mcp"),
        ("state", "s-1"),
    ];
    pairs.retain(|(name, _)| !extra.iter().any(|(other, _)| other == name));
    pairs.extend(extra.iter().filter(|(_, value)| !value.is_empty()));
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let response = server.answer(
        &Method::GET,
        AUTHORIZE_PATH,
        Some(&query),
        &HeaderMap::new(),
        b"",
        Instant::now(),
    );
    assert_eq!(response.status(), StatusCode::FOUND, "{}", response.body());
    let location = response.headers()[header::LOCATION].to_str().unwrap();
    let location = url::Url::parse(location).unwrap();
    assert!(location.as_str().starts_with(REDIRECT), "{location}");
    location.query_pairs().into_owned().collect()
}

fn exchange(server: &AuthServer, client: &str, code: &str, now: Instant) -> Response<String> {
    post(
        server,
        TOKEN_PATH,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", client),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", "http://127.0.0.1:1/mcp"),
        ],
        now,
    )
}

/// Register, authorize and exchange: the token response.
fn login(server: &AuthServer, now: Instant) -> (String, Value) {
    let client = register(server);
    let code = authorize(server, &client, &[]).remove("code").unwrap();
    let response = exchange(server, &client, &code, now);
    assert_eq!(response.status(), StatusCode::OK, "{}", response.body());
    (client, json_of(&response))
}

fn bearer(token: &Value) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let value = format!("Bearer {}", token.as_str().unwrap());
    headers.insert(header::AUTHORIZATION, value.parse().unwrap());
    headers
}

fn status_of(result: Result<(), Box<Response<String>>>) -> StatusCode {
    result
        .err()
        .map_or(StatusCode::OK, |response| response.status())
}

#[test]
fn the_redirect_carries_code_state_and_issuer() {
    let server = server(Config::default(), None);
    let client = register(&server);
    let query = authorize(&server, &client, &[]);
    assert!(query["code"].starts_with("code_"));
    assert_eq!(query["state"], "s-1");
    assert_eq!(query["iss"], "http://127.0.0.1:1");
}

#[test]
fn a_code_is_exchanged_at_most_once_and_its_reuse_revokes_the_grant() {
    let server = server(Config::default(), None);
    let now = Instant::now();
    let client = register(&server);
    let code = authorize(&server, &client, &[]).remove("code").unwrap();
    let tokens = json_of(&exchange(&server, &client, &code, now));
    assert_eq!(
        status_of(server.authorize_resource(&bearer(&tokens["access_token"]), now)),
        StatusCode::OK
    );

    let again = exchange(&server, &client, &code, now);
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(&again)["error"], "invalid_grant");
    assert_eq!(
        status_of(server.authorize_resource(&bearer(&tokens["access_token"]), now)),
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn a_refresh_token_is_used_at_most_once() {
    let server = server(Config::default(), None);
    let now = Instant::now();
    let (client, tokens) = login(&server, now);
    let refresh = |token: &Value| {
        post(
            &server,
            TOKEN_PATH,
            &[
                ("grant_type", "refresh_token"),
                ("client_id", &client),
                ("refresh_token", token.as_str().unwrap()),
            ],
            now,
        )
    };
    let first = refresh(&tokens["refresh_token"]);
    assert_eq!(first.status(), StatusCode::OK, "{}", first.body());
    let rotated = json_of(&first);
    assert_ne!(rotated["refresh_token"], tokens["refresh_token"]);
    assert_ne!(rotated["access_token"], tokens["access_token"]);
    assert_eq!(rotated["scope"], "mcp");

    let reused = refresh(&tokens["refresh_token"]);
    assert_eq!(json_of(&reused)["error"], "invalid_grant");
    assert_eq!(refresh(&rotated["refresh_token"]).status(), StatusCode::OK);
}

#[test]
fn an_access_token_is_refused_from_its_expiry_on() {
    let config = Config {
        token_ttl: Duration::from_secs(60),
        ..Config::default()
    };
    let server = server(config, None);
    let now = Instant::now();
    let (_, tokens) = login(&server, now);
    assert_eq!(tokens["expires_in"], 60);
    let headers = bearer(&tokens["access_token"]);
    let just_before = now + Duration::from_secs(60) - Duration::from_millis(1);
    assert_eq!(
        status_of(server.authorize_resource(&headers, just_before)),
        StatusCode::OK
    );
    let refused = server
        .authorize_resource(&headers, now + Duration::from_secs(60))
        .unwrap_err();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let challenge = refused.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
}

#[test]
fn revoking_a_refresh_token_revokes_the_access_tokens_of_its_grant() {
    let server = server(Config::default(), None);
    let now = Instant::now();
    let (client, tokens) = login(&server, now);
    let revoked = post(
        &server,
        REVOKE_PATH,
        &[
            ("client_id", &client),
            ("token", tokens["refresh_token"].as_str().unwrap()),
        ],
        now,
    );
    assert_eq!(revoked.status(), StatusCode::OK);
    assert_eq!(
        status_of(server.authorize_resource(&bearer(&tokens["access_token"]), now)),
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn a_token_without_the_required_scope_is_403_naming_the_scope() {
    let server = server(Config::default(), None);
    let now = Instant::now();
    let client = register(&server);
    let code = authorize(&server, &client, &[("scope", "offline_access")])
        .remove("code")
        .unwrap();
    let tokens = json_of(&exchange(&server, &client, &code, now));
    assert_eq!(tokens["scope"], "offline_access");
    let refused = server
        .authorize_resource(&bearer(&tokens["access_token"]), now)
        .unwrap_err();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        refused.headers()[header::WWW_AUTHENTICATE],
        "Bearer resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp\", \
         scope=\"mcp\", error=\"insufficient_scope\""
    );
}

#[test]
fn without_a_required_scope_the_challenge_names_none() {
    let config = Config {
        scope: String::new(),
        ..Config::default()
    };
    let server = server(config, None);
    let refused = server
        .authorize_resource(&HeaderMap::new(), Instant::now())
        .unwrap_err();
    assert_eq!(
        refused.headers()[header::WWW_AUTHENTICATE],
        "Bearer resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp\""
    );
}

#[test]
fn authorization_errors_after_the_client_check_go_to_the_redirect_uri() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let server = server(Config::default(), Some(log.reopen().unwrap()));
    let client = register(&server);
    let cases = [
        (("code_challenge", ""), "invalid_request"),
        (("code_challenge_method", "plain"), "invalid_request"),
        (("resource", "http://elsewhere/mcp"), "invalid_target"),
        (("scope", "admin"), "invalid_scope"),
    ];
    for (extra, error) in cases {
        let query = authorize(&server, &client, &[extra]);
        assert_eq!(query["error"], error, "{extra:?}");
        assert_eq!(query["state"], "s-1");
        assert!(!query.contains_key("code"));
    }
    let logged: Vec<Value> = std::fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let outcomes: Vec<_> = logged.iter().map(|line| line["outcome"].clone()).collect();
    let errors: Vec<_> = cases.iter().map(|(_, error)| json!(error)).collect();
    assert_eq!(outcomes, errors);
}

#[test]
fn every_required_scope_must_be_granted() {
    let config = Config {
        scope: "read write".into(),
        ..Config::default()
    };
    let server = server(config, None);
    let now = Instant::now();
    let client = register(&server);
    for (requested, status) in [
        ("read", StatusCode::FORBIDDEN),
        ("read write", StatusCode::OK),
    ] {
        let code = authorize(&server, &client, &[("scope", requested)])
            .remove("code")
            .unwrap();
        let tokens = json_of(&exchange(&server, &client, &code, now));
        let headers = bearer(&tokens["access_token"]);
        assert_eq!(status_of(server.authorize_resource(&headers, now)), status);
    }
}

#[test]
fn an_unregistered_redirect_uri_is_never_redirected_to() {
    let server = server(Config::default(), None);
    let client = register(&server);
    let query = format!(
        "response_type=code&client_id={client}&redirect_uri=http%3A%2F%2Fevil%2Fcb&code_challenge=x&code_challenge_method=S256"
    );
    let response = server.answer(
        &Method::GET,
        AUTHORIZE_PATH,
        Some(&query),
        &HeaderMap::new(),
        b"",
        Instant::now(),
    );
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(!response.headers().contains_key(header::LOCATION));
}

#[test]
fn a_refresh_may_narrow_but_not_widen_the_scope() {
    let server = server(Config::default(), None);
    let now = Instant::now();
    let client = register(&server);
    let code = authorize(&server, &client, &[("scope", "mcp")])
        .remove("code")
        .unwrap();
    let tokens = json_of(&exchange(&server, &client, &code, now));
    let widened = post(
        &server,
        TOKEN_PATH,
        &[
            ("grant_type", "refresh_token"),
            ("client_id", &client),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("scope", "mcp offline_access"),
        ],
        now,
    );
    assert_eq!(json_of(&widened)["error"], "invalid_scope");
}

#[test]
fn no_secret_reaches_the_log_an_error_or_debug_output() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let config = Config {
        clients: vec!["machine:s3cret-value".parse().unwrap()],
        ..Config::default()
    };
    let server = server(config, Some(log.reopen().unwrap()));
    let now = Instant::now();
    let (client, tokens) = login(&server, now);
    let machine = post(
        &server,
        TOKEN_PATH,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", "machine"),
            ("client_secret", "s3cret-value"),
        ],
        now,
    );
    let machine = json_of(&machine);
    let mut answers = vec![
        post(
            &server,
            TOKEN_PATH,
            &[
                ("grant_type", "client_credentials"),
                ("client_id", "machine"),
                ("client_secret", "wrong-s3cret"),
            ],
            now,
        ),
        post(
            &server,
            TOKEN_PATH,
            &[
                ("grant_type", "refresh_token"),
                ("client_id", &client),
                ("refresh_token", "rt_not-a-real-one"),
            ],
            now,
        ),
        exchange(&server, &client, "code_not-a-real-one", now),
    ];
    answers.push(
        *server
            .authorize_resource(&bearer(&json!("at_not-a-real-one")), now)
            .unwrap_err(),
    );
    let mut seen = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(seen.lines().count(), 7, "{seen}");
    for answer in &answers {
        seen.push_str(answer.body());
        seen.push_str(&format!("{:?}", answer.headers()));
    }
    seen.push_str(&format!("{server:?}"));
    for secret in [
        tokens["access_token"].as_str().unwrap(),
        tokens["refresh_token"].as_str().unwrap(),
        machine["access_token"].as_str().unwrap(),
        "s3cret-value",
        "wrong-s3cret",
        "rt_not-a-real-one",
        "code_not-a-real-one",
        "at_not-a-real-one",
        VERIFIER,
    ] {
        assert!(!seen.contains(secret), "`{secret}` leaked into {seen}");
    }
    assert!(seen.contains("\"client_id\":\"machine\""), "{seen}");
}
