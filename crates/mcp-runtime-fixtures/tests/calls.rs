//! Tool calls: routing, results as the server sent them, timeouts and cancellation.

use std::time::Duration;

use mcp_runtime::{CallError, ServerState};
use serde_json::{Value, json};

use crate::support::*;

/// Asserts that the fixture's log holds one `notifications/cancelled`, for its one
/// `tools/call`.
fn assert_the_call_was_cancelled_once(log: &std::path::Path) {
    let log = read_log(log);
    let call_id = log
        .iter()
        .find(|entry| entry["method"] == "tools/call")
        .map(|entry| entry["id"].clone())
        .expect("the call reached the server");
    let cancelled: Vec<&Value> = log
        .iter()
        .filter(|entry| entry["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{log:?}");
    assert_eq!(cancelled[0]["params"]["requestId"], call_id);
}

#[tokio::test]
async fn a_qualified_name_routes_to_its_own_server() {
    let (runtime, events) = start(config([fixture("left", &[]), fixture("right", &[])])).await;
    for server in ["left", "right"] {
        let result = runtime
            .call_tool(&format!("mcp__{server}__pid"), None)
            .await
            .unwrap();
        let pid = result.structured_content().cloned().unwrap()["pid"]
            .as_i64()
            .unwrap();
        assert_eq!(pid as i32, spawned_pid(&events, server));
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn results_come_back_unchanged() {
    let (runtime, _) = start(config([fixture("f", &[])])).await;
    let arguments = json!({"text": "hi", "nested": {"n": [1, 2.5, null]}});
    let result = runtime
        .call_tool("mcp__f__echo", object(arguments.clone()))
        .await
        .unwrap();
    assert_eq!(
        result.structured_content().cloned(),
        Some(arguments.clone())
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text_of(&result)).unwrap(),
        arguments
    );
    assert!(!result.is_error());

    let failed = runtime.call_tool("mcp__f__fail", None).await.unwrap();
    assert!(failed.is_error(), "isError is a result, not an error");
    assert_eq!(text_of(&failed), "failed on purpose");
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_unknown_tool_is_an_error_naming_it() {
    let (runtime, _) = start(config([fixture("f", &[])])).await;
    let error = runtime.call_tool("mcp__f__nope", None).await.unwrap_err();
    assert!(matches!(error, CallError::UnknownTool { .. }));
    assert_eq!(
        error.to_string(),
        "no tool is named `mcp__f__nope`",
        "the library names no CLI command; the CLI adds its own hint"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_unknown_tool_near_a_listed_one_names_it() {
    let (runtime, _) = start(config([fixture("f", &[])])).await;
    // Codex's names turn `-` into `_`; a case slip is near too.
    for asked in ["mcp__f__add-tool", "mcp__f__Add_Tool", "mcp__f__add_tol"] {
        let error = runtime.call_tool(asked, None).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("no tool is named `{asked}` (did you mean `mcp__f__add_tool`?)")
        );
    }
    // Nothing near: no guess.
    let error = runtime.call_tool("mcp__f__bake", None).await.unwrap_err();
    assert_eq!(error.to_string(), "no tool is named `mcp__f__bake`");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_disabled_servers_tool_is_an_error_saying_the_server_is_disabled() {
    let mut off = fixture("off", &[]);
    off.enabled = false;
    let (runtime, _) = start(config([fixture("f", &[]), off])).await;
    let error = runtime.call_tool("mcp__off__pid", None).await.unwrap_err();
    assert!(
        matches!(&error, CallError::ServerDisabled { server } if server == "off"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "server `off` is disabled, so its tools cannot be called (to call them, remove its `enabled = false` line, or its `\"disabled\": true` in a JSON config file)",
        "it says how to call them"
    );
    let error = runtime
        .call_tool("mcp__nosuch__pid", None)
        .await
        .unwrap_err();
    assert!(matches!(error, CallError::UnknownTool { .. }), "{error:?}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_call_past_its_timeout_fails_and_the_server_is_told_to_cancel() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture(
        "slow",
        &["--call-delay-ms", "600000", "--log", path_str(&log)],
    )
    .with_tool_timeout(Duration::from_millis(500));
    let (runtime, _) = start(config([server])).await;

    let error = runtime
        .call_tool("mcp__slow__echo", None)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `echo` on server `slow` did not answer within 0.5s (raise `tool_timeout_sec`)"
    );
    // The cancellation is written in the background (the caller does not wait for
    // it); shutdown writes whatever is still owed before it closes the connection.
    runtime.shutdown().await;

    assert_the_call_was_cancelled_once(&log);
}

#[tokio::test]
async fn dropping_a_call_tells_the_server_to_cancel() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture(
        "slow",
        &["--call-delay-ms", "600000", "--log", path_str(&log)],
    );
    let (runtime, _) = start(config([server])).await;

    {
        let call = runtime.call_tool("mcp__slow__echo", None);
        let mut call = std::pin::pin!(call);
        // Poll until the request is on its way, then drop the call.
        tokio::select! {
            biased;
            _ = &mut call => panic!("the call cannot finish"),
            () = tokio::task::yield_now() => {}
        }
        // Let the request reach the server before dropping: a refresh is answered
        // only after the call's request was written.
        runtime.refresh_tools("slow").await.unwrap();
    }
    // The cancellation is written in the background; shutdown writes whatever is
    // still owed before it closes the connection.
    runtime.shutdown().await;

    assert_the_call_was_cancelled_once(&log);
}

#[tokio::test]
async fn a_secret_in_the_host_environment_reaches_only_servers_that_name_it() {
    set_test_env();
    const SECRET: &str = TEST_SECRET_VAR;
    let (runtime, _) = start(config([
        fixture("plain", &[]),
        with_env_var(fixture("named", &[]), SECRET),
        with_env(fixture("literal", &[]), "GREETING", "hello"),
    ]))
    .await;
    assert!(
        runtime
            .servers()
            .iter()
            .all(|s| s.state == ServerState::Ready)
    );
    let read = |server: &'static str, name: &'static str| {
        let runtime = &runtime;
        async move {
            let result = runtime
                .call_tool(
                    &format!("mcp__{server}__env"),
                    object(json!({"name": name})),
                )
                .await
                .unwrap();
            result.structured_content().cloned().unwrap()["value"].clone()
        }
    };
    assert_eq!(read("plain", SECRET).await, Value::Null);
    // The server that names it has it; the runtime hands it back masked, as it does
    // every credential it passed to a server.
    assert_eq!(read("named", SECRET).await, json!("*****"));
    assert_eq!(read("literal", SECRET).await, Value::Null);
    assert_eq!(read("literal", "GREETING").await, json!("hello"));
    assert_eq!(read("plain", "GREETING").await, Value::Null);
    // The allow-list still reaches every server.
    assert_eq!(
        read("plain", "PATH").await,
        json!(std::env::var("PATH").unwrap())
    );
    runtime.shutdown().await;
}
