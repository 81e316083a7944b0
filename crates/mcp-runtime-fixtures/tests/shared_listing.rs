//! Shared startup listings against real fixture processes. Startups are ordered with
//! gates: a fixture started with `--gate-dir` answers `initialize` and `tools/list` only
//! once the test creates its gate file, so which startup leads is decided by the test,
//! never by timing.

use std::{path::Path, time::Duration};

use mcp_runtime::{
    CancellationToken, ListingRegistry, Runtime, ServerConfig, ServerState, StartError,
    StartOptions, StartupEvent,
};
use serde_json::json;
use tokio::{sync::mpsc::UnboundedReceiver, task::JoinHandle};

use crate::support::*;

/// One runtime starting in a task of its own, with its events.
struct Session {
    events: UnboundedReceiver<StartupEvent>,
    start: JoinHandle<Result<Runtime, StartError>>,
}

/// Begins starting `servers` in a new task; its startups are stamped when the task
/// first runs.
fn begin(servers: Vec<ServerConfig>, options: StartOptions) -> Session {
    let (sender, events) = tokio::sync::mpsc::unbounded_channel();
    let start = tokio::spawn(Runtime::start(config(servers), options.with_events(sender)));
    Session { events, start }
}

impl Session {
    /// Waits for the first event that `matches`.
    async fn until(&mut self, matches: impl Fn(&StartupEvent) -> bool) -> StartupEvent {
        loop {
            let event = self
                .events
                .recv()
                .await
                .expect("events continue until the summary");
            if matches(&event) {
                return event;
            }
        }
    }

    async fn pid(&mut self) -> u32 {
        match self
            .until(|e| matches!(e, StartupEvent::Spawned { .. }))
            .await
        {
            StartupEvent::Spawned { pid, .. } => pid,
            _ => unreachable!(),
        }
    }

    async fn listing(&mut self) -> bool {
        match self
            .until(|e| matches!(e, StartupEvent::ListingTools { .. }))
            .await
        {
            StartupEvent::ListingTools { shared, .. } => shared,
            _ => unreachable!(),
        }
    }

    async fn runtime(self) -> Runtime {
        self.finish().await.0
    }

    /// The started runtime and the events not read yet.
    async fn finish(self) -> (Runtime, Vec<StartupEvent>) {
        let runtime = self.start.await.unwrap().expect("the start succeeds");
        (runtime, drain(self.events))
    }
}

/// Options that share listings through `registry`, for a start that returns once
/// every server has settled (the grace mode has its own tests in `background_startup`).
fn options(registry: &ListingRegistry) -> StartOptions {
    StartOptions::new()
        .wait_for_all()
        .with_listing_registry(registry.clone())
}

/// Opens `pid`'s gate for `method` (`initialize` or `tools-list`); `content` `fail`
/// makes that `tools/list` fail.
fn open_gate(dir: &Path, pid: u32, method: &str, content: &str) {
    let path = dir.join(format!("{pid}.{method}"));
    let temporary = dir.join(format!("{pid}.{method}.tmp"));
    std::fs::write(&temporary, content).unwrap();
    std::fs::rename(temporary, path).unwrap();
}

struct Gated {
    dir: tempfile::TempDir,
    log: std::path::PathBuf,
}

impl Gated {
    fn new() -> Self {
        let dir = temp_dir();
        let log = dir.path().join("log.jsonl");
        Self { dir, log }
    }

    /// The same server for every session: equal discovery inputs.
    fn server(&self) -> ServerConfig {
        fixture(
            "srv",
            &[
                "--gate-dir",
                path_str(self.dir.path()),
                "--log",
                path_str(&self.log),
            ],
        )
    }

    fn open(&self, pid: u32, method: &str) {
        open_gate(self.dir.path(), pid, method, "");
    }

    fn tools_lists(&self) -> usize {
        count_method(&read_log(&self.log), "tools/list")
    }

    /// How many `tools/list` requests reached the process `pid`.
    fn tools_lists_to(&self, pid: u32) -> usize {
        read_log(&self.log)
            .iter()
            .filter(|entry| entry["method"] == "tools/list" && entry["pid"] == pid)
            .count()
    }
}

/// Starts two sessions of `gated`'s server (the first with `leader_server`) and opens
/// their gates in order, until the first is listing on its own connection and the
/// second is waiting for that listing.
async fn leading_and_waiting(
    gated: &Gated,
    registry: &ListingRegistry,
    leader_server: ServerConfig,
) -> (Session, u32, Session, u32) {
    let mut leader = begin(vec![leader_server], options(registry));
    let mut waiter = begin(vec![gated.server()], options(registry));
    let (leader_pid, waiter_pid) = (leader.pid().await, waiter.pid().await);
    gated.open(leader_pid, "initialize");
    assert!(!leader.listing().await, "the first startup leads");
    gated.open(waiter_pid, "initialize");
    assert!(
        waiter.listing().await,
        "the second waits for the leader's listing"
    );
    (leader, leader_pid, waiter, waiter_pid)
}

fn logged_fixture(log: &Path, extra: &[&str]) -> ServerConfig {
    let mut args = vec!["--log", path_str(log)];
    args.extend_from_slice(extra);
    fixture("srv", &args)
}

#[tokio::test]
async fn overlapping_startups_send_one_tools_list_and_keep_their_own_connections() {
    let registry = ListingRegistry::new();
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let runtimes: Vec<Runtime> = futures::future::join_all((0..6).map(|_| {
        Runtime::start(
            config([logged_fixture(&log, &["--tools", "3"])]),
            options(&registry),
        )
    }))
    .await
    .into_iter()
    .map(|started| started.unwrap())
    .collect();
    assert!(
        registry.is_empty(),
        "nothing is kept once every startup settled"
    );
    assert_eq!(count_method(&read_log(&log), "tools/list"), 1);
    let requests: usize = runtimes
        .iter()
        .map(|r| r.servers()[0].tools_list_requests)
        .sum();
    assert_eq!(requests, 1);

    // Six processes, one per runtime; a call on each reaches its own.
    let mut pids = Vec::new();
    for runtime in &runtimes {
        let status = &runtime.servers()[0];
        assert_eq!(status.state, ServerState::Ready);
        assert_eq!(status.tools, 8);
        let result = runtime.call_tool("mcp__srv__pid", None).await.unwrap();
        let pid = result.structured_content().cloned().unwrap()["pid"]
            .as_u64()
            .unwrap() as u32;
        assert_eq!(Some(pid), status.pid);
        pids.push(pid);
    }
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 6);

    // Closing one leaves the others working.
    let mut runtimes = runtimes.into_iter();
    runtimes.next().unwrap().shutdown().await;
    for runtime in runtimes {
        assert!(runtime.call_tool("mcp__srv__pid", None).await.is_ok());
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_startup_that_begins_after_the_listing_was_sent_lists_itself() {
    let registry = ListingRegistry::new();
    let gated = Gated::new();
    let mut first = begin(vec![gated.server()], options(&registry));
    let first_pid = first.pid().await;
    gated.open(first_pid, "initialize");
    assert!(!first.listing().await, "the first startup asks the server");

    // Begins while the first listing is in flight, but after its request was sent.
    let mut second = begin(vec![gated.server()], options(&registry));
    let second_pid = second.pid().await;
    gated.open(second_pid, "initialize");
    assert!(
        !second.listing().await,
        "a later startup never waits for an earlier request"
    );
    gated.open(first_pid, "tools-list");
    gated.open(second_pid, "tools-list");
    let (first, second) = (first.runtime().await, second.runtime().await);
    assert_eq!(first.servers()[0].tools_list_requests, 1);
    assert_eq!(second.servers()[0].tools_list_requests, 1);

    // And after the first listing was answered: still its own.
    let third = begin(vec![gated.server()], options(&registry));
    let mut third = third;
    let third_pid = third.pid().await;
    gated.open(third_pid, "initialize");
    gated.open(third_pid, "tools-list");
    let third = third.runtime().await;
    assert_eq!(third.servers()[0].tools_list_requests, 1);
    assert_eq!(gated.tools_lists(), 3);
    assert!(registry.is_empty());
    for runtime in [first, second, third] {
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn waiting_counts_against_the_startup_timeout() {
    let registry = ListingRegistry::new();
    let gated = Gated::new();
    let mut leader = begin(vec![gated.server()], options(&registry));
    let waiter_server = gated.server().with_startup_timeout(Duration::from_secs(2));
    let mut waiter = begin(vec![waiter_server], options(&registry));
    let (leader_pid, waiter_pid) = (leader.pid().await, waiter.pid().await);

    gated.open(leader_pid, "initialize");
    assert!(!leader.listing().await);
    gated.open(waiter_pid, "initialize");
    assert!(
        waiter.listing().await,
        "the waiter waits for the leader's listing"
    );

    let waiter = waiter.runtime().await;
    let status = &waiter.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    assert_eq!(
        status.error.as_ref().unwrap().to_string(),
        "did not finish starting within 2s while waiting for another startup's shared tool listing (raise `startup_timeout_sec`)"
    );

    // The leader is unaffected.
    gated.open(leader_pid, "tools-list");
    let leader = leader.runtime().await;
    assert_eq!(leader.servers()[0].state, ServerState::Ready);
    assert_eq!(leader.servers()[0].tools_list_requests, 1);
    assert_eq!(gated.tools_lists(), 1);
    assert!(registry.is_empty());
    leader.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_leader_hands_over_to_exactly_one_waiter() {
    let registry = ListingRegistry::new();
    let gated = Gated::new();
    let cancel = CancellationToken::new();
    let mut leader = begin(
        vec![gated.server()],
        options(&registry).with_cancellation(cancel.clone()),
    );
    let mut a = begin(vec![gated.server()], options(&registry));
    let mut b = begin(vec![gated.server()], options(&registry));
    let (leader_pid, a_pid, b_pid) = (leader.pid().await, a.pid().await, b.pid().await);

    gated.open(leader_pid, "initialize");
    assert!(!leader.listing().await);
    gated.open(a_pid, "initialize");
    gated.open(b_pid, "initialize");
    assert!(a.listing().await);
    assert!(b.listing().await);

    cancel.cancel();
    let cancelled = leader.runtime().await;
    assert_eq!(cancelled.servers()[0].state, ServerState::Cancelled);
    assert_all_gone(leader_pid as i32, &[]);

    // One waiter takes over on its own connection; the other waits on it.
    let list_own = |e: &StartupEvent| matches!(e, StartupEvent::ListingTools { shared: false, .. });
    let (new_leader_pid, new_leader, other) = tokio::select! {
        _ = a.until(list_own) => (a_pid, a, b),
        _ = b.until(list_own) => (b_pid, b, a),
    };
    gated.open(new_leader_pid, "tools-list");
    let (new_leader, other) = (new_leader.runtime().await, other.finish().await);
    let (other, other_events) = other;
    assert!(
        !other_events
            .iter()
            .any(|e| matches!(e, StartupEvent::ListingTools { shared: false, .. })),
        "only one waiter takes over: {other_events:?}"
    );
    assert_eq!(new_leader.servers()[0].tools_list_requests, 1);
    assert_eq!(
        other.servers()[0].tools_list_requests,
        0,
        "the other waiter got the new listing"
    );
    assert_eq!(other.servers()[0].state, ServerState::Ready);
    let other_pid = if new_leader_pid == a_pid {
        b_pid
    } else {
        a_pid
    };
    assert_eq!(gated.tools_lists_to(new_leader_pid), 1);
    assert_eq!(gated.tools_lists_to(other_pid), 0);
    assert!(registry.is_empty());
    new_leader.shutdown().await;
    other.shutdown().await;
}

#[tokio::test]
async fn a_failed_leader_hands_over_and_its_error_is_never_shared() {
    let registry = ListingRegistry::new();
    let gated = Gated::new();
    let (leader, leader_pid, mut waiter, waiter_pid) =
        leading_and_waiting(&gated, &registry, gated.server()).await;

    open_gate(gated.dir.path(), leader_pid, "tools-list", "fail");
    let leader = leader.runtime().await;
    let error = leader.servers()[0].error.clone().unwrap();
    assert!(mcp_runtime::error::chain(&error).contains("tools/list failed on purpose"));

    assert!(
        !waiter.listing().await,
        "the waiter retries on its own connection"
    );
    gated.open(waiter_pid, "tools-list");
    let waiter = waiter.runtime().await;
    let status = &waiter.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.tools_list_requests, 1);
    assert_eq!(gated.tools_lists(), 2);
    assert!(registry.is_empty());
    waiter.shutdown().await;
}

/// Starts `configs` together (one runtime each) and returns how many `tools/list`
/// requests the runtimes sent.
async fn burst(registry: &ListingRegistry, sessions: Vec<(ServerConfig, &str)>) -> usize {
    let runtimes = futures::future::join_all(sessions.into_iter().map(|(server, scope)| {
        Runtime::start(config([server]), options(registry).with_scope(scope))
    }))
    .await;
    let mut requests = 0;
    for runtime in runtimes {
        let runtime = runtime.unwrap();
        assert_eq!(runtime.servers()[0].state, ServerState::Ready);
        requests += runtime.servers()[0].tools_list_requests;
        runtime.shutdown().await;
    }
    assert!(registry.is_empty());
    requests
}

#[tokio::test]
async fn catalogs_stay_isolated_across_scopes_and_discovery_inputs() {
    let registry = ListingRegistry::new();
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let same = || logged_fixture(&log, &[]);
    assert_eq!(
        burst(&registry, vec![(same(), "a"), (same(), "a")]).await,
        1
    );
    assert_eq!(
        burst(&registry, vec![(same(), "a"), (same(), "b")]).await,
        2,
        "two scopes"
    );
    let with_value = |value| with_env(same(), "REGION", value);
    assert_eq!(
        burst(
            &registry,
            vec![(with_value("eu"), "a"), (with_value("us"), "a")]
        )
        .await,
        2,
        "different environment values"
    );
    assert_eq!(
        burst(
            &registry,
            vec![(with_value("eu"), "a"), (with_value("eu"), "a")]
        )
        .await,
        1
    );
}

#[tokio::test]
async fn http_servers_share_only_with_equal_headers() {
    let registry = ListingRegistry::new();
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--log", path_str(&log)]).await;
    let server = |team: &str| {
        let mut server = ServerConfig::http("srv", &fixture.url);
        if let mcp_runtime::config::TransportConfig::StreamableHttp(http) = &mut server.transport {
            http.http_headers.insert("X-Team".into(), team.into());
        }
        server
    };
    assert_eq!(
        burst(&registry, vec![(server("a"), "s"), (server("a"), "s")]).await,
        1
    );
    assert_eq!(
        burst(&registry, vec![(server("a"), "s"), (server("b"), "s")]).await,
        2
    );
    assert_eq!(count_method(&read_log(&log), "tools/list"), 3);
}

#[tokio::test]
async fn servers_and_operators_can_opt_out() {
    let registry = ListingRegistry::new();
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let by_server = || {
        logged_fixture(
            &log,
            &[
                "--experimental",
                r#"codex/tool-catalog-cache={"cacheable":false}"#,
            ],
        )
    };
    assert_eq!(
        burst(
            &registry,
            vec![(by_server(), "a"), (by_server(), "a"), (by_server(), "a")]
        )
        .await,
        3
    );
    let by_operator = || {
        let mut server = logged_fixture(&log, &["--tools", "1"]);
        server.share_tool_listing = false;
        server
    };
    assert_eq!(
        burst(
            &registry,
            vec![
                (by_operator(), "a"),
                (by_operator(), "a"),
                (by_operator(), "a")
            ]
        )
        .await,
        3
    );
    // The same server with caching explicitly allowed shares.
    let allowed = || {
        logged_fixture(
            &log,
            &[
                "--experimental",
                r#"codex/tool-catalog-cache={"cacheable":true}"#,
            ],
        )
    };
    assert_eq!(
        burst(&registry, vec![(allowed(), "a"), (allowed(), "a")]).await,
        1
    );
}

#[tokio::test]
async fn refreshes_always_ask_the_server_on_their_own_connection() {
    let registry = ListingRegistry::new();
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let runtimes: Vec<Runtime> = futures::future::join_all(
        (0..3).map(|_| Runtime::start(config([logged_fixture(&log, &[])]), options(&registry))),
    )
    .await
    .into_iter()
    .map(Result::unwrap)
    .collect();
    assert_eq!(count_method(&read_log(&log), "tools/list"), 1);
    for runtime in &runtimes {
        runtime.refresh_tools("srv").await.unwrap();
    }
    let log_entries = read_log(&log);
    let lists: Vec<_> = log_entries
        .iter()
        .filter(|e| e["method"] == "tools/list")
        .collect();
    assert_eq!(lists.len(), 4);
    let mut pids: Vec<_> = lists[1..]
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 3, "each refresh went to its own process");

    // A server's list_changed refreshes that connection's catalog only.
    let mut catalog = runtimes[0].subscribe_catalog();
    runtimes[0]
        .call_tool(
            "mcp__srv__add_tool",
            json!({"name": "extra"}).as_object().cloned(),
        )
        .await
        .unwrap();
    let updated = catalog
        .wait_for(|catalog| catalog.resolve("mcp__srv__extra").is_some())
        .await
        .unwrap()
        .clone();
    assert!(updated.resolve("mcp__srv__extra").is_some());
    for runtime in &runtimes[1..] {
        runtime.refresh_tools("srv").await.unwrap();
        assert!(runtime.catalog().resolve("mcp__srv__extra").is_none());
    }
    assert!(registry.is_empty());
    for runtime in runtimes {
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn sixty_four_startups_share_one_listing() {
    let registry = ListingRegistry::new();
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let runtimes: Vec<Runtime> = futures::future::join_all((0..64).map(|_| {
        let server = logged_fixture(&log, &["--tools", "50", "--list-delay-ms", "200"])
            .with_startup_timeout(Duration::from_secs(60));
        Runtime::start(config([server]), options(&registry))
    }))
    .await
    .into_iter()
    .map(Result::unwrap)
    .collect();
    assert!(
        runtimes
            .iter()
            .all(|r| r.servers()[0].state == ServerState::Ready)
    );
    assert!(runtimes.iter().all(|r| r.catalog().tools().len() == 55));
    assert_eq!(count_method(&read_log(&log), "tools/list"), 1);
    assert!(registry.is_empty());
    futures::future::join_all(runtimes.into_iter().map(Runtime::shutdown)).await;
}

#[tokio::test]
async fn a_leader_that_times_out_hands_over_to_a_waiter() {
    let registry = ListingRegistry::new();
    let gated = Gated::new();
    let short = gated.server().with_startup_timeout(Duration::from_secs(2));
    let (leader, _, mut waiter, waiter_pid) = leading_and_waiting(&gated, &registry, short).await;

    // The leader's tools/list is never answered: its own startup timeout ends it.
    let leader = leader.runtime().await;
    assert_eq!(
        leader.servers()[0].error.as_ref().unwrap().to_string(),
        "did not finish starting within 2s (raise `startup_timeout_sec`)"
    );
    assert!(!waiter.listing().await, "the waiter asks its own server");
    gated.open(waiter_pid, "tools-list");
    let waiter = waiter.runtime().await;
    assert_eq!(waiter.servers()[0].state, ServerState::Ready);
    assert_eq!(waiter.servers()[0].tools_list_requests, 1);
    assert_eq!(gated.tools_lists_to(waiter_pid), 1);
    assert!(registry.is_empty());
    waiter.shutdown().await;
}

#[tokio::test]
async fn a_waiter_that_takes_over_and_fails_reports_its_own_error() {
    let registry = ListingRegistry::new();
    let gated = Gated::new();
    let (leader, leader_pid, mut waiter, waiter_pid) =
        leading_and_waiting(&gated, &registry, gated.server()).await;
    open_gate(gated.dir.path(), leader_pid, "tools-list", "fail");
    assert!(!waiter.listing().await);
    open_gate(gated.dir.path(), waiter_pid, "tools-list", "fail");

    let (leader, waiter) = (leader.runtime().await, waiter.runtime().await);
    for runtime in [&leader, &waiter] {
        let status = &runtime.servers()[0];
        assert_eq!(status.state, ServerState::Failed);
        assert_eq!(status.tools_list_requests, 1, "each sent its own, once");
    }
    // Each failure is its own request's: one tools/list reached each process.
    assert_eq!(gated.tools_lists_to(leader_pid), 1);
    assert_eq!(gated.tools_lists_to(waiter_pid), 1);
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_waiter_whose_own_server_died_fails_instead_of_taking_the_listing() {
    let registry = ListingRegistry::new();
    let gated = Gated::new();
    let (leader, leader_pid, waiter, waiter_pid) =
        leading_and_waiting(&gated, &registry, gated.server()).await;

    // SAFETY: signalling a fixture process this test started.
    unsafe { libc::kill(waiter_pid as i32, libc::SIGKILL) };
    assert!(wait_for_exit(waiter_pid as i32, Duration::from_secs(10)));
    gated.open(leader_pid, "tools-list");
    let leader = leader.runtime().await;
    assert_eq!(leader.servers()[0].state, ServerState::Ready);
    let waiter = waiter.runtime().await;
    let status = &waiter.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = status.error.as_ref().unwrap().to_string();
    assert!(
        error.starts_with("server process exited during startup (signal: 9"),
        "{error}"
    );
    assert!(registry.is_empty());
    leader.shutdown().await;
}

/// Listings a 2026-07-28 server lets later startups reuse (`ttlMs`, `cacheScope`):
/// the exception to the burst-only rule that only the server can grant.
mod granted {
    use mcp_runtime::config::{Protocol, TransportConfig};

    use super::*;

    /// Ten minutes: far longer than any test, so only a revocation or another key can
    /// make a later startup ask again.
    const TTL_MS: &str = "600000";

    /// Starts `server` alone, sharing listings through `registry`, and waits for it.
    async fn start(server: ServerConfig, registry: &ListingRegistry) -> Runtime {
        let runtime = Runtime::start(config([server]), options(registry))
            .await
            .expect("the start succeeds");
        assert_eq!(runtime.servers()[0].state, ServerState::Ready);
        runtime
    }

    /// A stdio fixture of `era` logging to `log`, whose listings carry `ttlMs` and the
    /// given `cacheScope`, spoken to in the revision of its era without a probe.
    fn stdio(log: &Path, era: &str, scope: &str) -> ServerConfig {
        let protocol = if era == "handshake" {
            Protocol::V2025_11_25
        } else {
            Protocol::V2026_07_28
        };
        fixture_auto(
            "granting",
            &[
                "--era",
                era,
                "--list-ttl-ms",
                TTL_MS,
                "--list-cache-scope",
                scope,
                "--log",
                path_str(log),
            ],
        )
        .with_protocol(protocol)
    }

    /// The HTTP fixture at `url` reached with `Authorization: Bearer {token}`.
    fn http(url: &str, token: &str) -> ServerConfig {
        let mut server = ServerConfig::http("granting", url);
        if let TransportConfig::StreamableHttp(http) = &mut server.transport {
            http.http_headers
                .insert("Authorization".into(), format!("Bearer {token}"));
        }
        server
    }

    #[tokio::test]
    async fn a_2026_07_28_listing_with_a_ttl_serves_a_later_startup_without_asking_again() {
        let registry = ListingRegistry::new();
        let dir = temp_dir();
        let log = dir.path().join("log.jsonl");
        let first = start(stdio(&log, "stateless", "private"), &registry).await;
        let status = &first.servers()[0];
        assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
        assert!(!status.served_from_cache);
        assert_eq!(status.tools_list_requests, 1);
        let tools = status.tools;
        first.shutdown().await;

        let later = start(stdio(&log, "stateless", "private"), &registry).await;
        let status = &later.servers()[0];
        assert!(status.served_from_cache, "the grant serves a later startup");
        assert_eq!(status.tools_list_requests, 0);
        assert_eq!(status.tools, tools);
        assert_eq!(count_method(&read_log(&log), "tools/list"), 1);
        // The later startup has its own connection all the same.
        let answer = later
            .call_tool("mcp__granting__echo", object(json!({"text": "hi"})))
            .await
            .expect("a call on the later startup's own connection");
        assert_eq!(answer.as_object()["isError"], false);
        later.shutdown().await;
        assert!(!registry.is_empty(), "the grant outlives both runtimes");
    }

    #[tokio::test]
    async fn the_same_hints_from_a_handshake_server_grant_nothing() {
        let registry = ListingRegistry::new();
        let dir = temp_dir();
        let log = dir.path().join("log.jsonl");
        for _ in 0..2 {
            let runtime = start(stdio(&log, "handshake", "public"), &registry).await;
            let status = &runtime.servers()[0];
            assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
            assert!(!status.served_from_cache);
            assert_eq!(status.tools_list_requests, 1);
            runtime.shutdown().await;
        }
        assert_eq!(count_method(&read_log(&log), "tools/list"), 2);
        assert!(registry.is_empty());
    }

    #[tokio::test]
    async fn list_changed_revokes_the_grant() {
        let registry = ListingRegistry::new();
        // One server process for both runtimes: the tool added stays listed.
        let server = http_fixture(&[
            "--era",
            "stateless",
            "--list-ttl-ms",
            TTL_MS,
            "--list-cache-scope",
            "private",
        ])
        .await;
        let first = start(http(&server.url, "alice"), &registry).await;
        let mut catalog = first.subscribe_catalog();
        first
            .call_tool("mcp__granting__add_tool", object(json!({"name": "late"})))
            .await
            .expect("add_tool succeeds");
        // The refresh after list_changed revokes the grant before it lists again.
        catalog
            .wait_for(|catalog| catalog.tools().any(|tool| tool.tool.name == "late"))
            .await
            .unwrap();
        first.shutdown().await;

        let later = start(http(&server.url, "alice"), &registry).await;
        let status = &later.servers()[0];
        assert!(!status.served_from_cache, "a revoked grant serves nobody");
        assert_eq!(status.tools_list_requests, 1);
        assert!(
            later.catalog().tools().any(|tool| tool.tool.name == "late"),
            "the later startup lists the tool added since"
        );
        later.shutdown().await;
    }

    /// Two callers with different credentials, one after the other, then the first
    /// again: who is served from the grant of the first startup.
    async fn served_from_cache_across_credentials(scope: &str) -> [bool; 2] {
        let registry = ListingRegistry::new();
        let server = http_fixture(&[
            "--era",
            "stateless",
            "--list-ttl-ms",
            TTL_MS,
            "--list-cache-scope",
            scope,
        ])
        .await;
        let first = start(http(&server.url, "alice"), &registry).await;
        assert!(!first.servers()[0].served_from_cache);
        first.shutdown().await;
        let mut served = [false; 2];
        for (caller, token) in served.iter_mut().zip(["bob", "alice"]) {
            let runtime = start(http(&server.url, token), &registry).await;
            *caller = runtime.servers()[0].served_from_cache;
            runtime.shutdown().await;
        }
        served
    }

    #[tokio::test]
    async fn a_public_grant_serves_other_credentials_and_a_private_one_only_the_same() {
        assert_eq!(
            served_from_cache_across_credentials("public").await,
            [true, true]
        );
        assert_eq!(
            served_from_cache_across_credentials("private").await,
            [false, true]
        );
    }
}
