//! Starting the protocol with a Streamable HTTP server, in whichever era it speaks.
//!
//! Over HTTP the era is read from each server's answers, as the backward-compatibility
//! sections of the 2026-07-28 revision describe it for this transport (status codes,
//! not timing), and it is found again on every connection: a probe costs one `POST`,
//! not a process start, so nothing is remembered between connections.
//!
//! Invariants:
//! 1. With no pinned revision, the first `POST` is `server/discover` (2026-07-28, no
//!    session). A discover result makes the connection a 2026-07-28 one on the same
//!    transport: no `initialize`, no session, the protocol headers on every request.
//! 2. The server is of the handshake era when it answers that `server/discover` as
//!    the stdio probe reads it (see `over_stdio::classify`: a JSON-RPC error other than
//!    the two 2026-07-28 rejections, `-32020` header mismatch and `-32021` missing
//!    capability; no shared version while it lists a handshake revision; a success
//!    that is not a discover result), a `4xx` other than `401`/`403` included (the
//!    transport turns it into such an error, see [`http`]), or does not answer within
//!    [`DISCOVER_WAIT`]. Then `initialize` is sent on a new transport, so a
//!    discover still pending can neither delay it nor be taken for its answer.
//! 3. When that `initialize` `POST` itself fails with `400`, `404` or `405` (and no
//!    JSON-RPC error, which only a Streamable HTTP server writes), the URL is a legacy
//!    HTTP+SSE server's, and the start is handed to [`super::over_sse`].
//! 4. A pinned `2026-07-28` sends only `server/discover`; a pinned handshake revision
//!    sends only `initialize`, offering it. Neither probes.
//! 5. The version a handshake server answers to `initialize` is one of
//!    [`super::ACCEPTED_PROTOCOL_VERSIONS`], or the start fails naming both (even
//!    `2026-07-28`: that revision has no `initialize`); a 2026-07-28 start has agreed on
//!    `2026-07-28`, which rmcp only selects from the server's own `supportedVersions`.
//!
//! A 2026-07-28 connection has no session to expire, and no `notifications/cancelled`
//! over HTTP: a request given up is cancelled by closing its response stream. rmcp
//! does that when the runtime sends the notification (see [`super::cancellation`]),
//! which it then does not `POST`. A handshake connection keeps both: an expired
//! session is started again and the request sent once more (see [`http`]).
//!
//! rmcp's `ClientLifecycleMode::Auto` does the same fallback on one transport, but
//! its HTTP worker awaits the discover `POST` before it sends anything else, and
//! `Auto` waits a fixed 10 s: a server that never answers the discover would never
//! be sent the fallback `initialize`. Driving the two steps here keeps invariant 2.

use std::{sync::Arc, time::Duration};

use rmcp::{
    RoleClient,
    model::ProtocolVersion,
    service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService},
    transport::streamable_http_client::StreamableHttpError,
};
use tokio_util::sync::CancellationToken;

use super::{
    Client, failure, liveness,
    over_stdio::{self, Classified},
    version_gate::{Accepted, Gate},
};
use crate::{
    error::{HttpFailure, StartupError},
    transport::{http, splice::Splicer},
};

/// How long the era probe waits for the answer to `server/discover` before taking
/// the server for one of the handshake era. A server of either era answers a `POST`
/// at once, so this only bounds a server that holds the request open.
pub(super) const DISCOVER_WAIT: Duration = Duration::from_secs(10);

/// Reaches the server at `resolved` and starts the protocol in the era it speaks, or
/// in the `pinned` revision (see the module docs). `ended` is cancelled when the
/// connection ends.
///
/// # Cancel safety
///
/// Dropping the future drops the transport; nothing outlives it.
pub(super) async fn start(
    server: &str,
    resolved: &http::ResolvedHttp,
    client: Client,
    splicer: &Splicer,
    ended: &CancellationToken,
    pinned: Option<ProtocolVersion>,
) -> Result<Reached, StartupError> {
    let endpoint = Endpoint::reach(server, resolved).await?;
    let oauth = endpoint.oauth.clone();
    let reached = start_with(server, resolved, client, splicer, ended, pinned, endpoint).await?;
    // A machine client has OAuth from the start, but is logged in only once it has
    // sent a token (a server that never asked for one has none).
    Ok(Reached {
        oauth: oauth.is_some_and(|oauth| oauth.has_token()),
        ..reached
    })
}

/// How the requests of one start reach a server: one HTTP client for all of them
/// (building one loads the platform's CA certificates, several milliseconds), and
/// the server's OAuth login, if it has one.
#[derive(Clone)]
pub(super) struct Endpoint {
    pub(super) http: reqwest::Client,
    pub(super) oauth: Option<http::OAuthLogin>,
}

impl Endpoint {
    /// The client of `server` at `resolved`, and its OAuth login when it has one (a
    /// login in its store, or a machine client), shared by the requests of its
    /// connection.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future abandons the discovery it may be making.
    pub(super) async fn reach(
        server: &str,
        resolved: &http::ResolvedHttp,
    ) -> Result<Self, StartupError> {
        let http = http::client_for(resolved)?;
        let oauth = match &resolved.oauth_store {
            Some(store) => {
                http::OAuthLogin::start(server, &resolved.url, store, http.clone()).await?
            }
            None => None,
        };
        Ok(Self { http, oauth })
    }

    /// A new Streamable HTTP transport to the server at `resolved`, and its streams.
    fn transport(
        &self,
        server: &str,
        resolved: &http::ResolvedHttp,
        splicer: &Splicer,
    ) -> Result<(http::Transport, Arc<http::Streams>), StartupError> {
        http::transport(
            server,
            resolved,
            self.http.clone(),
            splicer.clone(),
            self.oauth.clone(),
        )
    }
}

/// [`start`], through `endpoint`.
async fn start_with(
    server: &str,
    resolved: &http::ResolvedHttp,
    client: Client,
    splicer: &Splicer,
    ended: &CancellationToken,
    pinned: Option<ProtocolVersion>,
    endpoint: Endpoint,
) -> Result<Reached, StartupError> {
    let handshake = |error| StartupError::Handshake {
        source: failure::from_initialize(error),
        stderr_tail: Vec::new(),
    };
    match pinned {
        Some(version) if version.has_initialize() => {
            let mut client = client;
            client.info.protocol_version = version.clone();
            initialize(
                server,
                resolved,
                client,
                splicer,
                ended,
                Accepted::Pinned(version),
                endpoint,
            )
            .await
        }
        Some(version) => {
            let transport = endpoint.transport(server, resolved, splicer)?;
            discover(client, transport, ended, version)
                .await
                .map(|(service, streams)| Reached::streamable(service, streams))
                .map_err(handshake)
        }
        None => {
            let fallback = client.clone();
            let transport = endpoint.transport(server, resolved, splicer)?;
            // Dropping the probe on time drops its transport (invariant 2).
            let probe = tokio::time::timeout(
                DISCOVER_WAIT,
                discover(client, transport, ended, ProtocolVersion::V_2026_07_28),
            )
            .await;
            let error = match probe {
                Ok(Ok((service, streams))) => return Ok(Reached::streamable(service, streams)),
                Ok(Err(error)) => Some(error),
                Err(_) => None,
            };
            match error.map(over_stdio::classify) {
                Some(Classified::NoSharedVersion { supported }) => {
                    Err(over_stdio::no_shared(supported))
                }
                Some(Classified::Failed(source)) => Err(StartupError::Handshake {
                    source,
                    stderr_tail: Vec::new(),
                }),
                Some(Classified::Handshake(_)) | None => {
                    tracing::debug!(server, "the server does not speak 2026-07-28; initializing");
                    initialize(
                        server,
                        resolved,
                        fallback,
                        splicer,
                        ended,
                        Accepted::Spoken,
                        endpoint,
                    )
                    .await
                }
            }
        }
    }
}

/// A started connection, what its transport learns of its streams, whether the URL
/// turned out to be a legacy HTTP+SSE server's (invariant 3), and whether its
/// requests carry an OAuth login's token.
pub(super) struct Reached {
    pub(super) service: RunningService<RoleClient, Client>,
    pub(super) streams: Arc<http::Streams>,
    pub(super) legacy_sse: bool,
    pub(super) oauth: bool,
}

impl Reached {
    fn streamable(
        service: RunningService<RoleClient, Client>,
        streams: Arc<http::Streams>,
    ) -> Self {
        Self {
            service,
            streams,
            legacy_sse: false,
            oauth: false,
        }
    }
}

/// Starts with `server/discover` on `transport`, offering `version`.
///
/// # Cancel safety
///
/// Dropping the future drops the transport; `ended` is linked to it only once the
/// start succeeded.
async fn discover(
    client: Client,
    (transport, streams): (http::Transport, Arc<http::Streams>),
    ended: &CancellationToken,
    version: ProtocolVersion,
) -> Result<(RunningService<RoleClient, Client>, Arc<http::Streams>), ClientInitializeError> {
    // The probe's transport is dropped when the server is of the other era, which
    // must not end the connection: it is watched by a token of its own, linked to
    // `ended` once it is the connection's.
    let probe_ended = CancellationToken::new();
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![version],
    };
    let service = client
        .serve_with_lifecycle(
            liveness::Watched::new(transport, probe_ended.clone()),
            lifecycle,
        )
        .await?;
    link(probe_ended, ended);
    link(streams.ended().clone(), ended);
    Ok((service, streams))
}

/// Cancels `ended` once `attempt`, a token of a transport that has become the
/// connection's (its end, or the server found gone by its client, see
/// [`http::Streams`]), is cancelled; ends as soon as either is.
///
/// Through this task `ended` may follow a moment after rmcp failed the requests in
/// flight (see [`liveness`], invariant 1); over HTTP nothing depends on the order,
/// there being no process whose exit report a failed request waits for.
fn link(attempt: CancellationToken, ended: &CancellationToken) {
    let ended = ended.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = attempt.cancelled() => ended.cancel(),
            () = ended.cancelled() => {}
        }
    });
}

/// Starts with `initialize` on a new transport, accepting the answers `accepted`
/// names; a `POST` refused the way a legacy HTTP+SSE server refuses it hands over to
/// [`super::over_sse`] (invariant 3).
async fn initialize(
    server: &str,
    resolved: &http::ResolvedHttp,
    client: Client,
    splicer: &Splicer,
    ended: &CancellationToken,
    accepted: Accepted,
    endpoint: Endpoint,
) -> Result<Reached, StartupError> {
    let (transport, streams) = endpoint.transport(server, resolved, splicer)?;
    let fallback = client.clone();
    // The transport is dropped on failure; only a started one may end the connection.
    let attempt = CancellationToken::new();
    let (transport, refusal) = Gate::new(
        liveness::Watched::new(transport, attempt.clone()),
        server,
        accepted.clone(),
    );
    match client
        .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
    {
        Ok(service) => {
            link(attempt, ended);
            link(streams.ended().clone(), ended);
            Ok(Reached::streamable(service, streams))
        }
        // Dropping the transport ends the session.
        Err(_) if let Some(refused) = refusal.take() => Err(refused),
        Err(error) if refused_like_legacy_sse(&error) => {
            tracing::debug!(
                server,
                "the URL refuses a POST; trying the legacy HTTP+SSE transport"
            );
            let (service, streams) = super::over_sse::start(
                server, resolved, fallback, splicer, ended, accepted, endpoint,
            )
            .await?;
            Ok(Reached {
                service,
                streams,
                legacy_sse: true,
                oauth: false,
            })
        }
        Err(error) => Err(StartupError::Handshake {
            source: failure::from_initialize(error),
            stderr_tail: Vec::new(),
        }),
    }
}

/// Whether an `initialize` start failed because its `POST` was answered `400`, `404`
/// or `405` without a JSON-RPC error (invariant 3).
fn refused_like_legacy_sse(error: &ClientInitializeError) -> bool {
    let ClientInitializeError::TransportError { error, .. } = error else {
        return false;
    };
    let Some(StreamableHttpError::Client(failure)) = error
        .error
        .downcast_ref::<StreamableHttpError<HttpFailure>>()
    else {
        return false;
    };
    matches!(
        failure,
        HttpFailure::NotFound { .. }
            | HttpFailure::LegacySse { .. }
            | HttpFailure::Status { status: 400, .. }
    )
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Reads one HTTP/1.1 request from `socket`: its head, lowercase, and its body;
    /// `None` when the client closes first.
    async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
        let mut bytes = Vec::new();
        let head_end = loop {
            let mut chunk = [0; 4096];
            let n = socket.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                return None;
            }
            bytes.extend_from_slice(&chunk[..n]);
            if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8_lossy(&bytes[..head_end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |value| value.trim().parse().unwrap());
        while bytes.len() < head_end + length {
            let mut chunk = [0; 4096];
            let n = socket.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                return None;
            }
            bytes.extend_from_slice(&chunk[..n]);
        }
        Some((head, bytes.split_off(head_end)))
    }

    /// A server of the handshake era: `server/discover` gets `404` with "method not
    /// found", `initialize` is answered with `answer`, or else the version it offers.
    /// Every method received is pushed to `received`, with `initialize`'s offered
    /// version. Returns the URL.
    async fn handshake_server(
        received: Arc<Mutex<Vec<String>>>,
        answer: Option<&'static str>,
    ) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let received = received.clone();
                tokio::spawn(async move {
                    let Some((head, body)) = read_request(&mut socket).await else {
                        return;
                    };
                    let (status, body) = if !head.starts_with("post") {
                        ("405 Method Not Allowed", String::new())
                    } else {
                        let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
                        let method = message["method"].as_str().unwrap_or_default();
                        let id = &message["id"];
                        match method {
                            "server/discover" => {
                                received.lock().unwrap().push(method.to_owned());
                                let error = serde_json::json!({"jsonrpc": "2.0", "id": id,
                                    "error": {"code": -32601, "message": "Method not found"}});
                                ("404 Not Found", error.to_string())
                            }
                            "initialize" => {
                                let offered = &message["params"]["protocolVersion"];
                                received
                                    .lock()
                                    .unwrap()
                                    .push(format!("initialize {}", offered.as_str().unwrap()));
                                let version = answer.map_or(offered.clone(), Into::into);
                                let result = serde_json::json!({"jsonrpc": "2.0", "id": id,
                                    "result": {"protocolVersion": version,
                                        "capabilities": {"tools": {}},
                                        "serverInfo": {"name": "old", "version": "0"}}});
                                ("200 OK", result.to_string())
                            }
                            _ => ("202 Accepted", String::new()),
                        }
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                });
            }
        });
        url
    }

    async fn start_pinned(
        url: &str,
        pinned: Option<ProtocolVersion>,
    ) -> Result<RunningService<RoleClient, Client>, StartupError> {
        let resolved = http::resolve(
            &crate::config::HttpConfig {
                url: url.to_owned(),
                bearer_token_env_var: None,
                http_headers: Default::default(),
                env_http_headers: Default::default(),
                transport: crate::config::HttpTransport::StreamableHttp,
                ca_certificate: None,
            },
            |_| None,
        )
        .unwrap();
        let client = Client::new("old", &crate::host::HostHandlers::default());
        start(
            "old",
            &resolved,
            client,
            &Splicer::new(),
            &CancellationToken::new(),
            pinned,
        )
        .await
        .map(|reached| reached.service)
    }

    #[tokio::test]
    async fn auto_probes_then_initializes_offering_the_newest_handshake_revision() {
        let received = Arc::new(Mutex::new(Vec::new()));
        let url = handshake_server(received.clone(), None).await;
        let service = start_pinned(&url, None).await.unwrap();
        let version = service.peer().peer_info().unwrap().protocol_version.clone();
        assert_eq!(version, ProtocolVersion::V_2025_11_25);
        assert_eq!(
            *received.lock().unwrap(),
            ["server/discover", "initialize 2025-11-25"]
        );
    }

    #[tokio::test]
    async fn a_pinned_handshake_revision_is_offered_without_a_probe() {
        let received = Arc::new(Mutex::new(Vec::new()));
        let url = handshake_server(received.clone(), None).await;
        let service = start_pinned(&url, Some(ProtocolVersion::V_2025_06_18))
            .await
            .unwrap();
        let version = service.peer().peer_info().unwrap().protocol_version.clone();
        assert_eq!(version, ProtocolVersion::V_2025_06_18);
        assert_eq!(*received.lock().unwrap(), ["initialize 2025-06-18"]);
    }

    #[tokio::test]
    async fn a_pinned_2026_07_28_never_falls_back_to_initialize() {
        let received = Arc::new(Mutex::new(Vec::new()));
        let url = handshake_server(received.clone(), None).await;
        let Err(error) = start_pinned(&url, Some(ProtocolVersion::V_2026_07_28)).await else {
            panic!("a handshake server cannot start pinned to 2026-07-28");
        };
        let message = crate::error::chain(&error);
        assert!(message.starts_with("handshake failed"), "{message}");
        assert!(message.contains("Method not found"), "{message}");
        assert_eq!(*received.lock().unwrap(), ["server/discover"]);
    }

    #[tokio::test]
    async fn a_handshake_answer_of_a_revision_without_initialize_fails_naming_both() {
        let received = Arc::new(Mutex::new(Vec::new()));
        let url = handshake_server(received.clone(), Some("2026-07-28")).await;
        let Err(error) = start_pinned(&url, None).await else {
            panic!("`2026-07-28` has no `initialize`");
        };
        assert_eq!(
            error.to_string(),
            "the server answered `initialize` with protocol version `2026-07-28`, which mcp-runtime does not speak (it offered `2025-11-25`, and also speaks `2025-06-18`, `2025-03-26` and `2024-11-05`)"
        );
    }

    /// How the resumption server answers a `GET` that resumes a stream.
    #[derive(Clone, Copy)]
    enum Resumed {
        /// Never: the connection stays open, unanswered.
        Never,
        /// With `503`.
        Unavailable,
        /// With an event stream that never sends anything.
        Silent,
    }

    /// A server of the handshake era whose `tools/call` answer is an event stream
    /// that sends one event with an id and then breaks (the connection is closed
    /// midway); a `GET` that resumes it is answered as `resumed` says; the session's
    /// own `GET` stream is refused (`405`). Returns the URL and a count of the
    /// resuming `GET`s.
    async fn breaking_server(resumed: Resumed) -> (String, Arc<Mutex<usize>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let resumptions = Arc::new(Mutex::new(0));
        let counted = resumptions.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let counted = counted.clone();
                tokio::spawn(async move {
                    let Some((head, body)) = read_request(&mut socket).await else {
                        return;
                    };
                    if head.starts_with("get") {
                        if !head.contains("last-event-id:") {
                            let _ = socket
                                .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                                .await;
                            return;
                        }
                        *counted.lock().unwrap() += 1;
                        match resumed {
                            Resumed::Never => std::future::pending::<()>().await,
                            Resumed::Unavailable => {
                                let _ = socket
                                    .write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbusy")
                                    .await;
                            }
                            Resumed::Silent => {
                                let _ = socket
                                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                                    .await;
                                std::future::pending::<()>().await;
                            }
                        }
                        return;
                    }
                    let message: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let id = &message["id"];
                    let response = match message["method"].as_str().unwrap_or_default() {
                        "initialize" => {
                            let result = serde_json::json!({"jsonrpc": "2.0", "id": id,
                                "result": {"protocolVersion": "2025-11-25",
                                    "capabilities": {"tools": {}},
                                    "serverInfo": {"name": "breaking", "version": "0"}}});
                            let body = result.to_string();
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: s-1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                        }
                        "tools/call" => {
                            // One chunk of an event stream, then the connection is
                            // closed before the body's end.
                            let event = "id: e-1\ndata: \n\n";
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{event}\r\n",
                                event.len()
                            )
                        }
                        _ => "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                    };
                    let _ = socket.write_all(response.as_bytes()).await;
                });
            }
        });
        (url, resumptions)
    }

    async fn connect_to(url: &str) -> crate::connection::Connection {
        let resolved = http::resolve(
            &crate::config::HttpConfig {
                url: url.to_owned(),
                bearer_token_env_var: None,
                http_headers: Default::default(),
                env_http_headers: Default::default(),
                transport: crate::config::HttpTransport::StreamableHttp,
                ca_certificate: None,
            },
            |_| None,
        )
        .unwrap();
        crate::connection::Connection::connect(
            "web",
            &crate::transport::Endpoint::Http(resolved),
            &crate::binding::Binding::Http,
            |_| {},
        )
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_deadline_passing_while_a_stream_is_resumed_says_the_stream_was_lost() {
        let (url, resumptions) = breaking_server(Resumed::Never).await;
        let connection = connect_to(&url).await;
        let error = connection
            .call_plain("t", Duration::from_secs(1))
            .await
            .expect_err("the answer never comes");
        assert_eq!(
            crate::error::chain(&error),
            "tool `t` on server `web` failed: the server's event stream ended before the answer, and it was not resumed within 1s (the call may have run): server `web` closed the connection before its answer was complete (check that it is still running)"
        );
        assert_eq!(*resumptions.lock().unwrap(), 1, "it was being resumed");
        assert!(!connection.has_ended(), "the server answered the call");
        connection.shutdown().await;
    }

    #[tokio::test]
    async fn a_deadline_passing_after_a_stream_was_resumed_is_a_timeout() {
        let (url, resumptions) = breaking_server(Resumed::Silent).await;
        let connection = connect_to(&url).await;
        let error = connection
            .call_plain("t", Duration::from_secs(1))
            .await
            .expect_err("the answer never comes");
        assert_eq!(
            crate::error::chain(&error),
            "tool `t` on server `web` did not answer within 1s (raise `tool_timeout_sec`)"
        );
        assert_eq!(*resumptions.lock().unwrap(), 1);
        connection.shutdown().await;
    }

    #[tokio::test]
    async fn resuming_a_stream_stops_after_a_bounded_count_of_failures() {
        let (url, resumptions) = breaking_server(Resumed::Unavailable).await;
        let connection = connect_to(&url).await;
        // Far longer than the resumption's pauses: the count ends it, not this.
        let error = connection
            .call_plain("t", Duration::from_secs(300))
            .await
            .expect_err("the answer never comes");
        assert_eq!(
            crate::error::chain(&error),
            "tool `t` on server `web` failed: the server's event stream ended before the answer, and resuming it failed (the call may have run; check that the server is still running before calling again): server `web` answered HTTP 503"
        );
        assert_eq!(
            *resumptions.lock().unwrap(),
            http::MAX_FAILED_RESUMPTIONS,
            "each attempt was made, and no more"
        );
        assert!(!connection.has_ended(), "the server answered every request");
        connection.shutdown().await;
    }
}
