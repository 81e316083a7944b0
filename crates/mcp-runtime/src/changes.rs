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

/// How many changes a slow receiver of [`Runtime::changes`](crate::Runtime::changes) may fall behind, unless
/// the host sets another number ([`StartOptions::with_change_backlog`]), before it
/// misses some (it is told how many, by `broadcast`'s `Lagged`).
///
/// [`StartOptions::with_change_backlog`]: crate::StartOptions::with_change_backlog
pub const DEFAULT_CHANGE_BACKLOG: usize = 256;

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
///
/// Handlers not yet given to a runtime have none (the default): the channel's slots
/// are allocated only for a runtime that starts, and not again for every copy of a
/// host's handlers that a host keeps.
#[derive(Debug, Clone, Default)]
pub(crate) struct Changes(Option<broadcast::Sender<ServerChange>>);

impl Changes {
    /// A runtime's, keeping up to `backlog` changes (at least one) for a slow receiver.
    pub(crate) fn with_backlog(backlog: usize) -> Self {
        Self(Some(broadcast::channel(backlog.max(1)).0))
    }

    /// Hands `change` to every receiver (none may be listening).
    pub(crate) fn send(&self, change: ServerChange) {
        tracing::debug!(?change, "a server reported a change");
        if let Some(sender) = &self.0 {
            let _ = sender.send(change);
        }
    }

    /// A receiver of the changes sent from now on; without a runtime's channel, one
    /// that is closed at once.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ServerChange> {
        match &self.0 {
            Some(sender) => sender.subscribe(),
            None => broadcast::channel(1).1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use broadcast::error::TryRecvError;

    fn updated(uri: &str) -> ServerChange {
        ServerChange::ResourceUpdated {
            server: "s".to_owned(),
            uri: uri.to_owned(),
        }
    }

    #[test]
    fn a_receiver_further_behind_than_the_backlog_is_told_how_many_it_missed() {
        let changes = Changes::with_backlog(2);
        let mut receiver = changes.subscribe();
        for uri in ["a", "b", "c"] {
            changes.send(updated(uri));
        }
        assert_eq!(receiver.try_recv(), Err(TryRecvError::Lagged(1)));
        assert_eq!(receiver.try_recv(), Ok(updated("b")));
        assert_eq!(receiver.try_recv(), Ok(updated("c")));
    }

    #[test]
    fn handlers_not_given_to_a_runtime_have_no_channel() {
        let changes = Changes::default();
        let mut receiver = changes.subscribe();
        changes.send(updated("a"));
        assert_eq!(receiver.try_recv(), Err(TryRecvError::Closed));
    }
}
