//! Answers handed to rmcp raw, for the runtime to read.
//!
//! rmcp decodes every answer into its typed results, which drop the fields they do
//! not model: a tool's `execution` (`tools/list`, 2025-11-25), a 2025-11-25 task's
//! `pollInterval` and `ttl` (`tasks/get`). The runtime reads those answers itself, so
//! each transport rewrites the answer to a handshake-era request of [`RAW_METHODS`]
//! ([`raw_request`]; over stdio and legacy SSE, a 2026-07-28 `tools/list` too:
//! [`raw_request_without_headers`]) before rmcp decodes it: its result's JSON text
//! goes, as one string, under one key, [`RAW_KEY`], which no typed result of rmcp
//! reads, so rmcp hands it over as a custom result, whole ([`raw_result`] takes the
//! text out). Only the answer's envelope is
//! rewritten; the result's bytes are kept as the server sent them.
//!
//! The result travels as a string, not as the JSON it is, so that rmcp decodes one
//! string instead of a tree of the whole result (twice: its untagged message types
//! buffer the answer before they find its type, then a `serde_json::Value` is built),
//! and the runtime reads the text straight into the types it wants: a listing of
//! thousands of tools is never held as a JSON tree.
//!
//! Invariants:
//! 1. Only an answer to a request of [`RAW_METHODS`] the runtime sent on this
//!    connection is rewritten, once; any other message passes untouched.
//! 2. A rewritten answer is the same answer: same id, and the result's text byte for
//!    byte.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
};

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, GetMeta, JsonRpcMessage, RequestId, ServerResult,
};
use serde::Deserialize;
use serde_json::{Value, value::RawValue};

use crate::sync::lock;

/// The requests whose answers are handed over raw.
pub(crate) const RAW_METHODS: [&str; 2] = ["tools/list", "tasks/get"];

/// The key a raw result is handed over under.
pub(crate) const RAW_KEY: &str = "mcp-runtime/raw-result";

/// Takes the raw result's JSON text out of `answer`, when the transport handed it
/// over raw.
pub(crate) fn raw_result(answer: &mut ServerResult) -> Option<String> {
    match answer {
        ServerResult::CustomResult(custom) => match &mut custom.0 {
            Value::Object(fields) if fields.len() == 1 => match fields.remove(RAW_KEY)? {
                Value::String(text) => Some(text),
                other => {
                    fields.insert(RAW_KEY.to_owned(), other);
                    None
                }
            },
            _ => None,
        },
        _ => None,
    }
}

/// The id of `message` when it is a request whose answer is handed over raw: one of
/// [`RAW_METHODS`] in a handshake revision. A 2026-07-28 request (it carries its
/// protocol version in `_meta`) is left to rmcp: that revision's tools have no
/// `execution` nor its tasks a `pollInterval`, and rmcp's Streamable HTTP transport
/// reads its `tools/list` answers for the tools' `x-mcp-header` parameters.
pub(crate) fn raw_request(message: &ClientJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Request(request)
            if RAW_METHODS.contains(&request.request.method())
                && request.request.get_meta().protocol_version().is_none() =>
        {
            Some(&request.id)
        }
        _ => None,
    }
}

/// As [`raw_request`], and a 2026-07-28 `tools/list` too: over a transport without
/// HTTP headers (stdio, legacy SSE) nothing of rmcp reads a listing, so the runtime
/// reads the tools from the answer's text in every revision (rmcp would buffer the
/// whole answer, decode it into its types, and the runtime write it out again).
pub(crate) fn raw_request_without_headers(message: &ClientJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Request(request) if request.request.method() == "tools/list" => {
            Some(&request.id)
        }
        _ => raw_request(message),
    }
}

/// The envelope of a message, its result unread.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Option<RequestId>,
    /// Present on the server's own requests, whose ids are the server's.
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
}

/// `message` (one JSON-RPC message as the server sent it), rewritten for rmcp to
/// hand its result over raw when it is the answer to a request whose id `expected`
/// takes (it is then forgotten, as it is when the answer is an error, which rmcp
/// reads); `None` for any other message.
pub(crate) fn rewrite(
    message: &[u8],
    expected: impl FnOnce(&RequestId) -> bool,
) -> Option<Vec<u8>> {
    let envelope: Envelope<'_> = serde_json::from_slice(message).ok()?;
    if envelope.method.is_some() {
        return None;
    }
    let id = envelope.id?;
    if !expected(&id) {
        return None;
    }
    let result = envelope.result?;
    let id = serde_json::to_string(&id).expect("an id serializes");
    let key = serde_json::to_string(RAW_KEY).expect("a key serializes");
    // Escaping the result as a string adds a byte per `"` and `\\`.
    let escapes = memchr::memchr2_iter(b'"', b'\\', result.get().as_bytes()).count();
    let mut rewritten = Vec::with_capacity(message.len() + escapes + 64);
    rewritten.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    rewritten.extend_from_slice(id.as_bytes());
    rewritten.extend_from_slice(br#","result":{"#);
    rewritten.extend_from_slice(key.as_bytes());
    rewritten.push(b':');
    serde_json::to_writer(&mut rewritten, result.get()).expect("a string serializes");
    rewritten.extend_from_slice(b"}}");
    Some(rewritten)
}

/// The requests in flight on one connection without HTTP headers (stdio, legacy
/// SSE) whose answers are handed over raw ([`raw_request_without_headers`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct RawAnswers(Arc<Mutex<HashSet<RequestId>>>);

impl RawAnswers {
    /// Notes a message the runtime sends: a request whose answer goes raw is expected
    /// back; a cancelled one no longer is.
    pub(crate) fn sent(&self, message: &ClientJsonRpcMessage) {
        if let Some(id) = raw_request_without_headers(message) {
            lock(&self.0).insert(id.clone());
        } else if let JsonRpcMessage::Notification(notification) = message
            && let ClientNotification::CancelledNotification(cancelled) = &notification.notification
            && let Some(id) = &cancelled.params.request_id
        {
            lock(&self.0).remove(id);
        }
    }

    /// Forgets request `id` (it could not be sent).
    pub(crate) fn forget(&self, id: &RequestId) {
        lock(&self.0).remove(id);
    }

    /// `message`, rewritten when it answers an expected request (see [`rewrite`]).
    pub(crate) fn rewrite(&self, message: &[u8]) -> Option<Vec<u8>> {
        if lock(&self.0).is_empty() {
            return None;
        }
        rewrite(message, |id| lock(&self.0).remove(id))
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ServerJsonRpcMessage;
    use serde_json::json;

    use super::*;

    fn decoded(bytes: &[u8]) -> ServerResult {
        match serde_json::from_slice::<ServerJsonRpcMessage>(bytes).unwrap() {
            JsonRpcMessage::Response(response) => response.result,
            other => panic!("not a response: {other:?}"),
        }
    }

    #[test]
    fn rmcp_hands_a_rewritten_answer_over_whole() {
        // Results rmcp reads as its own types, which drop what they do not model,
        // and a few more shapes: each comes back whole under the raw key.
        let results = [
            json!({"tools": [{"name": "t", "inputSchema": {}, "execution": {"taskSupport": "required"}}]}),
            json!({"taskId": "t1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "pollInterval": 700}),
            json!({"content": []}),
            json!({"resultType": "complete"}),
            json!({}),
            json!([1, 2]),
            json!("text"),
        ];
        for result in results {
            let message = json!({"jsonrpc": "2.0", "id": 7, "result": result}).to_string();
            let rewritten = rewrite(message.as_bytes(), |id| *id == RequestId::Number(7))
                .expect("an expected answer is rewritten");
            let text = raw_result(&mut decoded(&rewritten)).expect("handed over raw");
            assert_eq!(text, result.to_string(), "{result}");
        }
    }

    #[test]
    fn the_result_keeps_its_bytes_and_the_id_its_kind() {
        let message = br#"{"jsonrpc":"2.0","id":"a-1","result":{"n":1.000,"s":"\u00e9"}}"#;
        let rewritten = rewrite(message, |_| true).unwrap();
        assert_eq!(
            String::from_utf8(rewritten.clone()).unwrap(),
            r#"{"jsonrpc":"2.0","id":"a-1","result":{"mcp-runtime/raw-result":"{\"n\":1.000,\"s\":\"\\u00e9\"}"}}"#
        );
        assert_eq!(
            raw_result(&mut decoded(&rewritten)).unwrap(),
            r#"{"n":1.000,"s":"\u00e9"}"#,
            "the result's text, byte for byte"
        );
    }

    #[test]
    fn only_expected_answers_are_rewritten_once() {
        let answers = RawAnswers::default();
        let answer = br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#;
        assert_eq!(answers.rewrite(answer), None, "nothing is expected");
        let list = ClientJsonRpcMessage::request(
            rmcp::model::ClientRequest::ListToolsRequest(Default::default()),
            RequestId::Number(3),
        );
        answers.sent(&list);
        let call = ClientJsonRpcMessage::request(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
                rmcp::model::CallToolRequestParams::new("t"),
            )),
            RequestId::Number(4),
        );
        answers.sent(&call);
        let mut stateless = rmcp::model::ClientRequest::ListToolsRequest(Default::default());
        stateless
            .get_meta_mut()
            .set_protocol_version(rmcp::model::ProtocolVersion::V_2026_07_28);
        let stateless = ClientJsonRpcMessage::request(stateless, RequestId::Number(5));
        assert_eq!(
            raw_request(&stateless),
            None,
            "over HTTP, 2026-07-28 listings are rmcp's (it reads their x-mcp-header)"
        );
        answers.sent(&stateless);
        assert!(
            answers
                .rewrite(br#"{"jsonrpc":"2.0","id":5,"result":{"tools":[]}}"#)
                .is_some(),
            "without headers, a 2026-07-28 listing is read from its text too"
        );
        let mut stateless_task = rmcp::model::ClientRequest::GetTaskRequest(
            rmcp::model::GetTaskRequest::new(rmcp::model::GetTaskParams::new("t1")),
        );
        stateless_task
            .get_meta_mut()
            .set_protocol_version(rmcp::model::ProtocolVersion::V_2026_07_28);
        let stateless_task = ClientJsonRpcMessage::request(stateless_task, RequestId::Number(6));
        answers.sent(&stateless_task);
        assert_eq!(
            answers.rewrite(br#"{"jsonrpc":"2.0","id":6,"result":{"taskId":"t1"}}"#),
            None,
            "a 2026-07-28 task is rmcp's to read"
        );
        assert_eq!(
            answers.rewrite(br#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#),
            None,
            "a tools/call answer is rmcp's to read"
        );
        assert_eq!(
            answers.rewrite(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#),
            None
        );
        assert_eq!(
            answers.rewrite(br#"{"jsonrpc":"2.0","id":3,"method":"roots/list"}"#),
            None,
            "the server's own request with the same id is not an answer"
        );
        assert!(answers.rewrite(answer).is_some());
        assert_eq!(answers.rewrite(answer), None, "once");

        answers.sent(&list);
        assert_eq!(
            answers.rewrite(br#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}"#),
            None,
            "an error is rmcp's to read"
        );
        assert_eq!(
            answers.rewrite(answer),
            None,
            "and the request is forgotten"
        );
    }
}
