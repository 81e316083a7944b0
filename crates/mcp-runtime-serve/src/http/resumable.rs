//! Request streams that end with their request's error when they cannot be resumed.
//!
//! rmcp's session manager numbers a request's events `index/stream`. A client whose
//! stream breaks before the answer (its replica of a fleet was killed, say) asks to
//! resume it with the last such id. When the stream is not in this process (it ran on
//! a replica that is gone, or ended longer ago than rmcp keeps it), rmcp answers with
//! an empty stream, which a client takes as "ask again later" (SEP-1699 polling) and
//! does forever: its call hangs.
//!
//! Invariants:
//! 1. Every event of a request's stream carries, after rmcp's id, the request's
//!    JSON-RPC id (`index/stream/tag`), so that any replica can name the request of a
//!    stream it never had. A request whose id is too long to carry has no tag.
//! 2. A resumption rmcp can serve is served by it, its events tagged as before; one
//!    for a stream this process does not have ends at once with the request's error,
//!    under the request's own id, saying that its answer is lost.
//! 3. The tag is the client's own id and gives no authority: a forged one earns its
//!    sender an error for a request of its own session.

use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use rmcp::{
    model::{ClientJsonRpcMessage, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage},
    transport::streamable_http_server::session::{
        RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
        local::{LocalSessionManager, LocalSessionManagerError, SessionError},
    },
};

/// The longest string id a stream's events carry (invariant 1).
const LONGEST_TAGGED_ID: usize = 128;

/// rmcp's session manager, with request streams that name their requests.
pub(crate) struct Resumable {
    inner: Arc<LocalSessionManager>,
}

impl Resumable {
    pub(crate) fn new(inner: Arc<LocalSessionManager>) -> Self {
        Self { inner }
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
            JsonRpcMessage::Request(request) => tag(&request.id),
            _ => None,
        };
        let events = self.inner.create_stream(id, message).await?;
        Ok(tagged(events, tag))
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
        match self.inner.resume(id, event.to_owned()).await {
            Ok(events) => Ok(tagged(events, tag.map(str::to_owned)).left_stream()),
            Err(LocalSessionManagerError::SessionError(SessionError::ChannelClosed(Some(_)))) => {
                let Some(request) = tag.and_then(untag) else {
                    return Err(SessionError::ChannelClosed(None).into());
                };
                tracing::info!(
                    session = %id,
                    "a client resumed the stream of a request this process does not have; it is told the answer is lost"
                );
                Ok(stream::iter([lost(request)]).right_stream())
            }
            Err(error) => Err(error),
        }
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

/// The error that ends the stream of `request`, whose answer is lost.
fn lost(request: RequestId) -> ServerSseMessage {
    let error = ErrorData::internal_error(
        "this request's answer is lost: the gateway process that ran it is gone, or it \
         ended too long ago to be resumed; whether it took effect is unknown",
        None,
    );
    ServerSseMessage::from_message(ServerJsonRpcMessage::error(error, Some(request)))
}

/// A request id as an event id's tag: `n` and a number, or `s` and the string in hex
/// (an event id travels back as a header, whose value must be visible ASCII).
fn tag(id: &RequestId) -> Option<String> {
    match id {
        RequestId::Number(number) => Some(format!("n{number}")),
        RequestId::String(text) if text.len() <= LONGEST_TAGGED_ID => {
            let mut tag = String::with_capacity(1 + 2 * text.len());
            tag.push('s');
            for byte in text.bytes() {
                tag.push_str(&format!("{byte:02x}"));
            }
            Some(tag)
        }
        RequestId::String(_) => None,
    }
}

/// The request id a tag names, if it names one.
fn untag(tag: &str) -> Option<RequestId> {
    if let Some(number) = tag.strip_prefix('n') {
        return number.parse().ok().map(RequestId::Number);
    }
    let hex = tag.strip_prefix('s')?;
    if hex.len() > 2 * LONGEST_TAGGED_ID || hex.len() % 2 != 0 {
        return None;
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes)
        .ok()
        .map(|text| RequestId::String(text.into()))
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
    use super::*;

    fn request(id: RequestId) -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "ping"
        }))
        .unwrap()
    }

    #[test]
    fn a_tag_names_the_request_it_was_made_of() {
        for id in [
            RequestId::Number(7),
            RequestId::Number(-1),
            RequestId::String("call-1 é/\n".into()),
            RequestId::String("".into()),
        ] {
            let tag = tag(&id).unwrap();
            assert!(
                tag.bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
            );
            assert_eq!(untag(&tag), Some(id));
        }
        assert_eq!(tag(&RequestId::String("x".repeat(129).into())), None);
        for forged in ["", "n", "nx", "s0", "szz", "sff", "q1"] {
            assert_eq!(untag(forged), None, "{forged}");
        }
        assert_eq!(split("3/5/n7"), ("3/5", Some("n7")));
        assert_eq!(split("3/5"), ("3/5", None));
        assert_eq!(split("3"), ("3", None));
    }

    /// A server that answers `initialize` and `ping` only.
    struct Quiet;
    impl rmcp::ServerHandler for Quiet {}

    #[tokio::test]
    async fn a_stream_that_is_not_here_ends_with_its_requests_error() {
        use rmcp::ServiceExt as _;
        let sessions = Resumable::new(Arc::default());
        let (session, transport) = sessions.create_session().await.unwrap();
        let _server = tokio::spawn(Quiet.serve(transport));
        let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}});
        sessions
            .initialize_session(&session, serde_json::from_value(initialize).unwrap())
            .await
            .unwrap();
        let initialized =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        sessions
            .accept_message(&session, serde_json::from_value(initialized).unwrap())
            .await
            .unwrap();

        // Every event of a request's stream names the request.
        let events: Vec<ServerSseMessage> = sessions
            .create_stream(&session, request(RequestId::Number(7)))
            .await
            .unwrap()
            .collect()
            .await;
        assert!(events.len() >= 2, "a priming event, then the answer");
        for event in &events {
            let id = event.event_id.as_deref().unwrap();
            assert!(id.ends_with("/n7"), "{id}");
        }
        let answer = serde_json::to_value(events.last().unwrap().message.as_deref().unwrap());
        assert_eq!(answer.unwrap()["id"], 7);

        // A stream this process never had: the request's error, under its own id.
        let resumed = sessions
            .resume(&session, "0/99/n7".to_owned())
            .await
            .unwrap();
        let ended: Vec<ServerSseMessage> = resumed.collect().await;
        assert_eq!(ended.len(), 1);
        let message = serde_json::to_value(ended[0].message.as_deref().unwrap()).unwrap();
        assert_eq!(message["id"], 7);
        assert!(
            message["error"]["message"]
                .as_str()
                .unwrap()
                .contains("answer is lost"),
            "{message}"
        );

        // Without a tag, or with one that names nothing, rmcp's own answer stands.
        for untagged in ["0/99", "0/99/sz"] {
            assert!(
                sessions
                    .resume(&session, untagged.to_owned())
                    .await
                    .is_err(),
                "{untagged}"
            );
        }
    }
}
