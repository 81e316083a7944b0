//! Every tool server-everything lists, called through the library, with a host
//! that answers everything a server may ask (elicitation in both modes, sampling,
//! roots).

#![allow(
    deprecated,
    reason = "rmcp marks sampling deprecated (SEP-2577); server-everything still asks"
)]

use std::sync::{Arc, Mutex};

use mcp_runtime::{
    CallOptions, OnProgress, ServerConfig, ServerState,
    host::{Elicitation, ElicitationModes, HandlerFuture, HostHandlers, Root, Roots, Sampling},
    model::{
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        ElicitationAction, SamplingMessage,
    },
};
use serde_json::{Value, json};

use crate::{peers::server_everything, support::*};

/// Accepts every question: a form with no content, a URL as opened.
struct Accepting;

impl Elicitation for Accepting {
    fn modes(&self) -> ElicitationModes {
        ElicitationModes {
            form: true,
            url: true,
        }
    }

    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        _request: ElicitRequestParams,
    ) -> HandlerFuture<'a, ElicitResult> {
        Box::pin(async { ElicitResult::new(ElicitationAction::Accept) })
    }
}

/// A model that always says the same.
struct Model;

impl Sampling for Model {
    fn create_message<'a>(
        &'a self,
        _server: &'a str,
        _request: CreateMessageRequestParams,
    ) -> HandlerFuture<'a, Result<CreateMessageResult, rmcp::ErrorData>> {
        Box::pin(async {
            Ok(CreateMessageResult::new(
                SamplingMessage::assistant_text("sampled"),
                "test-model".into(),
            ))
        })
    }
}

/// One project root.
struct Project;

impl Roots for Project {
    fn roots<'a>(&'a self, _server: &'a str) -> HandlerFuture<'a, Vec<Root>> {
        Box::pin(async {
            vec![Root {
                uri: "file:///project".into(),
                name: None,
            }]
        })
    }
}

/// The arguments each tool is called with (none reach the network: the gzip tool
/// compresses a data URI).
fn arguments(tool: &str) -> Option<Value> {
    Some(match tool {
        "echo" => json!({"message": "hi"}),
        "get-annotated-message" => json!({"messageType": "success"}),
        "get-env" | "get-tiny-image" | "get-resource-reference" | "get-roots-list" => json!({}),
        "get-resource-links" => json!({"count": 2}),
        "get-structured-content" => json!({"location": "Chicago"}),
        "get-sum" => json!({"a": 1, "b": 2}),
        "gzip-file-as-resource" => {
            json!({"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"})
        }
        "toggle-simulated-logging" | "toggle-subscriber-updates" => json!({}),
        "trigger-long-running-operation" => json!({"duration": 1, "steps": 2}),
        "trigger-elicitation-request" => json!({}),
        "trigger-url-elicitation" => json!({"url": "https://example.com/sign-in"}),
        "trigger-sampling-request" => json!({"prompt": "hi", "maxTokens": 10}),
        "simulate-research-query" => json!({"topic": "rust"}),
        _ => return None,
    })
}

#[tokio::test]
async fn every_tool_of_server_everything_is_callable() {
    let everything = ServerConfig::stdio(
        "everything",
        "node",
        vec![server_everything().to_str().unwrap().into(), "stdio".into()],
    );
    let host = HostHandlers::new()
        .with_elicitation(Accepting)
        .with_sampling(Model)
        .with_roots(Project);
    let runtime = start_with(everything, host).await;
    assert_eq!(runtime.servers()[0].state, ServerState::Ready);
    let catalog = runtime.catalog();
    let tools: Vec<(String, String)> = catalog
        .tools()
        .map(|tool| (tool.qualified_name.to_string(), tool.tool.name.to_string()))
        .collect();
    // Everything a host that answers every question is offered.
    for conditional in [
        "get-roots-list",
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "trigger-sampling-request",
    ] {
        assert!(
            tools.iter().any(|(_, raw)| raw == conditional),
            "`{conditional}` is listed: {tools:?}"
        );
    }
    for (qualified, raw) in &tools {
        let arguments = arguments(raw).unwrap_or_else(|| panic!("no arguments for `{raw}`"));
        let reports = Arc::new(Mutex::new(0));
        let counted = reports.clone();
        let options = CallOptions::new().with_progress(OnProgress::new(move |_| {
            *counted.lock().unwrap() += 1;
        }));
        let result = runtime
            .call_tool_with(qualified, arguments.as_object().cloned(), options)
            .await
            .unwrap_or_else(|error| panic!("`{raw}`: {}", mcp_runtime::error::chain(&error)));
        assert!(!result.is_error(), "`{raw}`: {result:?}");
        if raw == "trigger-long-running-operation" {
            assert!(
                *reports.lock().unwrap() >= 1,
                "its progress reaches the caller"
            );
        }
        if raw == "trigger-sampling-request" {
            let text = serde_json::to_string(&result).unwrap();
            assert!(text.contains("sampled"), "{text}");
        }
        if raw == "get-roots-list" {
            let text = serde_json::to_string(&result).unwrap();
            assert!(text.contains("file:///project"), "{text}");
        }
    }
    runtime.shutdown().await;
}
