//! [`ListToolsError`]: why `tools/list` could not be followed to its end.

use super::{RequestError, RestartError};

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
    /// The server's answer is not a usable `tools/list` result, or no answer came in
    /// time.
    #[error("{message}")]
    Request {
        /// What went wrong.
        message: String,
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
