//! A start that waits only for what it needs: optional servers go on starting after
//! `Runtime::start` returned and join the catalog when ready; calls wait for the
//! server they need. Slow servers are held with gates (`--gate-dir`: the fixture
//! answers `initialize` and `tools/list` only once the test creates the gate file), so
//! what is still starting is decided by the test, never by timing.

use std::{path::Path, time::Duration};

use mcp_runtime::{
    CallError, Catalog, ListingRegistry, Runtime, ServerConfig, ServerState, StartOptions,
    StartupError, StartupEvent,
};
use serde_json::json;
use tokio::sync::{mpsc::UnboundedReceiver, watch};

use crate::support::*;

/// Servers whose `initialize` and `tools/list` wait for gate files in one directory.
struct Gates {
    dir: tempfile::TempDir,
    log: std::path::PathBuf,
}

impl Gates {
    fn new() -> Self {
        let dir = temp_dir();
        let log = dir.path().join("log.jsonl");
        Self { dir, log }
    }

    /// A server named `name` held by these gates, logging what it receives.
    fn server(&self, name: &str) -> ServerConfig {
        fixture(
            name,
            &[
                "--gate-dir",
                path_str(self.dir.path()),
                "--log",
                path_str(&self.log),
            ],
        )
    }

    /// Lets `pid` answer `initialize` and every `tools/list`.
    fn open_all(&self, pid: u32) {
        self.open(pid, "initialize");
        self.open(pid, "tools-list");
    }

    fn open(&self, pid: u32, method: &str) {
        open_gate(self.dir.path(), pid, method);
    }

    /// How many `tools/list` requests reached the process `pid`.
    fn tools_lists_to(&self, pid: u32) -> usize {
        read_log(&self.log)
            .iter()
            .filter(|entry| entry["method"] == "tools/list" && entry["pid"] == pid)
            .count()
    }
}

fn open_gate(dir: &Path, pid: u32, method: &str) {
    mcp_runtime_fixtures::gate::open_gate(&dir.join(format!("{pid}.{method}")), "")
        .expect("opening a gate");
}

/// Starts `servers` with `options` and its own registry and event channel.
async fn start_with(
    servers: Vec<ServerConfig>,
    options: StartOptions,
    registry: &ListingRegistry,
) -> (Runtime, UnboundedReceiver<StartupEvent>) {
    let (sender, events) = tokio::sync::mpsc::unbounded_channel();
    let runtime = Runtime::start(
        config(servers),
        options
            .with_events(sender)
            .with_listing_registry(registry.clone()),
    )
    .await
    .expect("start succeeds");
    (runtime, events)
}

/// Reads events until one `matches`; returns it.
async fn until(
    events: &mut UnboundedReceiver<StartupEvent>,
    matches: impl Fn(&StartupEvent) -> bool,
) -> StartupEvent {
    loop {
        let event = events.recv().await.expect("events go on");
        if matches(&event) {
            return event;
        }
    }
}

/// The pid `server` was spawned with, read from the events.
async fn pid_of(events: &mut UnboundedReceiver<StartupEvent>, server: &str) -> u32 {
    match until(
        events,
        |e| matches!(e, StartupEvent::Spawned { server: s, .. } if s == server),
    )
    .await
    {
        StartupEvent::Spawned { pid, .. } => pid,
        _ => unreachable!(),
    }
}

/// Waits until a catalog that has `name` is published.
async fn until_published(catalog: &mut watch::Receiver<std::sync::Arc<Catalog>>, name: &str) {
    catalog
        .wait_for(|catalog| catalog.resolve(name).is_some())
        .await
        .expect("the runtime is alive");
}

fn state(runtime: &Runtime, server: &str) -> ServerState {
    runtime
        .servers()
        .into_iter()
        .find(|status| status.name == server)
        .expect("a configured server")
        .state
}

/// The servers with tools in `catalog`, in name order.
fn servers_in(catalog: &Catalog) -> Vec<&str> {
    let servers: std::collections::BTreeSet<&str> =
        catalog.tools().map(|tool| &*tool.server).collect();
    servers.into_iter().collect()
}

#[tokio::test]
async fn start_returns_before_an_optional_slow_server_is_ready_which_then_joins_the_catalog() {
    let gates = Gates::new();
    let registry = ListingRegistry::new();
    // The default: the required server, then a grace for the optional one.
    let (runtime, mut events) = start_with(
        vec![
            fixture("fast", &[]).with_required(true),
            gates.server("slow"),
        ],
        StartOptions::new(),
        &registry,
    )
    .await;
    assert_eq!(state(&runtime, "fast"), ServerState::Ready);
    assert_eq!(state(&runtime, "slow"), ServerState::Starting);
    let status = runtime.servers();
    assert!(status[1].error.is_none() && status[1].tools == 0);
    assert_eq!(servers_in(&runtime.catalog()), ["fast"]);

    let mut catalog = runtime.subscribe_catalog();
    catalog.borrow_and_update();
    let slow = pid_of(&mut events, "slow").await;
    gates.open_all(slow);
    until_published(&mut catalog, "mcp__slow__echo").await;
    assert_eq!(servers_in(&catalog.borrow()), ["fast", "slow"]);
    // Its `Ready` comes once its tools are in the catalog, and it is ready by then.
    until(
        &mut events,
        |e| matches!(e, StartupEvent::Ready { server, .. } if server == "slow"),
    )
    .await;
    assert_eq!(state(&runtime, "slow"), ServerState::Ready);
    match until(&mut events, |e| matches!(e, StartupEvent::Summary(_))).await {
        StartupEvent::Summary(summary) => assert_eq!(summary.ready, ["fast", "slow"]),
        _ => unreachable!(),
    }
    runtime.shutdown().await;
    assert_all_gone(slow as i32, &[]);
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_call_to_a_starting_server_waits_for_it_and_succeeds() {
    let gates = Gates::new();
    let registry = ListingRegistry::new();
    let (runtime, mut events) = start_with(
        vec![gates.server("slow")],
        StartOptions::new().with_optional_grace(Duration::ZERO),
        &registry,
    )
    .await;
    assert_eq!(state(&runtime, "slow"), ServerState::Starting);
    let call = runtime.call_tool("mcp__slow__echo", json!({"a": 1}).as_object().cloned());
    let open = async {
        let pid = pid_of(&mut events, "slow").await;
        gates.open_all(pid);
        pid
    };
    let (result, pid) = tokio::join!(call, open);
    let result = result.expect("the call succeeds once its server is ready");
    assert_eq!(result.structured_content().cloned(), Some(json!({"a": 1})));
    assert_eq!(state(&runtime, "slow"), ServerState::Ready);
    runtime.shutdown().await;
    assert_all_gone(pid as i32, &[]);
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_call_to_a_starting_server_is_bounded_by_its_startup_timeout() {
    let registry = ListingRegistry::new();
    let hung = fixture("hung", &["--hang-initialize"]).with_startup_timeout(Duration::from_secs(1));
    let (runtime, mut events) = start_with(
        vec![hung, fixture("fine", &[])],
        StartOptions::new().with_optional_grace(Duration::ZERO),
        &registry,
    )
    .await;
    let error = runtime
        .call_tool("mcp__hung__echo", None)
        .await
        .expect_err("the server never starts");
    match &error {
        CallError::ServerNotStarted {
            server,
            source: StartupError::Timeout { after, .. },
        } => assert_eq!((server.as_str(), *after), ("hung", Duration::from_secs(1))),
        other => panic!("expected the startup timeout, got {other:?}"),
    }
    assert_eq!(
        mcp_runtime::error::chain(&error),
        "server `hung` did not start: did not finish starting within 1s (raise `startup_timeout_sec`)"
    );
    assert_eq!(state(&runtime, "hung"), ServerState::Failed);
    let pid = pid_of(&mut events, "hung").await;
    runtime.shutdown().await;
    assert_all_gone(pid as i32, &[]);
}

#[tokio::test]
async fn a_call_to_a_failed_server_fails_at_once_with_its_startup_error() {
    let (runtime, _) = start(config([
        fixture("crash", &["--exit-during-startup", "3"]),
        fixture("fine", &[]),
    ]))
    .await;
    let error = runtime
        .call_tool("mcp__crash__echo", None)
        .await
        .expect_err("the server did not start");
    let CallError::ServerNotStarted { server, source } = &error else {
        panic!("expected the startup error, got {error:?}");
    };
    assert_eq!(server, "crash");
    assert!(matches!(source, StartupError::Exited { .. }), "{source:?}");
    let message = mcp_runtime::error::chain(&error);
    assert!(
        message.starts_with(
            "server `crash` did not start: server process exited during startup (exit status: 3)"
        ),
        "{message}"
    );
    // A name no server can own is still unknown.
    assert!(matches!(
        runtime.call_tool("mcp__fine__nothing", None).await,
        Err(CallError::UnknownTool { .. })
    ));
    runtime.shutdown().await;
}

#[tokio::test]
async fn shutting_down_while_a_server_starts_ends_its_process() {
    let gates = Gates::new();
    let registry = ListingRegistry::new();
    let (runtime, mut events) = start_with(
        vec![gates.server("slow")],
        StartOptions::new().with_optional_grace(Duration::ZERO),
        &registry,
    )
    .await;
    let pid = pid_of(&mut events, "slow").await;
    runtime.shutdown().await;
    assert!(
        drain(events)
            .iter()
            .any(|event| matches!(event, StartupEvent::Cancelled { server } if server == "slow")),
        "the startup was cancelled before shutdown returned"
    );
    assert_all_gone(pid as i32, &[]);
    assert!(registry.is_empty());
}

#[tokio::test]
async fn startups_after_the_start_returned_share_one_listing() {
    let gates = Gates::new();
    let registry = ListingRegistry::new();
    let options = || StartOptions::new().with_optional_grace(Duration::ZERO);
    let (leader, mut leader_events) =
        start_with(vec![gates.server("srv")], options(), &registry).await;
    let (waiter, mut waiter_events) =
        start_with(vec![gates.server("srv")], options(), &registry).await;
    // Both are stamped once spawned; the first to finish its handshake leads.
    let leader_pid = pid_of(&mut leader_events, "srv").await;
    let waiter_pid = pid_of(&mut waiter_events, "srv").await;
    gates.open(leader_pid, "initialize");
    until(&mut leader_events, |e| {
        matches!(e, StartupEvent::ListingTools { shared: false, .. })
    })
    .await;
    gates.open(waiter_pid, "initialize");
    until(&mut waiter_events, |e| {
        matches!(e, StartupEvent::ListingTools { shared: true, .. })
    })
    .await;
    let (mut leader_catalog, mut waiter_catalog) =
        (leader.subscribe_catalog(), waiter.subscribe_catalog());
    gates.open(leader_pid, "tools-list");
    until_published(&mut leader_catalog, "mcp__srv__echo").await;
    until_published(&mut waiter_catalog, "mcp__srv__echo").await;
    assert_eq!(gates.tools_lists_to(leader_pid), 1);
    assert_eq!(
        gates.tools_lists_to(waiter_pid),
        0,
        "the waiter took the listing"
    );
    let requests: Vec<usize> = [&leader, &waiter]
        .map(|runtime| runtime.servers()[0].tools_list_requests)
        .into();
    assert_eq!(requests, [1, 0]);
    // Each keeps its own connection for calls.
    let pid_of_call = |result: mcp_runtime::ToolResult| {
        result
            .structured_content()
            .cloned()
            .expect("`pid` answers structured")["pid"]
            .clone()
    };
    let called = pid_of_call(waiter.call_tool("mcp__srv__pid", None).await.unwrap());
    assert_eq!(called, json!(waiter_pid));
    leader.shutdown().await;
    waiter.shutdown().await;
    assert_all_gone(leader_pid as i32, &[]);
    assert_all_gone(waiter_pid as i32, &[]);
    assert!(
        registry.is_empty(),
        "nothing is kept once no startup is pending"
    );
}

#[tokio::test]
async fn a_waiter_takes_over_when_the_runtime_leading_its_listing_shuts_down() {
    let gates = Gates::new();
    let registry = ListingRegistry::new();
    let options = || StartOptions::new().with_optional_grace(Duration::ZERO);
    let (leader, mut leader_events) =
        start_with(vec![gates.server("srv")], options(), &registry).await;
    let (waiter, mut waiter_events) =
        start_with(vec![gates.server("srv")], options(), &registry).await;
    let leader_pid = pid_of(&mut leader_events, "srv").await;
    let waiter_pid = pid_of(&mut waiter_events, "srv").await;
    gates.open(leader_pid, "initialize");
    until(&mut leader_events, |e| {
        matches!(e, StartupEvent::ListingTools { shared: false, .. })
    })
    .await;
    gates.open_all(waiter_pid);
    until(&mut waiter_events, |e| {
        matches!(e, StartupEvent::ListingTools { shared: true, .. })
    })
    .await;
    // The leader's listing never comes: its runtime shuts down while it waits.
    leader.shutdown().await;
    assert_all_gone(leader_pid as i32, &[]);
    let mut catalog = waiter.subscribe_catalog();
    until_published(&mut catalog, "mcp__srv__echo").await;
    assert_eq!(
        gates.tools_lists_to(waiter_pid),
        1,
        "it listed on its own connection"
    );
    assert_eq!(state(&waiter, "srv"), ServerState::Ready);
    waiter.shutdown().await;
    assert_all_gone(waiter_pid as i32, &[]);
    assert!(registry.is_empty());
}

#[tokio::test]
async fn waiting_for_a_shared_listing_after_the_start_counts_against_the_startup_timeout() {
    let gates = Gates::new();
    let registry = ListingRegistry::new();
    let options = || StartOptions::new().with_optional_grace(Duration::ZERO);
    let (leader, mut leader_events) =
        start_with(vec![gates.server("srv")], options(), &registry).await;
    let waiting = gates
        .server("srv")
        .with_startup_timeout(Duration::from_secs(1));
    let (waiter, mut waiter_events) = start_with(vec![waiting], options(), &registry).await;
    let leader_pid = pid_of(&mut leader_events, "srv").await;
    let waiter_pid = pid_of(&mut waiter_events, "srv").await;
    gates.open(leader_pid, "initialize");
    until(&mut leader_events, |e| {
        matches!(e, StartupEvent::ListingTools { shared: false, .. })
    })
    .await;
    gates.open(waiter_pid, "initialize");
    let error = waiter
        .call_tool("mcp__srv__echo", None)
        .await
        .expect_err("the leader's listing never comes");
    assert!(
        matches!(
            &error,
            CallError::ServerNotStarted {
                source: StartupError::Timeout {
                    waiting_for_shared_listing: true,
                    ..
                },
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(state(&leader, "srv"), ServerState::Starting);
    waiter.shutdown().await;
    leader.shutdown().await;
    assert_all_gone(leader_pid as i32, &[]);
    assert_all_gone(waiter_pid as i32, &[]);
    assert!(registry.is_empty());
}

#[tokio::test]
async fn dropping_the_runtime_while_a_server_starts_ends_its_process() {
    let gates = Gates::new();
    let registry = ListingRegistry::new();
    let (runtime, mut events) = start_with(
        vec![gates.server("slow")],
        StartOptions::new().with_optional_grace(Duration::ZERO),
        &registry,
    )
    .await;
    let pid = pid_of(&mut events, "slow").await;
    drop(runtime);
    until(
        &mut events,
        |e| matches!(e, StartupEvent::Cancelled { server } if server == "slow"),
    )
    .await;
    assert_all_gone(pid as i32, &[]);
    assert!(registry.is_empty());
}

/// Waits until `pid` has received `count` `tools/list` requests, looking at its log
/// each time its gates look for their files.
async fn until_listed(gates: &Gates, pid: u32, count: usize) {
    let listed = async {
        while gates.tools_lists_to(pid) < count {
            tokio::time::sleep(mcp_runtime_fixtures::gate::POLL_INTERVAL).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), listed)
        .await
        .expect("the request reaches the server");
}

#[tokio::test]
async fn dropping_the_runtime_while_a_refresh_restarts_a_server_ends_the_new_process() {
    let gates = Gates::new();
    let registry = ListingRegistry::new();
    // A long startup timeout: the restart below would wait for it, gated.
    let server = gates
        .server("srv")
        .with_startup_timeout(Duration::from_secs(600));
    let (runtime, mut events) = start_with(vec![server], StartOptions::new(), &registry).await;
    let first = pid_of(&mut events, "srv").await;
    gates.open_all(first);
    until(
        &mut events,
        |e| matches!(e, StartupEvent::Ready { server, .. } if server == "srv"),
    )
    .await;
    // The refresh of the first change waits at the first process's closed gate; the
    // second change is noted meanwhile, so a second refresh follows the first.
    std::fs::remove_file(gates.dir.path().join(format!("{first}.tools-list"))).unwrap();
    let add = |name: &str| {
        runtime.call_tool(
            "mcp__srv__add_tool",
            json!({ "name": name }).as_object().cloned(),
        )
    };
    add("one").await.expect("add_tool works");
    until_listed(&gates, first, 2).await;
    add("two").await.expect("add_tool works");
    // The first refresh fails with the server gone; the second restarts it.
    // SAFETY: kill(2) with a pid this test's runtime spawned.
    assert_eq!(unsafe { libc::kill(first as i32, libc::SIGKILL) }, 0);
    let restarted = pid_of(&mut events, "srv").await;
    assert_ne!(restarted, first);

    // The restarted process waits at its `initialize` gate, which stays closed: the
    // restart ends with the runtime, and with it the last of the runtime's state
    // (which holds the events' sender), well before its startup timeout.
    drop(runtime);
    let ended = async {
        while let Some(event) = events.recv().await {
            assert!(
                !matches!(event, StartupEvent::Restarted { .. }),
                "a restart ended after the runtime was dropped: {event:?}"
            );
        }
    };
    tokio::time::timeout(Duration::from_secs(20), ended)
        .await
        .expect("the restart ends with the runtime");
    assert_all_gone(restarted as i32, &[first as i32]);
    assert!(registry.is_empty());
}

/// The pids of `servers`, read from the events in whatever order they were spawned.
async fn pids_of(
    events: &mut UnboundedReceiver<StartupEvent>,
    servers: &[&str],
) -> std::collections::HashMap<String, u32> {
    let mut pids = std::collections::HashMap::new();
    while pids.len() < servers.len() {
        if let StartupEvent::Spawned { server, pid } = events.recv().await.expect("events go on")
            && servers.contains(&server.as_str())
        {
            pids.insert(server, pid);
        }
    }
    pids
}

#[tokio::test]
async fn servers_get_codex_names_whichever_becomes_ready_first() {
    // Codex's names for `a-b` and `a_b` configured together: both hashed.
    let codex = [
        ("a-b", "mcp__a_b_60ab36632e07__echo"),
        ("a_b", "mcp__a_b_ec4afa65682a__echo"),
    ];
    for order in [["a-b", "a_b"], ["a_b", "a-b"]] {
        let gates = Gates::new();
        let registry = ListingRegistry::new();
        let (runtime, mut events) = start_with(
            vec![gates.server("a-b"), gates.server("a_b")],
            StartOptions::new().with_optional_grace(Duration::ZERO),
            &registry,
        )
        .await;
        let pids = pids_of(&mut events, &order).await;
        let mut catalog = runtime.subscribe_catalog();
        for (ready, server) in order.iter().enumerate() {
            gates.open_all(pids[*server]);
            catalog
                .wait_for(|catalog| servers_in(catalog).len() == ready + 1)
                .await
                .expect("the runtime is alive");
            let echo_of = |server: &str| {
                let catalog = catalog.borrow();
                let echo = catalog
                    .tools()
                    .find(|tool| &*tool.server == server && tool.tool.name == "echo");
                echo.map(|tool| tool.qualified_name.to_string())
            };
            for (server, name) in &codex[..] {
                if order[..=ready].contains(server) {
                    assert_eq!(
                        echo_of(server).as_deref(),
                        Some(*name),
                        "`{}` ready first, then `{}`",
                        order[0],
                        order[1]
                    );
                }
            }
        }
        for (server, name) in codex {
            let (owner, tool) = runtime.catalog().resolve(name).map_or_else(
                || panic!("`{name}` is in the catalog"),
                |tool| (tool.server.to_string(), tool.tool.name.to_string()),
            );
            assert_eq!((owner.as_str(), tool.as_str()), (server, "echo"));
        }
        runtime.shutdown().await;
        for pid in pids.values() {
            assert_all_gone(*pid as i32, &[]);
        }
        assert!(registry.is_empty());
    }
}
