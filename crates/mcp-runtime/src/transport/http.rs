//! Streamable HTTP servers: headers, bearer token and the rmcp client transport.
//!
//! Secrets are resolved from the environment at connect time. A variable that is
//! missing or empty, not valid UTF-8 or holds a byte no header can carry is a startup
//! error that names the variable and what is wrong, never its value.
//!
//! The transport is rmcp's, over [`SplicingHttpClient`]. Every `POST` is sent and
//! its answer read here (`202`, JSON, SSE with a per-event size limit, `404` session
//! expiry), so that a `tools/call` carrying a byte-exact value (see
//! [`super::splice`]) can have its body spliced, and so that a failure is classified
//! here, with what the response showed: rmcp's reqwest client drops the body of a
//! `5xx` answer and reports other statuses as text, which would leave a user without
//! the server's own explanation and the runtime without a typed cause. A failure is
//! an [`HttpFailure`] (the client's `Error`), which names the server and says what to
//! do: `401`/`403` (authorization), `404` (no endpoint), `405` to a `POST` (a legacy
//! HTTP+SSE server), any other status with an excerpt of its body, a refused
//! connection, a host name that does not resolve (known by this module's resolver),
//! a failed TLS handshake, a timeout. A `GET` that opens an event stream is sent
//! here too ([`get`]), so that its events go through the same steps as a `POST`'s
//! ([`events`]); `DELETE` stays rmcp's, only its network failures classified the
//! same way.
//!
//! How long rmcp resumes an event stream that broke is the client's to bound, and
//! what the client learns from the server's answers (that it is gone, how a
//! request's answer stream was lost) is kept for the connection: see [`streams`].
//!
//! Every JSON body and SSE event is bounded by the server's `max_message_bytes`. An
//! answer over it fails its request at once with an error naming the server and the
//! limit (not the size: the response is abandoned at the limit rather than read on),
//! instead of rmcp's transport error or closed stream. A JSON body or an event of a
//! request's answer stream that rmcp cannot read is made readable first
//! ([`refused`], [`events`]): a batch is split into its messages, and an answer to
//! the request that cannot be used (not UTF-8 throughout among them) fails it at
//! once with what came and why (rmcp would fail a body without saying what it held,
//! and skip an event, or end the stream at one that is not UTF-8, leaving the
//! request to time out or fail as a closed stream).
//!
//! Two rules of rmcp's own reqwest client are carried here because rmcp keeps them
//! private to that client:
//! 1. A `server/discover` sent without a session and answered with a `4xx` other than
//!    `401`/`403` is an answer, not a failure: the JSON-RPC error of its body, or an
//!    invalid-request error naming the status, correlated to the request's id (see
//!    [`discover_rejection`]). This is how a server of the handshake revisions, or a
//!    legacy HTTP+SSE server, tells the era probe that it is not a 2026-07-28 server.
//! 2. A `404` to a request that carries `Mcp-Session-Id` is an expired session, which
//!    rmcp recovers from by initializing again and sending the request once more.
//!
//! The `Mcp-Name` and `Mcp-Param-*` headers of the 2026-07-28 revision are computed
//! by rmcp from its message, before the splice: a header computed from an exact
//! argument would carry its placeholder. Such a header is computed again from the
//! body actually sent (see [`param_headers`]).

use std::{borrow::Cow, collections::HashMap, sync::Arc};

use futures::{StreamExt, stream::BoxStream};
use http::{HeaderName, HeaderValue, header};
use rmcp::{
    model::{
        ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::{
        StreamableHttpClientTransport,
        streamable_http_client::{
            SseError, StreamableHttpClient, StreamableHttpClientTransportConfig,
            StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
        },
    },
};
use sse_stream::{Sse, SseStream};

mod events;
mod failure;
mod get;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(feature = "oauth")]
use self::failure::refused_certificate;
#[cfg(feature = "oauth")]
pub(crate) use self::oauth::{OAuthLogin, OAuthStore, resolve_oauth};
#[cfg(not(feature = "oauth"))]
mod without_oauth;
#[cfg(not(feature = "oauth"))]
pub(crate) use self::without_oauth::{OAuthLogin, OAuthStore};
mod network;
mod param_headers;
mod resolve;
mod streams;
pub(crate) use self::streams::{Lost, Streams};
#[cfg(test)]
pub(crate) use self::streams::{MAX_FAILED_RESUMPTIONS, MAX_FRUITLESS_RESUMPTIONS};

use self::events::{Answering, bounded_events, text_events};
use self::failure::{Resolver, from_rmcp};
use self::network::ProxyInUse;
use self::param_headers::headers_for_spliced;
pub(crate) use self::resolve::{ResolvedHttp, resolve};
#[cfg(feature = "oauth")]
use self::resolve::{required_header_var, required_var};
pub(crate) use self::{
    failure::{classify, excerpt, status_failure},
    network::Network,
};
use super::{
    raw_answers, refused,
    splice::{Spliced, Splicer},
};
use crate::{
    config::DEFAULT_MAX_MESSAGE_BYTES,
    transport::error::{HttpFailure, StartupError},
};

const SESSION_ID_HEADER: &str = "mcp-session-id";
/// The media type of an event stream.
pub(crate) const EVENT_STREAM: &str = "text/event-stream";
/// The media type of a JSON body.
pub(crate) const JSON: &str = "application/json";
/// Redirects followed, same origin only.
const MAX_REDIRECTS: usize = 10;
/// Headers the protocol sets, which a configured header may not replace (header names
/// are lowercase). `mcp-protocol-version` is set through the configured headers.
const RESERVED_HEADERS: [&str; 3] = ["accept", SESSION_ID_HEADER, "last-event-id"];
/// How much of an error answer's body is read for its excerpt (by the legacy HTTP+SSE
/// transport too).
pub(super) const ERROR_BODY_READ_BYTES: usize = 4096;

/// The rmcp client transport of a Streamable HTTP server.
pub(crate) type Transport = StreamableHttpClientTransport<SplicingHttpClient>;

/// The rmcp client transport for `server` at a resolved endpoint, and what its client
/// learns of its streams ([`Streams`], which also bounds how long rmcp resumes a
/// broken one). Every SSE event and JSON body is bounded by
/// [`ResolvedHttp::max_message_bytes`].
pub(crate) fn transport(
    server: &str,
    resolved: &ResolvedHttp,
    client: reqwest::Client,
    splicer: Splicer,
    oauth: Option<OAuthLogin>,
) -> Result<(Transport, Arc<Streams>), StartupError> {
    let streams = Streams::new(server);
    let mut config = StreamableHttpClientTransportConfig::with_uri(resolved.url.as_str())
        .custom_headers(resolved.headers.clone())
        .max_sse_event_size(resolved.max_message_bytes)
        .max_json_response_size(resolved.max_message_bytes);
    // rmcp's default resumes a broken stream forever, also against a server that is
    // gone.
    config.retry_config = Arc::new(streams::Resumption(streams.clone()));
    if let Some(token) = &resolved.bearer_token {
        config = config.auth_header(token.clone());
    }
    let transport = StreamableHttpClientTransport::with_client(
        SplicingHttpClient {
            client,
            splicer,
            server: server.into(),
            proxy: resolved.network.proxy_for(&resolved.url).map(Arc::new),
            oauth,
            streams: streams.clone(),
        },
        config,
    );
    Ok((transport, streams))
}

/// The HTTP client of the server at `resolved` ([`http_client`]), built once for all
/// the requests of a start (the era probe, `initialize`, a legacy event stream, its
/// OAuth login): building one loads the platform's CA certificates, several
/// milliseconds each time.
pub(crate) fn client_for(resolved: &ResolvedHttp) -> Result<reqwest::Client, StartupError> {
    http_client(&resolved.network).map_err(|error| StartupError::HttpClient {
        source: Arc::new(error),
    })
}

/// The HTTP client of every server: same-origin redirects, this module's resolver,
/// and the server's proxies and extra CA certificates from `network`.
pub(crate) fn http_client(network: &Network) -> reqwest::Result<reqwest::Client> {
    let builder = reqwest::Client::builder()
        // As rmcp's own default: idle pooled connections stall on delayed ACKs.
        .pool_max_idle_per_host(0)
        .redirect(same_origin_redirects())
        .dns_resolver(Arc::new(Resolver));
    network.apply(builder)?.build()
}

/// The failure of `response` when it is a redirect, which [`same_origin_redirects`]
/// did not follow.
pub(crate) fn redirect_of(server: &str, response: &reqwest::Response) -> Option<HttpFailure> {
    let status = response.status();
    if !status.is_redirection() || status == reqwest::StatusCode::NOT_MODIFIED {
        return None;
    }
    let location = response
        .headers()
        .get(header::LOCATION)
        .and_then(|value| value.to_str().ok());
    Some(failure::redirect_failure(
        server,
        status,
        response.url(),
        location,
    ))
}

/// Follows only 307 and 308 redirects to the same origin: they keep the method and
/// body, and never carry the session id or the configured headers to another host.
/// Any other redirect is a failure saying where it leads ([`redirect_of`]).
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| {
            let next = attempt.url();
            first.scheme() == next.scheme()
                && first.host_str() == next.host_str()
                && first.port_or_known_default() == next.port_or_known_default()
        });
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if same_origin && keeps_body && attempt.previous().len() <= MAX_REDIRECTS {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// rmcp's reqwest client for `GET` and `DELETE`; every `POST` is sent here, with the
/// body of a `tools/call` holding a placeholder spliced. Failures are [`HttpFailure`]s.
///
/// An answer over the response limits fails its request at once with an error that
/// names the server and the limit, as over stdio: a JSON body too large becomes a
/// JSON-RPC error for the request, an SSE event too large ends its stream with one.
#[derive(Clone)]
pub(crate) struct SplicingHttpClient {
    client: reqwest::Client,
    splicer: Splicer,
    server: Arc<str>,
    /// The proxy the server is reached through, which a failure to connect is
    /// said of.
    proxy: Option<Arc<ProxyInUse>>,
    /// The server's OAuth login, whose access token every request carries ([`oauth`]).
    oauth: Option<OAuthLogin>,
    /// What the client learns of the server and the response streams.
    streams: Arc<Streams>,
}

impl SplicingHttpClient {
    /// What to send for `message`: only a `tools/call` holds placeholders (the sandbox
    /// state, exact arguments), and only while some call holds a slot, so nothing else
    /// is serialized here.
    fn splice(&self, message: &ClientJsonRpcMessage) -> HttpResult<Spliced> {
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

impl SplicingHttpClient {
    /// `auth_header`, or the OAuth login's access token when there is a login and no
    /// configured token.
    async fn oauth_header(&self, auth_header: Option<String>) -> HttpResult<Option<String>> {
        match (&self.oauth, auth_header) {
            (Some(oauth), None) => oauth.token().await.map_err(StreamableHttpError::Client),
            (_, header) => Ok(header),
        }
    }

    /// `result`, with a failure to connect said of the proxy, if there is one.
    fn through_proxy<T>(&self, result: HttpResult<T>) -> HttpResult<T> {
        match (result, &self.proxy) {
            (Err(StreamableHttpError::Client(failure)), Some(proxy)) => {
                Err(StreamableHttpError::Client(proxy.failure(failure)))
            }
            (result, _) => result,
        }
    }

    /// `response` to `request`, where a JSON answer over the limit is an error for
    /// the request naming the server and the limit, and an event stream goes through
    /// the steps of a request's answer stream ([`Self::answering`], `limits` bounding
    /// its events).
    fn answered(
        &self,
        response: HttpResult<StreamableHttpPostResponse>,
        request: Answering,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        match response {
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                let id = request.id;
                tracing::debug!(server = %self.server, %id, max_size, "a JSON answer was over the limit");
                let error = super::framing::too_large(&self.server, None, max_size);
                let error = ServerJsonRpcMessage::error(error, Some(id));
                Ok(StreamableHttpPostResponse::Json(error, None))
            }
            Ok(StreamableHttpPostResponse::Sse(events, session)) => {
                let limit = limits.max_sse_event_size;
                let events = self.answering(request, events, limit, None);
                Ok(StreamableHttpPostResponse::Sse(events, session))
            }
            other => other,
        }
    }
}

type HttpResult<T> = Result<T, StreamableHttpError<HttpFailure>>;

impl StreamableHttpClient for SplicingHttpClient {
    type Error = HttpFailure;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let request = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let discover = match &message {
            JsonRpcMessage::Request(request)
                if session_id.is_none()
                    && matches!(request.request, ClientRequest::DiscoverRequest(_)) =>
            {
                Some(request.id.clone())
            }
            _ => None,
        };
        let mut custom_headers = custom_headers;
        let body = match self.splice(&message)? {
            Spliced::Orphaned => Err(unexpected(
                "the call was abandoned before its request could be sent".to_owned(),
            )),
            Spliced::Untouched => Ok(serde_json::to_vec(&message)?),
            Spliced::Replaced(body) => {
                headers_for_spliced(&message, &body, &mut custom_headers);
                Ok(body)
            }
        };
        let raw = raw_answers::RawRequest::over_http(&message);
        super::hand_back::give_back(message);
        let post = |auth_header, custom_headers| Post {
            client: &self.client,
            server: &self.server,
            uri: &uri,
            session_id: session_id.clone(),
            auth_header,
            custom_headers,
            limits,
            request: request.clone(),
            discover: discover.clone(),
            raw: raw.clone(),
        };
        let response = match (body, &self.oauth) {
            (Ok(body), Some(oauth)) if auth_header.is_none() => {
                // The login's token (none yet for a machine client without one),
                // renewed once if the server refuses it, from its challenge.
                let token = oauth.token().await.map_err(StreamableHttpError::Client)?;
                let first = post(token.clone(), custom_headers.clone())
                    .send(body.clone())
                    .await;
                match first {
                    Err(StreamableHttpError::Client(HttpFailure::Unauthorized {
                        challenge,
                        ..
                    })) => {
                        let fresh = oauth
                            .refreshed(token.as_deref(), challenge.as_deref())
                            .await
                            .map_err(StreamableHttpError::Client)?;
                        match post(Some(fresh), custom_headers).send(body).await {
                            Err(StreamableHttpError::Client(HttpFailure::Unauthorized {
                                ..
                            })) => Err(StreamableHttpError::Client(oauth.refused().await)),
                            second => self.through_proxy(second),
                        }
                    }
                    first => self.through_proxy(first),
                }
            }
            (Ok(body), _) => self.through_proxy(post(auth_header, custom_headers).send(body).await),
            (Err(error), _) => Err(error),
        };
        self.streams.requested(&response);
        match (request, response) {
            (Some(id), response) => self.answered(response, Answering { id, raw }, limits),
            (None, Ok(StreamableHttpPostResponse::Sse(events, session))) => {
                let events = refused::readable_events(events, self.server.clone(), None);
                Ok(StreamableHttpPostResponse::Sse(events.boxed(), session))
            }
            (None, response) => response,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let auth_header = self.oauth_header(auth_header).await?;
        let result = self
            .client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
            .map_err(|error| from_rmcp(&self.server, error));
        self.through_proxy(result)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        // rmcp opens every stream with a limit; this one has the runtime's default.
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            DEFAULT_MAX_MESSAGE_BYTES,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let auth_header = self.oauth_header(auth_header).await?;
        self.get(
            &uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
        .await
    }
}

/// One `POST` of a message to `server`.
struct Post<'a> {
    client: &'a reqwest::Client,
    server: &'a str,
    uri: &'a str,
    session_id: Option<Arc<str>>,
    auth_header: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
    limits: StreamableHttpResponseLimits,
    /// The id of the message when it is a request, which needs an answer; a
    /// notification or a response needs none, so a `2xx` with any body accepts it.
    request: Option<RequestId>,
    /// The id of a `server/discover` sent without a session, whose rejection is an
    /// answer ([`discover_rejection`]).
    discover: Option<RequestId>,
    /// A request whose answer rmcp gets raw ([`raw_answers`]).
    raw: Option<raw_answers::RawRequest>,
}

impl Post<'_> {
    /// Posts `body` and reads the answer the way Streamable HTTP defines it: `202`, a
    /// JSON message, or an SSE stream. A status that is not a success is an
    /// [`HttpFailure`], unless its body is a JSON-RPC error (which answers the request),
    /// it is the `404` of an expired session (which rmcp recovers from), or it rejects
    /// a session-less `server/discover` ([`discover_rejection`]).
    async fn send(self, body: Vec<u8>) -> HttpResult<StreamableHttpPostResponse> {
        let server = self.server;
        let request = self
            .client
            .post(self.uri)
            .header(header::CONTENT_TYPE, JSON)
            .body(body);
        let request = with_headers(
            request,
            self.session_id.as_deref(),
            self.auth_header,
            self.custom_headers,
        )?;
        let response = request
            .send()
            .await
            .map_err(|error| StreamableHttpError::Client(classify(server, &error)))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND && self.session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if matches!(status.as_u16(), 202 | 204) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let new_session = response
            .headers()
            .get(SESSION_ID_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let content_type = media_type(response.headers());
        if let Some(failure) = redirect_of(server, &response) {
            return Err(StreamableHttpError::Client(failure));
        }
        if !status.is_success() {
            let credentials = matches!(status.as_u16(), 401 | 403);
            let challenge = response
                .headers()
                .get(header::WWW_AUTHENTICATE)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let (error, body) = if content_type.as_deref() == Some(JSON) && !credentials {
                let body =
                    read_bounded(server, response, self.limits.max_json_response_size).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(JsonRpcMessage::Error(error)) => (Some(error), body),
                    _ => (None, body),
                }
            } else {
                (None, read_start(response, ERROR_BODY_READ_BYTES).await)
            };
            if let Some(id) = self.discover
                && status.is_client_error()
                && !credentials
            {
                let error = error.map(|error| error.error);
                let rejection = discover_rejection(id, status, error, &body);
                return Ok(StreamableHttpPostResponse::Json(rejection, None));
            }
            if let Some(error) = error {
                let message = JsonRpcMessage::Error(error);
                return Ok(StreamableHttpPostResponse::Json(message, new_session));
            }
            let failure = status_failure(server, status, &body, true, challenge);
            return Err(StreamableHttpError::Client(failure));
        }
        match content_type.as_deref() {
            // The events become what rmcp reads in the steps of a request's answer
            // stream ([`SplicingHttpClient::answering`]).
            Some(EVENT_STREAM) => {
                let bytes = bounded_events(response.bytes_stream(), self.limits.max_sse_event_size);
                let bytes = text_events(bytes, server.into(), self.request);
                let events = SseStream::from_bytes_stream(bytes);
                Ok(StreamableHttpPostResponse::Sse(events.boxed(), new_session))
            }
            Some(JSON) => {
                let mut body =
                    read_bounded(server, response, self.limits.max_json_response_size).await?;
                // Only a body that is UTF-8 throughout is handed over raw: the rewrite
                // reads the envelope's other fields without looking into them, and
                // would pass an answer whose bytes are not all text.
                if let Some(raw) = &self.raw
                    && std::str::from_utf8(&body).is_ok()
                    && let Some(rewritten) = raw.rewrite(&body)
                {
                    body = rewritten;
                }
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(message) => Ok(StreamableHttpPostResponse::Json(message, new_session)),
                    Err(_) if self.request.is_none() => Ok(StreamableHttpPostResponse::Accepted),
                    // A batch, or an answer that cannot be used: as events of a stream.
                    Err(error) => match refused::json_body(server, &body, self.request.as_ref()) {
                        Some(events) => {
                            let events = futures::stream::iter(events.into_iter().map(Ok));
                            Ok(StreamableHttpPostResponse::Sse(events.boxed(), new_session))
                        }
                        None => Err(StreamableHttpError::Deserialize(error)),
                    },
                }
            }
            _ if self.request.is_none() => Ok(StreamableHttpPostResponse::Accepted),
            _ => Err(StreamableHttpError::UnexpectedContentType(content_type)),
        }
    }
}

/// The answer to a session-less `server/discover` that the server rejected with
/// `status` (a `4xx` other than `401`/`403`): its own JSON-RPC `error` if the body held
/// one, else an invalid-request error naming the status and the start of `body`;
/// either way correlated to the request's `id`.
///
/// rmcp's reqwest client does the same (`legacy_discover_response`), but the function
/// is `pub(super)` in rmcp, so a client of its own must carry the rule. The id is
/// written again because a rejection from middleware, or from a server of an older
/// revision, cannot name it (the Python SDK writes `"server-error"`), and rmcp's
/// startup takes an error that names another id for a broken server rather than for
/// a server of another era.
/// The media type of a response, lowercase, without parameters.
pub(crate) fn media_type(headers: &http::HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let media_type = value.split(';').next().unwrap_or_default().trim();
    Some(media_type.to_ascii_lowercase())
}

/// `request` with the headers every request to the server carries: what it
/// accepts, the session's id, the bearer token and the configured headers. As in
/// rmcp's client, the headers the protocol sets cannot be configured.
fn with_headers(
    request: reqwest::RequestBuilder,
    session: Option<&str>,
    auth_header: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> HttpResult<reqwest::RequestBuilder> {
    let mut request = request.header(header::ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
    if let Some(session) = session {
        request = request.header(SESSION_ID_HEADER, session);
    }
    if let Some(token) = auth_header {
        request = request.bearer_auth(token);
    }
    for (name, value) in custom_headers {
        if RESERVED_HEADERS.contains(&name.as_str()) {
            return Err(StreamableHttpError::ReservedHeaderConflict(
                name.to_string(),
            ));
        }
        request = request.header(name, value);
    }
    Ok(request)
}

fn discover_rejection(
    id: RequestId,
    status: reqwest::StatusCode,
    error: Option<ErrorData>,
    body: &[u8],
) -> ServerJsonRpcMessage {
    let error = error.unwrap_or_else(|| {
        let message = format!(
            "server/discover rejected with HTTP {}: {}",
            status.as_u16(),
            excerpt(body)
        );
        ErrorData::invalid_request(message, None)
    });
    ServerJsonRpcMessage::error(error, Some(id))
}

fn unexpected(message: String) -> StreamableHttpError<HttpFailure> {
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(message))
}

/// Up to `limit` bytes from the start of `response`'s body; what arrived before a
/// failure to read on.
pub(crate) async fn read_start(response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while body.len() < limit
        && let Some(Ok(chunk)) = chunks.next().await
    {
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    body
}

async fn read_bounded(
    server: &str,
    response: reqwest::Response,
    limit: usize,
) -> HttpResult<Vec<u8>> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| StreamableHttpError::Client(classify(server, &error)))?;
        if body.len() + chunk.len() > limit {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests;
