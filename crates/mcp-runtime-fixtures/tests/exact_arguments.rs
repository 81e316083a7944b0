//! Tool arguments given as JSON text reach the server exactly as written.

use mcp_runtime::{CallAuthority, CallError, CallOptions, Runtime, SandboxState, ServerConfig};
use serde_json::value::RawValue;

use crate::support::*;

/// Numbers beyond `f64` and `u64`, exponents, `-0`, escapes: each would change in a
/// round trip through `serde_json::Value`.
const ARGUMENTS: &str = r#"{"n":123456789012345678901234567890,"big":18446744073709551616,"e":1e5,"z":-0,"s":"caf\u00e9 \/","nested":[0.1,{"x":1.000000000000000000001}],"plain":"ok"}"#;

/// The raw text of every `tools/call` the fixture logged.
fn calls(log: &std::path::Path) -> Vec<String> {
    read_log(log)
        .into_iter()
        .filter(|entry| entry["method"] == "tools/call")
        .map(|entry| entry["raw"].as_str().unwrap().to_owned())
        .collect()
}

async fn call_exact(runtime: &Runtime, arguments: &str, options: CallOptions) {
    let arguments = RawValue::from_string(arguments.to_owned()).unwrap();
    runtime
        .call_tool_exact("mcp__f__echo", &arguments, options)
        .await
        .unwrap();
}

async fn assert_arguments_arrive_exactly(server: ServerConfig, log: &std::path::Path) {
    let (runtime, _) = start(config([server])).await;
    call_exact(&runtime, ARGUMENTS, CallOptions::new()).await;
    let raw = &calls(log)[0];
    assert!(
        raw.contains(&format!(r#""arguments":{ARGUMENTS}"#)),
        "{raw}"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn exact_arguments_reach_a_stdio_server_byte_for_byte() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    assert_arguments_arrive_exactly(fixture("f", &["--log", path_str(&log)]), &log).await;
}

#[tokio::test]
async fn exact_arguments_reach_an_http_server_byte_for_byte() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--log", path_str(&log)]).await;
    assert_arguments_arrive_exactly(ServerConfig::http("f", &fixture.url), &log).await;
}

#[tokio::test]
async fn exact_arguments_keep_whitespace_out_of_the_stdio_framing() {
    // Line breaks between tokens would split a stdio message: they are dropped, the
    // values stay exact.
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let (runtime, _) = start(config([fixture("f", &["--log", path_str(&log)])])).await;
    call_exact(
        &runtime,
        "{\n  \"n\" : 123456789012345678901234567890,\n  \"a\" : [ 1 ,\n 2 ]\n}",
        CallOptions::new(),
    )
    .await;
    let raw = &calls(&log)[0];
    assert!(
        raw.contains(r#""arguments":{"n":123456789012345678901234567890,"a":[1,2]}"#),
        "{raw}"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn exact_arguments_cannot_carry_the_sandbox_keys() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture(
        "f",
        &[
            "--log",
            path_str(&log),
            "--experimental",
            "codex/sandbox-state={}",
        ],
    );
    let (runtime, _) = start(config([server])).await;
    let authority = CallAuthority::new(SandboxState::from_json(r#"{"real":1}"#).unwrap());
    // An escaped key names the same key once decoded: it is removed all the same.
    call_exact(
        &runtime,
        r#"{"codex\/sandbox-state":{"forged":1},"_meta":{"codex/sandbox-launcher":{"forged":2}},"n":1e5}"#,
        CallOptions::new().with_authority(authority),
    )
    .await;
    let raw = &calls(&log)[0];
    assert!(!raw.contains("forged"), "{raw}");
    assert!(raw.contains(r#""codex/sandbox-state":{"real":1}"#), "{raw}");
    assert!(raw.contains(r#""n":1e5"#), "{raw}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn exact_arguments_must_be_an_object() {
    let (runtime, _) = start(config([fixture("f", &[])])).await;
    let arguments = RawValue::from_string("[1]".to_owned()).unwrap();
    let error = runtime
        .call_tool_exact("mcp__f__echo", &arguments, CallOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, CallError::ArgumentsNotAnObject { .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "the arguments of tool `mcp__f__echo` must be a JSON object"
    );
    runtime.shutdown().await;
}
