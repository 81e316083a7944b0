//! What a transport does with a message from the server that rmcp's model cannot
//! read, and how it fails the request such a message answered.
//!
//! Every transport reads the server's messages before rmcp does (a stdio line, a
//! legacy SSE event, a Streamable HTTP body or event). Text that rmcp cannot read is
//! one of three things, told apart by [`read`]:
//! 1. noise that is not a message at all (a banner line on stdout that is not JSON,
//!    a structured log line, a JSON value without an `id`): skipped, as the
//!    specification leaves a client free to;
//! 2. a JSON-RPC batch (an array): the 2025-03-26 revision, which mcp-runtime speaks,
//!    lets a server send batches and obliges a client to take them, and its
//!    elements are messages as unambiguous as lines of their own; so a batch is
//!    split and each element read as if it had come alone, whatever revision the
//!    server speaks (an element that is a batch again is noise);
//! 3. an answer to a request in flight that cannot be used (not UTF-8, not a
//!    response rmcp can read): the request fails at once with a [`MessageRefused`]
//!    that says what came and why, rather than waiting out its timeout.
//!
//! The protocol engine learns of a refusal as a JSON-RPC error for the request's id
//! (the only way a transport can end one request), marked so that the connection
//! reads it back as the client's refusal and never as the server's error
//! ([`refusal`]): the mark holds a number drawn once per process, which a server
//! cannot know, so a server's own error is never taken for the client's.

use std::sync::LazyLock;

use rmcp::model::{ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use serde_json::{Value, value::RawValue};

use crate::transport::error::{MessageRefused, sent};

/// The key of the mark in a refusal's `data`.
const MARK: &str = "mcp-runtime/refused";

/// The number in every mark this process makes (see the module docs).
static NONCE: LazyLock<u64> = LazyLock::new(|| {
    let mut bytes = [0; 8];
    // Without the system's randomness, a server could at worst have its error
    // worded as the client's: the mark is never authority.
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
});

/// The JSON-RPC error that fails request `id` with `refused` (see [`refusal`]).
pub(crate) fn answer(refused: &MessageRefused, id: RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(error_data(refused), Some(id))
}

/// `refused` as the error rmcp hands to the request: its message is the refusal's
/// text, its `data` the mark.
pub(crate) fn error_data(refused: &MessageRefused) -> ErrorData {
    let data = serde_json::json!({ MARK: { "nonce": *NONCE, "refused": refused } });
    ErrorData::new(ErrorCode::INTERNAL_ERROR, refused.to_string(), Some(data))
}

/// The refusal `error` carries, when a transport of this process made it.
pub(crate) fn refusal(error: &ErrorData) -> Option<MessageRefused> {
    let mark = error.data.as_ref()?.get(MARK)?;
    if mark.get("nonce")?.as_u64()? != *NONCE {
        return None;
    }
    serde_json::from_value(mark.get("refused")?.clone()).ok()
}

/// What a message rmcp cannot read is (see the module docs).
#[derive(Debug)]
pub(crate) enum Unread {
    /// Not a message: skip it.
    Noise,
    /// The start of a JSON value that goes on past its end (a message printed over
    /// several lines, over stdio).
    Incomplete,
    /// A batch: its elements, each to be read as a message of its own.
    Batch(Vec<Box<RawValue>>),
    /// A request from the server that cannot be read: to be refused as an invalid
    /// request.
    Request(RequestId),
    /// An answer to request `id` that cannot be used.
    Answer {
        id: RequestId,
        refused: MessageRefused,
    },
}

/// Reads `text`, a message of `server` that rmcp's model cannot read.
pub(crate) fn read(server: &str, text: &[u8]) -> Unread {
    let (value, offset) = match std::str::from_utf8(text) {
        Ok(utf8) => match serde_json::from_str::<Value>(utf8) {
            Ok(value) => (value, None),
            Err(error) if error.is_eof() && opens_a_value(text) => return Unread::Incomplete,
            Err(_) => return Unread::Noise,
        },
        // Read as far as it goes, to find whether it answers a request.
        Err(error) => match serde_json::from_str(&String::from_utf8_lossy(text)) {
            Ok(value) => (value, Some(error.valid_up_to())),
            Err(_) => return Unread::Noise,
        },
    };
    if value.is_array() && offset.is_none() {
        return match serde_json::from_slice::<Vec<Box<RawValue>>>(text) {
            Ok(elements) => Unread::Batch(elements),
            Err(_) => Unread::Noise,
        };
    }
    let Some(id) = value
        .get("id")
        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok())
    else {
        return Unread::Noise;
    };
    if value.get("method").is_some() {
        return Unread::Request(id);
    }
    let server = server.to_owned();
    let sent = sent(text);
    let refused = match offset {
        Some(offset) => MessageRefused::NotUtf8 {
            server,
            offset,
            sent,
        },
        None => MessageRefused::Unreadable {
            server,
            problem: problem(&value),
            sent,
        },
    };
    Unread::Answer { id, refused }
}

/// Whether `text` starts a JSON object or array.
fn opens_a_value(text: &[u8]) -> bool {
    matches!(
        text.iter().find(|byte| !byte.is_ascii_whitespace()),
        Some(b'{' | b'[')
    )
}

/// What is wrong with `answer`, an object with an `id` and no `method` that rmcp's
/// model does not read as a response.
fn problem(answer: &Value) -> String {
    let kind = crate::json::kind;
    if answer.get("jsonrpc") != Some(&Value::from("2.0")) {
        return "its `jsonrpc` is not `\"2.0\"`".to_owned();
    }
    match (answer.get("result"), answer.get("error")) {
        (Some(_), Some(_)) => "it has both `result` and `error`".to_owned(),
        (None, None) => "it has neither `result` nor `error`".to_owned(),
        (Some(result), None) if !result.is_object() => {
            format!("its `result` is {}, not an object", kind(result))
        }
        (None, Some(error)) => match serde_json::from_value::<ErrorData>(error.clone()) {
            Ok(_) => "it is not a JSON-RPC response".to_owned(),
            Err(why) => format!(
                "its `error` is not a JSON-RPC error: {}",
                crate::redact::server_text(&why.to_string())
            ),
        },
        (Some(_), None) => "it is not a JSON-RPC response".to_owned(),
    }
}

/// The same for the events of an HTTP answer: read over Streamable HTTP only.
#[cfg(feature = "http")]
mod events;
#[cfg(feature = "http")]
pub(crate) use self::events::{json_body, readable_events};

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &[u8]) -> MessageRefused {
        match read("srv", text) {
            Unread::Answer { id, refused } => {
                assert_eq!(id, RequestId::Number(7));
                refused
            }
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn noise_is_told_from_answers_that_cannot_be_used() {
        for noise in [
            &b"this line is not JSON-RPC"[..],
            b"[INFO] listening on stdio",
            b"{broken",
            b"{\"level\":\"info\",\"msg\":\"started\"}",
            b"42",
            b"caf\xFF",
        ] {
            assert!(matches!(read("srv", noise), Unread::Noise), "{noise:?}");
        }
        assert!(matches!(read("srv", b"{"), Unread::Incomplete));
        assert!(matches!(
            read("srv", b"  {\"jsonrpc\": \"2.0\","),
            Unread::Incomplete
        ));
        assert!(matches!(
            read(
                "srv",
                br#"{"jsonrpc":"2.0","id":3,"method":"x","params":4}"#
            ),
            Unread::Request(RequestId::Number(3))
        ));
    }

    #[test]
    fn an_answer_that_is_not_utf8_names_the_offset_and_shows_it() {
        let refused = refused(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"name\":\"caf\xFF\"}}");
        assert_eq!(
            refused,
            MessageRefused::NotUtf8 {
                server: "srv".into(),
                offset: 45,
                sent: r#"{"jsonrpc":"2.0","id":7,"result":{"name":"caf\xFF"}}"#.into(),
            }
        );
    }

    #[test]
    fn an_unreadable_answer_says_what_is_wrong() {
        let problem = |text: &str| match refused(text.as_bytes()) {
            MessageRefused::Unreadable { problem, .. } => problem,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            problem(r#"{"jsonrpc":"2.0","id":7,"result":42}"#),
            "its `result` is a number, not an object"
        );
        assert_eq!(
            problem(r#"{"jsonrpc":"1.0","id":7,"result":{}}"#),
            "its `jsonrpc` is not `\"2.0\"`"
        );
        assert_eq!(
            problem(r#"{"jsonrpc":"2.0","id":7}"#),
            "it has neither `result` nor `error`"
        );
        assert!(
            problem(r#"{"jsonrpc":"2.0","id":7,"error":{"code":"x"}}"#)
                .starts_with("its `error` is not a JSON-RPC error: ")
        );
    }

    #[test]
    fn a_batch_is_split_into_its_elements_as_sent() {
        let Unread::Batch(elements) = read("srv", br#"[{"id":1,"n":1.50}, {"id":2}]"#) else {
            panic!("not a batch");
        };
        let texts: Vec<&str> = elements.iter().map(|element| element.get()).collect();
        assert_eq!(texts, [r#"{"id":1,"n":1.50}"#, r#"{"id":2}"#]);
    }

    #[test]
    fn only_this_process_s_mark_is_read_as_a_refusal() {
        let refused = MessageRefused::TooLarge {
            server: "srv".into(),
            size: Some(10),
            limit: 5,
        };
        let error = error_data(&refused);
        assert_eq!(error.message, refused.to_string());
        assert_eq!(super::refusal(&error), Some(refused));

        let mut forged = error.clone();
        forged.data = Some(
            serde_json::json!({ MARK: { "nonce": NONCE.wrapping_add(1), "refused": forged.data.unwrap()[MARK]["refused"] } }),
        );
        assert_eq!(super::refusal(&forged), None);
        assert_eq!(super::refusal(&ErrorData::internal_error("x", None)), None);
    }
}
