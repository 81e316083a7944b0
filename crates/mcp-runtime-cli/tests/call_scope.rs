//! `mcp-runtime call` starts only the server its tool belongs to, when the qualified
//! name tells which, and every server when it cannot.
//!
//! Each fixture server writes its message log (`--log FILE`) as soon as its process
//! runs, so whether a server was started is read from the file system afterwards,
//! never from timing.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;

use crate::support::{fixture_server, stderr};

/// Runs the binary with `args`, its home and Codex home in `home`, so a Codex config on
/// this machine never takes part.
fn run(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-runtime"))
        .args(args)
        .env_remove("MCP_RUNTIME_LOG")
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .env("CODEX_HOME", home)
        .output()
        .expect("the binary runs")
}

/// A `[mcp_servers.NAME]` table running the fixture with `--log DIR/NAME.jsonl` and
/// `extra` arguments.
fn server_table(dir: &Path, name: &str, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {fixture:?}\nargs = [\"--log\", {log:?}{extra}]\n\n",
        fixture = fixture_server().to_str().unwrap(),
        log = log_path(dir, name).to_str().unwrap(),
    )
}

fn log_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.jsonl"))
}

/// Whether the server `name` was started: its process created its log.
fn was_started(dir: &Path, name: &str) -> bool {
    log_path(dir, name).exists()
}

fn write_config(dir: &Path, text: &str) -> String {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_call_returns_while_another_configured_server_hangs_in_initialize() {
    let dir = tempfile::tempdir().unwrap();
    // Required, and hanging for longer than any test runs: a call that started it
    // could not return before it failed.
    let hung = server_table(dir.path(), "hung", ", \"--hang-initialize\"")
        + "required = true\nstartup_timeout_sec = 600\n\n";
    let config = write_config(
        dir.path(),
        &(server_table(dir.path(), "healthy", "") + &hung),
    );
    let output = run(
        dir.path(),
        &[
            "call",
            "mcp__healthy__echo",
            "--args",
            r#"{"n": 1}"#,
            "--json",
            "--config",
            &config,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["structuredContent"], serde_json::json!({"n": 1}));
    assert!(was_started(dir.path(), "healthy"));
    assert!(
        !was_started(dir.path(), "hung"),
        "only the tool's own server is started"
    );
}

#[test]
fn a_call_to_a_server_that_fails_to_start_reports_its_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &(server_table(dir.path(), "crash", ", \"--crash-initialize\", \"7\"")
            + &server_table(dir.path(), "other", "")),
    );
    let output = run(
        dir.path(),
        &["call", "mcp__crash__echo", "--config", &config],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = stderr(&output);
    assert!(
        stderr.starts_with("mcp-runtime: server `crash` did not start: "),
        "{stderr}"
    );
    assert!(stderr.contains("exit status: 7"), "{stderr}");
    assert!(!was_started(dir.path(), "other"));
}

#[test]
fn a_name_that_names_no_server_is_no_tool_even_while_a_server_hangs() {
    let dir = tempfile::tempdir().unwrap();
    // Hanging for longer than any test runs: the call must not wait for it.
    let hung = server_table(dir.path(), "hung", ", \"--hang-initialize\"")
        + "startup_timeout_sec = 600\n\n";
    let config = write_config(dir.path(), &(server_table(dir.path(), "one", "") + &hung));
    let output = run(
        dir.path(),
        &["call", "mcp__three__echo", "--config", &config],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "mcp-runtime: no tool is named `mcp__three__echo` (list them with `mcp-runtime tools`)\n"
    );
}

/// The qualified names `tools --json` gives with `config`, by server and raw tool name.
fn qualified_names(home: &Path, config: &str) -> Vec<(String, String, String)> {
    let output = run(home, &["tools", "--json", "--config", config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            let text = |key: &str| tool[key].as_str().unwrap().to_owned();
            (text("server"), text("tool"), text("qualified_name"))
        })
        .collect()
}

#[test]
fn a_call_of_the_name_tools_showed_reaches_its_server_and_starts_only_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &(server_table(dir.path(), "a-b", "") + &server_table(dir.path(), "a_b", "")),
    );
    let names = qualified_names(dir.path(), &config);
    let (_, _, name) = names
        .iter()
        .find(|(server, tool, _)| server == "a_b" && tool == "echo")
        .expect("`tools` lists `a_b`'s echo");
    // Both servers sanitize to `a_b`, so both prefixes are hashed, as in Codex.
    assert_eq!(name, "mcp__a_b_ec4afa65682a__echo");
    for server in ["a-b", "a_b"] {
        std::fs::remove_file(log_path(dir.path(), server)).unwrap();
    }

    let output = run(
        dir.path(),
        &[
            "call",
            name,
            "--args",
            r#"{"n": 2}"#,
            "--json",
            "--config",
            &config,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["structuredContent"], serde_json::json!({"n": 2}));
    assert!(was_started(dir.path(), "a_b"));
    assert!(
        !was_started(dir.path(), "a-b"),
        "only the tool's own server is started"
    );
}

/// Servers `a` and `a__b`, which the name `mcp__a__b__echo` may both belong to (so a
/// call of it starts every server), and `extra`.
fn unnarrowable(dir: &Path, extra: &str) -> String {
    write_config(
        dir,
        &(server_table(dir, "a", "") + &server_table(dir, "a__b", "") + extra),
    )
}

#[test]
fn a_call_that_starts_every_server_returns_while_an_optional_one_hangs_in_initialize() {
    let dir = tempfile::tempdir().unwrap();
    // Hanging for longer than any test runs: a call that waited for it could not
    // return before the test fails.
    let hung = server_table(dir.path(), "hung", ", \"--hang-initialize\"")
        + "startup_timeout_sec = 600\n\n";
    let config = unnarrowable(dir.path(), &hung);
    let output = run(
        dir.path(),
        &[
            "call",
            "mcp__a__b__echo",
            "--args",
            r#"{"n": 3}"#,
            "--json",
            "--config",
            &config,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["structuredContent"], serde_json::json!({"n": 3}));
    assert!(was_started(dir.path(), "a") && was_started(dir.path(), "a__b"));
}

#[test]
fn a_required_server_that_fails_to_start_fails_a_call_that_starts_it() {
    let dir = tempfile::tempdir().unwrap();
    let crash = server_table(dir.path(), "crash", ", \"--crash-initialize\", \"7\"")
        + "required = true\n\n";
    let config = unnarrowable(dir.path(), &crash);
    let output = run(
        dir.path(),
        &["call", "mcp__a__b__echo", "--config", &config],
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = stderr(&output);
    assert!(stderr.contains("`crash`"), "{stderr}");
    assert!(stderr.contains("exit status: 7"), "{stderr}");
    assert!(output.stdout.is_empty(), "the tool was not called");
}
