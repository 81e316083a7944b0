//! The client side of one connection, rmcp's [`ClientHandler`]: what it offers in
//! `initialize`, how it answers the server's requests (through the host's handlers,
//! see [`super::answers`]) and what it does with the server's notifications (list
//! changes, resource updates, progress and logs).

use std::sync::Arc;

use rmcp::{
    ClientHandler, RoleClient,
    model::{
        ClientConfig, ElicitRequestParams, ElicitResult, NotificationMetaObject, ServerNotification,
    },
    service::{NotificationContext, RequestContext},
};
use tokio::sync::Notify;

use super::{answers, features, subscriptions};
use crate::{host::HostHandlers, protocol::client_config};

/// The client side of one connection: what it offers in `initialize`, how it answers
/// the server's requests and what it does with the server's notifications.
#[derive(Clone)]
pub(super) struct Client {
    pub(super) info: ClientConfig,
    pub(super) tools_changed: Arc<Notify>,
    pub(super) answers: Arc<answers::Answers>,
    pub(super) held: Arc<features::HeldLists>,
}

impl Client {
    pub(super) fn new(server: &str, host: &HostHandlers) -> Self {
        Self {
            info: client_config(host),
            tools_changed: Arc::new(Notify::new()),
            answers: Arc::new(answers::Answers::new(server, host.clone())),
            held: Arc::default(),
        }
    }

    /// Delivers a change the server sent on its connection (a handshake-era server's
    /// way). One that names a listen stream came on a stream that is no longer read:
    /// rmcp hands the notifications of a stream it does not know (one replaced by a
    /// stream with other resources, or closed) to this handler. The stream that
    /// replaced it carries the same changes, so it is dropped, not reported twice.
    fn deliver(&self, context: &NotificationContext<RoleClient>, change: ServerNotification) {
        // rmcp 3.11 moves a notification's extensions into the context before its
        // `_meta`, which lives among them: the `_meta` arrives in
        // `context.extensions`, and `context.meta` is empty. Both are read, so this
        // holds once rmcp fills `context.meta`.
        let stream = context.meta.subscription_id().or_else(|| {
            context
                .extensions
                .get::<NotificationMetaObject>()
                .and_then(NotificationMetaObject::subscription_id)
        });
        if let Some(stream) = stream {
            tracing::debug!(server = self.answers.server(), %stream, "ignoring a change sent on a listen stream no longer read");
            return;
        }
        self.listeners().deliver(change);
    }

    /// `transport`, its progress reports and log messages handed on as they are read
    /// ([`super::progress_tap`]): every transport is given to rmcp through this.
    pub(super) fn tap<T>(&self, transport: T) -> super::progress_tap::ProgressTap<T> {
        super::progress_tap::ProgressTap::new(transport, self.answers.clone())
    }

    pub(super) fn listeners(&self) -> subscriptions::Listeners {
        subscriptions::Listeners {
            tools_changed: self.tools_changed.clone(),
            answers: self.answers.clone(),
            held: self.held.clone(),
        }
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.deliver(
            &context,
            ServerNotification::ToolListChangedNotification(Default::default()),
        );
    }

    async fn on_resource_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.deliver(
            &context,
            ServerNotification::ResourceListChangedNotification(Default::default()),
        );
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.deliver(
            &context,
            ServerNotification::PromptListChangedNotification(Default::default()),
        );
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.deliver(
            &context,
            ServerNotification::ResourceUpdatedNotification(
                rmcp::model::ResourceUpdatedNotification::new(params),
            ),
        );
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(self.answers.elicit(request).await)
    }

    #[allow(
        deprecated,
        reason = "rmcp marks sampling deprecated (SEP-2577), but the 2025-11-25 revision has it and servers ask for it"
    )]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.answers.sample(params).await
    }

    #[expect(
        deprecated,
        reason = "roots are leaving the specification; servers still ask"
    )]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        serde_json::from_value(self.answers.roots().await)
            .map_err(|error| rmcp::ErrorData::internal_error(error.to_string(), None))
    }
}
