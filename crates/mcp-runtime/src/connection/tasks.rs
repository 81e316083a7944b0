//! Tasks: a tool call the server runs in the background. The client polls it
//! (`tasks/get`) until it ends, then reads its result, or cancels it (`tasks/cancel`)
//! when the caller stops waiting.
//!
//! Each era has its own form ([`Form`]):
//! - 2025-11-25: a tool listed with `execution.taskSupport: "required"` is called
//!   with `params.task = {}`, and the server answers `{"task": {taskId, status,
//!   pollInterval…}}`. The client polls `tasks/get`; once the task is no longer
//!   working it asks `tasks/result`, which waits until the task has ended and answers
//!   what the tool would have (the server's questions, such as elicitation, come
//!   while it waits). rmcp 3.11 models none of this form (its `CallToolRequestParams`
//!   has no `task`, its results no `{"task": …}`), so these requests are written here
//!   as custom requests.
//! - 2026-07-28, the tasks extension (`io.modelcontextprotocol/tasks`): the client
//!   declares the extension in its capabilities ([`super::client_config`]) and the
//!   server decides, call by call, to answer `resultType: "task"` (rmcp's
//!   `CreateTaskResult`). `tasks/get` inlines the result (`completed`), the error
//!   (`failed`) or the server's questions (`input_required`, answered with
//!   `tasks/update`). rmcp has these messages but no loop (its `call_tool` refuses a
//!   task), so the loop is here.
//!
//! Invariants:
//! 1. The server's poll interval is honoured: between two polls the client waits the
//!    last interval the server gave (`pollInterval`, `pollIntervalMs`), or
//!    [`DEFAULT_POLL`] if it gave none, and never less than [`MIN_POLL`].
//! 2. A task is in the connection's cancellation ledger from the answer that created
//!    it (with no await between) until it ends. A call given up (deadline, drop,
//!    shutdown) sends its `tasks/cancel` once.
//! 3. The whole task, polls included, runs within the call's one deadline. Time a
//!    person spends answering the server is not counted.
//! 4. Each of the server's questions (input requests, by key) is answered once.

use std::{collections::HashSet, time::Duration};

use rmcp::{
    ServiceError,
    model::{
        CallToolRequestParams, CancelTaskParams, CancelTaskRequest, ClientRequest,
        CreateTaskResult, CustomRequest, ErrorData, GetTaskParams, GetTaskRequest, InputRequests,
        JsonObject, ServerResult, UpdateTaskParams, UpdateTaskRequest,
    },
};
use serde_json::{Value, json};

use super::{
    calling::{CallFailure, Caller, Deadline, Paused},
    cancellation::{InFlight, TIMED_OUT},
    error::AnswerError,
    input_rounds,
    tool_answer::{self, Answer},
};
use crate::{progress::OnProgress, tool_result::ToolResult, transport::raw_answers::raw_result};

/// How long the client waits between polls when the server gave no interval (rmcp's
/// server default, and the TypeScript SDK's).
pub(super) const DEFAULT_POLL: Duration = Duration::from_millis(1000);
/// The shortest wait between polls, whatever interval the server gives.
pub(super) const MIN_POLL: Duration = Duration::from_millis(50);

/// The form of the task API a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Form {
    /// 2025-11-25: `params.task`, `tasks/get`, `tasks/result`, `tasks/cancel`.
    Handshake,
    /// 2026-07-28's tasks extension: `tasks/get` (result inlined), `tasks/update`,
    /// `tasks/cancel`.
    Extension,
}

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

/// A task as one answer of the server reports it.
#[derive(Debug)]
struct Report {
    id: String,
    status: Status,
    message: Option<String>,
    /// The poll interval the server asks for, if it gave one.
    interval: Option<Duration>,
    /// The extension's inlined payload: the server's questions, its result, its
    /// error.
    input_requests: Option<Value>,
    result: Option<JsonObject>,
    error: Option<Value>,
}

impl Report {
    /// Reads a task object (its fields flat, as both eras write them).
    fn read(task: &JsonObject) -> Result<Self, AnswerError> {
        let id = match task.get("taskId") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            _ => return Err(AnswerError::TaskWithoutId),
        };
        let status = match task.get("status").and_then(Value::as_str) {
            Some("working") => Status::Working,
            Some("input_required") => Status::InputRequired,
            Some("completed") => Status::Completed,
            Some("failed") => Status::Failed,
            Some("cancelled") => Status::Cancelled,
            _ => return Err(AnswerError::UnknownTaskStatus),
        };
        let interval = task
            .get("pollIntervalMs")
            .or_else(|| task.get("pollInterval"))
            .and_then(Value::as_u64)
            .map(Duration::from_millis);
        Ok(Self {
            id,
            status,
            message: task
                .get("statusMessage")
                .and_then(Value::as_str)
                .map(str::to_owned),
            interval,
            input_requests: task.get("inputRequests").cloned(),
            result: task.get("result").and_then(Value::as_object).cloned(),
            error: task.get("error").cloned(),
        })
    }

    /// Reads the task an answer of the server reports: raw, as the transports hand
    /// over a `tasks/get` answer ([`crate::transport::raw_answers`]: rmcp reads a
    /// 2025-11-25 working task as its own `GetTaskResult`, losing `pollInterval`), or
    /// as rmcp decoded it (an in-process pipe; the last interval then holds).
    fn of_answer(mut answer: ServerResult) -> Result<Self, AnswerError> {
        let task = match raw_result(&mut answer) {
            Some(text) => serde_json::from_str(&text),
            None => serde_json::to_value(&answer),
        };
        // A credential the runtime sent is never data for the host: masked wherever
        // the task (its status message, its result) quotes it.
        match task.map(crate::redact::masked_json) {
            Ok(Value::Object(task)) => Self::read(&task),
            _ => Err(AnswerError::NotATask),
        }
    }
}

/// Calls the tool of `params` as a 2025-11-25 task through `caller`, until
/// `deadline`. The task's progress goes to `progress` for its whole life (it reports
/// on the token of the call that created it). A server that runs the tool at once
/// instead may: its result is the call's.
///
/// # Cancel safety
///
/// Dropping the future owes `tasks/cancel` once the task exists (invariant 2), and
/// the cancellation of the request in flight.
pub(super) async fn call_as_task(
    caller: &Caller<'_>,
    params: CallToolRequestParams,
    deadline: Deadline,
    progress: Option<&OnProgress>,
) -> Result<ToolResult, CallFailure> {
    let mut params = serde_json::to_value(&params).expect("call parameters serialize");
    params["task"] = json!({});
    let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
    let (answer, _progress) = caller.request_watched(request, deadline, progress).await?;
    match tool_answer::read(answer)? {
        Answer::HandshakeTask(task) => {
            let report = Report::read(&task).map_err(CallFailure::Refused)?;
            drive(caller, Form::Handshake, report, deadline).await
        }
        Answer::Complete(result) => Ok(result),
        Answer::InputRequired(_) | Answer::Task(_) => Err(CallFailure::Invalid(
            crate::tool_result::InvalidToolResult::NotAToolResult,
        )),
    }
}

/// Follows the task a 2026-07-28 server `created` for a call to its end, until
/// `deadline`.
///
/// # Cancel safety
///
/// As [`call_as_task`].
pub(super) async fn follow(
    caller: &Caller<'_>,
    created: &CreateTaskResult,
    deadline: Deadline,
) -> Result<ToolResult, CallFailure> {
    let mut report = serde_json::to_value(&created.task)
        .ok()
        .and_then(|task| task.as_object().map(Report::read))
        .unwrap_or(Err(AnswerError::TaskUnreadable))
        .map_err(CallFailure::Refused)?;
    // The created task carries no result, error or questions (rmcp's `Task` has no
    // such field): a task created already further on is polled for them.
    if matches!(
        report.status,
        Status::Completed | Status::Failed | Status::InputRequired
    ) {
        report.status = Status::Working;
    }
    drive(caller, Form::Extension, report, deadline).await
}

/// Polls the task of `first` to its end and reads its result.
async fn drive(
    caller: &Caller<'_>,
    form: Form,
    first: Report,
    deadline: Deadline,
) -> Result<ToolResult, CallFailure> {
    // Invariant 2: registered before the first await.
    let task = caller.cancellations.register_task(first.id.clone(), form);
    let id = first.id.clone();
    let mut interval = DEFAULT_POLL;
    let mut answered = HashSet::new();
    let mut report = first;
    loop {
        if let Some(given) = report.interval {
            interval = given.max(MIN_POLL);
        }
        match (report.status, form) {
            (Status::Working, _) => {}
            (Status::Cancelled, _) => {
                task.answered();
                return Err(CallFailure::Refused(AnswerError::TaskCancelled {
                    message: report.message,
                }));
            }
            (_, Form::Handshake) => return task_result(caller, task, &id, deadline).await,
            (Status::InputRequired, Form::Extension) => {
                let asked: InputRequests = report
                    .input_requests
                    .map(serde_json::from_value)
                    .transpose()
                    .map_err(|_| CallFailure::Refused(AnswerError::TaskQuestionsUnreadable))?
                    .unwrap_or_default();
                let new: InputRequests = asked
                    .into_iter()
                    .filter(|(key, _)| !answered.contains(key))
                    .collect();
                if !new.is_empty() {
                    answered.extend(new.keys().cloned());
                    let responses = input_rounds::respond(new, caller.answers)
                        .await
                        .map_err(CallFailure::Refused)?;
                    let update = ClientRequest::UpdateTaskRequest(UpdateTaskRequest::new(
                        UpdateTaskParams::new(id.clone(), responses),
                    ));
                    caller.request(update, deadline, None).await?;
                }
            }
            (Status::Completed, Form::Extension) => {
                task.answered();
                let result = report
                    .result
                    .ok_or(CallFailure::Refused(AnswerError::TaskWithoutResult))?;
                // The result inlined as rmcp keeps it: a JSON object, whole.
                return ToolResult::from_object(result).map_err(CallFailure::Invalid);
            }
            (Status::Failed, Form::Extension) => {
                task.answered();
                return Err(
                    match report.error.map(serde_json::from_value::<ErrorData>) {
                        Some(Ok(error)) => CallFailure::Failed(ServiceError::McpError(error)),
                        _ => CallFailure::Refused(AnswerError::TaskFailed),
                    },
                );
            }
        }
        match caller.pause(interval, deadline).await {
            Paused::Elapsed => {}
            Paused::TimedOut => {
                task.give_up(TIMED_OUT);
                return Err(CallFailure::TimedOut);
            }
            Paused::Ended => {
                task.answered();
                return Err(CallFailure::Failed(ServiceError::TransportClosed));
            }
        }
        report = match caller.request(get_request(form, &id), deadline, None).await {
            Ok(answer) => Report::of_answer(answer).map_err(CallFailure::Refused)?,
            // The server no longer knows the task (its time to live ran out), or
            // cannot say: nothing is left to cancel.
            Err(CallFailure::Failed(error @ ServiceError::McpError(_))) => {
                task.answered();
                return Err(CallFailure::Failed(error));
            }
            Err(other) => return Err(other),
        };
        if report.id != id {
            return Err(CallFailure::Refused(AnswerError::AnotherTask));
        }
    }
}

/// Asks for the result of 2025-11-25 task `id`, which waits until the task has
/// ended: what the tool would have answered.
async fn task_result(
    caller: &Caller<'_>,
    task: InFlight<'_>,
    id: &str,
    deadline: Deadline,
) -> Result<ToolResult, CallFailure> {
    let request = custom_request("tasks/result", id);
    match caller.request(request, deadline, None).await {
        Ok(answer) => {
            task.answered();
            tool_answer::tool_result(answer)
        }
        Err(CallFailure::Failed(error @ ServiceError::McpError(_))) => {
            task.answered();
            Err(CallFailure::Failed(error))
        }
        Err(other) => Err(other),
    }
}

/// The `tasks/get` request for task `id` in `form`.
fn get_request(form: Form, id: &str) -> ClientRequest {
    match form {
        Form::Handshake => custom_request("tasks/get", id),
        Form::Extension => {
            ClientRequest::GetTaskRequest(GetTaskRequest::new(GetTaskParams::new(id)))
        }
    }
}

/// The `tasks/cancel` request for task `id` in `form`.
pub(super) fn cancel_request(form: Form, id: String) -> ClientRequest {
    match form {
        Form::Handshake => custom_request("tasks/cancel", &id),
        Form::Extension => {
            ClientRequest::CancelTaskRequest(CancelTaskRequest::new(CancelTaskParams::new(id)))
        }
    }
}

/// A 2025-11-25 task request, which rmcp 3.11 does not model: `method` with
/// `{"taskId": id}`.
fn custom_request(method: &str, id: &str) -> ClientRequest {
    ClientRequest::CustomRequest(CustomRequest::new(method, Some(json!({ "taskId": id }))))
}

#[cfg(test)]
mod tests;
