//! Spoiled answers over Streamable HTTP (`--mangle-answer` with `--http`): rmcp's
//! answer to a request of a mangled method is read whole, and the answer it holds is
//! sent again spoiled, as [`crate::raw`] spoils a line over stdio, in an event
//! stream of one event (each line of the spoiled answer a `data` line) or, with
//! `--http-json-answers`, as a JSON body.
//!
//! Only the spoilings that make sense of an answer's bytes are taken over HTTP
//! ([`over_http`]): not UTF-8, over several lines, in a batch.

use bytes::Bytes;
use http::{Response, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::Body;
use crate::raw::{self, Mangle};

/// Whether `mangle` can spoil an answer over HTTP (see the module docs).
pub fn over_http(mangle: Mangle) -> bool {
    matches!(
        mangle,
        Mangle::NotUtf8 | Mangle::SeveralLines | Mangle::Batch
    )
}

/// `response`, rmcp's answer to request `id`, with the answer it holds spoiled as
/// `mangle`: as a JSON body when `json`, else as an event stream. A response that
/// holds no answer to `id` is sent as it was.
pub async fn answer(
    response: Response<Body>,
    id: &Value,
    mangle: Mangle,
    json: bool,
) -> Response<Body> {
    let (mut parts, body) = response.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let Some(line) = answer_line(&body, id) else {
        return Response::from_parts(parts, Full::new(body).boxed());
    };
    let spoiled = raw::mangled(&line, mangle);
    let (content_type, body) = if json {
        ("application/json", spoiled)
    } else {
        let mut event = Vec::new();
        for line in spoiled
            .split(|&byte| byte == b'\n')
            .filter(|l| !l.is_empty())
        {
            event.extend_from_slice(b"data: ");
            event.extend_from_slice(line);
            event.push(b'\n');
        }
        event.push(b'\n');
        ("text/event-stream", event)
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    Response::from_parts(parts, Full::new(Bytes::from(body)).boxed())
}

/// The answer to request `id` that `body` (a JSON message, or an event stream whose
/// events have their data on one line each, as rmcp writes them) holds, as one line
/// of JSON with its `\n`.
fn answer_line(body: &[u8], id: &Value) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    let answers =
        |message: &Value| message.get("method").is_none() && message.get("id") == Some(id);
    let data = std::iter::once(text).chain(
        text.lines()
            .filter_map(|line| line.strip_prefix("data:").map(str::trim_start)),
    );
    data.filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(answers)
        .map(|message| {
            let mut line = serde_json::to_vec(&message).expect("a JSON value serializes");
            line.push(b'\n');
            line
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_found_in_a_json_body_or_among_events() {
        let id = serde_json::json!(3);
        let answer = br#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
        let line = [&answer[..], b"\n"].concat();
        assert_eq!(answer_line(answer, &id), Some(line.clone()));
        let events = [
            &b"id: 0\nretry: 3000\ndata: \n\n"[..],
            b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
            b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n\n",
            b"id: 1\ndata: ",
            answer,
            b"\n\n",
        ]
        .concat();
        assert_eq!(answer_line(&events, &id), Some(line));
        assert_eq!(answer_line(&events, &serde_json::json!(4)), None);
    }
}
