//! What a newer revision of the protocol, or an extension, adds (`--future`): a
//! tool and a tool result with fields and a content type that no revision rmcp
//! knows has.
//!
//! With `--future` the fixture lists [`FUTURE_TOOL`], whose definition
//! ([`tool_definition`]) carries a field of its own (`futureField`) and one in its
//! annotations (`futureHint`). A call of it answers [`result`]: a `video` content
//! block, a text block with a field and an annotation of its own and a `\r\n` in
//! its text, structured content, and a field of the result's own. So does
//! `task_job` (with `--tasks`) called with `"future": true`, as its task's result.
//! It also offers resources and prompts: it lists the resource [`FUTURE_RESOURCE`]
//! ([`resource_definition`]), whose read ([`read_result`]) has contents of a kind
//! no revision has, and the prompt [`FUTURE_TOOL`] ([`prompt_definition`]), whose
//! messages ([`prompt_result`]) include a `video` block; each with fields of its own.
//!
//! rmcp's server writes only the types rmcp models, so the fixture writes markers
//! in their place (a tool, a resource or a prompt named [`FUTURE_TOOL`]; a result,
//! a read or a prompt whose only block is the text [`MARKER`]) and its transport
//! rewrites each message it sends ([`rewrite_line`] over stdio, [`rewrite_body`] over
//! HTTP): every marker is replaced by the JSON above, wherever the message carries
//! it (a listing page, a `tools/call` result, a task's result inlined in
//! `tasks/get`, a read, a prompt). Messages without a marker are sent as rmcp wrote
//! them.

use std::sync::Arc;

use bytes::Bytes;
use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, Prompt, PromptMessage, ReadResourceResult,
    Resource, ResourceContents, Role, Tool,
};
use serde_json::{Value, json};

/// The tool `--future` lists.
pub const FUTURE_TOOL: &str = "future";

/// The text of the one block of a result that is replaced by [`result`] (or of a
/// read, or of a prompt).
pub const MARKER: &str = "mcp-fixture/future-result";

/// The resource `--future` lists.
pub const FUTURE_RESOURCE: &str = "fixture://future";

/// [`FUTURE_RESOURCE`] as the fixture lists it, whole.
pub fn resource_definition() -> Value {
    json!({
        "uri": FUTURE_RESOURCE,
        "name": FUTURE_TOOL,
        "mimeType": "video/mp4",
        "annotations": { "audience": ["user"], "futureHint": 1 },
        "futureField": { "kept": true }
    })
}

/// The read of [`FUTURE_RESOURCE`], whole.
pub fn read_result() -> Value {
    json!({
        "contents": [
            { "uri": FUTURE_RESOURCE, "text": "first line\r\nsecond line", "futureField": 1 },
            { "uri": "fixture://future#clip", "mimeType": "video/mp4", "video": { "frames": 24 } }
        ],
        "futureField": { "kept": true }
    })
}

/// The prompt [`FUTURE_TOOL`] as the fixture lists it, whole.
pub fn prompt_definition() -> Value {
    json!({
        "name": FUTURE_TOOL,
        "description": "Messages with what a newer revision adds",
        "futureField": { "kept": true }
    })
}

/// The prompt [`FUTURE_TOOL`], whole.
pub fn prompt_result() -> Value {
    json!({
        "description": "what a newer revision adds",
        "messages": [
            { "role": "user", "content": { "type": "text", "text": "first line\r\nsecond line" } },
            {
                "role": "assistant",
                "content": { "type": "video", "uri": "https://example.com/clip.mp4" },
                "futureField": 1
            }
        ],
        "futureField": { "kept": true }
    })
}

/// The resource rmcp lists in [`FUTURE_RESOURCE`]'s place.
pub(crate) fn marker_resource() -> Resource {
    Resource::new(FUTURE_RESOURCE, FUTURE_TOOL)
}

/// The read rmcp answers in [`read_result`]'s place.
pub(crate) fn marker_read() -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::text(MARKER, FUTURE_RESOURCE)])
}

/// The prompt rmcp lists in [`prompt_definition`]'s place.
pub(crate) fn marker_prompt() -> Prompt {
    Prompt::new(FUTURE_TOOL, Some("replaced by the whole definition"), None)
}

/// The prompt rmcp answers in [`prompt_result`]'s place.
pub(crate) fn marker_prompt_result() -> GetPromptResult {
    GetPromptResult::new(vec![PromptMessage::new_text(Role::User, MARKER)])
}

/// [`FUTURE_TOOL`] as the fixture lists it, whole.
pub fn tool_definition() -> Value {
    json!({
        "name": FUTURE_TOOL,
        "description": "Answer with what a newer revision adds: a video block and fields of its own",
        "inputSchema": { "type": "object", "properties": {} },
        "annotations": { "readOnlyHint": true, "futureHint": { "kept": true } },
        "futureField": { "since": "2099-01-01", "n": [1, 2] }
    })
}

/// The result of a call of [`FUTURE_TOOL`], whole.
pub fn result() -> Value {
    json!({
        "content": [
            { "type": "text", "text": "first line\r\nsecond line" },
            {
                "type": "video",
                "uri": "https://example.com/clip.mp4",
                "mimeType": "video/mp4",
                "futureField": { "frames": 24 }
            },
            {
                "type": "text",
                "text": "after the video",
                "annotations": { "audience": ["user"], "futureHint": 1 },
                "futureField": "kept"
            }
        ],
        "structuredContent": { "frames": 24 },
        "isError": false,
        "futureField": { "kept": true },
        "_meta": { "example.com/trace": "t-1" }
    })
}

/// The tool rmcp lists in [`FUTURE_TOOL`]'s place.
pub(crate) fn marker_tool() -> Tool {
    Tool::new(
        FUTURE_TOOL,
        "replaced by the whole definition",
        Arc::new(Default::default()),
    )
}

/// The result rmcp answers in [`result`]'s place.
pub(crate) fn marker_result() -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(MARKER)])
}

/// Replaces every marker in `message` (see the module docs); whether it held one.
pub fn rewrite(message: &mut Value) -> bool {
    match message {
        Value::Object(object) => {
            let whole = if is_marker(object, "content") {
                Some(result())
            } else if is_marker(object, "contents") {
                Some(read_result())
            } else if is_marker(object, "messages") {
                Some(prompt_result())
            } else {
                None
            };
            if let Some(mut whole) = whole {
                // A 2026-07-28 result names its type; it stays.
                if let (Some(kind), Value::Object(whole)) = (object.get("resultType"), &mut whole) {
                    whole.insert("resultType".to_owned(), kind.clone());
                }
                *message = whole;
                return true;
            }
            let mut changed = false;
            for (list, definition) in [
                ("tools", tool_definition as fn() -> Value),
                ("resources", resource_definition),
                ("prompts", prompt_definition),
            ] {
                if let Some(Value::Array(entries)) = object.get_mut(list) {
                    for entry in entries.iter_mut() {
                        if entry.get("name").and_then(Value::as_str) == Some(FUTURE_TOOL) {
                            *entry = definition();
                            changed = true;
                        }
                    }
                }
            }
            for value in object.values_mut() {
                changed |= rewrite(value);
            }
            changed
        }
        Value::Array(values) => values
            .iter_mut()
            .fold(false, |changed, value| rewrite(value) | changed),
        _ => false,
    }
}

/// Whether `object`'s `list` is one marker: a block (or contents, or a message whose
/// content is a block) with the text [`MARKER`].
fn is_marker(object: &serde_json::Map<String, Value>, list: &str) -> bool {
    match object.get(list) {
        Some(Value::Array(entries)) if entries.len() == 1 => {
            let entry = entries[0].get("content").unwrap_or(&entries[0]);
            entry.get("text").and_then(Value::as_str) == Some(MARKER)
        }
        _ => false,
    }
}

/// One line of JSON-RPC as the fixture writes it on stdout, markers replaced.
pub fn rewrite_line(line: &[u8]) -> Vec<u8> {
    let Ok(mut message) = serde_json::from_slice::<Value>(line) else {
        return line.to_vec();
    };
    if !rewrite(&mut message) {
        return line.to_vec();
    }
    let mut bytes = serde_json::to_vec(&message).expect("a JSON value serializes");
    bytes.push(b'\n');
    bytes
}

/// One frame of an HTTP answer's body (a JSON message, or SSE events with their
/// data on one line each, as rmcp writes them), markers replaced.
pub fn rewrite_body(frame: Bytes) -> Bytes {
    let Ok(text) = std::str::from_utf8(&frame) else {
        return frame;
    };
    if let Ok(mut message) = serde_json::from_str::<Value>(text) {
        return match rewrite(&mut message) {
            true => serde_json::to_vec(&message)
                .expect("a JSON value serializes")
                .into(),
            false => frame,
        };
    }
    let mut changed = false;
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            let data = line.strip_prefix("data:").map(str::trim_start);
            if let Some(mut message) =
                data.and_then(|data| serde_json::from_str::<Value>(data).ok())
                && rewrite(&mut message)
            {
                changed = true;
                return format!("data: {message}");
            }
            line.to_owned()
        })
        .collect();
    match changed {
        true => Bytes::from(lines.join("\n")),
        false => frame,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker_answer() -> Value {
        let mut answer = serde_json::to_value(marker_result()).unwrap();
        answer["resultType"] = json!("complete");
        json!({ "jsonrpc": "2.0", "id": 3, "result": answer })
    }

    #[test]
    fn a_marker_result_becomes_the_whole_result_keeping_its_type() {
        let line = format!("{}\n", marker_answer());
        let rewritten: Value = serde_json::from_slice(&rewrite_line(line.as_bytes())).unwrap();
        let mut expected = result();
        expected["resultType"] = json!("complete");
        assert_eq!(rewritten["result"], expected);
        assert_eq!(rewritten["id"], 3);
    }

    #[test]
    fn the_marker_tool_becomes_the_whole_definition_and_others_stay() {
        let echo = json!({ "name": "echo", "inputSchema": {} });
        let page = json!({ "jsonrpc": "2.0", "id": 1, "result": { "tools": [
            echo, serde_json::to_value(marker_tool()).unwrap()
        ]}});
        let rewritten: Value =
            serde_json::from_slice(&rewrite_line(page.to_string().as_bytes())).unwrap();
        assert_eq!(rewritten["result"]["tools"][0], echo);
        assert_eq!(rewritten["result"]["tools"][1], tool_definition());
    }

    #[test]
    fn a_task_result_inlined_in_an_event_is_replaced() {
        let task = json!({ "jsonrpc": "2.0", "id": 9, "result": {
            "taskId": "t", "status": "completed",
            "result": serde_json::to_value(marker_result()).unwrap()
        }});
        let frame = Bytes::from(format!("data: {task}\nid: 0/1\n\n"));
        let rewritten = rewrite_body(frame);
        let text = std::str::from_utf8(&rewritten).unwrap();
        assert!(text.ends_with("\nid: 0/1\n\n"), "{text}");
        let mut data: Value =
            serde_json::from_str(text.lines().next().unwrap().strip_prefix("data: ").unwrap())
                .unwrap();
        let inlined = data["result"]["result"].as_object_mut().unwrap();
        assert_eq!(inlined.remove("resultType"), Some(json!("complete")));
        assert_eq!(data["result"]["result"], result());
    }

    #[test]
    fn reads_prompts_and_their_listings_become_whole() {
        let answer = |result: Value| {
            let mut message = json!({ "jsonrpc": "2.0", "id": 1, "result": result });
            assert!(rewrite(&mut message));
            if let Some(result) = message["result"].as_object_mut() {
                result.remove("resultType");
            }
            message["result"].take()
        };
        let read = answer(serde_json::to_value(marker_read()).unwrap());
        assert_eq!(read, read_result());
        let prompt = answer(serde_json::to_value(marker_prompt_result()).unwrap());
        assert_eq!(prompt, prompt_result());
        let resources =
            answer(json!({ "resources": [serde_json::to_value(marker_resource()).unwrap()] }));
        assert_eq!(resources["resources"][0], resource_definition());
        let prompts =
            answer(json!({ "prompts": [serde_json::to_value(marker_prompt()).unwrap()] }));
        assert_eq!(prompts["prompts"][0], prompt_definition());
    }

    #[test]
    fn messages_without_a_marker_keep_their_bytes() {
        let line = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":1.000}}\n";
        assert_eq!(rewrite_line(line), line);
        let frame = Bytes::from_static(b"data: {\"n\":1.000}\n\n");
        assert_eq!(rewrite_body(frame.clone()), frame);
    }
}
