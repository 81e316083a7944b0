//! `servers` as the diagnostic command, and what a call to a server that cannot run
//! says.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{cli, fixture_server, stderr, stdout};

fn run(args: &[&str]) -> std::process::Output {
    cli().args(args).output().expect("the binary runs")
}

/// A config file in `dir`: a healthy fixture `up`, a required server `gone` that
/// cannot start, and a disabled fixture `off`.
fn config_file(dir: &Path) -> PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "[mcp_servers.up]\ncommand = {fixture:?}\n\n\
         [mcp_servers.gone]\ncommand = \"/nonexistent/server\"\nrequired = true\n\n\
         [mcp_servers.off]\ncommand = {fixture:?}\nenabled = false\n",
        fixture = fixture_server().to_str().unwrap(),
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn servers_shows_every_server_when_a_required_one_fails_then_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path());
    let config = config.to_str().unwrap();

    let output = run(&["servers", "--config", config]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let table = stdout(&output);
    let state = |name: &str| {
        table
            .lines()
            .find(|line| line.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for `{name}`:\n{table}"))
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_owned()
    };
    assert_eq!(state("up"), "ready", "{table}");
    assert_eq!(state("gone"), "failed", "{table}");
    assert!(
        table.contains("cannot start `/nonexistent/server`"),
        "{table}"
    );
    assert_eq!(
        stderr(&output),
        "mcp-runtime: required server failed to start: `gone`\n"
    );

    let output = run(&["servers", "--config", config, "--json"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let states: Vec<(&str, &str)> = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| {
            (
                server["name"].as_str().unwrap(),
                server["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(states, [("gone", "failed"), ("up", "ready")]);

    // `tools` still fails at once: its list would be missing a required server.
    let output = run(&["tools", "--config", config]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stdout(&output), "");
}

#[test]
fn a_call_to_a_disabled_servers_tool_says_the_server_is_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path());
    let output = run(&[
        "call",
        "mcp__off__pid",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "mcp-runtime: server `off` is disabled, so its tools cannot be called (to call them, remove its `enabled = false` line, or its `\"disabled\": true` in a JSON config file)\n"
    );
}
