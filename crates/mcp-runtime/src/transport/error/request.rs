//! [`RequestError`]: why a request to a server failed below the level of what was
//! asked, and [`Resuming`], what became of an answer's event stream.

use std::{sync::Arc, time::Duration};

use super::{HttpFailure, MessageRefused, ProcessExit, secs, stderr_suffix};

/// A request to a server failed below the level of what was asked: the server
/// answered with a JSON-RPC error, the HTTP exchange failed, or the connection ended.
///
/// The protocol library's own error stays reachable as the `source` of
/// [`RequestError::Server`] and [`RequestError::Other`], for a program that wants it;
/// [`chain`](crate::error::chain) stops before it, as its text is written for the library's developers.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Server {
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
        /// The protocol library's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// An HTTP request failed.
    #[error(transparent)]
    Http(HttpFailure),
    /// The runtime refused the server's answer: over the client's size limit, or not
    /// one it can read.
    #[error(transparent)]
    Refused(MessageRefused),
    /// Under protocol version 2026-07-28, the server failed the request because it
    /// could not send a request of its own (`elicitation/create`,
    /// `sampling/createMessage` or `roots/list`): that revision has no such requests,
    /// its servers ask through an input-required result. The server's fault.
    #[error(
        "the server tried to send `{method}` as a request of its own, which protocol version `2026-07-28` does not have (a server of that revision asks through an input-required result): a fault of the server; until it is fixed, set `protocol = \"2025-11-25\"` for this server"
    )]
    AskedOutOfEra {
        /// The request it tried to send.
        method: &'static str,
        /// The server's error.
        #[source]
        source: Arc<RequestError>,
    },
    /// The server process exited.
    #[error("the server process exited ({status}){}", stderr_suffix(stderr_tail))]
    Exited {
        /// How it exited: its exit code, or the signal that ended it.
        status: ProcessExit,
        /// Its last lines of stderr.
        stderr_tail: Vec<String>,
    },
    /// The connection closed, the process still running or not local.
    #[error("the connection closed{}", stderr_suffix(stderr_tail))]
    Closed {
        /// The server's last lines of stderr, when it is a local process.
        stderr_tail: Vec<String>,
    },
    /// The connection to an HTTP server was lost: its transport found the server gone
    /// (see [`StartupError::Lost`](super::StartupError::Lost)).
    #[error("the connection was lost")]
    Lost {
        /// What the transport saw.
        #[source]
        source: Arc<HttpFailure>,
    },
    /// The event stream that was to carry the answer (Streamable HTTP) ended before
    /// the answer and was not resumed. The request reached the server: it may have
    /// run.
    #[error(
        "the server's event stream ended before the answer{} ({})",
        resuming.suffix(),
        stream_lost_fix(source.as_deref())
    )]
    StreamLost {
        /// What became of resuming the stream.
        resuming: Resuming,
        /// Why resuming it failed, else why it ended; none when the server ended it.
        #[source]
        source: Option<Arc<HttpFailure>>,
    },
    /// Anything else the protocol library reported.
    #[error("{description}")]
    Other {
        /// What went wrong, in words.
        description: String,
        /// The protocol library's error.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

/// What became of resuming an event stream that ended before the answer it was to
/// carry ([`RequestError::StreamLost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resuming {
    /// The stream cannot be resumed: the server gave its events no ids.
    Impossible,
    /// Resuming it failed, or the server is gone.
    Failed,
    /// It was not resumed before the call's deadline.
    OutOfTime {
        /// The call's timeout.
        after: Duration,
    },
}

impl Resuming {
    fn suffix(self) -> String {
        match self {
            Self::Impossible => String::new(),
            Self::Failed => ", and resuming it failed".to_owned(),
            Self::OutOfTime { after } => {
                format!(", and it was not resumed within {}", secs(after))
            }
        }
    }
}

/// What to do about a call whose answer's stream was lost for `source`: know that it
/// may have run, and check the server, unless `source` says so already.
fn stream_lost_fix(source: Option<&HttpFailure>) -> &'static str {
    match source {
        Some(
            HttpFailure::Refused { .. } | HttpFailure::Reset { .. } | HttpFailure::Closed { .. },
        ) => "the call may have run",
        _ => "the call may have run; check that the server is still running before calling again",
    }
}
