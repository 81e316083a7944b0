//! The legacy HTTP+SSE transport of protocol revision 2024-11-05, for servers that do
//! not speak Streamable HTTP.
//!
//! rmcp has no client for it any more, so this is mcp-runtime's own transport, for
//! rmcp's protocol engine to run over. [`connect`] opens the server's event stream
//! with a `GET` of its `url` and waits for the `endpoint` event, whose data is the URL
//! (relative to `url`) to send messages to. Then every message the client sends is
//! one `POST` of it there, whose answer says only whether it was taken (`2xx`); every
//! `message` event of the stream is one message for the client. The stream is read
//! with [`events::EventReader`].
//!
//! Invariants:
//! 1. Messages are posted only to the origin of `url`, the one the user named: the
//!    configured headers and the token go nowhere else. An `endpoint` on another
//!    origin fails the startup.
//! 2. Memory is bounded by `max_message_bytes`: an event is kept only while it fits,
//!    and an answer to a `POST` is never read past a short excerpt of an error.
//! 3. An event over the limit fails at once the request it answers (its top-level
//!    `id`, or every request in flight when it has no readable `id`) with an error
//!    naming the server and the limit; the stream, and so the session, goes on. So
//!    does an event that answers a request in flight and cannot be used (not UTF-8,
//!    not a response): it fails that request with what came and why; a batch is
//!    taken message by message (see [`refused`]).
//! 4. A `tools/call` is posted with its placeholders spliced, as over stdio and
//!    Streamable HTTP (see [`super::splice`]); one whose call is gone is not posted.
//! 5. The end of the stream is the end of the connection: `receive` answers `None`,
//!    and rmcp fails the requests in flight. When the stream broke (the server reset
//!    or closed the connection), why is kept in the transport's [`Streams`] before.
//!    Closing drops the stream, which ends the session on the server's side.
//! 6. A server with an OAuth login (and no `bearer_token_env_var`, which wins) is sent
//!    its access token on the `GET` and on every `POST`, as over Streamable HTTP
//!    ([`OAuthLogin`]): a request it refuses with `401` is sent once more with the
//!    token renewed from its challenge; a second `401` is the login's failure.

mod events;

use std::{
    borrow::Cow,
    collections::{HashSet, VecDeque},
    sync::{Arc, Mutex},
};

use bytes::Bytes;
use futures::{StreamExt, stream::BoxStream};
use http::{HeaderMap, HeaderValue, header};
use rmcp::{
    RoleClient,
    model::{
        ClientJsonRpcMessage, ClientNotification, ClientRequest, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::{Transport, streamable_http_client::StreamableHttpError},
};
use url::Url;

use self::events::{Event, EventReader};
use super::{
    framing::too_large,
    http::{
        self as streamable_http, ERROR_BODY_READ_BYTES, EVENT_STREAM, JSON, OAuthLogin,
        ResolvedHttp, Streams, media_type,
    },
    raw_answers::RawAnswers,
    refused::{self, Unread},
    splice::{Spliced, Splicer},
};
use crate::{
    sync::lock,
    transport::error::{HttpFailure, RequestError, StartupError},
};

/// The error of a send. It is the Streamable HTTP transport's error type, so that
/// [`crate::connection`] finds the [`HttpFailure`] behind it the same way.
type SendError = StreamableHttpError<HttpFailure>;

/// The transport over one legacy HTTP+SSE session; see the module docs.
pub(crate) struct SseTransport {
    post: Arc<Poster>,
    /// The event stream; `None` once closed.
    body: Option<BoxStream<'static, reqwest::Result<Bytes>>>,
    reader: EventReader,
    /// `max_message_bytes`.
    limit: usize,
    /// Messages for rmcp read from the stream or made here, in order.
    queued: VecDeque<ServerJsonRpcMessage>,
    /// Requests posted and not answered yet (for invariant 3).
    pending: Arc<Mutex<HashSet<RequestId>>>,
    /// The requests whose answers rmcp gets raw ([`RawAnswers`]).
    raw: RawAnswers,
    /// Why the stream broke, once it did (invariant 5).
    streams: Arc<Streams>,
}

/// Posts the client's messages to the session's endpoint.
struct Poster {
    client: reqwest::Client,
    server: Arc<str>,
    endpoint: Url,
    /// The configured headers and the bearer token.
    headers: HeaderMap,
    splicer: Splicer,
    /// The server's OAuth login, when its token is sent (invariant 6).
    oauth: Option<OAuthLogin>,
}

/// Opens the event stream of `server` at `resolved` and waits for its message
/// endpoint. Every event is bounded by [`ResolvedHttp::max_message_bytes`].
///
/// # Cancel safety
///
/// Dropping the future drops the stream, which ends the session.
pub(crate) async fn connect(
    server: &str,
    resolved: &ResolvedHttp,
    client: reqwest::Client,
    splicer: Splicer,
    oauth: Option<OAuthLogin>,
) -> Result<SseTransport, StartupError> {
    let url = Url::parse(&resolved.url).map_err(|error| StartupError::InvalidUrl {
        source: Arc::new(error),
    })?;
    let headers = headers(resolved);
    // The configured token wins over a login (invariant 6).
    let oauth = oauth.filter(|_| resolved.bearer_token.is_none());
    let handshake = |failure| StartupError::Handshake {
        source: RequestError::Http(failure),
        stderr_tail: Vec::new(),
    };
    let open = |token: Option<String>| {
        let mut request = client
            .get(url.clone())
            .headers(headers.clone())
            .header(header::ACCEPT, EVENT_STREAM);
        if let Some(value) = token.as_deref().and_then(authorization) {
            request = request.header(header::AUTHORIZATION, value);
        }
        request.send()
    };
    let failed = |error: reqwest::Error| handshake(streamable_http::classify(server, &error));
    let token = match &oauth {
        Some(oauth) => oauth.token().await.map_err(handshake)?,
        None => None,
    };
    let mut response = open(token.clone()).await.map_err(failed)?;
    if let Some(oauth) = &oauth
        && response.status() == reqwest::StatusCode::UNAUTHORIZED
    {
        let fresh = oauth
            .refreshed(token.as_deref(), challenge(&response).as_deref())
            .await
            .map_err(handshake)?;
        response = open(Some(fresh)).await.map_err(failed)?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            return Err(handshake(oauth.refused().await));
        }
    }
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Err(handshake(HttpFailure::NotFound {
            server: server.to_owned(),
        }));
    }
    if let Some(source) = streamable_http::redirect_of(server, &response) {
        return Err(StartupError::SseStream { source });
    }
    if !status.is_success() {
        let challenge = challenge(&response);
        let body = streamable_http::read_start(response, ERROR_BODY_READ_BYTES).await;
        let source = status_failure(server, status, &body, challenge);
        return Err(match source {
            HttpFailure::Status { .. } => StartupError::SseStream { source },
            credentials => handshake(credentials),
        });
    }
    let content_type = media_type(response.headers());
    if content_type.as_deref() != Some(EVENT_STREAM) {
        return Err(StartupError::SseNotEventStream { content_type });
    }
    let mut body = response.bytes_stream().boxed();
    let mut reader = EventReader::new(resolved.max_message_bytes);
    let mut later = Vec::new();
    let endpoint = 'found: loop {
        let chunk = match body.next().await {
            Some(Ok(chunk)) => chunk,
            Some(Err(error)) => return Err(handshake(streamable_http::classify(server, &error))),
            None => return Err(StartupError::SseNoEndpoint),
        };
        let mut events = reader.push(&chunk).into_iter();
        while let Some(event) = events.next() {
            match event {
                Event::Complete { kind, data } if kind == "endpoint" => {
                    later.extend(events);
                    break 'found message_endpoint(&url, &data)?;
                }
                _ => tracing::debug!(server, "ignoring an event before the endpoint"),
            }
        }
    };
    debug_assert!(endpoint.origin() == url.origin(), "invariant 1");
    tracing::debug!(server, endpoint = %crate::redact::url(endpoint.as_str()), "legacy SSE session open");
    let mut transport = SseTransport {
        post: Arc::new(Poster {
            client,
            server: server.into(),
            endpoint,
            headers,
            splicer,
            oauth,
        }),
        body: Some(body),
        reader,
        limit: resolved.max_message_bytes,
        queued: VecDeque::new(),
        pending: Arc::default(),
        raw: RawAnswers::default(),
        streams: Streams::new(server),
    };
    for event in later {
        transport.take(event);
    }
    Ok(transport)
}

/// The configured headers and the bearer token, marked sensitive.
fn headers(resolved: &ResolvedHttp) -> HeaderMap {
    let mut headers: HeaderMap = resolved
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    // `resolve` checked that the token can be sent in a header.
    if let Some(token) = &resolved.bearer_token
        && let Ok(mut value) = HeaderValue::try_from(format!("Bearer {token}"))
    {
        value.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, value);
    }
    headers
}

/// `Authorization: Bearer TOKEN`, marked sensitive; `None` for a token a header
/// cannot hold (an authorization server's, never sent as it is).
fn authorization(token: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::try_from(format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The `WWW-Authenticate` challenge of `response`, if it has one.
fn challenge(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// The URL `data` (the `endpoint` event's) names, relative to `url`, if it is on the
/// same origin (invariant 1).
fn message_endpoint(url: &Url, data: &[u8]) -> Result<Url, StartupError> {
    let invalid = || StartupError::SseEndpoint {
        problem:
            "its `endpoint` event is not a URL (check that `url` is the server's SSE endpoint)"
                .to_owned(),
    };
    let reference = std::str::from_utf8(data).map_err(|_| invalid())?.trim();
    let endpoint = url.join(reference).map_err(|_| invalid())?;
    if endpoint.origin() != url.origin() {
        return Err(StartupError::SseEndpoint {
            problem: format!(
                "it named an endpoint on another origin, `{}`, and mcp-runtime sends the server's headers and token only to the origin of its `url` (configure the server to announce an endpoint on the origin of `url`)",
                endpoint.origin().ascii_serialization()
            ),
        });
    }
    Ok(endpoint)
}

impl SseTransport {
    /// What the transport learns of its event stream: why it broke, once it did.
    pub(crate) fn streams(&self) -> Arc<Streams> {
        self.streams.clone()
    }

    /// Handles one event of the stream: a message for rmcp or an oversized answer's
    /// error goes to the queue.
    fn take(&mut self, event: Event) {
        let server = &*self.post.server;
        match event {
            Event::Complete { kind, data } if kind == "message" => {
                self.message(&data, false);
            }
            Event::Complete { kind, .. } => {
                tracing::debug!(server, kind, "ignoring an event that is not a message");
            }
            Event::Oversized { method: true, .. } => {
                tracing::warn!(
                    server,
                    limit = self.limit,
                    "dropped a request or notification over `max_message_bytes`"
                );
            }
            Event::Oversized { id, method: false } => {
                let failed: Vec<RequestId> = match id {
                    Some(id) if lock(&self.pending).remove(&id) => vec![id],
                    Some(id) => {
                        tracing::debug!(server, %id, "ignoring an oversized answer to a request not in flight");
                        Vec::new()
                    }
                    None => lock(&self.pending).drain().collect(),
                };
                let error = too_large(server, None, self.limit);
                for id in failed {
                    tracing::debug!(server, %id, "{}", error.message);
                    self.queued
                        .push_back(ServerJsonRpcMessage::error(error.clone(), Some(id)));
                }
            }
        }
    }

    /// Queues what `data`, the data of a `message` event (or an element of a batch
    /// when `in_batch`), holds for rmcp. An answer to a request in flight that cannot
    /// be used fails it with what came and why; a batch is taken message by message;
    /// anything else unreadable is dropped ([`refused`]).
    fn message(&mut self, data: &[u8], in_batch: bool) {
        // Only a message that is UTF-8 throughout is handed over raw: the rewrite reads
        // the envelope's other fields without looking into them, and would pass an
        // answer whose bytes are not all text.
        let rewritten = if std::str::from_utf8(data).is_ok() {
            self.raw.rewrite(data)
        } else {
            None
        };
        let data = rewritten.as_deref().unwrap_or(data);
        let server = &*self.post.server;
        if let Ok(message) = serde_json::from_slice::<ServerJsonRpcMessage>(data) {
            if let JsonRpcMessage::Response(response) = &message {
                lock(&self.pending).remove(&response.id);
            } else if let JsonRpcMessage::Error(error) = &message
                && let Some(id) = &error.id
            {
                lock(&self.pending).remove(id);
            }
            self.queued.push_back(message);
            return;
        }
        match refused::read(server, data) {
            Unread::Batch(elements) if !in_batch => {
                for element in elements {
                    self.message(element.get().as_bytes(), true);
                }
            }
            Unread::Answer { id, refused } if lock(&self.pending).remove(&id) => {
                tracing::debug!(server, %id, "{refused}");
                self.queued.push_back(refused::answer(&refused, id));
            }
            _ => tracing::debug!(server, "ignoring a message that cannot be read"),
        }
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SendError;

    fn name() -> Cow<'static, str> {
        "legacy-sse".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = match &item {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    lock(&self.pending).remove(id);
                }
                None
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => None,
        };
        if let Some(id) = &request {
            lock(&self.pending).insert(id.clone());
        }
        self.raw.sent(&item);
        let post = self.post.clone();
        let pending = self.pending.clone();
        let raw = self.raw.clone();
        async move {
            let result = match post.body(&item) {
                Ok(body) => {
                    super::hand_back::give_back(item);
                    post.send(body).await
                }
                Err(error) => Err(error),
            };
            if result.is_err()
                && let Some(id) = request
            {
                lock(&pending).remove(&id);
                raw.forget(&id);
            }
            result
        }
    }

    /// # Cancel safety
    ///
    /// rmcp polls this in a `select!`: a dropped call loses nothing, as a chunk taken
    /// from the stream is read into the queue without awaiting.
    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if let Some(message) = self.queued.pop_front() {
                return Some(message);
            }
            let chunk = match self.body.as_mut()?.next().await {
                Some(Ok(chunk)) => chunk,
                Some(Err(error)) => {
                    let failure = streamable_http::classify(&self.post.server, &error);
                    tracing::debug!(server = &*self.post.server, %failure, "the event stream broke");
                    self.streams.end(failure);
                    self.body = None;
                    return None;
                }
                None => {
                    tracing::debug!(server = &*self.post.server, "the event stream ended");
                    self.body = None;
                    return None;
                }
            };
            for event in self.reader.push(&chunk) {
                self.take(event);
            }
        }
    }

    /// Drops the event stream (invariant 5).
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.body = None;
        Ok(())
    }
}

impl Poster {
    /// The body that posts `message`, spliced (invariant 4).
    fn body(&self, message: &ClientJsonRpcMessage) -> Result<Vec<u8>, SendError> {
        match self.splice(message)? {
            Spliced::Untouched => Ok(serde_json::to_vec(message)?),
            Spliced::Replaced(body) => Ok(body),
            Spliced::Orphaned => Err(StreamableHttpError::UnexpectedServerResponse(
                "the call was abandoned before its request could be sent".into(),
            )),
        }
    }

    /// Posts a message's `body`. Only whether the server took it counts.
    async fn send(&self, body: Vec<u8>) -> Result<(), SendError> {
        let server = &*self.server;
        let post = |token: Option<String>| {
            let mut request = self
                .client
                .post(self.endpoint.clone())
                .headers(self.headers.clone())
                .header(header::CONTENT_TYPE, JSON)
                .body(body.clone());
            if let Some(value) = token.as_deref().and_then(authorization) {
                request = request.header(header::AUTHORIZATION, value);
            }
            request.send()
        };
        let failed = |error: reqwest::Error| {
            StreamableHttpError::Client(streamable_http::classify(server, &error))
        };
        let token = match &self.oauth {
            Some(oauth) => oauth.token().await.map_err(StreamableHttpError::Client)?,
            None => None,
        };
        let mut response = post(token.clone()).await.map_err(failed)?;
        if let Some(oauth) = &self.oauth
            && response.status() == reqwest::StatusCode::UNAUTHORIZED
        {
            let fresh = oauth
                .refreshed(token.as_deref(), challenge(&response).as_deref())
                .await
                .map_err(StreamableHttpError::Client)?;
            response = post(Some(fresh)).await.map_err(failed)?;
            if response.status() == reqwest::StatusCode::UNAUTHORIZED {
                return Err(StreamableHttpError::Client(oauth.refused().await));
            }
        }
        let status = response.status();
        if status.is_success() {
            // Dropped unread (invariant 2): the answer comes on the event stream.
            return Ok(());
        }
        if let Some(failure) = streamable_http::redirect_of(server, &response) {
            return Err(StreamableHttpError::Client(failure));
        }
        let challenge = challenge(&response);
        let body = streamable_http::read_start(response, ERROR_BODY_READ_BYTES).await;
        Err(StreamableHttpError::Client(status_failure(
            server, status, &body, challenge,
        )))
    }

    /// As Streamable HTTP's client: only a `tools/call` holds placeholders, and only
    /// while some call holds a slot, so nothing else is serialized twice.
    fn splice(&self, message: &ClientJsonRpcMessage) -> Result<Spliced, SendError> {
        let JsonRpcMessage::Request(request) = message else {
            return Ok(Spliced::Untouched);
        };
        if !matches!(request.request, ClientRequest::CallToolRequest(_))
            || !self.splicer.has_slots()
        {
            return Ok(Spliced::Untouched);
        }
        Ok(self.splicer.splice(&serde_json::to_vec(message)?))
    }
}

/// The failure an answer with `status` (not a success) stands for, given the start of
/// its body and its `WWW-Authenticate` challenge: credentials as over Streamable HTTP,
/// any other status with the server's own words (a `404` to a `POST` usually says
/// that the session is gone, so it is not read as Streamable HTTP reads it).
fn status_failure(
    server: &str,
    status: reqwest::StatusCode,
    body: &[u8],
    challenge: Option<String>,
) -> HttpFailure {
    match status.as_u16() {
        401 | 403 => streamable_http::status_failure(server, status, body, false, challenge),
        code => HttpFailure::Status {
            server: server.to_owned(),
            status: code,
            body_excerpt: streamable_http::excerpt(body),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> Url {
        Url::parse("http://127.0.0.1:8000/sse?key=1").unwrap()
    }

    #[test]
    fn the_endpoint_is_resolved_against_the_stream_url() {
        let resolved = |data: &str| message_endpoint(&url(), data.as_bytes()).unwrap();
        assert_eq!(
            resolved("/messages/?session_id=ab12").as_str(),
            "http://127.0.0.1:8000/messages/?session_id=ab12"
        );
        assert_eq!(
            resolved("message?sessionId=1").as_str(),
            "http://127.0.0.1:8000/message?sessionId=1"
        );
        assert_eq!(
            resolved(" http://127.0.0.1:8000/m ").as_str(),
            "http://127.0.0.1:8000/m"
        );
    }

    #[test]
    fn an_endpoint_on_another_origin_is_refused_and_named_by_its_origin_only() {
        for other in [
            "http://evil.example:8000/m?session=secret",
            "https://127.0.0.1:8000/m",
            "http://127.0.0.1:8001/m",
            "//localhost:8000/m",
        ] {
            let error = message_endpoint(&url(), other.as_bytes()).unwrap_err();
            let message = error.to_string();
            assert!(message.contains("another origin"), "{message}");
            assert!(
                !message.contains("secret") && !message.contains("/m"),
                "{message}"
            );
        }
    }

    #[test]
    fn a_status_failure_quotes_the_start_of_the_body_on_one_line() {
        let failure = status_failure(
            "web",
            reqwest::StatusCode::INTERNAL_SERVER_ERROR,
            "boom\n\tat line 1\u{7}".repeat(50).as_bytes(),
            None,
        );
        let message = failure.to_string();
        assert!(
            message.starts_with("server `web` answered HTTP 500: boom at line 1"),
            "{message}"
        );
        assert!(
            message.ends_with('…') && !message.contains('\n'),
            "{message}"
        );
        let challenge = Some(r#"Bearer resource_metadata="http://x/prm""#.to_owned());
        let unauthorized = status_failure(
            "web",
            reqwest::StatusCode::UNAUTHORIZED,
            b"",
            challenge.clone(),
        );
        assert!(
            matches!(&unauthorized, HttpFailure::Unauthorized { challenge: kept, .. } if *kept == challenge),
            "the challenge is where a login starts"
        );
    }
}
