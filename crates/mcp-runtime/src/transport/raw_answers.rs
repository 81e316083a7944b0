//! Answers handed to rmcp raw, for the runtime to read.
//!
//! rmcp decodes every answer into its typed results, which drop the fields they do
//! not model: a tool's `execution` (`tools/list`, 2025-11-25), a 2025-11-25 task's
//! `pollInterval` and `ttl` (`tasks/get`), and whatever a newer revision or an
//! extension adds to a tool result (`tools/call`, and a 2025-11-25 task's
//! `tasks/result`), a resource's contents (`resources/read`) or a prompt
//! (`prompts/get`), whose parts rmcp cannot even read when one is of a kind it does
//! not know, and to the resources and prompts listed. The runtime reads those answers itself, so each transport
//! rewrites the answer to a request of [`RAW_METHODS`] (in every revision), or of
//! [`HANDSHAKE_RAW_METHODS`] in a handshake revision ([`raw_request`]; over stdio
//! and legacy SSE, a 2026-07-28 `tools/list` too: [`raw_request_without_headers`])
//! before rmcp decodes it: its result's JSON text
//! goes, as one string, under one key, [`RAW_KEY`], which no typed result of rmcp
//! reads, so rmcp hands it over as a custom result, whole ([`raw_result`] takes the
//! text out). Only the answer's envelope is
//! rewritten; the result's bytes are kept as the server sent them.
//!
//! Over Streamable HTTP a 2026-07-28 `tools/list` answer is rmcp's to read too: its
//! transport keeps each tool's input schema for the `Mcp-Param-*` headers of later
//! calls, and leaves out the tools whose `x-mcp-header` annotations it refuses. So
//! that answer keeps its result for rmcp, and the result's text rides beside it, in
//! its `_meta` under [`RAW_KEY`] ([`RawRequest::over_http`], [`raw_result`]): rmcp's
//! `ListToolsResult` keeps `_meta` whole.
//!
//! The result travels as a string, not as the JSON it is, so that rmcp decodes one
//! string instead of a tree of the whole result (twice: its untagged message types
//! buffer the answer before they find its type, then a `serde_json::Value` is built),
//! and the runtime reads the text straight into the types it wants: a listing of
//! thousands of tools is never held as a JSON tree.
//!
//! Invariants:
//! 1. Only an answer to a request of [`RAW_METHODS`] or [`HANDSHAKE_RAW_METHODS`]
//!    the runtime sent on this connection is rewritten, once; any other message
//!    passes untouched.
//! 2. A rewritten answer is the same answer: same id, and the result's text byte for
//!    byte.
//! 3. A transport keeps its [`RawAnswers`] to the requests in flight: a request is
//!    forgotten once its answer came (rewritten, or an error), the transport refused
//!    that answer ([`RawAnswers::answered`]: too large, or one it cannot use), or
//!    the request was cancelled or could not be sent. So the set does not grow, and
//!    once it is empty messages pass without a look.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
};

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, GetMeta, JsonRpcMessage, RequestId, ServerResult,
};
#[cfg(feature = "http")]
use serde::Deserialize;
use serde_json::Value;
#[cfg(feature = "http")]
use serde_json::value::RawValue;

#[cfg(feature = "http")]
use super::answer_id::answers;
use super::answer_id::{Envelope, take_answered};
use crate::sync::lock;

/// The requests whose answers are handed over raw in every revision: tool results, a
/// resource's contents, a prompt and the lists of resources and prompts, which the
/// runtime hands to the host as the server returned them.
pub(crate) const RAW_METHODS: [&str; 7] = [
    "tools/call",
    "tasks/result",
    "resources/read",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// The requests whose answers are handed over raw in a handshake revision.
pub(crate) const HANDSHAKE_RAW_METHODS: [&str; 2] = ["tools/list", "tasks/get"];

/// The key a raw result is handed over under.
pub(crate) const RAW_KEY: &str = "mcp-runtime/raw-result";

/// Takes the raw result's JSON text out of `answer`, when the transport handed it
/// over raw, or beside the result (a 2026-07-28 `tools/list` over Streamable HTTP,
/// which rmcp decoded as its own type, or as a custom result when it could not).
pub(crate) fn raw_result(answer: &mut ServerResult) -> Option<String> {
    /// Takes the text under [`RAW_KEY`] out of `fields`.
    fn take(fields: &mut serde_json::Map<String, Value>) -> Option<String> {
        match fields.remove(RAW_KEY)? {
            Value::String(text) => Some(text),
            other => {
                fields.insert(RAW_KEY.to_owned(), other);
                None
            }
        }
    }
    match answer {
        ServerResult::CustomResult(custom) => match &mut custom.0 {
            Value::Object(fields) if fields.len() == 1 && fields.contains_key(RAW_KEY) => {
                take(fields)
            }
            Value::Object(fields) => {
                let Some(Value::Object(meta)) = fields.get_mut("_meta") else {
                    return None;
                };
                let text = take(meta)?;
                if meta.is_empty() {
                    fields.remove("_meta");
                }
                Some(text)
            }
            _ => None,
        },
        ServerResult::ListToolsResult(list) => {
            let text = take(&mut list.meta.as_mut()?.0)?;
            if list.meta.as_ref().is_some_and(|meta| meta.0.is_empty()) {
                list.meta = None;
            }
            Some(text)
        }
        _ => None,
    }
}

/// The id of `message` when it is a request whose answer is handed over raw: one of
/// [`RAW_METHODS`], or of [`HANDSHAKE_RAW_METHODS`] in a handshake revision. A
/// 2026-07-28 listing or task (the request carries its protocol version in `_meta`)
/// is left to rmcp: that revision's tools have no `execution` nor its tasks a
/// `pollInterval` (a task's result is a JSON object in rmcp's type, kept whole), and
/// rmcp's Streamable HTTP transport reads its `tools/list` answers for the tools'
/// `x-mcp-header` parameters. Nothing of rmcp reads a `tools/call` answer.
pub(crate) fn raw_request(message: &ClientJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Request(request) => {
            let method = request.request.method();
            let raw = RAW_METHODS.contains(&method)
                || (HANDSHAKE_RAW_METHODS.contains(&method)
                    && request.request.get_meta().protocol_version().is_none());
            raw.then_some(&request.id)
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

/// A request, sent over Streamable HTTP, whose answer is handed over raw.
#[cfg(feature = "http")]
#[derive(Debug, Clone)]
pub(crate) struct RawRequest {
    id: RequestId,
    /// Whether the result stays for rmcp, its text beside it (see the module docs).
    beside: bool,
}

#[cfg(feature = "http")]
impl RawRequest {
    /// The request `message` is, when its answer is handed over raw: one of
    /// [`raw_request`]'s, or a 2026-07-28 `tools/list`, whose result stays for rmcp.
    pub(crate) fn over_http(message: &ClientJsonRpcMessage) -> Option<Self> {
        if let Some(id) = raw_request(message) {
            return Some(Self {
                id: id.clone(),
                beside: false,
            });
        }
        match message {
            JsonRpcMessage::Request(request) if request.request.method() == "tools/list" => {
                Some(Self {
                    id: request.id.clone(),
                    beside: true,
                })
            }
            _ => None,
        }
    }

    /// `message`, rewritten when it answers this request (see [`rewrite`] and
    /// [`rewrite_beside`]).
    pub(crate) fn rewrite(&self, message: &[u8]) -> Option<Vec<u8>> {
        let expected = |answered: &RequestId| answers(&self.id, answered);
        match self.beside {
            false => rewrite(message, expected),
            true => rewrite_beside(message, expected),
        }
    }
}

/// `message` (one JSON-RPC message as the server sent it), rewritten for rmcp to
/// hand its result over raw when it is the answer to a request whose id `expected`
/// takes (it is then forgotten, as it is when the answer is an error, which rmcp
/// reads); `None` for any other message.
pub(crate) fn rewrite(
    message: &[u8],
    expected: impl FnOnce(&RequestId) -> bool,
) -> Option<Vec<u8>> {
    let envelope = Envelope::read(message)?;
    if !expected(envelope.answered()?) {
        return None;
    }
    let (id, result) = envelope.result()?;
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

/// `message`, rewritten as [`rewrite`] does, but with its result kept for rmcp and
/// the result's text beside it: in the result's `_meta`, under [`RAW_KEY`]. `None`
/// when it does not answer the request, or its result is not an object whose
/// `_meta`, if any, is one.
#[cfg(feature = "http")]
pub(crate) fn rewrite_beside(
    message: &[u8],
    expected: impl FnOnce(&RequestId) -> bool,
) -> Option<Vec<u8>> {
    /// A result's `_meta`, the rest unread.
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
    }
    let envelope = Envelope::read(message)?;
    if !expected(envelope.answered()?) {
        return None;
    }
    let (id, result) = envelope.result()?;
    let result = result.get();
    // A derived `Deserialize` also reads a struct from an array.
    if !result.trim_start().starts_with('{') {
        return None;
    }
    let meta = serde_json::from_str::<Meta<'_>>(result).ok()?.meta;
    let id = serde_json::to_string(&id).expect("an id serializes");
    let key = serde_json::to_string(RAW_KEY).expect("a key serializes");
    let text = serde_json::to_string(result).expect("a string serializes");
    let mut rewritten = Vec::with_capacity(message.len() + text.len() + 96);
    rewritten.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    rewritten.extend_from_slice(id.as_bytes());
    rewritten.extend_from_slice(br#","result":"#);
    match meta {
        // The result's members after a `_meta` of their own.
        None => {
            let members = result.trim_start()[1..].trim_start();
            rewritten.extend_from_slice(br#"{"_meta":{"#);
            rewritten.extend_from_slice(key.as_bytes());
            rewritten.push(b':');
            rewritten.extend_from_slice(text.as_bytes());
            rewritten.push(b'}');
            if !members.starts_with('}') {
                rewritten.push(b',');
            }
            rewritten.extend_from_slice(members.as_bytes());
        }
        // Rare: the text goes into the server's own `_meta`, through a JSON tree.
        Some(_) => {
            let mut fields: serde_json::Map<String, Value> = serde_json::from_str(result).ok()?;
            let Some(Value::Object(meta)) = fields.get_mut("_meta") else {
                return None;
            };
            meta.insert(RAW_KEY.to_owned(), Value::String(result.to_owned()));
            serde_json::to_writer(&mut rewritten, &fields).expect("a JSON object serializes");
        }
    }
    rewritten.push(b'}');
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

    /// Forgets the request an answer with id `answered` answers: the transport failed
    /// it without handing the answer over (too large, or one it cannot use).
    pub(crate) fn answered(&self, answered: &RequestId) {
        take_answered(&mut lock(&self.0), answered);
    }

    /// Whether no answer is expected: every message then passes without a look.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }

    /// `message`, rewritten when it answers an expected request (see [`rewrite`]).
    pub(crate) fn rewrite(&self, message: &[u8]) -> Option<Vec<u8>> {
        if lock(&self.0).is_empty() {
            return None;
        }
        rewrite(message, |id| take_answered(&mut lock(&self.0), id))
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

    #[cfg(feature = "http")]
    #[test]
    fn a_listing_beside_its_result_is_rmcps_type_and_keeps_its_text() {
        let results = [
            r#"{"tools":[{"name":"t","inputSchema":{},"futureField":1.000}],"nextCursor":"c"}"#,
            r#"{ "tools" : [] }"#,
            r#"{"tools":[],"_meta":{"k":"v"}}"#,
        ];
        for result in results {
            let message = format!(r#"{{"jsonrpc":"2.0","id":"l","result":{result}}}"#);
            let rewritten = rewrite_beside(message.as_bytes(), |id| {
                *id == RequestId::String("l".into())
            })
            .expect("an expected answer is rewritten");
            let mut answer = decoded(&rewritten);
            assert!(
                matches!(answer, ServerResult::ListToolsResult(_)),
                "rmcp reads its own type: {answer:?}"
            );
            assert_eq!(
                raw_result(&mut answer).as_deref(),
                Some(result),
                "byte for byte"
            );
            if let ServerResult::ListToolsResult(list) = &answer {
                let meta = list.meta.as_ref().map(|meta| meta.0.clone());
                let expected = result.contains("_meta").then(|| json!({"k": "v"}));
                assert_eq!(
                    meta.map(Value::Object),
                    expected,
                    "the server's own `_meta` stays, the text is taken out"
                );
            }
        }
        // What rmcp cannot read as a listing keeps its text beside it too.
        let message = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":7}]}}"#;
        let mut answer = decoded(&rewrite_beside(message, |_| true).unwrap());
        assert!(
            matches!(answer, ServerResult::CustomResult(_)),
            "{answer:?}"
        );
        assert_eq!(
            raw_result(&mut answer).as_deref(),
            Some(r#"{"tools":[{"name":7}]}"#)
        );
        for not_an_object in [
            &br#"{"jsonrpc":"2.0","id":1,"result":[1]}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{"_meta":5}}"#,
        ] {
            assert_eq!(rewrite_beside(not_an_object, |_| true), None);
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn over_http_a_2026_07_28_listing_goes_beside_and_a_call_whole() {
        let stateless = |request: rmcp::model::ClientRequest, id| {
            let mut request = request;
            request
                .get_meta_mut()
                .set_protocol_version(rmcp::model::ProtocolVersion::V_2026_07_28);
            ClientJsonRpcMessage::request(request, RequestId::Number(id))
        };
        let list = stateless(
            rmcp::model::ClientRequest::ListToolsRequest(Default::default()),
            1,
        );
        let raw = RawRequest::over_http(&list).expect("a listing goes raw");
        let answer = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
        assert!(matches!(
            decoded(&raw.rewrite(answer).unwrap()),
            ServerResult::ListToolsResult(_)
        ));
        let call = stateless(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
                rmcp::model::CallToolRequestParams::new("t"),
            )),
            2,
        );
        let raw = RawRequest::over_http(&call).expect("a call goes raw");
        let answer = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"video"}]}}"#;
        let mut answer = decoded(&raw.rewrite(answer).unwrap());
        assert_eq!(
            raw_result(&mut answer).as_deref(),
            Some(r#"{"content":[{"type":"video"}]}"#)
        );
        assert_eq!(
            raw.rewrite(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            None,
            "another request's answer"
        );
    }

    #[cfg(feature = "http")]
    #[test]
    fn an_answer_rmcp_hands_to_the_request_goes_raw_and_an_array_answers_nothing() {
        let answers = RawAnswers::default();
        let call = |id| {
            ClientJsonRpcMessage::request(
                rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
                    rmcp::model::CallToolRequestParams::new("t"),
                )),
                RequestId::Number(id),
            )
        };
        answers.sent(&call(7));
        assert_eq!(
            answers.rewrite(br#"[7,null,{"content":[]}]"#),
            None,
            "an array is no answer"
        );
        let rewritten = answers
            .rewrite(br#"{"jsonrpc":"2.0","id":"7","result":{"content":[]}}"#)
            .expect("rmcp hands an answer with the id's digits to request 7");
        assert_eq!(
            raw_result(&mut decoded(&rewritten)).as_deref(),
            Some(r#"{"content":[]}"#)
        );
        assert!(answers.is_empty(), "the request is no longer expected");

        answers.sent(&call(8));
        answers.answered(&RequestId::String("8".into()));
        assert!(answers.is_empty(), "an answer failed by the transport");
        let over_http = RawRequest::over_http(&call(9)).unwrap();
        assert!(
            over_http
                .rewrite(br#"{"jsonrpc":"2.0","id":"9","result":{}}"#)
                .is_some()
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
        assert!(
            answers
                .rewrite(br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"video"}]}}"#)
                .is_some(),
            "a tools/call answer is the runtime's to read"
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
