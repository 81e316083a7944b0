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
use crate::transport::{
    error::{HttpFailure, StartupError},
    http,
    splice::Splicer,
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
    let transport = client.tap(liveness::Watched::new(transport, probe_ended.clone()));
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![version],
    };
    let service = client.serve_with_lifecycle(transport, lifecycle).await?;
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
    let transport = client.tap(transport);
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
mod tests;
