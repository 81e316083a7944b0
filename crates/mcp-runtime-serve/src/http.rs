//! The gateway over Streamable HTTP: `/mcp` for MCP clients of both eras, `/healthz`
//! beside it.
//!
//! rmcp's `StreamableHttpService` does the protocol: handshake sessions
//! (`Mcp-Session-Id`, each with a [`Gateway`] instance and so its own runtime), and
//! 2026-07-28 requests served one by one. A plain hyper HTTP/1 server puts in front of
//! it what rmcp leaves to its host.
//!
//! Invariants:
//! 1. Nothing reaches rmcp or `/healthz` from a client the settings do not admit:
//!    with a bearer token or an OAuth issuer configured, a request without a good
//!    token gets 401 and a `WWW-Authenticate` challenge (an OAuth one naming the
//!    Protected Resource Metadata, served at its well-known path), and the token is
//!    never logged or forwarded upstream (upstreams use their own configured
//!    credentials).
//! 2. `Host` must name this listener (loopback names, the listen address,
//!    `allowed_hosts`) and a present `Origin` must be a loopback one or in
//!    `allowed_origins`, else 403 (rmcp's checks, against DNS rebinding). A body over
//!    `max_request_bytes` gets 413.
//! 3. A request that would open a session past `max_sessions`, or in a fleet restore
//!    one here, gets 503 with `Retry-After`; the sessions already open go on as
//!    before. So does one for a session of the fleet this replica would restore
//!    while Redis gives no answer: the session is not taken for ended. At most
//!    `max_sessions` sessionless clients have servers at once, besides: a new one
//!    past the bound has its request refused with an error saying so.
//! 4. A session with nothing being sent for `session_idle_sec` is closed, and its
//!    servers end; so is a sessionless client's runtime.
//! 5. At shutdown the listener stops accepting, calls in flight get the drain time
//!    ([`Settings::with_drain`]), then every session and stream is cancelled and
//!    every server process ends.
//! 6. A handshake session is its opener's: a request of another principal naming it
//!    gets 404, as for a session that does not exist.
//! 7. A request's event stream that cannot be resumed here ends with the request's
//!    error, never with nothing (see `resumable`).

mod bearer;
mod fleet_sessions;
mod jwt;
mod resumable;
mod sessions;
mod settings;

use std::{convert::Infallible, future::Future, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::{rt::TokioIo, server::graceful::GracefulShutdown};
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::{SessionId, local::LocalSessionManager},
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use self::settings::{DRAIN, Refused, Settings};
use self::{
    fleet_sessions::{Claim, FleetSessions, SAVE_EVERY},
    jwt::Refusal,
    resumable::Resumable,
    sessions::Sessions,
    settings::Auth,
};
use crate::{Gateway, Upstreams, principal::Principal};

/// The path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// The path of the health report.
pub const HEALTH_PATH: &str = "/healthz";
/// The Protected Resource Metadata's well-known path (RFC 9728), also served under
/// the resource's own path (`…/mcp`).
const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

const SESSION_ID: &str = "mcp-session-id";
const MCP_METHOD: &str = "mcp-method";

type Body = BoxBody<Bytes, Infallible>;

/// What serves every request of the listener.
struct Front {
    mcp: StreamableHttpService<Gateway, Resumable>,
    sessions: Arc<Sessions>,
    /// In a fleet, the sessions any replica can restore.
    fleet_sessions: Option<Arc<FleetSessions>>,
    settings: Settings,
    upstreams: Upstreams,
}

/// How long shutdown waits for the ended sessions' servers to shut down.
const RETIRE_WAIT: Duration = Duration::from_secs(10);

/// Serves `gateway` on `listener` until `shutdown` resolves, then drains
/// (invariant 5).
///
/// # Cancel safety
///
/// Dropping the future stops accepting at once; the connections already accepted end
/// with the cancellation of their sessions, and the runtimes with their sessions.
pub async fn serve(
    listener: TcpListener,
    gateway: Gateway,
    settings: Settings,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let cancel = CancellationToken::new();
    let _cancel_on_drop = cancel.clone().drop_guard();
    let mut manager = LocalSessionManager::default();
    // The listener's own account decides when a session is idle (invariant 4).
    manager.session_config.keep_alive = None;
    let manager = Arc::new(manager);
    let fleet_sessions = settings
        .fleet
        .clone()
        .map(|fleet| Arc::new(FleetSessions::new(fleet)));
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.allowed_hosts.clone())
        .with_allowed_origins(settings.allowed_origins.clone())
        .with_max_request_body_bytes(settings.max_request_bytes)
        // A 2026-07-28 request's answer as one JSON body when it is the only message
        // (rmcp falls back to an event stream once a notification or question comes
        // first); handshake sessions always get event streams from rmcp.
        .with_json_response(true)
        .with_cancellation_token(cancel.clone());
    // In a fleet, a session whose replica is gone is restored on the one its next
    // request reaches (see `fleet_sessions`).
    config.session_store = fleet_sessions.clone().map(|sessions| {
        sessions as Arc<dyn rmcp::transport::streamable_http_server::session::SessionStore>
    });
    let upstreams = gateway.upstreams().clone();
    // Sessionless clients are bounded as sessions are, each count on its own.
    upstreams.bound_clients(settings.max_sessions);
    let mcp = StreamableHttpService::new(
        move || Ok(gateway.for_new_session()),
        Arc::new(Resumable::new(manager.clone())),
        config,
    );
    let sessions = Arc::new(Sessions::new(
        manager,
        settings.max_sessions,
        settings.session_idle,
        fleet_sessions.clone(),
    ));
    let front = Arc::new(Front {
        mcp,
        sessions: sessions.clone(),
        fleet_sessions,
        settings: settings.clone(),
        upstreams: upstreams.clone(),
    });
    let _reaper = tokio_util::task::AbortOnDropHandle::new(tokio::spawn(reap(
        sessions.clone(),
        upstreams.clone(),
        settings.session_idle,
    )));
    // What Redis did not take of the sessions' changes, written once it answers.
    let _saver = front.fleet_sessions.clone().map(|fleet| {
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(SAVE_EVERY);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                fleet.save().await;
            }
        }))
    });
    let _ends = front.fleet_sessions.as_ref().map(|fleet| {
        hear(fleet.ends(), &sessions, async |sessions, id| {
            sessions.ended_elsewhere(&id).await;
        })
    });
    let _moves = front.fleet_sessions.as_ref().map(|fleet| {
        hear(fleet.moves(), &sessions, async |sessions, id| {
            sessions.moved_away(&id);
        })
    });

    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "a connection could not be accepted");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Each answer is written as it comes (an event stream's events one by one):
        // without this, a small write waits for the client's delayed acknowledgment.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%peer, %error, "TCP_NODELAY could not be set");
        }
        let front = front.clone();
        let service = service_fn(move |request| handle(front.clone(), request));
        let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "a client connection ended with an error");
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down: waiting for the calls in flight");
    if tokio::time::timeout(settings.drain, sessions.posts_ended())
        .await
        .is_err()
    {
        tracing::warn!(
            "calls still in flight after {:?} are cancelled",
            settings.drain
        );
    }
    cancel.cancel();
    // Streams end with their sessions; a connection still open after that is cut.
    let _ = tokio::time::timeout(Duration::from_secs(2), graceful.shutdown()).await;
    // The ended sessions' servers, the sessionless clients' and the shared ones get
    // their grace period; what is left after it is killed as the runtimes drop.
    for runtime in upstreams.reap(Duration::ZERO) {
        upstreams.retire(runtime);
    }
    let retired = async { tokio::join!(upstreams.retired(), upstreams.close_shared()) };
    if tokio::time::timeout(RETIRE_WAIT, retired).await.is_err() {
        tracing::warn!("servers still shutting down after {RETIRE_WAIT:?} are killed");
    }
    Ok(())
}

/// Hears the fleet's `letters` naming a session, acting on each: until dropped.
fn hear<F>(
    mut letters: tokio::sync::mpsc::Receiver<mcp_runtime::fleet::Letter>,
    sessions: &Arc<Sessions>,
    act: impl Fn(Arc<Sessions>, SessionId) -> F + Send + 'static,
) -> tokio_util::task::AbortOnDropHandle<()>
where
    F: Future<Output = ()> + Send,
{
    let sessions = sessions.clone();
    tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
        while let Some(letter) = letters.recv().await {
            if let Ok(id) = std::str::from_utf8(letter.body()) {
                act(sessions.clone(), id.into()).await;
            }
        }
    }))
}

/// Closes idle sessions and sessionless runtimes, a few times per idle period
/// (invariant 4).
async fn reap(sessions: Arc<Sessions>, upstreams: Upstreams, idle: Duration) {
    let period = sessions::reap_period(idle);
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        sessions.reap().await;
        for runtime in upstreams.reap(idle) {
            tracing::info!("ending the servers of a sessionless client idle for {idle:?}");
            upstreams.retire(runtime);
        }
    }
}

async fn handle(
    front: Arc<Front>,
    mut request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = request.uri().path();
    let verifier = front.settings.auth.verifier();
    if let Some(verifier) = verifier
        && request.method() == Method::GET
        && (path == verifier.metadata_path || path == PROTECTED_RESOURCE_PATH)
    {
        // The Protected Resource Metadata: public, as clients read it to log in.
        return Ok(json(verifier.metadata().to_owned()));
    }
    if path != MCP_PATH && path != HEALTH_PATH {
        return Ok(plain(StatusCode::NOT_FOUND, "not found"));
    }
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|value| value.as_bytes());
    let principal = match front.settings.auth.check(authorization).await {
        Ok(principal) => principal,
        Err(refusal) => return Ok(refused(&front.settings.auth, path, &refusal)),
    };
    if path == HEALTH_PATH {
        return Ok(health(&front).await);
    }
    // The credential stops here: nothing upstream ever sees it (invariant 1).
    request.headers_mut().remove(header::AUTHORIZATION);

    let session = request
        .headers()
        .get(SESSION_ID)
        .and_then(|value| value.to_str().ok())
        .map(Arc::<str>::from);
    // In use from here: a reap meanwhile keeps the account of a session being
    // restored, which rmcp does not have yet.
    // One being closed for idleness is waited for, then taken as one this replica
    // does not know.
    let mut in_use = match &session {
        Some(id) => Some(front.sessions.begin_once_closed(id.clone()).await),
        None => None,
    };
    // A session of the fleet that this replica does not hold is restored for its
    // owner alone; for anyone else it does not exist (invariant 6).
    let mut restoring = None;
    if let (Some(id), Some(fleet)) = (&session, &front.fleet_sessions)
        && !front.sessions.knows(id)
    {
        match fleet.claim(id, &principal).await {
            // Ended, not restored: rmcp removes it from the fleet.
            Claim::Owner if request.method() == Method::DELETE => {}
            Claim::Owner => {
                // A restored session counts against the bound as an opened one does
                // (invariant 3): a replica that takes a dead one's sessions stays
                // within its own.
                let Some(slot) = front.sessions.open().await else {
                    return Ok(sessions_full(&front.settings));
                };
                restoring = Some(slot);
                // Held here from now: the replica it moved from, if alive, no longer
                // removes it from the fleet when it ends its copy. Not restored
                // unless Redis takes that: rmcp's restore reads it too.
                if fleet.take_over(id).await.is_err() {
                    return Ok(fleet_unavailable());
                }
                front.sessions.own(id.clone(), principal.clone());
            }
            Claim::Refused => return Ok(plain(StatusCode::NOT_FOUND, "session not found")),
            // Not a 404, which would end the session for its client.
            Claim::Unknown => return Ok(fleet_unavailable()),
        }
    } else if let (Some(id), Some(fleet)) = (&session, &front.fleet_sessions)
        && let Some(moves) = front.sessions.has_moved(id)
        && front.sessions.owned_by(id, &principal)
        && request.method() != Method::DELETE
    {
        // Sent back here from the replica it moved to: held here again, so that the
        // copy there, once idle, leaves the session's entries to this one.
        // Settled only once taken here: until then, each request tries again. Not
        // to end it: the replica it moved to, still its holder, is then told.
        if fleet.take_over(id).await.is_ok() {
            front.sessions.settle(id, moves);
        }
    }
    // A session is its opener's: another principal's request is told it does not
    // exist, as rmcp tells of an unknown one (invariant 6).
    if let Some(id) = &session
        && !front.sessions.owned_by(id, &principal)
    {
        tracing::info!("refused a request for another principal's session");
        return Ok(plain(StatusCode::NOT_FOUND, "session not found"));
    }
    request
        .extensions_mut()
        .insert(Principal(principal.clone()));
    let post = request.method() == Method::POST;
    let opens_session = post
        && session.is_none()
        && request
            .headers()
            .get(MCP_METHOD)
            .is_none_or(|method| method == "initialize");
    let opening = match opens_session {
        true => match front.sessions.open().await {
            Some(opening) => Some(opening),
            None => return Ok(sessions_full(&front.settings)),
        },
        false => restoring,
    };
    // A listen stream stays open until the client closes it: it is not a call for
    // shutdown to wait for.
    let listens = request
        .headers()
        .get(MCP_METHOD)
        .is_some_and(|method| method == "subscriptions/listen");
    let post = (post && !listens).then(|| front.sessions.post());

    let response = front.mcp.handle(request).await;
    drop(opening);
    // A restore that failed leaves nothing here: the session's next request claims
    // it again, within the bound (invariant 3), as one this replica does not know.
    // Asked of every failed request of a session in a fleet: one that came while a
    // restore was under way skipped the claim, and may have restored it (or failed
    // to) through rmcp itself.
    if front.fleet_sessions.is_some()
        && let Some(id) = &session
        && (response.status().is_client_error() || response.status().is_server_error())
    {
        front.sessions.request_failed(id).await;
    }
    if in_use.is_none()
        && let Some(id) = response
            .headers()
            .get(SESSION_ID)
            .and_then(|value| value.to_str().ok())
    {
        tracing::info!(session = id, "a session opened");
        if let Some(fleet) = &front.fleet_sessions {
            fleet.own(id, &principal).await;
        }
        front.sessions.own(id.into(), principal);
        in_use = front.sessions.begin(id.into());
    }
    let mut response = response;
    if response.status().is_client_error() || response.status().is_server_error() {
        close_after(&mut response);
    } else if front.fleet_sessions.is_some()
        && let Some(id) = &session
        && !response.headers().contains_key(SESSION_ID)
        && let Ok(value) = header::HeaderValue::from_str(id)
    {
        // In a fleet, every answer of a session names it: a load balancer that keeps
        // sessions on their replica by this header learns where a session restored
        // after its replica's death now lives, from its first answer there.
        response.headers_mut().insert(SESSION_ID, value);
    }
    // The body holds the guards: the session is in use, and the POST in flight,
    // until the response has been sent or dropped.
    Ok(response.map(|body| {
        body.map_frame(move |frame| {
            let _held = (&in_use, &post);
            frame
        })
        .boxed()
    }))
}

/// `/healthz`: up, how many sessions, each server's state in the runtimes running,
/// and, in a fleet, this replica's name, whether Redis answers a `PING`, and whether
/// it answered the replica's last call (a fleet without Redis still serves: the
/// status stays `up`).
async fn health(front: &Front) -> Response<Body> {
    let mut servers = serde_json::Map::new();
    for runtime in front.upstreams.running() {
        for status in runtime.servers() {
            let counts = servers
                .entry(status.name.clone())
                .or_insert_with(|| serde_json::json!({}));
            let state = status.state.as_str();
            let count = counts[state].as_u64().unwrap_or(0) + 1;
            counts[state] = count.into();
        }
    }
    let mut report = serde_json::json!({
        "status": "up",
        "sessions": front.sessions.count().await,
        "sessionless_clients": front.upstreams.pooled_count(),
        "servers": servers,
    });
    if let Some(fleet) = &front.settings.fleet {
        report["fleet"] = serde_json::json!(fleet.health().await);
    }
    if let Some(sessions) = &front.fleet_sessions {
        report["fleet"]["sessions_unsaved"] = sessions.unsaved().into();
    }
    let mut response = Response::new(Full::new(Bytes::from(report.to_string())).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The answer to a request whose credentials do not pass (invariant 1): 401 with a
/// challenge, 403 for a token without the scopes needed, 503 when the issuer's keys
/// cannot be had. The credential is never logged.
fn refused(auth: &Auth, path: &str, refusal: &Refusal) -> Response<Body> {
    let (status, text) = match refusal {
        Refusal::Missing | Refusal::Invalid(_) => {
            (StatusCode::UNAUTHORIZED, "authentication required")
        }
        Refusal::InsufficientScope => (StatusCode::FORBIDDEN, "the token lacks a scope needed"),
        Refusal::KeysUnavailable(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the authorization server's keys cannot be fetched; try again later",
        ),
    };
    match refusal {
        Refusal::Invalid(why) => {
            tracing::info!(path, why, "refused a request whose token does not pass")
        }
        _ => tracing::info!(path, ?status, "refused a request that is not authenticated"),
    }
    let mut response = plain(status, text);
    if let Ok(challenge) = header::HeaderValue::from_str(&auth.challenge(refusal)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The answer to a session opened or restored past `[serve] max_sessions`.
fn sessions_full(settings: &Settings) -> Response<Body> {
    tracing::warn!(
        max_sessions = settings.max_sessions,
        "refused a session: the bound is reached"
    );
    unavailable(
        "the gateway serves as many sessions as it may (`[serve] max_sessions`); try again later",
        "5",
    )
}

/// The answer to a request for a session of the fleet that this replica cannot
/// restore now, as Redis gives no answer (invariant 3).
fn fleet_unavailable() -> Response<Body> {
    // The link's failure is logged once, by the fleet: not at every request.
    tracing::debug!("a session of the fleet was not restored: its Redis gives no answer");
    unavailable(
        "this session cannot be restored on this replica while the fleet's Redis does not answer; try again",
        "1",
    )
}

/// 503 saying `text`, the client asked to try again after `seconds`.
fn unavailable(text: &'static str, seconds: &'static str) -> Response<Body> {
    let mut response = plain(StatusCode::SERVICE_UNAVAILABLE, text);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        header::HeaderValue::from_static(seconds),
    );
    response
}

/// A JSON document.
fn json(document: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(document)).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Asks the client not to send another request on this connection: the refused
/// request's body may be unread, and a request sent behind it would find the
/// connection closed.
fn close_after<B>(response: &mut Response<B>) {
    response.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
}

/// A refusal (or a not-found) in plain text, the connection closed after it.
fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    close_after(&mut response);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
