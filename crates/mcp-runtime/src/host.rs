//! What the host answers when a server asks its client something: elicitation (a
//! question for the person), sampling (a message from the host's language model) and
//! roots (the directories the host works in).
//!
//! A host gives the handlers it has to
//! [`StartOptions::with_host`](crate::StartOptions::with_host), each optional, as
//! [`HostHandlers`]. What each offers is
//! what every server is told in the client capabilities (of `initialize`, or of each
//! request's `_meta` under 2026-07-28), and nothing more:
//!
//! | Handler | Offered | Without it |
//! |---|---|---|
//! | [`Elicitation`] | `elicitation` with the modes of [`Elicitation::modes`] | not offered; a server that asks anyway is declined |
//! | [`Sampling`] | `sampling` (with `tools` when [`Sampling::tool_use`]) | not offered; a server that asks anyway gets an error |
//! | [`Roots`] | `roots` with `listChanged` ([`crate::Runtime::roots_changed`]) | not offered; a server that asks anyway gets no roots |
//!
//! The handlers are reached the same way in both protocol eras: a handshake-era
//! server sends the request on its own, a 2026-07-28 server puts it in an
//! `input_required` answer to a call (a multi round-trip request), and the runtime
//! calls the same handler for each.
//!
//! Invariants:
//! 1. While an [`Elicitation`] handler is answering a server, that server's tool
//!    calls do not time out: the person's time does not count against
//!    `tool_timeout_sec` (the timeouts go on from where they were once the answer is
//!    given).
//! 2. A handler's answer goes to the server as it is: the runtime neither checks
//!    nor completes it (a form's content against its schema is the handler's to
//!    check).

#![allow(
    deprecated,
    reason = "rmcp marks sampling deprecated (SEP-2577), but the 2025-11-25 revision has it and servers ask for it"
)]

use std::{future::Future, pin::Pin, sync::Arc};

use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, FormElicitationCapability, JsonObject, LoggingLevel,
    LoggingMessageNotificationParam, RootsCapabilities, SamplingCapability,
    UrlElicitationCapability,
};

/// The future a handler returns.
pub type HandlerFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The elicitation modes a handler answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElicitationModes {
    /// `form`: the server sends a message and a flat JSON schema of the answer.
    pub form: bool,
    /// `url`: the server sends a URL for the person to open (sign-in, payment).
    pub url: bool,
}

/// Asks the person a server's question: `elicitation/create`.
pub trait Elicitation: Send + Sync + 'static {
    /// The modes this handler answers (by default form only).
    fn modes(&self) -> ElicitationModes {
        ElicitationModes {
            form: true,
            url: false,
        }
    }

    /// The person's answer to `request` from `server`: accept (with the form's
    /// content), decline or cancel.
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult>;
}

/// Asks the host's language model: `sampling/createMessage`.
pub trait Sampling: Send + Sync + 'static {
    /// Whether the handler takes the `tools` and `toolChoice` of a request (the
    /// tool use of 2025-11-25); by default not.
    fn tool_use(&self) -> bool {
        false
    }

    /// The model's message for `request` from `server`, or the error the server is
    /// answered with (the person refused, the model failed).
    fn create_message<'a>(
        &'a self,
        server: &'a str,
        request: CreateMessageRequestParams,
    ) -> HandlerFuture<'a, Result<CreateMessageResult, rmcp::ErrorData>>;
}

/// One root: a directory (a `file://` URI) the host works in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    /// The root's `file://` URI.
    pub uri: String,
    /// A name to show for it.
    pub name: Option<String>,
}

/// Tells a server the host's roots: `roots/list`.
pub trait Roots: Send + Sync + 'static {
    /// The roots to tell `server`.
    fn roots<'a>(&'a self, server: &'a str) -> HandlerFuture<'a, Vec<Root>>;
}

/// Receives the servers' log messages (`notifications/message`), beside `tracing`.
pub trait Logs: Send + Sync + 'static {
    /// A message `server` logged, every credential in use masked in its `logger` and
    /// `data` (a server may log what it was sent). Called on the runtime's task that
    /// read it: it should return quickly (send it on).
    fn log(&self, server: &str, message: LoggingMessageNotificationParam);
}

/// The handlers a host provides, each optional (see the [module](self)).
#[derive(Clone, Default)]
pub struct HostHandlers {
    pub(crate) elicitation: Option<Arc<dyn Elicitation>>,
    pub(crate) sampling: Option<Arc<dyn Sampling>>,
    pub(crate) roots: Option<Arc<dyn Roots>>,
    pub(crate) logs: Option<Arc<dyn Logs>>,
    /// The least severe server log messages the host asks for.
    pub(crate) log_level: Option<LoggingLevel>,
    /// Whether the questions of one input-required result are put at once.
    pub(crate) questions_together: bool,
    /// Where the servers' changes go: the runtime's own, set when it starts.
    pub(crate) changes: crate::changes::Changes,
}

/// Which of a server's questions a handler call answers, when a 2026-07-28 server
/// asked it in an `input_required` result (or a task's input request): its key there,
/// and how many the server asked with it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Asked {
    /// The question's key in the server's `inputRequests`.
    pub key: String,
    /// The round it belongs to: the same for the questions asked together, unique
    /// within the process.
    pub round: u64,
    /// How many of the round's questions go to the host's handlers (those it
    /// offers), this one among them.
    pub of: usize,
}

impl Asked {
    /// Question `key` of round `round`, one of `of` (for a host's tests: the runtime
    /// makes them).
    pub fn new(key: impl Into<String>, round: u64, of: usize) -> Self {
        Self {
            key: key.into(),
            round,
            of,
        }
    }
}

tokio::task_local! {
    static ASKED: Asked;
}

/// The question the handler being called answers, when a 2026-07-28 server asked it
/// in an input request; `None` for a handshake-era server's own request, which has
/// no key. Read it in the handler's future.
pub fn asked() -> Option<Asked> {
    ASKED.try_with(Clone::clone).ok()
}

/// Runs `answer` as the answer to `asked` ([`asked`] tells it).
pub(crate) async fn answering<F: Future>(asked: Asked, answer: F) -> F::Output {
    ASKED.scope(asked, answer).await
}

impl std::fmt::Debug for HostHandlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostHandlers")
            .field(
                "elicitation",
                &self.elicitation.as_ref().map(|handler| handler.modes()),
            )
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .field("logs", &self.logs.is_some())
            .field("log_level", &self.log_level)
            .field("questions_together", &self.questions_together)
            .finish()
    }
}

impl HostHandlers {
    /// No handlers: nothing offered.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `handler` answering elicitation.
    pub fn with_elicitation(mut self, handler: impl Elicitation) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// With `handler` answering sampling.
    pub fn with_sampling(mut self, handler: impl Sampling) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// With `handler` telling the roots.
    pub fn with_roots(mut self, handler: impl Roots) -> Self {
        self.roots = Some(Arc::new(handler));
        self
    }

    /// With `handler` receiving the servers' log messages; they reach `tracing` too.
    /// It offers nothing: which messages a server sends is its own choice, or
    /// [`Self::with_log_level`]'s.
    pub fn with_logs(mut self, handler: impl Logs) -> Self {
        self.logs = Some(Arc::new(handler));
        self
    }

    /// Asks servers for their log messages of `level` and more severe (they reach
    /// `tracing` under [`SERVER_LOG_TARGET`](crate::SERVER_LOG_TARGET)),
    /// each era its own way: a handshake-era server that offers logging is sent
    /// `logging/setLevel` as it starts; under 2026-07-28 the requests of calls,
    /// task polls, resource and prompt requests carry the level in `_meta`
    /// (`io.modelcontextprotocol/logLevel`; the startup `tools/list` does not).
    /// Without it, servers keep their own default (a 2026-07-28 server then sends
    /// none).
    pub fn with_log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Puts the questions a 2026-07-28 server asks in one `input_required` result to
    /// the handlers at once, instead of one after another: for a host that passes
    /// them on together (a gateway asking its own client in one round). Each handler
    /// call can tell which question it answers ([`asked`]).
    pub fn with_questions_together(mut self) -> Self {
        self.questions_together = true;
        self
    }

    /// The handler answering elicitation, if any: for a host whose own handlers
    /// pass a question on to another host's (a gateway's shared connection asking
    /// the session whose request it asks for).
    pub fn elicitation(&self) -> Option<&Arc<dyn Elicitation>> {
        self.elicitation.as_ref()
    }

    /// The handler answering sampling, if any (see [`Self::elicitation`]).
    pub fn sampling(&self) -> Option<&Arc<dyn Sampling>> {
        self.sampling.as_ref()
    }

    /// The handler receiving the servers' log messages, if any (see
    /// [`Self::elicitation`]).
    pub fn logs(&self) -> Option<&Arc<dyn Logs>> {
        self.logs.as_ref()
    }

    /// The client capabilities these handlers make: exactly what they answer.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut capabilities = ClientCapabilities::default();
        if let Some(elicitation) = &self.elicitation {
            let modes = elicitation.modes();
            let mut capability = ElicitationCapability::new();
            if modes.form {
                capability.form = Some(FormElicitationCapability::new());
            }
            if modes.url {
                capability.url = Some(UrlElicitationCapability::new());
            }
            capabilities.elicitation = Some(capability);
        }
        if let Some(sampling) = &self.sampling {
            let mut capability = SamplingCapability::default();
            capability.tools = sampling.tool_use().then(JsonObject::new);
            capabilities.sampling = Some(capability);
        }
        if self.roots.is_some() {
            let mut capability = RootsCapabilities::default();
            capability.list_changed = Some(true);
            capabilities.roots = Some(capability);
        }
        capabilities
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    struct Asks(ElicitationModes);

    impl Elicitation for Asks {
        fn modes(&self) -> ElicitationModes {
            self.0
        }

        fn elicit<'a>(
            &'a self,
            _server: &'a str,
            _request: ElicitRequestParams,
        ) -> HandlerFuture<'a, ElicitResult> {
            unreachable!("not asked here")
        }
    }

    struct Lists;

    impl Roots for Lists {
        fn roots<'a>(&'a self, _server: &'a str) -> HandlerFuture<'a, Vec<Root>> {
            Box::pin(async { Vec::new() })
        }
    }

    struct Samples;

    impl Sampling for Samples {
        fn tool_use(&self) -> bool {
            true
        }

        fn create_message<'a>(
            &'a self,
            _server: &'a str,
            _request: CreateMessageRequestParams,
        ) -> HandlerFuture<'a, Result<CreateMessageResult, rmcp::ErrorData>> {
            unreachable!("not asked here")
        }
    }

    fn offered(handlers: &HostHandlers) -> serde_json::Value {
        serde_json::to_value(handlers.capabilities()).unwrap()
    }

    #[test]
    fn what_is_offered_is_exactly_what_the_handlers_answer() {
        assert_eq!(offered(&HostHandlers::new()), json!({}));
        let form = ElicitationModes {
            form: true,
            url: false,
        };
        assert_eq!(
            offered(&HostHandlers::new().with_elicitation(Asks(form))),
            json!({"elicitation": {"form": {}}})
        );
        let both = ElicitationModes {
            form: true,
            url: true,
        };
        assert_eq!(
            offered(
                &HostHandlers::new()
                    .with_elicitation(Asks(both))
                    .with_roots(Lists)
                    .with_sampling(Samples)
            ),
            json!({
                "elicitation": {"form": {}, "url": {}},
                "roots": {"listChanged": true},
                "sampling": {"tools": {}}
            })
        );
    }
}
