//! The progress a server reports during a tool call (`notifications/progress`), for
//! the caller: [`CallOptions::with_progress`](crate::CallOptions::with_progress).
//!
//! rmcp gives every request a `progressToken` of its own in its `_meta` (each round
//! of a 2026-07-28 multi round-trip call is a request of its own). For a call given a
//! progress callback, each notification the server sends with its token reaches the
//! callback, in the order the server sent them, until the call has ended: every report
//! sent before the server's answer has reached the callback before the call returns.
//! One read just before the call began to wait is handed over first. Notifications
//! that no call is waiting for are dropped.

use std::{fmt, sync::Arc};

/// One progress report of a call (serialized as its fields, for hosts that pass
/// reports between processes).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Progress {
    /// The server that reported it.
    pub server: String,
    /// The progress so far (it grows with each report, the total known or not).
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// What the server is doing.
    pub message: Option<String>,
}

impl Progress {
    /// A report of `progress` from `server`, with no total and no message.
    pub fn new(server: impl Into<String>, progress: f64) -> Self {
        Self {
            server: server.into(),
            progress,
            total: None,
            message: None,
        }
    }
}

/// What receives a call's progress.
#[derive(Clone)]
pub struct OnProgress(pub(crate) Arc<dyn Fn(Progress) + Send + Sync>);

impl OnProgress {
    /// `callback` receives each report, on the runtime's task that reads the
    /// server's messages: nothing more is read from that server until it returns, so
    /// it should return quickly (send it on, draw a bar).
    pub fn new(callback: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(callback))
    }

    /// Hands `progress` to the callback.
    pub fn report(&self, progress: Progress) {
        (self.0)(progress);
    }
}

impl fmt::Debug for OnProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OnProgress(..)")
    }
}
