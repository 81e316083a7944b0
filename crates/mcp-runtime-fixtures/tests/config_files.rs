//! Configuration files as users write them, run end to end.

use mcp_runtime::{Config, ServerState};

use crate::support::*;

#[tokio::test]
async fn a_codex_config_file_runs_as_it_is() {
    let dir = temp_dir();
    let path = dir.path().join("config.toml");
    let text = format!(
        r#"
model = "gpt-5"
approval_policy = "on-request"

[mcp_servers.docs]
command = "{fixture}"
args = ["--tools", "2"]
startup_timeout_sec = 20
tool_timeout_sec = 60
disabled_tools = ["fail"]

[mcp_servers.off]
command = "{fixture}"
enabled = false
"#,
        fixture = fixture_path()
    );
    std::fs::write(&path, text).unwrap();
    let config = Config::load(&path).unwrap();
    let (runtime, _) = start(config).await;
    let servers = runtime.servers();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].state, ServerState::Ready);
    let catalog = runtime.catalog();
    assert!(catalog.resolve("mcp__docs__tool_1").is_some());
    assert!(catalog.resolve("mcp__docs__fail").is_none());
    runtime.shutdown().await;
}

#[test]
fn a_missing_file_is_named_in_the_error() {
    let error = Config::load(std::path::Path::new("/nonexistent/mcp.toml")).unwrap_err();
    assert_eq!(
        mcp_runtime::error::chain(&error),
        "cannot read config file `/nonexistent/mcp.toml`: No such file or directory (os error 2)"
    );
}
