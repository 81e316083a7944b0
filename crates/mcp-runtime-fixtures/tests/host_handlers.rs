//! The host's handlers answer a server's questions (elicitation, roots, sampling)
//! in both protocol eras, what is offered is what the host provides, and the time a
//! person takes to answer does not count against the call's timeout.

#![allow(
    deprecated,
    reason = "rmcp marks sampling deprecated (SEP-2577); the handlers still answer it"
)]

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use mcp_runtime::{
    CallError, Runtime, ServerConfig,
    config::Protocol,
    error::AnswerError,
    host::{Elicitation, HandlerFuture, HostHandlers, Root, Roots, Sampling},
    model::{
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        ElicitationAction, SamplingMessage,
    },
};
use serde_json::json;

use crate::support::*;

/// An elicitation handler that accepts with `{"name": "ada"}`, noting what it was
/// asked, after holding the answer for `hold`.
#[derive(Clone, Default)]
struct Person {
    asked: Arc<Mutex<Vec<(String, String)>>>,
    hold: Duration,
}

impl Elicitation for Person {
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        Box::pin(async move {
            let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
                return ElicitResult::new(ElicitationAction::Decline);
            };
            self.asked
                .lock()
                .unwrap()
                .push((server.to_owned(), message));
            tokio::time::sleep(self.hold).await;
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "ada"}))
        })
    }
}

struct Workspace;

impl Roots for Workspace {
    fn roots<'a>(&'a self, _server: &'a str) -> HandlerFuture<'a, Vec<Root>> {
        Box::pin(async {
            vec![Root {
                uri: "file:///work/project".into(),
                name: Some("project".into()),
            }]
        })
    }
}

struct Model;

impl Sampling for Model {
    fn create_message<'a>(
        &'a self,
        server: &'a str,
        _request: CreateMessageRequestParams,
    ) -> HandlerFuture<'a, Result<CreateMessageResult, rmcp::ErrorData>> {
        Box::pin(async move {
            Ok(CreateMessageResult::new(
                SamplingMessage::assistant_text(format!("hello, {server}")),
                "test-model".into(),
            ))
        })
    }
}

fn asking(protocol: Protocol) -> ServerConfig {
    fixture_auto("asker", &["--asks", "--era", "dual"]).with_protocol(protocol)
}

async fn answer(runtime: &Runtime, tool: &str) -> serde_json::Value {
    let result = runtime
        .call_tool(&format!("mcp__asker__{tool}"), None)
        .await
        .unwrap_or_else(|error| panic!("`{tool}`: {}", mcp_runtime::error::chain(&error)));
    result.structured_content().cloned().expect("the answer")
}

const ERAS: [Protocol; 2] = [Protocol::V2025_11_25, Protocol::V2026_07_28];

#[tokio::test]
async fn without_handlers_a_question_is_declined_and_the_roots_are_empty() {
    for protocol in ERAS {
        let runtime = start_with(asking(protocol), HostHandlers::new()).await;
        assert_eq!(
            answer(&runtime, "ask").await,
            json!({"action": "decline"}),
            "{protocol:?}"
        );
        assert_eq!(answer(&runtime, "roots").await, json!({"roots": []}));
        let error = runtime
            .call_tool("mcp__asker__sample", None)
            .await
            .expect_err("no sampling without a handler");
        if protocol == Protocol::V2026_07_28 {
            // Asked in an input-required round: the runtime refuses, and says which way.
            assert!(
                matches!(
                    &error,
                    CallError::Answer {
                        source: AnswerError::SamplingNotOffered,
                        ..
                    }
                ),
                "{error:?}"
            );
        }
        let error = mcp_runtime::error::chain(&error);
        assert!(error.contains("sampl"), "{protocol:?}: {error}");
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn the_hosts_handlers_answer_in_both_eras() {
    for protocol in ERAS {
        let person = Person::default();
        let host = HostHandlers::new()
            .with_elicitation(person.clone())
            .with_roots(Workspace)
            .with_sampling(Model);
        let runtime = start_with(asking(protocol), host).await;
        assert_eq!(
            answer(&runtime, "ask").await,
            json!({"action": "accept", "content": {"name": "ada"}}),
            "{protocol:?}"
        );
        assert_eq!(
            *person.asked.lock().unwrap(),
            [(
                "asker".to_owned(),
                "Who is asking, and how many?".to_owned()
            )]
        );
        assert_eq!(
            answer(&runtime, "roots").await,
            json!({"roots": [{"uri": "file:///work/project", "name": "project"}]})
        );
        let sampled = answer(&runtime, "sample").await;
        assert_eq!(sampled["content"]["text"], "hello, asker", "{sampled}");
        assert_eq!(sampled["model"], "test-model");
        runtime.shutdown().await;
    }
}

#[tokio::test]
async fn the_persons_time_does_not_count_against_the_call_timeout() {
    for protocol in ERAS {
        // The person answers after twice the call's timeout: without the pause the
        // call would time out first.
        let timeout = Duration::from_millis(500);
        let person = Person {
            hold: timeout * 2,
            ..Person::default()
        };
        let server = asking(protocol).with_tool_timeout(timeout);
        let runtime = start_with(server, HostHandlers::new().with_elicitation(person)).await;
        assert_eq!(
            answer(&runtime, "ask").await["action"],
            "accept",
            "{protocol:?}"
        );
        runtime.shutdown().await;
    }
}

/// A model that may call tools: it notes the tools it was offered.
#[derive(Clone, Default)]
struct ToolModel {
    offered: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl Sampling for ToolModel {
    fn tool_use(&self) -> bool {
        true
    }

    fn create_message<'a>(
        &'a self,
        _server: &'a str,
        request: CreateMessageRequestParams,
    ) -> HandlerFuture<'a, Result<CreateMessageResult, rmcp::ErrorData>> {
        Box::pin(async move {
            self.offered.lock().unwrap().push(json!({
                "tools": request.tools.iter().flatten().map(|tool| tool.name.to_string()).collect::<Vec<_>>(),
                "toolChoice": request.tool_choice,
            }));
            Ok(CreateMessageResult::new(
                SamplingMessage::assistant_text("no lookup needed"),
                "tool-model".into(),
            ))
        })
    }
}

#[tokio::test]
async fn a_sampling_request_with_tools_reaches_a_handler_that_takes_them_in_both_eras() {
    for protocol in ERAS {
        let model = ToolModel::default();
        let runtime = start_with(
            asking(protocol),
            HostHandlers::new().with_sampling(model.clone()),
        )
        .await;
        let result = runtime
            .call_tool("mcp__asker__sample", object(json!({"tools": true})))
            .await
            .unwrap_or_else(|error| panic!("{protocol:?}: {}", mcp_runtime::error::chain(&error)));
        let sampled = result.structured_content().cloned().expect("the answer");
        assert_eq!(sampled["model"], "tool-model", "{protocol:?}: {sampled}");
        assert_eq!(
            *model.offered.lock().unwrap(),
            [json!({"tools": ["lookup"], "toolChoice": {"mode": "auto"}})],
            "{protocol:?}"
        );
        runtime.shutdown().await;
    }
}

/// The fixture's messages when it offers logging, in `era` (spoken as `protocol`),
/// to a host with `host`'s handlers that makes one call.
async fn logged(protocol: Protocol, era: &str, host: HostHandlers) -> Vec<serde_json::Value> {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let server = fixture_auto(
        "logger",
        &["--logging", "--era", era, "--log", path_str(&log)],
    )
    .with_protocol(protocol);
    let runtime = start_with(server, host).await;
    runtime.call_tool("mcp__logger__echo", None).await.unwrap();
    runtime.shutdown().await;
    read_log(&log)
}

#[tokio::test]
async fn the_hosts_log_level_reaches_each_era_its_own_way_and_nothing_without_one() {
    use mcp_runtime::model::LoggingLevel;

    for (protocol, era) in [
        (Protocol::V2025_11_25, "handshake"),
        (Protocol::V2026_07_28, "stateless"),
    ] {
        for level in [Some(LoggingLevel::Warning), None] {
            let mut host = HostHandlers::new();
            if let Some(level) = level {
                host = host.with_log_level(level);
            }
            let log = logged(protocol, era, host).await;
            let set_levels: Vec<_> = log
                .iter()
                .filter(|entry| entry["method"] == "logging/setLevel")
                .map(|entry| entry["params"]["level"].clone())
                .collect();
            let call = log
                .iter()
                .find(|entry| entry["method"] == "tools/call")
                .expect("the call");
            let in_meta = &call["params"]["_meta"]["io.modelcontextprotocol/logLevel"];
            match (era, level) {
                ("handshake", Some(_)) => {
                    assert_eq!(set_levels, [json!("warning")], "{log:?}");
                    assert!(in_meta.is_null(), "{call}");
                }
                ("stateless", Some(_)) => {
                    assert!(set_levels.is_empty(), "{log:?}");
                    assert_eq!(*in_meta, "warning", "{call}");
                }
                _ => {
                    assert!(set_levels.is_empty(), "{era}: {log:?}");
                    assert!(in_meta.is_null(), "{era}: {call}");
                }
            }
        }
    }
}

#[tokio::test]
async fn a_2026_07_28_question_sends_the_call_again_with_the_same_arguments_over_every_transport() {
    let dir = temp_dir();
    let log = dir.path().join("log");
    let logged = ["--asks", "--era", "dual", "--log", path_str(&log)];
    let mut http = http_fixture(&logged).await;
    let servers = [
        fixture_auto("asker", &logged).with_protocol(Protocol::V2026_07_28),
        ServerConfig::http("asker", &http.url).with_protocol(Protocol::V2026_07_28),
    ];
    let arguments = json!({"message": "Who is it?", "padding": "x".repeat(4096)});
    for server in servers {
        std::fs::write(&log, "").unwrap();
        let runtime = start_with(
            server,
            HostHandlers::new().with_elicitation(Person::default()),
        )
        .await;
        let result = runtime
            .call_tool("mcp__asker__ask", object(arguments.clone()))
            .await
            .unwrap_or_else(|error| panic!("{}", mcp_runtime::error::chain(&error)));
        assert_eq!(result.structured_content().unwrap()["action"], "accept");
        let calls: Vec<serde_json::Value> = read_log(&log)
            .into_iter()
            .filter(|entry| entry["method"] == "tools/call")
            .collect();
        assert_eq!(calls.len(), 2, "the call and its second round: {calls:?}");
        for call in &calls {
            assert_eq!(call["params"]["arguments"], arguments);
        }
        assert!(calls[0]["params"].get("inputResponses").is_none());
        assert_eq!(
            calls[1]["params"]["inputResponses"]["asked"]["action"],
            "accept"
        );
        runtime.shutdown().await;
    }
    http.kill().await;
}

/// An elicitation handler that gives the context a prompt asks for.
struct Context;

impl Elicitation for Context {
    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        _request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        Box::pin(async {
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"context": "the host's"}))
        })
    }
}

/// A 2026-07-28 server may ask before it answers `prompts/get` too: the host's
/// handler answers, and the request is sent again with the answer and the state.
#[tokio::test]
async fn a_2026_07_28_prompt_that_asks_first_is_answered_by_the_hosts_handler() {
    let server = ServerConfig::stdio(
        "reference",
        env!("CARGO_BIN_EXE_conformance-server"),
        vec!["--stdio".to_owned()],
    )
    .with_protocol(Protocol::V2026_07_28);
    let runtime = start_with(
        server.clone(),
        HostHandlers::new().with_elicitation(Context),
    )
    .await;
    let prompt = runtime
        .get_prompt("test_input_required_result_prompt", Some("reference"), None)
        .await
        .unwrap_or_else(|error| panic!("{}", mcp_runtime::error::chain(&error)));
    let text: Vec<String> = prompt
        .messages()
        .filter_map(|message| message.content.as_text().map(str::to_owned))
        .collect();
    assert_eq!(text, ["Prompt with context: the host's"]);
    runtime.shutdown().await;

    // Without a handler the question is declined; this server asks again, until the
    // runtime's bound on rounds.
    let runtime = start_with(server, HostHandlers::new()).await;
    let error = runtime
        .get_prompt("test_input_required_result_prompt", Some("reference"), None)
        .await
        .expect_err("a declined question gets no prompt");
    let error = mcp_runtime::error::chain(&error);
    assert!(
        error.contains("asked for more input 10 times in a row"),
        "{error}"
    );
    runtime.shutdown().await;
}
