//! [`ListToolsError`]: why `tools/list` could not be followed to its end.

use std::{sync::Arc, time::Duration};

use super::{RequestError, RestartError, secs};

/// `tools/list` could not be followed to its end.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ListToolsError {
    /// The server answered a cursor it had already answered.
    #[error("the server repeated cursor `{cursor}` (its pagination loops)")]
    RepeatedCursor {
        /// The repeated cursor, escaped and cut to a length a message can quote.
        cursor: String,
    },
    /// More pages than the guard allows.
    #[error("the server returned more than {limit} pages")]
    TooManyPages {
        /// The page limit.
        limit: usize,
    },
    /// More tools than `max_tools` allows.
    #[error("the server listed more than {limit} tools (raise `max_tools`)")]
    TooManyTools {
        /// The tool limit, `max_tools`.
        limit: usize,
    },
    /// No answer to a page's `tools/list` came within the bound; the request was
    /// cancelled.
    #[error(
        "no answer to `tools/list` within {} (raise `startup_timeout_sec`)",
        secs(*after)
    )]
    Timeout {
        /// The bound on each page: the server's startup timeout.
        after: Duration,
    },
    /// The answer is not JSON that can be read (its source says where it breaks).
    #[error(
        "the `tools/list` answer cannot be read (the server does not follow the MCP schema; report it to its author)"
    )]
    Unreadable {
        /// The JSON parser's error, with line and column.
        #[source]
        source: Arc<serde_json::Error>,
    },
    /// The answer is JSON, and not a `tools/list` result: no `tools` array, or a
    /// `nextCursor` that is not a string.
    #[error(
        "the `tools/list` answer {problem} (the server does not follow the MCP schema; report it to its author)"
    )]
    Malformed {
        /// What is wrong with it, finishing a sentence about the answer, for example
        /// ``has no `tools` array``.
        problem: String,
    },
    /// The tokio runtime shut down while a page was read on a task of its own.
    #[error("the tokio runtime shut down while the listing was read")]
    RuntimeShutDown {
        /// The reading task's end.
        #[source]
        source: Arc<tokio::task::JoinError>,
    },
    /// The request failed: the server's JSON-RPC error, an HTTP failure or the end of
    /// the connection.
    #[error(transparent)]
    Failed(RequestError),
    /// No server has this name.
    #[error("no server is named `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server is not running.
    #[error("server `{server}` is not running")]
    ServerUnavailable {
        /// The server.
        server: String,
    },
    /// The server had stopped and could not be started again.
    #[error(transparent)]
    Restart(RestartError),
}
