//! The server features beside tools on one connection: resources, resource
//! templates, prompts and completion. Each request is bounded by a timeout and, when
//! given up, followed by `notifications/cancelled`, as a tool call is; lists are
//! followed through their cursors with the guards of `tools/list` (see
//! [`super::listing`]): at most [`MAX_LIST_PAGES`] pages and [`MAX_LISTED_TOOLS`]
//! entries, no cursor twice.
//!
//! The lists of a server whose changes reach the connection are held once listed
//! ([`HeldLists`]) until it announces one: the connection's catalog of its
//! resources, templates and prompts. Any other server is asked each time.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::model::{ClientRequest, JsonObject, ServerResult};
use serde_json::{Value, json};

use super::{
    CallFailure, Connection, Deadline, MAX_LIST_PAGES, MAX_LISTED_TOOLS, error::FeatureError,
    input_rounds::Rounds,
};
use crate::sync::lock;

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

/// The lists a server gave that stay valid until it announces a change.
///
/// Invariants:
/// 1. A feature's lists are held only while its changes reach the connection
///    ([`HeldLists::carry`]): the server announces them (`listChanged`), and a
///    channel carries them (a stdio or legacy SSE connection; under 2026-07-28, a
///    listen stream that accepted them and is still open).
/// 2. A list is kept only if no change was announced while it was being listed (the
///    generation it began at is still current), so a change is never hidden by an
///    older list.
#[derive(Debug, Default)]
pub(crate) struct HeldLists(Mutex<Held>);

#[derive(Debug, Default)]
struct Held {
    /// By method.
    lists: HashMap<&'static str, Arc<Vec<Value>>>,
    /// How many changes were announced (or channels lost).
    generation: u64,
    /// Whether resource list changes reach the connection.
    resources: bool,
    /// Whether prompt list changes reach the connection.
    prompts: bool,
}

impl Held {
    fn carries(&self, method: &str) -> bool {
        if method.starts_with("resources/") {
            self.resources
        } else if method.starts_with("prompts/") {
            self.prompts
        } else {
            false
        }
    }

    fn forget(&mut self, feature: Feature) {
        self.generation += 1;
        self.lists.retain(|method, _| match feature {
            Feature::Resources => !method.starts_with("resources/"),
            Feature::Prompts => !method.starts_with("prompts/"),
            Feature::Subscriptions | Feature::Completions => true,
        });
    }
}

impl HeldLists {
    fn get(&self, method: &str) -> Option<Arc<Vec<Value>>> {
        let held = lock(&self.0);
        held.carries(method)
            .then(|| held.lists.get(method).cloned())
            .flatten()
    }

    fn generation(&self) -> u64 {
        lock(&self.0).generation
    }

    /// Keeps `list`, the answer to `method` begun at `generation`, unless a change
    /// was announced since or its changes do not reach the connection.
    fn keep(&self, method: &'static str, generation: u64, list: Arc<Vec<Value>>) {
        let mut held = lock(&self.0);
        if held.generation == generation && held.carries(method) {
            held.lists.insert(method, list);
        }
    }

    /// The server announced that `feature`'s lists changed.
    pub(crate) fn forget(&self, feature: Feature) {
        lock(&self.0).forget(feature);
    }

    /// Says which lists' changes reach the connection now (invariant 1); every list
    /// is forgotten, as changes may have been missed while the channel changed.
    pub(crate) fn carry(&self, resources: bool, prompts: bool) {
        let mut held = lock(&self.0);
        held.forget(Feature::Resources);
        held.forget(Feature::Prompts);
        held.resources = resources;
        held.prompts = prompts;
    }
}

impl Connection {
    /// Under the handshake revisions, over a transport whose server messages always
    /// reach the client (stdio, legacy SSE), the lists the server announces changes
    /// of are held (see [`HeldLists`]); over Streamable HTTP a change needs the
    /// server's optional event stream, so nothing is held. The listen stream of a
    /// 2026-07-28 connection says for itself.
    pub(super) fn hold_announced_lists(&self, messages_always_reach: bool) {
        let Some(info) = self.peer().peer_info() else {
            return;
        };
        if self.is_stateless() || !messages_always_reach {
            return;
        }
        let capabilities = &info.capabilities;
        self.held.carry(
            capabilities
                .resources
                .as_ref()
                .is_some_and(|resources| resources.list_changed == Some(true)),
            capabilities
                .prompts
                .as_ref()
                .is_some_and(|prompts| prompts.list_changed == Some(true)),
        );
    }

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
        let deadline = Deadline::after(timeout, &self.answers);
        self.feature_request_until(method, params, deadline).await
    }

    /// [`Connection::feature_request`], answered by `deadline`.
    async fn feature_request_until(
        &self,
        method: &'static str,
        params: Value,
        deadline: Deadline,
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
        match self.caller().request(request, deadline, None).await {
            Ok(answer) => Ok(answer),
            Err(failure) => Err(self.feature_failure(method, failure, deadline).await),
        }
    }

    /// A feature request's failure, as the host is told it.
    async fn feature_failure(
        &self,
        method: &'static str,
        failure: CallFailure,
        deadline: Deadline,
    ) -> FeatureError {
        let server = self.answers.server().to_owned();
        match failure {
            CallFailure::TimedOut => FeatureError::Timeout {
                server,
                method,
                after: deadline.timeout(),
            },
            CallFailure::Failed(error) => FeatureError::Failed {
                server,
                method,
                source: self.request_failure(error).await,
            },
            CallFailure::Refused(refused) => FeatureError::Answer {
                server,
                method,
                message: crate::transport::error::chain(&refused),
            },
            // A request reads no tool result: this is not seen here.
            CallFailure::Invalid(invalid) => FeatureError::Answer {
                server,
                method,
                message: invalid.to_string(),
            },
            CallFailure::Lost(source) => FeatureError::Failed {
                server,
                method,
                source,
            },
        }
    }

    /// As [`Connection::feature_request`], the answer's result as a JSON object, as
    /// the server returned it (the transports hand these answers over raw, see
    /// [`crate::transport::raw_answers`]). A 2026-07-28 server that asks for input
    /// first (`resultType: "input_required"`, as for `prompts/get` or
    /// `resources/read`) is answered by the host's handlers and asked again, round
    /// after round, as a tool call is ([`super::input_rounds`]), all within
    /// `timeout`.
    ///
    /// # Cancel safety
    ///
    /// As [`Connection::feature_request`]; dropping it while the handlers are asked
    /// withdraws the questions.
    pub(crate) async fn feature_object(
        &self,
        method: &'static str,
        mut params: Value,
        timeout: Duration,
    ) -> Result<JsonObject, FeatureError> {
        let deadline = Deadline::after(timeout, &self.answers);
        let caller = self.caller();
        let mut rounds = Rounds::new();
        loop {
            let answer = self
                .feature_request_until(method, params.clone(), deadline)
                .await?;
            let object =
                super::tool_answer::object(answer, "the server's answer is not a JSON object")
                    .map_err(|message| FeatureError::Answer {
                        server: self.answers.server().to_owned(),
                        method,
                        message,
                    })?;
            if !super::tool_answer::asks_for_input(&object) {
                return Ok(object);
            }
            let next = match super::tool_answer::input_request(object) {
                Ok(asked) => rounds.next(&caller, asked, deadline).await,
                Err(unreadable) => Err(CallFailure::Refused(unreadable)),
            };
            let retry = match next {
                Ok(retry) => retry,
                Err(failure) => return Err(self.feature_failure(method, failure, deadline).await),
            };
            let object = params
                .as_object_mut()
                .expect("a request that can be asked again has parameters");
            object.remove("inputResponses");
            object.remove("requestState");
            if let Some(responses) = retry.input_responses {
                object.insert(
                    "inputResponses".to_owned(),
                    serde_json::to_value(responses).expect("answers serialize"),
                );
            }
            if let Some(state) = retry.request_state {
                object.insert("requestState".to_owned(), Value::String(state));
            }
        }
    }

    /// Every entry of the list `method` answers under `key`, page by page, each page
    /// bounded by `timeout` (see the module's guards): held, when its changes reach
    /// the connection and none was announced since it was listed.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future owes `notifications/cancelled` for the page in flight.
    pub(crate) async fn list_all(
        &self,
        method: &'static str,
        key: &str,
        timeout: Duration,
    ) -> Result<Arc<Vec<Value>>, FeatureError> {
        if let Some(list) = self.held.get(method) {
            return Ok(list);
        }
        let generation = self.held.generation();
        let list = Arc::new(self.list_pages(method, key, timeout).await?);
        self.held.keep(method, generation, list.clone());
        Ok(list)
    }

    /// Every entry of the list `method` answers under `key`, asked of the server.
    async fn list_pages(
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
        // A closure returning a future, not an async closure: the compiler cannot
        // yet prove an async closure's future `Send` for every lifetime, and a
        // server's handler (`mcp-runtime-serve`) needs this future `Send`.
        all_pages(
            key,
            |cursor| {
                let params = match cursor {
                    Some(cursor) => json!({ "cursor": cursor }),
                    None => Value::Null,
                };
                async move {
                    self.feature_object(method, params, timeout)
                        .await
                        .map(Value::Object)
                }
            },
            bad,
        )
        .await
    }
}

/// Every entry under `key` of the pages `page` answers (given the cursor to ask
/// for), following `nextCursor` with the guards of `tools/list`: at most
/// [`MAX_LIST_PAGES`] pages and [`MAX_LISTED_TOOLS`] entries, no cursor twice. A
/// page without a `key` list, or a guard broken, is `bad`'s error.
async fn all_pages<Page>(
    key: &str,
    mut page: impl FnMut(Option<String>) -> Page,
    bad: impl Fn(String) -> FeatureError,
) -> Result<Vec<Value>, FeatureError>
where
    Page: Future<Output = Result<Value, FeatureError>>,
{
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_LIST_PAGES {
        let mut answer = page(cursor.take()).await?;
        let listed = match answer.get_mut(key).map(Value::take) {
            Some(Value::Array(listed)) => listed,
            _ => return Err(bad(format!("the answer has no `{key}` list"))),
        };
        if entries.len() + listed.len() > MAX_LISTED_TOOLS {
            return Err(bad(format!(
                "the server listed more than {MAX_LISTED_TOOLS} entries"
            )));
        }
        entries.extend(listed);
        // An empty cursor names no next page: the list ends, as without one.
        match answer
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|next| !next.is_empty())
        {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(message: String) -> FeatureError {
        FeatureError::Answer {
            server: "s".into(),
            method: "resources/list",
            message,
        }
    }

    /// The entries of `pages` (answered in order, each asked for with the cursor
    /// noted), or the error's message.
    async fn walk(pages: Vec<Value>) -> (Result<Vec<Value>, String>, Vec<Option<String>>) {
        let mut asked = Vec::new();
        let mut pages = pages.into_iter();
        let walked = all_pages(
            "resources",
            |cursor| {
                asked.push(cursor);
                std::future::ready(Ok(pages.next().unwrap_or_else(|| json!({"resources": []}))))
            },
            bad,
        )
        .await;
        let walked = walked.map_err(|error| match error {
            FeatureError::Answer { message, .. } => message,
            other => panic!("{other:?}"),
        });
        (walked, asked)
    }

    #[tokio::test]
    async fn pages_are_followed_through_their_cursors_in_order() {
        let (walked, asked) = walk(vec![
            json!({"resources": [1, 2], "nextCursor": "a"}),
            json!({"resources": [3], "nextCursor": "b"}),
            json!({"resources": [4]}),
        ])
        .await;
        assert_eq!(walked.unwrap(), [json!(1), json!(2), json!(3), json!(4)]);
        assert_eq!(asked, [None, Some("a".into()), Some("b".into())]);
    }

    #[tokio::test]
    async fn an_empty_cursor_ends_the_list() {
        let (walked, asked) = walk(vec![
            json!({"resources": [1], "nextCursor": "a"}),
            json!({"resources": [2], "nextCursor": ""}),
            json!({"resources": [1], "nextCursor": "a"}),
        ])
        .await;
        assert_eq!(walked.unwrap(), [json!(1), json!(2)]);
        assert_eq!(asked, [None, Some("a".to_owned())]);
    }

    #[tokio::test]
    async fn a_repeated_cursor_stops_the_listing() {
        let (walked, asked) = walk(vec![
            json!({"resources": [1], "nextCursor": "a"}),
            json!({"resources": [2], "nextCursor": "b"}),
            json!({"resources": [3], "nextCursor": "a"}),
        ])
        .await;
        assert_eq!(
            walked.unwrap_err(),
            "the server repeated a cursor (its pagination loops)"
        );
        assert_eq!(asked.len(), 3);
    }

    #[tokio::test]
    async fn endless_pages_stop_at_the_page_limit() {
        let pages = (0..MAX_LIST_PAGES + 5)
            .map(|n| json!({"resources": [n], "nextCursor": n.to_string()}))
            .collect();
        let (walked, asked) = walk(pages).await;
        assert_eq!(
            walked.unwrap_err(),
            format!("the server returned more than {MAX_LIST_PAGES} pages")
        );
        assert_eq!(asked.len(), MAX_LIST_PAGES);
    }

    #[tokio::test]
    async fn too_many_entries_stop_the_listing() {
        let half = vec![json!(0); MAX_LISTED_TOOLS / 2 + 1];
        let (walked, asked) = walk(vec![
            json!({"resources": half.clone(), "nextCursor": "a"}),
            json!({"resources": half, "nextCursor": "b"}),
        ])
        .await;
        assert_eq!(
            walked.unwrap_err(),
            format!("the server listed more than {MAX_LISTED_TOOLS} entries")
        );
        assert_eq!(asked.len(), 2);
    }

    #[test]
    fn a_list_is_held_only_while_its_changes_reach_the_connection() {
        let held = HeldLists::default();
        let list = Arc::new(vec![json!(1)]);
        held.keep("resources/list", held.generation(), list.clone());
        assert_eq!(held.get("resources/list"), None, "no channel yet");
        held.carry(true, false);
        held.keep("resources/list", held.generation(), list.clone());
        held.keep("prompts/list", held.generation(), list.clone());
        assert_eq!(held.get("resources/list"), Some(list.clone()));
        assert_eq!(
            held.get("prompts/list"),
            None,
            "prompt changes do not reach it"
        );
        held.carry(false, false);
        assert_eq!(held.get("resources/list"), None, "the channel was lost");
        held.carry(true, false);
        assert_eq!(
            held.get("resources/list"),
            None,
            "forgotten with the channel"
        );
    }

    #[test]
    fn a_list_begun_before_a_change_is_not_held() {
        let held = HeldLists::default();
        held.carry(true, true);
        let list = Arc::new(vec![json!(1)]);
        let before = held.generation();
        held.forget(Feature::Resources);
        held.keep("resources/list", before, list.clone());
        assert_eq!(held.get("resources/list"), None, "older than the change");
        held.keep("resources/list", held.generation(), list.clone());
        held.keep("prompts/list", held.generation(), list.clone());
        assert_eq!(held.get("resources/list"), Some(list.clone()));
        held.forget(Feature::Prompts);
        assert_eq!(held.get("prompts/list"), None);
        assert_eq!(
            held.get("resources/list"),
            Some(list),
            "another feature's list stays"
        );
    }

    #[tokio::test]
    async fn a_page_without_its_list_is_an_error() {
        let (walked, _) = walk(vec![json!({"tools": []})]).await;
        assert_eq!(walked.unwrap_err(), "the answer has no `resources` list");
    }
}
