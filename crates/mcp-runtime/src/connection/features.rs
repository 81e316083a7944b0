//! The server features beside tools on one connection: resources, resource
//! templates, prompts and completion. Each request is bounded by a timeout and, when
//! given up, followed by `notifications/cancelled`, as a tool call is; lists are
//! followed through their cursors with the guards of `tools/list` (see
//! [`super::listing`]): at most [`MAX_LIST_PAGES`] pages and [`MAX_LISTED_TOOLS`]
//! entries, no cursor twice.

use std::{collections::HashSet, time::Duration};

use rmcp::model::{ClientRequest, ServerResult};
use serde_json::{Value, json};

use super::{CallFailure, Connection, Deadline, MAX_LIST_PAGES, MAX_LISTED_TOOLS, failure};
use crate::error::FeatureError;

/// A feature a server may offer, as its capabilities name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Feature {
    Resources,
    /// Subscriptions to resource updates (`resources.subscribe`).
    Subscriptions,
    Prompts,
    Completions,
}

impl Feature {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Resources => "resources",
            Self::Subscriptions => "resource subscriptions",
            Self::Prompts => "prompts",
            Self::Completions => "completions",
        }
    }
}

impl Connection {
    /// Whether the server's capabilities offer `feature`.
    pub(crate) fn offers(&self, feature: Feature) -> bool {
        let Some(info) = self.peer().peer_info() else {
            return false;
        };
        let capabilities = &info.capabilities;
        match feature {
            Feature::Resources => capabilities.resources.is_some(),
            Feature::Subscriptions => capabilities
                .resources
                .as_ref()
                .is_some_and(|resources| resources.subscribe == Some(true)),
            Feature::Prompts => capabilities.prompts.is_some(),
            Feature::Completions => capabilities.completions.is_some(),
        }
    }

    /// Sends `method` with `params` and waits for the answer at most `timeout`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future, or the timeout, owes `notifications/cancelled`.
    pub(crate) async fn feature_request(
        &self,
        method: &'static str,
        params: Value,
        timeout: Duration,
    ) -> Result<ServerResult, FeatureError> {
        let server = self.answers.server();
        let mut request = json!({ "method": method });
        if !params.is_null() {
            request["params"] = params;
        }
        let request: ClientRequest =
            serde_json::from_value(request).map_err(|error| FeatureError::Answer {
                server: server.to_owned(),
                method,
                message: format!("the request could not be made: {error}"),
            })?;
        let deadline = Deadline::after(timeout, &self.answers);
        match self.caller().request(request, deadline, None).await {
            Ok(answer) => Ok(answer),
            Err(CallFailure::TimedOut) => Err(FeatureError::Timeout {
                server: server.to_owned(),
                method,
                after: timeout,
            }),
            Err(CallFailure::Failed(error)) => Err(FeatureError::Failed {
                server: server.to_owned(),
                method,
                source: self.with_exit_report(failure::from_service(error)).await,
            }),
            Err(CallFailure::Refused(message)) => Err(FeatureError::Answer {
                server: server.to_owned(),
                method,
                message,
            }),
        }
    }

    /// Every entry of the list `method` answers under `key`, page by page, each page
    /// bounded by `timeout` (see the module's guards).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future owes `notifications/cancelled` for the page in flight.
    pub(crate) async fn list_all(
        &self,
        method: &'static str,
        key: &str,
        timeout: Duration,
    ) -> Result<Vec<Value>, FeatureError> {
        let server = self.answers.server();
        let bad = |message: String| FeatureError::Answer {
            server: server.to_owned(),
            method,
            message,
        };
        let mut entries = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_LIST_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => Value::Null,
            };
            let answer = self.feature_request(method, params, timeout).await?;
            let mut page = serde_json::to_value(answer)
                .map_err(|error| bad(format!("the answer is not JSON: {error}")))?;
            let listed = match page.get_mut(key).map(Value::take) {
                Some(Value::Array(listed)) => listed,
                _ => return Err(bad(format!("the answer has no `{key}` list"))),
            };
            if entries.len() + listed.len() > MAX_LISTED_TOOLS {
                return Err(bad(format!(
                    "the server listed more than {MAX_LISTED_TOOLS} entries"
                )));
            }
            entries.extend(listed);
            match page.get("nextCursor").and_then(Value::as_str) {
                None => return Ok(entries),
                Some(next) => {
                    if !seen.insert(next.to_owned()) {
                        return Err(bad(
                            "the server repeated a cursor (its pagination loops)".to_owned()
                        ));
                    }
                    cursor = Some(next.to_owned());
                }
            }
        }
        Err(bad(format!(
            "the server returned more than {MAX_LIST_PAGES} pages"
        )))
    }
}
