//! What a newer revision or an extension adds passes through: unknown content
//! types and fields.

use super::*;

// What a newer revision or an extension adds: unknown content types and fields.

/// The faulty server (`--future`, over `config`) lists `future` whole and answers
/// its call (or `task_job`'s, with `task_arguments`) with the result as the server
/// wrote it: the `video` block, the fields of the result, of a block and of its
/// annotations. `spawned` is how many processes the faulty server takes.
async fn passes_what_a_newer_revision_adds(
    config: Config,
    task_arguments: Option<serde_json::Value>,
    spawned: usize,
) {
    let row = start_row(config).await;
    row.faulty_is_callable().await;
    let processes = row
        .events
        .iter()
        .filter(|event| matches!(event, StartupEvent::Spawned { server, .. } if server == FAULTY))
        .count();
    assert_eq!(processes, spawned, "{:?}", row.events);

    let (tool, arguments) = match task_arguments {
        Some(arguments) => ("task_job", self::arguments(arguments)),
        None => (future::FUTURE_TOOL, None),
    };
    let result = call_ok(&row.runtime, &format!("mcp__{FAULTY}__{tool}"), arguments).await;
    let mut whole = result.as_object().clone();
    // A 2026-07-28 server names the result's type.
    whole.remove("resultType");
    assert_eq!(
        serde_json::Value::Object(whole),
        future::result(),
        "the result as the server wrote it"
    );
    // The parts the runtime knows read as rmcp's types; the block it does not, as
    // the server sent it.
    let blocks: Vec<Content<'_>> = result.content().collect();
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[0].as_text(), Some("first line\r\nsecond line"));
    assert_eq!(
        blocks[1],
        Content::Unknown(&future::result()["content"][1]),
        "the video block, whole"
    );
    assert_eq!(blocks[1].kind(), Some("video"));
    assert_eq!(blocks[2].as_text(), Some("after the video"));
    assert_eq!(result.structured_content(), Some(&json!({ "frames": 24 })));
    assert!(!result.is_error());
    assert_eq!(result.meta().unwrap()["example.com/trace"], "t-1");

    let catalog = row.runtime.catalog();
    let listed = catalog
        .resolve(&format!("mcp__{FAULTY}__{}", future::FUTURE_TOOL))
        .expect("the tool is listed");
    assert_eq!(
        serde_json::to_value(listed.definition()).unwrap(),
        future::tool_definition(),
        "the tool, its annotations and their fields of their own"
    );
    assert_eq!(
        listed.tool.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    row.finish(&[]).await;
}

#[tokio::test]
async fn unknown_content_types_and_fields_pass_through_whole_over_stdio() {
    passes_what_a_newer_revision_adds(faulty(&["--future"]), None, 1).await;
}

#[tokio::test]
async fn unknown_content_types_and_fields_pass_through_whole_over_stdio_in_2026_07_28() {
    let server = fixture(FAULTY, &["--future", "--era", "stateless"])
        .with_protocol(mcp_runtime::config::Protocol::V2026_07_28);
    passes_what_a_newer_revision_adds(beside_healthy(server), None, 1).await;
}

#[tokio::test]
async fn unknown_content_types_and_fields_pass_through_whole_over_http() {
    let server = http_fixture(&["--future"]).await;
    passes_what_a_newer_revision_adds(faulty_http(&server.url), None, 0).await;
}

#[tokio::test]
async fn unknown_content_types_and_fields_pass_through_whole_over_http_in_2026_07_28() {
    let server = http_fixture(&["--future", "--era", "stateless"]).await;
    passes_what_a_newer_revision_adds(faulty_http(&server.url), None, 0).await;
}

#[tokio::test]
async fn unknown_content_types_and_fields_pass_through_whole_as_a_task_result() {
    let server = fixture(FAULTY, &["--future", "--tasks", "--era", "stateless"])
        .with_protocol(mcp_runtime::config::Protocol::V2026_07_28);
    let arguments = json!({ "future": true, "poll_ms": 50 });
    passes_what_a_newer_revision_adds(beside_healthy(server), Some(arguments), 1).await;
}

/// The faulty server (`--future`, over `config`) lists its resource and prompt whole,
/// and its read and prompt come back as the server wrote them: contents of a kind no
/// revision has, a `video` message, fields of their own.
async fn reads_and_prompts_pass_what_a_newer_revision_adds(config: Config, spawned: usize) {
    let row = start_row(config).await;
    let processes = row
        .events
        .iter()
        .filter(|event| matches!(event, StartupEvent::Spawned { server, .. } if server == FAULTY))
        .count();
    assert_eq!(processes, spawned, "{:?}", row.events);
    let began = Instant::now();
    let resources = row.runtime.resources().await;
    assert!(resources.failures.is_empty(), "{:?}", resources.failures);
    let listed = resources
        .resources
        .iter()
        .find(|entry| entry.resource.uri == future::FUTURE_RESOURCE)
        .expect("the resource is listed");
    assert_eq!(
        serde_json::Value::Object(listed.definition.clone()),
        future::resource_definition()
    );
    let read = row
        .runtime
        .read_resource(future::FUTURE_RESOURCE, Some(FAULTY))
        .await
        .unwrap_or_else(|error| panic!("{}", chain(&error)));
    let mut whole = read.as_object().clone();
    whole.remove("resultType");
    assert_eq!(serde_json::Value::Object(whole), future::read_result());
    assert_eq!(
        read.contents().next().unwrap().as_text(),
        Some("first line\r\nsecond line")
    );

    let prompts = row.runtime.prompts().await;
    let listed = prompts
        .prompts
        .iter()
        .find(|entry| entry.server == FAULTY)
        .expect("the prompt is listed");
    assert_eq!(
        serde_json::Value::Object(listed.definition.clone()),
        future::prompt_definition()
    );
    let prompt = row
        .runtime
        .get_prompt(future::FUTURE_TOOL, Some(FAULTY), None)
        .await
        .unwrap_or_else(|error| panic!("{}", chain(&error)));
    let mut whole = prompt.as_object().clone();
    whole.remove("resultType");
    assert_eq!(serde_json::Value::Object(whole), future::prompt_result());
    let kinds: Vec<Option<&str>> = prompt
        .messages()
        .map(|message| message.content.kind())
        .collect();
    assert_eq!(kinds, [Some("text"), Some("video")]);
    let took = began.elapsed();
    assert!(
        took <= 4 * TOOL_TIMEOUT + MARGIN,
        "the requests took {took:?}"
    );
    row.finish(&[]).await;
}

#[tokio::test]
async fn unknown_contents_and_fields_pass_through_a_read_and_a_prompt_over_stdio() {
    reads_and_prompts_pass_what_a_newer_revision_adds(faulty(&["--future"]), 1).await;
}

#[tokio::test]
async fn unknown_contents_and_fields_pass_through_a_read_and_a_prompt_over_http_in_2026_07_28() {
    let server = http_fixture(&["--future", "--era", "stateless"]).await;
    reads_and_prompts_pass_what_a_newer_revision_adds(faulty_http(&server.url), 0).await;
}
