//! Every protocol era over every transport the fixture serves, in `auto` mode: a burst
//! of startups shares one `tools/list` (counted in the server's own request log),
//! sandbox metadata reaches an opted-in server with the protocol keys of its era, and a
//! server that shares no version with mcp-runtime fails its startup naming both sides,
//! without telling the server it is initialized.
//! The legacy HTTP+SSE rows are in `legacy_sse`, beside its servers.

use mcp_runtime::{
    CallAuthority, CallOptions, ListingRegistry, Runtime, SandboxState, ServerConfig, ServerState,
    StartOptions, config::Protocol,
};
use serde_json::Value;

use crate::support::*;

/// A state with a number beyond `f64`, escapes and irregular spacing: only the exact
/// text passes.
const STATE: &str = r#"{ "alpha" : 123456789012345678901234567890.125,"escaped":"caf\u00e9 \/","sandbox_policy":{"type":"workspace-write"} }"#;

const ERAS: [&str; 3] = ["handshake", "dual", "stateless"];

/// The protocol version mcp-runtime speaks to a fixture of `era` in `auto` mode.
fn version_for(era: &str) -> &'static str {
    match era {
        "handshake" => "2025-11-25",
        _ => "2026-07-28",
    }
}

#[derive(Clone, Copy, Debug)]
enum Transport {
    Stdio,
    Http,
}

/// The fixture of `era` over `transport`, with `args`, in `auto` mode; the HTTP
/// process is kept alive by the returned guard.
async fn serve(
    transport: Transport,
    era: &str,
    args: &[&str],
) -> (ServerConfig, Option<HttpFixture>) {
    let mut all = vec!["--era", era];
    all.extend_from_slice(args);
    match transport {
        Transport::Stdio => (fixture_auto("srv", &all), None),
        Transport::Http => {
            let http = http_fixture(&all).await;
            (ServerConfig::http("srv", &http.url), Some(http))
        }
    }
}

fn options(registry: &ListingRegistry) -> StartOptions {
    StartOptions::new()
        .wait_for_all()
        .with_listing_registry(registry.clone())
}

fn of_method<'a>(log: &'a [Value], method: &'a str) -> impl Iterator<Item = &'a Value> {
    log.iter().filter(move |entry| entry["method"] == method)
}

async fn shutdown_all(runtimes: Vec<Runtime>) {
    futures::future::join_all(runtimes.into_iter().map(Runtime::shutdown)).await;
}

#[tokio::test]
async fn a_burst_sends_one_tools_list_in_every_era_over_stdio_and_http() {
    const STARTUPS: usize = 4;
    for transport in [Transport::Stdio, Transport::Http] {
        for era in ERAS {
            let case = format!("{era} over {transport:?}");
            let dir = temp_dir();
            let log = dir.path().join("log.jsonl");
            let (server, _http) = serve(transport, era, &["--log", path_str(&log)]).await;
            let registry = ListingRegistry::new();
            // Every startup begins before any of them sends a request: the burst
            // overlaps by construction.
            let runtimes: Vec<Runtime> = futures::future::join_all(
                (0..STARTUPS).map(|_| Runtime::start(config([server.clone()]), options(&registry))),
            )
            .await
            .into_iter()
            .map(|started| started.expect("the start succeeds"))
            .collect();
            for runtime in &runtimes {
                let status = &runtime.servers()[0];
                assert_eq!(
                    status.state,
                    ServerState::Ready,
                    "{case}: {:?}",
                    status.error
                );
                assert_eq!(
                    status.protocol_version.as_deref(),
                    Some(version_for(era)),
                    "{case}"
                );
                let echoed = runtime
                    .call_tool("mcp__srv__echo", object(serde_json::json!({"text": "hi"})))
                    .await
                    .unwrap_or_else(|error| panic!("{case}: {error}"));
                assert_eq!(
                    echoed.structured_content().cloned().unwrap()["text"],
                    "hi",
                    "{case}"
                );
            }
            let requests: usize = runtimes
                .iter()
                .map(|runtime| runtime.servers()[0].tools_list_requests)
                .sum();
            let log = read_log(&log);
            assert_eq!(count_method(&log, "tools/list"), 1, "{case}: {log:?}");
            assert_eq!(requests, 1, "{case}");
            assert_eq!(count_method(&log, "tools/call"), STARTUPS, "{case}");
            assert!(registry.is_empty(), "{case}");
            shutdown_all(runtimes).await;
        }
    }
}

#[tokio::test]
async fn sandbox_metadata_reaches_an_opted_in_server_in_every_era_over_stdio_and_http() {
    for transport in [Transport::Stdio, Transport::Http] {
        for era in ERAS {
            let case = format!("{era} over {transport:?}");
            let dir = temp_dir();
            let log = dir.path().join("log.jsonl");
            let args = [
                "--experimental",
                "codex/sandbox-state-meta={}",
                "--log",
                path_str(&log),
            ];
            let (server, _http) = serve(transport, era, &args).await;
            let (runtime, _) = start(config([server])).await;
            let authority = CallAuthority::new(SandboxState::from_json(STATE).unwrap());
            runtime
                .call_tool_with(
                    "mcp__srv__echo",
                    None,
                    CallOptions::new().with_authority(authority),
                )
                .await
                .unwrap_or_else(|error| panic!("{case}: {error}"));
            runtime.shutdown().await;

            let log = read_log(&log);
            let call = of_method(&log, "tools/call").next().expect("the call");
            let raw = call["raw"].as_str().unwrap();
            for key in ["codex/sandbox-state", "codex/sandbox-state-meta"] {
                assert!(
                    raw.contains(&format!(r#""{key}":{STATE}"#)),
                    "{case}: {key}: {raw}"
                );
            }
            let meta = &call["params"]["_meta"];
            let version = &meta["io.modelcontextprotocol/protocolVersion"];
            if era == "handshake" {
                assert!(version.is_null(), "{case}: {meta}");
            } else {
                assert_eq!(version, "2026-07-28", "{case}");
                assert_eq!(
                    meta["io.modelcontextprotocol/clientInfo"]["name"],
                    "mcp-runtime"
                );
                assert!(
                    meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
                    "{case}"
                );
            }
            // The opt-in came from the era's own answer: `initialize` for the
            // handshake revisions, `server/discover` for 2026-07-28.
            let asked = if era == "handshake" {
                "initialize"
            } else {
                "server/discover"
            };
            assert_eq!(count_method(&log, asked), 1, "{case}: {log:?}");
        }
    }
}

#[tokio::test]
async fn a_server_of_no_shared_version_fails_naming_both_over_stdio_and_http() {
    // (era, the only version the server supports, what `protocol` pins, the error)
    let cases = [
        (
            "stateless",
            "2027-01-01",
            Protocol::Auto,
            "the server shares no protocol version with mcp-runtime: it supports `2027-01-01`, and mcp-runtime speaks `2026-07-28`, `2025-11-25`, `2025-06-18`, `2025-03-26` and `2024-11-05` (upgrade the server or mcp-runtime)",
        ),
        // rmcp refuses the `server/discover` probe naming the versions it supports.
        (
            "handshake",
            "2024-10-07",
            Protocol::Auto,
            "the server shares no protocol version with mcp-runtime: it supports `2024-10-07`, and mcp-runtime speaks `2026-07-28`, `2025-11-25`, `2025-06-18`, `2025-03-26` and `2024-11-05` (upgrade the server or mcp-runtime)",
        ),
        // Without the probe, `initialize` is answered with the version it supports.
        (
            "handshake",
            "2024-10-07",
            Protocol::V2025_11_25,
            "the server answered `initialize` with protocol version `2024-10-07`, and `protocol` pins `2025-11-25` (set `protocol` to `auto`, or to a version the server speaks)",
        ),
    ];
    for transport in [Transport::Stdio, Transport::Http] {
        for (era, supported, protocol, expected) in cases {
            let case = format!("{era} supporting {supported} over {transport:?}, {protocol:?}");
            let dir = temp_dir();
            let log = dir.path().join("log.jsonl");
            let args = ["--supported-version", supported, "--log", path_str(&log)];
            let (server, _http) = serve(transport, era, &args).await;
            let (runtime, _) = start(config([server.with_protocol(protocol)])).await;
            let status = &runtime.servers()[0];
            assert_eq!(status.state, ServerState::Failed, "{case}");
            let error = mcp_runtime::error::chain(status.error.as_ref().unwrap());
            assert!(error.ends_with(expected), "{case}: {error}");
            runtime.shutdown().await;
            // A revision refused is never agreed to: the server is not told the
            // client is initialized, and nothing else is asked.
            let log = read_log(&log);
            for method in ["notifications/initialized", "tools/list"] {
                assert_eq!(count_method(&log, method), 0, "{case}: {log:?}");
            }
        }
    }
}
