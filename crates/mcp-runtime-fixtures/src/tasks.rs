//! The task tool (`--tasks`): `task_job` runs as a task of the 2026-07-28 tasks
//! extension, on rmcp's [`TaskManager`].
//!
//! Arguments: `ms` (how long the job works, default 0), `poll_ms` (the poll
//! interval it asks for, default 100), `ask` (whether it first asks the client to
//! confirm, as an input request of the task), `future` (with `--future`: whether
//! its result is the one a newer revision writes, see `future.rs`). It answers
//! with what it did, as structured content. Cancelled (`tasks/cancel`), it stops
//! at once.
//!
//! A client that did not declare the extension is refused with rmcp's "missing
//! required client capability" error, as the extension says a server whose tool
//! needs a task does.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
        CreateTaskResult, ElicitRequest, ElicitRequestParams, InputRequest, JsonObject,
        TASKS_EXTENSION_ID, Tool,
    },
    service::RequestContext,
    task_manager::{TaskExit, TaskManager, TaskOptions},
};
use serde_json::{Value, json};

/// The tasks of `task_job`, shared by every clone of the fixture.
#[derive(Clone, Default)]
pub(crate) struct Tasks(pub(crate) TaskManager);

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tasks({} running)", self.0.running_task_count())
    }
}

/// The tool's name.
pub(crate) const TASK_JOB: &str = "task_job";

/// The task tool, as listed.
pub(crate) fn tool() -> Tool {
    let schema = json!({ "type": "object", "properties": {
        "ms": { "type": "integer" },
        "poll_ms": { "type": "integer" },
        "ask": { "type": "boolean" }
    }});
    let Value::Object(schema) = schema else {
        unreachable!("a schema literal is an object")
    };
    Tool::new(
        TASK_JOB,
        "Work `ms` milliseconds as a task (polled every `poll_ms`), asking first when `ask`",
        Arc::new(schema),
    )
}

/// Starts `task_job` as a task of `tasks`, or refuses a client without the tasks
/// extension. With `future`, a call with `"future": true` ends with the result a
/// newer revision writes.
pub(crate) fn call(
    tasks: &Tasks,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    future: bool,
) -> Result<CallToolResponse, McpError> {
    if !context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
    {
        let mut required = ClientCapabilities::default();
        required
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        return Err(McpError::missing_required_client_capability(required));
    }
    let arguments = request.arguments.clone().unwrap_or_default();
    let number = |key: &str, default: u64| {
        arguments
            .get(key)
            .and_then(Value::as_u64)
            .unwrap_or(default)
    };
    let work = Duration::from_millis(number("ms", 0));
    let ask = arguments.get("ask").and_then(Value::as_bool) == Some(true);
    let future = future && arguments.get("future").and_then(Value::as_bool) == Some(true);
    let options = TaskOptions::new().with_poll_interval_ms(number("poll_ms", 100));
    let task = tasks.0.spawn(options, move |context| {
        Box::pin(async move {
            let answer = if ask {
                let question: ElicitRequestParams = serde_json::from_value(json!({
                    "mode": "form",
                    "message": "go on?",
                    "requestedSchema": { "type": "object", "properties": {} }
                }))
                .expect("a form elicitation");
                let question = InputRequest::Elicitation(ElicitRequest::new(question));
                Some(context.request_input("confirm", question).await?)
            } else {
                None
            };
            tokio::select! {
                () = tokio::time::sleep(work) => {}
                () = context.cancelled() => return Err(TaskExit::Cancelled),
            }
            if future {
                return Ok(crate::future::marker_result());
            }
            let done = json!({ "worked_ms": work.as_millis() as u64, "answer": answer });
            Ok(CallToolResult::structured(done))
        })
    });
    Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
}
