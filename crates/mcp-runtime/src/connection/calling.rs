//! One request of a call (a tool call's round, a task's poll, a resource read), sent
//! and waited for within the call's deadline.
//!
//! Every request sent here is in the connection's cancellation ledger while it is in
//! flight ([`super::cancellation`]), so a request given up (deadline, drop) is
//! followed by `notifications/cancelled`, written before the connection closes.
//!
//! Over Streamable HTTP a request's answer may come on an event stream of its own.
//! When that stream ended before the answer and was not resumed (see
//! [`http::Streams`]), the request fails saying so, and why, rather than as a closed
//! connection, or, when its deadline passed while the stream was being resumed, as a
//! timeout. When the server was found gone, the request fails as one whose
//! connection ended, which the connection says how.

use std::time::Duration;

use futures::FutureExt;
use rmcp::{
    Peer, RoleClient, ServiceError,
    model::{ClientRequest, RequestId, ServerResult},
    service::PeerRequestOptions,
};
use tokio_util::sync::CancellationToken;

use super::{
    ANSWER_AFTER_END_WAIT,
    answers::{Answers, ProgressWatch},
    cancellation::{self, Cancellations},
};
use crate::{
    progress::OnProgress,
    transport::{
        error::{RequestError, Resuming},
        http,
    },
};

/// When a call times out: at `at`, moved later by the time paused since the pauses'
/// total was `mark` (a person answering the server's questions).
#[derive(Clone, Copy)]
pub(super) struct Deadline {
    at: tokio::time::Instant,
    mark: Duration,
    /// The timeout it was set `after`.
    timeout: Duration,
}

impl Deadline {
    /// The deadline `timeout` from now, on the pauses of `answers`.
    pub(super) fn after(timeout: Duration, answers: &Answers) -> Self {
        Self {
            at: tokio::time::Instant::now() + timeout,
            mark: answers.pauses().total(),
            timeout,
        }
    }

    /// The timeout it was set after.
    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// How a call (or one of its requests) failed.
#[derive(Debug)]
pub(super) enum CallFailure {
    /// The deadline passed; the cancellation is owed to the server.
    TimedOut,
    /// rmcp failed the request (the server's JSON-RPC error among them), or the
    /// connection ended.
    Failed(rmcp::ServiceError),
    /// The server's answers cannot be followed to a result.
    Refused(super::error::AnswerError),
    /// The server answered something that is not a tool result the runtime can read.
    Invalid(crate::tool_result::InvalidToolResult),
    /// The request failed in a way already described: its answer's event stream was
    /// lost.
    Lost(RequestError),
}

/// How a pause between requests ended.
#[derive(Debug, PartialEq)]
pub(super) enum Paused {
    /// The pause is over.
    Elapsed,
    /// The deadline passed first.
    TimedOut,
    /// The connection ended first.
    Ended,
}

/// What one connection's calls send their requests through.
#[derive(Clone, Copy)]
pub(super) struct Caller<'a> {
    pub(super) peer: &'a Peer<RoleClient>,
    pub(super) cancellations: &'a Cancellations,
    pub(super) answers: &'a Answers,
    /// Cancelled once the connection has ended.
    pub(super) ended: &'a CancellationToken,
    /// An HTTP connection's streams, which say how a request's answer stream was
    /// lost.
    pub(super) streams: Option<&'a http::Streams>,
    /// Whether the connection speaks 2026-07-28, whose requests carry the host's log
    /// level.
    pub(super) stateless: bool,
}

impl<'a> Caller<'a> {
    /// Sends `request` and waits for its answer until `deadline`; its progress goes
    /// to `progress` while it is in flight. A request in flight when the connection
    /// ends fails at once, unless the server's answer is already on its way.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future after the request was sent owes its
    /// `notifications/cancelled`.
    pub(super) fn request(
        &self,
        request: ClientRequest,
        deadline: Deadline,
        progress: Option<&OnProgress>,
    ) -> impl Future<Output = Result<ServerResult, CallFailure>> {
        // Not an `async fn`: its future would hold the request a second time.
        self.request_watched(request, deadline, progress)
            .map(|answered| answered.map(|(answer, _watch)| answer))
    }

    /// As [`Self::request`], and the request's progress watch, which goes on
    /// receiving the reports sent with the request's token until dropped (a
    /// 2025-11-25 task reports on the token of the call that created it).
    pub(super) async fn request_watched(
        &self,
        request: ClientRequest,
        deadline: Deadline,
        progress: Option<&OnProgress>,
    ) -> Result<(ServerResult, Option<ProgressWatch<'a>>), CallFailure> {
        // rmcp's own request helpers hide the request id, which the cancellation needs.
        let handle = self
            .peer
            .send_request_with_option(request, self.options())
            .await
            .map_err(CallFailure::Failed)?;
        // Queued: from here on, dropping this future owes the cancellation.
        let handle_id = handle.id.clone();
        let in_flight = self.cancellations.register(handle.id.clone());
        let watch = progress.map(|on_progress| {
            self.answers
                .watch_progress(handle.progress_token.clone(), on_progress.clone())
        });
        // The answer itself, not rmcp's `RequestHandle::await_response`: that future
        // carries rmcp's request timeouts, which the runtime does not give it (the
        // deadline is its own), and was most of a call's future. Without them it is
        // this receiver (a request sent here registers no subscription to undo).
        let mut response = handle.rx;
        let received = |received: Result<_, tokio::sync::oneshot::error::RecvError>| {
            received.unwrap_or(Err(ServiceError::TransportClosed))
        };
        let waited = tokio::select! {
            biased;
            answer = &mut response => Some(Ok(received(answer))),
            () = self.expiry(deadline) => Some(Err(())),
            () = self.ended.cancelled() => None,
        };
        let waited = match waited {
            Some(waited) => waited,
            // The connection ended (a local server may have exited with its stdout
            // still held open): an answer written before the end still counts.
            None => Ok(tokio::time::timeout(ANSWER_AFTER_END_WAIT, response)
                .await
                .map_or(Err(ServiceError::TransportClosed), received)),
        };
        let lost = self.lost(&handle_id);
        match waited {
            Ok(answer) => {
                in_flight.answered();
                match (answer, lost) {
                    (Ok(answer), _) => Ok((answer, watch)),
                    (Err(ServiceError::TransportClosed), Some(lost)) => {
                        Err(CallFailure::Lost(self.stream_lost(lost, None)))
                    }
                    (Err(error), _) => Err(CallFailure::Failed(error)),
                }
            }
            Err(()) => {
                in_flight.give_up(cancellation::TIMED_OUT);
                match lost {
                    Some(lost) => Err(CallFailure::Lost(
                        self.stream_lost(lost, Some(deadline.timeout)),
                    )),
                    None => Err(CallFailure::TimedOut),
                }
            }
        }
    }

    /// How request `id`'s answer stream was lost, if it was (taking the record) and
    /// the server is not known to be gone (the connection's end then says more).
    fn lost(&self, id: &RequestId) -> Option<http::Lost> {
        let lost = self.streams?.take_lost(id);
        lost.filter(|_| {
            self.streams
                .is_some_and(|streams| streams.cause().is_none())
        })
    }

    /// The failure of a request whose answer stream was `lost`, and, if it was being
    /// resumed when the deadline of a call of `timeout` passed, that. The failure
    /// named is the last attempt's to resume it, else the one that broke it.
    fn stream_lost(&self, lost: http::Lost, timeout: Option<Duration>) -> RequestError {
        let streams = self.streams.expect("only an HTTP stream is lost");
        let resumption = streams.resumption_failure();
        let resuming = match timeout {
            Some(after) => Resuming::OutOfTime { after },
            None if lost.resumable() => Resuming::Failed,
            None => Resuming::Impossible,
        };
        let source = match resuming {
            Resuming::Impossible => lost.broke,
            _ => resumption.or(lost.broke),
        };
        RequestError::StreamLost {
            resuming,
            source: source.map(std::sync::Arc::new),
        }
    }

    /// The options of a request: under 2026-07-28, the host's log level in `_meta`
    /// (the revision has no `logging/setLevel`).
    fn options(&self) -> PeerRequestOptions {
        let mut options = PeerRequestOptions::no_options();
        if self.stateless
            && let Some(level) = self.answers.log_level()
        {
            let mut meta = rmcp::model::RequestMetaObject::default();
            meta.set_log_level(level);
            options.meta = Some(meta);
        }
        options
    }

    /// Waits `pause`, unless the deadline passes or the connection ends first.
    pub(super) async fn pause(&self, pause: Duration, deadline: Deadline) -> Paused {
        tokio::select! {
            biased;
            () = self.ended.cancelled() => Paused::Ended,
            () = self.expiry(deadline) => Paused::TimedOut,
            () = tokio::time::sleep(pause) => Paused::Elapsed,
        }
    }

    /// Returns when `deadline` has passed, not counting the time paused since the
    /// call began.
    pub(super) async fn expiry(&self, deadline: Deadline) {
        self.answers
            .pauses()
            .expiry(deadline.at, deadline.mark)
            .await;
    }
}
