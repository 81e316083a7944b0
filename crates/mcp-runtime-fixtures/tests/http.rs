//! Streamable HTTP servers: bearer token and headers from the environment.

use mcp_runtime::{ServerConfig, ServerState, config::TransportConfig};

use crate::support::*;

fn http_server(
    url: &str,
    configure: impl FnOnce(&mut mcp_runtime::config::HttpConfig),
) -> ServerConfig {
    let mut server = ServerConfig::http("remote", url);
    if let TransportConfig::StreamableHttp(http) = &mut server.transport {
        configure(http);
    }
    server
}

#[tokio::test]
async fn the_bearer_token_and_headers_arrive_as_configured() {
    set_test_env();
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--require-bearer", TEST_TOKEN, "--log", path_str(&log)]).await;
    let server = http_server(&fixture.url, |http| {
        http.bearer_token_env_var = Some(TEST_TOKEN_VAR.into());
        http.http_headers.insert("X-Team".into(), "core".into());
        http.env_http_headers
            .insert("X-From-Env".into(), TEST_HEADER_VAR.into());
    });
    let (runtime, _) = start(config([server])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    assert_eq!(status.transport.as_str(), "streamable_http");

    let result = runtime.call_tool("mcp__remote__pid", None).await.unwrap();
    assert!(result.structured_content().is_some());

    let log = read_log(&log);
    assert!(count_method(&log, "tools/call") == 1, "{log:?}");
    for entry in &log {
        let headers = &entry["http_headers"];
        assert_eq!(headers["authorization"], format!("Bearer {TEST_TOKEN}"));
        assert_eq!(headers["x-team"], "core");
        assert_eq!(headers["x-from-env"], "header-from-env");
    }
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_missing_token_variable_fails_startup_naming_the_variable() {
    set_test_env();
    let fixture = http_fixture(&["--require-bearer", TEST_TOKEN]).await;
    let server = http_server(&fixture.url, |http| {
        http.bearer_token_env_var = Some("MCP_RUNTIME_TEST_UNSET_TOKEN".into());
    });
    let (runtime, _) = start(config([server])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    assert_eq!(
        status.error.as_ref().unwrap().to_string(),
        "environment variable `MCP_RUNTIME_TEST_UNSET_TOKEN` named by `bearer_token_env_var` is not set or is empty"
    );
}

#[tokio::test]
async fn a_wrong_token_is_a_handshake_failure_that_does_not_show_the_token() {
    set_test_env();
    let fixture = http_fixture(&["--require-bearer", "another-token"]).await;
    let server = http_server(&fixture.url, |http| {
        http.bearer_token_env_var = Some(TEST_TOKEN_VAR.into());
    });
    let (runtime, _) = start(config([server])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = mcp_runtime::error::chain(status.error.as_ref().unwrap());
    assert!(error.starts_with("handshake failed"), "{error}");
    assert!(!error.contains(TEST_TOKEN), "{error}");
}
