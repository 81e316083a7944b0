//! Serving the fixture over Streamable HTTP at `/mcp`, logging every POST body
//! before rmcp parses it.
//!
//! rmcp's [`StreamableHttpService`] (stateful sessions) does the protocol; this
//! module puts a plain hyper HTTP/1 server in front of it that answers 404 off
//! `/mcp`, logs each POST body with the request's headers, and, with
//! `--require-bearer`, answers 401 to requests without the right token. A
//! rejected POST is still logged: the log is of what the fixture received.
//!
//! Two faults replace the MCP endpoint altogether: [`Fault::Status`] answers
//! every request with one status (401 with a `WWW-Authenticate` header, any
//! status with a short text body), and [`Fault::Silent`] accepts TCP
//! connections and never reads from or answers them.

use std::{convert::Infallible, io::Write as _, sync::Arc};

use anyhow::Context as _;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use tokio::net::TcpListener;

use crate::{
    message_log::{MessageLog, header_map},
    server::Fixture,
};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

type Body = BoxBody<Bytes, Infallible>;

struct Endpoint {
    mcp: StreamableHttpService<Fixture, LocalSessionManager>,
    log: Option<Arc<MessageLog>>,
    bearer: Option<String>,
    status: Option<StatusCode>,
}

/// An HTTP fault that replaces the MCP endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer every request with this status and a short text body.
    Status(StatusCode),
    /// Accept connections and never answer (nor read) anything.
    Silent,
}

/// The body of every answer under [`Fault::Status`].
pub fn fault_body(status: StatusCode) -> String {
    format!("mcp-fixture answers {} on purpose", status.as_u16())
}

/// Bind `addr`, print `listening http://ADDR/mcp` on stdout, and serve
/// `fixture` until the process is killed.
///
/// `bearer`: when set, requests whose `Authorization` is not `Bearer TOKEN`
/// get 401. `fault`: when set, replaces the MCP endpoint (see the module docs).
///
/// # Cancel safety
///
/// Dropping the future stops accepting connections; connections already
/// accepted run on in their own tasks.
pub async fn serve(
    fixture: Fixture,
    addr: &str,
    log: Option<Arc<MessageLog>>,
    bearer: Option<String>,
    fault: Option<Fault>,
) -> anyhow::Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on `{addr}`"))?;
    let local = listener.local_addr()?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening http://{local}{MCP_PATH}")?;
        stdout.flush()?;
    }

    let mcp = StreamableHttpService::new(
        move || Ok(fixture.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let status = match fault {
        Some(Fault::Status(status)) => Some(status),
        _ => None,
    };
    let endpoint = Arc::new(Endpoint {
        mcp,
        log,
        bearer,
        status,
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
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
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
            Some(&header_map(&parts.headers)),
        )
    {
        eprintln!("mcp-fixture: cannot write the message log: {error}");
    }
    if let Some(status) = endpoint.status {
        let mut response = plain(status, fault_body(status));
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer realm=\"mcp-fixture\""),
            );
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
    Ok(endpoint
        .mcp
        .handle(Request::from_parts(parts, Full::new(body)))
        .await)
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
