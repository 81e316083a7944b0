//! What a server tells its client without being asked: its lists changed, a
//! subscribed resource was updated (see [`crate::changes`]).
//!
//! Each era its own way:
//! - a handshake-era server sends the notifications on its connection, where the
//!   client's handler receives them; resource updates come for the URIs named in
//!   `resources/subscribe` (withdrawn with `resources/unsubscribe`);
//! - a 2026-07-28 server sends them only on a `subscriptions/listen` stream. The
//!   connection keeps one open, asking for the list changes the server advertises
//!   and the resources the host subscribed to; a change of those resources opens a
//!   new stream with the new set, then closes the old one (rmcp cancels a stream
//!   whose handle is dropped). The first stream is acknowledged before the
//!   connection is used (before its tools are listed), so no change is missed.
//!
//! Invariants:
//! 1. Both eras deliver a notification the same way ([`Listeners::deliver`]): a
//!    tool list change refreshes the catalog; a resource or prompt list change
//!    drops the lists held ([`HeldLists`]) and goes to the host's changes, as does
//!    a resource update.
//! 2. A subscription is recorded only once the server accepted it (its answer; under
//!    2026-07-28, the new stream's acknowledgment names the URI).
//! 3. Subscriptions are changed one at a time per connection, so two changes never
//!    open streams from the same old set.
//! 4. Over HTTP, a listen stream whose connection broke (the server reset or closed
//!    it) and that rmcp did not resume ends the connection: the server is most likely
//!    gone, and a connection that no longer listens would miss every change. The
//!    next call connects again, and listens again.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    model::{ServerNotification, SubscriptionFilter},
    service::Subscription,
};
use serde_json::json;
use tokio::sync::{Notify, oneshot};
use tokio_util::task::AbortOnDropHandle;

use super::{
    Connection,
    answers::Answers,
    error::FeatureError,
    features::{Feature, HeldLists},
};
use crate::{changes::ServerChange, sync::lock, transport::http};

/// A connection's resource subscriptions and, under 2026-07-28, its listen stream.
#[derive(Default)]
pub(super) struct Subscriptions {
    /// The resources the host subscribed to (invariant 3: held while one changes).
    uris: tokio::sync::Mutex<BTreeSet<String>>,
    /// The listen stream being read, if any.
    listening: Mutex<Listening>,
}

#[derive(Default)]
struct Listening {
    pump: Option<Pump>,
    /// Set by [`Subscriptions::close`]: a stream opened after it is closed at once.
    closed: bool,
}

/// The task reading a listen stream, and how to ask it to cancel the stream.
struct Pump {
    task: AbortOnDropHandle<()>,
    stop: oneshot::Sender<()>,
}

impl Subscriptions {
    /// Closes the listen stream, if one is open, and any opened later. Returns once
    /// the stream's `notifications/cancelled` is written, or after `wait`: a server
    /// whose input closes while a listen request is open waits for it and does not
    /// exit. (Dropping the stream's handle would only queue the cancellation, and
    /// closing the protocol right after may never send it.)
    pub(super) async fn close(&self, wait: Duration) {
        let pump = {
            let mut listening = lock(&self.listening);
            listening.closed = true;
            listening.pump.take()
        };
        let Some(Pump { task, stop }) = pump else {
            return;
        };
        // The task is gone only if the stream ended, and then nothing is owed.
        let _ = stop.send(());
        // Past the wait the task is dropped; a cancellation not yet written by then
        // may be lost, as the server is too slow to read it anyway.
        let _ = tokio::time::timeout(wait, task).await;
    }
}

/// Where a connection's notifications go.
#[derive(Clone)]
pub(super) struct Listeners {
    pub(super) tools_changed: Arc<Notify>,
    pub(super) answers: Arc<Answers>,
    /// The lists held until the server announces a change.
    pub(super) held: Arc<HeldLists>,
}

impl Listeners {
    /// Hands over one of the server's notifications (invariant 1).
    pub(super) fn deliver(&self, notification: ServerNotification) {
        let server = || self.answers.server().to_owned();
        match notification {
            ServerNotification::ToolListChangedNotification(_) => {
                self.tools_changed.notify_one();
            }
            ServerNotification::ResourceListChangedNotification(_) => {
                self.held.forget(Feature::Resources);
                self.answers
                    .changed(ServerChange::ResourcesChanged { server: server() });
            }
            ServerNotification::PromptListChangedNotification(_) => {
                self.held.forget(Feature::Prompts);
                self.answers
                    .changed(ServerChange::PromptsChanged { server: server() });
            }
            ServerNotification::ResourceUpdatedNotification(updated) => {
                self.answers.changed(ServerChange::ResourceUpdated {
                    server: server(),
                    uri: updated.params.uri,
                });
            }
            other => {
                tracing::debug!(server = self.answers.server(), method = ?other, "ignoring a notification on the listen stream");
            }
        }
    }
}

impl Connection {
    fn listeners(&self) -> Listeners {
        Listeners {
            tools_changed: self.tools_changed.clone(),
            answers: self.answers.clone(),
            held: self.held.clone(),
        }
    }

    /// Under 2026-07-28, opens the listen stream for the list changes the server
    /// advertises, waiting at most `wait` for the server to acknowledge it, so that
    /// a server that is ready is heard; a server that opens no stream is only
    /// logged.
    pub(super) async fn listen(&self, wait: Duration) {
        if !self.is_stateless() {
            return;
        }
        let filter = self.listen_filter(&BTreeSet::new());
        if filter == SubscriptionFilter::default() {
            return;
        }
        let server = self.answers.server();
        let subscription = match tokio::time::timeout(wait, self.peer().listen(filter)).await {
            Ok(Ok(subscription)) => subscription,
            Ok(Err(error)) => {
                tracing::debug!(server, error = %crate::transport::error::chain(&error), "the server opened no listen stream");
                return;
            }
            Err(_) => {
                tracing::debug!(
                    server,
                    "the server did not acknowledge the listen stream in time"
                );
                return;
            }
        };
        self.install(subscription);
    }

    /// Makes `subscription` the connection's listen stream (the one before, if any,
    /// is closed): the lists whose changes it accepted are held from now on, and
    /// anything the stream before may not have delivered is looked at again (the
    /// lists held are forgotten, the tools listed again).
    fn install(&self, subscription: Subscription) {
        let mut listening = lock(&self.subscriptions.listening);
        if listening.closed {
            // Dropping it cancels it.
            return;
        }
        let accepted = subscription.acknowledged();
        self.held.carry(
            accepted.resources_list_changed == Some(true),
            accepted.prompts_list_changed == Some(true),
        );
        let (stop, stopped) = oneshot::channel();
        let task = AbortOnDropHandle::new(tokio::spawn(pump(
            subscription,
            self.listeners(),
            self.streams.clone(),
            stopped,
        )));
        let replaced = listening.pump.replace(Pump { task, stop }).is_some();
        drop(listening);
        if replaced {
            self.tools_changed.notify_one();
        }
    }

    /// What a listen stream asks for: the list changes the server advertises, and
    /// `uris` when it offers subscriptions.
    fn listen_filter(&self, uris: &BTreeSet<String>) -> SubscriptionFilter {
        let mut wanted = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resources_list_changed();
        if !uris.is_empty() {
            wanted = wanted.resource_subscriptions(uris.iter().cloned());
        }
        let wanted = wanted.build();
        match self.peer().peer_info() {
            Some(info) => wanted.supported_by(&info.capabilities),
            None => SubscriptionFilter::default(),
        }
    }

    /// Subscribes to updates of the resource `uri` (each request bounded by
    /// `timeout`), or, with `subscribe` false, withdraws the subscription.
    ///
    /// # Cancel safety
    ///
    /// Under 2026-07-28, dropping the future leaves the subscriptions as they were (a
    /// new stream not yet in place is closed). A handshake server's request given up
    /// is cancelled, but the server may have applied it: the next subscribe or
    /// unsubscribe of the URI is sent whatever the runtime recorded.
    pub(crate) async fn subscribe_resource(
        &self,
        uri: &str,
        subscribe: bool,
        timeout: Duration,
    ) -> Result<(), FeatureError> {
        let server = self.answers.server();
        if !self.offers(Feature::Subscriptions) {
            return Err(FeatureError::NotOffered {
                server: server.to_owned(),
                feature: Feature::Subscriptions.name(),
            });
        }
        let mut uris = self.subscriptions.uris.lock().await;
        // A listen stream says for itself what it carries; a handshake server is
        // asked each time (both requests are idempotent), since one given up may
        // have been applied.
        if self.is_stateless() && uris.contains(uri) == subscribe {
            return Ok(());
        }
        let mut wanted = uris.clone();
        if subscribe {
            wanted.insert(uri.to_owned());
        } else {
            wanted.remove(uri);
        }
        if self.is_stateless() {
            let filter = self.listen_filter(&wanted);
            let failed = |message: String| FeatureError::Answer {
                server: server.to_owned(),
                method: "subscriptions/listen",
                message,
            };
            let subscription = tokio::time::timeout(timeout, self.peer().listen(filter))
                .await
                .map_err(|_| FeatureError::Timeout {
                    server: server.to_owned(),
                    method: "subscriptions/listen",
                    after: timeout,
                })?
                .map_err(|error| failed(crate::transport::error::chain(&error)))?;
            let accepted = subscription
                .acknowledged()
                .resource_subscriptions
                .as_ref()
                .is_some_and(|accepted| accepted.iter().any(|accepted| accepted == uri));
            if subscribe && !accepted {
                return Err(failed(format!(
                    "the server did not accept a subscription to `{uri}`"
                )));
            }
            self.install(subscription);
        } else {
            let method = if subscribe {
                "resources/subscribe"
            } else {
                "resources/unsubscribe"
            };
            self.feature_request(method, json!({ "uri": uri }), timeout)
                .await?;
        }
        *uris = wanted;
        Ok(())
    }
}

/// Reads a listen stream until it ends or `stop` is signalled (or dropped), delivering
/// its notifications; when `stop` is signalled it cancels the stream, returning once
/// the cancellation is written. Then, unless a new stream replaced it, no list is held
/// any longer, as no change would reach the connection. A stream that broke ends the
/// connection, through `streams` (invariant 4).
async fn pump(
    mut subscription: Subscription,
    listeners: Listeners,
    streams: Option<Arc<http::Streams>>,
    mut stop: oneshot::Receiver<()>,
) {
    let server = listeners.answers.server();
    loop {
        let next = tokio::select! {
            biased;
            stopping = &mut stop => {
                // Dropped unsent: the stream was replaced, and dropping it queues
                // its cancellation (an interrupted cancellation would send none).
                // The lists held are the new stream's to say.
                if stopping.is_err() {
                    return;
                }
                if let Err(error) = subscription
                    .cancel_with_reason(Some("the client is closing".to_owned()))
                    .await
                {
                    tracing::debug!(server, error = %crate::transport::error::chain(&error), "the listen stream's cancellation was not sent");
                }
                break;
            }
            next = subscription.next() => next,
        };
        match next {
            Ok(Some(notification)) => listeners.deliver(notification),
            Ok(None) => {
                tracing::debug!(server, end = ?subscription.end(), "the listen stream ended");
                break;
            }
            Err(error) => {
                tracing::debug!(server, error = %crate::transport::error::chain(&error), "the listen stream failed");
                break;
            }
        }
    }
    listeners.held.carry(false, false);
    if let Some(streams) = streams
        && let Some(http::Lost {
            broke: Some(broke), ..
        }) = streams.take_lost(subscription.id())
    {
        streams.end(broke);
    }
}
