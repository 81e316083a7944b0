//! Tests of task calls: a scripted JSON-RPC server in process, under virtual time, so
//! every wait between polls is exact.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use rmcp::{RoleClient, ServiceExt, service::RunningService};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream},
    sync::mpsc,
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::{
    connection::{answers::Answers, cancellation::Cancellations},
    host::HostHandlers,
    model::ClientConfig,
    protocol::client_config,
};

/// A message the scripted server read, and when (since the test began).
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    params: Value,
    at: Duration,
}

/// What the scripted server answers to each method, in order: the JSON text of a
/// result, or of an error when it begins with `error:`. A request with nothing
/// left to answer it is never answered.
type Script = Vec<(&'static str, String)>;

struct Scripted {
    client: RunningService<RoleClient, ClientConfig>,
    seen: Mutex<mpsc::UnboundedReceiver<Seen>>,
    cancellations: Cancellations,
    answers: Answers,
    ended: CancellationToken,
}

impl Scripted {
    async fn start(script: Script) -> Self {
        Self::with_host(script, HostHandlers::default()).await
    }

    async fn with_host(script: Script, host: HostHandlers) -> Self {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (seen, receiver) = mpsc::unbounded_channel();
        tokio::spawn(serve(server_end, script, seen, Instant::now()));
        let client = client_config(&host)
            .serve(tokio::io::split(client_end))
            .await
            .expect("the handshake with the scripted server succeeds");
        Self {
            cancellations: Cancellations::new(client.peer().clone()),
            answers: Answers::new("s", host),
            ended: CancellationToken::new(),
            seen: Mutex::new(receiver),
            client,
        }
    }

    fn caller(&self) -> Caller<'_> {
        Caller {
            peer: self.client.peer(),
            cancellations: &self.cancellations,
            answers: &self.answers,
            ended: &self.ended,
            streams: None,
            stateless: false,
        }
    }

    fn deadline(&self, timeout: Duration) -> Deadline {
        Deadline::after(timeout, &self.answers)
    }

    /// Everything the server read so far, but `initialize` and `notifications/initialized`.
    fn seen(&self) -> Vec<Seen> {
        let mut seen = Vec::new();
        let mut receiver = self.seen.lock().unwrap();
        while let Ok(one) = receiver.try_recv() {
            if !one.method.starts_with("initialize") && one.method != "notifications/initialized" {
                seen.push(one);
            }
        }
        seen
    }

    /// The methods the server read, in order.
    fn methods(&self) -> Vec<String> {
        self.seen().into_iter().map(|seen| seen.method).collect()
    }
}

async fn serve(
    server_end: DuplexStream,
    script: Script,
    seen: mpsc::UnboundedSender<Seen>,
    began: Instant,
) {
    let script = Arc::new(Mutex::new(VecDeque::from(script)));
    let (read, mut write) = tokio::io::split(server_end);
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).expect("the client sends JSON");
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let _ = seen.send(Seen {
            method: method.clone(),
            params: message["params"].clone(),
            at: began.elapsed(),
        });
        let Some(id) = message.get("id").filter(|_| !method.is_empty()) else {
            continue;
        };
        let answer = if method == "initialize" {
            Some(
                r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"0"}}"#
                    .to_owned(),
            )
        } else {
            let mut script = script.lock().unwrap();
            let next = script.iter().position(|(m, _)| *m == method);
            next.and_then(|index| script.remove(index))
                .map(|(_, text)| text)
        };
        let Some(answer) = answer else { continue };
        let line = match answer.strip_prefix("error:") {
            Some(error) => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#),
            None => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{answer}}}"#),
        };
        if write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}

/// A 2025-11-25 task object.
fn handshake_task(status: &str, poll_interval: Option<u64>) -> Value {
    let mut task = json!({
        "taskId": "t1", "status": status, "ttl": 60000,
        "createdAt": "2026-12-01T00:00:00Z", "lastUpdatedAt": "2026-12-01T00:00:00Z",
    });
    if let Some(interval) = poll_interval {
        task["pollInterval"] = interval.into();
    }
    task
}

/// A 2026-07-28 task object, with `extra` fields (the inlined payload).
fn extension_task(status: &str, poll_interval_ms: Option<u64>, extra: Value) -> Value {
    let mut task = json!({
        "taskId": "t1", "status": status, "ttlMs": 60000,
        "createdAt": "2026-12-01T00:00:00Z", "lastUpdatedAt": "2026-12-01T00:00:00Z",
    });
    if let Some(interval) = poll_interval_ms {
        task["pollIntervalMs"] = interval.into();
    }
    for (key, value) in extra.as_object().into_iter().flatten() {
        task[key] = value.clone();
    }
    task
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn text_of(result: &ToolResult) -> String {
    result
        .content()
        .next()
        .and_then(|block| block.as_text().map(str::to_owned))
        .unwrap_or_default()
}

fn call_params() -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("slow");
    params.arguments = json!({"n": 1}).as_object().cloned();
    params
}

/// The times of the polls among `seen`.
fn polls(seen: &[Seen]) -> Vec<Duration> {
    seen.iter()
        .filter(|seen| seen.method == "tasks/get")
        .map(|seen| seen.at)
        .collect()
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

const LONG: Duration = Duration::from_secs(60);

#[test]
fn a_credential_a_task_quotes_is_masked_in_its_message_and_result() {
    let _sent = crate::redact::register("tk-bearer-71c0-token").unwrap();
    let answer = serde_json::from_value::<ServerResult>(json!({
        "taskId": "t-1",
        "status": "completed",
        "statusMessage": "sent tk-bearer-71c0-token",
        "result": {"content": [{"type": "text", "text": "tk-bearer-71c0-token"}]},
    }))
    .unwrap();
    let report = Report::of_answer(answer).unwrap();
    assert_eq!(report.message.as_deref(), Some("sent *****"));
    assert_eq!(report.result.unwrap()["content"][0]["text"], json!("*****"));
}

#[test]
fn rmcp_reads_handshake_task_answers_as_this_module_expects() {
    // rmcp 3.11 has no 2025-11-25 task shapes: the answer that creates a task is
    // left raw; a working task reads as its own `GetTaskResult`, which drops
    // `pollInterval` (so the last interval holds); a completed one is left raw.
    let read = |value: Value| serde_json::from_value::<ServerResult>(value).unwrap();
    let created = read(json!({"task": handshake_task("working", Some(700))}));
    assert!(
        matches!(created, ServerResult::CustomResult(_)),
        "{created:?}"
    );
    let working = read(handshake_task("working", Some(700)));
    assert!(
        matches!(working, ServerResult::GetTaskResult(_)),
        "{working:?}"
    );
    let report = Report::of_answer(working.clone()).unwrap();
    assert_eq!((report.status, report.interval), (Status::Working, None));
    let completed = read(handshake_task("completed", Some(700)));
    assert!(
        matches!(completed, ServerResult::CustomResult(_)),
        "{completed:?}"
    );
    let report = Report::of_answer(completed.clone()).unwrap();
    assert_eq!(
        (report.status, report.interval),
        (Status::Completed, Some(ms(700)))
    );
}

#[tokio::test(start_paused = true)]
async fn a_handshake_task_is_created_polled_at_the_servers_interval_and_its_result_read() {
    let scripted = Scripted::start(vec![
        (
            "tools/call",
            json!({"task": handshake_task("working", Some(700))}).to_string(),
        ),
        // rmcp drops the interval of a working answer: the 700 ms hold.
        (
            "tasks/get",
            handshake_task("working", Some(700)).to_string(),
        ),
        (
            "tasks/get",
            handshake_task("completed", Some(700)).to_string(),
        ),
        ("tasks/result", text_result("done").to_string()),
    ])
    .await;
    let caller = scripted.caller();
    let deadline = scripted.deadline(LONG);
    let result = call_as_task(&caller, call_params(), deadline, None)
        .await
        .unwrap();
    assert_eq!(text_of(&result), "done");
    let seen = scripted.seen();
    let methods: Vec<&str> = seen.iter().map(|seen| seen.method.as_str()).collect();
    assert_eq!(
        methods,
        ["tools/call", "tasks/get", "tasks/get", "tasks/result"]
    );
    assert_eq!(seen[0].params["task"], json!({}));
    assert_eq!(seen[0].params["name"], "slow");
    assert_eq!(seen[0].params["arguments"], json!({"n": 1}));
    // rmcp gives the call its progress token, which the task reports on.
    assert!(seen[0].params["_meta"]["progressToken"].is_number());
    assert_eq!(seen[1].params["taskId"], "t1");
    assert_eq!(seen[3].params["taskId"], "t1");
    assert_eq!(polls(&seen), [ms(700), ms(1400)]);
    assert_eq!(scripted.cancellations.in_flight(), 0, "nothing is owed");
}

#[tokio::test(start_paused = true)]
async fn a_handshake_server_may_answer_a_task_call_at_once() {
    let scripted = Scripted::start(vec![("tools/call", text_result("now").to_string())]).await;
    let caller = scripted.caller();
    let result = call_as_task(&caller, call_params(), scripted.deadline(LONG), None)
        .await
        .unwrap();
    assert_eq!(text_of(&result), "now");
    assert_eq!(scripted.methods(), ["tools/call"]);
}

#[tokio::test(start_paused = true)]
async fn a_handshake_task_that_needs_input_has_its_result_asked_for_at_once() {
    // The server's questions come while the client waits for `tasks/result`.
    let scripted = Scripted::start(vec![
        (
            "tools/call",
            json!({"task": handshake_task("input_required", None)}).to_string(),
        ),
        ("tasks/result", text_result("answered").to_string()),
    ])
    .await;
    let caller = scripted.caller();
    let result = call_as_task(&caller, call_params(), scripted.deadline(LONG), None)
        .await
        .unwrap();
    assert_eq!(text_of(&result), "answered");
    let seen = scripted.seen();
    assert_eq!(seen[1].method, "tasks/result");
    assert_eq!(seen[1].at, Duration::ZERO, "no wait before the result");
}

#[tokio::test(start_paused = true)]
async fn a_tasks_failure_is_the_servers_error() {
    let scripted = Scripted::start(vec![
        (
            "tools/call",
            json!({"task": handshake_task("failed", None)}).to_string(),
        ),
        (
            "tasks/result",
            r#"error:{"code":-32603,"message":"it broke"}"#.to_owned(),
        ),
    ])
    .await;
    let caller = scripted.caller();
    let error = call_as_task(&caller, call_params(), scripted.deadline(LONG), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, CallFailure::Failed(ServiceError::McpError(data)) if data.message == "it broke"),
        "{error:?}"
    );
    assert_eq!(scripted.cancellations.in_flight(), 0);
    assert!(!scripted.methods().contains(&"tasks/cancel".to_owned()));
}

/// A 2026-07-28 call that the server answers with a task, followed through
/// [`input_rounds::call`] (which routes a created task here).
async fn extension_call(scripted: &Scripted, timeout: Duration) -> Result<ToolResult, CallFailure> {
    let caller = scripted.caller();
    input_rounds::call(&caller, call_params(), scripted.deadline(timeout), None).await
}

fn created(poll_interval_ms: Option<u64>) -> String {
    let mut task = extension_task("working", poll_interval_ms, json!({}));
    task["resultType"] = "task".into();
    task.to_string()
}

#[tokio::test(start_paused = true)]
async fn an_extension_task_is_polled_at_each_interval_the_server_gives_and_its_result_inlined() {
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(250))),
        (
            "tasks/get",
            extension_task("working", Some(500), json!({})).to_string(),
        ),
        (
            "tasks/get",
            extension_task("completed", None, json!({"result": text_result("inlined")}))
                .to_string(),
        ),
    ])
    .await;
    let result = extension_call(&scripted, LONG).await.unwrap();
    assert_eq!(text_of(&result), "inlined");
    let seen = scripted.seen();
    assert_eq!(polls(&seen), [ms(250), ms(750)]);
    assert_eq!(seen[1].params["taskId"], "t1");
    assert_eq!(scripted.cancellations.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_extension_task_that_failed_or_was_cancelled_fails_the_call_and_is_not_cancelled() {
    let failed = extension_task(
        "failed",
        None,
        json!({"error": {"code": -32603, "message": "no disk"}}),
    );
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(100))),
        ("tasks/get", failed.to_string()),
    ])
    .await;
    let error = extension_call(&scripted, LONG).await.unwrap_err();
    assert!(
        matches!(&error, CallFailure::Failed(ServiceError::McpError(data)) if data.message == "no disk"),
        "{error:?}"
    );
    assert_eq!(scripted.methods(), ["tools/call", "tasks/get"]);

    let cancelled = extension_task("cancelled", None, json!({"statusMessage": "operator stop"}));
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(100))),
        ("tasks/get", cancelled.to_string()),
    ])
    .await;
    let error = extension_call(&scripted, LONG).await.unwrap_err();
    assert!(
        matches!(&error, CallFailure::Refused(AnswerError::TaskCancelled { message: Some(why) }) if why == "operator stop"),
        "{error:?}"
    );
    assert_eq!(scripted.methods(), ["tools/call", "tasks/get"]);
}

#[tokio::test(start_paused = true)]
async fn an_extension_tasks_questions_are_answered_once_each_with_tasks_update() {
    let question = json!({"inputRequests": {"confirm": {"method": "elicitation/create", "params": {
        "message": "go on?", "requestedSchema": {"type": "object", "properties": {}}}}}});
    let asking = extension_task("input_required", None, question).to_string();
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(100))),
        ("tasks/get", asking.clone()),
        ("tasks/update", r#"{"resultType":"complete"}"#.to_owned()),
        // The server has not taken the answer in yet: the same question again.
        ("tasks/get", asking),
        (
            "tasks/get",
            extension_task("completed", None, json!({"result": text_result("ok")})).to_string(),
        ),
    ])
    .await;
    let result = extension_call(&scripted, LONG).await.unwrap();
    assert_eq!(text_of(&result), "ok");
    let seen = scripted.seen();
    let methods: Vec<&str> = seen.iter().map(|seen| seen.method.as_str()).collect();
    assert_eq!(
        methods,
        [
            "tools/call",
            "tasks/get",
            "tasks/update",
            "tasks/get",
            "tasks/get"
        ]
    );
    // No elicitation handler: the question is declined, as a handshake server's
    // would be.
    assert_eq!(seen[2].params["taskId"], "t1");
    assert_eq!(
        seen[2].params["inputResponses"],
        json!({"confirm": {"action": "decline"}})
    );
}

#[tokio::test(start_paused = true)]
async fn a_task_that_outlives_the_timeout_is_cancelled_when_the_timeout_runs_out() {
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(1000))),
        (
            "tasks/get",
            extension_task("working", None, json!({})).to_string(),
        ),
        (
            "tasks/get",
            extension_task("working", None, json!({})).to_string(),
        ),
        ("tasks/cancel", r#"{"resultType":"complete"}"#.to_owned()),
    ])
    .await;
    let began = Instant::now();
    let error = extension_call(&scripted, ms(2500)).await.unwrap_err();
    assert!(matches!(error, CallFailure::TimedOut), "{error:?}");
    assert_eq!(began.elapsed(), ms(2500));
    scripted.cancellations.flush(LONG).await;
    let seen = scripted.seen();
    let methods: Vec<&str> = seen.iter().map(|seen| seen.method.as_str()).collect();
    assert_eq!(
        methods,
        ["tools/call", "tasks/get", "tasks/get", "tasks/cancel"]
    );
    assert_eq!(seen[3].params["taskId"], "t1");
    assert_eq!(seen[3].at, ms(2500));
}

#[tokio::test(start_paused = true)]
async fn a_poll_in_flight_at_the_timeout_is_cancelled_with_its_task() {
    // The server never answers the second poll.
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(1000))),
        (
            "tasks/get",
            extension_task("working", None, json!({})).to_string(),
        ),
        ("tasks/cancel", r#"{"resultType":"complete"}"#.to_owned()),
    ])
    .await;
    let error = extension_call(&scripted, ms(2500)).await.unwrap_err();
    assert!(matches!(error, CallFailure::TimedOut), "{error:?}");
    scripted.cancellations.flush(LONG).await;
    let methods = scripted.methods();
    assert_eq!(
        methods,
        [
            "tools/call",
            "tasks/get",
            "tasks/get",
            "notifications/cancelled",
            "tasks/cancel"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_dropped_task_call_is_cancelled_once() {
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(1000))),
        (
            "tasks/get",
            extension_task("working", None, json!({})).to_string(),
        ),
        ("tasks/cancel", r#"{"resultType":"complete"}"#.to_owned()),
    ])
    .await;
    let dropped = tokio::time::timeout(ms(1500), extension_call(&scripted, LONG)).await;
    assert!(dropped.is_err(), "the call was still waiting");
    scripted.cancellations.flush(LONG).await;
    let methods = scripted.methods();
    assert_eq!(methods, ["tools/call", "tasks/get", "tasks/cancel"]);
}

#[tokio::test(start_paused = true)]
async fn a_task_under_way_at_shutdown_is_cancelled_before_the_connection_closes() {
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(1000))),
        ("tasks/cancel", r#"{"resultType":"complete"}"#.to_owned()),
    ])
    .await;
    let mut call = Box::pin(extension_call(&scripted, LONG));
    // The task exists and its first poll is not due yet.
    assert!(tokio::time::timeout(ms(500), call.as_mut()).await.is_err());
    scripted.cancellations.flush(LONG).await;
    assert_eq!(scripted.methods(), ["tools/call", "tasks/cancel"]);
    drop(call);
    // A second cancellation would be a write of the ledger's: wait for them all.
    scripted.cancellations.flush(LONG).await;
    assert_eq!(
        scripted.methods(),
        Vec::<String>::new(),
        "no second cancellation"
    );
}

#[tokio::test(start_paused = true)]
async fn a_zero_interval_is_floored_and_a_missing_one_is_the_default() {
    let working = extension_task("working", Some(0), json!({})).to_string();
    let done = extension_task("completed", None, json!({"result": text_result("ok")})).to_string();
    let scripted = Scripted::start(vec![
        ("tools/call", created(Some(0))),
        ("tasks/get", working),
        ("tasks/get", done.clone()),
    ])
    .await;
    extension_call(&scripted, LONG).await.unwrap();
    assert_eq!(polls(&scripted.seen()), [MIN_POLL, MIN_POLL * 2]);

    let scripted = Scripted::start(vec![("tools/call", created(None)), ("tasks/get", done)]).await;
    extension_call(&scripted, LONG).await.unwrap();
    assert_eq!(polls(&scripted.seen()), [DEFAULT_POLL]);
}

#[tokio::test(start_paused = true)]
async fn a_task_created_already_finished_is_polled_for_its_result() {
    // rmcp's created task has no `result`: the client asks for it.
    let mut created = extension_task("completed", Some(100), json!({}));
    created["resultType"] = "task".into();
    let scripted = Scripted::start(vec![
        ("tools/call", created.to_string()),
        (
            "tasks/get",
            extension_task("completed", None, json!({"result": text_result("late")})).to_string(),
        ),
    ])
    .await;
    let result = extension_call(&scripted, LONG).await.unwrap();
    assert_eq!(text_of(&result), "late");
    assert_eq!(scripted.methods(), ["tools/call", "tasks/get"]);
}
