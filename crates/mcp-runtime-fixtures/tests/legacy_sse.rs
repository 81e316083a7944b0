//! Legacy HTTP+SSE servers (protocol revision 2024-11-05), reached with
//! `transport = "sse"`: FastMCP of the Python SDK 1.x and server-everything's `sse`
//! mode, installed pinned by `scripts/install-peers`, and a small server written here
//! for exact bytes and faults.

mod server;

use std::{path::Path, process::Stdio, time::Duration};

use mcp_runtime::{
    CallAuthority, CallOptions, Runtime, SandboxState, ServerConfig, ServerState,
    config::{HttpConfig, HttpTransport, Protocol, TransportConfig},
    error::chain,
};
use serde_json::{json, value::RawValue};
use tokio::io::{AsyncBufReadExt, BufReader};

use self::server::{Behavior, Endpoint, Fault, LegacyServer};
use crate::support::*;

/// Arguments that change in a round trip through `serde_json::Value`.
const ARGUMENTS: &str = r#"{"n":123456789012345678901234567890,"text":"caf\u00e9 \/"}"#;
/// A sandbox state with a number beyond `f64` and escapes.
const STATE: &str = r#"{"alpha" : 123456789012345678901234567890.125,"escaped":"caf\u00e9 \/","sandbox_policy":{"type":"workspace-write"}}"#;
/// How long a peer may take to say it is listening.
const PEER_READY_LIMIT: Duration = Duration::from_secs(60);
/// How long the server may take to see the event stream close.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// A server reached with `transport = "sse"` at `url`.
fn sse_server(name: &str, url: &str, configure: impl FnOnce(&mut HttpConfig)) -> ServerConfig {
    let mut server = ServerConfig::http(name, url);
    let TransportConfig::StreamableHttp(http) = &mut server.transport else {
        unreachable!("an HTTP server")
    };
    http.transport = HttpTransport::Sse;
    configure(http);
    server
}

/// A peer server process, killed when dropped.
struct Peer {
    url: String,
    child: tokio::process::Child,
}

impl Peer {
    /// Kills the process and checks that it is gone.
    async fn kill(mut self) {
        let pid = self.child.id().expect("still running") as i32;
        self.child.kill().await.expect("killing the peer");
        assert!(!is_alive(pid), "peer {pid} is gone");
    }
}

/// Reads `output` until a line that `ready` maps to the URL, within
/// [`PEER_READY_LIMIT`]; then goes on reading it in the background, so that the peer
/// never writes to a closed pipe (Node.js dies of that).
async fn wait_ready(
    output: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    ready: impl Fn(&str) -> Option<String>,
) -> String {
    let mut lines = BufReader::new(output).lines();
    let wait = async {
        while let Some(line) = lines.next_line().await.expect("reading the peer's output") {
            if let Some(url) = ready(&line) {
                return url;
            }
        }
        panic!("the peer ended its output without saying it is listening");
    };
    let url = tokio::time::timeout(PEER_READY_LIMIT, wait)
        .await
        .expect("the peer says it is listening in time");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    url
}

/// `peers/python/legacy_sse.py` on the Python SDK 1.30.0, logging POST bodies to `log`.
async fn fastmcp(log: &Path) -> Peer {
    let python = peers_dir().join("venvs/mcp-1.30.0/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-peers (scripts/test does)",
        python.display()
    );
    let mut child = tokio::process::Command::new(python)
        .arg(peers_dir().join("python/legacy_sse.py"))
        .args(["--log", path_str(log)])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the Python peer starts");
    let stdout = child.stdout.take().unwrap();
    let url = wait_ready(stdout, |line| {
        line.strip_prefix("listening ").map(str::to_owned)
    })
    .await;
    Peer { url, child }
}

/// server-everything in `sse` mode on a free port.
async fn everything() -> Peer {
    let peer = crate::peers::everything_over("sse").await;
    Peer {
        url: peer.url,
        child: peer.child,
    }
}

async fn call_exact(
    runtime: &Runtime,
    tool: &str,
    arguments: &str,
    options: CallOptions,
) -> Result<mcp_runtime::ToolResult, mcp_runtime::CallError> {
    let arguments = RawValue::from_string(arguments.to_owned()).unwrap();
    runtime.call_tool_exact(tool, &arguments, options).await
}

fn text(result: &mcp_runtime::ToolResult) -> String {
    text_of(result)
}

fn with_state() -> CallOptions {
    CallOptions::new().with_authority(CallAuthority::new(SandboxState::from_json(STATE).unwrap()))
}

fn assert_ready(runtime: &Runtime) {
    let status = &runtime.servers()[0];
    assert_eq!(
        status.state,
        ServerState::Ready,
        "{:?}",
        status.error.as_ref().map(|error| chain(error))
    );
}

fn startup_error(runtime: &Runtime) -> String {
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    chain(status.error.as_ref().expect("a startup error"))
}

#[tokio::test]
async fn fastmcp_over_legacy_sse_lists_calls_and_gets_exact_bytes() {
    let dir = temp_dir();
    let log = dir.path().join("posts.jsonl");
    let peer = fastmcp(&log).await;
    let (runtime, _) = start(config([sse_server("py", &peer.url, |_| {})])).await;
    assert_ready(&runtime);
    let mut names: Vec<String> = runtime
        .catalog()
        .tools()
        .map(|tool| tool.qualified_name.to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["mcp__py__add", "mcp__py__echo"]);

    assert_adds(&runtime, "mcp__py__add").await;

    let echoed = call_exact(&runtime, "mcp__py__echo", ARGUMENTS, with_state())
        .await
        .unwrap();
    assert_eq!(text(&echoed), "123456789012345678901234567890 café /");
    let raw: Vec<String> = read_log(&log)
        .into_iter()
        .map(|entry| entry["raw"].as_str().unwrap().to_owned())
        .filter(|raw| raw.contains(r#""method":"tools/call""#))
        .collect();
    let call = raw.last().expect("the calls were logged");
    assert!(
        call.contains(&format!(r#""arguments":{ARGUMENTS}"#)),
        "{call}"
    );
    for key in ["codex/sandbox-state", "codex/sandbox-state-meta"] {
        assert!(call.contains(&format!(r#""{key}":{STATE}"#)), "{call}");
    }
    runtime.shutdown().await;
    peer.kill().await;
}

#[tokio::test]
async fn server_everything_in_sse_mode_lists_and_calls() {
    let peer = everything().await;
    let (runtime, _) = start(config([sse_server("everything", &peer.url, |_| {})])).await;
    assert_ready(&runtime);
    assert_eq!(runtime.servers()[0].tools, 13);
    let sum = runtime
        .call_tool(
            "mcp__everything__get_sum",
            json!({"a": 2, "b": 3}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(text(&sum).contains('5'), "{}", text(&sum));
    let echoed = call_exact(
        &runtime,
        "mcp__everything__echo",
        r#"{"message":"caf\u00e9 \/"}"#,
        CallOptions::new(),
    )
    .await
    .unwrap();
    assert!(text(&echoed).contains("café /"), "{}", text(&echoed));
    runtime.shutdown().await;
    peer.kill().await;
}

#[tokio::test]
async fn exact_bytes_headers_and_token_reach_the_message_endpoint() {
    set_test_env();
    let server = LegacyServer::start(Behavior::default()).await;
    let config = config([sse_server("hand", &server.url, |http| {
        http.bearer_token_env_var = Some(TEST_TOKEN_VAR.into());
        http.http_headers.insert("X-Team".into(), "core".into());
    })]);
    let (runtime, _) = start(config).await;
    assert_ready(&runtime);
    assert_eq!(
        runtime.servers()[0].auth,
        Some(mcp_runtime::AuthState::Bearer)
    );
    let result = call_exact(&runtime, "mcp__hand__echo", ARGUMENTS, with_state())
        .await
        .unwrap();
    assert_eq!(text(&result), "ok");

    let posts = server.posts();
    let call = posts
        .iter()
        .find(|post| post.body.contains(r#""method":"tools/call""#))
        .expect("the call was posted");
    assert!(
        call.body.contains(&format!(r#""arguments":{ARGUMENTS}"#)),
        "{}",
        call.body
    );
    assert!(
        call.body
            .contains(&format!(r#""codex/sandbox-state":{STATE}"#)),
        "{}",
        call.body
    );
    let gets = server.gets();
    assert_eq!(gets.len(), 1, "one event stream");
    assert_eq!(gets[0].headers["accept"], "text/event-stream");
    for received in gets.iter().chain(&posts) {
        assert_eq!(
            received.headers["authorization"],
            format!("Bearer {TEST_TOKEN}")
        );
        assert_eq!(received.headers["x-team"], "core");
    }
    runtime.shutdown().await;
    tokio::time::timeout(CLOSE_LIMIT, server.stream_closed())
        .await
        .expect("shutdown drops the event stream");
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_before_anything_is_posted() {
    let server = LegacyServer::start(Behavior {
        endpoint: Endpoint::OtherOrigin,
        ..Behavior::default()
    })
    .await;
    let (runtime, _) = start(config([sse_server("hand", &server.url, |_| {})])).await;
    let error = startup_error(&runtime);
    let port = server
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    assert_eq!(
        error,
        format!(
            "cannot use the legacy HTTP+SSE server's message endpoint: it named an endpoint on another origin, `http://localhost:{port}`, and mcp-runtime sends the server's headers and token only to the origin of its `url` (configure the server to announce an endpoint on the origin of `url`)"
        )
    );
    assert!(server.posts().is_empty(), "nothing was posted");
    runtime.shutdown().await;
}

#[tokio::test]
async fn waiting_for_the_endpoint_counts_against_the_startup_timeout() {
    let server = LegacyServer::start(Behavior {
        endpoint: Endpoint::Never,
        ..Behavior::default()
    })
    .await;
    let mut config = sse_server("hand", &server.url, |_| {});
    config.startup_timeout = Duration::from_secs(1);
    let (runtime, _) = start(crate::support::config([config])).await;
    assert_eq!(
        startup_error(&runtime),
        "did not finish starting within 1s (raise `startup_timeout_sec`)"
    );
    tokio::time::timeout(CLOSE_LIMIT, server.stream_closed())
        .await
        .expect("the abandoned startup drops the event stream");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_stream_that_ends_before_its_endpoint_fails_the_startup_saying_so() {
    let server = LegacyServer::start(Behavior {
        endpoint: Endpoint::EndStream,
        ..Behavior::default()
    })
    .await;
    let (runtime, _) = start(config([sse_server("hand", &server.url, |_| {})])).await;
    assert_eq!(
        startup_error(&runtime),
        "the legacy HTTP+SSE server's event stream ended before it announced its message endpoint (check that `url` is the server's SSE endpoint)"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_url_that_is_not_an_event_stream_fails_the_startup_saying_so() {
    let server = LegacyServer::start(Behavior {
        content_type: "text/html; charset=utf-8",
        ..Behavior::default()
    })
    .await;
    let (runtime, _) = start(config([sse_server("hand", &server.url, |_| {})])).await;
    assert_eq!(
        startup_error(&runtime),
        "`url` answered with `text/html` instead of an event stream, so it is not the endpoint of a legacy HTTP+SSE server (check `url`: such servers often serve `/sse`; or remove `transport = \"sse\"`)"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_oversized_event_fails_only_the_call_it_answers() {
    let server = LegacyServer::start(Behavior {
        fault: Fault::Oversized(64 * 1024),
        ..Behavior::default()
    })
    .await;
    let mut config = sse_server("hand", &server.url, |_| {});
    config.max_message_bytes = 8 * 1024;
    let (runtime, _) = start(crate::support::config([config])).await;
    assert_ready(&runtime);
    let error = runtime
        .call_tool("mcp__hand__fault", None)
        .await
        .unwrap_err();
    assert_eq!(
        chain(&error),
        "tool `fault` on server `hand` failed: server `hand` sent a message over the client's limit of 8192 bytes (raise `max_message_bytes`)"
    );
    let after = runtime.call_tool("mcp__hand__echo", None).await.unwrap();
    assert_eq!(text(&after), "ok", "the session goes on");
    runtime.shutdown().await;
}

/// A hand-written server whose `fault` tool does `fault`, started with a ready
/// runtime: the runtime and the error of one `fault` call.
async fn faulty_call(fault: Fault) -> (Runtime, String) {
    let server = LegacyServer::start(Behavior {
        fault,
        ..Behavior::default()
    })
    .await;
    let (runtime, _) = start(config([sse_server("hand", &server.url, |_| {})])).await;
    assert_ready(&runtime);
    let error = runtime
        .call_tool("mcp__hand__fault", None)
        .await
        .unwrap_err();
    (runtime, chain(&error))
}

#[tokio::test]
async fn the_stream_ending_mid_call_fails_the_call_as_a_closed_connection() {
    let (runtime, error) = faulty_call(Fault::EndStream).await;
    assert_eq!(
        error,
        "tool `fault` on server `hand` failed (the next call connects to the server again): the connection closed"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_post_answered_with_500_fails_that_call_with_the_servers_words() {
    let (runtime, error) = faulty_call(Fault::Status500).await;
    assert_eq!(
        error,
        "tool `fault` on server `hand` failed: server `hand` answered HTTP 500: database on fire"
    );
    let after = runtime.call_tool("mcp__hand__echo", None).await.unwrap();
    assert_eq!(text(&after), "ok", "the session goes on");
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_answer_event_that_is_not_a_response_fails_that_call_at_once_showing_it() {
    let (runtime, error) = faulty_call(Fault::NotAResponse).await;
    assert!(
        error.starts_with(
            "tool `fault` on server `hand` failed: server `hand` sent an answer mcp-runtime cannot read (it has neither `result` nor `error`): `{\"jsonrpc\":\"2.0\",\"id\":"
        ),
        "{error}"
    );
    let after = runtime.call_tool("mcp__hand__echo", None).await.unwrap();
    assert_eq!(text(&after), "ok", "the session goes on");
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_answer_event_that_is_not_utf8_fails_that_call_at_once_showing_it() {
    let (runtime, error) = faulty_call(Fault::NotUtf8).await;
    assert!(
        error.starts_with(
            "tool `fault` on server `hand` failed: server `hand` sent an answer that is not valid UTF-8"
        ),
        "{error}"
    );
    assert!(
        error.contains(r#"`{"note":"caf\xFF","jsonrpc":"2.0","id":"#),
        "{error}"
    );
    let after = runtime.call_tool("mcp__hand__echo", None).await.unwrap();
    assert_eq!(text(&after), "ok", "the session goes on");
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_answer_event_in_a_batch_is_taken() {
    let server = LegacyServer::start(Behavior {
        fault: Fault::Batch,
        ..Behavior::default()
    })
    .await;
    let (runtime, _) = start(config([sse_server("hand", &server.url, |_| {})])).await;
    assert_ready(&runtime);
    let answer = runtime.call_tool("mcp__hand__fault", None).await.unwrap();
    assert_eq!(text(&answer), "ok");
    runtime.shutdown().await;
}

#[tokio::test]
async fn forcing_sse_on_a_streamable_http_server_fails_the_startup_clearly() {
    let mut fixture = http_fixture(&[]).await;
    let (runtime, _) = start(config([sse_server("modern", &fixture.url, |_| {})])).await;
    assert_eq!(
        startup_error(&runtime),
        "the server's `url` did not open a legacy HTTP+SSE event stream (check `url`; a server that speaks Streamable HTTP needs no `transport = \"sse\"`): server `modern` answered HTTP 400: Bad Request: Session ID is required"
    );
    runtime.shutdown().await;
    fixture.kill().await;
}

#[tokio::test]
async fn a_burst_of_startups_over_legacy_sse_sends_one_tools_list() {
    const STARTUPS: usize = 4;
    let dir = temp_dir();
    let log = dir.path().join("posts.jsonl");
    let peer = fastmcp(&log).await;
    let server = sse_server("py", &peer.url, |_| {});
    let registry = mcp_runtime::ListingRegistry::new();
    // Every startup begins before any of them posts a message: the burst overlaps by
    // construction.
    let runtimes: Vec<Runtime> = futures::future::join_all((0..STARTUPS).map(|_| {
        Runtime::start(
            config([server.clone()]),
            mcp_runtime::StartOptions::new()
                .wait_for_all()
                .with_listing_registry(registry.clone()),
        )
    }))
    .await
    .into_iter()
    .map(|started| started.expect("the start succeeds"))
    .collect();
    for runtime in &runtimes {
        assert_ready(runtime);
        assert_adds(runtime, "mcp__py__add").await;
    }
    let posted = |method: &str| {
        read_log(&log)
            .iter()
            .filter(|entry| {
                entry["raw"]
                    .as_str()
                    .unwrap()
                    .contains(&format!(r#""method":"{method}""#))
            })
            .count()
    };
    assert_eq!(posted("initialize"), STARTUPS, "a session each");
    assert_eq!(posted("tools/list"), 1, "one listing for the burst");
    assert_eq!(posted("tools/call"), STARTUPS);
    assert!(registry.is_empty());
    futures::future::join_all(runtimes.into_iter().map(Runtime::shutdown)).await;
    peer.kill().await;
}

#[tokio::test]
async fn a_legacy_sse_server_answering_a_version_mcp_runtime_does_not_speak_fails_naming_both() {
    let server = LegacyServer::start(Behavior {
        version: "2099-01-01",
        ..Behavior::default()
    })
    .await;
    let (runtime, _) = start(config([sse_server("future", &server.url, |_| {})])).await;
    assert_eq!(
        startup_error(&runtime),
        "the server answered `initialize` with protocol version `2099-01-01`, which mcp-runtime does not speak (it offered `2025-11-25`, and also speaks `2025-06-18`, `2025-03-26` and `2024-11-05`)"
    );
    assert!(
        !server
            .posts()
            .iter()
            .any(|post| post.body.contains("tools/list")),
        "nothing is listed"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_pinned_protocol_is_offered_and_required_over_legacy_sse() {
    let server = LegacyServer::start(Behavior::default()).await;
    let pinned = |version| sse_server("old", &server.url, |_| {}).with_protocol(version);

    let (runtime, _) = start(config([pinned(Protocol::V2024_11_05)])).await;
    assert_ready(&runtime);
    runtime.shutdown().await;
    let (runtime, _) = start(config([pinned(Protocol::V2025_06_18)])).await;
    assert_eq!(
        startup_error(&runtime),
        "the server answered `initialize` with protocol version `2024-11-05`, and `protocol` pins `2025-06-18` (set `protocol` to `auto`, or to a version the server speaks)"
    );
    runtime.shutdown().await;
    let offered: Vec<String> = server
        .posts()
        .iter()
        .filter(|post| post.body.contains(r#""method":"initialize""#))
        .map(|post| {
            let body: serde_json::Value = serde_json::from_str(&post.body).unwrap();
            body["params"]["protocolVersion"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(offered, ["2024-11-05", "2025-06-18"]);
    let initialized = server
        .posts()
        .iter()
        .filter(|post| post.body.contains("notifications/initialized"))
        .count();
    assert_eq!(
        initialized, 1,
        "only the accepted start is told it is initialized"
    );

    let gets = server.gets().len();
    let (runtime, _) = start(config([pinned(Protocol::V2026_07_28)])).await;
    assert_eq!(
        startup_error(&runtime),
        "`protocol` pins `2026-07-28`, which the legacy HTTP+SSE transport (`transport = \"sse\"`) cannot carry (set `protocol` to `auto` or to a handshake revision)"
    );
    assert_eq!(server.gets().len(), gets, "nothing was asked of the server");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_plain_url_of_a_legacy_server_falls_back_to_http_sse_and_says_so() {
    let dir = temp_dir();
    let log = dir.path().join("posts.jsonl");
    let (python, everything) = tokio::join!(fastmcp(&log), everything());
    // No `transport`: the Streamable HTTP POSTs are refused, and the same `url` is
    // reached over HTTP+SSE.
    let (runtime, _) = start(config([
        ServerConfig::http("py", &python.url),
        ServerConfig::http("everything", &everything.url),
    ]))
    .await;
    for status in runtime.servers() {
        assert_eq!(
            status.state,
            ServerState::Ready,
            "{}: {:?}",
            status.name,
            status.error
        );
        assert_eq!(status.transport.as_str(), "sse", "{}", status.name);
    }
    assert_adds(&runtime, "mcp__py__add").await;
    let sum = runtime
        .call_tool(
            "mcp__everything__get_sum",
            json!({"a": 2, "b": 3}).as_object().cloned(),
        )
        .await
        .unwrap();
    assert!(text(&sum).contains('5'), "{}", text(&sum));
    runtime.shutdown().await;
    python.kill().await;
    everything.kill().await;
}

/// The one store of the test's one server.
struct OneStore(std::sync::Arc<dyn mcp_runtime::auth::CredentialStore>);

impl mcp_runtime::auth::CredentialSource for OneStore {
    fn store_for(
        &self,
        _: &str,
        _: &str,
        _: &mcp_runtime::config::OAuthConfig,
    ) -> std::sync::Arc<dyn mcp_runtime::auth::CredentialStore> {
        self.0.clone()
    }
}

#[tokio::test]
async fn a_protected_server_is_logged_in_to_and_sent_the_token_on_its_stream_and_every_post() {
    let legacy = LegacyServer::start_protected(Behavior::default()).await;
    let server = sse_server("legacy", &legacy.url, |_| {});
    let store: std::sync::Arc<dyn mcp_runtime::auth::CredentialStore> =
        std::sync::Arc::new(mcp_runtime::auth::InMemoryCredentialStore::new());
    let start = || {
        let options = mcp_runtime::StartOptions::new()
            .wait_for_all()
            .with_credentials(std::sync::Arc::new(OneStore(store.clone())));
        Runtime::start(config([server.clone()]), options)
    };

    // Without a login: the stream is refused, with the challenge a login starts from.
    let runtime = start().await.unwrap();
    let status = &runtime.servers()[0];
    let error = status.error.as_ref().expect("refused");
    assert!(
        matches!(
            error.http_failure(),
            Some(mcp_runtime::error::HttpFailure::Unauthorized {
                challenge: Some(_),
                ..
            })
        ),
        "{}",
        chain(error)
    );
    runtime.shutdown().await;

    let login = mcp_runtime::login::Login::new(&server, store.clone());
    login.run(&FollowRedirects).await.expect("the login");

    let runtime = start().await.unwrap();
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.transport.as_str(), "sse");
    assert_eq!(status.auth, Some(mcp_runtime::AuthState::LoggedIn));
    let result = runtime
        .call_tool("mcp__legacy__echo", None)
        .await
        .expect("the call");
    assert!(!result.is_error());
    runtime.shutdown().await;

    let bearer = |headers: &std::collections::HashMap<String, String>| {
        headers
            .get("authorization")
            .is_some_and(|value| value.starts_with("Bearer at_"))
    };
    let gets = legacy.gets();
    assert!(bearer(&gets.last().unwrap().headers), "the stream's GET");
    let posts = legacy.posts();
    assert!(!posts.is_empty());
    assert!(posts.iter().all(|post| bearer(&post.headers)), "every POST");
}
