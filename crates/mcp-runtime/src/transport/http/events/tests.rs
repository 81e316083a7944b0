use futures::StreamExt as _;

use super::*;
use crate::transport::error::MessageRefused;

/// What [`text_events`] passes on of `stream` sent in chunks of `size` bytes, for a
/// stream answering request 7, and the events the SSE reader reads of it.
async fn passed(stream: &[u8], size: usize) -> (Vec<u8>, Vec<Sse>) {
    let chunks: Vec<Result<Bytes, std::io::Error>> = stream
        .chunks(size)
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    let passed: Vec<Bytes> = text_events(
        futures::stream::iter(chunks),
        "web".into(),
        Some(RequestId::Number(7)),
    )
    .map(Result::unwrap)
    .collect()
    .await;
    assert!(passed.iter().all(|bytes| !bytes.is_empty()));
    let bytes = passed.concat();
    let events = sse_stream::SseStream::from_bytes_stream(futures::stream::iter(
        passed.into_iter().map(Ok::<_, std::io::Error>),
    ))
    .map(|event| event.expect("the SSE reader reads every event"))
    .collect()
    .await;
    (bytes, events)
}

#[tokio::test]
async fn a_stream_of_text_passes_byte_for_byte_in_whole_events() {
    let stream = b"id: 1\nretry: 300\ndata: \n\n: a comment\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"caf\xC3\xA9\"}\r\n\r\nevent: ping\rdata: x\r\rdata: unfinished";
    let whole = stream.len() - b"data: unfinished".len();
    for size in 1..=stream.len() {
        let (bytes, events) = passed(stream, size).await;
        assert_eq!(bytes, stream[..whole], "in chunks of {size}");
        assert_eq!(events.len(), 3, "in chunks of {size}");
    }
}

#[tokio::test]
async fn an_answer_that_is_not_utf8_becomes_its_refusal_and_other_such_events_go() {
    let answer = b"{\"note\":\"caf\xFF\",\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}";
    let stream = [
        &b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"\xFF\"}}\nid: n-1\n\n"[..],
        b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
        b"event: message\r\nid: e-\xFF\r\nid: e-2\r\ndata: ",
        answer,
        b"\r\n\r\n",
    ]
    .concat();
    for size in 1..=stream.len() {
        let (bytes, events) = passed(&stream, size).await;
        assert!(std::str::from_utf8(&bytes).is_ok(), "in chunks of {size}");
        assert_eq!(events.len(), 3, "in chunks of {size}: {events:?}");
        assert_eq!(events[0].id.as_deref(), Some("n-1"), "the id stays");
        assert_eq!(events[0].data, None, "a notification not UTF-8 goes");
        assert!(events[1].data.as_deref().unwrap().contains("progress"));
        assert_eq!(events[2].id.as_deref(), Some("e-2"));
        let refusal: ServerJsonRpcMessage =
            serde_json::from_str(events[2].data.as_deref().unwrap()).unwrap();
        let rmcp::model::JsonRpcMessage::Error(error) = refusal else {
            panic!("not a refusal: {refusal:?}");
        };
        assert_eq!(error.id, Some(RequestId::Number(7)));
        assert_eq!(
            refused::refusal(&error.error),
            Some(MessageRefused::NotUtf8 {
                server: "web".into(),
                offset: 12,
                sent: crate::transport::error::sent(answer),
            }),
            "in chunks of {size}"
        );
    }
}

#[tokio::test]
async fn an_answer_not_utf8_to_another_request_is_not_refused() {
    let stream = b"id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{\"a\":\"\xFF\"}}\n\n";
    let (bytes, events) = passed(stream, stream.len()).await;
    assert_eq!(bytes, b"id: 3\n\n");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data, None);
}

/// What [`bounded_events`] makes of `stream` under `limit`: the bytes, or whether it
/// failed on an event too large.
async fn bounded(stream: &str, limit: usize) -> Result<usize, bool> {
    let chunks = stream
        .as_bytes()
        .chunks(7)
        .map(|chunk| Ok::<_, reqwest::Error>(Bytes::copy_from_slice(chunk)))
        .collect::<Vec<_>>();
    let mut passed = 0;
    let mut events = std::pin::pin!(bounded_events(futures::stream::iter(chunks), limit));
    while let Some(chunk) = events.next().await {
        match chunk {
            Ok(chunk) => passed += chunk.len(),
            Err(error) => {
                return Err(error
                    .get_ref()
                    .is_some_and(|error| error.is::<EventTooLarge>()));
            }
        }
    }
    Ok(passed)
}

#[tokio::test]
async fn events_are_bounded_one_by_one_whichever_line_ending_ends_them() {
    for ending in ["\n", "\r\n", "\r"] {
        let event = format!("data: {}{ending}{ending}", "x".repeat(40));
        let limit = event.len();
        // Many events, each within the limit, together far over it.
        let stream = event.repeat(50);
        assert_eq!(
            bounded(&stream, limit).await,
            Ok(stream.len()),
            "{ending:?}"
        );
        // One event over the limit.
        let large = format!("data: {}{ending}{ending}", "x".repeat(limit));
        assert_eq!(bounded(&large, limit).await, Err(true), "{ending:?}");
    }
}
