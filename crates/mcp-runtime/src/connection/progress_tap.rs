//! Progress reports and log messages handed on as they are read, in the order read.
//!
//! rmcp hands every notification it reads to the client handler on a task of its own
//! (`spawn_service_task`), while it hands an answer to the waiting request at once. A
//! report the server sent just before its answer could then reach the call after the
//! call had ended, and be lost, and two reports (or two log messages) could swap
//! places. [`ProgressTap`] wraps the transport and takes `notifications/progress` and
//! `notifications/message` out of what it reads, handing each to [`Answers::progress`]
//! or [`Answers::log`] before reading on: rmcp never sees them.
//!
//! Invariants:
//! 1. A report or message is handed over before the transport reads the next
//!    message: every report a server sent before a call's answer has reached the
//!    call's watch before rmcp sees the answer, every log message has reached the
//!    host's handler, and both arrive in the order they were read.
//! 2. Every other message passes through unchanged, in order.
//! 3. Dropping the future of `receive` loses nothing the inner transport did not lose:
//!    a report is handed over with no await between reading it and handing it over.

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    RoleClient,
    model::{JsonRpcMessage, JsonRpcNotification, ServerNotification},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

use super::answers::Answers;

/// A transport whose progress reports and log messages go straight to the
/// connection's [`Answers`].
pub(super) struct ProgressTap<T> {
    inner: T,
    answers: Arc<Answers>,
}

impl<T> ProgressTap<T> {
    /// `inner`, its progress reports handed to `answers` as they are read.
    pub(super) fn new(inner: T, answers: Arc<Answers>) -> Self {
        Self { inner, answers }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.inner.receive().await? {
                // Invariants 1 and 3: handed over before the next read.
                JsonRpcMessage::Notification(JsonRpcNotification {
                    notification: ServerNotification::ProgressNotification(progress),
                    ..
                }) => self.answers.progress(progress.params),
                JsonRpcMessage::Notification(JsonRpcNotification {
                    notification: ServerNotification::LoggingMessageNotification(message),
                    ..
                }) => self.answers.log(message.params),
                message => return Some(message),
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use std::{
        collections::VecDeque,
        sync::{Arc, Mutex},
    };

    use rmcp::model::{
        EmptyResult, NumberOrString, ProgressNotification, ProgressNotificationParam,
        ProgressToken, RequestId, ServerResult,
    };

    use super::*;
    use crate::{host::HostHandlers, progress::OnProgress};

    /// A transport that reads what it was given, then ends.
    struct Given(VecDeque<RxJsonRpcMessage<RoleClient>>);

    impl Transport<RoleClient> for Given {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
            self.0.pop_front()
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn token() -> ProgressToken {
        ProgressToken(NumberOrString::Number(7))
    }

    fn report(progress: f64) -> RxJsonRpcMessage<RoleClient> {
        JsonRpcMessage::notification(ServerNotification::ProgressNotification(
            ProgressNotification::new(ProgressNotificationParam::new(token(), progress)),
        ))
    }

    fn answer() -> RxJsonRpcMessage<RoleClient> {
        JsonRpcMessage::response(
            ServerResult::EmptyResult(EmptyResult {}),
            RequestId::Number(1),
        )
    }

    #[tokio::test]
    async fn reports_reach_the_watch_in_order_before_the_answer_is_read() {
        let answers = Arc::new(Answers::new("s", HostHandlers::default()));
        let seen: Arc<Mutex<Vec<f64>>> = Arc::default();
        let _watch = answers.watch_progress(
            token(),
            OnProgress::new({
                let seen = seen.clone();
                move |progress| seen.lock().unwrap().push(progress.progress)
            }),
        );
        let given = Given([report(1.0), report(2.0), answer(), report(3.0)].into());
        let mut tap = ProgressTap::new(given, answers.clone());

        let first = tap.receive().await.expect("the answer");
        assert!(matches!(first, JsonRpcMessage::Response(_)), "{first:?}");
        // Invariant 1: both reports before the answer were handed over first.
        assert_eq!(*seen.lock().unwrap(), [1.0, 2.0]);
        assert!(
            tap.receive().await.is_none(),
            "reports are never handed to rmcp"
        );
        assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);
    }

    #[tokio::test]
    #[allow(
        deprecated,
        reason = "rmcp marks logging deprecated (SEP-2577); servers of every revision send it"
    )]
    async fn log_messages_reach_the_host_in_order_and_never_rmcp() {
        struct Kept(Arc<Mutex<Vec<String>>>);
        impl crate::host::Logs for Kept {
            fn log(&self, _server: &str, message: rmcp::model::LoggingMessageNotificationParam) {
                self.0.lock().unwrap().push(message.data.to_string());
            }
        }
        let kept: Arc<Mutex<Vec<String>>> = Arc::default();
        let answers = Arc::new(Answers::new(
            "s",
            HostHandlers::new().with_logs(Kept(kept.clone())),
        ));
        let log = |text: &str| -> RxJsonRpcMessage<RoleClient> {
            JsonRpcMessage::notification(
                serde_json::from_value(serde_json::json!({
                    "method": "notifications/message",
                    "params": {"level": "info", "data": text},
                }))
                .unwrap(),
            )
        };
        let given = Given([log("one"), log("two"), answer()].into());
        let mut tap = ProgressTap::new(given, answers);
        let first = tap.receive().await.expect("the answer");
        assert!(matches!(first, JsonRpcMessage::Response(_)), "{first:?}");
        assert_eq!(*kept.lock().unwrap(), [r#""one""#, r#""two""#]);
    }
}
