//! Streamable HTTP in both eras: the era is found from the server's answers, a
//! 2026-07-28 server gets the protocol headers and no session, a legacy session that
//! expires is started again once, and a call given up over 2026-07-28 is cancelled
//! by closing its response stream.

use std::time::Duration;

use mcp_runtime::{CallError, Runtime, ServerConfig, ServerState};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};

use crate::support::*;

/// The methods of the log's requests and notifications, in order.
/// The methods of `log`'s messages but the listen stream, which a 2026-07-28
/// connection opens as it starts (the tests of subscriptions look at it).
fn methods(log: &[Value]) -> Vec<&str> {
    log.iter()
        .filter_map(|entry| entry["method"].as_str())
        .filter(|method| *method != "subscriptions/listen")
        .collect()
}

/// Starts an HTTP server `name` at `url` and asserts it is ready.
async fn ready(server: ServerConfig) -> Runtime {
    let (runtime, _) = start(config([server])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    runtime
}

/// Calls `echo` with `{"x": 1}` and asserts the answer.
async fn echo(runtime: &Runtime, server: &str) {
    let result = runtime
        .call_tool(
            &format!("mcp__{server}__echo"),
            json!({"x": 1}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert_eq!(result.structured_content().cloned(), Some(json!({"x": 1})));
}

#[tokio::test]
async fn a_handshake_server_answers_the_discover_probe_and_is_initialized() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--log", path_str(&log)]).await;
    let runtime = ready(ServerConfig::http("old", &fixture.url)).await;
    assert!(runtime.catalog().tools().len() > 1);
    echo(&runtime, "old").await;
    runtime.shutdown().await;

    let log = read_log(&log);
    assert_eq!(
        methods(&log)[..4],
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ],
        "{log:?}"
    );
    let discover = &the(&log, "server/discover")["http_headers"];
    assert!(discover.get("mcp-session-id").is_none(), "{discover}");
    let call = &the(&log, "tools/call")["http_headers"];
    assert_eq!(call["mcp-protocol-version"], "2025-11-25");
    assert!(call.get("mcp-session-id").is_some(), "{call}");
}

/// Starts the fixture in `era` over HTTP and checks that it was started, listed and
/// called as a 2026-07-28 server: no `initialize`, no session, and the headers the
/// revision requires, matching the body.
async fn speaks_2026_07_28(era: &str) {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--era", era, "--log", path_str(&log)]).await;
    let runtime = ready(ServerConfig::http("new", &fixture.url)).await;
    assert!(runtime.catalog().tools().len() > 1);
    echo(&runtime, "new").await;
    runtime.shutdown().await;

    let log = read_log(&log);
    assert_eq!(
        methods(&log),
        ["server/discover", "tools/list", "tools/call"],
        "{log:?}"
    );
    for entry in &log {
        let headers = &entry["http_headers"];
        assert_eq!(headers["mcp-protocol-version"], "2026-07-28", "{entry}");
        assert_eq!(headers["mcp-method"], entry["method"], "{entry}");
        assert!(headers.get("mcp-session-id").is_none(), "{entry}");
        let meta = &entry["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert!(
            meta.get("io.modelcontextprotocol/clientCapabilities")
                .is_some()
        );
    }
    let call = the(&log, "tools/call");
    assert_eq!(call["http_headers"]["mcp-name"], "echo");
    assert_eq!(call["params"]["name"], "echo");
}

#[tokio::test]
async fn a_dual_era_server_is_spoken_to_in_2026_07_28() {
    speaks_2026_07_28("dual").await;
}

#[tokio::test]
async fn a_stateless_server_is_spoken_to_in_2026_07_28() {
    speaks_2026_07_28("stateless").await;
}

#[tokio::test]
async fn a_handshake_server_that_never_answers_the_probe_is_initialized_after_the_wait() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--silent-discover", "--log", path_str(&log)]).await;
    let server =
        ServerConfig::http("quiet", &fixture.url).with_startup_timeout(Duration::from_secs(60));
    let runtime = ready(server).await;
    echo(&runtime, "quiet").await;
    runtime.shutdown().await;

    let log = read_log(&log);
    assert_eq!(
        methods(&log)[..2],
        ["server/discover", "initialize"],
        "{log:?}"
    );
}

#[tokio::test]
async fn an_expired_session_is_started_again_and_the_request_sent_once_more() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--expire-sessions-on-call", "1", "--log", path_str(&log)]).await;
    let runtime = ready(ServerConfig::http("expiring", &fixture.url)).await;
    echo(&runtime, "expiring").await;
    runtime.shutdown().await;

    let log = read_log(&log);
    assert_eq!(count_method(&log, "initialize"), 2, "{log:?}");
    let calls: Vec<&Value> = log
        .iter()
        .filter(|entry| entry["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "{log:?}");
    let sessions: Vec<&Value> = calls
        .iter()
        .map(|call| &call["http_headers"]["mcp-session-id"])
        .collect();
    assert_ne!(
        sessions[0], sessions[1],
        "the retry carries the new session"
    );
}

#[tokio::test]
async fn a_session_that_expires_again_after_the_new_one_fails_the_call_once() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--expire-sessions-on-call", "2", "--log", path_str(&log)]).await;
    let runtime = ready(ServerConfig::http("expiring", &fixture.url)).await;
    let error = runtime
        .call_tool("mcp__expiring__echo", json!({"x": 1}).as_object().cloned())
        .await
        .unwrap_err();
    assert_eq!(
        mcp_runtime::error::chain(&error),
        "tool `echo` on server `expiring` failed: the server ended the session, and a new one did not help"
    );
    runtime.shutdown().await;

    let log = read_log(&log);
    assert_eq!(count_method(&log, "initialize"), 2, "{log:?}");
    assert_eq!(count_method(&log, "tools/call"), 2, "{log:?}");
}

/// A fixture serving Streamable HTTP whose stdout is kept, to read its
/// `closed-early ID` lines.
struct Announcing {
    url: String,
    lines: Lines<BufReader<tokio::process::ChildStdout>>,
    _child: tokio::process::Child,
}

async fn announcing_fixture(args: &[&str]) -> Announcing {
    let mut child = tokio::process::Command::new(fixture_path())
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the fixture starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().unwrap();
    let url = mcp_runtime_fixtures::testing::announced_url(&first);
    Announcing {
        url,
        lines,
        _child: child,
    }
}

#[tokio::test]
async fn a_timed_out_call_to_a_2026_07_28_server_closes_its_response_stream() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let mut fixture = announcing_fixture(&[
        "--era",
        "stateless",
        "--call-delay-ms",
        "600000",
        "--log",
        path_str(&log),
    ])
    .await;
    let server =
        ServerConfig::http("slow", &fixture.url).with_tool_timeout(Duration::from_millis(500));
    let runtime = ready(server).await;
    let error = runtime
        .call_tool("mcp__slow__echo", None)
        .await
        .unwrap_err();
    assert!(matches!(error, CallError::Timeout { .. }), "{error}");

    // The server sees the cancellation: the answer's stream closed before its end.
    // (A client may also close the stream of an answer it has read before the
    // server ends it; those lines name other requests.)
    let call_id = the(&read_log(&log), "tools/call")["id"].to_string();
    let closed = async {
        while let Some(line) = fixture.lines.next_line().await.unwrap() {
            if line == format!("closed-early {call_id}") {
                return;
            }
        }
        panic!("the fixture exited");
    };
    tokio::time::timeout(Duration::from_secs(30), closed)
        .await
        .expect("the call's response stream is closed");
    runtime.shutdown().await;
    let log = read_log(&log);
    // No `notifications/cancelled`: the 2026-07-28 revision does not expect one
    // over HTTP.
    assert_eq!(count_method(&log, "notifications/cancelled"), 0, "{log:?}");
}

/// A free loopback port (bound, then released for a peer to take).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A peer server process, and the stderr lines it wrote after it was ready.
struct Peer {
    stderr: tokio::sync::mpsc::UnboundedReceiver<String>,
    child: tokio::process::Child,
}

impl Peer {
    /// Kills the peer and returns every stderr line it wrote after it was ready.
    async fn stop(mut self) -> Vec<String> {
        self.child.kill().await.expect("killing the peer");
        let mut lines = Vec::new();
        // The channel closes once the reader has read to the end of the pipe.
        while let Some(line) = self.stderr.recv().await {
            lines.push(line);
        }
        lines
    }
}

/// Runs `command` (a peer serving Streamable HTTP) until its stderr has a line
/// containing `ready`; the later lines are kept.
async fn peer_over_http(mut command: tokio::process::Command, ready: &str) -> Peer {
    let mut child = command
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the peer starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let started = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains(ready) {
                return;
            }
        }
        panic!("the peer exited before saying `{ready}`");
    };
    tokio::time::timeout(Duration::from_secs(60), started)
        .await
        .expect("the peer starts within a minute");
    let (sender, stderr) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = sender.send(line);
        }
    });
    Peer { stderr, child }
}

#[tokio::test]
async fn server_everything_over_streamable_http_is_initialized_and_adds() {
    let port = free_port();
    let mut command = tokio::process::Command::new("node");
    command
        .arg(crate::peers::server_everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    let _peer = peer_over_http(command, "listening on port").await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let runtime = ready(ServerConfig::http("everything", &url)).await;
    assert_eq!(runtime.servers()[0].tools, 13);
    let result = runtime
        .call_tool(
            "mcp__everything__get_sum",
            json!({"a": 2, "b": 3}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(!result.is_error(), "{result:?}");
    let text = text_of(&result);
    assert!(text.contains('5'), "{text}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_python_sdk_over_streamable_http_lists_and_calls_its_tool() {
    let python = python_sdk("2.3.0");
    let port = free_port();
    let mut command = tokio::process::Command::new(python);
    command
        .arg(peers_dir().join("python/adder_http.py"))
        .arg(port.to_string());
    let peer = peer_over_http(command, "Uvicorn running on").await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let runtime = ready(ServerConfig::http("python", &url)).await;
    let names: Vec<String> = runtime
        .catalog()
        .tools()
        .map(|tool| tool.qualified_name.to_string())
        .collect();
    assert_eq!(names, ["mcp__python__add"]);
    assert_adds(&runtime, "mcp__python__add").await;
    runtime.shutdown().await;

    let requests: Vec<String> = peer
        .stop()
        .await
        .iter()
        .filter_map(|line| line.strip_prefix("mcp-request ").map(str::to_owned))
        // The listen stream (the tests of subscriptions look at it).
        .filter(|request| !request.ends_with(" subscriptions/listen"))
        .collect();
    assert_eq!(
        requests,
        [
            "2026-07-28 server/discover",
            "2026-07-28 tools/list",
            "2026-07-28 tools/call"
        ],
        "the dual-era peer was spoken to in 2026-07-28"
    );
}

/// The text a call of `tool` on `runtime`'s server `asks` answered, or its error.
async fn asked(runtime: &Runtime, tool: &str) -> Result<String, String> {
    match runtime.call_tool(&format!("mcp__asks__{tool}"), None).await {
        Ok(result) => Ok(result
            .content()
            .next()
            .unwrap()
            .as_text()
            .unwrap()
            .to_owned()),
        Err(error) => Err(mcp_runtime::error::chain(&error)),
    }
}

/// `peers/python/asks.py` over Streamable HTTP: a tool that asks with a request of its
/// own (`ctx.elicit`), which the SDK refuses to send under 2026-07-28, and one that
/// asks through a resolver, which works in both eras.
#[tokio::test]
async fn a_python_sdk_tool_asking_the_handshake_way_under_2026_07_28_is_named_the_servers_fault() {
    let python = python_sdk("2.3.0");
    let port = free_port();
    let mut command = tokio::process::Command::new(python);
    command
        .arg(peers_dir().join("python/asks.py"))
        .args(["--http", &port.to_string()]);
    let peer = peer_over_http(command, "Uvicorn running on").await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let host = || mcp_runtime::host::HostHandlers::new().with_elicitation(Grace);

    let auto = start_with(ServerConfig::http("asks", &url), host()).await;
    assert_eq!(
        auto.servers()[0].protocol_version.as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(asked(&auto, "ask_by_result").await.unwrap(), "accept Grace");
    let error = asked(&auto, "ask_in_call").await.unwrap_err();
    assert_eq!(
        error,
        "tool `ask_in_call` on server `asks` failed: the server tried to send `elicitation/create` as a request of its own, which protocol version `2026-07-28` does not have (a server of that revision asks through an input-required result): a fault of the server; until it is fixed, set `protocol = \"2025-11-25\"` for this server: server error -32600: Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests."
    );
    auto.shutdown().await;

    let pinned =
        ServerConfig::http("asks", &url).with_protocol(mcp_runtime::config::Protocol::V2025_11_25);
    let pinned = start_with(pinned, host()).await;
    assert_eq!(asked(&pinned, "ask_in_call").await.unwrap(), "accept Grace");
    assert_eq!(
        asked(&pinned, "ask_by_result").await.unwrap(),
        "accept Grace"
    );
    pinned.shutdown().await;
    peer.stop().await;
}
