//! OAuth logins and the account they are for, against the protected fixture: who
//! shares a startup listing (the account in the discovery key), the `expired` auth
//! state, and logout's revocation.
//!
//! Startups are ordered with the fixture's gates (`--gate-dir`, see the
//! `shared_listing` tests): `initialize` and `tools/list` are answered only once the
//! test opens them, so whether two startups overlap is decided by the test, never by
//! timing. The fixture approves as the account the browser names (`login_hint`).

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use mcp_runtime::{
    AuthState, ListingRegistry, Runtime, ServerConfig, ServerState, StartError, StartOptions,
    auth::{
        CredentialSource, CredentialStore,
        logout::{Logout, Revocation, logout},
        store::{Store, StoreOptions},
    },
    config::{CredentialsStore, OAuthConfig},
    login::{Login, LoginSummary, OpenUrl},
};
use tokio::task::JoinHandle;

use crate::support::*;

/// A browser that approves at once as `account`: it names the account with
/// OpenID Connect's `login_hint` and follows the redirects back to the login.
struct ApproveAs(&'static str);

impl OpenUrl for ApproveAs {
    fn open(&self, url: &str) -> std::io::Result<()> {
        follow_redirects(format!("{url}&login_hint={}", self.0));
        Ok(())
    }
}

/// A protected fixture with gates, its message log and its OAuth log.
struct Protected {
    fixture: HttpFixture,
    dir: tempfile::TempDir,
}

impl Protected {
    async fn new() -> Self {
        Self::with(&[]).await
    }

    /// With more fixture arguments.
    async fn with(args: &[&str]) -> Self {
        let dir = temp_dir();
        let gates = dir.path().join("gates");
        std::fs::create_dir(&gates).unwrap();
        let fixture = http_fixture(
            &[
                "--require-oauth",
                "--oauth-log",
                path_str(&dir.path().join("oauth.jsonl")),
                "--log",
                path_str(&dir.path().join("messages.jsonl")),
                "--gate-dir",
                path_str(&gates),
            ]
            .into_iter()
            .chain(args.iter().copied())
            .collect::<Vec<_>>(),
        )
        .await;
        Self { fixture, dir }
    }

    fn server(&self) -> ServerConfig {
        ServerConfig::http("web", &self.fixture.url)
    }

    /// A token file of its own: one user's store.
    async fn store(&self, name: &str) -> Store {
        Store::open(
            CredentialsStore::File,
            StoreOptions::default().with_file(self.dir.path().join(format!("{name}.json"))),
        )
        .await
        .unwrap()
    }

    fn entry(&self, store: &Store) -> Arc<dyn CredentialStore> {
        store.store_for("web", &self.fixture.url, &OAuthConfig::default())
    }

    async fn log_in(&self, store: &Store, account: &'static str) -> LoginSummary {
        Login::new(&self.server(), self.entry(store))
            .run(&ApproveAs(account))
            .await
            .expect("the login succeeds")
    }

    fn messages(&self) -> Vec<serde_json::Value> {
        read_log(&self.dir.path().join("messages.jsonl"))
    }

    fn oauth_log(&self) -> Vec<serde_json::Value> {
        read_log(&self.dir.path().join("oauth.jsonl"))
    }

    /// Opens the gate of `method` (`initialize` or `tools-list`) of the fixture
    /// process, whose pid its message log names.
    fn open(&self, method: &str) {
        let pid = self.messages()[0]["pid"].as_u64().expect("a logged pid");
        let gates = self.dir.path().join("gates");
        std::fs::write(gates.join(format!("{pid}.{method}")), "").unwrap();
    }

    /// Returns once `n` `initialize` requests have reached the fixture: their
    /// startups have begun (and are stamped), and wait at the closed gate.
    async fn until_initializing(&self, n: usize) {
        self.until_count("initialize", n).await;
    }

    /// Returns once `n` requests of `method` have reached the fixture.
    async fn until_count(&self, method: &str, n: usize) {
        tokio::time::timeout(Duration::from_secs(30), async {
            // The fixture is another process: its log is read until it shows them.
            while count_method(&self.messages(), method) < n {
                tokio::time::sleep(mcp_runtime_fixtures::gate::POLL_INTERVAL).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{n} `{method}` reach the fixture"));
    }
}

/// Begins a runtime of `server` sharing listings through `registry`, with the logins
/// of `store`.
fn begin(
    server: ServerConfig,
    registry: &ListingRegistry,
    store: Store,
) -> JoinHandle<Result<Runtime, StartError>> {
    let options = StartOptions::new()
        .wait_for_all()
        .with_listing_registry(registry.clone())
        .with_credentials(Arc::new(store) as Arc<dyn CredentialSource>);
    tokio::spawn(Runtime::start(config([server]), options))
}

/// Starts two overlapping runtimes, one with each store, and returns them once both
/// are ready: both begin before either lists (the gates), so only their discovery
/// keys decide whether they share.
async fn overlapping(protected: &Protected, first: Store, second: Store) -> [Runtime; 2] {
    let registry = ListingRegistry::new();
    let one = begin(protected.server(), &registry, first);
    let two = begin(protected.server(), &registry, second);
    protected.until_initializing(2).await;
    protected.open("initialize");
    protected.open("tools-list");
    let runtimes = [one.await.unwrap().unwrap(), two.await.unwrap().unwrap()];
    for runtime in &runtimes {
        let status = &runtime.servers()[0];
        assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
        assert_eq!(status.auth, Some(AuthState::LoggedIn));
    }
    assert!(registry.is_empty());
    runtimes
}

#[tokio::test]
async fn two_accounts_in_one_scope_never_share_a_listing() {
    let protected = Protected::new().await;
    let (alice, bob) = (protected.store("alice").await, protected.store("bob").await);
    assert_eq!(
        protected.log_in(&alice, "alice").await.account.as_deref(),
        Some("alice")
    );
    assert_eq!(
        protected.log_in(&bob, "bob").await.account.as_deref(),
        Some("bob")
    );

    // Each token file keeps its account's subject, never the ID token.
    for name in ["alice", "bob"] {
        let path = protected.dir.path().join(format!("{name}.json"));
        let file = std::fs::read_to_string(path).unwrap();
        assert!(!file.contains("id_token"), "{file}");
        let document: serde_json::Value = serde_json::from_str(&file).unwrap();
        let (_, record) = document["entries"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        assert_eq!(
            record["credentials"]["token_response"]["mcp_runtime_account"],
            name
        );
    }

    let runtimes = overlapping(&protected, alice, bob).await;
    assert_eq!(count_method(&protected.messages(), "tools/list"), 2);
    for runtime in runtimes {
        assert_eq!(runtime.servers()[0].tools_list_requests, 1);
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn the_same_account_in_two_overlapping_runtimes_shares_one_listing() {
    let protected = Protected::new().await;
    let store = protected.store("alice").await;
    protected.log_in(&store, "alice").await;

    let runtimes = overlapping(&protected, store.clone(), store).await;
    assert_eq!(count_method(&protected.messages(), "tools/list"), 1);
    let sent: Vec<usize> = runtimes
        .iter()
        .map(|runtime| runtime.servers()[0].tools_list_requests)
        .collect();
    assert_eq!(sent.iter().sum::<usize>(), 1, "{sent:?}");
    for runtime in runtimes {
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_login_whose_account_is_unknown_shares_within_its_store_entry() {
    let protected = Protected::new().await;
    let store = protected.store("someone").await;
    protected.log_in(&store, "someone").await;
    // The same login without its account, as an authorization server without
    // OpenID Connect leaves it: saved afresh, it keeps only its login id.
    let entry = protected.entry(&store);
    let mut stored = entry.load().await.unwrap().unwrap();
    let token = stored.token_response.as_mut().unwrap();
    let mut extra = token.extra_fields().clone();
    assert_eq!(
        extra.0.remove("mcp_runtime_account"),
        Some("someone".into())
    );
    assert!(
        !extra.0.contains_key("id_token"),
        "the ID token is not stored"
    );
    token.set_extra_fields(extra);
    entry.clear().await.unwrap();
    entry.save(stored).await.unwrap();

    let runtimes = overlapping(&protected, store.clone(), store).await;
    assert_eq!(count_method(&protected.messages(), "tools/list"), 1);
    for runtime in runtimes {
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_listing_made_while_the_login_was_replaced_is_not_shared() {
    let protected = Protected::new().await;
    let store = protected.store("shared").await;
    protected.log_in(&store, "alice").await;
    let registry = ListingRegistry::new();
    let one = begin(protected.server(), &registry, store.clone());
    let two = begin(protected.server(), &registry, store.clone());
    protected.until_initializing(2).await;
    protected.open("initialize");
    // One startup leads: its `tools/list` (with alice's token) waits at the gate.
    protected.until_count("tools/list", 1).await;
    // Meanwhile the store's login becomes bob's: the listing may be alice's, and is
    // not handed to a startup keyed as alice that now runs as bob.
    protected.log_in(&store, "bob").await;
    protected.open("tools-list");
    for runtime in [one.await.unwrap().unwrap(), two.await.unwrap().unwrap()] {
        assert_eq!(runtime.servers()[0].state, ServerState::Ready);
        runtime.shutdown().await;
    }
    assert_eq!(count_method(&protected.messages(), "tools/list"), 2);
    assert!(registry.is_empty());
}

/// The token file's entry rewritten as `change` says.
fn rewrite_token_file(path: &Path, change: impl Fn(&mut serde_json::Value)) {
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for (_, record) in document["entries"].as_object_mut().unwrap() {
        change(&mut record["credentials"]);
    }
    std::fs::write(path, document.to_string()).unwrap();
}

#[tokio::test]
async fn a_login_past_its_expiry_without_a_refresh_token_is_expired() {
    let protected = Protected::new().await;
    let store = protected.store("alice").await;
    protected.log_in(&store, "alice").await;
    protected.open("initialize");
    protected.open("tools-list");
    let path: PathBuf = protected.dir.path().join("alice.json");
    // Received two hours ago, valid for one, and nothing to renew it with.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    rewrite_token_file(&path, |credentials| {
        credentials["token_received_at"] = (now - 7200).into();
        credentials["token_response"]
            .as_object_mut()
            .unwrap()
            .remove("refresh_token");
    });

    let registry = ListingRegistry::new();
    let runtime = begin(protected.server(), &registry, store)
        .await
        .unwrap()
        .unwrap();
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    assert_eq!(status.auth, Some(AuthState::Expired));
    assert_eq!(AuthState::Expired.as_str(), "expired");
    let error = mcp_runtime::error::chain(status.error.as_ref().unwrap());
    assert!(error.ends_with("server `web` needs a new login"), "{error}");
    runtime.shutdown().await;
    let refreshes = protected
        .oauth_log()
        .iter()
        .filter(|entry| entry["grant_type"] == "refresh_token")
        .count();
    assert_eq!(refreshes, 0, "there was nothing to refresh with");
}

/// The refresh token and access token of `entry`'s login.
async fn tokens(entry: &Arc<dyn CredentialStore>) -> (String, String, String) {
    let stored = entry.load().await.unwrap().unwrap();
    let token = stored.token_response.unwrap();
    let refresh = oauth2::TokenResponse::refresh_token(&token)
        .expect("a refresh token")
        .secret()
        .to_owned();
    let access = oauth2::TokenResponse::access_token(&token)
        .secret()
        .to_owned();
    (refresh, access, stored.client_id)
}

/// What the fixture's token endpoint answers to a refresh with `refresh`.
async fn refresh_status(protected: &Protected, refresh: &str, client_id: &str) -> u16 {
    let origin = protected.fixture.url.strip_suffix("/mcp").unwrap();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("{origin}/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", refresh)
                .append_pair("client_id", client_id)
                .finish(),
        )
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn logout_revokes_the_tokens_then_deletes_the_login() {
    let protected = Protected::new().await;
    let store = protected.store("alice").await;
    protected.log_in(&store, "alice").await;
    let entry = protected.entry(&store);
    let (refresh, access, client_id) = tokens(&entry).await;

    let done = logout(&protected.server(), entry.clone()).await.unwrap();
    assert_eq!(done, Logout::LoggedOut(Revocation::Revoked));
    assert!(
        entry.load().await.unwrap().is_none(),
        "the login is deleted"
    );
    let said = format!("{done:?}");
    assert!(
        !said.contains(&refresh) && !said.contains(&access),
        "{said}"
    );

    let revocations: Vec<_> = protected
        .oauth_log()
        .into_iter()
        .filter(|entry| entry["endpoint"] == "/revoke")
        .collect();
    assert_eq!(revocations.len(), 2, "refresh token, then access token");
    assert!(revocations.iter().all(|entry| entry["outcome"] == "ok"));
    assert_eq!(
        refresh_status(&protected, &refresh, &client_id).await,
        400,
        "the old refresh token is refused"
    );
    assert_eq!(
        logout(&protected.server(), entry).await.unwrap(),
        Logout::NotLoggedIn
    );
}

#[tokio::test]
async fn a_revocation_that_fails_still_deletes_the_login() {
    let mut protected = Protected::new().await;
    let store = protected.store("alice").await;
    protected.log_in(&store, "alice").await;
    let entry = protected.entry(&store);
    let (refresh, access, _) = tokens(&entry).await;
    protected.fixture.kill().await;

    let done = logout(&protected.server(), entry.clone()).await.unwrap();
    let Logout::LoggedOut(Revocation::Failed { reason }) = &done else {
        panic!("the authorization server is gone: {done:?}");
    };
    assert_eq!(
        reason,
        "its authorization server's metadata cannot be found"
    );
    assert!(!reason.contains(&refresh) && !reason.contains(&access));
    assert!(
        entry.load().await.unwrap().is_none(),
        "the login is deleted"
    );
}

#[tokio::test]
async fn a_confidential_client_authenticates_its_revocation() {
    set_test_env();
    let client = format!("machine:{TEST_SECRET}");
    let protected = Protected::with(&["--oauth-client", &client]).await;
    let origin = protected
        .fixture
        .url
        .strip_suffix("/mcp")
        .unwrap()
        .to_owned();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let tokens: serde_json::Value = http
        .post(format!("{origin}/token"))
        .basic_auth("machine", Some(TEST_SECRET))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "client_credentials")
                .append_pair("resource", &protected.fixture.url)
                .finish(),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let store = protected.store("machine").await;
    let entry = protected.entry(&store);
    entry
        .save(
            serde_json::from_value(serde_json::json!({
                "client_id": "machine",
                "token_response": tokens,
                "issuer": origin,
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let mut server = protected.server();
    server.oauth.client_secret_env_var = Some(TEST_SECRET_VAR.into());

    let done = logout(&server, entry).await.unwrap();
    assert_eq!(done, Logout::LoggedOut(Revocation::Revoked));
    let revocations: Vec<_> = protected
        .oauth_log()
        .into_iter()
        .filter(|entry| entry["endpoint"] == "/revoke")
        .collect();
    assert_eq!(
        revocations.len(),
        1,
        "no refresh token: the access token alone"
    );
    assert_eq!(revocations[0]["auth_method"], "client_secret_basic");
    assert_eq!(revocations[0]["outcome"], "ok");
    let refused = http
        .post(&protected.fixture.url)
        .bearer_auth(&access)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(
        refused.status().as_u16(),
        401,
        "the access token is revoked"
    );
}
