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

#[test]
fn every_value_that_cannot_work_is_reported_at_load_naming_file_table_and_key() {
    let dir = temp_dir();
    let path = dir.path().join("config.toml");
    let text = format!(
        r#"
[mcp_servers.{long_name}]
command = "server"

[mcp_servers.files]
command = "server"
args = ["--root", "/srv\u0000"]
env = {{ "MODE=ro" = "1" }}
env_vars = ["GITHUB_TOKEN=ghp"]

[mcp_servers.search]
url = "http://"
http_headers = {{ "X Team" = "core", X-Key = "secret-value\nX-Injected: 1" }}
"#,
        long_name = "n".repeat(300)
    );
    std::fs::write(&path, text).unwrap();
    let error = Config::load(&path).unwrap_err();
    let file = format!("`{}`: ", path.display());
    let messages: Vec<String> = error
        .errors()
        .iter()
        .map(|error| {
            let message = error.to_string();
            message
                .strip_prefix(&file)
                .unwrap_or_else(|| panic!("the file is not named first: {message}"))
                .to_owned()
        })
        .collect();
    assert_eq!(
        messages,
        [
            "key `args` in `[mcp_servers.files]`: item 2 contains a NUL byte, which no program argument, path or environment variable can hold (remove it)",
            "key `env` in `[mcp_servers.files]`: variable `MODE=…` contains `=`, which no variable name can hold (write the variable's name alone)",
            "key `env_vars` in `[mcp_servers.files]`: variable `GITHUB_TOKEN=…` contains `=`, which no variable name can hold (write the variable's name alone)",
            &format!(
                "server name `{}…` in `[mcp_servers]` is 300 bytes long, more than the 256 allowed (use a shorter name)",
                "n".repeat(32)
            ),
            "key `url` in `[mcp_servers.search]` must be an `http://` or `https://` URL (empty host)",
            "key `http_headers` in `[mcp_servers.search]`: header `X Team` is not a valid HTTP header name (use letters, digits and `-`)",
            "key `http_headers` in `[mcp_servers.search]`: the value of header `X-Key` contains a line break, which an HTTP header cannot hold (remove it)",
        ]
    );
    let message = error.to_string();
    assert!(
        !message.contains("secret-value") && !message.contains("ghp"),
        "{message}"
    );
}
