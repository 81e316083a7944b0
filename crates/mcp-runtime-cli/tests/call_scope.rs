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

/// The fixture server, built beside this binary by `cargo test --workspace`.
fn fixture_server() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_mcp-runtime")).with_file_name("mcp-fixture");
    assert!(
        path.exists(),
        "{} is missing: build the whole workspace first (scripts/test does)",
        path.display()
    );
    path
}

/// Runs the binary with `args`, its home and Codex home in `home`, so a Codex config on
/// this machine never takes part.
fn run(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-runtime"))
        .args(args)
        .env_remove("MCP_RUNTIME_LOG")
        .env("HOME", home)
        .env("CODEX_HOME", home)
        .output()
        .expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
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
fn a_name_that_names_no_server_starts_every_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &(server_table(dir.path(), "one", "") + &server_table(dir.path(), "two", "")),
    );
    let output = run(
        dir.path(),
        &["call", "mcp__three__echo", "--config", &config],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "mcp-runtime: no tool is named `mcp__three__echo` (list them with `mcp-runtime tools`)\n"
    );
    assert!(was_started(dir.path(), "one") && was_started(dir.path(), "two"));
}
