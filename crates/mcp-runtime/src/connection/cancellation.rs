//! Cancellations owed to a server, written before its connection closes.
//!
//! A client that stops waiting for a request tells the server with
//! `notifications/cancelled`. rmcp queues that notification without waiting when a
//! request's future is dropped, and closing its service ends the protocol loop with
//! whatever is still queued or being written: a host that times out a call and shuts
//! down at once never told the server. So the runtime sends the cancellations of its
//! tool calls itself and keeps account of them here, as a ledger of requests in
//! flight and a tracker of the writes it owes.
//!
//! A task (a tool call the server runs in the background, [`super::tasks`]) is owed
//! its `tasks/cancel` the same way: the ledger holds it from its creation until it
//! ends, and a caller that stops waiting for it, or a shutdown, owes the request.
//!
//! Invariants:
//! 1. A request (or task) is in flight from the moment rmcp has queued it until exactly one
//!    party takes it out: its answer (nothing is owed), its caller giving up by
//!    timeout or by dropping the call (one cancellation is owed), or the connection's
//!    shutdown (one is owed). So a server gets at most one cancellation per request,
//!    and one `tasks/cancel` per task.
//! 2. An owed cancellation is written by a task of the tracker; giving up never waits
//!    for it, so a caller sees its timeout when it happens.
//! 3. [`Cancellations::flush`] closes the ledger, owes a cancellation for every
//!    request still in flight, and waits (bounded) until every owed cancellation has
//!    been written: for stdio, into the server's stdin; for a handshake HTTP
//!    session, its `POST` answered; for a 2026-07-28 HTTP server, which has no
//!    `notifications/cancelled`, the request's response stream closed (rmcp does that
//!    instead of posting the notification). The connection closes the protocol only
//!    after that. A request
//!    registered once the ledger is closed is not tracked: the protocol is closing
//!    under it, and it fails with the closed connection.

use std::{collections::HashSet, sync::Mutex, time::Duration};

use rmcp::{
    Peer, RoleClient,
    model::{CancelledNotification, CancelledNotificationParam, RequestId},
    service::PeerRequestOptions,
};
use tokio_util::task::TaskTracker;

use super::tasks::{self, Form};
use crate::sync::lock;
use crate::transport::error::chain;

/// How long a server may take to answer `tasks/cancel`.
const TASK_CANCEL_WAIT: Duration = Duration::from_secs(10);
/// The reason sent when a call ran out of time.
pub(super) const TIMED_OUT: &str = "the client's timeout for this request ran out";
/// The reason sent when the caller dropped the call.
const ABANDONED: &str = "the caller stopped waiting for this request";
/// The reason sent for requests still in flight at shutdown.
const SHUTTING_DOWN: &str = "the client is shutting down";

/// The ledger of one connection's requests in flight and the cancellations it owes.
pub(super) struct Cancellations {
    peer: Peer<RoleClient>,
    ledger: Mutex<Ledger>,
    /// The tasks writing owed cancellations (invariant 2).
    writes: TaskTracker,
}

/// What the ledger holds: a request, or a task, until it is answered or ends.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Owed {
    /// A request in flight: `notifications/cancelled` is owed if it is given up.
    Request(RequestId),
    /// A task under way, by its id: `tasks/cancel`, in the connection's form, is
    /// owed if it is given up.
    Task(String, Form),
}

#[derive(Default)]
struct Ledger {
    in_flight: HashSet<Owed>,
    /// Set by [`Cancellations::flush`]; nothing is registered afterwards.
    closed: bool,
}

impl Cancellations {
    /// An empty ledger for the connection of `peer`.
    pub(super) fn new(peer: Peer<RoleClient>) -> Self {
        Self {
            peer,
            ledger: Mutex::default(),
            writes: TaskTracker::new(),
        }
    }

    /// Records request `id`, which rmcp has just queued. The returned guard owes its
    /// cancellation if it is dropped before [`InFlight::answered`].
    pub(super) fn register(&self, id: RequestId) -> InFlight<'_> {
        self.track(Owed::Request(id))
    }

    /// Records task `id`, which the server has just created, to be cancelled in
    /// `form`. The returned guard owes its `tasks/cancel` if it is dropped before
    /// [`InFlight::answered`] (the task ended).
    pub(super) fn register_task(&self, id: String, form: Form) -> InFlight<'_> {
        self.track(Owed::Task(id, form))
    }

    fn track(&self, owed: Owed) -> InFlight<'_> {
        let mut ledger = lock(&self.ledger);
        let tracked = !ledger.closed && ledger.in_flight.insert(owed.clone());
        // A server may reuse a task id; request ids are unique on a connection.
        debug_assert!(
            tracked || ledger.closed || matches!(owed, Owed::Task(..)),
            "request ids are unique on a connection"
        );
        InFlight {
            ledger: self,
            owed: tracked.then_some(owed),
        }
    }

    /// Takes `owed` out of the ledger; whether it was still in flight (invariant 1).
    fn take(&self, owed: &Owed) -> bool {
        lock(&self.ledger).in_flight.remove(owed)
    }

    /// Takes `owed` out of the ledger and, if it was still in flight, starts writing
    /// its cancellation. Both happen under the ledger's lock, so [`Self::flush`]
    /// either takes it itself or finds its write already tracked (invariant 3).
    fn take_and_send(&self, owed: Owed, reason: &'static str) {
        let mut ledger = lock(&self.ledger);
        if ledger.in_flight.remove(&owed) {
            self.send(owed, reason);
        }
        drop(ledger);
    }

    /// Starts writing the cancellation of `owed`, without waiting for it:
    /// `notifications/cancelled` for a request; `tasks/cancel` for a task, whose
    /// answer is waited for (then the request was written) and otherwise ignored.
    fn send(&self, owed: Owed, reason: &'static str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Dropped outside any runtime: there is nothing left to write with.
            tracing::debug!(?owed, "no runtime left to send a cancellation on");
            return;
        };
        let peer = self.peer.clone();
        match owed {
            Owed::Request(id) => {
                let notification = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some(reason.to_owned()),
                ));
                self.writes.spawn_on(
                    async move {
                        if let Err(error) = peer.send_notification(notification.into()).await {
                            tracing::debug!(error = %chain(&error), "`notifications/cancelled` was not sent");
                        }
                    },
                    &runtime,
                );
            }
            Owed::Task(id, form) => {
                let request = tasks::cancel_request(form, id);
                self.writes.spawn_on(
                    async move {
                        // Bounded: a server that never answers holds no task forever.
                        let mut options = PeerRequestOptions::no_options();
                        options.timeout = Some(TASK_CANCEL_WAIT);
                        let answer = match peer.send_request_with_option(request, options).await {
                            Ok(handle) => handle.await_response().await.map(drop),
                            Err(error) => Err(error),
                        };
                        // A task that ended meanwhile is an error to cancel; either way
                        // the server was told.
                        if let Err(error) = answer {
                            tracing::debug!(error = %chain(&error), "`tasks/cancel` failed");
                        }
                    },
                    &runtime,
                );
            }
        }
    }

    /// Closes the ledger, cancels every request still in flight, and waits at most
    /// `limit` until every owed cancellation has been written (invariant 3).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future stops the wait; the writes carry on.
    pub(super) async fn flush(&self, limit: Duration) {
        let owed = {
            let mut ledger = lock(&self.ledger);
            ledger.closed = true;
            std::mem::take(&mut ledger.in_flight)
        };
        for owed in owed {
            self.send(owed, SHUTTING_DOWN);
        }
        self.writes.close();
        if tokio::time::timeout(limit, self.writes.wait())
            .await
            .is_err()
        {
            tracing::debug!(
                pending = self.writes.len(),
                "`notifications/cancelled` not written before the connection closed"
            );
        }
    }

    #[cfg(test)]
    pub(super) fn in_flight(&self) -> usize {
        lock(&self.ledger).in_flight.len()
    }
}

/// One request (or task) in the ledger. Dropped before [`Self::answered`] or
/// [`Self::give_up`], it owes the cancellation: its caller stopped waiting.
pub(super) struct InFlight<'a> {
    ledger: &'a Cancellations,
    /// `None` once taken out, or when never tracked.
    owed: Option<Owed>,
}

impl InFlight<'_> {
    /// The request's answer arrived (a task: it ended), or its connection closed:
    /// nothing is owed.
    pub(super) fn answered(mut self) {
        if let Some(owed) = self.owed.take() {
            self.ledger.take(&owed);
        }
    }

    /// The caller gives up waiting for `reason`: the cancellation is sent, and this
    /// returns at once.
    pub(super) fn give_up(mut self, reason: &'static str) {
        self.give_up_for(reason);
    }

    fn give_up_for(&mut self, reason: &'static str) {
        if let Some(owed) = self.owed.take() {
            self.ledger.take_and_send(owed, reason);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.give_up_for(ABANDONED);
    }
}

#[cfg(test)]
mod tests {
    use std::{ffi::CString, os::unix::ffi::OsStrExt, path::Path, sync::Arc};

    use super::*;
    use crate::{
        binding::Binding,
        connection::{Connection, sh_server},
        transport::Endpoint,
    };

    /// A stdio server in `sh`: it logs every line it reads to `$1`, answers
    /// `initialize`, never answers anything else, and writes to the FIFO `$2` once it
    /// has read a `tools/call`.
    const SILENT_SERVER: &str = r#"
while IFS= read -r line; do
  printf '%s\n' "$line" >> "$1"
  case "$line" in
    *'"method":"initialize"'*)
      id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}\n' "$id" ;;
    *'"method":"tools/call"'*)
      echo called > "$2" ;;
  esac
done
"#;

    fn mkfifo(path: &Path) {
        let path = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `path` is a NUL-terminated string that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    }

    fn silent_server(log: &Path, fifo: &Path) -> Endpoint {
        sh_server(
            SILENT_SERVER,
            &[log.to_str().unwrap(), fifo.to_str().unwrap()],
        )
    }

    fn logged(log: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn shutdown_cancels_a_call_still_in_flight_before_closing() {
        let dir = tempfile::tempdir().unwrap();
        let (log, fifo) = (dir.path().join("log"), dir.path().join("called"));
        mkfifo(&fifo);
        let connection = Connection::connect(
            "silent",
            &silent_server(&log, &fifo),
            &Binding::Local,
            |_| {},
        )
        .await
        .map(Arc::new)
        .unwrap();
        let call = tokio::spawn({
            let connection = connection.clone();
            async move {
                let timeout = Duration::from_secs(600);
                connection.call_plain("t", timeout).await
            }
        });
        // The server has read the call once it writes to the FIFO.
        let read = tokio::task::spawn_blocking(move || std::fs::read(fifo));
        read.await.unwrap().unwrap();
        assert_eq!(connection.cancellations.in_flight(), 1);

        connection.shutdown().await;

        let error = call.await.unwrap().unwrap_err();
        assert_eq!(
            crate::transport::error::chain(&error),
            "tool `t` on server `silent` failed: the connection closed"
        );
        assert_eq!(connection.cancellations.in_flight(), 0);
        let log = logged(&log);
        let call_id = &log.iter().find(|m| m["method"] == "tools/call").unwrap()["id"];
        let cancelled: Vec<_> = log
            .iter()
            .filter(|m| m["method"] == "notifications/cancelled")
            .collect();
        assert_eq!(cancelled.len(), 1, "{log:?}");
        assert_eq!(&cancelled[0]["params"]["requestId"], call_id);
        assert_eq!(cancelled[0]["params"]["reason"], SHUTTING_DOWN);
    }
}
