//! The event streams and JSON bodies of Streamable HTTP answers, made readable as
//! [`super`] reads a stdio line: a batch split into its elements, and an answer to the
//! request posted that cannot be used replaced by its refusal.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use rmcp::model::RequestId;
use serde_json::value::RawValue;
use sse_stream::Sse;

use super::{Unread, answer, read};
use crate::transport::{answer_id::answers, error::MessageRefused};

/// The events a Streamable HTTP `POST` answered with a JSON `body` that rmcp cannot
/// read stand for, when it stands for any: the elements of a batch, or the refusal of
/// an answer to `request`, the request posted. `None` leaves the body to fail as it
/// is.
pub(crate) fn json_body(
    server: &str,
    body: &[u8],
    request: Option<&RequestId>,
) -> Option<Vec<Sse>> {
    match read(server, body) {
        Unread::Batch(elements) => Some(
            elements
                .iter()
                .map(|element| event(element.get()))
                .collect(),
        ),
        Unread::Answer { id, refused } if request.is_some_and(|sent| answers(sent, &id)) => {
            tracing::debug!(server, %id, "{refused}");
            Some(vec![event(&refusal_text(&refused, id))])
        }
        _ => None,
    }
}

/// `events`, the event stream a Streamable HTTP `POST` of `request` answered with,
/// readable: a `message` event that rmcp cannot read, which rmcp would skip, is split
/// when it is a batch, and when it answers `request`, replaced by its refusal. Every
/// other event passes unchanged.
///
/// An event is read whole only when a quick look finds it is no JSON-RPC message:
/// not JSON, no `"jsonrpc": "2.0"`, or a response without one `result` object or
/// `error` (the look builds no tree of the event).
pub(crate) fn readable_events<E: Send + 'static>(
    events: impl Stream<Item = Result<Sse, E>> + Send + 'static,
    server: Arc<str>,
    request: Option<RequestId>,
) -> impl Stream<Item = Result<Sse, E>> + Send + 'static {
    events.flat_map(move |event| {
        let events: Vec<Result<Sse, E>> = match event {
            Ok(event) => readable_event(&server, request.as_ref(), event)
                .into_iter()
                .map(Ok)
                .collect(),
            Err(error) => vec![Err(error)],
        };
        futures::stream::iter(events)
    })
}

/// The events `event` stands for (see [`readable_events`]).
fn readable_event(server: &str, request: Option<&RequestId>, event: Sse) -> Vec<Sse> {
    let is_message = matches!(event.event.as_deref(), None | Some("" | "message"));
    let Some(data) = event
        .data
        .as_deref()
        .filter(|data| is_message && !looks_readable(data))
    else {
        return vec![event];
    };
    match read(server, data.as_bytes()) {
        Unread::Batch(elements) => {
            let mut events: Vec<Sse> = elements
                .iter()
                .map(|element| self::event(element.get()))
                .collect();
            // The event's id stays on its last message, for a stream resumed after it.
            if let Some(last) = events.last_mut() {
                last.id = event.id;
            }
            events
        }
        Unread::Answer { id, refused } if request.is_some_and(|sent| answers(sent, &id)) => {
            tracing::debug!(server, %id, "{refused}");
            vec![Sse {
                data: Some(refusal_text(&refused, id)),
                ..event
            }]
        }
        _ => vec![event],
    }
}

/// A `message` event holding `data`.
fn event(data: &str) -> Sse {
    Sse {
        event: None,
        data: Some(data.to_owned()),
        id: None,
        retry: None,
    }
}

/// The JSON text of the error that fails request `id` with `refused`.
fn refusal_text(refused: &MessageRefused, id: RequestId) -> String {
    serde_json::to_string(&answer(refused, id)).expect("a JSON-RPC error serializes")
}

/// The parts of a JSON-RPC message a quick look reads, borrowed from its text.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// Whether `data` looks like a JSON-RPC message rmcp reads (see [`readable_events`]).
fn looks_readable(data: &str) -> bool {
    let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(data) else {
        return false;
    };
    let object = |value: &RawValue| value.get().starts_with('{');
    envelope.jsonrpc.map(RawValue::get) == Some("\"2.0\"")
        && match (envelope.method, envelope.result, envelope.error) {
            (Some(_), None, None) => true,
            (None, Some(result), None) => object(result),
            (None, None, Some(error)) => object(error),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ServerJsonRpcMessage;

    use super::*;

    fn data(events: &[Sse]) -> Vec<&str> {
        events
            .iter()
            .map(|event| event.data.as_deref().unwrap())
            .collect()
    }

    #[tokio::test]
    async fn an_event_stream_is_made_readable_and_nothing_else_changes() {
        let incoming = [
            event(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#),
            Sse {
                id: Some("7".into()),
                ..event(r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#)
            },
            Sse {
                event: Some("ping".into()),
                ..event("not json")
            },
            event("not json"),
            event(r#"{"jsonrpc":"2.0","id":8}"#),
            event(r#"{"jsonrpc":"2.0","id":"5"}"#),
        ];
        let events: Vec<Sse> = readable_events(
            futures::stream::iter(incoming.into_iter().map(Ok::<_, ()>)),
            "srv".into(),
            Some(RequestId::Number(5)),
        )
        .map(Result::unwrap)
        .collect()
        .await;
        let data = data(&events);
        assert_eq!(
            data[..6],
            [
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
                r#"{"jsonrpc":"2.0","method":"a"}"#,
                r#"{"jsonrpc":"2.0","method":"b"}"#,
                "not json",
                "not json",
                r#"{"jsonrpc":"2.0","id":8}"#,
            ]
        );
        assert_eq!(events[1].id, None);
        assert_eq!(
            events[2].id.as_deref(),
            Some("7"),
            "the event's id stays on its last message"
        );
        assert_eq!(events[3].event.as_deref(), Some("ping"));
        let refusal: ServerJsonRpcMessage = serde_json::from_str(data[6]).unwrap();
        let rmcp::model::JsonRpcMessage::Error(error) = refusal else {
            panic!("{refusal:?}");
        };
        assert_eq!(error.id, Some(RequestId::String("5".into())));
        assert!(matches!(
            crate::transport::refused::refusal(&error.error),
            Some(MessageRefused::Unreadable { problem, .. }) if problem == "it has neither `result` nor `error`"
        ));
    }

    #[test]
    fn a_json_body_stands_for_its_batch_or_its_refusal() {
        let batch = json_body("srv", br#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#, None).unwrap();
        assert_eq!(data(&batch), [r#"{"jsonrpc":"2.0","id":1,"result":{}}"#]);
        let refused = json_body(
            "srv",
            br#"{"jsonrpc":"2.0","id":1}"#,
            Some(&RequestId::Number(1)),
        );
        assert!(
            refused.unwrap()[0]
                .data
                .as_deref()
                .unwrap()
                .contains("neither")
        );
        assert!(
            json_body(
                "srv",
                br#"{"jsonrpc":"2.0","id":2}"#,
                Some(&RequestId::Number(1))
            )
            .is_none()
        );
        assert!(json_body("srv", b"<html>", Some(&RequestId::Number(1))).is_none());
    }
}
