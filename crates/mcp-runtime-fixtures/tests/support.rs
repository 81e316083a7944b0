//! Shared helpers: fixture configs, the fixture's request log, and process checks.

use std::path::Path;

use mcp_runtime::{
    Config, ListingRegistry, Runtime, ServerConfig, StartOptions, StartupEvent,
    config::{Protocol, TransportConfig},
};
pub use mcp_runtime_fixtures::testing::{
    Probe, assert_all_gone, count_method, is_alive, peers_dir, probe_runs, python_sdk, read_log,
    recorded_argv, stub_launcher, the, wait_for_exit,
};
use tokio::sync::mpsc::UnboundedReceiver;

/// The fixture server binary built with these tests.
pub fn fixture_path() -> &'static str {
    env!("CARGO_BIN_EXE_mcp-fixture")
}

/// A stdio server running the fixture with `args`, pinned to the handshake revision
/// the fixture speaks by default (`protocol = "2025-11-25"`): the tests of everything
/// but the protocol era count processes, spawn events and requests, which the era
/// probe of `protocol = "auto"` would add to (see `protocol_eras` for those).
pub fn fixture(name: &str, args: &[&str]) -> ServerConfig {
    fixture_auto(name, args).with_protocol(Protocol::V2025_11_25)
}

/// A stdio server running the fixture with `args`, with `protocol = "auto"`.
pub fn fixture_auto(name: &str, args: &[&str]) -> ServerConfig {
    ServerConfig::stdio(
        name,
        fixture_path(),
        args.iter().map(|arg| arg.to_string()).collect(),
    )
}

/// `value`'s object, as a call's arguments.
pub fn object(value: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    value.as_object().cloned()
}

/// A config holding `servers`.
pub fn config(servers: impl IntoIterator<Item = ServerConfig>) -> Config {
    let mut config = Config::default();
    for server in servers {
        config.servers.insert(server.name.clone(), server);
    }
    config
}

/// Sets a literal environment variable for a stdio server.
pub fn with_env(mut server: ServerConfig, name: &str, value: &str) -> ServerConfig {
    if let TransportConfig::Stdio(stdio) = &mut server.transport {
        stdio.env.insert(name.into(), value.into());
    }
    server
}

/// Forwards a variable of the parent's environment to a stdio server.
pub fn with_env_var(mut server: ServerConfig, name: &str) -> ServerConfig {
    if let TransportConfig::Stdio(stdio) = &mut server.transport {
        stdio.env_vars.push(name.into());
    }
    server
}

/// Starts `server` with the host's `handlers` and waits until it has settled, with a
/// registry of its own.
pub async fn start_with(
    server: ServerConfig,
    handlers: mcp_runtime::host::HostHandlers,
) -> Runtime {
    Runtime::start(
        config([server]),
        StartOptions::new()
            .wait_for_all()
            .with_listing_registry(ListingRegistry::new())
            .with_host(handlers),
    )
    .await
    .expect("start succeeds")
}

/// Starts `config` and waits until every server has settled
/// ([`StartOptions::wait_for_all`]), collecting its events. Each start has a registry
/// of its own, so tests running in parallel never share listings.
pub async fn start(config: Config) -> (Runtime, Vec<StartupEvent>) {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let registry = ListingRegistry::new();
    let options = StartOptions::new()
        .wait_for_all()
        .with_events(sender)
        .with_listing_registry(registry.clone());
    let runtime = Runtime::start(config, options)
        .await
        .expect("start succeeds");
    assert!(
        registry.is_empty(),
        "nothing is left in the registry once the start settled"
    );
    (runtime, drain(receiver))
}

/// Calls `tool`, a peer server's `add(a, b)`, with 40 and 2, and checks that it
/// answers 42 as structured content.
pub async fn assert_adds(runtime: &Runtime, tool: &str) {
    let result = runtime
        .call_tool(tool, object(serde_json::json!({"a": 40, "b": 2})))
        .await
        .unwrap_or_else(|error| panic!("{tool}: {error}"));
    assert!(!result.is_error(), "{tool}: {result:?}");
    assert_eq!(
        result.structured_content().cloned(),
        Some(serde_json::json!({"result": 42})),
        "{tool}"
    );
}

/// The text of a result's text blocks, one after the other.
pub fn text_of(result: &mcp_runtime::ToolResult) -> String {
    result
        .content()
        .filter_map(|block| block.as_text().map(str::to_owned))
        .collect()
}

/// Every event already sent.
pub fn drain(mut receiver: UnboundedReceiver<StartupEvent>) -> Vec<StartupEvent> {
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    events
}

/// The process id the runtime reported for `server`.
pub fn spawned_pid(events: &[StartupEvent], server: &str) -> i32 {
    events
        .iter()
        .find_map(|event| match event {
            StartupEvent::Spawned { server: s, pid } if s == server => Some(*pid as i32),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no Spawned event for `{server}` in {events:?}"))
}

/// A fresh temporary directory, removed when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// Accepts every form with `{"name": "Grace"}`.
pub struct Grace;

impl mcp_runtime::host::Elicitation for Grace {
    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        _request: mcp_runtime::model::ElicitRequestParams,
    ) -> mcp_runtime::host::HandlerFuture<'a, mcp_runtime::model::ElicitResult> {
        Box::pin(async {
            mcp_runtime::model::ElicitResult::new(mcp_runtime::model::ElicitationAction::Accept)
                .with_content(serde_json::json!({"name": "Grace"}))
        })
    }
}

/// Reads the pid the fixture wrote for its own child (`--spawn-grandchild FILE`).
pub fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
        .trim()
        .parse()
        .expect("a pid")
}

/// A variable the tests expect in the host's environment, holding a secret.
pub const TEST_SECRET_VAR: &str = "MCP_RUNTIME_TEST_PARENT_SECRET";
/// Its value.
pub const TEST_SECRET: &str = "hunter2-secret";
/// A variable the tests use as an HTTP bearer token.
pub const TEST_TOKEN_VAR: &str = "MCP_RUNTIME_TEST_HTTP_TOKEN";
/// Its value.
pub const TEST_TOKEN: &str = "tok-8f2e";
/// A variable the tests use for a header value.
pub const TEST_HEADER_VAR: &str = "MCP_RUNTIME_TEST_HEADER";

/// Puts the tests' variables into this process's environment, once.
pub fn set_test_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: these variables are set once, here, and read only through std, which
        // synchronizes environment access; no test removes or changes them.
        unsafe {
            std::env::set_var(TEST_SECRET_VAR, TEST_SECRET);
            std::env::set_var(TEST_TOKEN_VAR, TEST_TOKEN);
            std::env::set_var(TEST_HEADER_VAR, "header-from-env");
        }
    });
}

/// A fixture serving Streamable HTTP on a free loopback port.
pub struct HttpFixture {
    pub url: String,
    child: tokio::process::Child,
}

impl HttpFixture {
    /// Kills the fixture process and waits for it.
    pub async fn kill(&mut self) {
        self.child.kill().await.expect("killing the HTTP fixture");
    }

    /// Waits for the fixture process to exit (bounded), and returns its status.
    pub async fn exited(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(std::time::Duration::from_secs(10), self.child.wait())
            .await
            .expect("the HTTP fixture exits")
            .expect("waiting for the HTTP fixture")
    }

    /// The address it listens on, `IP:PORT`, for another fixture to take over.
    pub fn addr(&self) -> &str {
        self.url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .expect("http://ADDR/mcp")
    }
}

/// Starts the fixture with `--http 127.0.0.1:0` and `args`, and waits for its URL.
pub async fn http_fixture(args: &[&str]) -> HttpFixture {
    http_fixture_at("127.0.0.1:0", args).await
}

/// Starts the fixture serving Streamable HTTP at `addr` with `args`, and waits for
/// its URL.
pub async fn http_fixture_at(addr: &str, args: &[&str]) -> HttpFixture {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(fixture_path())
        .args(["--http", addr])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the fixture starts");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    tokio::io::BufReader::new(stdout)
        .read_line(&mut line)
        .await
        .unwrap();
    let url = mcp_runtime_fixtures::testing::announced_url(&line);
    HttpFixture { url, child }
}

/// A browser that approves at once: it follows the authorization URL's redirects
/// to the login's loopback listener, in a task of its own (the login listens only
/// once the URL is shown).
pub struct FollowRedirects;

impl mcp_runtime::login::OpenUrl for FollowRedirects {
    fn open(&self, url: &str) -> std::io::Result<()> {
        follow_redirects(url.to_owned());
        Ok(())
    }
}

/// Follows `url`'s redirects, in a task of its own, and checks they end well.
pub fn follow_redirects(url: String) {
    tokio::spawn(async move {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let response = client
            .get(url)
            .send()
            .await
            .expect("the redirects lead back");
        assert!(response.status().is_success(), "{response:?}");
    });
}

/// Revokes a token at the fixture's authorization server with the form `params`
/// (`token` and the client's authentication).
pub async fn revoke(fixture: &HttpFixture, params: &[(&str, &str)]) {
    let origin = fixture.url.strip_suffix("/mcp").unwrap();
    let revoked = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("{origin}/revoke"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(params)
                .finish(),
        )
        .send()
        .await
        .unwrap();
    assert!(revoked.status().is_success(), "{revoked:?}");
}
