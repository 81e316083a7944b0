//! The servers' questions passed to the client of the session they belong to.
//!
//! A handshake session's runtime is started with [`handlers`] for its client: the
//! servers are offered exactly what that client declared (elicitation in its modes,
//! sampling with or without tool use, roots), and each question a server asks during
//! the session goes to that client, and to no other, as a request of the gateway's
//! own. The client answers or declines; the gateway never answers for it.
//!
//! Invariants:
//! 1. The handlers offer no capability the client did not declare at `initialize`.
//! 2. A question the client cannot be asked (it is gone, or it answers with an error)
//!    is cancelled (elicitation), fails with the client's error (sampling), or has no
//!    roots (roots); the failure is logged, never answered as if the client had.
//! 3. A question goes out on the event stream of the client's request it belongs to:
//!    the earliest of the session's requests in flight to the server that asked (a
//!    `tools/call`), else the earliest in flight whose server is not known (a read, a
//!    prompt); only a question no request waits for (asked while listing) goes on the
//!    session's listen stream. A client without a listen stream is asked all the
//!    same, as the protocol has servers do ("related to the originating request").
//! 4. The servers' log messages go to the client in the order the runtime read them,
//!    as `notifications/message` with the server's name as (the start of) the
//!    logger, unless less severe than the level the client set; [`LogQueue::flush`]
//!    returns once every message queued before it has been sent.

#![allow(
    deprecated,
    reason = "rmcp marks sampling, roots and logging deprecated (SEP-2577); clients of the handshake revisions still use them"
)]

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU64, AtomicUsize, Ordering},
};

use crate::sync::lock;
use mcp_runtime::host::{
    Elicitation, ElicitationModes, HandlerFuture, HostHandlers, Logs, Root, Roots, Sampling,
};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        ClientCapabilities, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
        CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
        GetExtensions, ListRootsRequest, LoggingLevel, LoggingMessageNotification,
        LoggingMessageNotificationParam, RequestId, ServerNotification, ServerRequest,
    },
    service::{OriginatingRequestId, Peer, ServiceError},
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::task::AbortOnDropHandle;

/// The handlers that pass a session's questions to `peer`, its client, as far as
/// `capabilities` (what it declared) go (invariant 1), each on the stream of the
/// request of `waiting` it belongs to (invariant 3), and its servers' log messages to
/// `logs` (invariant 4).
pub(crate) fn handlers(
    peer: &Peer<RoleServer>,
    capabilities: &ClientCapabilities,
    logs: &LogQueue,
    waiting: &Arc<Waiting>,
) -> HostHandlers {
    // Every message is asked for (a 2026-07-28 server sends none unless asked); the
    // queue passes on those at the level the client set.
    let handlers = HostHandlers::new()
        .with_logs(logs.clone())
        .with_log_level(LoggingLevel::Debug);
    crate::bridge::offered(capabilities, handlers, |modes, sampling_tools| Client {
        peer: peer.clone(),
        waiting: waiting.clone(),
        modes,
        sampling_tools,
    })
}

/// The requests of a session's client in flight, by the server they wait on, in
/// the order they came (invariant 3).
#[derive(Default)]
pub(crate) struct Waiting {
    requests: Mutex<Vec<InFlight>>,
    next: AtomicU64,
}

impl Waiting {
    /// Records that the client's request `id` waits on `server` (`None`: not known)
    /// until the guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>, id: RequestId, server: Option<Arc<str>>) -> Entered {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.requests).push((number, server, id));
        Entered {
            waiting: self.clone(),
            number,
        }
    }

    /// The request a question of `server` belongs to (invariant 3).
    fn of(&self, server: &str) -> Option<RequestId> {
        let requests = lock(&self.requests);
        let on = |wanted: Option<&str>| {
            requests
                .iter()
                .find(|(_, waits_on, _)| waits_on.as_deref() == wanted)
                .map(|(_, _, id)| id.clone())
        };
        on(Some(server)).or_else(|| on(None))
    }
}

/// A request in flight: its place in the order, the server it waits on (`None`: not
/// known), and its id.
type InFlight = (u64, Option<Arc<str>>, RequestId);

/// A request's place in [`Waiting`], left when dropped.
pub(crate) struct Entered {
    waiting: Arc<Waiting>,
    number: u64,
}

impl Drop for Entered {
    fn drop(&mut self) {
        lock(&self.waiting.requests).retain(|(number, _, _)| *number != self.number);
    }
}

/// The session's client, asked on the servers' behalf.
struct Client {
    peer: Peer<RoleServer>,
    waiting: Arc<Waiting>,
    modes: ElicitationModes,
    sampling_tools: bool,
}

impl Client {
    /// Asks the client `server`'s question `request` on the stream of the request it
    /// belongs to (invariant 3).
    async fn ask(
        &self,
        server: &str,
        mut request: ServerRequest,
    ) -> Result<ClientResult, ServiceError> {
        if let Some(id) = self.waiting.of(server) {
            request.extensions_mut().insert(OriginatingRequestId(id));
        }
        // Sent from a task of its own: rmcp marks a request sent while it handles
        // another with that one's id, and the question is asked while the gateway's
        // link to the server handles the server's request, whose id means nothing to
        // this client.
        let peer = self.peer.clone();
        let asked = tokio::spawn(async move { peer.send_request(request).await });
        match AbortOnDropHandle::new(asked).await {
            Ok(answer) => answer,
            Err(_) => Err(ServiceError::TransportClosed),
        }
    }
}

impl Elicitation for Client {
    fn modes(&self) -> ElicitationModes {
        self.modes
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        Box::pin(async move {
            let asked = self
                .ask(
                    server,
                    ServerRequest::ElicitRequest(ElicitRequest::new(request)),
                )
                .await;
            match asked {
                Ok(ClientResult::ElicitResult(result)) => result,
                other => {
                    log_failure(server, "elicitation", other.err());
                    ElicitResult::new(ElicitationAction::Cancel)
                }
            }
        })
    }
}

impl Sampling for Client {
    fn tool_use(&self) -> bool {
        self.sampling_tools
    }

    fn create_message<'a>(
        &'a self,
        server: &'a str,
        request: CreateMessageRequestParams,
    ) -> HandlerFuture<'a, Result<CreateMessageResult, ErrorData>> {
        Box::pin(async move {
            let asked = self
                .ask(
                    server,
                    ServerRequest::CreateMessageRequest(CreateMessageRequest::new(request)),
                )
                .await;
            match asked {
                Ok(ClientResult::CreateMessageResult(result)) => Ok(*result),
                Err(ServiceError::McpError(error)) => Err(error),
                other => {
                    log_failure(server, "sampling", other.err());
                    Err(ErrorData::internal_error(
                        "the gateway's client did not answer the sampling request",
                        None,
                    ))
                }
            }
        })
    }
}

impl Roots for Client {
    fn roots<'a>(&'a self, server: &'a str) -> HandlerFuture<'a, Vec<Root>> {
        Box::pin(async move {
            let asked = self
                .ask(
                    server,
                    ServerRequest::ListRootsRequest(ListRootsRequest::default()),
                )
                .await;
            match asked {
                Ok(ClientResult::ListRootsResult(result)) => result
                    .roots
                    .into_iter()
                    .map(|root| Root {
                        uri: root.uri,
                        name: root.name,
                    })
                    .collect(),
                other => {
                    log_failure(server, "roots", other.err());
                    Vec::new()
                }
            }
        })
    }
}

/// Logs that the client could not be asked `server`'s question (invariant 2).
fn log_failure(server: &str, question: &str, error: Option<ServiceError>) {
    match error {
        Some(error) => {
            tracing::warn!(server, question, %error, "the client could not be asked a server's question");
        }
        None => {
            tracing::warn!(
                server,
                question,
                "the client answered a server's question with another kind of result"
            );
        }
    }
}

/// The level a client set with `logging/setLevel`, shared by its session.
pub(crate) type ClientLevel = Arc<Mutex<Option<LoggingLevel>>>;

/// The least level of the log messages a request asks for.
pub(crate) type Level = LoggingLevel;

/// A session's servers' log messages on their way to its client (invariant 4).
#[derive(Clone)]
pub(crate) struct LogQueue {
    sender: mpsc::UnboundedSender<Queued>,
    /// Messages queued and not yet sent (or dropped): a flush with none waits for
    /// nothing, so a call in a session whose servers log nothing pays nothing.
    pending: Arc<AtomicUsize>,
}

enum Queued {
    Message(String, LoggingMessageNotificationParam),
    Flush(oneshot::Sender<()>),
}

impl LogQueue {
    /// A queue whose messages go to `peer`, filtered by `level`, in order, until the
    /// queue and its clones are gone.
    pub(crate) fn new(peer: Peer<RoleServer>, level: ClientLevel) -> Self {
        let (sender, mut queued) = mpsc::unbounded_channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let sent = pending.clone();
        tokio::spawn(async move {
            while let Some(item) = queued.recv().await {
                match item {
                    Queued::Message(server, message) => {
                        let delivered = deliver(&peer, &level, server, message).await;
                        sent.fetch_sub(1, Ordering::AcqRel);
                        if !delivered {
                            // The client is gone.
                            return;
                        }
                    }
                    Queued::Flush(flushed) => {
                        let _ = flushed.send(());
                    }
                }
            }
        });
        Self { sender, pending }
    }

    /// Returns once every message queued so far has been sent (or dropped).
    pub(crate) async fn flush(&self) {
        if self.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let (flushed, sent) = oneshot::channel();
        if self.sender.send(Queued::Flush(flushed)).is_ok() {
            let _ = sent.await;
        }
    }
}

/// Sends `message` of `server` to `peer` unless less severe than the client's
/// `level`; whether the client is still there.
async fn deliver(
    peer: &Peer<RoleServer>,
    level: &ClientLevel,
    server: String,
    message: LoggingMessageNotificationParam,
) -> bool {
    if !lock(level).is_none_or(|least| rank(message.level) >= rank(least)) {
        return true;
    }
    send(peer, &server, message).await
}

/// Sends `message` of `server` to `peer` if it is at least as severe as `least`, a
/// 2026-07-28 request's level; none without one. Whether the client is still there.
pub(crate) async fn send_at(
    peer: &Peer<RoleServer>,
    least: Option<LoggingLevel>,
    logged: (String, LoggingMessageNotificationParam),
) -> bool {
    if !wanted(least, &logged) {
        return true;
    }
    let (server, message) = logged;
    send(peer, &server, message).await
}

/// Whether a 2026-07-28 request whose level is `least` (none: it wants none) wants
/// the log message `logged`.
pub(crate) fn wanted(
    least: Option<LoggingLevel>,
    (_, message): &(String, LoggingMessageNotificationParam),
) -> bool {
    least.is_some_and(|least| rank(message.level) >= rank(least))
}

/// Sends `message` of `server` to `peer`, the server's name at the start of its
/// logger (invariant 4); whether the client is still there.
async fn send(
    peer: &Peer<RoleServer>,
    server: &str,
    mut message: LoggingMessageNotificationParam,
) -> bool {
    message.logger = Some(match message.logger {
        Some(logger) => format!("{server}/{logger}"),
        None => server.to_owned(),
    });
    let notification =
        ServerNotification::LoggingMessageNotification(LoggingMessageNotification::new(message));
    peer.send_notification(notification).await.is_ok()
}

impl Logs for LogQueue {
    fn log(&self, server: &str, message: LoggingMessageNotificationParam) {
        // Counted before it is queued: a flush that follows waits for it.
        self.pending.fetch_add(1, Ordering::AcqRel);
        if self
            .sender
            .send(Queued::Message(server.to_owned(), message))
            .is_err()
        {
            self.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The severity of `level`, least first.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_goes_with_the_earliest_request_to_its_server_else_one_to_any() {
        let waiting = Arc::new(Waiting::default());
        assert_eq!(waiting.of("one"), None, "nothing waits: the listen stream");
        let read = waiting.enter(RequestId::Number(1), None);
        let first = waiting.enter(RequestId::Number(2), Some("one".into()));
        let _second = waiting.enter(RequestId::Number(3), Some("one".into()));
        let _other = waiting.enter(RequestId::Number(4), Some("two".into()));
        assert_eq!(waiting.of("one"), Some(RequestId::Number(2)));
        assert_eq!(waiting.of("two"), Some(RequestId::Number(4)));
        assert_eq!(
            waiting.of("three"),
            Some(RequestId::Number(1)),
            "a request whose server is not known"
        );
        drop(first);
        assert_eq!(waiting.of("one"), Some(RequestId::Number(3)));
        drop(read);
        assert_eq!(waiting.of("three"), None);
    }
}
