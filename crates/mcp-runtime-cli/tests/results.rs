//! What a newer revision or an extension adds reaches the user: `call` and `tools`
//! against the fixture's `future` tool (`mcp-fixture --future`), whose definition
//! and result carry a content type and fields no revision mcp-runtime knows has.

use std::{
    path::{Path, PathBuf},
    process::Output,
};

use mcp_runtime_fixtures::future;
use serde_json::Value;

use crate::support::{cli, fixture_server, stderr, stdout};

/// A configuration with the fixture, `--future` and `args`, as server `f`.
fn config(dir: &Path, args: &[&str]) -> PathBuf {
    let args: Vec<String> = ["--future"]
        .iter()
        .chain(args)
        .map(|arg| format!("{arg:?}"))
        .collect();
    let path = dir.join("config.toml");
    std::fs::write(
        &path,
        format!(
            "[mcp_servers.f]\ncommand = {:?}\nargs = [{}]\n",
            fixture_server().to_str().unwrap(),
            args.join(", ")
        ),
    )
    .unwrap();
    path
}

fn run(config: &Path, args: &[&str]) -> Output {
    cli()
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .expect("the binary runs")
}

#[test]
fn call_json_prints_the_result_as_the_server_returned_it() {
    let dir = tempfile::tempdir().unwrap();
    for era in ["handshake", "stateless"] {
        let config = config(dir.path(), &["--era", era]);
        let output = run(&config, &["call", "mcp__f__future", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{era}: {}", stderr(&output));
        let mut printed: Value = serde_json::from_slice(&output.stdout).unwrap();
        // A 2026-07-28 server names the result's type.
        printed.as_object_mut().unwrap().remove("resultType");
        assert_eq!(printed, future::result(), "{era}");
    }
}

#[test]
fn the_table_shows_an_unknown_block_as_its_type_and_text_as_it_is_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &[]);
    let output = run(&config, &["call", "mcp__f__future"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // On a pipe the text is the server's, `\r` included: a script reads what the
    // tool wrote.
    assert_eq!(
        stdout(&output),
        "first line\r\nsecond line\n[video]\nafter the video\n"
    );
}

#[test]
fn tools_json_prints_the_definition_as_the_server_listed_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &[]);
    let output = run(&config, &["tools", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let tool = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["tool"] == future::FUTURE_TOOL)
        .expect("the tool is listed");
    assert_eq!(tool["definition"], future::tool_definition());
}

#[test]
fn read_and_prompt_json_print_what_the_server_returned() {
    let dir = tempfile::tempdir().unwrap();
    for era in ["handshake", "stateless"] {
        let config = config(dir.path(), &["--era", era]);
        for (args, expected) in [
            (
                &["read", future::FUTURE_RESOURCE, "--json"][..],
                future::read_result(),
            ),
            (
                &["prompt", future::FUTURE_TOOL, "--json"],
                future::prompt_result(),
            ),
        ] {
            let output = run(&config, args);
            assert_eq!(
                output.status.code(),
                Some(0),
                "{era} {args:?}: {}",
                stderr(&output)
            );
            let mut printed: Value = serde_json::from_slice(&output.stdout).unwrap();
            printed.as_object_mut().unwrap().remove("resultType");
            assert_eq!(printed, expected, "{era} {args:?}");
        }
    }
}

#[test]
fn read_and_prompt_show_what_they_do_not_know_without_failing() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &[]);
    let output = run(&config, &["read", future::FUTURE_RESOURCE]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        format!(
            "first line\r\nsecond line\n{}\n",
            future::read_result()["contents"][1]
        )
    );
    let output = run(&config, &["prompt", future::FUTURE_TOOL]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "user: first line\r\nsecond line\nassistant: [video]\n"
    );
}
