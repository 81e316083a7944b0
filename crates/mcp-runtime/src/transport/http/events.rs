//! The event streams that answer requests, and what is done to them before rmcp reads
//! them.
//!
//! A request's answer may come on an event stream: the one its `POST` was answered
//! with, or one that a `GET` resumed from an event id after that one broke (see
//! [`super::streams`]). Each goes through the same steps, so that an answer reads
//! the same on a resumed stream as on the first:
//! 1. the bytes of a `POST`'s stream: every event bounded by `max_message_bytes`
//!    ([`bounded_events`]), and an event that is not UTF-8 throughout, on which the
//!    SSE reader would fail the whole stream, replaced by what the runtime makes of
//!    it ([`text_events`]). A `GET`'s stream is read by rmcp's client, which bounds
//!    each event to the same limit;
//! 2. the events of the stream of request `R` ([`SplicingHttpClient::answering`]):
//!    made readable ([`refused::readable_events`]: a batch split, an answer to `R`
//!    that cannot be used replaced by its refusal), `R`'s answer rewritten for rmcp
//!    to hand it over raw when it goes raw ([`raw_events`]), an event over the limit
//!    answered with the error that says so ([`answer_oversized_event`]), and the
//!    stream watched for its loss before `R`'s answer ([`Streams::watch`]).
//!
//! Invariants:
//! 1. An event that is UTF-8 throughout passes [`text_events`] byte for byte, and
//!    only whole events are passed on, so the SSE reader sees the same events.
//! 2. An event that is not is never handed over as text: the answer to the request
//!    it holds becomes that request's refusal, saying what came; anything else of it
//!    but its id and `retry` is dropped (the id stays, to resume the stream from).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt, stream::BoxStream};
use rmcp::{
    model::{RequestId, ServerJsonRpcMessage},
    transport::streamable_http_client::SseError,
};
use sse_stream::Sse;

use super::SplicingHttpClient;
use crate::transport::{
    event_lines::EventEnds, framing::too_large, raw_answers::RawRequest, refused,
};

/// A request whose answer may come on an event stream: what the stream's steps need
/// of it.
#[derive(Debug, Clone)]
pub(crate) struct Answering {
    pub(crate) id: RequestId,
    /// How its answer is handed to rmcp raw, when it is ([`crate::transport::raw_answers`]).
    pub(crate) raw: Option<RawRequest>,
}

impl SplicingHttpClient {
    /// `events`, a stream of `request`'s answer (its `POST`'s, or one resumed after
    /// the event id `from`), through the steps of the module docs; `limit` is the
    /// size of the largest event read.
    pub(super) fn answering(
        &self,
        request: Answering,
        events: BoxStream<'static, Result<Sse, SseError>>,
        limit: usize,
        from: Option<String>,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        let events =
            refused::readable_events(events, self.server.clone(), Some(request.id.clone()));
        let events = match &request.raw {
            Some(raw) => raw_events(events, raw.clone()).boxed(),
            None => events.boxed(),
        };
        let error = too_large(&self.server, None, limit);
        let answer = ServerJsonRpcMessage::error(error, Some(request.id.clone()));
        let events = answer_oversized_event(events, limit, answer);
        self.streams.watch(request, from, events).boxed()
    }
}

/// `events`, the stream answering request `raw`, with the answer rewritten for rmcp
/// to hand it over raw ([`crate::transport::raw_answers`]). An event's data is text,
/// so the rewrite reads no answer that is not UTF-8 throughout (see
/// [`text_events`]).
pub(super) fn raw_events<E>(
    events: impl Stream<Item = Result<Sse, E>> + Send + 'static,
    raw: RawRequest,
) -> impl Stream<Item = Result<Sse, E>> + Send + 'static {
    let mut expected = Some(raw);
    events.map(move |event| {
        let mut event = event?;
        if let Some(raw) = &expected
            && let Some(data) = &event.data
            && let Some(rewritten) = raw.rewrite(data.as_bytes())
        {
            expected = None;
            event.data = Some(String::from_utf8(rewritten).expect("a rewrite of text is text"));
        }
        Ok(event)
    })
}

/// `events`, except that an event over `limit` ([`bounded_events`]) becomes `answer`,
/// and the stream ends there.
pub(super) fn answer_oversized_event(
    events: BoxStream<'static, Result<Sse, SseError>>,
    limit: usize,
    answer: ServerJsonRpcMessage,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut answer = Some(answer);
    events
        .scan((), move |(), event| {
            let event = match event {
                _ if answer.is_none() => None,
                Err(error) if event_too_large(&error) => {
                    tracing::debug!(limit, "an SSE event was over the limit");
                    let answer = answer.take().expect("checked above");
                    let data = serde_json::to_string(&answer).expect("a message serializes");
                    Some(Ok(Sse {
                        data: Some(data),
                        ..Sse::default()
                    }))
                }
                event => Some(event),
            };
            std::future::ready(event)
        })
        .boxed()
}

/// Whether `error` ends a stream because one event was over the limit: this module's
/// [`EventTooLarge`]. Every event stream, a `POST`'s or a `GET`'s, is read through
/// [`bounded_events`], so rmcp's own bound (a private type) is never what ends one.
pub(super) fn event_too_large(error: &SseError) -> bool {
    let SseError::Body(source) = error else {
        return false;
    };
    source
        .downcast_ref::<std::io::Error>()
        .and_then(|error| error.get_ref())
        .is_some_and(|error| error.is::<EventTooLarge>())
}

/// An SSE event larger than this was sent.
#[derive(Debug, thiserror::Error)]
#[error("the server sent an event larger than {limit} bytes")]
struct EventTooLarge {
    limit: usize,
}

/// `bytes`, failing once one SSE event (the bytes between blank lines, whichever line
/// ending ends them: [`EventEnds`]) grows past `limit`, so a server cannot grow this
/// process's memory without bound.
pub(super) fn bounded_events(
    bytes: impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
    limit: usize,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let mut event_len = 0usize;
    let mut lines = EventEnds::default();
    bytes.map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        for &byte in chunk.iter() {
            if lines.ends_event(byte) {
                event_len = 0;
            } else {
                event_len += 1;
            }
            if event_len > limit {
                return Err(std::io::Error::other(EventTooLarge { limit }));
            }
        }
        Ok(chunk)
    })
}

/// `bytes`, an event stream of `server` answering `request` (if it is a request's),
/// passed on in whole events, each event that is not UTF-8 throughout replaced (see
/// the module docs, invariants 1 and 2). An event is kept until it ends, so `bytes`
/// must be bounded ([`bounded_events`]); an event left unfinished when the stream
/// ends is dropped, as the SSE reader would.
pub(super) fn text_events<E: Send + 'static>(
    bytes: impl Stream<Item = Result<Bytes, E>> + Send + 'static,
    server: Arc<str>,
    request: Option<RequestId>,
) -> impl Stream<Item = Result<Bytes, E>> + Send + 'static {
    let mut events = TextEvents {
        server,
        request,
        pending: BytesMut::new(),
        lines: EventEnds::default(),
        pending_after_cr: false,
    };
    bytes
        .map(move |chunk| chunk.map(|chunk| events.push(&chunk)))
        .filter(|passed| std::future::ready(!matches!(passed, Ok(bytes) if bytes.is_empty())))
}

/// The state of [`text_events`].
struct TextEvents {
    server: Arc<str>,
    request: Option<RequestId>,
    /// The bytes of the event not yet ended.
    pending: BytesMut,
    /// Where the reading of the stream is, at the end of `pending`.
    lines: EventEnds,
    /// Whether the byte before `pending` was a CR (whose LF may start it).
    pending_after_cr: bool,
}

impl TextEvents {
    /// Reads `chunk`; returns the events it ended (empty when it ended none).
    fn push(&mut self, chunk: &[u8]) -> Bytes {
        let start = self.pending.len();
        let mut ended = None;
        for (at, &byte) in chunk.iter().enumerate() {
            if self.lines.ends_event(byte) {
                ended = Some((start + at + 1, byte == b'\r'));
            }
        }
        self.pending.extend_from_slice(chunk);
        let Some((end, after_cr)) = ended else {
            return Bytes::new();
        };
        let events = self.pending.split_to(end).freeze();
        let events_after_cr = std::mem::replace(&mut self.pending_after_cr, after_cr);
        // Events end at an ASCII byte, so the events are UTF-8 when their bytes are.
        if std::str::from_utf8(&events).is_ok() {
            return events;
        }
        let mut passed = Vec::with_capacity(events.len());
        let mut lines = EventEnds::after_cr(events_after_cr);
        let mut event_start = 0;
        for (at, &byte) in events.iter().enumerate() {
            if lines.ends_event(byte) {
                let event = &events[event_start..=at];
                match std::str::from_utf8(event) {
                    Ok(_) => passed.extend_from_slice(event),
                    Err(_) => passed.extend_from_slice(&self.replacement(event)),
                }
                event_start = at + 1;
            }
        }
        Bytes::from(passed)
    }

    /// What stands for `event`, an event that is not UTF-8 throughout (invariant 2).
    fn replacement(&self, event: &[u8]) -> Vec<u8> {
        let mut kind: Option<&[u8]> = None;
        let mut data: Option<Vec<u8>> = None;
        let mut kept = Vec::new();
        for line in event.split(|&byte| matches!(byte, b'\r' | b'\n')) {
            let (name, value) = match memchr::memchr(b':', line) {
                Some(colon) => (&line[..colon], &line[colon + 1..]),
                None => (line, &b""[..]),
            };
            let value = value.strip_prefix(b" ").unwrap_or(value);
            match name {
                // Data lines are joined with LF.
                b"data" => match &mut data {
                    Some(data) => {
                        data.push(b'\n');
                        data.extend_from_slice(value);
                    }
                    None => data = Some(value.to_vec()),
                },
                b"event" => kind = Some(value),
                b"id" if !value.contains(&0) && std::str::from_utf8(value).is_ok() => {
                    kept.extend_from_slice(b"id: ");
                    kept.extend_from_slice(value);
                    kept.push(b'\n');
                }
                b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                    kept.extend_from_slice(b"retry: ");
                    kept.extend_from_slice(value);
                    kept.push(b'\n');
                }
                _ => {}
            }
        }
        let is_message = kind.is_none_or(|kind| matches!(kind, b"" | b"message"));
        let refusal = data
            .filter(|_| is_message)
            .and_then(|data| refused::json_body(&self.server, &data, self.request.as_ref()))
            .and_then(|events| events.into_iter().next())
            .and_then(|event| event.data);
        match refusal {
            Some(refusal) => {
                kept.extend_from_slice(b"data: ");
                kept.extend_from_slice(refusal.as_bytes());
                kept.push(b'\n');
            }
            None => tracing::debug!(
                server = &*self.server,
                "ignoring an event that is not UTF-8 and answers no request in flight"
            ),
        }
        if !kept.is_empty() {
            kept.push(b'\n');
        }
        kept
    }
}

#[cfg(test)]
mod tests;
