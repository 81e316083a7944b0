//! The progress a server reports during a call reaches the caller's callback, in
//! order, in both protocol eras.

use std::sync::{Arc, Mutex};

use mcp_runtime::{
    CallOptions, ListingRegistry, OnProgress, Progress, Runtime, StartOptions, config::Protocol,
};

use crate::support::*;

async fn started(protocol: Protocol, log: &std::path::Path) -> Runtime {
    started_with(protocol, log, 3).await
}

async fn started_with(protocol: Protocol, log: &std::path::Path, steps: usize) -> Runtime {
    let steps = steps.to_string();
    let server = fixture_auto(
        "steps",
        &[
            "--progress-steps",
            &steps,
            "--era",
            "dual",
            "--log",
            path_str(log),
        ],
    )
    .with_protocol(protocol);
    Runtime::start(
        config([server]),
        StartOptions::new()
            .wait_for_all()
            .with_listing_registry(ListingRegistry::new()),
    )
    .await
    .expect("start succeeds")
}

#[tokio::test]
async fn a_calls_progress_reaches_its_callback_in_order() {
    for protocol in [Protocol::V2025_11_25, Protocol::V2026_07_28] {
        let dir = temp_dir();
        let log = dir.path().join("log.jsonl");
        let runtime = started(protocol, &log).await;
        let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
        let options = CallOptions::new().with_progress(OnProgress::new({
            let seen = seen.clone();
            move |progress| seen.lock().unwrap().push(progress)
        }));
        let result = runtime
            .call_tool_with(
                "mcp__steps__echo",
                object(serde_json::json!({"x": 1})),
                options,
            )
            .await
            .unwrap();
        assert_eq!(result.structured_content().cloned().unwrap()["x"], 1);
        let seen = seen.lock().unwrap().clone();
        let steps: Vec<(f64, Option<f64>, Option<&str>, &str)> = seen
            .iter()
            .map(|p| (p.progress, p.total, p.message.as_deref(), p.server.as_str()))
            .collect();
        assert_eq!(
            steps,
            [
                (1.0, Some(3.0), Some("step 1"), "steps"),
                (2.0, Some(3.0), Some("step 2"), "steps"),
                (3.0, Some(3.0), Some("step 3"), "steps"),
            ],
            "{protocol:?}"
        );
        runtime.shutdown().await;
    }
}

/// The server sends its reports and its answer back to back; the runtime's reader and
/// the caller run on different threads. Every report still reaches the callback, in
/// order, before the call returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_report_sent_before_the_answer_is_seen_before_the_call_returns() {
    const STEPS: usize = 200;
    for protocol in [Protocol::V2025_11_25, Protocol::V2026_07_28] {
        let dir = temp_dir();
        let runtime = started_with(protocol, &dir.path().join("log.jsonl"), STEPS).await;
        for _ in 0..10 {
            let seen: Arc<Mutex<Vec<f64>>> = Arc::default();
            let options = CallOptions::new().with_progress(OnProgress::new({
                let seen = seen.clone();
                move |progress| seen.lock().unwrap().push(progress.progress)
            }));
            runtime
                .call_tool_with("mcp__steps__echo", object(serde_json::json!({})), options)
                .await
                .unwrap();
            let seen = std::mem::take(&mut *seen.lock().unwrap());
            let expected: Vec<f64> = (1..=STEPS).map(|step| step as f64).collect();
            assert_eq!(seen, expected, "{protocol:?}");
        }
        runtime.shutdown().await;
    }
}
