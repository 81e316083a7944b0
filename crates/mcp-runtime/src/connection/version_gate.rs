//! The answer to `initialize`, checked before the handshake goes on.
//!
//! rmcp's client takes any protocol version a server answers `initialize` with, and
//! sends `notifications/initialized` at once, before the caller can look at the
//! answer. A server told it is initialized in a revision the client then refuses
//! sees a session the client walks away from, and a Streamable HTTP server refuses
//! the notification itself (its `MCP-Protocol-Version` header then names a revision
//! it may not know), so the start fails as a closed connection, not as the version
//! mismatch it is. [`Gate`] wraps the transport and reads the answer as it arrives.
//!
//! The gate also reads an answer to `initialize` that is a result of another kind: rmcp
//! takes it for a server that did not answer (it reports no more than that the result
//! was of another kind, and the start then waited for the process to exit, which
//! blamed the exit). What the server sent and what is missing from it (`missing field
//! `protocolVersion``) is the reason the start reports.
//!
//! Invariants:
//! 1. An `initialize` answer whose version is not accepted ([`Accepted`]), or that is
//!    not an initialize result, is never handed to rmcp: the gate ends its input
//!    instead, so rmcp fails the handshake without sending
//!    `notifications/initialized`, and the refusal (naming both versions, or what
//!    came and why it is not an initialize result) is what the start reports
//!    ([`Refusal::take`]).
//! 2. Only the first answer to `initialize` is read; every other message passes
//!    through unchanged, in order.

use std::{
    borrow::Cow,
    sync::{Arc, Mutex},
};

use rmcp::{
    RoleClient,
    model::{
        ClientRequest, InitializeResult, JsonRpcMessage, ProtocolVersion, RequestId, ServerResult,
    },
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

use crate::{
    sync::lock,
    transport::{
        answer_id::answers,
        error::{MessageRefused, RequestError, StartupError},
    },
};

/// Which answers to `initialize` a start accepts.
#[derive(Clone, Debug)]
pub(super) enum Accepted {
    /// A handshake revision mcp-runtime speaks ([`super::ACCEPTED_PROTOCOL_VERSIONS`]).
    Spoken,
    /// Only the revision `protocol` pins.
    Pinned(ProtocolVersion),
}

impl Accepted {
    /// The pinned revision, if any, else any revision mcp-runtime speaks.
    pub(super) fn from_pin(pinned: Option<&ProtocolVersion>) -> Self {
        pinned.map_or(Self::Spoken, |pinned| Self::Pinned(pinned.clone()))
    }

    /// Whether a server may answer `initialize` with `answered`; the startup error
    /// naming both when it may not.
    fn check(&self, answered: &ProtocolVersion) -> Result<(), StartupError> {
        match self {
            Self::Spoken if super::ACCEPTED_PROTOCOL_VERSIONS.contains(answered) => Ok(()),
            Self::Spoken => Err(StartupError::UnsupportedProtocolVersion {
                answered: answered.to_string(),
            }),
            Self::Pinned(pinned) if pinned == answered => Ok(()),
            Self::Pinned(pinned) => Err(StartupError::PinnedProtocolVersionRefused {
                pinned: pinned.to_string(),
                answered: answered.to_string(),
            }),
        }
    }
}

/// Where a [`Gate`] leaves its refusal for the start to report.
#[derive(Clone, Debug, Default)]
pub(super) struct Refusal(Arc<Mutex<Option<StartupError>>>);

impl Refusal {
    /// The refusal, if the gate refused the server's answer: the reason the
    /// handshake failed, whatever rmcp made of the input ending.
    pub(super) fn take(&self) -> Option<StartupError> {
        lock(&self.0).take()
    }
}

/// A transport that refuses an `initialize` answer mcp-runtime will not speak.
pub(super) struct Gate<T> {
    inner: T,
    server: Arc<str>,
    accepted: Accepted,
    refusal: Refusal,
    /// The id of the `initialize` request, once sent.
    initialize: Arc<Mutex<Option<RequestId>>>,
    /// Whether the answer to `initialize` has been read.
    answered: Arc<Mutex<bool>>,
}

impl<T> Gate<T> {
    /// `inner`, the transport to `server`, gated; the refusal, if any, is left in the
    /// returned [`Refusal`].
    pub(super) fn new(inner: T, server: &str, accepted: Accepted) -> (Self, Refusal) {
        let refusal = Refusal::default();
        let gate = Self {
            inner,
            server: server.into(),
            accepted,
            refusal: refusal.clone(),
            initialize: Arc::default(),
            answered: Arc::default(),
        };
        (gate, refusal)
    }
}

/// Why `answer`, the answer to `initialize` read as a result of another kind, is not
/// an initialize result, with what it holds.
fn not_an_initialize_result(server: &str, answer: &ServerResult) -> StartupError {
    let value = serde_json::to_value(answer).unwrap_or_default();
    let problem = match serde_json::from_value::<InitializeResult>(value.clone()) {
        Err(error) => format!(
            "not an `initialize` result: {}",
            crate::redact::server_text(&error.to_string())
        ),
        Ok(_) => "not an `initialize` result".to_owned(),
    };
    StartupError::Handshake {
        source: RequestError::Refused(MessageRefused::Unreadable {
            server: server.to_owned(),
            problem,
            sent: crate::transport::error::sent(value.to_string().as_bytes()),
        }),
        stderr_tail: Vec::new(),
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Gate<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && let ClientRequest::InitializeRequest(_) = &request.request
        {
            *lock(&self.initialize) = Some(request.id.clone());
        }
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let received = self.inner.receive();
        let server = self.server.clone();
        let accepted = self.accepted.clone();
        let refusal = self.refusal.clone();
        let initialize = self.initialize.clone();
        let answered = self.answered.clone();
        async move {
            let message = received.await?;
            let JsonRpcMessage::Response(response) = &message else {
                return Some(message);
            };
            let refused = match &response.result {
                ServerResult::InitializeResult(result)
                    if !std::mem::replace(&mut *lock(&answered), true) =>
                {
                    accepted.check(&result.protocol_version).err()
                }
                ServerResult::InitializeResult(_) => None,
                other => {
                    let answers_initialize = lock(&initialize)
                        .as_ref()
                        .is_some_and(|id| answers(id, &response.id));
                    (answers_initialize && !std::mem::replace(&mut *lock(&answered), true))
                        .then(|| not_an_initialize_result(&server, other))
                }
            };
            if let Some(refused) = refused {
                tracing::debug!(
                    server = &*server,
                    "{}",
                    crate::transport::error::chain(&refused)
                );
                *lock(&refusal.0) = Some(refused);
                return None;
            }
            Some(message)
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spoken_revisions_pass_and_others_are_refused_naming_both() {
        for version in super::super::ACCEPTED_PROTOCOL_VERSIONS {
            assert!(Accepted::Spoken.check(&version).is_ok(), "{version}");
        }
        let unknown: ProtocolVersion = serde_json::from_value("2024-10-07".into()).unwrap();
        for version in [ProtocolVersion::V_2026_07_28, unknown] {
            let refused = Accepted::Spoken.check(&version).unwrap_err();
            assert!(
                refused
                    .to_string()
                    .contains(&format!("`{version}`, which mcp-runtime does not speak")),
                "{refused}"
            );
        }
    }

    #[test]
    fn an_answer_of_another_kind_says_what_is_missing_and_shows_it() {
        let answer: ServerResult = serde_json::from_value(serde_json::json!({
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "0"},
        }))
        .unwrap();
        assert!(!matches!(answer, ServerResult::InitializeResult(_)));
        let refused = not_an_initialize_result("srv", &answer);
        assert_eq!(
            crate::transport::error::chain(&refused),
            r#"handshake failed: server `srv` sent an answer mcp-runtime cannot read (not an `initialize` result: missing field `protocolVersion`): `{"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"0"}}` (the server does not follow the MCP specification; report it to its author)"#
        );
    }

    #[test]
    fn a_pin_accepts_only_itself() {
        let pinned = Accepted::from_pin(Some(&ProtocolVersion::V_2025_06_18));
        assert!(pinned.check(&ProtocolVersion::V_2025_06_18).is_ok());
        assert_eq!(
            pinned
                .check(&ProtocolVersion::V_2025_11_25)
                .unwrap_err()
                .to_string(),
            "the server answered `initialize` with protocol version `2025-11-25`, and `protocol` pins `2025-06-18` (set `protocol` to `auto`, or to a version the server speaks)"
        );
    }
}
