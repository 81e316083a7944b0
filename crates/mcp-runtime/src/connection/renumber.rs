//! Request ids that go on where an earlier protocol engine on the same pipes left off.
//!
//! rmcp numbers the requests of each engine from 0. When a local server answers the
//! era probe as a handshake server, `initialize` follows on the same process, sent
//! by a new engine ([`super::reclaim`]): without a change it would be request 0
//! again, the id of the probe. A server may then take its late or repeated answer to
//! the probe for the answer to `initialize`, and its own log cannot tell the two
//! apart. [`Renumbered`] shifts the ids of the new engine's requests past every id
//! sent before on the transport, and shifts the answers back.
//!
//! Invariants:
//! 1. Until [`Renumbered::go_on`] is called, every message passes untouched.
//! 2. After it, a numeric id `n` that the engine sends (a request's, or the one a
//!    `notifications/cancelled` names) goes out as `n + offset`, where `offset` is one
//!    more than the highest numeric id sent before; an answer whose id is `m >= offset`
//!    (a number, or a string of its digits) comes back as `m - offset`, in the same
//!    form. Ids of the server's own requests, and answers to ids sent before the
//!    shift (the transport drops those as answers to requests not in flight), are
//!    left as they are.

use std::borrow::Cow;

use rmcp::{
    RoleClient,
    model::{ClientNotification, JsonRpcMessage, RequestId},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

/// A transport whose request ids can be shifted past those it already sent.
pub(super) struct Renumbered<T> {
    inner: T,
    /// The highest numeric id sent so far, as it went out.
    highest_sent: Option<i64>,
    /// Added to the engine's ids on their way out (0 until [`Self::go_on`]).
    offset: i64,
}

impl<T> Renumbered<T> {
    /// `inner`, its ids untouched for now.
    pub(super) fn new(inner: T) -> Self {
        Self {
            inner,
            highest_sent: None,
            offset: 0,
        }
    }

    /// From now on, numbers the requests of a new engine (which starts again from
    /// 0) after every id sent so far (invariant 2).
    pub(super) fn go_on(&mut self) {
        self.offset = self
            .highest_sent
            .map_or(0, |highest| highest.saturating_add(1));
    }

    /// `id` as it goes out.
    fn out(&mut self, id: &mut RequestId) {
        if let RequestId::Number(number) = id {
            *number = number.saturating_add(self.offset);
            self.highest_sent = Some(self.highest_sent.map_or(*number, |high| high.max(*number)));
        }
    }
}

/// `id`, an answer's, as the engine that sent its request knows it.
fn back(id: &mut RequestId, offset: i64) {
    match id {
        RequestId::Number(number) if *number >= offset => *number -= offset,
        RequestId::String(digits) => {
            if let Ok(number) = digits.parse::<i64>()
                && number >= offset
            {
                *id = RequestId::String((number - offset).to_string().into());
            }
        }
        RequestId::Number(_) => {}
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Renumbered<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &mut item {
            JsonRpcMessage::Request(request) => self.out(&mut request.id),
            JsonRpcMessage::Notification(notification) if self.offset != 0 => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &mut notification.notification
                    && let Some(id) = &mut cancelled.params.request_id
                    && let RequestId::Number(number) = id
                {
                    *number = number.saturating_add(self.offset);
                }
            }
            _ => {}
        }
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let offset = self.offset;
        let received = self.inner.receive();
        async move {
            let mut message = received.await?;
            if offset != 0 {
                match &mut message {
                    JsonRpcMessage::Response(response) => back(&mut response.id, offset),
                    JsonRpcMessage::Error(error) => {
                        if let Some(id) = &mut error.id {
                            back(id, offset);
                        }
                    }
                    JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
                }
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
    use std::sync::{Arc, Mutex};

    use rmcp::model::{
        CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientRequest,
        ErrorData, PingRequest, ServerJsonRpcMessage, ServerResult,
    };

    use super::*;

    /// Records what is sent; answers with the queued messages.
    #[derive(Default)]
    struct Recorder {
        sent: Arc<Mutex<Vec<ClientJsonRpcMessage>>>,
        answers: Vec<ServerJsonRpcMessage>,
    }

    impl Transport<RoleClient> for Recorder {
        type Error = std::io::Error;

        fn name() -> Cow<'static, str> {
            "recorder".into()
        }

        fn send(
            &mut self,
            item: ClientJsonRpcMessage,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            self.sent.lock().unwrap().push(item);
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
            (!self.answers.is_empty()).then(|| self.answers.remove(0))
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn ping(id: i64) -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            RequestId::Number(id),
        )
    }

    fn sent_id(message: &ClientJsonRpcMessage) -> RequestId {
        match message {
            JsonRpcMessage::Request(request) => request.id.clone(),
            JsonRpcMessage::Notification(notification) => match &notification.notification {
                ClientNotification::CancelledNotification(cancelled) => {
                    cancelled.params.request_id.clone().unwrap()
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    fn answer_id(message: ServerJsonRpcMessage) -> Option<RequestId> {
        match message {
            JsonRpcMessage::Response(response) => Some(response.id),
            JsonRpcMessage::Error(error) => error.id,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_new_engine_s_ids_go_on_after_the_old_one_s_and_answers_come_back() {
        let sent = Arc::default();
        let recorder = Recorder {
            sent: Arc::clone(&sent),
            answers: vec![
                ServerJsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(2)),
                ServerJsonRpcMessage::error(
                    ErrorData::internal_error("no", None),
                    Some(RequestId::String("3".into())),
                ),
                // An answer to an id sent before the shift stays as it came.
                ServerJsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(1)),
            ],
        };
        let mut transport = Renumbered::new(recorder);
        // The probe's engine: ids 0 and 1, untouched.
        transport.send(ping(0)).await.unwrap();
        transport.send(ping(1)).await.unwrap();
        transport.go_on();
        // The next engine starts from 0 again.
        transport.send(ping(0)).await.unwrap();
        let cancelled = ClientJsonRpcMessage::notification(
            ClientNotification::CancelledNotification(CancelledNotification::new(
                CancelledNotificationParam::new(Some(RequestId::Number(1)), None),
            )),
        );
        transport.send(cancelled).await.unwrap();
        let sent: Vec<RequestId> = sent.lock().unwrap().iter().map(sent_id).collect();
        assert_eq!(
            sent,
            [0, 1, 2, 3].map(RequestId::Number),
            "the probe's ids, then the new engine's after them"
        );
        assert_eq!(
            answer_id(transport.receive().await.unwrap()),
            Some(RequestId::Number(0))
        );
        assert_eq!(
            answer_id(transport.receive().await.unwrap()),
            Some(RequestId::String("1".into()))
        );
        assert_eq!(
            answer_id(transport.receive().await.unwrap()),
            Some(RequestId::Number(1)),
            "below the offset: left as it came"
        );
    }

    #[tokio::test]
    async fn without_go_on_nothing_changes() {
        let recorder = Recorder {
            answers: vec![ServerJsonRpcMessage::response(
                ServerResult::empty(()),
                RequestId::Number(5),
            )],
            ..Recorder::default()
        };
        let sent = Arc::clone(&recorder.sent);
        let mut transport = Renumbered::new(recorder);
        transport.send(ping(5)).await.unwrap();
        assert_eq!(sent_id(&sent.lock().unwrap()[0]), RequestId::Number(5));
        assert_eq!(
            answer_id(transport.receive().await.unwrap()),
            Some(RequestId::Number(5))
        );
    }
}
