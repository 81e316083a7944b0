//! How the commands that start servers answer a server that asks the person
//! something (elicitation).
//!
//! Elicitation is offered as a capable host offers it, forms and URLs, so that every
//! command sees what such a host sees: a server may list some tools only to a client
//! that can ask its person (`tools` lists them, `call` reaches them). Without
//! `--elicitation`, on a terminal (stdin and stderr), the person is asked ([`ask`]);
//! elsewhere each question is declined. `--elicitation decline|cancel|accept-defaults`
//! decides instead, for scripts: `decline` offers nothing (the server sees a host
//! without elicitation), the other two offer form elicitation and answer every
//! question the same way:
//! - `cancel`: the person dismissed the question;
//! - `accept-defaults`: accept with each field's `default` from the request's schema;
//!   a question with a required field that has no default cannot be answered so, and
//!   is declined.
//!
//! URL elicitation is offered only to the person at a terminal, who is shown the link
//! and asked whether to open it in the browser ([`ask::ask_url`]); scripts have
//! nobody to open it.

pub mod ask;

use clap::ValueEnum;
use mcp_runtime::{
    host::{Elicitation, ElicitationModes, HandlerFuture, HostHandlers},
    model::{ElicitRequestParams, ElicitResult, ElicitationAction},
};
use serde_json::{Map, Value};

/// The host handlers of a command: `--elicitation`'s, else the person's on a
/// `terminal`, else ones that decline every question.
pub fn handlers(policy: Option<Policy>, terminal: bool) -> HostHandlers {
    match policy {
        Some(policy) => policy.handlers(),
        None if terminal => HostHandlers::new().with_elicitation(Interactive),
        None => HostHandlers::new().with_elicitation(Unattended),
    }
}

/// Whether the person can be asked: stdin and stderr are terminals.
pub fn person_at_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// `--elicitation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Policy {
    /// Decline every question (elicitation is not offered).
    Decline,
    /// Cancel every question.
    Cancel,
    /// Accept every form with its fields' defaults.
    AcceptDefaults,
}

impl Policy {
    /// The host handlers of a call answering as this policy says.
    pub fn handlers(self) -> HostHandlers {
        match self {
            Self::Decline => HostHandlers::new(),
            policy => HostHandlers::new().with_elicitation(Answer(policy)),
        }
    }
}

/// Asks the person at the terminal: a form, or whether to open a link.
struct Interactive;

impl Elicitation for Interactive {
    fn modes(&self) -> ElicitationModes {
        ElicitationModes {
            form: true,
            url: true,
        }
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        let server = server.to_owned();
        Box::pin(async move {
            // The terminal's prompts block: off the runtime's threads.
            let asked = tokio::task::spawn_blocking(move || match request {
                ElicitRequestParams::FormElicitationParams {
                    message,
                    requested_schema,
                    ..
                } => {
                    let schema = serde_json::to_value(requested_schema).unwrap_or_default();
                    ask::ask(&ask::Terminal, &server, &message, &schema)
                }
                ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                    let browser = crate::browser::Browser::from_env(false);
                    let open = |url: &str| browser.open_link(url);
                    ask::ask_url(&ask::Terminal, &open, &server, &message, &url)
                }
                // A mode this build does not know: not answered.
                _ => ElicitResult::new(ElicitationAction::Decline),
            });
            asked
                .await
                .unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel))
        })
    }
}

/// Offers what the person at a terminal is offered, and declines every question:
/// nobody is there to answer.
struct Unattended;

impl Elicitation for Unattended {
    fn modes(&self) -> ElicitationModes {
        Interactive.modes()
    }

    fn elicit<'a>(
        &'a self,
        server: &'a str,
        _request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        tracing::info!(
            server,
            "declined a question: no person at a terminal to answer it (see `--elicitation`)"
        );
        Box::pin(std::future::ready(ElicitResult::new(
            ElicitationAction::Decline,
        )))
    }
}

/// Answers every question as its policy says.
struct Answer(Policy);

impl Elicitation for Answer {
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        let answer = match (self.0, request) {
            (
                Policy::AcceptDefaults,
                ElicitRequestParams::FormElicitationParams {
                    requested_schema, ..
                },
            ) => match serde_json::to_value(requested_schema)
                .ok()
                .and_then(|schema| defaults(&schema))
            {
                Some(content) => ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content)),
                None => {
                    tracing::info!(
                        server,
                        "declined a question with a required field that has no default"
                    );
                    ElicitResult::new(ElicitationAction::Decline)
                }
            },
            (Policy::Cancel, _) => ElicitResult::new(ElicitationAction::Cancel),
            _ => ElicitResult::new(ElicitationAction::Decline),
        };
        Box::pin(std::future::ready(answer))
    }
}

/// Each property's `default` in a form's `schema`; `None` when a required one has
/// none.
fn defaults(schema: &Value) -> Option<Map<String, Value>> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let content: Map<String, Value> = properties
        .into_iter()
        .flatten()
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect();
    let required = schema.get("required").and_then(Value::as_array);
    let complete = required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .all(|name| content.contains_key(name));
    complete.then_some(content)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_fill_the_form_and_a_required_field_without_one_fails_it() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "ada"},
                "count": {"type": "integer", "default": 3},
                "colors": {"type": "array", "items": {"type": "string", "enum": ["r", "g"]}, "default": ["r"]},
                "note": {"type": "string"}
            },
            "required": ["name"]
        });
        assert_eq!(
            defaults(&schema),
            Some(
                json!({"name": "ada", "count": 3, "colors": ["r"]})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        let mut missing = schema.clone();
        missing["required"] = json!(["name", "note"]);
        assert_eq!(defaults(&missing), None);
    }

    #[test]
    fn decline_offers_nothing_and_the_others_offer_forms() {
        assert!(format!("{:?}", Policy::Decline.handlers()).contains("elicitation: None"));
        assert!(
            format!("{:?}", Policy::AcceptDefaults.handlers()).contains("form: true, url: false")
        );
    }

    #[test]
    fn by_default_forms_and_urls_are_offered_with_or_without_a_terminal() {
        for terminal in [true, false] {
            assert!(
                format!("{:?}", handlers(None, terminal)).contains("form: true, url: true"),
                "terminal: {terminal}"
            );
        }
    }
}
