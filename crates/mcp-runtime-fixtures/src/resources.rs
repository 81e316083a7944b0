//! The fixture's resource (`--resources`): `fixture://counter`, whose text is a
//! count (its listed description says it too), and the tool `bump`, which adds one
//! to the count, tells the clients subscribed to the resource that it was updated,
//! and tells its caller that the resource list changed.
//!
//! Subscriptions in each era: a handshake-era client names the resource in
//! `resources/subscribe` and gets `notifications/resources/updated` on its
//! connection; a 2026-07-28 client opens a `subscriptions/listen` stream, and every
//! open stream that accepted the resource gets the update (streams that accepted
//! list changes also get `notifications/tools/list_changed` from `add_tool`).
//! Tests make the changes happen with tool calls, so nothing depends on time.
//!
//! rmcp acknowledges a listen stream before it hands the stream to
//! `ServerHandler::listen`, so a client that has the acknowledgment may make a
//! change (call `bump`) before the stream is kept. Invariants:
//! 1. A listen stream counts as establishing from its acceptance
//!    ([`Resources::accept`], which rmcp calls before acknowledging) until
//!    [`Resources::listening`] has kept it. rmcp skips `listen` only when the
//!    acknowledgment cannot be sent, that is when the connection is gone.
//! 2. A change goes to the listen streams only once none is establishing, so every
//!    stream acknowledged before the change hears it.
//!
//! With `late_streams`, the fixture is a server that has not yet read the
//! cancellation of the streams a client closed: it keeps sending each closed stream
//! the changes it accepted, with the stream's id, as a server may in the moment
//! between a client's cancellation and its reading it.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        CallToolResult, GetMeta, ListResourcesResult, ReadResourceResult, Resource,
        ResourceContents, ServerNotification, SubscriptionFilter, Tool,
    },
    service::{Peer, SubscriptionSink},
};
use serde_json::json;
use tokio::sync::watch;

/// The one resource.
pub const COUNTER: &str = "fixture://counter";

/// The count, and who is told when it changes. Shared by every clone of the
/// fixture.
#[derive(Debug, Default)]
pub(crate) struct Resources {
    count: AtomicU64,
    /// Handshake-era subscriptions: the URIs named in `resources/subscribe`, with
    /// the connection that named them (the last one of each).
    subscribed: Mutex<Vec<(String, Peer<RoleServer>)>>,
    /// The 2026-07-28 listen streams: open ones, and with `late_streams` the
    /// closed ones too, each with its connection.
    streams: Mutex<Vec<(SubscriptionSink, Peer<RoleServer>)>>,
    /// How many listen streams are establishing (invariant 1).
    establishing: watch::Sender<usize>,
    /// Keep sending on closed streams (see the module's documentation).
    late_streams: bool,
}

impl Resources {
    /// No subscriptions yet; `late_streams` as the module's documentation says.
    pub(crate) fn new(late_streams: bool) -> Self {
        Self {
            late_streams,
            ..Self::default()
        }
    }

    /// The resource, as listed; none when the fixture does not offer it (`offered`).
    pub(crate) fn list(&self, offered: bool) -> ListResourcesResult {
        if !offered {
            return ListResourcesResult::with_all_items(Vec::new());
        }
        let mut counter = Resource::new(COUNTER, "counter");
        counter.mime_type = Some("text/plain".into());
        counter.description = Some(format!("counted {}", self.count.load(Ordering::SeqCst)));
        ListResourcesResult::with_all_items(vec![counter])
    }

    /// The resource's contents.
    pub(crate) fn read(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        if uri != COUNTER {
            return Err(McpError::resource_not_found(
                format!("no resource `{uri}`"),
                None,
            ));
        }
        let count = self.count.load(Ordering::SeqCst).to_string();
        Ok(ReadResourceResult::new(vec![ResourceContents::text(
            count, COUNTER,
        )]))
    }

    /// Records a handshake-era subscription (or its end).
    pub(crate) fn subscribe(&self, uri: &str, peer: &Peer<RoleServer>, subscribe: bool) {
        let mut subscribed = self.subscribed.lock().expect("not poisoned");
        subscribed.retain(|(known, _)| known != uri);
        if subscribe {
            subscribed.push((uri.to_owned(), peer.clone()));
        }
    }

    /// The subscription filter a listen stream is given: all it asks for. The
    /// stream is establishing from now until [`Resources::listening`] keeps it
    /// (invariant 1).
    pub(crate) fn accept(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        self.establishing
            .send_modify(|establishing| *establishing += 1);
        requested.clone()
    }

    /// Keeps an open listen stream, which is then no longer establishing
    /// (invariant 1).
    pub(crate) fn listening(&self, sink: SubscriptionSink, peer: Peer<RoleServer>) {
        self.streams
            .lock()
            .expect("not poisoned")
            .push((sink, peer));
        self.establishing.send_modify(|establishing| {
            debug_assert!(*establishing > 0, "a stream kept was accepted first");
            *establishing = establishing.saturating_sub(1);
        });
    }

    /// Sends `notification` on every open listen stream that accepted it, once no
    /// stream is establishing (invariant 2), dropping the streams that closed (or,
    /// with `late_streams`, sending it on them as well).
    pub(crate) async fn to_streams(&self, notification: ServerNotification) {
        // Never an error: the sender is `self`'s.
        let _ = self
            .establishing
            .subscribe()
            .wait_for(|establishing| *establishing == 0)
            .await;
        let streams = self.streams.lock().expect("not poisoned").clone();
        let mut closed = HashSet::new();
        for (index, (stream, peer)) in streams.iter().enumerate() {
            if let Err(rmcp::service::SubscriptionSendError::SubscriptionClosed) =
                stream.send(notification.clone()).await
            {
                if self.late_streams {
                    send_late(stream, peer, &notification).await;
                } else {
                    closed.insert(index);
                }
            }
        }
        if !closed.is_empty() {
            let mut index = 0;
            self.streams.lock().expect("not poisoned").retain(|_| {
                index += 1;
                !closed.contains(&(index - 1))
            });
        }
    }

    /// `bump`: one more, the update sent to whoever subscribed, and the list change
    /// to `caller` (on its connection, or, when `stateless`, on its listen streams).
    pub(crate) async fn bump(
        &self,
        caller: &Peer<RoleServer>,
        stateless: bool,
    ) -> Result<CallToolResult, McpError> {
        let count = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        let subscribed: Vec<Peer<RoleServer>> = self
            .subscribed
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|(uri, _)| uri == COUNTER)
            .map(|(_, peer)| peer.clone())
            .collect();
        let updated = rmcp::model::ResourceUpdatedNotificationParam::new(COUNTER);
        for peer in subscribed {
            peer.notify_resource_updated(updated.clone())
                .await
                .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        }
        self.to_streams(ServerNotification::ResourceUpdatedNotification(
            rmcp::model::ResourceUpdatedNotification::new(updated),
        ))
        .await;
        if stateless {
            self.to_streams(ServerNotification::ResourceListChangedNotification(
                Default::default(),
            ))
            .await;
        } else {
            caller
                .notify_resource_list_changed()
                .await
                .map_err(|error| McpError::internal_error(error.to_string(), None))?;
        }
        Ok(CallToolResult::structured(json!({ "count": count })))
    }
}

/// Sends `notification` with the id of the closed `stream`, if the stream accepted
/// it, as [`SubscriptionSink::send`] would have while it was open.
async fn send_late(
    stream: &SubscriptionSink,
    peer: &Peer<RoleServer>,
    notification: &ServerNotification,
) {
    let accepted = stream.accepted();
    let accepts = match notification {
        ServerNotification::ToolListChangedNotification(_) => accepted.tools_list_changed,
        ServerNotification::ResourceListChangedNotification(_) => accepted.resources_list_changed,
        ServerNotification::PromptListChangedNotification(_) => accepted.prompts_list_changed,
        ServerNotification::ResourceUpdatedNotification(update) => Some(
            accepted
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.contains(&update.params.uri)),
        ),
        _ => None,
    };
    if accepts != Some(true) {
        return;
    }
    let mut late = notification.clone();
    late.get_meta_mut().set_subscription_id(stream.id().clone());
    // Never fatal: the connection may be closing.
    let _ = peer.send_notification(late).await;
}

/// The tool `bump`.
pub(crate) fn tool() -> Tool {
    let serde_json::Value::Object(schema) = json!({ "type": "object", "properties": {} }) else {
        unreachable!("a schema literal is an object")
    };
    Tool::new(
        "bump",
        "Add one to the count of fixture://counter",
        Arc::new(schema),
    )
}
