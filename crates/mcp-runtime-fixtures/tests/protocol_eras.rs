//! Protocol eras over stdio against real processes: the probe with `server/discover`,
//! the `initialize` fallback (on the same process, or a fresh one after silence), the
//! era remembered per configuration, the pinned `protocol` values, version
//! mismatches, and sandbox metadata under 2026-07-28.

use std::{collections::BTreeSet, path::Path, time::Duration};

use mcp_runtime::{
    CallAuthority, CallOptions, ListingRegistry, Runtime, SandboxState, ServerConfig, ServerState,
    StartOptions, StartupEvent, config::Protocol,
};
use serde_json::{Value, json};

use crate::support::*;

/// The request `_meta` keys of 2026-07-28.
const PROTOCOL_KEYS: [&str; 3] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/clientCapabilities",
];

/// Starts `servers` with `options` (which name the registry) and waits for every
/// server to settle, collecting the events.
async fn start_with(
    servers: Vec<ServerConfig>,
    options: StartOptions,
) -> (Runtime, Vec<StartupEvent>) {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let runtime = Runtime::start(config(servers), options.wait_for_all().with_events(sender))
        .await
        .expect("start succeeds");
    (runtime, drain(receiver))
}

/// Options with a registry of their own: no listing or era is shared with other
/// tests.
fn fresh() -> StartOptions {
    StartOptions::new().with_listing_registry(ListingRegistry::new())
}

fn spawned(events: &[StartupEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|event| match event {
            StartupEvent::Spawned { pid, .. } => Some(*pid),
            _ => None,
        })
        .collect()
}

/// The `_meta` of each request with `method` in the log.
fn metas(log: &Path, method: &str) -> Vec<Value> {
    read_log(log)
        .into_iter()
        .filter(|entry| entry["method"] == method)
        .map(|entry| entry["params"]["_meta"].clone())
        .collect()
}

fn assert_modern_meta(meta: &Value) {
    for key in PROTOCOL_KEYS {
        assert!(meta.get(key).is_some(), "{key} missing from {meta}");
    }
    assert_eq!(meta[PROTOCOL_KEYS[0]], "2026-07-28");
    assert_eq!(meta[PROTOCOL_KEYS[1]]["name"], "mcp-runtime");
}

fn error_of(runtime: &Runtime) -> String {
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    status.error.as_ref().expect("an error").to_string()
}

fn open_gate(dir: &Path, pid: u32, method: &str) {
    std::fs::write(dir.join(format!("{pid}.{method}")), "").expect("writing a gate file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_32_auto_startups_of_a_handshake_server_spawns_32_processes_and_lists_once() {
    const STARTUPS: usize = 32;
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let gates = dir.path().join("gates");
    std::fs::create_dir(&gates).unwrap();
    let registry = ListingRegistry::new();
    // `initialize` waits for its gate: no `tools/list` is sent before every startup
    // has spawned its server (and so taken its listing stamp).
    let server = fixture_auto(
        "burst",
        &["--log", path_str(&log), "--gate-dir", path_str(&gates)],
    );
    let (sender, mut events) = tokio::sync::mpsc::unbounded_channel();
    let starts: Vec<_> = (0..STARTUPS)
        .map(|_| {
            let options = StartOptions::new()
                .wait_for_all()
                .with_listing_registry(registry.clone())
                .with_events(sender.clone());
            tokio::spawn(Runtime::start(config([server.clone()]), options))
        })
        .collect();
    drop(sender);
    let mut pids = Vec::new();
    let all_spawned = async {
        while pids.len() < STARTUPS {
            if let Some(StartupEvent::Spawned { pid, .. }) = events.recv().await {
                pids.push(pid);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), all_spawned)
        .await
        .unwrap_or_else(|_| panic!("only {} of 32 processes were spawned", pids.len()));
    for pid in &pids {
        open_gate(&gates, *pid, "initialize");
        open_gate(&gates, *pid, "tools-list");
    }
    let mut runtimes = Vec::new();
    for start in starts {
        runtimes.push(start.await.unwrap().expect("start succeeds"));
    }
    for runtime in &runtimes {
        let status = &runtime.servers()[0];
        assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
        assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    }
    let late = spawned(&drain(events));
    pids.extend(late);
    assert_eq!(
        pids.len(),
        STARTUPS,
        "one process each, the probed one kept"
    );
    let entries = read_log(&log);
    assert_eq!(count_method(&entries, "server/discover"), 1, "one probe");
    assert_eq!(count_method(&entries, "initialize"), STARTUPS);
    assert_eq!(
        count_method(&entries, "tools/list"),
        1,
        "one shared listing"
    );
    let probe_pid = entries
        .iter()
        .find(|entry| entry["method"] == "server/discover")
        .map(|entry| entry["pid"].as_u64().unwrap() as u32)
        .unwrap();
    let initialized = |pid: u32| {
        entries
            .iter()
            .any(|entry| entry["method"] == "initialize" && entry["pid"] == pid)
    };
    assert!(initialized(probe_pid), "the probed process is initialized");
    let serving: BTreeSet<u32> = runtimes
        .iter()
        .map(|runtime| runtime.servers()[0].pid.unwrap())
        .collect();
    assert!(serving.contains(&probe_pid), "and serves");
    let talked: BTreeSet<u64> = entries.iter().filter_map(|e| e["pid"].as_u64()).collect();
    assert_eq!(talked.len(), STARTUPS);
    for runtime in runtimes {
        runtime.shutdown().await;
    }
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_known_handshake_server_is_never_probed_again() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let registry = ListingRegistry::new();
    let server = fixture_auto("known", &["--log", path_str(&log)]);
    let options = || StartOptions::new().with_listing_registry(registry.clone());

    let (first, events) = start_with(vec![server.clone()], options()).await;
    let pids = spawned(&events);
    assert_eq!(pids.len(), 1, "the probed process is initialized and kept");
    assert_eq!(first.servers()[0].pid, Some(pids[0]));

    let (second, events) = start_with(vec![server.clone()], options()).await;
    assert_eq!(spawned(&events).len(), 1, "no probe for a known era");
    assert_eq!(second.servers()[0].state, ServerState::Ready);

    // A restart uses the known era too.
    let pid = second.servers()[0].pid.unwrap();
    // SAFETY: kill takes a pid and a signal; the pid is the runtime's child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    assert!(wait_for_exit(pid as i32, Duration::from_secs(10)));
    second
        .call_tool("mcp__known__echo", None)
        .await
        .expect("the call restarts the server");
    assert_eq!(second.servers()[0].restarts, 1);

    let entries = read_log(&log);
    assert_eq!(count_method(&entries, "server/discover"), 1);
    assert_eq!(count_method(&entries, "initialize"), 3);
    first.shutdown().await;
    second.shutdown().await;
}

#[tokio::test]
async fn a_remembered_modern_server_that_answers_as_a_handshake_server_is_forgotten() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let era = dir.path().join("era");
    std::fs::write(&era, "stateless").unwrap();
    // The same configuration (so the same era key) runs whichever era the file says.
    let server = ServerConfig::stdio(
        "switch",
        "/bin/sh",
        vec![
            "-c".into(),
            r#"exec "$1" --era "$(cat "$0")" --log "$2""#.into(),
            path_str(&era).into(),
            fixture_path().into(),
            path_str(&log).into(),
        ],
    );
    let registry = ListingRegistry::new();
    let options = || StartOptions::new().with_listing_registry(registry.clone());
    let start = async || {
        let (runtime, events) = start_with(vec![server.clone()], options()).await;
        let status = runtime.servers()[0].clone();
        assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
        runtime.shutdown().await;
        (status.protocol_version.unwrap(), spawned(&events).len())
    };
    assert_eq!(start().await, ("2026-07-28".to_owned(), 1));
    std::fs::write(&era, "handshake").unwrap();
    assert_eq!(
        start().await,
        ("2025-11-25".to_owned(), 1),
        "known modern, answered as handshake: initialize on the same process"
    );
    assert_eq!(start().await, ("2025-11-25".to_owned(), 1), "probed again");
    assert_eq!(
        start().await,
        ("2025-11-25".to_owned(), 1),
        "known handshake"
    );
    assert_eq!(count_method(&read_log(&log), "server/discover"), 3);
}

#[tokio::test]
async fn stateless_and_dual_servers_start_modern_with_one_process_then_list_and_call() {
    for era in ["stateless", "dual"] {
        let dir = temp_dir();
        let log = dir.path().join("log.jsonl");
        let server = fixture_auto("modern", &["--era", era, "--log", path_str(&log)]);
        let options = fresh();
        let (runtime, events) = start_with(vec![server], options).await;
        let status = &runtime.servers()[0];
        assert_eq!(
            status.state,
            ServerState::Ready,
            "{era}: {:?}",
            status.error
        );
        assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
        assert_eq!(
            spawned(&events).len(),
            1,
            "{era}: the probed process is kept"
        );
        let result = runtime
            .call_tool("mcp__modern__echo", json!({"x": 1}).as_object().cloned())
            .await
            .expect("the call succeeds");
        assert!(!result.is_error());

        let entries = read_log(&log);
        assert_eq!(count_method(&entries, "initialize"), 0, "{era}");
        assert_eq!(count_method(&entries, "server/discover"), 1, "{era}");
        for method in ["server/discover", "tools/list", "tools/call"] {
            let metas = metas(&log, method);
            assert_eq!(metas.len(), 1, "{era}: one {method}");
            assert_modern_meta(&metas[0]);
        }
        runtime.shutdown().await;
    }
}

/// A handshake server in `sh` that answers a first request it does not know with
/// "method not found" and exits (as some servers do); started with `initialize`, it
/// answers it and lists one tool.
const EXITS_AFTER_THE_PROBE: &str = r#"
id_of() { printf '%s\n' "$1" | sed 's/.*"id":\([0-9]*\).*/\1/'; }
IFS= read -r line
case "$line" in
  *'"server/discover"'*)
    printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$(id_of "$line")"
    exit 0 ;;
esac
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}\n' "$(id_of "$line")"
while IFS= read -r line; do
  case "$line" in
    *'"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}\n' "$(id_of "$line")" ;;
  esac
done
"#;

#[tokio::test]
async fn a_server_that_exits_after_answering_the_probe_is_started_again_for_initialize() {
    let server = ServerConfig::stdio(
        "exits",
        "sh",
        vec!["-c".into(), EXITS_AFTER_THE_PROBE.into()],
    );
    let (runtime, events) = start_with(vec![server], fresh()).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        spawned(&events).len(),
        2,
        "the probed process, then a fresh one"
    );
    assert!(runtime.catalog().resolve("mcp__exits__t").is_some());
    runtime.shutdown().await;
}

/// The ids of the `server/discover` and `initialize` requests in the log, in order.
fn probe_and_initialize_ids(log: &Path) -> Vec<Value> {
    read_log(log)
        .into_iter()
        .filter(|entry| entry["method"] == "server/discover" || entry["method"] == "initialize")
        .map(|entry| entry["id"].clone())
        .collect()
}

#[tokio::test]
async fn a_server_answering_discover_with_an_empty_result_is_initialized_on_the_same_process() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture_auto(
        "empty",
        &[
            "--mangle-answer",
            "server/discover=empty-result",
            "--log",
            path_str(&log),
        ],
    );
    let (runtime, events) = start_with(vec![server], fresh()).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(spawned(&events).len(), 1, "the probed process is kept");
    assert_eq!(probe_and_initialize_ids(&log), [json!(0), json!(1)]);
    runtime.call_tool("mcp__empty__echo", None).await.unwrap();
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_probe_and_initialize_on_one_process_have_distinct_ids() {
    // The raw fixture refuses `server/discover` as a method it does not know.
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture_auto("raw", &["--duplicate-tool", "--log", path_str(&log)]);
    let (runtime, events) = start_with(vec![server], fresh()).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(spawned(&events).len(), 1);
    assert_eq!(probe_and_initialize_ids(&log), [json!(0), json!(1)]);
    // Every later request is numbered after them, and answered.
    let ids: Vec<Value> = read_log(&log)
        .into_iter()
        .filter_map(|entry| entry.get("id").cloned())
        .collect();
    let unique: BTreeSet<String> = ids.iter().map(Value::to_string).collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    runtime.call_tool("mcp__raw__pid", None).await.unwrap();
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_server_silent_to_discover_is_restarted_with_initialize_after_the_bound() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture_auto("silent", &["--silent-discover", "--log", path_str(&log)]);
    let options = StartOptions::new()
        .with_listing_registry(ListingRegistry::new())
        .with_protocol_probe_bound(Duration::from_millis(300));
    let (runtime, events) = start_with(vec![server], options).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    let pids = spawned(&events);
    assert_eq!(pids.len(), 2);
    assert!(!is_alive(pids[0] as i32));
    let entries = read_log(&log);
    let pid_of = |method: &str| {
        entries
            .iter()
            .find(|entry| entry["method"] == method)
            .map(|entry| entry["pid"].as_u64().unwrap() as u32)
    };
    assert_eq!(pid_of("server/discover"), Some(pids[0]));
    assert_eq!(pid_of("initialize"), Some(pids[1]), "a fresh process");
    runtime.shutdown().await;
}

#[tokio::test]
async fn silence_is_learnt_as_handshake_only_once_initialize_succeeds() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture_auto(
        "silent",
        &[
            "--silent-discover",
            "--crash-initialize",
            "3",
            "--log",
            path_str(&log),
        ],
    );
    let registry = ListingRegistry::new();
    let options = || {
        StartOptions::new()
            .with_listing_registry(registry.clone())
            .with_protocol_probe_bound(Duration::from_millis(200))
    };
    for _ in 0..2 {
        let (runtime, events) = start_with(vec![server.clone()], options()).await;
        assert_eq!(runtime.servers()[0].state, ServerState::Failed);
        assert_eq!(spawned(&events).len(), 2, "probed each time");
    }
    let entries = read_log(&log);
    assert_eq!(count_method(&entries, "server/discover"), 2);
    assert_eq!(count_method(&entries, "initialize"), 2);
}

#[tokio::test]
async fn a_stateless_server_slower_than_the_bound_is_asked_again_once_it_refuses_initialize() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    // It answers `server/discover` a second after it is asked: five times the bound,
    // so the probe always gives up first.
    let server = fixture_auto(
        "slow",
        &[
            "--era",
            "stateless",
            "--discover-delay-ms",
            "1000",
            "--log",
            path_str(&log),
        ],
    );
    let registry = ListingRegistry::new();
    let options = || {
        StartOptions::new()
            .with_listing_registry(registry.clone())
            .with_protocol_probe_bound(Duration::from_millis(200))
    };
    let (runtime, events) = start_with(vec![server.clone()], options()).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
    let pids = spawned(&events);
    assert_eq!(
        pids.len(),
        3,
        "the probe, the refused `initialize`, the discover waited for"
    );
    assert!(!is_alive(pids[0] as i32));
    assert_eq!(status.pid, Some(pids[2]));
    runtime.shutdown().await;

    // Learnt as modern: the next startup sends `server/discover` alone, and waits.
    let (runtime, events) = start_with(vec![server], options()).await;
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);
    assert_eq!(spawned(&events).len(), 1);
    runtime.shutdown().await;
    let entries = read_log(&log);
    assert_eq!(count_method(&entries, "initialize"), 1);
    assert_eq!(count_method(&entries, "server/discover"), 3);
}

#[tokio::test]
async fn a_dual_server_without_2026_07_28_falls_back_to_its_handshake_revision() {
    let server = fixture_auto(
        "dual",
        &["--era", "dual", "--supported-version", "2025-11-25"],
    );
    let options = fresh();
    let (runtime, events) = start_with(vec![server], options).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        spawned(&events).len(),
        1,
        "initialize on the probed process"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_server_sharing_no_version_fails_naming_both_lists() {
    let server = fixture_auto(
        "future",
        &["--era", "stateless", "--supported-version", "2027-01-01"],
    );
    let options = fresh();
    let (runtime, events) = start_with(vec![server.clone()], options).await;
    assert_eq!(
        error_of(&runtime),
        "the server shares no protocol version with mcp-runtime: it supports `2027-01-01`, and mcp-runtime speaks `2026-07-28`, `2025-11-25`, `2025-06-18`, `2025-03-26` and `2024-11-05` (upgrade the server or mcp-runtime)"
    );
    let pids = spawned(&events);
    assert_eq!(pids.len(), 1, "no fallback");
    assert!(!is_alive(pids[0] as i32));

    let pinned = fixture_auto(
        "dual",
        &["--era", "dual", "--supported-version", "2025-11-25"],
    )
    .with_protocol(Protocol::V2026_07_28);
    let (runtime, _) = start_with(vec![pinned], fresh()).await;
    assert_eq!(
        error_of(&runtime),
        "the server shares no protocol version with mcp-runtime: it supports `2025-11-25`, and `protocol` pins `2026-07-28` (set `protocol` to `auto` or to a version the server supports)"
    );
}

#[tokio::test]
async fn a_pinned_2026_07_28_server_starts_without_a_probe_and_a_handshake_server_refuses_it() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let modern = fixture_auto("m", &["--era", "stateless", "--log", path_str(&log)])
        .with_protocol(Protocol::V2026_07_28);
    let handshake = fixture_auto("h", &[]).with_protocol(Protocol::V2026_07_28);
    let (runtime, events) = start_with(vec![modern, handshake], fresh()).await;
    assert_eq!(spawned(&events).len(), 2, "one process each");
    let servers = runtime.servers();
    let (h, m) = (&servers[0], &servers[1]);
    assert_eq!(m.state, ServerState::Ready, "{:?}", m.error);
    assert_eq!(m.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(h.state, ServerState::Failed);
    assert_eq!(
        mcp_runtime::error::chain(h.error.as_ref().unwrap()),
        "the server does not speak protocol version `2026-07-28`, which `protocol` pins: it refused `server/discover` (set `protocol` to `auto` or to a handshake revision): server error -32601: server/discover"
    );
    assert_eq!(count_method(&read_log(&log), "server/discover"), 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_pinned_handshake_revision_is_offered_alone_and_must_be_answered() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let old = fixture_auto("old", &["--log", path_str(&log)]).with_protocol(Protocol::V2025_06_18);
    let (runtime, events) = start_with(vec![old], fresh()).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-06-18"));
    assert_eq!(spawned(&events).len(), 1);
    let entries = read_log(&log);
    assert_eq!(count_method(&entries, "server/discover"), 0, "no probe");
    let initialize = entries
        .iter()
        .find(|entry| entry["method"] == "initialize")
        .unwrap();
    assert_eq!(initialize["params"]["protocolVersion"], "2025-06-18");
    runtime.shutdown().await;

    // A server that answers with another revision fails, naming both.
    let other = fixture_auto(
        "other",
        &["--era", "dual", "--supported-version", "2025-11-25"],
    )
    .with_protocol(Protocol::V2025_06_18);
    let (runtime, _) = start_with(vec![other], fresh()).await;
    assert_eq!(
        error_of(&runtime),
        "the server answered `initialize` with protocol version `2025-11-25`, and `protocol` pins `2025-06-18` (set `protocol` to `auto`, or to a version the server speaks)"
    );
}

/// The state sent with a call, with irregular spacing and a number beyond `f64`
/// precision: only the exact text passes.
const STATE: &str =
    r#"{ "sandbox_policy":{"type":"workspace-write"} ,"big": 123456789012345678901234567890.5}"#;

#[tokio::test]
async fn a_modern_call_carries_the_protocol_keys_and_the_exact_sandbox_state() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture_auto(
        "f",
        &[
            "--era",
            "stateless",
            "--experimental",
            "codex/sandbox-state-meta={}",
            "--log",
            path_str(&log),
        ],
    );
    let options = fresh();
    let (runtime, _) = start_with(vec![server], options).await;
    assert_eq!(
        runtime.servers()[0].protocol_version.as_deref(),
        Some("2026-07-28")
    );
    let authority = CallAuthority::new(SandboxState::from_json(STATE).unwrap());
    runtime
        .call_tool_with(
            "mcp__f__echo",
            None,
            CallOptions::new().with_authority(authority),
        )
        .await
        .unwrap();
    let call = read_log(&log)
        .into_iter()
        .find(|entry| entry["method"] == "tools/call")
        .expect("the call reached the server");
    let raw = call["raw"].as_str().unwrap();
    for key in ["codex/sandbox-state", "codex/sandbox-state-meta"] {
        assert!(raw.contains(&format!(r#""{key}":{STATE}"#)), "{key}: {raw}");
    }
    assert_modern_meta(&call["params"]["_meta"]);
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_python_sdk_2_3_0_speaks_2026_07_28_over_stdio() {
    let python = python_sdk("2.3.0");
    let script = peers_dir().join("python/adder.py");
    let adder = ServerConfig::stdio(
        "adder",
        python.to_str().unwrap(),
        vec![script.to_str().unwrap().into()],
    );
    // The interpreter may take longer than the default bound to answer on a busy
    // machine; the era, not the bound, is under test.
    let options = fresh().with_protocol_probe_bound(Duration::from_secs(60));
    let (runtime, events) = start_with(vec![adder], options).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(spawned(&events).len(), 1, "the probed process is kept");
    assert_adds(&runtime, "mcp__adder__add").await;
    runtime.shutdown().await;
}

#[tokio::test]
async fn server_everything_over_stdio_still_starts_in_auto() {
    let everything = ServerConfig::stdio(
        "everything",
        "node",
        vec![
            crate::peers::server_everything().to_str().unwrap().into(),
            "stdio".into(),
        ],
    );
    let options = fresh();
    let (runtime, events) = start_with(vec![everything], options).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some(EVERYTHING_VERSION));
    assert_eq!(spawned(&events).len(), 1, "probed, then initialized");
    let result = runtime
        .call_tool(
            "mcp__everything__get_sum",
            json!({"a": 2, "b": 3}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(!result.is_error());
    runtime.shutdown().await;
}

/// What server-everything answers to `initialize` offering 2025-11-25.
const EVERYTHING_VERSION: &str = "2025-11-25";

/// `peers/python/asks.py` over stdio, spoken to in 2026-07-28 (the bound lets the
/// interpreter answer the probe on a busy machine): its tool that asks through a
/// resolver gets an input-required round; the one that asks with a request of its own
/// is refused by the SDK, which the error names as the server's fault. The same
/// peer over Streamable HTTP is in `http_eras`.
#[tokio::test]
async fn a_python_sdk_tool_asking_the_handshake_way_over_stdio_is_named_the_servers_fault() {
    let python = python_sdk("2.3.0");
    let script = peers_dir().join("python/asks.py");
    let asks = ServerConfig::stdio(
        "asks",
        python.to_str().unwrap(),
        vec![script.to_str().unwrap().into()],
    );
    let options = fresh()
        .with_protocol_probe_bound(Duration::from_secs(60))
        .with_host(mcp_runtime::host::HostHandlers::new().with_elicitation(Grace));
    let (runtime, _) = start_with(vec![asks], options).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
    let text = |result: mcp_runtime::ToolResult| {
        result
            .content()
            .next()
            .unwrap()
            .as_text()
            .unwrap()
            .to_owned()
    };
    let answered = runtime.call_tool("mcp__asks__ask_by_result", None).await;
    assert_eq!(text(answered.unwrap()), "accept Grace");
    let error = runtime
        .call_tool("mcp__asks__ask_in_call", None)
        .await
        .unwrap_err();
    let error = mcp_runtime::error::chain(&error);
    assert!(
        error.starts_with(
            "tool `ask_in_call` on server `asks` failed: the server tried to send `elicitation/create` as a request of its own, which protocol version `2026-07-28` does not have"
        ),
        "{error}"
    );
    assert!(error.contains("set `protocol = \"2025-11-25\"`"), "{error}");
    runtime.shutdown().await;
}
