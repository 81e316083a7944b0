//! `tools/list`: pagination and its guards, filters, qualified names.

use mcp_runtime::ServerState;

use crate::support::*;

/// The fixture always has these tools first.
const FIXED_TOOLS: usize = 5;

#[tokio::test]
async fn three_pages_of_fifty_are_one_hundred_fifty_tools() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let generated = 150 - FIXED_TOOLS;
    let last = format!("mcp__paged__tool_{}", generated - 1);
    let generated = generated.to_string();
    let server = fixture(
        "paged",
        &[
            "--tools",
            &generated,
            "--page-size",
            "50",
            "--log",
            path_str(&log),
        ],
    );
    let (runtime, _) = start(config([server])).await;
    assert_eq!(runtime.servers()[0].tools, 150);
    assert_eq!(runtime.catalog().tools().len(), 150);
    assert!(runtime.catalog().resolve(&last).is_some());
    assert_eq!(count_method(&read_log(&log), "tools/list"), 3);
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_repeated_cursor_is_an_error_not_a_hang() {
    let server = fixture(
        "loop",
        &["--tools", "10", "--page-size", "2", "--repeat-cursor"],
    );
    let (runtime, _) = start(config([server])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    assert_eq!(
        mcp_runtime::error::chain(status.error.as_ref().unwrap()),
        "listing tools failed: the server repeated cursor `again` (its pagination loops)"
    );
}

#[tokio::test]
async fn a_failing_tools_list_fails_the_startup_with_the_server_message() {
    let (runtime, _) = start(config([fixture("broken", &["--fail-list"])])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Failed);
    let error = mcp_runtime::error::chain(status.error.as_ref().unwrap());
    assert!(error.contains("tools/list failed on purpose"), "{error}");
    // The JSON-RPC code and message, without the protocol library's own prefix.
    assert!(
        error.starts_with("listing tools failed: server error -32603: "),
        "{error}"
    );
}

#[tokio::test]
async fn enabled_tools_apply_first_then_disabled_tools() {
    let mut server = fixture("f", &["--tools", "3"]);
    server.enabled_tools = Some(vec!["echo".into(), "tool_0".into(), "tool_1".into()]);
    server.disabled_tools = vec!["tool_1".into(), "pid".into()];
    let (runtime, _) = start(config([server])).await;
    let names: Vec<_> = runtime
        .catalog()
        .tools()
        .map(|tool| tool.qualified_name.to_string())
        .collect();
    assert_eq!(names, ["mcp__f__echo", "mcp__f__tool_0"]);
    assert_eq!(runtime.servers()[0].tools, 2);
    runtime.shutdown().await;
}

#[tokio::test]
async fn colliding_and_long_names_are_qualified_and_still_route() {
    let long = "a_really_long_tool_name_that_goes_past_the_limit_of_sixty_four_characters";
    let server = || {
        fixture(
            "f",
            &[
                "--tool-name",
                "read.file",
                "--tool-name",
                "read_file",
                "--tool-name",
                long,
            ],
        )
    };
    let (runtime, _) = start(config([server()])).await;
    let catalog = runtime.catalog();
    let mut routed: Vec<(String, String)> = Vec::new();
    for tool in catalog.tools() {
        assert!(tool.qualified_name.len() <= 64, "{}", tool.qualified_name);
        assert!(
            tool.qualified_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{}",
            tool.qualified_name
        );
        let back = catalog.resolve(&tool.qualified_name).unwrap();
        routed.push((back.server.to_string(), back.tool.name.to_string()));
    }
    for raw in ["read.file", "read_file", long] {
        assert!(
            routed.contains(&("f".into(), raw.into())),
            "{raw} is routable"
        );
    }
    // A second runtime with the same servers names them identically.
    let first: Vec<String> = catalog
        .tools()
        .map(|t| t.qualified_name.to_string())
        .collect();
    runtime.shutdown().await;
    let (again, _) = start(config([server()])).await;
    let second: Vec<String> = again
        .catalog()
        .tools()
        .map(|t| t.qualified_name.to_string())
        .collect();
    assert_eq!(first, second);
    again.shutdown().await;
}

#[tokio::test]
async fn a_tool_added_by_a_refresh_takes_the_suffix_and_no_name_changes() {
    let (runtime, _) = start(config([fixture(
        "my-server",
        &["--tool-name", "tool_name"],
    )]))
    .await;
    let before: Vec<(String, String)> = runtime
        .catalog()
        .tools()
        .map(|t| (t.qualified_name.to_string(), t.tool.name.to_string()))
        .collect();
    assert!(before.contains(&("mcp__my_server__tool_name".into(), "tool_name".into())));

    // `tool-name` sanitizes like `tool_name`: named together, both would be hashed.
    let mut catalog = runtime.subscribe_catalog();
    let arguments = serde_json::json!({"name": "tool-name"});
    runtime
        .call_tool("mcp__my_server__add_tool", arguments.as_object().cloned())
        .await
        .unwrap();
    let updated = catalog
        .wait_for(|catalog| catalog.tools().len() == before.len() + 1)
        .await
        .unwrap()
        .clone();
    for (name, raw) in &before {
        let kept = updated.resolve(name).expect("a name stays");
        assert_eq!(kept.tool.name, raw.as_str(), "{name}");
    }
    let added = updated.resolve("mcp__my_server__tool_name_6c9a5b0263f1");
    assert_eq!(added.map(|t| t.tool.name.as_ref()), Some("tool-name"));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_search_finds_a_tool_its_server_added_after_the_list_changed() {
    let (runtime, _) = start(config([fixture("ops", &[]), fixture("other", &[])])).await;
    let first = runtime.catalog();
    assert!(first.search("kubernetes deploy", 5).is_empty());
    let echo = first.search("echo", 5);
    assert_eq!(echo[0].tool.qualified_name.as_ref(), "mcp__ops__echo");
    assert!(echo[0].exact_name);

    // The server adds a tool and says its list changed; the runtime lists it again.
    let mut catalogs = runtime.subscribe_catalog();
    let arguments = serde_json::json!({"name": "kubernetes_deploy"});
    runtime
        .call_tool("mcp__ops__add_tool", arguments.as_object().cloned())
        .await
        .unwrap();
    let updated = catalogs
        .wait_for(|catalog| catalog.len() == first.len() + 1)
        .await
        .unwrap()
        .clone();
    let hits = updated.search("kubernetes deploy", 5);
    let found: Vec<&str> = hits.iter().map(|hit| &*hit.tool.qualified_name).collect();
    assert_eq!(found, ["mcp__ops__kubernetes_deploy"]);
    // Its name, as given or qualified, ranks it first among the tools it matches.
    for query in ["kubernetes-deploy", "MCP__OPS__KUBERNETES_DEPLOY"] {
        let hits = updated.search(query, 5);
        assert_eq!(
            hits[0].tool.qualified_name.as_ref(),
            "mcp__ops__kubernetes_deploy"
        );
        assert!(hits[0].exact_name, "{query}");
    }
    assert!(updated.search_server("other", "kubernetes", 5).is_empty());
    runtime.shutdown().await;
}
