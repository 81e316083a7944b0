//! Serving the fixture over Streamable HTTP at `/mcp`, logging every POST body
//! before rmcp parses it (with `--broadcast-tool-changes`, also each listen stream
//! rmcp opened, as `http/GET`: a test knows when every session will hear a change).
//!
//! rmcp's [`StreamableHttpService`] (stateful sessions) does the protocol; this
//! module puts a plain hyper HTTP/1 server in front of it that answers 404 off
//! `/mcp`, logs each POST body with the request's headers, and, with
//! `--require-bearer`, answers 401 to requests without the right token. A
//! rejected POST is still logged: the log is of what the fixture received.
//!
//! With `--require-oauth` ([`Options::oauth`]) the same listener also serves
//! the [`oauth`] authorization server, and the MCP endpoint
//! answers 401 or 403 unless a request carries one of its access tokens. The
//! authorization server's requests are not in the message log (they carry
//! secrets); it keeps its own. The message log shows an `Authorization` value
//! as its fingerprint ([`oauth::redact_authorization`]), not the token.
//!
//! Two faults replace the MCP endpoint altogether: [`Fault::Status`] answers
//! every request with one status (401 with a `WWW-Authenticate` header, a
//! redirect with the `Location` of [`Options::location`], any status with a short
//! text body), and [`Fault::Silent`] accepts TCP
//! connections and never reads from or answers them. A third,
//! [`Fault::DieDuringCall`], serves as usual until a `tools/call` arrives, then
//! exits the process while answering it ([`dying`]).
//!
//! [`Options::expire_sessions_on_call`] makes the server forget the session of
//! the first N `tools/call` POSTs that carry an `Mcp-Session-Id`, before rmcp
//! sees them: rmcp then answers `404`, as for a session that expired.
//!
//! With `--future` every answer's body is rewritten frame by frame, its markers
//! replaced ([`crate::future::rewrite_body`]). With `--mangle-answer` the answer to
//! a method named there is sent spoiled ([`mangled`]).
//!
//! Closing a request's response stream is how a 2026-07-28 client cancels the
//! request. When the client closes the answer to a POSTed request before its
//! end, the fixture prints `closed-early ID` (the request's JSON-RPC id) on
//! stdout, so a test can wait for it; nobody need read it. A client may also
//! close the stream of an answer it has already read, before the server ends
//! it: such a line says only that the body was not read to its end.

use std::{
    convert::Infallible,
    io::Write as _,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Instant,
};

use anyhow::Context as _;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::{SessionManager as _, local::LocalSessionManager},
};
use tokio::net::TcpListener;

mod dying;
mod mangled;

pub use self::{
    dying::{Death, EVENT_ID as DYING_EVENT_ID, EXIT_STATUS as DYING_EXIT_STATUS},
    mangled::over_http as mangles_over_http,
};
use crate::{
    message_log::{MessageLog, header_map},
    oauth::{self, AuthServer},
    raw::Mangle,
    server::Fixture,
};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

type Body = BoxBody<Bytes, Infallible>;

struct Endpoint {
    mcp: StreamableHttpService<Fixture, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    log: Option<Arc<MessageLog>>,
    bearer: Option<String>,
    oauth: Option<AuthServer>,
    status: Option<StatusCode>,
    location: Option<String>,
    /// How the process dies on a `tools/call`, if it does.
    death: Option<Death>,
    /// How many more `tools/call` POSTs find their session forgotten.
    expire_on_call: AtomicUsize,
    /// Quote each request's headers back ([`Options::echo_headers`]).
    echo_headers: bool,
    /// Whether answers are rewritten (`--future`).
    future: bool,
    /// Whether each listen stream opened is logged (`--broadcast-tool-changes`).
    log_listens: bool,
    /// The methods whose answers are spoiled, and how.
    mangled: Vec<(String, Mangle)>,
    /// Whether a spoiled answer is a JSON body rather than an event stream.
    json_answers: bool,
}

/// How the HTTP server behaves, besides the fixture's own behaviour.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Answer 401 unless `Authorization: Bearer TOKEN`.
    pub bearer: Option<String>,
    /// Replace the MCP endpoint (see the module docs).
    pub fault: Option<Fault>,
    /// Forget the session of the first N `tools/call` POSTs that carry one.
    pub expire_sessions_on_call: usize,
    /// Quote the request's headers back, credentials included: in the body of a
    /// [`Fault::Status`] answer (and in the `WWW-Authenticate` of a 401 one), and in
    /// the JSON-RPC error, message and data, answering every `tools/call`. A server
    /// that echoes what it was sent, for the tests that no credential is shown.
    pub echo_headers: bool,
    /// Serve an authorization server and require its access tokens.
    pub oauth: Option<OAuthOptions>,
    /// The `Location` header of every answer under [`Fault::Status`].
    pub location: Option<String>,
    /// The methods whose answers are spoiled, and how (see [`mangled`]).
    pub mangled: Vec<(String, Mangle)>,
    /// Send a spoiled answer as a JSON body rather than an event stream.
    pub json_answers: bool,
}

/// The authorization server of `--require-oauth` and where it logs.
#[derive(Clone, Debug)]
pub struct OAuthOptions {
    /// What the server does.
    pub config: oauth::Config,
    /// The file its log lines are appended to.
    pub log: Option<std::path::PathBuf>,
}

/// An HTTP fault that replaces the MCP endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer every request with this status and a short text body.
    Status(StatusCode),
    /// Accept connections and never answer (nor read) anything.
    Silent,
    /// Serve as usual, but exit the process during the first `tools/call`, as
    /// [`Death`] says.
    DieDuringCall(Death),
}

/// The body of every answer under [`Fault::Status`].
pub fn fault_body(status: StatusCode) -> String {
    format!("mcp-fixture answers {} on purpose", status.as_u16())
}

/// Bind `addr`, print `listening http://ADDR/mcp` on stdout, and serve
/// `fixture` as `options` say until the process is killed.
///
/// # Cancel safety
///
/// Dropping the future stops accepting connections; connections already
/// accepted run on in their own tasks.
pub async fn serve(
    fixture: Fixture,
    addr: &str,
    log: Option<Arc<MessageLog>>,
    options: Options,
) -> anyhow::Result<()> {
    let Options {
        bearer,
        fault,
        expire_sessions_on_call,
        echo_headers,
        oauth,
        location,
        mangled,
        json_answers,
    } = options;
    // The OAuth log is opened before the URL is printed: a test that has the
    // URL has a server that can log.
    let oauth = match oauth {
        Some(OAuthOptions {
            config,
            log: Some(path),
        }) => {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .with_context(|| format!("cannot open the OAuth log `{}`", path.display()))?;
            Some((config, Some(log)))
        }
        Some(OAuthOptions { config, log: None }) => Some((config, None)),
        None => None,
    };
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on `{addr}`"))?;
    let local = listener.local_addr()?;
    dying::listening_on(&listener);
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening http://{local}{MCP_PATH}")?;
        stdout.flush()?;
    }

    let future = fixture.behaviour().future;
    let log_listens = fixture.behaviour().broadcast_tool_changes;
    let sessions = Arc::new(LocalSessionManager::default());
    let mcp = StreamableHttpService::new(
        move || Ok(fixture.clone()),
        sessions.clone(),
        StreamableHttpServerConfig::default(),
    );
    let status = match fault {
        Some(Fault::Status(status)) => Some(status),
        _ => None,
    };
    let death = match fault {
        Some(Fault::DieDuringCall(death)) => Some(death),
        _ => None,
    };
    let endpoint = Arc::new(Endpoint {
        mcp,
        sessions,
        log,
        bearer,
        oauth: oauth.map(|(config, log)| {
            AuthServer::new(config, &format!("http://{local}"), MCP_PATH, log)
        }),
        status,
        location,
        death,
        expire_on_call: AtomicUsize::new(expire_sessions_on_call),
        echo_headers,
        future,
        log_listens,
        mangled,
        json_answers,
    });
    // With `Fault::Silent`, accepted connections are kept open here, unread.
    let mut silent = Vec::new();
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                eprintln!("mcp-fixture: accept failed: {error}");
                continue;
            }
        };
        if fault == Some(Fault::Silent) {
            silent.push(stream);
            continue;
        }
        let endpoint = endpoint.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(endpoint.clone(), request));
            // Every connection may be the one a dying answer is written to.
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(dying::Dying::new(stream)), service)
                .await
            {
                eprintln!("mcp-fixture: connection failed: {error}");
            }
        });
    }
}

async fn handle(
    endpoint: Arc<Endpoint>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    if let Some(server) = &endpoint.oauth
        && endpoint.status.is_none()
        && AuthServer::serves(request.uri().path())
    {
        return Ok(answer_oauth(server, request).await);
    }
    if request.uri().path() != MCP_PATH && endpoint.status.is_none() {
        return Ok(plain(StatusCode::NOT_FOUND, "not found"));
    }
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {error}"),
            ));
        }
    };
    if parts.method == Method::POST
        && let Some(log) = &endpoint.log
        && let Err(error) = log.record(
            &String::from_utf8_lossy(&body),
            Some(&{
                let mut headers = header_map(&parts.headers);
                // An OAuth access token is a secret: the log shows its fingerprint.
                if endpoint.oauth.is_some()
                    && let Some(value) = headers.get_mut("authorization")
                {
                    *value = oauth::redact_authorization(value);
                }
                headers
            }),
        )
    {
        eprintln!("mcp-fixture: cannot write the message log: {error}");
    }
    let echoed = endpoint
        .echo_headers
        .then(|| echoed_headers(&parts.headers));
    if let Some(status) = endpoint.status {
        let body = match &echoed {
            Some(echoed) => format!("{}; the request's headers: {echoed}", fault_body(status)),
            None => fault_body(status),
        };
        let mut response = plain(status, body);
        if status == StatusCode::UNAUTHORIZED {
            let challenge = match &echoed {
                Some(echoed) => format!(
                    "Bearer realm=\"mcp-fixture\", error=\"invalid_token\", error_description=\"refused {}\"",
                    echoed.replace('"', "'")
                ),
                None => "Bearer realm=\"mcp-fixture\"".to_owned(),
            };
            if let Ok(challenge) = http::HeaderValue::try_from(challenge) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, challenge);
            }
        }
        if let Some(location) = endpoint
            .location
            .as_deref()
            .and_then(|location| http::HeaderValue::from_str(location).ok())
        {
            response.headers_mut().insert(header::LOCATION, location);
        }
        return Ok(response);
    }
    if let Some(token) = &endpoint.bearer
        && !is_bearer(&parts.headers, token)
    {
        let mut response = plain(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer realm=\"mcp-fixture\""),
        );
        return Ok(response);
    }
    if let Some(server) = &endpoint.oauth
        && let Err(refusal) = server.authorize_resource(&parts.headers, Instant::now())
    {
        return Ok((*refusal).map(|text| Full::new(Bytes::from(text)).boxed()));
    }
    let message = serde_json::from_slice::<serde_json::Value>(&body).ok();
    let method = message
        .as_ref()
        .and_then(|message| message["method"].as_str());
    if let (Some(echoed), Some("tools/call"), Some(message)) = (&echoed, method, &message) {
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {
                "code": -32000,
                "message": format!("refused the request with headers {echoed}"),
                "data": {"headers": echoed},
            },
        });
        let mut response = plain(StatusCode::OK, error.to_string());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        return Ok(response);
    }
    if parts.method == Method::POST
        && method == Some("tools/call")
        && let Some(death) = endpoint.death
    {
        if death == Death::BeforeAnswering {
            dying::exit_now();
        }
        return Ok(dying::last_answer(death));
    }
    if parts.method == Method::POST
        && method == Some("tools/call")
        && let Some(session) = parts
            .headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
        && endpoint
            .expire_on_call
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(1)
            })
            .is_ok()
        && let Err(error) = endpoint.sessions.close_session(&Arc::from(session)).await
    {
        eprintln!("mcp-fixture: cannot forget session: {error}");
    }
    // A request's answer, watched for the client closing it early.
    let request_id = message
        .as_ref()
        .filter(|message| message.get("method").is_some())
        .and_then(|message| message.get("id"))
        .map(ToString::to_string);
    // Until the answer's body ends, dropping the guard reports the request.
    let mut guard = request_id.map(|id| ClosedEarly { id: Some(id) });
    let listen = endpoint.log_listens && parts.method == Method::GET;
    let mut response = endpoint
        .mcp
        .handle(Request::from_parts(parts, Full::new(body)))
        .await;
    // A listen stream, once rmcp has opened it: from here on, what the server sends
    // outside a request reaches that client. Logged as `http/GET`.
    if listen
        && response.status() == StatusCode::OK
        && let Some(log) = &endpoint.log
        && let Err(error) = log.record(r#"{"method":"http/GET"}"#, None)
    {
        eprintln!("mcp-fixture: cannot write the message log: {error}");
    }
    let mangle = endpoint
        .mangled
        .iter()
        .find(|(mangled, _)| Some(mangled.as_str()) == method)
        .map(|(_, mangle)| *mangle);
    if let Some(mangle) = mangle
        && let Some(id) = message.as_ref().and_then(|message| message.get("id"))
    {
        response = mangled::answer(response, id, mangle, endpoint.json_answers).await;
    }
    if endpoint.future {
        response.headers_mut().remove(header::CONTENT_LENGTH);
        response = response.map(|body| {
            body.map_frame(|frame| frame.map_data(crate::future::rewrite_body))
                .boxed()
        });
    }
    Ok(match guard.take() {
        Some(guard) => response.map(|body| Watched { body, guard }.boxed()),
        None => response,
    })
}

/// The request's headers as `name=value` pairs in name order (a client's order
/// varies), joined by spaces.
fn echoed_headers(headers: &http::HeaderMap) -> String {
    let mut pairs: Vec<String> = headers
        .iter()
        .map(|(name, value)| format!("{name}={}", String::from_utf8_lossy(value.as_bytes())))
        .collect();
    pairs.sort();
    pairs.join(" ")
}

async fn answer_oauth(server: &AuthServer, request: Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            return plain(
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {error}"),
            );
        }
    };
    server
        .answer(
            &parts.method,
            parts.uri.path(),
            parts.uri.query(),
            &parts.headers,
            &body,
            Instant::now(),
        )
        .map(|text| Full::new(Bytes::from(text)).boxed())
}

/// Prints `closed-early ID` when dropped armed: the client closed the connection
/// before the answer to request `ID` ended.
struct ClosedEarly {
    id: Option<String>,
}

impl ClosedEarly {
    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for ClosedEarly {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            let mut stdout = std::io::stdout().lock();
            // Nobody may be reading: a failed write is of no consequence.
            let _ = writeln!(stdout, "closed-early {id}");
            let _ = stdout.flush();
        }
    }
}

/// A response body that reports being dropped before its end (see the module
/// docs).
struct Watched {
    body: Body,
    guard: ClosedEarly,
}

impl hyper::body::Body for Watched {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.body.is_end_stream() {
            self.guard.disarm();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

fn is_bearer(headers: &http::HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        == Some(token)
}

fn plain(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(text.into()).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
