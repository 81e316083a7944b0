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
//!
//! rmcp's server writes only the types rmcp models, so the fixture writes markers
//! in their place (a tool named [`FUTURE_TOOL`], a result whose only block is the
//! text [`MARKER`]) and its transport rewrites each message it sends
//! ([`rewrite_line`] over stdio, [`rewrite_body`] over HTTP): every marker is
//! replaced by the JSON above, wherever the message carries it (a `tools/list`
//! page, a `tools/call` result, a task's result inlined in `tasks/get`). Messages
//! without a marker are sent as rmcp wrote them.

use std::sync::Arc;

use bytes::Bytes;
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Value, json};

/// The tool `--future` lists.
pub const FUTURE_TOOL: &str = "future";

/// The text of the one block of a result that is replaced by [`result`].
pub const MARKER: &str = "mcp-fixture/future-result";

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
            if is_marker_result(object) {
                let mut whole = result();
                // A 2026-07-28 result names its type; it stays.
                if let (Some(kind), Value::Object(whole)) = (object.get("resultType"), &mut whole) {
                    whole.insert("resultType".to_owned(), kind.clone());
                }
                *message = whole;
                return true;
            }
            let mut changed = false;
            if let Some(Value::Array(tools)) = object.get_mut("tools") {
                for tool in tools.iter_mut() {
                    if tool.get("name").and_then(Value::as_str) == Some(FUTURE_TOOL) {
                        *tool = tool_definition();
                        changed = true;
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

fn is_marker_result(object: &serde_json::Map<String, Value>) -> bool {
    match object.get("content") {
        Some(Value::Array(blocks)) => {
            blocks.len() == 1 && blocks[0].get("text").and_then(Value::as_str) == Some(MARKER)
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
    fn messages_without_a_marker_keep_their_bytes() {
        let line = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":1.000}}\n";
        assert_eq!(rewrite_line(line), line);
        let frame = Bytes::from_static(b"data: {\"n\":1.000}\n\n");
        assert_eq!(rewrite_body(frame.clone()), frame);
    }
}
