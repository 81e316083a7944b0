//! The tools that report while they run: progress notifications and log messages.
//!
//! A log message goes out only when the request allows it. A handshake session
//! gets the messages (the suite sets its level to `debug` first); a 2026-07-28
//! request names its level in `_meta` (`io.modelcontextprotocol/logLevel`), and one
//! that names none gets no message at all, as SEP-2575 requires.

#![allow(
    deprecated,
    reason = "rmcp marks logging deprecated (SEP-2577); the suite still tests it"
)]

use std::time::Duration;

use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        CallToolResult, ContentBlock, JsonObject, LoggingLevel, LoggingMessageNotificationParam,
        ProgressNotificationParam, ServerCapabilities,
    },
    service::RequestContext,
};
use serde_json::Value;

use super::Conformance;

/// The reporting tools, in their listed order.
pub(super) const TOOLS: &[(&str, &str)] = &[
    (
        "test_tool_with_progress",
        "Reports progress 0, 50 and 100 of 100 to the request's progress token",
    ),
    (
        "test_tool_with_logging",
        "Logs three `info` messages while it runs",
    ),
    (
        "test_logging_tool",
        "Logs one `info` message, if the request's log level allows it",
    ),
];

/// How long the progress and logging tools wait between two reports: the
/// scenarios describe "~50ms", so that a client sees reports arrive while the call
/// runs rather than all at once.
const REPORT_INTERVAL: Duration = Duration::from_millis(50);

/// Declares the logging capability, which `logging/setLevel` needs.
pub(super) fn declare_logging(capabilities: &mut ServerCapabilities) {
    capabilities.logging = Some(JsonObject::new());
}

/// Calls the reporting tool `name`; `-32602` for a tool nobody has.
pub(super) async fn call(
    name: &str,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let text = match name {
        "test_tool_with_progress" => progress(context).await?,
        "test_tool_with_logging" => {
            let steps = [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ];
            for (index, step) in steps.into_iter().enumerate() {
                if index > 0 {
                    tokio::time::sleep(REPORT_INTERVAL).await;
                }
                log(context, step).await?;
            }
            "Tool with logging executed successfully".to_owned()
        }
        "test_logging_tool" => {
            log(context, "Diagnostic trace logging activated").await?;
            "Logging evaluated".to_owned()
        }
        // Not -32601: under 2026-07-28 rmcp would answer it with HTTP 404.
        _ => return Err(McpError::invalid_params(format!("no tool `{name}`"), None)),
    };
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

/// Reports progress 0, 50 and 100 (of 100) when the request has a progress token;
/// answers the token (or that there was none).
async fn progress(context: &RequestContext<RoleServer>) -> Result<String, McpError> {
    let Some(token) = context.meta.get_progress_token() else {
        return Ok("no progress token".to_owned());
    };
    for progress in [0_u32, 50, 100] {
        if progress > 0 {
            tokio::time::sleep(REPORT_INTERVAL).await;
        }
        let report = ProgressNotificationParam::new(token.clone(), f64::from(progress))
            .with_total(100.0)
            .with_message(format!("Completed step {progress} of 100"));
        context
            .peer
            .notify_progress(report)
            .await
            .map_err(|error| McpError::internal_error(error.to_string(), None))?;
    }
    Ok(serde_json::to_value(&token)
        .map(|token| token.to_string())
        .unwrap_or_default())
}

/// Logs `message` at `info`, if the request allows it (see the module docs).
async fn log(context: &RequestContext<RoleServer>, message: &str) -> Result<(), McpError> {
    let allowed = if Conformance::is_handshake(context) {
        true
    } else {
        context
            .meta
            .log_level()
            .is_some_and(|level| severity(level) <= severity(LoggingLevel::Info))
    };
    if !allowed {
        return Ok(());
    }
    context
        .peer
        .notify_logging_message(
            LoggingMessageNotificationParam::new(LoggingLevel::Info, Value::from(message))
                .with_logger("conformance-server"),
        )
        .await
        .map_err(|error| McpError::internal_error(error.to_string(), None))
}

/// The rank of `level`, from `debug` (0) to `emergency` (7).
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
