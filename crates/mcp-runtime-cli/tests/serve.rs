//! `mcp-runtime serve` driven by a real MCP client: the official Python SDK's, in
//! each protocol era, over stdio. Under the handshake revisions the client also hears
//! a list change and cancels a call, which the upstream server sees.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{fixture_server, python_client, report_of};

#[test]
fn a_python_sdk_client_lists_and_calls_through_serve_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["legacy", "2026-07-28"] {
        // `up` is required: the session's start waits for it, so its tools and
        // instructions are there from the first answer.
        let config = dir.path().join(format!("{mode}.toml"));
        let slow_log = dir.path().join(format!("slow-{mode}.jsonl"));
        std::fs::write(
            &config,
            format!(
                "[mcp_servers.up]\ncommand = {fixture:?}\nargs = [\"--resources\", \"--asks\", \"--progress-steps\", \"3\", \"--call-log-messages\", \"2\", \"--instructions\", \"Call echo to hear yourself.\", \"--tasks\"]\n\
                 required = true\n\n\
                 [mcp_servers.down]\ncommand = \"/nonexistent/server\"\n\n\
                 [mcp_servers.slow]\ncommand = {fixture:?}\n\
                 args = [\"--call-delay-ms\", \"600000\", \"--log\", {log:?}]\n",
                fixture = fixture_server().to_str().unwrap(),
                log = slow_log.to_str().unwrap(),
            ),
        )
        .unwrap();
        let mut client = python_client("serve_client.py");
        client.args([
            mode,
            env!("CARGO_BIN_EXE_mcp-runtime"),
            config.to_str().unwrap(),
            slow_log.to_str().unwrap(),
        ]);
        let report = report_of(client, mode);
        let tools = report["tools"].as_array().unwrap();
        assert!(tools.contains(&json!("mcp__up__echo")), "{mode}: {tools:?}");
        assert!(
            tools
                .iter()
                .all(|name| !name.as_str().unwrap().starts_with("mcp__down__")),
            "{mode}: the server that failed lists nothing: {tools:?}"
        );
        assert_eq!(
            report["echo"],
            json!({"is_error": false, "structured": {"text": "hi"}}),
            "{mode}"
        );
        assert_eq!(
            report["instructions"], "## up\n\nCall echo to hear yourself.",
            "{mode}: the servers' instructions, each under its name"
        );
        assert_eq!(
            report["progress"],
            json!([[1.0, 3.0], [2.0, 3.0], [3.0, 3.0]]),
            "{mode}: the server's progress, under the client's token, before the result"
        );
        // Of the server's two messages, the one at the level the client set (or its
        // request asked for), named after its server, before the call's result.
        assert_eq!(
            report["logs"],
            json!([{"level": "warning", "logger": "up", "data": "echo message 2"}]),
            "{mode}"
        );
        // The servers' questions reach the client, which answers them: as requests
        // of the gateway's own, or in its calls' input-required results.
        assert_eq!(
            report["asked"],
            json!({
                "ask": {"action": "accept", "content": {"name": "gateway client", "count": 7}},
                "sample": {
                    "model": "client-model",
                    "role": "assistant",
                    "content": {"type": "text", "text": "sampled by the client"}
                },
                "roots": {"roots": [{"uri": "file:///client/root", "name": "client root"}]}
            }),
            "{mode}"
        );
        assert_eq!(
            report["task"],
            json!({
                "worked_ms": 20,
                "answer": {"action": "accept", "content": {"name": "gateway client", "count": 7}}
            }),
            "{mode}: a task's result, its question answered by the client"
        );
        assert_eq!(report["down"]["is_error"], true, "{mode}: {report}");
        assert!(
            report["down"]["text"].as_str().unwrap().contains("down"),
            "{mode}: the runtime's message names the server: {report}"
        );
        assert_eq!(report["resources"], json!(["fixture://counter"]), "{mode}");
        assert_eq!(
            report["counter"],
            json!(["0"]),
            "{mode}: read from its server"
        );
        let no_resource = report["no_resource"].as_str().unwrap();
        assert!(
            no_resource.contains("fixture://nothing"),
            "{mode}: refused, naming the URI: {no_resource}"
        );
        let unknown = report["unknown"].as_str().unwrap();
        assert!(
            unknown.contains("mcp__up__echo"),
            "{mode}: the nearest name: {unknown}"
        );
        assert_eq!(
            report["changed"], true,
            "{mode}: the list change reached the client"
        );
        assert_eq!(report["added"], true, "{mode}: the new tool is listed");
        assert_eq!(
            report["cancelled"], true,
            "{mode}: the cancellation reached the server"
        );
    }
}

#[test]
fn prompts_and_completions_reach_their_server_under_either_naming_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let everything = mcp_runtime_fixtures::testing::peers_dir()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    for names in ["qualified", "original"] {
        let config = dir.path().join(format!("{names}.toml"));
        std::fs::write(
            &config,
            format!(
                "[serve]\ntool_names = {names:?}\n\n\
                 [mcp_servers.every]\ncommand = \"node\"\nargs = [{everything:?}, \"stdio\"]\n",
                everything = everything.to_str().unwrap(),
            ),
        )
        .unwrap();
        for mode in ["legacy", "2026-07-28"] {
            let mut client = python_client("serve_prompts_client.py");
            client.args([
                mode,
                names,
                env!("CARGO_BIN_EXE_mcp-runtime"),
                config.to_str().unwrap(),
            ]);
            let report = report_of(client, &format!("{names} {mode}"));
            let prompts = match names {
                "qualified" => json!([
                    "mcp__every__args_prompt",
                    "mcp__every__completable_prompt",
                    "mcp__every__resource_prompt",
                    "mcp__every__simple_prompt"
                ]),
                _ => json!([
                    "args-prompt",
                    "completable-prompt",
                    "resource-prompt",
                    "simple-prompt"
                ]),
            };
            assert_eq!(report["prompts"], prompts, "{names} {mode}");
            assert_eq!(
                report["got"],
                json!(["What's weather in Paris?"]),
                "{names} {mode}"
            );
            assert_eq!(
                report["prompt_completion"],
                json!(["Engineering"]),
                "{names} {mode}"
            );
            assert_eq!(
                report["template_completion"],
                json!(["1"]),
                "{names} {mode}"
            );
            assert!(
                report["unknown"]
                    .as_str()
                    .unwrap()
                    .contains("no prompt is named"),
                "{names} {mode}: {report}"
            );
        }
    }
}

/// What a server logged of the one `tools/call` it received.
fn received_call(log: &Path) -> Value {
    let calls: Vec<Value> = mcp_runtime_fixtures::testing::read_log(log)
        .into_iter()
        .filter(|entry| entry["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls[0].clone()
}

#[test]
fn a_clients_sandbox_state_reaches_exactly_the_servers_that_ask_and_a_launcher_only_from_stdio() {
    use mcp_runtime_fixtures::testing::{Probe, stub_launcher};
    let state = json!({"zeta": {"future": [1, null]}, "alpha": 12, "s": "café \"q\""});
    let dir = tempfile::tempdir().unwrap();
    let launcher = stub_launcher(dir.path(), Probe::Passes);
    let canonical = std::fs::canonicalize(&launcher).unwrap();
    for transport in ["stdio", "http"] {
        let opted_log = dir.path().join(format!("opted-{transport}.jsonl"));
        let plain_log = dir.path().join(format!("plain-{transport}.jsonl"));
        let config = dir.path().join(format!("{transport}.toml"));
        std::fs::write(
            &config,
            format!(
                "[mcp_servers.opted]\ncommand = {fixture:?}\n\
                 args = [\"--log\", {opted:?}, \"--experimental\", \"codex/sandbox-state={{}}\"]\n\n\
                 [mcp_servers.plain]\ncommand = {fixture:?}\nargs = [\"--log\", {plain:?}]\n",
                fixture = fixture_server().to_str().unwrap(),
                opted = opted_log.to_str().unwrap(),
                plain = plain_log.to_str().unwrap(),
            ),
        )
        .unwrap();
        let mut gateway = None;
        let args: Vec<String> = match transport {
            "stdio" => vec![
                env!("CARGO_BIN_EXE_mcp-runtime").into(),
                config.to_str().unwrap().into(),
            ],
            _ => {
                let (child, url) = crate::serve_http::gateway(&config, &[]);
                gateway = Some(crate::serve_http::KillOnDrop(child));
                vec![url]
            }
        };
        let mut client = python_client("serve_sandbox_client.py");
        client.arg(transport).args(&args).arg(&launcher);
        let report = report_of(client, transport);
        drop(gateway);
        assert_eq!(
            report["experimental"],
            json!(["codex/sandbox-state", "codex/sandbox-state-meta"]),
            "{transport}"
        );

        let opted = received_call(&opted_log);
        let meta = &opted["params"]["_meta"];
        assert_eq!(
            meta["codex/sandbox-state"], state,
            "{transport}: the same value"
        );
        assert_eq!(meta["codex/sandbox-state-meta"], state, "{transport}");
        let raw = opted["raw"].as_str().unwrap();
        assert!(
            raw.contains(r#""codex/sandbox-state":{"zeta":"#),
            "{transport}: key order kept: {raw}"
        );
        let offered = &meta["codex/sandbox-launcher"];
        match transport {
            "stdio" => assert_eq!(
                offered,
                &json!({"codexExecutable": canonical.to_str().unwrap()}),
                "a local client's launcher, probed, for a local server"
            ),
            _ => assert!(offered.is_null(), "never one from an HTTP client: {meta}"),
        }
        assert_eq!(
            opted["params"]["arguments"],
            json!({"x": 1}),
            "{transport}: the model's arguments carry no authority"
        );

        let plain = received_call(&plain_log);
        let meta = &plain["params"]["_meta"];
        assert!(
            meta.get("codex/sandbox-state").is_none()
                && meta.get("codex/sandbox-launcher").is_none(),
            "{transport}: a server that did not ask gets nothing: {meta}"
        );
    }
}

#[test]
fn a_large_catalog_is_listed_page_by_page_in_name_order_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            // Required: the session's start waits for it, so the first list is whole.
            "[mcp_servers.many]\ncommand = {:?}\nargs = [\"--tools\", \"1200\"]\nrequired = true\n",
            fixture_server().to_str().unwrap()
        ),
    )
    .unwrap();
    for mode in ["legacy", "2026-07-28"] {
        let mut client = python_client("serve_paging_client.py");
        client.args([
            mode,
            env!("CARGO_BIN_EXE_mcp-runtime"),
            config.to_str().unwrap(),
        ]);
        let report = report_of(client, mode);
        let names: Vec<&str> = report["names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "{mode}: every tool once, in name order");
        assert!(names.len() > 1200, "{mode}: {}", names.len());
        let pages = report["pages"].as_array().unwrap();
        assert_eq!(pages.len(), names.len().div_ceil(500), "{mode}: {pages:?}");
        assert!(
            pages.iter().all(|page| page.as_u64().unwrap() <= 500),
            "{mode}"
        );
    }
}

/// A gateway's configuration in search mode: the fixture `up`, and `other`, whose one
/// tool is named as up's echo is qualified (`original` names do not apply in search
/// mode: a call by that name must reach up's echo).
pub(crate) fn search_config(dir: &Path) -> std::path::PathBuf {
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[serve]\nexpose = \"search\"\nalways_expose = [\"mcp__up__pid\"]\n\
             tool_names = \"original\"\n\n\
             [mcp_servers.up]\ncommand = {fixture:?}\nrequired = true\n\n\
             [mcp_servers.other]\ncommand = {fixture:?}\nrequired = true\n\
             args = [\"--tool-name\", \"mcp__up__echo\"]\nenabled_tools = [\"mcp__up__echo\"]\n",
            fixture = fixture_server().to_str().unwrap()
        ),
    )
    .unwrap();
    config
}

/// What `serve_search_client.py` reported for `mode` (see the client's docs).
pub(crate) fn assert_search_report(mode: &str, report: &Value) {
    // The search and call tools and the always exposed one; none of the rest.
    assert_eq!(
        report["listed"],
        json!(["call_tool", "mcp__up__pid", "search_tools"]),
        "{mode}"
    );
    let unshown = report["unshown"].as_str().unwrap();
    assert!(
        unshown.contains("`mcp__up__echo` is not in this client's tool list"),
        "{mode}: {unshown}"
    );
    assert_eq!(report["found"][0], "mcp__up__echo", "{mode}: {report}");
    assert_eq!(report["through"], json!({"text": "through"}), "{mode}");
    if mode == "legacy" {
        // The session heard its list changed, and its list now holds what it found,
        // which it calls by name. A 2026-07-28 client's list is fixed.
        let relisted = report["relisted"].as_array().unwrap();
        for name in report["found"].as_array().unwrap() {
            assert!(relisted.contains(name), "{name} in {relisted:?}");
        }
        assert_eq!(
            relisted.len(),
            3 + report["found"].as_array().unwrap().len()
        );
        assert_eq!(report["by_name"], json!({"text": "by name"}));
    }
}

#[test]
fn a_python_sdk_client_finds_tools_in_search_mode_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let config = search_config(dir.path());
    for mode in ["legacy", "2026-07-28"] {
        let mut client = python_client("serve_search_client.py");
        client.args([
            mode,
            env!("CARGO_BIN_EXE_mcp-runtime"),
            config.to_str().unwrap(),
        ]);
        assert_search_report(mode, &report_of(client, mode));
    }
}
