//! OAuth end to end: a login through the library against the protected fixture and
//! its own authorization server (`--require-oauth`), then runtimes that use the
//! stored login: the token on every request, a refresh before expiry, and a new
//! login asked for once the authorization server refuses the stored one.

use std::{path::Path, sync::Arc};

use mcp_runtime::{
    ListingRegistry, Runtime, ServerConfig, ServerState, StartOptions,
    auth::{CredentialSource, CredentialStore, InMemoryCredentialStore},
    config::OAuthConfig,
    error::chain,
    login::Login,
};

use crate::support::*;

/// One store for every server: the tests have one.
struct OneStore(Arc<dyn CredentialStore>);

impl CredentialSource for OneStore {
    fn store_for(&self, _: &str, _: &str, _: &OAuthConfig) -> Arc<dyn CredentialStore> {
        self.0.clone()
    }
}

/// A protected fixture logging its authorization server's requests to `log`.
async fn protected(log: &Path, args: &[&str]) -> HttpFixture {
    let mut all = vec!["--require-oauth", "--oauth-log", path_str(log)];
    all.extend_from_slice(args);
    http_fixture(&all).await
}

async fn log_in(url: &str, store: &Arc<dyn CredentialStore>) -> mcp_runtime::login::LoginSummary {
    Login::new(&ServerConfig::http("web", url), store.clone())
        .run(&FollowRedirects)
        .await
        .expect("the login succeeds")
}

/// Starts the runtime with `store` as every server's token store, if given.
async fn start_web(url: &str, store: Option<&Arc<dyn CredentialStore>>) -> Runtime {
    let mut options = StartOptions::new()
        .wait_for_all()
        .with_listing_registry(ListingRegistry::new());
    if let Some(store) = store {
        options = options.with_credentials(Arc::new(OneStore(store.clone())));
    }
    Runtime::start(config([ServerConfig::http("web", url)]), options)
        .await
        .expect("start succeeds")
}

fn grants(log: &Path, grant_type: &str) -> usize {
    read_log(log)
        .iter()
        .filter(|entry| entry["endpoint"] == "/token" && entry["grant_type"] == grant_type)
        .count()
}

#[tokio::test]
async fn a_login_is_used_by_every_later_runtime_and_never_leaks_its_token() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let messages = dir.path().join("messages.jsonl");
    let fixture = protected(&log, &["--log", path_str(&messages)]).await;

    let without = start_web(&fixture.url, None).await;
    let status = &without.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    assert_eq!(status.auth, Some(mcp_runtime::AuthState::NeedsLogin));
    assert!(
        chain(status.error.as_ref().unwrap()).contains("answered HTTP 401"),
        "{:?}",
        status.error
    );
    without.shutdown().await;

    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    let summary = log_in(&fixture.url, &store).await;
    assert!(!summary.client_id.is_empty());
    assert!(summary.issuer.is_some());
    assert!(summary.expires_at.is_some());
    let token = store
        .load()
        .await
        .unwrap()
        .and_then(|stored| stored.token_response)
        .map(|token| {
            oauth2::TokenResponse::access_token(&token)
                .secret()
                .to_owned()
        })
        .expect("the login stored a token");

    for _ in 0..2 {
        let runtime = start_web(&fixture.url, Some(&store)).await;
        let status = &runtime.servers()[0];
        assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
        assert_eq!(status.auth, Some(mcp_runtime::AuthState::LoggedIn));
        let echoed = runtime
            .call_tool("mcp__web__echo", object(serde_json::json!({"x": 1})))
            .await
            .unwrap();
        assert_eq!(echoed.structured_content().cloned().unwrap()["x"], 1);
        let debug = format!("{runtime:?} {:?}", runtime.servers());
        assert!(!debug.contains(&token), "the token in Debug output");
        runtime.shutdown().await;
    }
    assert_eq!(grants(&log, "authorization_code"), 1, "one login");
    assert_eq!(grants(&log, "refresh_token"), 0, "the token was fresh");
    let logged = std::fs::read_to_string(&messages).unwrap();
    assert!(
        !logged.contains(&token),
        "the fixture saw only fingerprints"
    );
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let fixture = protected(&log, &[]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    log_in(&fixture.url, &store).await;
    // The token (valid for an hour) was received two hours ago, as far as the store
    // says: it is taken for expired, without waiting for it.
    let mut stored = store.load().await.unwrap().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    stored.token_received_at = Some(now - 7200);
    store.save(stored).await.unwrap();

    let runtime = start_web(&fixture.url, Some(&store)).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    runtime.shutdown().await;
    assert_eq!(grants(&log, "refresh_token"), 1, "{:?}", read_log(&log));
}

#[tokio::test]
async fn a_token_the_server_refuses_is_refreshed_once_and_the_request_sent_again() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let fixture = protected(&log, &[]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    log_in(&fixture.url, &store).await;
    let stored = store.load().await.unwrap().unwrap();
    let access = oauth2::TokenResponse::access_token(stored.token_response.as_ref().unwrap())
        .secret()
        .to_owned();
    // The access token alone is revoked: the refresh token still works.
    revoke(
        &fixture,
        &[("token", &access), ("client_id", &stored.client_id)],
    )
    .await;

    let runtime = start_web(&fixture.url, Some(&store)).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    runtime.shutdown().await;
    assert_eq!(grants(&log, "refresh_token"), 1, "{:?}", read_log(&log));
}

#[tokio::test]
async fn a_revoked_login_asks_for_a_new_one() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let fixture = protected(&log, &[]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    log_in(&fixture.url, &store).await;

    // Revoke the login's refresh token, which revokes every token of the grant.
    let stored = store.load().await.unwrap().unwrap();
    let refresh = oauth2::TokenResponse::refresh_token(stored.token_response.as_ref().unwrap())
        .expect("a refresh token")
        .secret()
        .to_owned();
    revoke(
        &fixture,
        &[("token", &refresh), ("client_id", &stored.client_id)],
    )
    .await;

    let runtime = start_web(&fixture.url, Some(&store)).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = chain(status.error.as_ref().unwrap());
    assert!(error.ends_with("server `web` needs a new login"), "{error}");
    assert!(!error.contains(&refresh));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_server_that_asks_for_no_login_is_not_logged_in_to() {
    let fixture = http_fixture(&[]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    let error = Login::new(&ServerConfig::http("open", &fixture.url), store.clone())
        .run(&FollowRedirects)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "server `open` does not ask for a login: it started and listed its tools without one"
    );
    assert!(store.load().await.unwrap().is_none());
}

#[tokio::test]
async fn a_refresh_that_fails_names_the_server_and_what_to_do() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    // Tokens expire at once, and every refresh fails without a refusal (`503`).
    let fixture = protected(
        &log,
        &["--oauth-token-ttl-secs", "0", "--oauth-fail", "refresh"],
    )
    .await;
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    log_in(&fixture.url, &store).await;

    let runtime = start_web(&fixture.url, Some(&store)).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = chain(status.error.as_ref().unwrap());
    assert!(
        error.ends_with(
            "server `web`'s OAuth login cannot be used: refreshing its access token failed without the authorization server refusing it (try again later, or log in again)"
        ),
        "{error}"
    );
    runtime.shutdown().await;
    assert_eq!(grants(&log, "refresh_token"), 1, "{:?}", read_log(&log));
}

#[tokio::test]
async fn a_login_to_a_server_without_metadata_says_what_would_help() {
    // A server that wants a fixed token: a 401, and no OAuth anywhere.
    let fixture = http_fixture(&["--require-bearer", "fixed-token"]).await;
    let origin = fixture.url.strip_suffix("/mcp").unwrap();
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    let error = Login::new(&ServerConfig::http("web", &fixture.url), store.clone())
        .run(&FollowRedirects)
        .await
        .unwrap_err();
    assert_eq!(
        error.step(),
        Some(mcp_runtime::login::LoginStep::Registration)
    );
    assert_eq!(
        chain(&error),
        format!(
            "cannot log in to server `web`: it publishes no OAuth metadata, and registering a client at its default endpoint `{origin}/register` failed (if the server takes a fixed token, name its variable with `bearer_token_env_var`; if it has a pre-registered OAuth client, set `oauth.client_id`)"
        )
    );
    assert!(store.load().await.unwrap().is_none());
}
