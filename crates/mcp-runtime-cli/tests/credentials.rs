//! No credential the runtime sends reaches the CLI's output, whichever text of a
//! server's answer quotes it back: an error page, a JSON-RPC error, stderr, a tool's
//! result, a log line.

use std::{
    path::{Path, PathBuf},
    process::Output,
};

use crate::support::{cli, fixture_server, http_fixture, stderr, stdout};

/// The bearer token the HTTP server is sent, from the environment.
const TOKEN: &str = "cli-bearer-4d1f-77aa";
/// A literal credential header of the configuration.
const API_KEY: &str = "cli-api-key-91b0-cc3e";
/// A credential passed to a local server in its environment.
const SERVER_TOKEN: &str = "cli-server-token-2e8d";

/// A config file in `dir`: the server `echo` at `url` sent the token and the literal
/// key, and the local server `local` given [`SERVER_TOKEN`] in `LOCAL_TOKEN`.
fn config_file(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        r#"
[mcp_servers.echo]
url = "{url}"
bearer_token_env_var = "CLI_TEST_TOKEN"
http_headers = {{ "X-Api-Key" = "{API_KEY}" }}

[mcp_servers.local]
command = {fixture:?}
args = ["--stderr-env", "LOCAL_TOKEN"]
env_vars = ["LOCAL_TOKEN"]
"#,
        fixture = fixture_server().to_str().unwrap(),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `mcp-runtime ARGS` with the credentials in its environment and `log` as its log
/// filter.
fn run(args: &[&str], log: Option<&str>) -> Output {
    let mut command = cli();
    command
        .args(args)
        .env("CLI_TEST_TOKEN", TOKEN)
        .env("LOCAL_TOKEN", SERVER_TOKEN);
    if let Some(filter) = log {
        command.env("MCP_RUNTIME_LOG", filter);
    }
    command.output().expect("the binary runs")
}

/// Asserts that `text` (what `what` printed) holds no credential and a masked one.
fn assert_masked(what: &str, text: &str) {
    for credential in [TOKEN, API_KEY, SERVER_TOKEN] {
        assert!(
            !text.contains(credential),
            "{what} shows `{credential}`:\n{text}"
        );
    }
    assert!(text.contains("*****"), "{what} masked nothing:\n{text}");
}

#[test]
fn an_error_page_quoting_the_credentials_shows_none_in_servers_json_or_call() {
    let fixture = http_fixture(&["--http-status", "500", "--echo-headers"]);
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), &fixture.url);
    let config = config.to_str().unwrap();

    let servers = run(&["servers", "--config", config], None);
    assert_masked("`servers`", &stdout(&servers));
    let json = run(&["servers", "--config", config, "--json"], None);
    assert_masked("`servers --json`", &stdout(&json));
    let call = run(&["call", "mcp__echo__pid", "--config", config], None);
    assert_eq!(call.status.code(), Some(2), "{}", stderr(&call));
    assert_masked("`call`'s stderr", &stderr(&call));
    // Every library's logs, at the most detailed level.
    let logged = run(&["servers", "--config", config], Some("trace"));
    assert_masked("the trace log", &stderr(&logged));
}

#[test]
fn a_json_rpc_error_quoting_the_credentials_shows_none() {
    let fixture = http_fixture(&["--echo-headers"]);
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), &fixture.url);
    let call = run(
        &[
            "call",
            "mcp__echo__pid",
            "--config",
            config.to_str().unwrap(),
        ],
        Some("debug"),
    );
    assert_eq!(call.status.code(), Some(2), "{}", stderr(&call));
    let stderr = stderr(&call);
    assert!(
        stderr.contains("refused the request with headers"),
        "{stderr}"
    );
    assert_masked("`call`'s stderr", &stderr);
}

#[test]
fn a_result_quoting_a_servers_credential_is_printed_masked() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = http_fixture(&[]);
    let config = config_file(dir.path(), &fixture.url);
    let config = config.to_str().unwrap();
    let arguments = r#"{"name": "LOCAL_TOKEN"}"#;
    for json in [false, true] {
        let mut args = vec![
            "call",
            "mcp__local__env",
            "--config",
            config,
            "--args",
            arguments,
        ];
        if json {
            args.push("--json");
        }
        let call = run(&args, None);
        assert_eq!(call.status.code(), Some(0), "{}", stderr(&call));
        assert_masked(&format!("`call` (json: {json})"), &stdout(&call));
        if json {
            let printed: serde_json::Value = serde_json::from_slice(&call.stdout)
                .unwrap_or_else(|error| panic!("not JSON ({error}): {}", stdout(&call)));
            assert_eq!(printed["structuredContent"]["value"], "*****");
        }
    }
    // The server's stderr, in the log.
    let logged = run(&["servers", "--config", config], Some("mcp_runtime=info"));
    assert!(
        stderr(&logged).contains("fixture: LOCAL_TOKEN=*****"),
        "{}",
        stderr(&logged)
    );
    assert_masked("the log", &stderr(&logged));
}
