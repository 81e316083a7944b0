//! The event streams of one HTTP transport: how long one that breaks is resumed,
//! and what the runtime learns from them.
//!
//! rmcp resumes a response stream that ends before its answer once the server gave
//! an event id (a `GET` with `Last-Event-ID`), and a handshake-era session's own
//! `GET` stream whatever it carried. How often is the transport's `SseRetryPolicy`,
//! whose default tries forever, doubling its pause from 1 s, also against a server
//! that refuses every connection: a call in flight then waits for its whole
//! timeout. When rmcp gives up, the requests the stream carried fail with a generic
//! "closed" error, and why is only logged. So [`Streams`] is shared by the
//! transport's client ([`super::SplicingHttpClient`]), which sees the outcome of
//! every request and every response stream, and [`Resumption`], the policy rmcp
//! consults after each failed attempt, which is given no more than the number of
//! attempts and reads the rest here. The legacy HTTP+SSE transport, whose one event
//! stream is its connection, reports that stream's break here too.
//!
//! Invariants:
//! 1. A new request (a `POST`, or a `GET` that resumes a stream) that the server
//!    refuses, resets or closes before its answer means the server is gone, as does
//!    the break of a legacy HTTP+SSE event stream: the first such failure is kept as
//!    the cause ([`Streams::cause`]), [`Streams::ended`] is cancelled, and no stream
//!    is resumed any more. A response stream that breaks midway does not by itself:
//!    something between may have cut it, and resuming it tells. Nor does the first
//!    `GET` of a session's own stream, which resumes nothing: what its failure means
//!    is rmcp's to say (it goes on without the stream); only a `GET` that opens that
//!    stream again counts as a resumption.
//! 2. Resuming a stream stops after [`MAX_FAILED_RESUMPTIONS`] failed attempts in a
//!    row, or at once after a failure that another attempt cannot mend (an answer
//!    that is not a success, other than `429` and `5xx`; a host name that does not
//!    resolve; TLS). The pauses double from [`FIRST_PAUSE`] up to [`MAX_PAUSE`] (rmcp
//!    waits at least as long as the server's `retry` field asks).
//! 3. A request's response stream that broke or ended before its answer is
//!    recorded, with why and the id of its last event, until the request's caller
//!    takes the record ([`Streams::take_lost`]). A `GET` that resumes it from that
//!    id and succeeds marks the record resumed, and the resumed stream goes through
//!    the steps of the request's first one (see [`super::events`]), watched from
//!    that id: if it too is lost before the answer, the record says so again. At
//!    most [`MAX_LOST`] records are kept, so that of a request nobody asks about (a
//!    listen stream's) is dropped in time.
//! 4. A stream resumed and lost again before any event came, [`MAX_FRUITLESS_RESUMPTIONS`]
//!    times in a row, is not resumed again ([`Streams::exhausted`]): rmcp opens a
//!    stream that breaks again at once, and ends none that the server keeps ending,
//!    whatever the attempts before; the count is what bounds those. The same holds
//!    for a stream that answers no request (a session's own, or one resumed after
//!    its request's record was dropped): opened and ended before any event that many
//!    times in a row, it is not opened again ([`Streams::own_exhausted`]), and one
//!    that sent an event over the size limit is not opened again at all (rmcp would
//!    reopen it at once, and the server would send that event again).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use futures::{Stream, StreamExt, stream::BoxStream};
use rmcp::{
    model::RequestId,
    transport::{
        common::client_side_sse::SseRetryPolicy,
        streamable_http_client::{SseError, StreamableHttpError},
    },
};
use sse_stream::Sse;
use tokio_util::sync::CancellationToken;

use super::{HttpResult, classify, events::Answering};
use crate::{
    sync::lock,
    transport::{
        answer_id::{self, Envelope},
        error::HttpFailure,
    },
};

/// How many attempts in a row to resume one stream may fail (invariant 2).
pub(crate) const MAX_FAILED_RESUMPTIONS: usize = 3;
/// The pause after the first failed attempt to resume a stream; it doubles after
/// each further one.
pub(crate) const FIRST_PAUSE: Duration = Duration::from_secs(1);
/// The longest pause between two attempts to resume a stream.
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(4);
/// How many times in a row a request's stream may be resumed and lost again before
/// any event came (invariant 4).
pub(crate) const MAX_FRUITLESS_RESUMPTIONS: usize = MAX_FAILED_RESUMPTIONS;
/// How many records of lost response streams are kept (invariant 3).
const MAX_LOST: usize = 64;

/// What one transport's client has learned of its streams and of the server; see
/// the module docs.
#[derive(Debug)]
pub(crate) struct Streams {
    server: Arc<str>,
    /// Cancelled once the server is gone (invariant 1).
    ended: CancellationToken,
    /// Why the server is taken for gone.
    cause: OnceLock<HttpFailure>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Why the last attempt to resume a stream failed, until an attempt or another
    /// request succeeds.
    resumption: Option<Failed>,
    /// Response streams that broke or ended before their answer (invariant 3).
    records: VecDeque<Record>,
    /// The session whose own stream was opened: a `GET` of it without an event id
    /// opens it again (invariant 1).
    own_stream: Option<Arc<str>>,
    /// How many streams that answer no request ended in a row before any event
    /// came, and how the last one ended (invariant 4).
    own_fruitless: usize,
    own_ended: Option<HttpFailure>,
    /// How long to pause between attempts to resume a stream (invariant 2).
    pauses: Pauses,
}

/// The pauses between attempts to resume a stream: the first, doubled after each
/// further failed attempt up to the longest.
#[derive(Debug, Clone, Copy)]
struct Pauses {
    first: Duration,
    longest: Duration,
}

impl Default for Pauses {
    fn default() -> Self {
        Self {
            first: FIRST_PAUSE,
            longest: MAX_PAUSE,
        }
    }
}

/// What is known of one request's response stream lost before its answer.
#[derive(Debug)]
struct Record {
    request: Answering,
    /// How it was lost; `None` once it was resumed.
    lost: Option<Lost>,
    /// The event id it was last lost, or resumed, after.
    last_event_id: Option<String>,
    /// How many times in a row it was resumed and lost again before any event came
    /// (invariant 4).
    fruitless: usize,
}

impl Record {
    /// Whether the stream is lost, after the event with id `last_event_id`.
    fn lost_at(&self, last_event_id: &str) -> bool {
        self.lost.is_some() && self.last_event_id.as_deref() == Some(last_event_id)
    }
}

/// A failed attempt to resume a stream.
#[derive(Debug, Clone)]
struct Failed {
    /// The failure, when it is one the client classified.
    failure: Option<HttpFailure>,
    /// Whether another attempt may succeed (invariant 2).
    mendable: bool,
}

/// How a request's response stream was lost before its answer.
#[derive(Debug, Clone)]
pub(crate) struct Lost {
    /// Why it broke; `None` when the server ended it.
    pub(crate) broke: Option<HttpFailure>,
    /// The id of its last event with one, from which rmcp resumes the stream.
    last_event_id: Option<String>,
}

impl Lost {
    /// Whether the server gave an event id, from which rmcp resumes the stream.
    pub(crate) fn resumable(&self) -> bool {
        self.last_event_id.is_some()
    }
}

impl Streams {
    /// The streams of a transport to `server`.
    pub(crate) fn new(server: &str) -> Arc<Self> {
        Arc::new(Self {
            server: server.into(),
            ended: CancellationToken::new(),
            cause: OnceLock::new(),
            state: Mutex::default(),
        })
    }

    /// Cancelled once the server is gone (invariant 1).
    pub(crate) fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    /// Why the server is taken for gone, once it is.
    pub(crate) fn cause(&self) -> Option<&HttpFailure> {
        self.cause.get()
    }

    /// The server is gone: `failure` says how it was found (invariant 1).
    pub(crate) fn end(&self, failure: HttpFailure) {
        if self.cause.set(failure).is_ok() {
            tracing::debug!(server = &*self.server, cause = %self.cause.get().expect("just set"), "the server is gone");
        }
        self.ended.cancel();
    }

    /// Why the last attempt to resume a stream failed, if it did and nothing
    /// succeeded since.
    pub(crate) fn resumption_failure(&self) -> Option<HttpFailure> {
        lock(&self.state)
            .resumption
            .as_ref()
            .and_then(|failed| failed.failure.clone())
    }

    /// Notes the outcome of a new request (invariant 1): a server found gone ends
    /// the transport; a success clears the last failure to resume.
    pub(crate) fn requested<T>(&self, result: &HttpResult<T>) {
        match result {
            Ok(_) => lock(&self.state).resumption = None,
            Err(StreamableHttpError::Client(failure)) if gone(failure) => self.end(failure.clone()),
            Err(_) => {}
        }
    }

    /// Notes the outcome of an attempt to resume a stream (invariants 1 and 2).
    pub(crate) fn resumed<T>(&self, result: &HttpResult<T>) {
        use StreamableHttpError as E;
        let failed = match result {
            Ok(_) => None,
            Err(E::Client(failure)) => Some(Failed {
                failure: Some(failure.clone()),
                mendable: mendable(failure),
            }),
            Err(E::HttpStatus(_) | E::Io(_) | E::Sse(_)) => Some(Failed {
                failure: None,
                mendable: true,
            }),
            Err(_) => Some(Failed {
                failure: None,
                mendable: false,
            }),
        };
        self.requested(result);
        lock(&self.state).resumption = failed;
    }

    /// Whether the last failed attempt to resume a stream, if any, may be mended by
    /// another (invariant 2). The attempt is the last of any stream: rmcp asks the
    /// policy right after an attempt fails, so it is almost always the asking
    /// stream's own.
    fn mendable(&self) -> bool {
        lock(&self.state)
            .resumption
            .as_ref()
            .is_none_or(|failed| failed.mendable)
    }

    /// Takes the record of request `id`'s response stream: how it was lost, if it
    /// was lost before its answer and not resumed since (invariant 3).
    pub(crate) fn take_lost(&self, id: &RequestId) -> Option<Lost> {
        let mut state = lock(&self.state);
        let at = state
            .records
            .iter()
            .position(|record| record.request.id == *id)?;
        state.records.remove(at).and_then(|record| record.lost)
    }

    /// A `GET` resumed a stream from `last_event_id`: the request whose stream was
    /// lost there, if one was, and its record is marked resumed (invariant 3).
    /// Servers should give the events of every stream ids of their own; of streams
    /// lost at the same id, the first lost is taken as resumed first.
    pub(super) fn resumed_from(&self, last_event_id: &str) -> Option<Answering> {
        let mut state = lock(&self.state);
        let record = state
            .records
            .iter_mut()
            .find(|record| record.lost_at(last_event_id))?;
        record.lost = None;
        tracing::debug!(server = &*self.server, id = %record.request.id, last_event_id, "a response stream was resumed");
        Some(record.request.clone())
    }

    /// Whether a `GET` of `session`'s own stream without an event id opens it
    /// again, rather than for the first time (invariant 1).
    pub(super) fn reopens(&self, session: Option<&Arc<str>>) -> bool {
        let Some(session) = session else {
            return false;
        };
        let mut state = lock(&self.state);
        if state.own_stream.as_ref() == Some(session) {
            return true;
        }
        state.own_stream = Some(session.clone());
        false
    }

    /// Why the stream lost at `last_event_id` may not be resumed again, when it was
    /// resumed and lost again before any event too many times in a row (invariant
    /// 4): the failure that ended the last one (a close, when the server ended it),
    /// kept as an attempt's that another cannot mend.
    pub(super) fn exhausted(&self, last_event_id: &str) -> Option<HttpFailure> {
        let mut state = lock(&self.state);
        let record = state
            .records
            .iter()
            .find(|record| record.lost_at(last_event_id))?;
        if record.fruitless < MAX_FRUITLESS_RESUMPTIONS {
            return None;
        }
        let failure = record
            .lost
            .as_ref()
            .and_then(|lost| lost.broke.clone())
            .unwrap_or_else(|| HttpFailure::Closed {
                server: self.server.to_string(),
            });
        tracing::debug!(server = &*self.server, id = %record.request.id, last_event_id, "a response stream lost again each time it was resumed is not resumed again");
        state.resumption = Some(Failed {
            failure: Some(failure.clone()),
            mendable: false,
        });
        Some(failure)
    }

    /// Why a `GET` that opens a stream answering no request again, from
    /// `last_event_id` if it has one, may not be sent: streams like it ended before
    /// any event too many times in a row, or one sent an event over the limit
    /// (invariant 4). The failure is kept as an attempt's that another cannot mend.
    pub(super) fn own_exhausted(&self, last_event_id: Option<&str>) -> Option<HttpFailure> {
        let mut state = lock(&self.state);
        let of_a_request = last_event_id
            .is_some_and(|from| state.records.iter().any(|record| record.lost_at(from)));
        if of_a_request || state.own_fruitless < MAX_FRUITLESS_RESUMPTIONS {
            return None;
        }
        let failure = state
            .own_ended
            .clone()
            .unwrap_or_else(|| HttpFailure::Closed {
                server: self.server.to_string(),
            });
        tracing::debug!(
            server = &*self.server,
            "an event stream that kept ending before any event is not opened again"
        );
        state.resumption = Some(Failed {
            failure: Some(failure.clone()),
            mendable: false,
        });
        Some(failure)
    }

    /// `events`, a stream that answers no request, noting how it ends (invariant 4):
    /// after an event or before any, and an event over the size limit.
    pub(super) fn own_events(
        self: &Arc<Self>,
        events: BoxStream<'static, Result<Sse, SseError>>,
        limit: usize,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        let streams = self.clone();
        let mut progressed = false;
        let mut noted = false;
        events
            .map(Some)
            .chain(futures::stream::once(std::future::ready(None)))
            .filter_map(move |event| {
                let ended = match &event {
                    Some(Ok(_)) => {
                        progressed = true;
                        None
                    }
                    Some(Err(error)) if super::events::event_too_large(error) => Some((
                        true,
                        Some(HttpFailure::EventTooLarge {
                            server: streams.server.to_string(),
                            limit,
                        }),
                    )),
                    Some(Err(error)) => Some((false, broken(&streams.server, error))),
                    None => Some((false, None)),
                };
                if let Some((too_large, failure)) = ended
                    && !std::mem::replace(&mut noted, true)
                {
                    let mut state = lock(&streams.state);
                    state.own_fruitless = if too_large {
                        MAX_FRUITLESS_RESUMPTIONS
                    } else if progressed {
                        0
                    } else {
                        state.own_fruitless + 1
                    };
                    state.own_ended = failure;
                }
                std::future::ready(event)
            })
            .boxed()
    }

    /// Records that `request`'s stream was `lost`, after events came on it since it
    /// was opened or resumed when `progressed` (invariant 3).
    fn lose(&self, request: Answering, lost: Lost, progressed: bool) {
        tracing::debug!(server = &*self.server, id = %request.id, broke = ?lost.broke.as_ref().map(ToString::to_string), "a response stream ended before its answer");
        let mut state = lock(&self.state);
        let at = state
            .records
            .iter()
            .position(|record| record.request.id == request.id);
        let fruitless = match at.and_then(|at| state.records.remove(at)) {
            Some(resumed) if resumed.lost.is_none() && !progressed => resumed.fruitless + 1,
            _ => 0,
        };
        if state.records.len() == MAX_LOST {
            state.records.pop_front();
        }
        state.records.push_back(Record {
            request,
            last_event_id: lost.last_event_id.clone(),
            lost: Some(lost),
            fruitless,
        });
    }

    /// Pauses between attempts to resume a stream from `first` (doubling) up to
    /// `longest`, rather than [`FIRST_PAUSE`] up to [`MAX_PAUSE`].
    #[cfg(test)]
    pub(crate) fn pause_resumptions(&self, first: Duration, longest: Duration) {
        lock(&self.state).pauses = Pauses { first, longest };
    }

    /// `events`, a response stream of `request` (resumed after the event id `from`,
    /// if it was), watched: if it breaks or ends before the request's answer, that is
    /// recorded (invariant 3).
    pub(crate) fn watch<S>(
        self: &Arc<Self>,
        request: Answering,
        from: Option<String>,
        events: S,
    ) -> impl Stream<Item = Result<Sse, SseError>> + Send + 'static
    where
        S: Stream<Item = Result<Sse, SseError>> + Send + 'static,
    {
        let streams = self.clone();
        let mut pending = Some(request);
        let mut last_event_id = from;
        let mut progressed = false;
        events
            .map(Some)
            .chain(futures::stream::once(std::future::ready(None)))
            .filter_map(move |event| {
                let passed = match (&event, pending.as_ref()) {
                    (_, None) => event,
                    (Some(Ok(sse)), Some(request)) => {
                        progressed = true;
                        if let Some(event_id) = &sse.id {
                            last_event_id = Some(event_id.clone());
                        }
                        if sse
                            .data
                            .as_deref()
                            .is_some_and(|data| answers(data, &request.id))
                        {
                            pending = None;
                        }
                        event
                    }
                    (Some(Err(error)), Some(_)) => {
                        // An event over the limit is answered, not lost.
                        if let Some(broke) = broken(&streams.server, error) {
                            let request = pending.take().expect("checked above");
                            let broke = Some(broke);
                            let last_event_id = last_event_id.take();
                            streams.lose(
                                request,
                                Lost {
                                    broke,
                                    last_event_id,
                                },
                                progressed,
                            );
                        }
                        event
                    }
                    (None, Some(_)) => {
                        let request = pending.take().expect("checked above");
                        let last_event_id = last_event_id.take();
                        streams.lose(
                            request,
                            Lost {
                                broke: None,
                                last_event_id,
                            },
                            progressed,
                        );
                        None
                    }
                };
                std::future::ready(passed)
            })
    }
}

/// Whether `failure`, of a new request, means the server is gone (invariant 1).
fn gone(failure: &HttpFailure) -> bool {
    matches!(
        failure,
        HttpFailure::Refused { .. } | HttpFailure::Reset { .. } | HttpFailure::Closed { .. }
    )
}

/// Whether another attempt may mend `failure`, of an attempt to resume a stream
/// (invariant 2).
fn mendable(failure: &HttpFailure) -> bool {
    match failure {
        HttpFailure::Status { status, .. } => *status == 429 || *status >= 500,
        HttpFailure::Timeout { .. }
        | HttpFailure::Connection { .. }
        | HttpFailure::Proxy { .. } => true,
        _ => false,
    }
}

/// Why the client's read of a response stream failed with `error`; `None` when the
/// stream did not break (an event over the limit, which the transport answers).
fn broken(server: &str, error: &SseError) -> Option<HttpFailure> {
    let SseError::Body(source) = error else {
        return None;
    };
    // The HTTP client's error in an I/O error (see `super::events::bounded_events`).
    source
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
        .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
        .map(|error| classify(server, error))
}

/// Whether `data`, one event's, is the answer to request `id`.
fn answers(data: &str, id: &RequestId) -> bool {
    Envelope::read(data.as_bytes())
        .and_then(|envelope| {
            envelope
                .answered()
                .map(|answered| answer_id::answers(id, answered))
        })
        .unwrap_or(false)
}

/// The policy rmcp resumes the transport's streams by (invariant 2).
#[derive(Debug)]
pub(crate) struct Resumption(pub(crate) Arc<Streams>);

impl SseRetryPolicy for Resumption {
    /// The pause before the next attempt, after `failed` attempts in a row failed
    /// (`0` for a stream the server ended, which rmcp resumes unless this is `None`:
    /// no attempt of that stream failed yet).
    fn retry(&self, failed: usize) -> Option<Duration> {
        let stopped = self.0.ended.is_cancelled()
            || failed >= MAX_FAILED_RESUMPTIONS
            || (failed > 0 && !self.0.mendable());
        if stopped {
            return None;
        }
        let doublings = u32::try_from(failed.saturating_sub(1)).unwrap_or(u32::MAX);
        let pauses = lock(&self.0.state).pauses;
        Some(
            pauses
                .first
                .saturating_mul(2u32.saturating_pow(doublings))
                .min(pauses.longest),
        )
    }
}

#[cfg(test)]
mod tests;
