//! A server's answer to a tool call, read from its JSON as the server sent it.
//!
//! The transports hand the answers to `tools/call` and to a 2025-11-25
//! `tasks/result` over raw ([`crate::transport::raw_answers`]), so that what a
//! newer revision or an extension adds to a result reaches the host
//! ([`crate::ToolResult`]). The answer is one of: the tool's result, a 2026-07-28
//! request for input (`resultType: "input_required"`), a task the server created
//! for the call (2026-07-28 `resultType: "task"`, or a 2025-11-25 `{"task": …}`).
//! The two kinds of result rmcp models and the runtime only reads (input requests,
//! tasks) are read as rmcp's types; a tool result is kept whole.

use rmcp::model::{CreateTaskResult, InputRequiredResult, JsonObject, ServerResult};
use serde::Deserialize;
use serde_json::Value;

use super::{calling::CallFailure, error::AnswerError};
use crate::{
    tool_result::{InvalidToolResult, ToolResult},
    transport::raw_answers::raw_result,
};

/// What a server answered to a tool call.
#[derive(Debug)]
pub(super) enum Answer {
    /// The tool's result.
    Complete(ToolResult),
    /// 2026-07-28: the server asks for input before it answers.
    InputRequired(InputRequiredResult),
    /// 2026-07-28: the server runs the call as a task.
    Task(CreateTaskResult),
    /// 2025-11-25: the server runs the call as a task, this one (`{"task": …}`).
    HandshakeTask(JsonObject),
}

/// Reads `answer`: raw, as the transports hand it over, or as rmcp decoded it (an
/// in-process pipe in the tests: rmcp's types then have dropped what they do not
/// model). The error says why it is not an answer to a tool call:
/// [`CallFailure::Invalid`] for an answer that is not a tool result the runtime can
/// read, [`CallFailure::Refused`] for one that is not JSON or not a request for input
/// or a task it can read.
pub(super) fn read(answer: ServerResult) -> Result<Answer, CallFailure> {
    let mut object = match json(answer).map_err(CallFailure::Refused)? {
        Value::Object(object) => object,
        _ => return Err(CallFailure::Invalid(InvalidToolResult::NotAToolResult)),
    };
    if asks_for_input(&object) {
        return input_request(object)
            .map(Answer::InputRequired)
            .map_err(CallFailure::Refused);
    }
    if object.get("resultType").and_then(Value::as_str) == Some("task") {
        return CreateTaskResult::deserialize(Value::Object(object))
            .map(Answer::Task)
            .map_err(|_| CallFailure::Refused(AnswerError::TaskUnreadable));
    }
    let handshake_task = matches!(object.get("task"), Some(Value::Object(_)))
        && !["content", "structuredContent", "isError", "resultType"]
            .iter()
            .any(|field| object.contains_key(*field));
    if handshake_task && let Some(Value::Object(task)) = object.remove("task") {
        return Ok(Answer::HandshakeTask(task));
    }
    ToolResult::from_object(object)
        .map(Answer::Complete)
        .map_err(CallFailure::Invalid)
}

/// Whether a 2026-07-28 answer (to any request) asks for input first.
pub(super) fn asks_for_input(object: &JsonObject) -> bool {
    object.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// `object`, an answer that [asks for input](asks_for_input), read as rmcp's request
/// for input.
pub(super) fn input_request(object: JsonObject) -> Result<InputRequiredResult, AnswerError> {
    InputRequiredResult::deserialize(Value::Object(object))
        .map_err(|_| AnswerError::InputRequestUnreadable)
}

/// The tool result `answer` holds; any other answer is an error saying why.
pub(super) fn tool_result(answer: ServerResult) -> Result<ToolResult, CallFailure> {
    match read(answer)? {
        Answer::Complete(result) => Ok(result),
        _ => Err(CallFailure::Invalid(InvalidToolResult::NotAToolResult)),
    }
}

/// The answer's result as a JSON object (see [`json`]). Any other JSON is an error:
/// `not_an_object` (written out only then).
pub(super) fn object(
    answer: ServerResult,
    not_an_object: impl std::fmt::Display,
) -> Result<JsonObject, String> {
    match json(answer).map_err(|error| crate::transport::error::chain(&error))? {
        Value::Object(object) => Ok(object),
        _ => Err(not_an_object.to_string()),
    }
}

/// The answer's result as JSON: raw, as the transports hand it over, or as rmcp
/// decoded it, every credential the runtime sends masked in it
/// ([`crate::redact::credentials`]). The error says why the raw text cannot be read.
fn json(mut answer: ServerResult) -> Result<Value, AnswerError> {
    let value = match raw_result(&mut answer) {
        Some(text) => serde_json::from_str(&text)
            .map_err(|error| AnswerError::NotJson(std::sync::Arc::new(error)))?,
        // rmcp's own types always serialize; `null` reads as no object.
        None => serde_json::to_value(&answer).unwrap_or_default(),
    };
    // A credential the runtime sent is never data for the host, nor for the model
    // behind it: masked wherever the answer quotes it.
    Ok(crate::redact::masked_json(value))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::transport::raw_answers;

    /// `result` as rmcp hands it over once the transport rewrote its answer.
    fn raw(result: Value) -> ServerResult {
        let message = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
        let rewritten = raw_answers::rewrite(message.as_bytes(), |_| true).unwrap();
        match serde_json::from_slice::<rmcp::model::ServerJsonRpcMessage>(&rewritten).unwrap() {
            rmcp::model::JsonRpcMessage::Response(response) => response.result,
            other => panic!("{other:?}"),
        }
    }

    /// `result` as rmcp decodes it.
    fn typed(result: Value) -> ServerResult {
        serde_json::from_value(result).expect("an answer rmcp decodes")
    }

    #[test]
    fn a_raw_tool_result_is_kept_whole() {
        let sent =
            json!({"content": [{"type": "video"}], "futureField": 1, "resultType": "complete"});
        let result = tool_result(raw(sent.clone())).unwrap();
        assert_eq!(Value::Object(result.into_object()), sent);
    }

    #[test]
    fn a_credential_the_result_quotes_is_masked_and_the_rest_kept() {
        let _sent = crate::redact::register("ta-bearer-9c1d-token").unwrap();
        let result = tool_result(raw(json!({
            "content": [{"type": "text", "text": "you sent Bearer ta-bearer-9c1d-token"}],
            "structuredContent": {"echo": "ta-bearer-9c1d-token", "n": 1},
        })))
        .unwrap();
        assert_eq!(
            Value::Object(result.into_object()),
            json!({
                "content": [{"type": "text", "text": "you sent Bearer *****"}],
                "structuredContent": {"echo": "*****", "n": 1},
            })
        );
    }

    #[test]
    fn a_tool_result_without_content_is_still_a_tool_result() {
        for answer in [
            raw(json!({})),
            typed(json!({})),
            typed(json!({"_meta": {"k": 1}})),
        ] {
            let result = tool_result(answer).unwrap();
            assert_eq!(result.content().len(), 0);
            assert!(!result.is_error());
        }
        let result = tool_result(typed(json!({"content": [], "isError": true}))).unwrap();
        assert!(result.is_error());
    }

    #[test]
    fn input_requests_and_tasks_are_told_apart_from_results() {
        let input = json!({
            "resultType": "input_required",
            "inputRequests": {"where": {"method": "roots/list"}},
            "requestState": "s"
        });
        for answer in [raw(input.clone()), typed(input)] {
            assert!(
                matches!(read(answer), Ok(Answer::InputRequired(asked)) if asked.request_state.as_deref() == Some("s"))
            );
        }
        let task = json!({
            "resultType": "task", "taskId": "t1", "status": "working",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"
        });
        for answer in [raw(task.clone()), typed(task)] {
            assert!(matches!(read(answer), Ok(Answer::Task(_))));
        }
        // Asking for nothing and carrying no state is no round (rmcp's type refuses it).
        let empty = read(raw(json!({"resultType": "input_required"})));
        assert!(
            matches!(
                &empty,
                Err(CallFailure::Refused(AnswerError::InputRequestUnreadable))
            ),
            "{empty:?}"
        );
        let handshake_task = raw(json!({"task": {"taskId": "t2", "status": "working"}}));
        assert!(
            matches!(read(handshake_task), Ok(Answer::HandshakeTask(task)) if task["taskId"] == "t2")
        );
    }

    #[test]
    fn another_kind_of_answer_is_not_a_tool_result() {
        let not_a_result = |answer| {
            matches!(
                tool_result(answer),
                Err(CallFailure::Invalid(InvalidToolResult::NotAToolResult))
            )
        };
        assert!(not_a_result(typed(json!({"tools": []}))));
        assert!(not_a_result(raw(json!([1]))));
        let task = raw(json!({"task": {"taskId": "t2", "status": "working"}}));
        assert!(not_a_result(task), "a task where none was asked for");
        assert!(tool_result(raw(json!({"resultType": "task"}))).is_err());
    }
}
