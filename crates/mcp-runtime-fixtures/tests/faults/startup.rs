//! Startup rows: an `initialize` or `tools/list` answer that hangs, crashes, or
//! cannot be used, and tools that are not valid.

use super::*;

// Startup: initialize.

#[tokio::test]
async fn hang_in_initialize_times_out_naming_the_timeout() {
    fails_to_start(
        faulty(&["--hang-initialize"]),
        &["did not finish starting within 2s", "`startup_timeout_sec`"],
    )
    .await;
}

#[tokio::test]
async fn crash_in_initialize_reports_status_and_stderr() {
    fails_to_start(
        faulty(&["--crash-initialize", "3"]),
        &[
            "exit status: 3",
            "fixture: fatal: crashed during initialize",
        ],
    )
    .await;
}

#[tokio::test]
async fn garbage_before_the_initialize_reply_is_skipped() {
    starts_anyway(faulty(&["--garbage-before-initialize"])).await;
}

#[tokio::test]
async fn garbage_instead_of_the_initialize_reply_fails_startup() {
    fails_to_start(faulty(&["--garbage-instead-of-initialize"]), &[]).await;
}

#[tokio::test]
async fn an_unsolicited_response_before_initialize_is_ignored() {
    starts_anyway(faulty(&["--unsolicited-response"])).await;
}

// Startup: an `initialize` answer the runtime cannot use fails at once, saying what
// came and why; one it can use, though unusual, is taken.

#[tokio::test]
async fn an_initialize_answer_that_is_not_utf8_fails_at_once_showing_it() {
    refused_at_once(
        &["--mangle-answer", "initialize=not-utf8"],
        &["not valid UTF-8", r#"{"note":"caf\xFF","#],
    )
    .await;
}

#[tokio::test]
async fn an_initialize_answer_over_several_lines_fails_at_once_showing_it() {
    refused_at_once(
        &["--mangle-answer", "initialize=several-lines"],
        &[
            "over several lines",
            "one message per line",
            r#"`{\n  "jsonrpc": "2.0",\n  "id": 0,"#,
        ],
    )
    .await;
}

#[tokio::test]
async fn an_initialize_answer_without_protocol_version_fails_at_once_naming_the_field() {
    refused_at_once(
        &["--mangle-answer", "initialize=without-protocol-version"],
        &["missing field `protocolVersion`", r#""serverInfo""#],
    )
    .await;
}

#[tokio::test]
async fn an_initialize_answer_in_a_batch_is_taken_as_the_2025_03_26_revision_allows() {
    let began = Instant::now();
    let row = start_row(faulty_patient(&["--mangle-answer", "initialize=batch"])).await;
    assert!(began.elapsed() <= REFUSED_BOUND, "{:?}", began.elapsed());
    assert_eq!(faulty_spawns(&row.events), 1, "{:?}", row.events);
    row.faulty_is_callable().await;
    row.finish(&[]).await;
}

// Startup: tools/list.

#[tokio::test]
async fn hang_in_tools_list_times_out_naming_the_timeout() {
    fails_to_start(
        faulty(&["--hang-list"]),
        &["did not finish starting within 2s", "`startup_timeout_sec`"],
    )
    .await;
}

#[tokio::test]
async fn crash_in_tools_list_reports_status_and_stderr() {
    fails_to_start(
        faulty(&["--crash-list", "4"]),
        &[
            "exit status: 4",
            "fixture: fatal: crashed during tools/list",
        ],
    )
    .await;
}

#[tokio::test]
async fn a_cursor_loop_fails_startup() {
    fails_to_start(
        faulty(&["--page-size", "2", "--repeat-cursor"]),
        &["repeated cursor `again`"],
    )
    .await;
}

#[tokio::test]
async fn an_empty_last_cursor_ends_the_listing() {
    let row = start_row(faulty(&["--page-size", "2", "--empty-last-cursor"])).await;
    row.faulty_is_callable().await;
    assert_eq!(status(&row.runtime, FAULTY).tools, 5);
    row.finish(&[]).await;
}

#[tokio::test]
async fn more_than_100_pages_fails_startup() {
    // 5 fixed tools + 96 generated, one a page: 101 pages.
    fails_to_start(
        faulty(&["--page-size", "1", "--tools", "96"]),
        &["more than 100 pages"],
    )
    .await;
}

#[tokio::test]
async fn more_than_10000_tools_fails_startup_naming_the_setting() {
    fails_to_start(
        faulty(&["--tools", "9996", "--page-size", "5000"]),
        &["more than 10000 tools (raise `max_tools`)"],
    )
    .await;
}

#[tokio::test]
async fn max_tools_raises_the_tool_limit() {
    let text = format!(
        r#"
[mcp_servers.{FAULTY}]
command = {fixture:?}
args = ["--tools", "9996", "--page-size", "5000"]
protocol = "2025-11-25"
startup_timeout_sec = {startup}
max_tools = 10001

[mcp_servers.{HEALTHY}]
command = {fixture:?}
"#,
        fixture = fixture_path(),
        startup = STARTUP_TIMEOUT.as_secs(),
    );
    let config = Config::parse(&text, Path::new("faults.toml"))
        .unwrap_or_else(|error| panic!("the config loads: {}", chain(&error)));
    let row = start_row(config).await;
    row.faulty_is_callable().await;
    assert_eq!(status(&row.runtime, FAULTY).tools, 10_001);
    row.finish(&[]).await;
}

#[tokio::test]
async fn an_oversized_tools_list_line_fails_naming_size_and_limit() {
    let row = start_row(faulty_with_message_limit(&[
        "--list-padding-bytes",
        &OVERSIZED_BYTES.to_string(),
    ]))
    .await;
    let reason = row.startup_failure();
    assert!(
        reason.contains(&format!(
            "over the client's limit of {LIMIT_BYTES} bytes (raise `max_message_bytes`)"
        )),
        "{reason}"
    );
    assert!(!reason.contains("server error"), "{reason}");
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_tools_list_answer_over_several_lines_fails_at_once_showing_it() {
    refused_at_once(
        &["--mangle-answer", "tools/list=several-lines"],
        &[
            "listing tools failed",
            "over several lines",
            r#"`{\n  "jsonrpc": "2.0",\n  "id": "#,
        ],
    )
    .await;
}

// Startup: invalid tools.

/// The faulty server is ready without `dropped`, and lists the fixture's fixed tools.
async fn lists_the_good_tools(args: &[&str], dropped: &str) {
    let row = start_row(faulty(args)).await;
    row.faulty_is_callable().await;
    let catalog = row.runtime.catalog();
    let mut raw_names: Vec<&str> = catalog
        .tools()
        .filter(|tool| &*tool.server == FAULTY)
        .map(|tool| tool.tool.name.as_ref())
        .collect();
    raw_names.sort_unstable();
    assert!(!raw_names.contains(&dropped), "{raw_names:?}");
    assert_eq!(raw_names, ["add_tool", "echo", "env", "fail", "pid"]);
    row.finish(&[]).await;
}

#[tokio::test]
async fn a_string_input_schema_drops_only_that_tool() {
    lists_the_good_tools(&["--bad-input-schema", "string"], BAD_SCHEMA_TOOL).await;
}

#[tokio::test]
async fn a_null_input_schema_drops_only_that_tool() {
    lists_the_good_tools(&["--bad-input-schema", "null"], BAD_SCHEMA_TOOL).await;
}

#[tokio::test]
async fn an_array_input_schema_drops_only_that_tool() {
    lists_the_good_tools(&["--bad-input-schema", "array"], BAD_SCHEMA_TOOL).await;
}

#[tokio::test]
async fn a_missing_input_schema_drops_only_that_tool() {
    lists_the_good_tools(&["--bad-input-schema", "missing"], BAD_SCHEMA_TOOL).await;
}

#[tokio::test]
async fn an_empty_tool_name_drops_only_that_tool() {
    lists_the_good_tools(&["--empty-tool-name"], "").await;
}

#[tokio::test]
async fn of_duplicate_tool_names_the_first_is_kept() {
    let row = start_row(faulty(&["--duplicate-tool"])).await;
    row.faulty_is_callable().await;
    let catalog = row.runtime.catalog();
    let echoes: Vec<_> = catalog
        .tools()
        .filter(|tool| &*tool.server == FAULTY && tool.tool.name == "echo")
        .collect();
    assert_eq!(echoes.len(), 1, "{echoes:?}");
    assert_ne!(
        echoes[0].tool.description.as_deref(),
        Some(DUPLICATE_DESCRIPTION)
    );
    row.finish(&[]).await;
}
