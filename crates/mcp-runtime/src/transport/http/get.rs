//! Opening an event stream with a `GET`: a handshake session's own stream, or one
//! that resumes a request's answer stream from an event id (`Last-Event-ID`).
//!
//! The `GET` is sent and its answer read here rather than by rmcp's reqwest client,
//! so that its events go through the steps of a `POST`'s ([`super::events`]): rmcp's
//! client fails a whole stream at an event that is not UTF-8, and rmcp then opens it
//! again at once, from the same event id, for as long as the server sends that
//! event again. rmcp's rules for the answer are kept: `405` says the server has no
//! such stream, which rmcp then goes without; `401` and `403` need credentials; any
//! other status that is not a success fails the attempt ([`super::streams`] says
//! whether another may follow).
//!
//! Invariants:
//! 1. A `GET` is noted in [`Streams`](super::Streams) only when it resumes a stream
//!    (see [`super::streams`], invariant 1), and the stream of a request's answer
//!    goes through the steps of its first stream (invariant 3 there).
//! 2. A request's stream that was resumed [`MAX_FRUITLESS_RESUMPTIONS`] times in a
//!    row and lost again each time before any event came is not resumed again: the
//!    attempt fails at once, without a request, with the failure that ended the
//!    last one, as one another attempt cannot mend.

use std::{collections::HashMap, sync::Arc};

use futures::{StreamExt, stream::BoxStream};
use http::{HeaderName, HeaderValue, header};
use rmcp::transport::streamable_http_client::{SseError, StreamableHttpError};
use sse_stream::{Sse, SseStream};

#[cfg(doc)]
use super::streams::MAX_FRUITLESS_RESUMPTIONS;
use super::{
    EVENT_STREAM, HttpResult, JSON, SplicingHttpClient, classify,
    events::{bounded_events, text_events},
    media_type, redirect_of, status_failure, with_headers,
};
use crate::transport::{error::HttpFailure, refused};

impl SplicingHttpClient {
    /// Opens the event stream of `session` at `uri` with a `GET`, from the event id
    /// `last_event_id` when it resumes one; `limit` is the size of the largest event
    /// read (see the module docs).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the request; what was noted of an answer already
    /// read stays noted.
    pub(super) async fn get(
        &self,
        uri: &str,
        session: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limit: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        if let Some(from) = &last_event_id
            && let Some(failure) = self.streams.exhausted(from)
        {
            return Err(StreamableHttpError::Client(failure));
        }
        let resumes = last_event_id.is_some() || self.streams.reopens(session.as_ref());
        if resumes && let Some(failure) = self.streams.own_exhausted(last_event_id.as_deref()) {
            return Err(StreamableHttpError::Client(failure));
        }
        let mut request = with_headers(
            self.client.get(uri),
            session.as_deref(),
            auth_header,
            custom_headers,
        )?;
        if let Some(from) = &last_event_id {
            request = request.header("last-event-id", from.as_str());
        }
        let response = match request.send().await {
            Ok(response) => self.opened(response),
            Err(error) => Err(StreamableHttpError::Client(classify(&self.server, &error))),
        };
        let response = self.through_proxy(response);
        if resumes {
            self.streams.resumed(&response);
        }
        let response = response?;
        let request = match &last_event_id {
            Some(from) => self.streams.resumed_from(from),
            None => None,
        };
        let bytes = bounded_events(response.bytes_stream(), limit);
        let id = request.as_ref().map(|request| request.id.clone());
        let bytes = text_events(bytes, self.server.clone(), id);
        let events = SseStream::from_bytes_stream(bytes).boxed();
        Ok(match request {
            Some(request) => self.answering(request, events, limit, last_event_id),
            None => {
                let events = self.streams.own_events(events, limit);
                refused::readable_events(events, self.server.clone(), None).boxed()
            }
        })
    }

    /// `response`, the answer to a `GET` that opens an event stream, when it is one
    /// (see the module docs).
    fn opened(&self, response: reqwest::Response) -> HttpResult<reqwest::Response> {
        let server = &*self.server;
        if let Some(failure) = redirect_of(server, &response) {
            return Err(StreamableHttpError::Client(failure));
        }
        let status = response.status();
        let failure = match status.as_u16() {
            _ if status.is_success() => None,
            405 => return Err(StreamableHttpError::ServerDoesNotSupportSse),
            // With a session, a `404` says that the session is gone, not that there
            // is no endpoint.
            404 => Some(HttpFailure::Status {
                server: server.to_owned(),
                status: 404,
                body_excerpt: String::new(),
            }),
            401 | 403 => {
                let challenge = response
                    .headers()
                    .get(header::WWW_AUTHENTICATE)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned);
                Some(status_failure(server, status, b"", false, challenge))
            }
            _ => Some(HttpFailure::Status {
                server: server.to_owned(),
                status: status.as_u16(),
                body_excerpt: String::new(),
            }),
        };
        if let Some(failure) = failure {
            return Err(StreamableHttpError::Client(failure));
        }
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        match media_type(response.headers()).as_deref() {
            Some(EVENT_STREAM | JSON) => Ok(response),
            _ => Err(StreamableHttpError::UnexpectedContentType(content_type)),
        }
    }
}
