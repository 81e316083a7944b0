//! OAuth without a person: machine clients (`grant_type = "client_credentials"`)
//! against the protected fixture and its authorization server, and one refresh of a
//! login shared by two runtimes that start at once on one token file.

use std::{
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};

use base64::Engine as _;
use mcp_runtime::{
    AuthState, ListingRegistry, Runtime, ServerConfig, ServerState, StartOptions,
    auth::{
        CredentialSource, CredentialStore, InMemoryCredentialStore, StoredCredentials,
        store::{Store, StoreKey, StoreOptions},
    },
    config::{CredentialsStore, GrantType, OAuthConfig},
    error::chain,
    login::Login,
};
use mcp_runtime_fixtures::oauth::redact_authorization;

use crate::support::*;

/// The variable holding the machine client's secret in the tests' environment.
const SECRET_VAR: &str = "MCP_RUNTIME_TEST_MACHINE_SECRET";
/// Its value, found nowhere else: a search for it finds only a leak.
const SECRET: &str = "machine-s3cret-7c41e9";
/// The machine client's id at the fixture.
const CLIENT: &str = "robot";

/// Puts [`SECRET_VAR`] into this process's environment, once.
fn set_secret_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: set once, here, and read only through std, which synchronizes
        // environment access; no test removes or changes it.
        unsafe { std::env::set_var(SECRET_VAR, SECRET) };
    });
}

/// The server `robot` at `url`, a machine client with the secret in [`SECRET_VAR`].
fn machine(url: &str) -> ServerConfig {
    set_secret_env();
    let mut server = ServerConfig::http("robot", url);
    server.oauth.client_id = Some(CLIENT.into());
    server.oauth.client_secret_env_var = Some(SECRET_VAR.into());
    server.oauth.grant_type = GrantType::ClientCredentials;
    server
}

/// A protected fixture logging its authorization server's requests to `log`, with
/// the machine client registered with `secret` and only `method` accepted.
async fn protected(log: &Path, secret: &str, method: &str, args: &[&str]) -> HttpFixture {
    let client = format!("{CLIENT}:{secret}");
    let mut all = vec![
        "--require-oauth",
        "--oauth-log",
        path_str(log),
        "--oauth-client",
        &client,
        "--oauth-auth-method",
        method,
    ];
    all.extend_from_slice(args);
    http_fixture(&all).await
}

/// One store for every server.
struct OneStore(Arc<dyn CredentialStore>);

impl CredentialSource for OneStore {
    fn store_for(&self, _: &str, _: &str, _: &OAuthConfig) -> Arc<dyn CredentialStore> {
        self.0.clone()
    }
}

async fn start(server: ServerConfig, credentials: Option<Arc<dyn CredentialSource>>) -> Runtime {
    let mut options = StartOptions::new()
        .wait_for_all()
        .with_listing_registry(ListingRegistry::new());
    if let Some(credentials) = credentials {
        options = options.with_credentials(credentials);
    }
    Runtime::start(config([server]), options)
        .await
        .expect("start succeeds")
}

fn token_requests(log: &Path, grant_type: &str) -> Vec<serde_json::Value> {
    read_log(log)
        .into_iter()
        .filter(|entry| entry["endpoint"] == "/token" && entry["grant_type"] == grant_type)
        .collect()
}

fn access_token(stored: &StoredCredentials) -> String {
    oauth2::TokenResponse::access_token(stored.token_response.as_ref().expect("a token"))
        .secret()
        .to_owned()
}

/// Makes the stored token look received two hours ago (valid for one): expired, as
/// far as the store says, without waiting.
async fn age(store: &Arc<dyn CredentialStore>) {
    let mut stored = store.load().await.unwrap().expect("a stored token");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    stored.token_received_at = Some(now - 7200);
    store.save(stored).await.unwrap();
}

async fn assert_ready_and_calls(runtime: &Runtime) {
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.auth, Some(AuthState::LoggedIn));
    let echoed = runtime
        .call_tool("mcp__robot__echo", object(serde_json::json!({"x": 1})))
        .await
        .unwrap();
    assert_eq!(echoed.structured_content().cloned().unwrap()["x"], 1);
}

#[tokio::test]
async fn a_machine_client_gets_its_token_with_basic_or_post_and_reuses_it_until_it_expires() {
    for method in ["client_secret_basic", "client_secret_post"] {
        let dir = temp_dir();
        let log = dir.path().join("oauth.jsonl");
        let fixture = protected(&log, SECRET, method, &[]).await;
        let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
        let source = || Some(Arc::new(OneStore(store.clone())) as Arc<dyn CredentialSource>);

        let capturing = Capturing::start();
        let runtime = start(machine(&fixture.url), source()).await;
        assert_ready_and_calls(&runtime).await;
        drop(capturing);
        let token = access_token(&store.load().await.unwrap().unwrap());
        assert!(!format!("{runtime:?} {:?}", runtime.servers()).contains(&token));
        assert!(!captured().contains(&token), "the token in a log line");
        runtime.shutdown().await;
        let grants = token_requests(&log, "client_credentials");
        assert_eq!(grants.len(), 1, "{method}: {grants:?}");
        assert_eq!(grants[0]["auth_method"], method);
        assert_eq!(grants[0]["client_id"], CLIENT);
        assert_eq!(grants[0]["outcome"], "ok", "{grants:?}");

        // A later runtime reuses the stored token.
        let runtime = start(machine(&fixture.url), source()).await;
        assert_ready_and_calls(&runtime).await;
        runtime.shutdown().await;
        assert_eq!(
            token_requests(&log, "client_credentials").len(),
            1,
            "{method}"
        );

        // An expired one is replaced, with no refresh token.
        age(&store).await;
        let runtime = start(machine(&fixture.url), source()).await;
        assert_ready_and_calls(&runtime).await;
        runtime.shutdown().await;
        assert_eq!(
            token_requests(&log, "client_credentials").len(),
            2,
            "{method}"
        );
        assert_ne!(access_token(&store.load().await.unwrap().unwrap()), token);
        assert!(token_requests(&log, "refresh_token").is_empty());
    }
}

#[tokio::test]
async fn a_machine_client_needs_no_token_store_from_the_host() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let fixture = protected(&log, SECRET, "client_secret_basic", &[]).await;
    let runtime = start(machine(&fixture.url), None).await;
    assert_ready_and_calls(&runtime).await;
    runtime.shutdown().await;
    assert_eq!(token_requests(&log, "client_credentials").len(), 1);
}

#[tokio::test]
async fn a_token_the_server_refuses_is_replaced_once_and_the_request_sent_again() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let fixture = protected(&log, SECRET, "client_secret_post", &[]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    let source = || Some(Arc::new(OneStore(store.clone())) as Arc<dyn CredentialSource>);
    start(machine(&fixture.url), source())
        .await
        .shutdown()
        .await;
    let token = access_token(&store.load().await.unwrap().unwrap());
    // Revoked at the authorization server: the store still holds it as valid.
    revoke(
        &fixture,
        &[
            ("token", &token),
            ("client_id", CLIENT),
            ("client_secret", SECRET),
        ],
    )
    .await;

    let runtime = start(machine(&fixture.url), source()).await;
    assert_ready_and_calls(&runtime).await;
    runtime.shutdown().await;
    assert_eq!(token_requests(&log, "client_credentials").len(), 2);
}

/// Everything this process's `tracing` events say while a [`Capturing`] lives.
static CAPTURED: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// How many [`Capturing`] guards live (tests capture at once).
static CAPTURING: AtomicUsize = AtomicUsize::new(0);

/// Captures every `tracing` event of this process into [`CAPTURED`] while it lives.
struct Capturing;

impl Capturing {
    fn start() -> Self {
        capture_tracing();
        CAPTURING.fetch_add(1, Ordering::SeqCst);
        Capturing
    }
}

impl Drop for Capturing {
    fn drop(&mut self) {
        CAPTURING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What [`CAPTURED`] holds.
fn captured() -> String {
    String::from_utf8_lossy(&CAPTURED.lock().unwrap()).into_owned()
}

struct Capture;

impl std::io::Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        CAPTURED.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs, once, a subscriber that writes every event of every level to
/// [`CAPTURED`] while a [`Capturing`] lives (the other tests of the binary run
/// without one, and their events are then not even formatted).
fn capture_tracing() {
    use tracing_subscriber::{Layer as _, layer::SubscriberExt as _};
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let layer = tracing_subscriber::fmt::layer()
            .with_writer(|| Capture)
            .with_ansi(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|_| {
                CAPTURING.load(Ordering::SeqCst) > 0
            }));
        let subscriber = tracing_subscriber::registry()
            .with(layer)
            .with(tracing_subscriber::filter::LevelFilter::TRACE);
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
    });
}

#[tokio::test]
async fn a_wrong_secret_fails_the_start_in_one_line_naming_the_server_never_the_secret() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let fixture = protected(&log, "the-registered-one", "client_secret_basic", &[]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    let capturing = Capturing::start();
    let runtime = start(
        machine(&fixture.url),
        Some(Arc::new(OneStore(store.clone()))),
    )
    .await;
    drop(capturing);
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = chain(status.error.as_ref().unwrap());
    assert!(!error.contains('\n'), "{error}");
    assert!(
        error.ends_with(
            "server `robot`'s OAuth login cannot be used: its authorization server gave client `robot` no token (`invalid_client`): check the secret in `MCP_RUNTIME_TEST_MACHINE_SECRET`"
        ),
        "{error}"
    );
    assert!(store.load().await.unwrap().is_none(), "nothing stored");

    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT}:{SECRET}"));
    let captured = captured();
    assert!(
        captured.contains("robot"),
        "the capture saw the start: {captured}"
    );
    let debug = format!("{runtime:?} {:?} {:?}", runtime.servers(), status.error);
    for (what, text) in [("error", &error), ("Debug", &debug), ("log", &captured)] {
        assert!(!text.contains(SECRET), "the secret in the {what}");
        assert!(
            !text.contains(&basic),
            "the Basic credentials in the {what}"
        );
    }
    runtime.shutdown().await;
    let grants = token_requests(&log, "client_credentials");
    assert_eq!(grants.len(), 1, "one attempt: {grants:?}");
    assert_ne!(grants[0]["outcome"], "ok");
}

#[tokio::test]
async fn an_access_token_the_server_quotes_back_is_masked() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let fixture = protected(&log, SECRET, "client_secret_post", &["--echo-headers"]).await;
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());
    let runtime = start(
        machine(&fixture.url),
        Some(Arc::new(OneStore(store.clone()))),
    )
    .await;
    let error = runtime
        .call_tool("mcp__robot__echo", None)
        .await
        .expect_err("the server refuses every call");
    let message = chain(&error);
    let token = access_token(&store.load().await.unwrap().expect("a token"));
    assert!(message.contains("authorization=Bearer *****"), "{message}");
    assert!(!message.contains(&token), "{message}");
    assert!(!format!("{error:?}").contains(&token), "{error:?}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_missing_secret_variable_fails_the_start_naming_it() {
    let fixture = http_fixture(&["--require-oauth"]).await;
    let mut server = machine(&fixture.url);
    server.oauth.client_secret_env_var = Some("MCP_RUNTIME_TEST_UNSET_SECRET".into());
    let runtime = start(server, None).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = chain(status.error.as_ref().unwrap());
    assert!(
        error.ends_with(
            "environment variable `MCP_RUNTIME_TEST_UNSET_SECRET` named by `oauth.client_secret_env_var` is not set or is empty"
        ),
        "{error}"
    );
    runtime.shutdown().await;
}

/// A token store whose first refresh guard is handed out only once every runtime
/// of the race asks for its own: each has seen the stored token stale before any
/// refreshes, so a runtime that refreshed without reading the store again under the
/// guard would refresh a second time.
struct Racing {
    store: Store,
    start_line: Arc<tokio::sync::Barrier>,
}

impl CredentialSource for Racing {
    fn store_for(&self, server: &str, url: &str, oauth: &OAuthConfig) -> Arc<dyn CredentialStore> {
        Arc::new(RacingEntry {
            entry: self.store.store_for(server, url, oauth),
            start_line: self.start_line.clone(),
            waited: AtomicBool::new(false),
        })
    }
}

struct RacingEntry {
    entry: Arc<dyn CredentialStore>,
    start_line: Arc<tokio::sync::Barrier>,
    waited: AtomicBool,
}

#[async_trait::async_trait]
impl CredentialStore for RacingEntry {
    async fn load(&self) -> Result<Option<StoredCredentials>, rmcp::transport::auth::AuthError> {
        self.entry.load().await
    }

    async fn save(
        &self,
        credentials: StoredCredentials,
    ) -> Result<(), rmcp::transport::auth::AuthError> {
        self.entry.save(credentials).await
    }

    async fn clear(&self) -> Result<(), rmcp::transport::auth::AuthError> {
        self.entry.clear().await
    }

    async fn acquire_refresh_guard(
        &self,
    ) -> Result<
        Option<rmcp::transport::auth::CredentialRefreshGuard>,
        rmcp::transport::auth::AuthError,
    > {
        if !self.waited.swap(true, Ordering::Relaxed) {
            self.start_line.wait().await;
        }
        self.entry.acquire_refresh_guard().await
    }
}

#[tokio::test]
async fn runtimes_refreshing_one_stale_token_at_once_refresh_it_once_and_share_the_result() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let messages = dir.path().join("messages.jsonl");
    let fixture = http_fixture(&[
        "--require-oauth",
        "--oauth-log",
        path_str(&log),
        "--log",
        path_str(&messages),
    ])
    .await;
    let tokens = dir.path().join("config/mcp-runtime/oauth-tokens.json");
    let open = || async {
        Store::open(
            CredentialsStore::File,
            StoreOptions::default().with_file(&tokens),
        )
        .await
        .unwrap()
    };
    let server = ServerConfig::http("web", &fixture.url);
    let key = StoreKey::new(&url::Url::parse(&fixture.url).unwrap(), None, None);
    let entry = open().await.credentials(key);
    Login::new(&server, entry.clone())
        .run(&FollowRedirects)
        .await
        .expect("the login succeeds");
    let stale = access_token(&entry.load().await.unwrap().unwrap());
    age(&entry).await;

    // Two runtimes, each with its own store opened on the one file, start at once.
    let start_line = Arc::new(tokio::sync::Barrier::new(2));
    let mut starts = Vec::new();
    for _ in 0..2 {
        let source = Racing {
            store: open().await,
            start_line: start_line.clone(),
        };
        let options = StartOptions::new()
            .wait_for_all()
            .with_listing_registry(ListingRegistry::new())
            .with_credentials(Arc::new(source));
        let mut server = server.clone();
        server.share_tool_listing = false;
        starts.push(Runtime::start(config([server]), options));
    }
    let runtimes = futures::future::join_all(starts).await;
    for runtime in runtimes {
        let runtime = runtime.unwrap();
        let status = &runtime.servers()[0];
        assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
        runtime.shutdown().await;
    }

    let refreshes = token_requests(&log, "refresh_token");
    assert_eq!(refreshes.len(), 1, "{refreshes:?}");
    let fresh = access_token(&entry.load().await.unwrap().unwrap());
    assert_ne!(fresh, stale);
    // Both runtimes listed their tools with the one refreshed token.
    let sent: Vec<_> = read_log(&messages)
        .into_iter()
        .filter(|line| line["method"] == "tools/list")
        .map(|line| line["http_headers"]["authorization"].clone())
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let expected = redact_authorization(&format!("Bearer {fresh}"));
    assert!(sent.iter().all(|header| *header == expected), "{sent:?}");
}

/// The RFC 7523 grant type, as the OAuth log names it.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

#[tokio::test]
async fn a_workload_presents_the_identity_token_its_file_holds_at_each_token_request() {
    let dir = temp_dir();
    let log = dir.path().join("oauth.jsonl");
    let fixture = http_fixture(&[
        "--require-oauth",
        "--oauth-log",
        path_str(&log),
        "--oauth-workload",
        "robot:platform-token-1",
        "--oauth-workload",
        "robot:platform-token-2",
    ])
    .await;
    let token_file = dir.path().join("identity.jwt");
    std::fs::write(&token_file, "platform-token-1\n").unwrap();
    let mut server = ServerConfig::http("robot", &fixture.url);
    server.oauth.client_id = Some(CLIENT.into());
    server.oauth.grant_type = GrantType::JwtBearer;
    server.oauth.assertion_file = Some(token_file.clone());
    let store: Arc<dyn CredentialStore> = Arc::new(InMemoryCredentialStore::new());

    let capturing = Capturing::start();
    let runtime = start(server, Some(Arc::new(OneStore(store.clone())))).await;
    assert_ready_and_calls(&runtime).await;
    let grants = token_requests(&log, JWT_BEARER);
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0]["auth_method"], "none");
    assert_eq!(grants[0]["client_id"], CLIENT);

    // The platform replaced the token with one the server does not trust, and the
    // access token stopped working: the next token request reads the file again.
    std::fs::write(&token_file, "untrusted-platform-token").unwrap();
    let access = access_token(&store.load().await.unwrap().unwrap());
    revoke(&fixture, &[("token", &access), ("client_id", CLIENT)]).await;
    let error = runtime
        .call_tool("mcp__robot__echo", object(serde_json::json!({"x": 1})))
        .await
        .expect_err("the untrusted token gets no access token");
    let error = chain(&error);
    assert!(!error.contains('\n'), "{error}");
    let expected = format!(
        "its authorization server gave workload `robot` no token for its identity token (`invalid_grant`): check the token in `{}`",
        token_file.display()
    );
    assert!(error.ends_with(&expected), "{error}");

    // Rotated again, to a token it trusts: the call works without a restart.
    std::fs::write(&token_file, "platform-token-2").unwrap();
    let echoed = runtime
        .call_tool("mcp__robot__echo", object(serde_json::json!({"x": 2})))
        .await
        .unwrap();
    assert_eq!(echoed.structured_content().cloned().unwrap()["x"], 2);
    drop(capturing);
    let debug = format!("{runtime:?} {:?}", runtime.servers());
    runtime.shutdown().await;
    assert_eq!(token_requests(&log, JWT_BEARER).len(), 3);

    let captured = captured();
    for (what, text) in [("error", &error), ("log", &captured), ("Debug", &debug)] {
        for token in [
            "platform-token-1",
            "platform-token-2",
            "untrusted-platform-token",
        ] {
            assert!(!text.contains(token), "the identity token in the {what}");
        }
    }
}
