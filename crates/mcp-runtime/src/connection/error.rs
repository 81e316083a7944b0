//! The errors of the requests a host makes through the runtime: [`CallError`] for a
//! `tools/call`, [`FeatureError`] for resources, prompts and completions.

use std::{sync::Arc, time::Duration};

use crate::{
    tool_result::InvalidToolResult,
    transport::error::{HttpFailure, RequestError, RestartError, StartupError, secs},
};

/// ` (did you mean `NEAREST`?)`, or nothing without a name near enough.
fn did_you_mean(nearest: Option<&str>) -> String {
    nearest
        .map(|nearest| format!(" (did you mean `{nearest}`?)"))
        .unwrap_or_default()
}

/// Why a server's answers to a call cannot be followed to a result
/// ([`CallError::Answer`]): an answer that does not read as what it says it is, a
/// task the server failed or cancelled, a question the host cannot answer.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The answer is not JSON.
    #[error(
        "the server's answer cannot be read (the server does not follow the MCP schema; report it to its author)"
    )]
    NotJson(#[source] Arc<serde_json::Error>),
    /// The answer says it asks for input, but does not read as a request for input.
    #[error(
        "the server's request for input does not read as one (the server does not follow the MCP schema; report it to its author)"
    )]
    InputRequestUnreadable,
    /// The answer says it is a task, but does not read as one.
    #[error(
        "the server's task does not read as one (the server does not follow the MCP schema; report it to its author)"
    )]
    TaskUnreadable,
    /// The server's task has no `taskId`.
    #[error("the server's task has no `taskId`")]
    TaskWithoutId,
    /// The server's task has a status mcp-runtime does not know.
    #[error("the server's task has no status mcp-runtime knows")]
    UnknownTaskStatus,
    /// An answer about a task is not a task.
    #[error("the server's answer is not a task")]
    NotATask,
    /// An answer about a task names another task.
    #[error("the server answered about another task")]
    AnotherTask,
    /// The questions of a task that asks for input do not read as input requests.
    #[error("the server's questions for the task do not read as input requests")]
    TaskQuestionsUnreadable,
    /// The server cancelled the task, saying why when `message` holds its words.
    #[error(
        "the server cancelled the task{}",
        message.as_deref().map(|why| format!(" ({why})")).unwrap_or_default()
    )]
    TaskCancelled {
        /// The server's status message, credentials masked.
        message: Option<String>,
    },
    /// The server's task completed without a result.
    #[error("the server's completed task has no result")]
    TaskWithoutResult,
    /// The server's task failed without an error that reads as one.
    #[error("the server's task failed")]
    TaskFailed,
    /// The server asked for input `rounds` times in a row.
    #[error("the server asked for more input {rounds} times in a row (mcp-runtime stops there)")]
    TooManyRounds {
        /// The rounds answered.
        rounds: usize,
    },
    /// The server asked to sample a language model, which the host does not offer.
    #[error(
        "the server asked the client to sample a language model (`sampling/createMessage`), which mcp-runtime does not offer"
    )]
    SamplingNotOffered,
    /// The host's sampling handler refused.
    #[error("the host did not sample a message for the server: {message}")]
    SamplingRefused {
        /// The handler's message.
        message: String,
    },
    /// The server asked for input of a kind mcp-runtime does not know.
    #[error("the server asked for input of a kind mcp-runtime does not know (request `{key}`)")]
    UnknownInputRequest {
        /// The key of the request among the server's input requests.
        key: String,
    },
    /// The call could not be sent again with the answers: the transport did not hand
    /// its parameters back.
    #[error(
        "mcp-runtime could not send the call again with the answers: the transport did not hand its parameters back (a fault of mcp-runtime; report it)"
    )]
    NotHandedBack,
}

/// A `tools/call` through the runtime failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool has this qualified name.
    #[error("no tool is named `{name}`{}", did_you_mean(nearest.as_deref()))]
    #[non_exhaustive]
    UnknownTool {
        /// The qualified name asked for.
        name: String,
        /// The listed tool whose name is nearest to it, when one is near enough to be
        /// what was meant (Codex's names turn `-` into `_`, for one).
        nearest: Option<String>,
    },
    /// The tool's server is not running.
    #[error("server `{server}` is not running")]
    ServerUnavailable {
        /// The server.
        server: String,
    },
    /// The tool's server is disabled in the configuration (`enabled = false`, or
    /// `"disabled": true` in a JSON host's file), so it was not started.
    #[error(
        "server `{server}` is disabled, so its tools cannot be called (to call them, remove its `enabled = false` line, or its `\"disabled\": true` in a JSON config file)"
    )]
    ServerDisabled {
        /// The server.
        server: String,
    },
    /// The tool's server did not start: its startup failed, timed out or was
    /// cancelled. The server is not started again by calls.
    #[error("server `{server}` did not start")]
    ServerNotStarted {
        /// The server.
        server: String,
        /// Why its startup failed.
        #[source]
        source: StartupError,
    },
    /// The arguments given as JSON text are not a JSON object.
    #[error("the arguments of tool `{name}` must be a JSON object")]
    ArgumentsNotAnObject {
        /// The qualified name of the tool.
        name: String,
    },
    /// The call did not finish within `tool_timeout_sec`; the server was sent
    /// `notifications/cancelled`.
    #[error(
        "tool `{tool}` on server `{server}` did not answer within {} (raise `tool_timeout_sec`)",
        secs(*after)
    )]
    Timeout {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// The configured tool timeout.
        after: Duration,
    },
    /// The request failed: the server's JSON-RPC error, an HTTP failure or the end of
    /// the connection.
    #[error("tool `{tool}` on server `{server}` failed")]
    Failed {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// Why.
        #[source]
        source: RequestError,
    },
    /// The server's answer is not a tool result the runtime can read.
    #[error("tool `{tool}` on server `{server}` failed")]
    InvalidResult {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// What is wrong with the answer.
        #[source]
        source: InvalidToolResult,
    },
    /// The server's answers cannot be followed to a result: `source` says which way.
    #[error("tool `{tool}` on server `{server}` failed")]
    Answer {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// Why the answers cannot be followed.
        #[source]
        source: AnswerError,
    },
    /// The server's connection ended during the call: a local server exited, or the
    /// session ended. The server is unavailable until its next call starts it again
    /// (a local server) or connects to it again (a remote one).
    #[error(
        "tool `{tool}` on server `{server}` failed (the next call {})",
        if *local { "starts the server again" } else { "connects to the server again" }
    )]
    ServerLost {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// How the connection ended: a local server's exit ([`RequestError::Exited`],
        /// with its last stderr), the end of the connection
        /// ([`RequestError::Closed`]), or what an HTTP server's transport saw
        /// ([`RequestError::Lost`]).
        #[source]
        source: RequestError,
        /// Whether the server is a local process, which the runtime starts.
        local: bool,
    },
    /// The result does not conform to the tool's `outputSchema` (a result with
    /// `isError: true` is never checked).
    #[error(
        "tool `{tool}` on server `{server}` answered a result its `outputSchema` refuses: {message}"
    )]
    OutputMismatch {
        /// The server.
        server: String,
        /// The raw tool name.
        tool: String,
        /// Where and how the result is wrong.
        message: String,
        /// The result as the server returned it.
        result: Box<crate::ToolResult>,
    },
    /// The tool's server had stopped and could not be started again.
    #[error(transparent)]
    Restart(RestartError),
}

/// A request for a server's resources, prompts or completions failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureError {
    /// No server has this name.
    #[error("no server is named `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server does not offer the feature in its capabilities.
    #[error("server `{server}` offers no {feature}")]
    NotOffered {
        /// The server.
        server: String,
        /// `resources`, `resource subscriptions`, `prompts` or `completions`.
        feature: &'static str,
    },
    /// No server offers the resource or prompt asked for.
    #[error("no server offers {kind} `{name}`")]
    NotFound {
        /// `resource` or `prompt`.
        kind: &'static str,
        /// Its URI or name.
        name: String,
    },
    /// More than one server offers the resource or prompt asked for.
    #[error(
        "{kind} `{name}` is offered by more than one server ({}): name the server",
        quoted(servers)
    )]
    Ambiguous {
        /// `resource` or `prompt`.
        kind: &'static str,
        /// Its URI or name.
        name: String,
        /// The servers that offer it, in name order.
        servers: Vec<String>,
    },
    /// No answer within the server's `tool_timeout_sec`; the server was sent
    /// `notifications/cancelled`.
    #[error(
        "server `{server}` did not answer `{method}` within {} (raise `tool_timeout_sec`)",
        secs(*after)
    )]
    Timeout {
        /// The server.
        server: String,
        /// The request's method.
        method: &'static str,
        /// The bound.
        after: Duration,
    },
    /// The request failed: the server's JSON-RPC error, an HTTP failure or the end of
    /// the connection.
    #[error("server `{server}` failed `{method}`")]
    Failed {
        /// The server.
        server: String,
        /// The request's method.
        method: &'static str,
        /// Why.
        #[source]
        source: RequestError,
    },
    /// The server's answer is not what the method answers, or its list broke a guard.
    #[error("server `{server}` answered `{method}` wrongly: {message}")]
    Answer {
        /// The server.
        server: String,
        /// The request's method.
        method: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The server is not running and could not be started again.
    #[error(transparent)]
    Restart(RestartError),
}

/// `a`, `b` as a message lists names.
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl CallError {
    /// The HTTP failure that ended the call, if it was one: of the call's request,
    /// or of its server's startup.
    pub fn http_failure(&self) -> Option<&HttpFailure> {
        match self {
            Self::Failed {
                source: RequestError::Http(failure),
                ..
            } => Some(failure),
            Self::ServerNotStarted { source, .. } => source.http_failure(),
            _ => None,
        }
    }
}
