//! [`RestartError`]: why a server that stopped after it was ready could not be started
//! again.

use std::{sync::Arc, time::Duration};

use super::{StartupError, secs};

/// A server that stopped after it was ready could not be started again.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RestartError {
    /// No server has this name.
    #[error("no server is named `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server did not start with the runtime, so there is nothing to restart.
    #[error(
        "server `{server}` did not start with the runtime and is not restarted (fix its startup error and start the runtime again)"
    )]
    NeverStarted {
        /// The server.
        server: String,
    },
    /// A restart attempt failed.
    #[error(
        "server `{server}` stopped and starting it again failed (attempt {attempt} of {limit})"
    )]
    Failed {
        /// The server.
        server: String,
        /// Which attempt this was, from 1.
        attempt: u32,
        /// How many attempts are made before the server is left stopped.
        limit: u32,
        /// Why the attempt failed.
        #[source]
        source: Arc<StartupError>,
    },
    /// The last attempt failed and the next one is not due yet.
    #[error(
        "server `{server}` stopped and its last restart failed; the next attempt is allowed in {} (call again then)",
        secs(*retry_in)
    )]
    BackingOff {
        /// The server.
        server: String,
        /// How long until the next attempt is allowed.
        retry_in: Duration,
    },
    /// Every allowed attempt was made; the server stays stopped.
    #[error(
        "server `{server}` stopped and was started again {attempts} times without a successful call; it stays stopped until it is restarted explicitly"
    )]
    GaveUp {
        /// The server.
        server: String,
        /// How many attempts were made.
        attempts: u32,
    },
    /// The runtime is shutting down.
    #[error("server `{server}` is not restarted: the runtime is shutting down")]
    ShuttingDown {
        /// The server.
        server: String,
    },
}
