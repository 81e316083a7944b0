//! Request streams that end with their request's error when they cannot be resumed.
//!
//! rmcp's session manager numbers a request's events `index/stream`. A client whose
//! stream breaks before the answer (its replica of a fleet was killed, or its
//! connection dropped) asks to resume it with the last such id. When the stream is
//! not in this process (it ran on a replica that is gone, or rmcp dropped it once
//! its answer was sent), rmcp answers with an empty stream, which a client takes as
//! "ask again later" (SEP-1699 polling) and does forever: its call hangs.
//!
//! Invariants:
//! 1. Every event of a request's stream that has an id carries, after rmcp's id, a
//!    tag: this process's mark and the request's JSON-RPC id (`index/stream/tag`),
//!    so that any process can name the request of a stream it never had. A request
//!    whose string id is longer than [`LONGEST_STRING_ID`] bytes of UTF-8 is not
//!    run: its stream is its error alone (an event without an id), as a stream it
//!    could not name would end empty on another replica.
//! 2. A resumption whose tag bears another process's mark is answered at once with
//!    the request's error, under the request's own id, saying that its answer is
//!    lost: rmcp is not asked, as its stream numbers start again in each process and
//!    the one named may be another request's here. One bearing this process's mark
//!    is rmcp's to serve, its events tagged as before; when rmcp cannot, it ends
//!    with the request's error the same way. An untagged one is rmcp's alone.
//! 3. The tag is the client's own id and gives no authority: a forged one earns its
//!    sender an error for a request of its own session.
//! 4. rmcp's own ids are kept as it made them (the gateway sets no event store).

use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use rmcp::{
    model::{ClientJsonRpcMessage, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage},
    transport::streamable_http_server::session::{
        RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
        local::{LocalSessionManager, LocalSessionManagerError},
    },
};

/// The longest string id of a handshake session's request that this gateway runs
/// (invariant 1). In hex, as a tag carries it, it is 2 KiB of the `Last-Event-ID`
/// header a resumption sends: within what haproxy (15 KiB of request head by
/// default: `tune.bufsize` less `tune.maxrewrite`) and hyper admit.
const LONGEST_STRING_ID: usize = 1024;

/// The length of a process's mark: 16 hex digits.
const MARK_LEN: usize = 16;

/// rmcp's session manager, with request streams that name their requests.
pub(crate) struct Resumable {
    inner: Arc<LocalSessionManager>,
    /// This process's mark, drawn at random (invariant 2).
    mark: String,
}

impl Resumable {
    pub(crate) fn new(inner: Arc<LocalSessionManager>) -> Self {
        debug_assert!(inner.event_store().is_none(), "invariant 4");
        let mut mark = [0; MARK_LEN / 2];
        getrandom::fill(&mut mark).expect("the operating system provides random bytes");
        Self {
            inner,
            mark: hex::encode(mark),
        }
    }

    /// The tag of the events of request `id`, if it can carry it (invariant 1).
    fn tag(&self, id: &RequestId) -> Option<String> {
        use std::fmt::Write as _;
        let mut tag = self.mark.clone();
        match id {
            RequestId::Number(number) => {
                let _ = write!(tag, "n{number}");
            }
            // In hex: an event id travels back as a header, whose value must be
            // visible ASCII.
            RequestId::String(text) if text.len() <= LONGEST_STRING_ID => {
                tag.push('s');
                tag.push_str(&hex::encode(text.as_bytes()));
            }
            RequestId::String(_) => return None,
        }
        Some(tag)
    }
}

impl SessionManager for Resumable {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let tag = match &message {
            JsonRpcMessage::Request(request) => {
                let Some(tag) = self.tag(&request.id) else {
                    return Ok(stream::iter([too_long(request.id.clone())]).right_stream());
                };
                Some(tag)
            }
            _ => None,
        };
        let events = self.inner.create_stream(id, message).await?;
        Ok(tagged(events, tag).left_stream())
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    /// Invariant 2.
    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let (event, tag) = split(&last_event_id);
        let Some((mark, request)) = tag.and_then(untag) else {
            let events = self.inner.resume(id, event.to_owned()).await?;
            return Ok(tagged(events, None).left_stream());
        };
        let gone = if mark == self.mark {
            match self.inner.resume(id, event.to_owned()).await {
                Ok(events) => return Ok(tagged(events, self.tag(&request)).left_stream()),
                Err(error) => {
                    tracing::info!(session = %id, %error, "a client resumed a request's stream this process no longer has; it is told the answer is lost");
                    "its stream ended here before the client read it all, and cannot be resumed"
                }
            }
        } else {
            tracing::info!(session = %id, "a client resumed the stream of a request another process ran; it is told the answer is lost");
            "the gateway process that ran it is gone"
        };
        Ok(stream::iter([lost(request, gone)]).right_stream())
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }
}

/// `events` with `tag` after each one's id (invariant 1).
fn tagged(
    events: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    tag: Option<String>,
) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    events.map(move |mut event| {
        if let (Some(tag), Some(id)) = (&tag, &mut event.event_id) {
            id.push('/');
            id.push_str(tag);
        }
        event
    })
}

/// The error that ends the stream of `request`, whose answer is lost because of
/// `why`.
fn lost(request: RequestId, why: &str) -> ServerSseMessage {
    let error = ErrorData::internal_error(
        format!("this request's answer is lost: {why}; whether it took effect is unknown"),
        None,
    );
    ServerSseMessage::from_message(ServerJsonRpcMessage::error(error, Some(request)))
}

/// The error that answers request `id`, not run: its id is longer than a stream's
/// events can carry (invariant 1).
fn too_long(id: RequestId) -> ServerSseMessage {
    let error = ErrorData::invalid_request(
        format!(
            "request ids longer than {LONGEST_STRING_ID} bytes of UTF-8 are refused: a request's \
             id travels in the event ids of its answer's stream, so that a broken stream \
             can be resumed; send a shorter id"
        ),
        None,
    );
    ServerSseMessage::from_message(ServerJsonRpcMessage::error(error, Some(id)))
}

/// The process mark and the request id a tag names, if it names one: the mark, then
/// `n` and a number, or `s` and the string in hex.
fn untag(tag: &str) -> Option<(&str, RequestId)> {
    let mark = tag.get(..MARK_LEN)?;
    let named = &tag[MARK_LEN..];
    if let Some(number) = named.strip_prefix('n') {
        if !number
            .bytes()
            .all(|byte| byte.is_ascii_digit() || byte == b'-')
        {
            return None;
        }
        return number
            .parse()
            .ok()
            .map(|number| (mark, RequestId::Number(number)));
    }
    let digits = named.strip_prefix('s')?;
    if digits.len() > 2 * LONGEST_STRING_ID {
        return None;
    }
    let text = String::from_utf8(hex::decode(digits).ok()?).ok()?;
    Some((mark, RequestId::String(text.into())))
}

/// rmcp's part of an event id, and the tag after it, if any.
fn split(event_id: &str) -> (&str, Option<&str>) {
    match event_id.match_indices('/').nth(1) {
        Some((at, _)) => (&event_id[..at], Some(&event_id[at + 1..])),
        None => (event_id, None),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::{
        ErrorData as McpError, ServerHandler, ServiceExt as _,
        model::{
            CallToolRequestParams, CallToolResponse, CallToolResult, ServerCapabilities,
            ServerConfig,
        },
        service::RequestContext,
    };
    use tokio::sync::Notify;

    use super::*;

    /// A server whose tool calls end when told to.
    #[derive(Clone, Default)]
    struct Held(Arc<Notify>);

    impl ServerHandler for Held {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            _context: RequestContext<rmcp::RoleServer>,
        ) -> Result<CallToolResponse, McpError> {
            self.0.notified().await;
            Ok(CallToolResult::success(Vec::new()).into())
        }
    }

    fn message(value: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(value).unwrap()
    }

    fn call(id: impl Into<serde_json::Value>) -> ClientJsonRpcMessage {
        message(
            serde_json::json!({"jsonrpc": "2.0", "id": id.into(), "method": "tools/call",
            "params": {"name": "t", "arguments": {}}}),
        )
    }

    /// A session of `sessions` whose server is `server`, past its handshake.
    async fn open(sessions: &Resumable, server: Held) -> SessionId {
        let (session, transport) = sessions.create_session().await.unwrap();
        tokio::spawn(async move {
            if let Ok(running) = server.serve(transport).await {
                let _ = running.waiting().await;
            }
        });
        let initialize = message(serde_json::json!({"jsonrpc": "2.0", "id": 0,
            "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
        sessions
            .initialize_session(&session, initialize)
            .await
            .unwrap();
        let initialized = message(serde_json::json!({"jsonrpc": "2.0",
            "method": "notifications/initialized"}));
        sessions
            .accept_message(&session, initialized)
            .await
            .unwrap();
        session
    }

    fn id_of(event: &ServerSseMessage) -> &str {
        event.event_id.as_deref().unwrap()
    }

    fn json_of(event: &ServerSseMessage) -> serde_json::Value {
        serde_json::to_value(event.message.as_deref().unwrap()).unwrap()
    }

    #[test]
    fn a_tag_names_its_process_and_request() {
        let sessions = Resumable::new(Arc::default());
        for id in [
            RequestId::Number(7),
            RequestId::Number(-1),
            RequestId::String("call-1 é/\n".into()),
            RequestId::String("".into()),
        ] {
            let tag = sessions.tag(&id).unwrap();
            assert!(
                tag.bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
            );
            assert_eq!(untag(&tag), Some((sessions.mark.as_str(), id)));
        }
        let longest = RequestId::String("x".repeat(LONGEST_STRING_ID).into());
        let tag = sessions.tag(&longest).unwrap();
        assert_eq!(untag(&tag), Some((sessions.mark.as_str(), longest)));
        let long = RequestId::String("x".repeat(LONGEST_STRING_ID + 1).into());
        assert_eq!(sessions.tag(&long), None);
        let mark = "0123456789abcdef";
        for forged in ["", "q1", "n", "nx", "n+7", "s0", "szz", "s+f", "sff"] {
            assert_eq!(untag(&format!("{mark}{forged}")), None, "{forged}");
        }
        assert_eq!(untag("n7"), None, "no mark");
        assert_eq!(split("3/5/t"), ("3/5", Some("t")));
        assert_eq!(split("3/5"), ("3/5", None));
        assert_eq!(split("3"), ("3", None));
    }

    #[tokio::test]
    async fn a_broken_stream_is_resumed_here_and_named_the_same() {
        let sessions = Resumable::new(Arc::default());
        let server = Held::default();
        let session = open(&sessions, server.clone()).await;
        let mut events = Box::pin(sessions.create_stream(&session, call(7)).await.unwrap());
        let priming = events.next().await.unwrap();
        assert!(id_of(&priming).ends_with(&format!("/{}n7", sessions.mark)));
        drop(events);

        let resumed = sessions
            .resume(&session, id_of(&priming).to_owned())
            .await
            .unwrap();
        server.0.notify_one();
        let resumed: Vec<ServerSseMessage> = resumed.collect().await;
        let answer = resumed.last().unwrap();
        assert_eq!(json_of(answer)["id"], 7);
        assert!(json_of(answer)["result"].is_object(), "{}", json_of(answer));
        for event in &resumed {
            assert!(id_of(event).ends_with("n7"), "{}", id_of(event));
        }

        // Its answer sent, rmcp keeps the stream no more: a resumption now is told so.
        let late = sessions
            .resume(&session, id_of(&priming).to_owned())
            .await
            .unwrap();
        let late: Vec<ServerSseMessage> = late.collect().await;
        assert_eq!(late.len(), 1);
        assert_eq!(json_of(&late[0])["id"], 7);
        let text = json_of(&late[0])["error"]["message"].to_string();
        assert!(
            text.contains("answer is lost: its stream ended here"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_stream_of_another_process_ends_with_its_requests_error_and_touches_none_here() {
        let (gone, here) = (
            Resumable::new(Arc::default()),
            Resumable::new(Arc::default()),
        );
        let server = Held::default();
        let session = open(&here, server.clone()).await;
        // This process's stream 0 is another request: the one the gone process named
        // by the same number is not it.
        let live = here.create_stream(&session, call(1)).await.unwrap();
        let elsewhere = format!("1/0/{}", gone.tag(&RequestId::Number(7)).unwrap());
        let resumed = here.resume(&session, elsewhere).await.unwrap();
        // Bounded: a resumption of the live stream would wait for its answer.
        let ended: Vec<ServerSseMessage> =
            tokio::time::timeout(std::time::Duration::from_secs(10), resumed.collect())
                .await
                .expect("ends at once");
        assert_eq!(ended.len(), 1);
        assert_eq!(json_of(&ended[0])["id"], 7);
        let text = json_of(&ended[0])["error"]["message"].to_string();
        assert!(
            text.contains("answer is lost: the gateway process that ran it is gone"),
            "{text}"
        );
        server.0.notify_one();
        let live: Vec<ServerSseMessage> = live.collect().await;
        assert_eq!(
            json_of(live.last().unwrap())["id"],
            1,
            "the live call is answered"
        );

        // Untagged, or with a tag that names nothing: rmcp's own answer stands.
        for untagged in ["0/99".to_owned(), format!("0/99/{}sz", here.mark)] {
            assert!(
                here.resume(&session, untagged.clone()).await.is_err(),
                "{untagged}"
            );
        }
    }

    #[tokio::test]
    async fn a_request_whose_id_no_event_can_carry_is_refused_and_not_run() {
        let sessions = Resumable::new(Arc::default());
        let server = Held::default();
        let session = open(&sessions, server.clone()).await;
        let long = "x".repeat(LONGEST_STRING_ID + 1);
        let refused = sessions
            .create_stream(&session, call(long.clone()))
            .await
            .unwrap();
        // Bounded: a request that ran would wait for its answer, which never comes.
        let refused: Vec<ServerSseMessage> =
            tokio::time::timeout(std::time::Duration::from_secs(10), refused.collect())
                .await
                .expect("refused at once");
        assert_eq!(refused.len(), 1);
        assert_eq!(json_of(&refused[0])["id"], long.as_str());
        let text = json_of(&refused[0])["error"]["message"].to_string();
        assert!(
            text.contains("longer than 1024 bytes of UTF-8 are refused"),
            "{text}"
        );

        // The longest that is run is tagged, and resumed on another process as lost.
        let longest = "y".repeat(LONGEST_STRING_ID);
        let mut events = Box::pin(
            sessions
                .create_stream(&session, call(longest.clone()))
                .await
                .unwrap(),
        );
        let priming = events.next().await.unwrap();
        let elsewhere = Resumable::new(Arc::default());
        let other = open(&elsewhere, Held::default()).await;
        let resumed: Vec<ServerSseMessage> = elsewhere
            .resume(&other, id_of(&priming).to_owned())
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(json_of(&resumed[0])["id"], longest.as_str());
        server.0.notify_one();
        let answer = events.collect::<Vec<_>>().await;
        assert_eq!(json_of(answer.last().unwrap())["id"], longest.as_str());
    }
}
