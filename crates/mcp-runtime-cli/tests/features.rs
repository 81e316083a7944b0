//! `resources`, `read`, `prompts` and `prompt` against the pinned
//! `@modelcontextprotocol/server-everything` over stdio.

use std::{
    path::{Path, PathBuf},
    process::Output,
};

use serde_json::Value;

use crate::support::{cli, stderr, stdout};

/// A configuration with server-everything under each of `names`.
fn everything(dir: &Path, names: &[&str]) -> PathBuf {
    let entry = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .canonicalize()
        .expect("server-everything is installed (scripts/install-peers)");
    let text: String = names
        .iter()
        .map(|name| {
            format!(
                "[mcp_servers.{name}]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\n",
                entry.to_str().unwrap()
            )
        })
        .collect();
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
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

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn resources_and_templates_are_listed_with_their_servers() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything(dir.path(), &["every"]);
    let output = run(&config, &["resources", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(keys(&listed), ["resources", "resource_templates"]);
    let resources = listed["resources"].as_array().unwrap();
    let startup = resources
        .iter()
        .find(|r| r["uri"] == "demo://resource/static/document/startup.md")
        .expect("a static document");
    assert_eq!(
        keys(startup),
        ["server", "uri", "name", "title", "description", "mime_type"]
    );
    assert_eq!(startup["server"], "every");
    assert_eq!(startup["mime_type"], "text/markdown");
    let templates = listed["resource_templates"].as_array().unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t["uri_template"] == "demo://resource/dynamic/text/{resourceId}"),
        "{templates:?}"
    );
    assert_eq!(
        keys(&templates[0]),
        ["server", "uri_template", "name", "description"]
    );

    let table = run(&config, &["resources"]);
    assert_eq!(table.status.code(), Some(0));
    let text = stdout(&table);
    assert!(text.starts_with("SERVER  URI"), "{text}");
    assert!(text.contains("URI TEMPLATE"), "{text}");
}

#[test]
fn a_resource_is_read_from_the_one_server_that_offers_it_or_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything(dir.path(), &["every"]);
    let output = run(
        &config,
        &["read", "demo://resource/static/document/startup.md"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("# Everything Server"),
        "{}",
        stdout(&output)
    );
    // A URI only a template makes.
    let output = run(
        &config,
        &["read", "demo://resource/dynamic/text/7", "--json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let read: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(read["contents"][0]["uri"], "demo://resource/dynamic/text/7");

    let unknown = run(&config, &["read", "nope://x"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(
        stderr(&unknown),
        "mcp-runtime: no server offers resource `nope://x`\n"
    );
}

#[test]
fn a_resource_or_prompt_two_servers_offer_needs_the_server_named() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything(dir.path(), &["one", "two"]);
    let uri = "demo://resource/static/document/startup.md";
    let ambiguous = run(&config, &["read", uri]);
    assert_eq!(ambiguous.status.code(), Some(2));
    assert_eq!(
        stderr(&ambiguous),
        format!(
            "mcp-runtime: resource `{uri}` is offered by more than one server (`one`, `two`): name the server\n"
        )
    );
    let named = run(&config, &["read", uri, "--server", "two"]);
    assert_eq!(named.status.code(), Some(0), "{}", stderr(&named));
    let ambiguous = run(&config, &["prompt", "simple-prompt"]);
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(
        stderr(&ambiguous).contains("(`one`, `two`)"),
        "{}",
        stderr(&ambiguous)
    );
}

#[test]
fn prompts_are_listed_and_filled_with_their_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let config = everything(dir.path(), &["every"]);
    let output = run(&config, &["prompts", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let prompts = listed["prompts"].as_array().unwrap();
    let args = prompts
        .iter()
        .find(|p| p["name"] == "args-prompt")
        .expect("args-prompt");
    assert_eq!(
        keys(args),
        ["server", "name", "title", "description", "arguments"]
    );
    assert_eq!(args["arguments"][0]["name"], "city");

    let output = run(
        &config,
        &["prompt", "args-prompt", "--args", r#"{"city": "Paris"}"#],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "user: What's weather in Paris?\n");
    let output = run(
        &config,
        &[
            "prompt",
            "args-prompt",
            "--args",
            r#"{"city": "Oslo"}"#,
            "--json",
        ],
    );
    let prompt: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(prompt["messages"][0]["role"], "user");
}
