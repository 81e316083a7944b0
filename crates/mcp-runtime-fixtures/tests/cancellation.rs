//! Cancellation reaches the wire: a call whose caller stopped waiting is followed by
//! `notifications/cancelled`, written before the connection closes, even when the
//! runtime shuts down right after.

use std::time::Duration;

use mcp_runtime::{CallError, Runtime, ServerConfig};
use serde_json::Value;

use crate::support::*;

/// Asserts that the log at `path` holds exactly one `notifications/cancelled`, naming
/// the one `tools/call`.
fn assert_the_call_was_cancelled_once(path: &std::path::Path) {
    let log = read_log(path);
    let call_id = log
        .iter()
        .find(|entry| entry["method"] == "tools/call")
        .map(|entry| entry["id"].clone())
        .unwrap_or_else(|| panic!("the call reached the server: {log:?}"));
    let cancelled: Vec<&Value> = log
        .iter()
        .filter(|entry| entry["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "one cancellation in {log:?}");
    assert_eq!(cancelled[0]["params"]["requestId"], call_id);
}

/// A fixture whose calls never answer, logging what it receives to `log`.
fn slow_stdio(log: &std::path::Path) -> ServerConfig {
    fixture(
        "slow",
        &["--call-delay-ms", "600000", "--log", path_str(log)],
    )
    .with_tool_timeout(Duration::from_millis(500))
}

/// Calls the slow server's tool and expects its timeout.
async fn call_until_timeout(runtime: &Runtime) {
    let error = runtime
        .call_tool("mcp__slow__echo", None)
        .await
        .unwrap_err();
    assert!(matches!(error, CallError::Timeout { .. }), "{error}");
}

/// Starts a call to `mcp__slow__echo` and drops it once its request is on the wire.
async fn drop_a_call_in_flight(runtime: &Runtime) {
    let call = runtime.call_tool("mcp__slow__echo", None);
    let mut call = std::pin::pin!(call);
    // One poll puts the request on its way; then the caller gives up.
    tokio::select! {
        biased;
        _ = &mut call => panic!("the call cannot finish"),
        () = std::future::ready(()) => {}
    }
    // A refresh is answered only after the call's request was written; the call
    // is dropped when this returns.
    runtime.refresh_tools("slow").await.unwrap();
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_before_shutdown_closes_a_stdio_server() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let (runtime, events) = start(config([slow_stdio(&log)])).await;

    call_until_timeout(&runtime).await;
    runtime.shutdown().await;

    assert_the_call_was_cancelled_once(&log);
    assert_all_gone(spawned_pid(&events, "slow"), &[]);
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_before_shutdown_ends_an_http_session() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--call-delay-ms", "600000", "--log", path_str(&log)]).await;
    let server =
        ServerConfig::http("slow", &fixture.url).with_tool_timeout(Duration::from_millis(500));
    let (runtime, _) = start(config([server])).await;

    call_until_timeout(&runtime).await;
    runtime.shutdown().await;

    assert_the_call_was_cancelled_once(&log);
}

#[tokio::test]
async fn a_dropped_call_is_cancelled_before_shutdown_closes_the_connection() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let (runtime, events) = start(config([
        slow_stdio(&log).with_tool_timeout(Duration::from_secs(600))
    ]))
    .await;

    drop_a_call_in_flight(&runtime).await;
    runtime.shutdown().await;

    assert_the_call_was_cancelled_once(&log);
    assert_all_gone(spawned_pid(&events, "slow"), &[]);
}

#[tokio::test]
async fn a_dropped_call_is_cancelled_before_abort_ends_an_http_session() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--call-delay-ms", "600000", "--log", path_str(&log)]).await;
    let server =
        ServerConfig::http("slow", &fixture.url).with_tool_timeout(Duration::from_secs(600));
    let (runtime, _) = start(config([server])).await;

    // As the CLI does on an interrupt.
    drop_a_call_in_flight(&runtime).await;
    runtime.abort().await;

    assert_the_call_was_cancelled_once(&log);
}
