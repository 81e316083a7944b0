//! The `mcp-runtime` binary as users run it: output, JSON, exit codes.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use mcp_runtime_fixtures::testing::{Probe, is_alive, recorded_argv, stub_launcher, wait_for_exit};
use serde_json::{Value, json};

use crate::support::{cli, fixture_server, stderr, stdout};

fn run(args: &[&str]) -> Output {
    cli()
        .args(args)
        .env_remove("MCP_RUNTIME_LOG")
        .output()
        .expect("the binary runs")
}

/// Replaces the varying startup times of the `servers` table with `Nms`.
fn redact_times(text: &str) -> String {
    text.split(' ')
        .map(|word| match word.strip_suffix("ms") {
            Some(number) if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()) => {
                let pad = word.len() - 3;
                format!("Nms{}", " ".repeat(pad))
            }
            _ => word.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn tools_lists_the_demo_servers_without_any_setup() {
    let output = run(&["tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!(stdout(&output), @r"
    TOOL                   DESCRIPTION
    mcp__math__add         Add two numbers: a + b
    mcp__math__divide      Divide a by b; fails when b is zero
    mcp__math__multiply    Multiply two numbers: a * b
    mcp__sandbox__run      Run a command under the calling host's sandbox; refuses when the host supplies no sandbox launcher
    mcp__text__echo        Return the text unchanged
    mcp__text__upper       Return the text in upper case
    mcp__text__word_count  Count the whitespace-separated words in the text
    ");
    assert_eq!(stderr(&output), "", "nothing extra on a pipe");
}

#[test]
fn search_ranks_the_tools_that_match_best_first() {
    let output = run(&["search", "multiply two numbers", "--demo"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let table = stdout(&output);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][..3], ["TOOL", "SCORE", "DESCRIPTION"]);
    let tools: Vec<&str> = rows[1..].iter().map(|row| row[0]).collect();
    // Both words in its description first; one word next; the math server's other
    // tool after them, for the server's instructions (about numbers).
    assert_eq!(
        tools[..2],
        ["mcp__math__multiply", "mcp__math__add"],
        "{table}"
    );
    assert!(
        tools.iter().all(|tool| tool.starts_with("mcp__math__")),
        "{table}"
    );
    let scores: Vec<f64> = rows[1..]
        .iter()
        .map(|row| row[1].parse().unwrap())
        .collect();
    assert!(scores.windows(2).all(|pair| pair[0] > pair[1]), "{table}");
    assert!(scores.iter().all(|score| *score > 0.0), "{table}");

    // A tool's name ranks it first; --server keeps to one server; --limit bounds.
    let json = |args: &[&str]| -> Value {
        let output = run(&[&["search", "--demo", "--json"], args].concat());
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let found = json(&["Word-Count"]);
    let first = &found["tools"][0];
    assert_eq!(first["qualified_name"], "mcp__text__word_count");
    assert_eq!(first["server"], "text");
    assert_eq!(first["tool"], "word_count");
    assert_eq!(
        first["description"],
        "Count the whitespace-separated words in the text"
    );
    assert!(first["score"].as_f64().unwrap() > 0.0);
    let names = |found: &Value| -> Vec<String> {
        found["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["qualified_name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names(&json(&["text", "--server", "math"])),
        Vec::<String>::new()
    );
    assert_eq!(names(&json(&["text", "--limit", "1"])).len(), 1);
    assert_eq!(names(&json(&["kubernetes"])), Vec::<String>::new());

    let output = run(&["search", "add", "--demo", "--server", "nowhere"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "mcp-runtime: no server is named `nowhere` (list them with `mcp-runtime list`)\n"
    );
}

#[test]
fn servers_shows_state_transport_and_tools() {
    let output = run(&["servers"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!(redact_times(&stdout(&output)), @r"
    SERVER   STATE  TRANSPORT  AUTH  STARTUP  TOOLS  ERROR
    math     ready  stdio            Nms      3
    sandbox  ready  stdio            Nms      1
    text     ready  stdio            Nms      3
    ");
}

#[test]
fn json_reports_servers_and_tools_in_one_object() {
    for command in ["servers", "tools"] {
        let output = run(&[command, "--json"]);
        assert_eq!(output.status.code(), Some(0));
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        let servers = report["servers"].as_array().unwrap();
        assert_eq!(servers.len(), 3);
        for server in servers {
            let keys: Vec<&str> = server
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys,
                [
                    "name",
                    "state",
                    "transport",
                    "protocol_version",
                    "auth",
                    "instructions",
                    "startup_ms",
                    "error",
                    "supports_parallel_tool_calls",
                    "default_tools_approval_mode"
                ]
            );
            assert_eq!(server["state"], "ready");
            assert_eq!(server["transport"], "stdio");
            // The demo servers are rmcp's, which speak 2026-07-28: the probe keeps them.
            assert_eq!(server["protocol_version"], "2026-07-28");
            assert!(server["startup_ms"].is_u64());
            assert!(server["error"].is_null());
            // Each demo server says how to use it, as the server wrote it.
            let instructions = server["instructions"].as_str().unwrap_or_default();
            let expected = match server["name"].as_str() {
                Some("sandbox") => "Runs commands",
                Some("math") => "Arithmetic",
                _ => "",
            };
            assert!(
                !instructions.is_empty() && instructions.starts_with(expected),
                "{instructions}"
            );
        }
        let tools = report["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 7);
        let add = tools
            .iter()
            .find(|t| t["qualified_name"] == "mcp__math__add")
            .unwrap();
        let keys: Vec<&str> = add
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "qualified_name",
                "server",
                "tool",
                "description",
                "input_schema",
                "definition"
            ]
        );
        assert_eq!(add["definition"]["name"], "add");
        assert_eq!(add["definition"]["inputSchema"], add["input_schema"]);
        assert_eq!(add["server"], "math");
        assert_eq!(add["tool"], "add");
        assert_eq!(add["input_schema"]["type"], "object");
    }
}

#[test]
fn call_prints_the_result_and_exits_zero() {
    let output = run(&["call", "mcp__math__add", "--args", r#"{"a": 2, "b": 3.5}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "5.5\n");

    let output = run(&[
        "call",
        "mcp__text__word_count",
        "--args",
        r#"{"text": "a b c"}"#,
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["content"][0]["text"], "3");
    assert_eq!(result["structuredContent"]["words"], 3);
}

#[test]
fn a_tool_error_exits_one_and_still_prints_the_result() {
    let output = run(&["call", "mcp__math__divide", "--args", r#"{"a": 1, "b": 0}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "division by zero\n");

    let output = run(&[
        "call",
        "mcp__math__divide",
        "--args",
        r#"{"a": 1, "b": 0}"#,
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["isError"], true);
}

#[test]
fn other_failures_exit_two_with_one_line_on_stderr() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["call", "mcp__math__nope"],
            "mcp-runtime: no tool is named `mcp__math__nope` (list them with `mcp-runtime tools`)\n",
        ),
        (
            &["call", "mcp__math__add", "--args", "[1]"],
            "mcp-runtime: `--args` must be a JSON object, like '{\"a\": 1}'\n",
        ),
        (
            &["tools", "--config", "/nonexistent/mcp.toml"],
            "mcp-runtime: cannot read config file `/nonexistent/mcp.toml`: No such file or directory (os error 2)\n",
        ),
        (
            &["call", "mcp__math__add", "--args", "{"],
            "mcp-runtime: `--args` is not valid JSON: EOF while parsing an object at line 1 column 1\n",
        ),
    ];
    for (args, expected) in cases {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&output), expected, "{args:?}");
        assert_eq!(stdout(&output), "", "{args:?}");
    }
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_config_error_names_file_table_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h/mcp\"\n",
    );
    let output = run(&["tools", "--config", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "mcp-runtime: `{}`: `[mcp_servers.a]` mixes stdio key `command` with HTTP key `url` (a server is either `command` or `url`)\n",
            path.display()
        )
    );
}

#[test]
fn a_required_server_that_fails_exits_two_and_an_optional_one_is_named_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        "[mcp_servers.gone]\ncommand = \"/nonexistent/server\"\n",
    );
    let output = run(&["tools", "--config", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stderr(&output),
        "mcp-runtime: server `gone` failed: cannot start `/nonexistent/server` (check `command` and `cwd`): No such file or directory (os error 2)\n"
    );

    let path = write_config(
        dir.path(),
        "[mcp_servers.gone]\ncommand = \"/nonexistent/server\"\nrequired = true\n",
    );
    let output = run(&["tools", "--config", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "mcp-runtime: starting servers: required server failed to start: `gone`: cannot start `/nonexistent/server` (check `command` and `cwd`): No such file or directory (os error 2)\n"
    );
}

/// `@modelcontextprotocol/server-everything`, installed by `scripts/install-peers`.
fn server_everything() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-peers (scripts/test does)",
        path.display()
    );
    path
}

#[test]
fn tools_and_call_work_against_server_everything_through_a_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            server_everything().to_str().unwrap()
        ),
    );
    let config = path.to_str().unwrap();
    // Elicitation is offered as a capable host offers it: server-everything lists its
    // two tools that ask the person, which `call` reaches.
    let output = run(&["tools", "--config", config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed = stdout(&output);
    assert!(listed.contains("mcp__everything__get_sum"), "{listed}");
    assert!(
        listed.contains("mcp__everything__trigger_elicitation_request"),
        "{listed}"
    );
    assert_eq!(listed.lines().count(), 1 + 15, "{listed}");
    let output = run(&["tools", "--config", config, "--elicitation", "decline"]);
    let listed = stdout(&output);
    assert!(
        !listed.contains("mcp__everything__trigger_elicitation_request"),
        "{listed}"
    );
    assert_eq!(listed.lines().count(), 1 + 13, "{listed}");
    let output = run(&[
        "call",
        "mcp__everything__trigger_elicitation_request",
        "--config",
        config,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("declined"), "{}", stdout(&output));

    let output = run(&[
        "call",
        "mcp__everything__get_sum",
        "--args",
        r#"{"a": 20, "b": 22}"#,
        "--config",
        config,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("42"), "{}", stdout(&output));
}

#[test]
fn bench_startup_reports_one_tools_list_per_server_for_a_burst() {
    let output = run(&["bench", "startup", "--sessions", "6", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["sessions", "shared", "servers", "wall_ms"]);
    assert_eq!(report["sessions"], 6);
    assert_eq!(report["shared"], true);
    assert!(report["wall_ms"].is_u64());
    for server in report["servers"].as_array().unwrap() {
        let keys: Vec<&str> = server
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "name",
                "ready",
                "failed",
                "tools_list_requests",
                "served_from_cache",
                "tools",
                "failures"
            ]
        );
        assert_eq!(server["ready"], 6);
        assert_eq!(server["failures"], serde_json::json!([]));
        assert_eq!(server["failed"], 0);
        assert_eq!(server["tools_list_requests"], 1, "{server}");
        assert_eq!(server["served_from_cache"], 0, "{server}");
        let tools = if server["name"] == "sandbox" { 1 } else { 3 };
        assert_eq!(server["tools"], tools);
    }

    let output = run(&[
        "bench",
        "startup",
        "--sessions",
        "6",
        "--no-share",
        "--json",
    ]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["shared"], false);
    for server in report["servers"].as_array().unwrap() {
        assert_eq!(server["tools_list_requests"], 6, "{server}");
    }
}

#[test]
fn bench_startup_prints_a_table() {
    let output = run(&["bench", "startup", "--sessions", "2", "--scope", "cli-test"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let mut lines = text.lines();
    let head = lines.next().unwrap();
    assert!(
        head.starts_with("2 sessions, shared listings, all settled in "),
        "{head}"
    );
    insta::assert_snapshot!(lines.collect::<Vec<_>>().join("\n"), @r"
    SERVER   READY  FAILED  TOOLS/LIST  CACHED  TOOLS
    math     2      0       1           0       3
    sandbox  2      0       1           0       1
    text     2      0       1           0       3
    ");
}

#[test]
fn bench_startup_against_real_servers_sends_one_tools_list_per_server() {
    server_everything();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = cli()
        .args(["bench", "startup", "--sessions", "4", "--json"])
        .args(["--config", "bench/real-servers.toml"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let servers = report["servers"].as_array().unwrap();
    let names: Vec<&str> = servers
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["everything", "filesystem"]);
    for server in servers {
        assert_eq!(server["ready"], 4, "{server}");
        assert_eq!(server["tools_list_requests"], 1, "{server}");
        assert!(server["tools"].as_u64().unwrap() > 0, "{server}");
    }
}

const STATE: &str = r#"{ "zeta": {"future": [1, null]}, "alpha": 123456789012345678901234567890, "s": "caf\u00e9 \"q\"" }"#;

#[test]
fn the_sandbox_demo_runs_commands_through_the_launcher_and_fails_closed_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let args = r#"{"program": "echo", "args": ["sandboxed", "hello"]}"#;
    let output = run(&[
        "call",
        "mcp__sandbox__run",
        "--args",
        args,
        "--sandbox-state",
        STATE,
        "--codex-executable",
        launcher.to_str().unwrap(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert_eq!(stdout(&output), "sandboxed hello\n");
    let argv: Vec<String> = recorded_argv(dir.path())
        .into_iter()
        .map(|arg| String::from_utf8(arg).unwrap())
        .collect();
    assert_eq!(argv[..2], ["sandbox", "--sandbox-state-json"]);
    // The demo server is built on rmcp, which hands it `_meta` parsed: the state is
    // the same JSON, re-serialized.
    let forwarded: Value = serde_json::from_str(&argv[2]).unwrap();
    assert_eq!(forwarded["zeta"], serde_json::json!({"future": [1, null]}));
    assert_eq!(argv[3..], ["--", "echo", "sandboxed", "hello"]);

    let output = run(&[
        "call",
        "mcp__sandbox__run",
        "--args",
        args,
        "--sandbox-state",
        STATE,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).starts_with("the host supplied no sandbox launcher"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_sandbox_state_file_reaches_the_server_and_bad_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let config = opted_in_fixture(dir.path(), &log);
    let path = dir.path().join("state.json");
    std::fs::write(&path, format!("{STATE}\n")).unwrap();
    let output = run(&[
        "call",
        "mcp__opted__echo",
        "--sandbox-state",
        path.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let raw = received_call(&log)["raw"].as_str().unwrap().to_owned();
    assert!(
        raw.contains(&format!("\"codex/sandbox-state\":{STATE}")),
        "{raw}"
    );

    let pretty = dir.path().join("pretty.json");
    std::fs::write(&pretty, "{\n  \"mode\": \"read-only\"\n}\n").unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["call", "mcp__math__add", "--sandbox-state", "{not json"],
            "mcp-runtime: in `--sandbox-state`: the sandbox state cannot be used: key must be a string at line 1 column 2\n",
        ),
        (
            &[
                "call",
                "mcp__math__add",
                "--sandbox-state",
                pretty.to_str().unwrap(),
            ],
            &format!(
                "mcp-runtime: in `--sandbox-state` file `{}`: the sandbox state cannot be used: it spans several lines; write it on one line (for example with `jq -c`)\n",
                pretty.display()
            ),
        ),
        (
            &[
                "call",
                "mcp__math__add",
                "--sandbox-state",
                "{}",
                "--codex-executable",
                "bin/codex",
            ],
            "mcp-runtime: `--codex-executable` must be an absolute path (`PATH` is never searched); try `$(realpath bin/codex)`\n",
        ),
        (
            &[
                "call",
                "mcp__math__add",
                "--sandbox-state",
                "/nonexistent/state.json",
            ],
            "mcp-runtime: cannot read `--sandbox-state` file `/nonexistent/state.json`: No such file or directory (os error 2)\n",
        ),
    ];
    for (args, expected) in cases {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&output), expected, "{args:?}");
    }
    let output = run(&["call", "mcp__math__add", "--codex-executable", "/bin/true"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "--codex-executable needs --sandbox-state"
    );
}

/// The fixture's log entry for the `tools/call` it received.
fn received_call(log: &Path) -> Value {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["method"] == "tools/call")
        .expect("the call reached the server")
}

/// A config with one fixture server that opts into sandbox metadata and logs what it
/// receives to `log`.
fn opted_in_fixture(dir: &Path, log: &Path) -> PathBuf {
    write_config(
        dir,
        &format!(
            "[mcp_servers.opted]\ncommand = {:?}\nargs = [\"--log\", {:?}, \"--experimental\", \"codex/sandbox-state={{}}\"]\n",
            fixture_server().to_str().unwrap(),
            log.to_str().unwrap()
        ),
    )
}

#[test]
fn a_call_to_an_opted_in_server_delivers_the_state_byte_for_byte_and_the_launcher() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let log = dir.path().join("log.jsonl");
    let config = opted_in_fixture(dir.path(), &log);
    let output = run(&[
        "call",
        "mcp__opted__echo",
        "--args",
        r#"{"x": 1}"#,
        "--sandbox-state",
        STATE,
        "--codex-executable",
        launcher.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let call = received_call(&log);
    let raw = call["raw"].as_str().unwrap();
    assert!(
        raw.contains(&format!("\"codex/sandbox-state\":{STATE}")),
        "{raw}"
    );
    assert!(
        raw.contains(&format!("\"codex/sandbox-state-meta\":{STATE}")),
        "{raw}"
    );
    let canonical = std::fs::canonicalize(&launcher).unwrap();
    assert_eq!(
        call["params"]["_meta"]["codex/sandbox-launcher"],
        serde_json::json!({"codexExecutable": canonical.to_str().unwrap()})
    );
}

#[test]
fn an_interrupted_call_leaves_no_server_process_behind() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    // The fixture logs every message it receives into a FIFO: reading it tells the
    // test, without polling, that the call is in progress.
    let log = dir.path().join("log.fifo");
    let log_c = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
    // SAFETY: `log_c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(log_c.as_ptr(), 0o600) }, 0);
    let grandchild_file = dir.path().join("grandchild.pid");
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.slow]\ncommand = {:?}\nargs = [\"--call-delay-ms\", \"600000\", \"--log\", {:?}, \"--spawn-grandchild\", {:?}]\n",
            fixture_server().to_str().unwrap(),
            log.to_str().unwrap(),
            grandchild_file.to_str().unwrap(),
        ),
    );
    let mut cli = cli()
        .args([
            "call",
            "mcp__slow__echo",
            "--config",
            config.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut server_pid = None;
    let mut lines = std::io::BufReader::new(std::fs::File::open(&log).unwrap()).lines();
    for line in lines.by_ref() {
        let entry: Value = serde_json::from_str(&line.unwrap()).unwrap();
        server_pid = entry["pid"].as_i64();
        if entry["method"] == "tools/call" {
            break;
        }
    }
    let server_pid = server_pid.expect("the server logged its messages") as i32;
    let grandchild: i32 = std::fs::read_to_string(&grandchild_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    // SAFETY: sending a signal to a child we spawned.
    unsafe { libc::kill(cli.id() as i32, libc::SIGINT) };
    assert_eq!(cli.wait().unwrap().code(), Some(130));
    // The cancellation is written before the server is killed, but a killed stdio
    // server may not have read it: that it reaches a server is tested over HTTP
    // (`cancellation::a_dropped_call_is_cancelled_before_abort_ends_an_http_session`).
    drop(lines);
    for pid in [server_pid, grandchild] {
        assert!(
            wait_for_exit(pid, std::time::Duration::from_secs(10)),
            "process {pid} survived"
        );
    }
}

/// Writes an executable shell script `name` into `dir`.
fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn a_timeout_is_reported_before_the_servers_are_shut_down() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let leader = dir.path().join("leader.pid");
    // Ignores SIGTERM, and outlives stdin EOF: when the fixture ends, the shell
    // becomes `sleep`, so the server's process lives until the runtime's SIGKILL.
    let script = write_script(
        dir.path(),
        "hostile.sh",
        &format!(
            "echo $$ > {leader:?}\ntrap '' TERM\n{fixture:?} --call-delay-ms 600000\nexec sleep 3600\n",
            leader = leader.to_str().unwrap(),
            fixture = fixture_server().to_str().unwrap(),
        ),
    );
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.hostile]\ncommand = {:?}\ntool_timeout_sec = 1\n",
            script.to_str().unwrap()
        ),
    );
    let mut cli = cli()
        .args([
            "call",
            "mcp__hostile__echo",
            "--config",
            config.to_str().unwrap(),
        ])
        .env_remove("MCP_RUNTIME_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(cli.stderr.take().unwrap()).lines();
    let line = lines.next().expect("an error line").unwrap();
    let leader: i32 = std::fs::read_to_string(&leader)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The server dies only by SIGKILL, which shutdown sends after its grace periods:
    // an error reported after the cleanup would find it gone.
    let alive_at_report = is_alive(leader);
    assert!(
        line.starts_with("mcp-runtime: ") && line.contains("did not answer within 1s"),
        "{line}"
    );
    assert!(
        alive_at_report,
        "the error was printed only after the server was shut down"
    );
    assert_eq!(cli.wait().unwrap().code(), Some(2));
    assert_eq!(lines.count(), 0, "one line on stderr");
    assert!(
        wait_for_exit(leader, std::time::Duration::from_secs(10)),
        "the server was shut down before the CLI exited"
    );
}

#[test]
fn a_closed_stdout_ends_the_cli_quietly_after_shutting_servers_down() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let grandchild_file = dir.path().join("grandchild.pid");
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.f]\ncommand = {:?}\nargs = [\"--log\", {:?}, \"--spawn-grandchild\", {:?}]\n",
            fixture_server().to_str().unwrap(),
            log.to_str().unwrap(),
            grandchild_file.to_str().unwrap(),
        ),
    );
    for args in [
        &["tools", "--json"][..],
        &["tools"],
        &["servers"],
        &["call", "mcp__f__echo", "--json"],
    ] {
        let _ = std::fs::remove_file(&log);
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() returns.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: pipe() just returned these descriptors; each is owned once.
        let (read_end, write_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(read_end);
        let output = cli()
            .args(args)
            .args(["--config", config.to_str().unwrap()])
            .env_remove("MCP_RUNTIME_LOG")
            .stdout(std::process::Stdio::from(write_end))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(stderr(&output), "", "{args:?}");
        let server = mcp_runtime_fixtures::testing::read_log(&log)[0]["pid"]
            .as_i64()
            .unwrap() as i32;
        let grandchild: i32 = std::fs::read_to_string(&grandchild_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        for pid in [server, grandchild] {
            assert!(
                wait_for_exit(pid, std::time::Duration::from_secs(10)),
                "{args:?}: process {pid} survived"
            );
        }
    }
}

/// A fixture behind a shell pipe that sends one `sampling/createMessage` request
/// right after its `initialize` answer: rmcp, as the client, rejects it and logs a
/// warning of its own.
fn server_that_makes_rmcp_log(dir: &Path) -> PathBuf {
    let script = write_script(
        dir,
        "server.sh",
        &format!(
            "{:?} | while IFS= read -r line; do\n  printf '%s\\n' \"$line\"\n  case \"$line\" in\n    *protocolVersion*) printf '%s\\n' '{{\"jsonrpc\":\"2.0\",\"id\":\"unsolicited\",\"method\":\"sampling/createMessage\",\"params\":{{\"messages\":[],\"maxTokens\":1}}}}' ;;\n  esac\ndone\n",
            fixture_server().to_str().unwrap()
        ),
    );
    write_config(
        dir,
        &format!(
            "[mcp_servers.chatty]\ncommand = {:?}\n",
            script.to_str().unwrap()
        ),
    )
}

#[test]
fn library_logs_stay_off_stderr_at_the_default_level_and_nothing_is_coloured_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let config = server_that_makes_rmcp_log(dir.path());
    let output = run(&["tools", "--config", config.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("mcp__chatty__echo"));
    assert_eq!(
        stderr(&output),
        "",
        "no library log line at the default level"
    );

    // Asked for, everything is shown, still without colour on a pipe.
    let output = cli()
        .args(["tools", "--config", config.to_str().unwrap()])
        .env("MCP_RUNTIME_LOG", "debug")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.lines()
            .any(|line| line.contains("rmcp") && line.contains("sampling/createMessage")),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "no escape codes on a pipe: {text}"
    );
}

#[test]
fn the_runtimes_own_warnings_stay_visible_as_one_plain_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.twice]\ncommand = {:?}\nargs = [\"--tool-name\", \"echo\"]\n",
            fixture_server().to_str().unwrap()
        ),
    );
    let output = run(&["tools", "--config", config.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stderr(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].starts_with("mcp-runtime: warning: "), "{text}");
    assert!(
        lines[0].contains("twice") && lines[0].contains("echo"),
        "names server and tool: {text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");
}

#[test]
fn args_and_sandbox_state_take_json_text_a_file_or_stdin() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("args.json");
    std::fs::write(&file, "{\"a\": 2,\n \"b\": 40}\n").unwrap();
    let at_file = format!("@{}", file.display());
    let output = run(&["call", "mcp__math__add", "--args", &at_file]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "42\n");

    let with_stdin = |args: &[&str], input: &str| {
        let mut child = cli()
            .args(args)
            .env_remove("MCP_RUNTIME_LOG")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let output = with_stdin(
        &["call", "mcp__math__add", "--args", "-"],
        r#"{"a": 1, "b": 1}"#,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "2\n");

    // The sandbox state read from stdin or `@FILE` reaches the server byte for byte.
    let log = dir.path().join("log.jsonl");
    let config = opted_in_fixture(dir.path(), &log);
    let output = with_stdin(
        &[
            "call",
            "mcp__opted__echo",
            "--sandbox-state",
            "-",
            "--config",
            config.to_str().unwrap(),
        ],
        &format!("{STATE}\n"),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let raw = received_call(&log)["raw"].as_str().unwrap().to_owned();
    assert!(
        raw.contains(&format!("\"codex/sandbox-state\":{STATE}")),
        "{raw}"
    );
    let state = dir.path().join("state.json");
    std::fs::write(&state, STATE).unwrap();
    std::fs::remove_file(&log).unwrap();
    let output = run(&[
        "call",
        "mcp__opted__echo",
        "--sandbox-state",
        &format!("@{}", state.display()),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let raw = received_call(&log)["raw"].as_str().unwrap().to_owned();
    assert!(
        raw.contains(&format!("\"codex/sandbox-state\":{STATE}")),
        "{raw}"
    );

    let output = with_stdin(
        &[
            "call",
            "mcp__math__add",
            "--args",
            "-",
            "--sandbox-state",
            "-",
        ],
        "{}",
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "mcp-runtime: `--args` and `--sandbox-state` cannot both read stdin (`-`); give one of them as `@FILE`\n"
    );
    let missing = dir.path().join("missing.json");
    let output = run(&[
        "call",
        "mcp__math__add",
        "--args",
        &format!("@{}", missing.display()),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "mcp-runtime: cannot read `--args` file `{}`: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
}

#[test]
fn bench_startup_names_why_sessions_failed_with_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "[mcp_servers.gone]\ncommand = \"/nonexistent/server\"\n",
    );
    let config = config.to_str().unwrap();
    let output = run(&["bench", "startup", "--sessions", "3", "--config", config]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    insta::assert_snapshot!(text.lines().skip(1).collect::<Vec<_>>().join("\n"), @r"
    SERVER  READY  FAILED  TOOLS/LIST  CACHED  TOOLS
    gone    0      3       0           0       0

    SERVER  SESSIONS  WHY THEY FAILED
    gone    3         cannot start `/nonexistent/server` (check `command` and `cwd`): No such file or directory (os error 2)
    ");

    let output = run(&[
        "bench",
        "startup",
        "--sessions",
        "3",
        "--config",
        config,
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let server = &report["servers"][0];
    assert_eq!(server["failed"], 3);
    let failures = server["failures"].as_array().expect("a list of failures");
    assert_eq!(failures.len(), 1, "{server}");
    assert_eq!(failures[0]["count"], 3);
    let reason = failures[0]["reason"].as_str().unwrap();
    assert!(reason.contains("`/nonexistent/server`"), "{reason}");
}

#[test]
fn a_codex_config_loads_with_its_warnings_and_its_tool_settings_reach_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            concat!(
                "model = \"gpt-5\"\n\n[profiles.fast]\nmodel = \"gpt-5-mini\"\n\n",
                "[mcp_servers.my-server]\ncommand = {:?}\nname = \"Fixture\"\n",
                "supports_parallel_tool_calls = true\ndefault_tools_approval_mode = \"prompt\"\n\n",
                "[mcp_servers.my-server.tools.echo]\napproval_mode = \"approve\"\noutput_token_limit = 2000\n",
            ),
            fixture_server().to_str().unwrap()
        ),
    );
    let output = run(&["tools", "--json", "--config", config.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        format!(
            "mcp-runtime: warning: {}: [mcp_servers.my-server] `name` has no effect: it is a display name that Codex no longer reads, and mcp-runtime names this server `my-server` after its table\n",
            config.display()
        )
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let server = &report["servers"][0];
    assert_eq!(server["supports_parallel_tool_calls"], true);
    assert_eq!(server["default_tools_approval_mode"], "prompt");
    let tool = |name: &str| {
        report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["qualified_name"] == name)
            .unwrap_or_else(|| panic!("no tool {name} in {report}"))
            .clone()
    };
    // Codex's name: `-` becomes `_`.
    let echo = tool("mcp__my_server__echo");
    assert_eq!(echo["server"], "my-server");
    assert_eq!(echo["approval_mode"], "approve");
    assert_eq!(echo["output_token_limit"], 2000);
    assert_eq!(echo["supports_parallel_tool_calls"], true);
    let pid = tool("mcp__my_server__pid");
    assert_eq!(pid["approval_mode"], "prompt");
    assert!(pid.get("output_token_limit").is_none(), "{pid}");
}

#[test]
fn a_calls_questions_are_declined_cancelled_or_answered_with_defaults_as_told() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.asker]\ncommand = {:?}\nargs = [\"--asks\"]\nprotocol = \"2025-11-25\"\n",
            fixture_server().to_str().unwrap(),
        ),
    );
    let answer = |flags: &[&str]| {
        let mut args = vec![
            "call",
            "mcp__asker__ask",
            "--json",
            "--config",
            config.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let output = run(&args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let result: Value = serde_json::from_slice(&output.stdout).unwrap();
        result["structuredContent"].clone()
    };
    assert_eq!(answer(&[]), json!({"action": "decline"}));
    assert_eq!(
        answer(&["--elicitation", "cancel"]),
        json!({"action": "cancel"})
    );
    assert_eq!(
        answer(&["--elicitation", "accept-defaults"]),
        json!({"action": "accept", "content": {"name": "fixture", "count": 3, "urgent": false}})
    );
}

#[test]
fn a_calls_progress_prints_nothing_extra_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.steps]\ncommand = {:?}\nargs = [\"--progress-steps\", \"5\"]\n",
            fixture_server().to_str().unwrap(),
        ),
    );
    let output = run(&[
        "call",
        "mcp__steps__echo",
        "--args",
        r#"{"a": 1}"#,
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "{\"a\":1}\n");
    assert_eq!(stderr(&output), "");
}

#[test]
fn a_result_its_output_schema_refuses_is_printed_and_exits_2_naming_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let schema =
        r#"{"type":"object","properties":{"hits":{"type":"integer"}},"required":["hits"]}"#;
    let config = write_config(
        dir.path(),
        &format!(
            "[mcp_servers.typed]\ncommand = {:?}\nargs = [\"--echo-output-schema\", {:?}]\n",
            fixture_server().to_str().unwrap(),
            schema,
        ),
    );
    let call = |arguments: &str| {
        run(&[
            "call",
            "mcp__typed__echo",
            "--args",
            arguments,
            "--config",
            config.to_str().unwrap(),
        ])
    };
    let conforming = call(r#"{"hits": 3}"#);
    assert_eq!(conforming.status.code(), Some(0), "{}", stderr(&conforming));
    assert_eq!(stdout(&conforming), "{\"hits\":3}\n");

    let refused = call(r#"{"hits": "three"}"#);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        stdout(&refused),
        "{\"hits\":\"three\"}\n",
        "the result, as it came"
    );
    assert_eq!(
        stderr(&refused),
        "mcp-runtime: tool `echo` on server `typed` answered a result its `outputSchema` refuses: at `/hits`: \"three\" is not of type \"integer\"\n"
    );
}

#[test]
fn many_servers_start_under_a_low_soft_limit_on_open_files() {
    // 40 local servers need more descriptors than a soft limit of 64 allows: the
    // CLI raises it to the hard limit as it starts.
    const SERVERS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_server();
    let config: String = (0..SERVERS)
        .map(|n| {
            format!(
                "[mcp_servers.s{n}]\ncommand = {:?}\nargs = [\"--tools\", \"1\"]\n",
                fixture.to_str().unwrap()
            )
        })
        .collect();
    let path = write_config(dir.path(), &config);
    let hard = Command::new("sh")
        .args(["-c", "ulimit -H -n"])
        .output()
        .unwrap();
    let hard = String::from_utf8_lossy(&hard.stdout).trim().to_owned();
    assert!(
        hard == "unlimited" || hard.parse::<u64>().unwrap() >= 1024,
        "the hard limit here ({hard}) is too low for this test"
    );
    let output = Command::new("sh")
        .args(["-c", "ulimit -S -n 64 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_mcp-runtime"))
        .args(["servers", "--config", path.to_str().unwrap()])
        .env("HOME", dir.path())
        .env_remove("XDG_CACHE_HOME")
        .env("CODEX_HOME", dir.path())
        .env_remove("MCP_RUNTIME_LOG")
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let ready = stdout(&output)
        .lines()
        .filter(|line| line.split_whitespace().nth(1) == Some("ready"))
        .count();
    assert_eq!(ready, SERVERS, "{}\n{}", stdout(&output), stderr(&output));
}
