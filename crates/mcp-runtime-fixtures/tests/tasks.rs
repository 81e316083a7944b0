//! Tools that run as tasks: server-everything's task-required research tool
//! (2025-11-25), and the fixture's task tool under the 2026-07-28 tasks extension,
//! over stdio and Streamable HTTP.

use std::sync::{Arc, Mutex};

use mcp_runtime::{
    ServerConfig, ServerState, TaskSupport,
    host::{Elicitation, HandlerFuture, HostHandlers},
    model::{ElicitRequestParams, ElicitResult, ElicitationAction},
};
use serde_json::json;

use crate::{peers::server_everything, support::*};

/// server-everything's `simulate-research-query` (taskSupport `required`), by its
/// qualified name.
const RESEARCH: &str = "mcp__everything__simulate_research_query";

fn everything() -> ServerConfig {
    ServerConfig::stdio(
        "everything",
        "node",
        vec![server_everything().to_str().unwrap().into(), "stdio".into()],
    )
}

fn text(result: &mcp_runtime::ToolResult) -> String {
    text_of(result)
}

#[tokio::test]
async fn server_everythings_task_required_tool_is_called_as_a_task() {
    let (runtime, _) = start(config([everything()])).await;
    let status = &runtime.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
    let catalog = runtime.catalog();
    let research = catalog
        .resolve(RESEARCH)
        .expect("the research tool is listed");
    assert_eq!(research.tool.name, "simulate-research-query");
    assert_eq!(research.task_support, TaskSupport::Required);
    assert_eq!(
        research.execution().map(|e| e["taskSupport"].clone()),
        Some(json!("required"))
    );
    let plain = catalog.resolve("mcp__everything__get_sum").unwrap();
    assert_eq!(plain.task_support, TaskSupport::Forbidden);

    let result = runtime
        .call_tool(RESEARCH, object(json!({"topic": "rust"})))
        .await
        .unwrap_or_else(|error| panic!("{}", mcp_runtime::error::chain(&error)));
    assert!(!result.is_error(), "{result:?}");
    assert!(
        text(&result).contains("# Research Report: rust"),
        "{}",
        text(&result)
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_research_tool_is_a_task_over_streamable_http_and_legacy_sse_too() {
    // Each transport hands the `tools/list` answer over raw, `execution` kept.
    let (http, sse) = tokio::join!(
        crate::peers::everything_over("streamableHttp"),
        crate::peers::everything_over("sse")
    );
    let mut over_sse = ServerConfig::http("everything", &sse.url);
    let mcp_runtime::config::TransportConfig::StreamableHttp(http_config) = &mut over_sse.transport
    else {
        unreachable!("an HTTP server")
    };
    http_config.transport = mcp_runtime::config::HttpTransport::Sse;
    for server in [ServerConfig::http("everything", &http.url), over_sse] {
        let (runtime, _) = start(config([server])).await;
        let status = &runtime.servers()[0];
        assert_eq!(status.state, ServerState::Ready, "{:?}", status.error);
        let transport = status.transport.as_str();
        let research = runtime.catalog().resolve(RESEARCH).cloned().unwrap();
        assert_eq!(research.task_support, TaskSupport::Required, "{transport}");
        let result = runtime
            .call_tool(RESEARCH, object(json!({"topic": "http"})))
            .await
            .unwrap_or_else(|error| panic!("{transport}: {}", mcp_runtime::error::chain(&error)));
        assert!(
            text(&result).contains("# Research Report: http"),
            "{transport}: {}",
            text(&result)
        );
        runtime.shutdown().await;
    }
}

/// Picks the interpretation `choice` for every question.
#[derive(Clone)]
struct Chooser {
    choice: &'static str,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Elicitation for Chooser {
    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        Box::pin(async move {
            if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
                self.asked.lock().unwrap().push(message);
            }
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"interpretation": self.choice}))
        })
    }
}

#[tokio::test]
async fn a_question_inside_a_task_reaches_the_host_and_its_answer_the_result() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let chooser = Chooser {
        choice: "programming",
        asked: asked.clone(),
    };
    let runtime = start_with(everything(), HostHandlers::new().with_elicitation(chooser)).await;
    let result = runtime
        .call_tool(
            RESEARCH,
            object(json!({"topic": "python", "ambiguous": true})),
        )
        .await
        .unwrap_or_else(|error| panic!("{}", mcp_runtime::error::chain(&error)));
    let text = text(&result);
    assert!(text.contains("(programming)"), "{text}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("python"), "{asked:?}");
    runtime.shutdown().await;
}

/// The fixture's `task_job` under 2026-07-28, logging what it receives to `log`.
fn tasker(log: &std::path::Path) -> ServerConfig {
    fixture_auto(
        "tasker",
        &["--tasks", "--era", "stateless", "--log", path_str(log)],
    )
}

/// The entries of `log` of `method`.
fn logged(log: &std::path::Path, method: &str) -> Vec<serde_json::Value> {
    read_log(log)
        .into_iter()
        .filter(|entry| entry["method"] == method)
        .collect()
}

#[tokio::test]
async fn a_2026_server_that_answers_with_a_task_is_polled_to_its_result() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let (runtime, _) = start(config([tasker(&log)])).await;
    let result = runtime
        .call_tool(
            "mcp__tasker__task_job",
            object(json!({"ms": 300, "poll_ms": 100})),
        )
        .await
        .unwrap_or_else(|error| panic!("{}", mcp_runtime::error::chain(&error)));
    assert_eq!(
        result.structured_content().cloned().unwrap()["worked_ms"],
        300
    );
    runtime.shutdown().await;

    // The call declared the extension; the server made a task and was polled.
    let call = &logged(&log, "tools/call")[0];
    let declared = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
        ["io.modelcontextprotocol/tasks"];
    assert_eq!(*declared, json!({}), "{call}");
    let polls = logged(&log, "tasks/get");
    assert!(polls.len() >= 2, "{polls:?}");
    assert!(logged(&log, "tasks/cancel").is_empty(), "nothing to cancel");
}

#[tokio::test]
async fn over_streamable_http_a_tasks_requests_name_the_task() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let fixture = http_fixture(&["--tasks", "--era", "stateless", "--log", path_str(&log)]).await;
    let (runtime, _) = start(config([ServerConfig::http("tasker", &fixture.url)])).await;
    let result = runtime
        .call_tool(
            "mcp__tasker__task_job",
            object(json!({"ms": 200, "poll_ms": 50})),
        )
        .await
        .unwrap_or_else(|error| panic!("{}", mcp_runtime::error::chain(&error)));
    assert_eq!(
        result.structured_content().cloned().unwrap()["worked_ms"],
        200
    );
    runtime.shutdown().await;
    let polls = logged(&log, "tasks/get");
    assert!(!polls.is_empty());
    for poll in polls {
        assert_eq!(
            poll["http_headers"]["mcp-name"], poll["params"]["taskId"],
            "{poll}"
        );
    }
}

#[tokio::test]
async fn a_task_that_outlives_the_timeout_is_cancelled_on_the_server() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let mut server = tasker(&log);
    server.tool_timeout = std::time::Duration::from_millis(500);
    let (runtime, _) = start(config([server])).await;
    let error = runtime
        .call_tool(
            "mcp__tasker__task_job",
            object(json!({"ms": 60_000, "poll_ms": 100})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, mcp_runtime::CallError::Timeout { .. }),
        "{error:?}"
    );
    runtime.shutdown().await;
    let polled = logged(&log, "tasks/get");
    let cancelled = logged(&log, "tasks/cancel");
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(
        cancelled[0]["params"]["taskId"],
        polled[0]["params"]["taskId"]
    );
}

#[tokio::test]
async fn a_tasks_question_is_answered_by_the_host() {
    let dir = temp_dir();
    let log = dir.path().join("log.jsonl");
    let asked = Arc::new(Mutex::new(Vec::new()));
    let chooser = Chooser {
        choice: "yes",
        asked: asked.clone(),
    };
    let runtime = start_with(tasker(&log), HostHandlers::new().with_elicitation(chooser)).await;
    let result = runtime
        .call_tool(
            "mcp__tasker__task_job",
            object(json!({"ms": 0, "poll_ms": 50, "ask": true})),
        )
        .await
        .unwrap_or_else(|error| panic!("{}", mcp_runtime::error::chain(&error)));
    let answer = &result.structured_content().cloned().unwrap()["answer"];
    assert_eq!(answer["action"], "accept", "{answer}");
    assert_eq!(answer["content"]["interpretation"], "yes", "{answer}");
    assert_eq!(*asked.lock().unwrap(), ["go on?"]);
    runtime.shutdown().await;
    assert_eq!(logged(&log, "tasks/update").len(), 1);
}
