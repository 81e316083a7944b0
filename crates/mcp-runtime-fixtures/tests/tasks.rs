//! Tools that run as tasks: server-everything's task-required research tool
//! (2025-11-25), and the fixture's task tool under the 2026-07-28 tasks extension,
//! over stdio and Streamable HTTP.

use std::sync::{Arc, Mutex};

use mcp_runtime::{
    ListingRegistry, Runtime, ServerConfig, ServerState, StartOptions, TaskSupport,
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

fn text(result: &mcp_runtime::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|content| content.as_text())
        .map(|text| text.text.clone())
        .collect()
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
        research
            .execution
            .as_deref()
            .map(|e| e["taskSupport"].clone()),
        Some(json!("required"))
    );
    let plain = catalog.resolve("mcp__everything__get_sum").unwrap();
    assert_eq!(plain.task_support, TaskSupport::Forbidden);

    let result = runtime
        .call_tool(RESEARCH, object(json!({"topic": "rust"})))
        .await
        .unwrap_or_else(|error| panic!("{}", mcp_runtime::error::chain(&error)));
    assert_ne!(result.is_error, Some(true), "{result:?}");
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
    let runtime = Runtime::start(
        config([everything()]),
        StartOptions::new()
            .wait_for_all()
            .with_listing_registry(ListingRegistry::new())
            .with_host(HostHandlers::new().with_elicitation(chooser)),
    )
    .await
    .expect("start succeeds");
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
