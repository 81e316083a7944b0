//! What servers tell the host without being asked: their resource and prompt lists
//! changed, a subscribed resource was updated. [`Runtime::changes`] hands them out.
//!
//! A handshake-era server sends these notifications on its connection (updates only
//! for the resources `resources/subscribe` named). A 2026-07-28 server sends them
//! only on a `subscriptions/listen` stream, which each connection keeps open for the
//! list changes the server advertises and the resources the host subscribed to.
//!
//! [`Runtime::changes`]: crate::Runtime::changes

use tokio::sync::broadcast;

/// How many changes a slow receiver may fall behind before it misses some (it is
/// told how many, by `broadcast`'s `Lagged`).
const BACKLOG: usize = 256;

/// A change a server reported.
///
/// A handshake-era server sends these notifications on its connection (updates only
/// for the resources `resources/subscribe` named). A 2026-07-28 server sends them only
/// on a `subscriptions/listen` stream, which each connection keeps open for the list
/// changes the server advertises and the resources the host subscribed to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerChange {
    /// The server's resources or resource templates changed: list them again.
    ResourcesChanged {
        /// The server.
        server: String,
    },
    /// The server's prompts changed: list them again.
    PromptsChanged {
        /// The server.
        server: String,
    },
    /// A resource the host subscribed to changed: read it again.
    ResourceUpdated {
        /// The server.
        server: String,
        /// The resource.
        uri: String,
    },
}

/// Where a runtime's connections send the changes their servers report.
#[derive(Debug, Clone)]
pub(crate) struct Changes(broadcast::Sender<ServerChange>);

impl Default for Changes {
    fn default() -> Self {
        Self(broadcast::channel(BACKLOG).0)
    }
}

impl Changes {
    /// Hands `change` to every receiver (none may be listening).
    pub(crate) fn send(&self, change: ServerChange) {
        tracing::debug!(?change, "a server reported a change");
        let _ = self.0.send(change);
    }

    /// A receiver of the changes sent from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ServerChange> {
        self.0.subscribe()
    }
}
