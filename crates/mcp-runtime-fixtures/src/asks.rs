//! Tools that ask the client something (`--asks`): `ask` (elicitation), `roots`
//! (`roots/list`) and `sample` (`sampling/createMessage`), each answering with what
//! the client answered, as structured content; and the resource `fixture://asked`
//! (`--asking-resource`), whose read asks as `ask` does and answers with the
//! client's answer as its text.
//!
//! A handshake-era client is asked with a request of the server's own, sent while
//! the call waits; a 2026-07-28 client gets an `input_required` answer naming the request under the key
//! `asked`, and the call sent again with `inputResponses` is answered with it.

#![allow(
    deprecated,
    reason = "rmcp marks sampling and roots deprecated (SEP-2577); the fixture still asks for them"
)]

use std::sync::Arc;

use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        CreateMessageRequestParams, ElicitRequestParams, JsonObject, ProgressNotificationParam,
        ProgressToken, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        Resource, ResourceContents, Tool,
    },
    service::Peer,
};
use serde_json::{Value, json};

/// The key of the input request in an `input_required` answer.
const ASKED: &str = "asked";

/// The tools, in their listed order.
pub(crate) fn tools() -> Vec<Tool> {
    let object = |value: Value| match value {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("a schema literal is an object"),
    };
    vec![
        Tool::new(
            "ask",
            "Ask the person for a name and a count (form elicitation), with defaults; \
             answers with the client's answer",
            object(json!({ "type": "object", "properties": {
                "message": { "type": "string" }
            }})),
        ),
        Tool::new(
            "roots",
            "Ask the client for its roots; answers with them",
            object(json!({ "type": "object", "properties": {} })),
        ),
        Tool::new(
            "sample",
            "Ask the client's model to answer a prompt (offering it the tool `lookup` when \
             `tools`); answers with its message",
            object(json!({ "type": "object", "properties": {
                "prompt": { "type": "string" },
                "tools": { "type": "boolean" }
            }})),
        ),
    ]
}

/// The request `tool` sends, as its JSON-RPC method and params; `None` for another tool.
fn request(tool: &str, arguments: &JsonObject) -> Option<(&'static str, Value)> {
    let text = |key: &str, default: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_owned()
    };
    match tool {
        "ask" => Some((
            "elicitation/create",
            json!({
                "mode": "form",
                "message": text("message", "Who is asking, and how many?"),
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "title": "Name", "default": "fixture" },
                        "count": { "type": "integer", "minimum": 0, "default": 3 },
                        "urgent": { "type": "boolean", "default": false }
                    },
                    "required": ["name"]
                }
            }),
        )),
        "roots" => Some(("roots/list", Value::Null)),
        "sample" => {
            let mut params = json!({
                "messages": [{ "role": "user", "content": {
                    "type": "text", "text": text("prompt", "Say hello") } }],
                "maxTokens": 64
            });
            // The tool-use fields of 2025-11-25: one tool the model may call.
            if arguments.get("tools").and_then(Value::as_bool) == Some(true) {
                params["tools"] = json!([{
                    "name": "lookup",
                    "description": "Look a word up",
                    "inputSchema": { "type": "object", "properties": {
                        "word": { "type": "string" } } }
                }]);
                params["toolChoice"] = json!({ "mode": "auto" });
            }
            Some(("sampling/createMessage", params))
        }
        _ => None,
    }
}

/// Answers a call of one of the tools, made in a revision without server requests
/// when `stateless`; `None` for another tool. A handshake-era call with a progress
/// `token` hears one report once its question is answered: `answered`.
pub(crate) async fn call(
    request: &CallToolRequestParams,
    peer: &Peer<RoleServer>,
    stateless: bool,
    token: Option<ProgressToken>,
) -> Option<Result<CallToolResponse, McpError>> {
    let arguments = request.arguments.clone().unwrap_or_default();
    let (method, params) = self::request(&request.name, &arguments)?;
    if stateless {
        return Some(answer_in_rounds(request, method, params));
    }
    let answered = ask(peer, method, params).await;
    if let (Ok(_), Some(token)) = (&answered, token) {
        let report = ProgressNotificationParam::new(token, 1.0)
            .with_total(1.0)
            .with_message("answered");
        let _ = peer.notify_progress(report).await;
    }
    Some(answered.map(CallToolResponse::from))
}

/// The resource whose read asks first.
pub(crate) const ASKING_RESOURCE: &str = "fixture://asked";

/// [`ASKING_RESOURCE`], as listed.
pub(crate) fn resource() -> Resource {
    let mut resource = Resource::new(ASKING_RESOURCE, "asked");
    resource.mime_type = Some("application/json".into());
    resource
}

/// Reads [`ASKING_RESOURCE`]: asks as `ask` does (under 2026-07-28 in rounds, else
/// with a request of its own), then answers with the client's answer as the text.
pub(crate) async fn read(
    request: &ReadResourceRequestParams,
    peer: &Peer<RoleServer>,
    stateless: bool,
) -> Result<ReadResourceResponse, McpError> {
    let (method, params) = self::request("ask", &JsonObject::new()).expect("`ask` asks");
    let answer = if stateless {
        match request
            .input_responses
            .as_ref()
            .and_then(|responses| responses.get(ASKED))
        {
            Some(answer) => answer.clone(),
            None => {
                let asked = json!({
                    "resultType": "input_required",
                    "inputRequests": { ASKED: { "method": method, "params": params } },
                    "requestState": "fixture-asked",
                });
                return serde_json::from_value(asked)
                    .map(ReadResourceResponse::InputRequired)
                    .map_err(|error| McpError::internal_error(error.to_string(), None));
            }
        }
    } else {
        ask(peer, method, params)
            .await?
            .structured_content
            .unwrap_or_default()
    };
    Ok(ReadResourceResult::new(vec![ResourceContents::text(
        answer.to_string(),
        ASKING_RESOURCE,
    )])
    .into())
}

/// Under 2026-07-28: the answer given with the retry, else the question.
fn answer_in_rounds(
    request: &CallToolRequestParams,
    method: &str,
    params: Value,
) -> Result<CallToolResponse, McpError> {
    if let Some(answer) = request
        .input_responses
        .as_ref()
        .and_then(|responses| responses.get(ASKED))
    {
        return Ok(answered(answer.clone()).into());
    }
    let mut asked = json!({ "method": method });
    if !params.is_null() {
        asked["params"] = params;
    }
    let result = json!({
        "resultType": "input_required",
        "inputRequests": { ASKED: asked },
        "requestState": "fixture-asked",
    });
    serde_json::from_value(result)
        .map(CallToolResponse::InputRequired)
        .map_err(|error| McpError::internal_error(error.to_string(), None))
}

/// Under the handshake revisions: a request of the server's own.
async fn ask(
    peer: &Peer<RoleServer>,
    method: &str,
    params: Value,
) -> Result<CallToolResult, McpError> {
    let failed = |error: rmcp::ServiceError| {
        McpError::internal_error(format!("the client did not answer: {error}"), None)
    };
    let invalid = |error: serde_json::Error| McpError::internal_error(error.to_string(), None);
    let answer = match method {
        "elicitation/create" => {
            let params: ElicitRequestParams = serde_json::from_value(params).map_err(invalid)?;
            serde_json::to_value(peer.create_elicitation(params).await.map_err(failed)?)
        }
        "roots/list" => serde_json::to_value(peer.list_roots().await.map_err(failed)?),
        _ => {
            let params: CreateMessageRequestParams =
                serde_json::from_value(params).map_err(invalid)?;
            serde_json::to_value(peer.create_message(params).await.map_err(failed)?)
        }
    };
    Ok(answered(answer.map_err(invalid)?))
}

/// The tool's result: the client's answer as structured content and as text.
fn answered(answer: Value) -> CallToolResult {
    let mut result = CallToolResult::structured(answer.clone());
    result.content = vec![ContentBlock::text(answer.to_string())];
    result
}
