//! The servers' features besides tools and resources through the gateway: prompts
//! and completion; and the log of the servers whose lists failed.
//!
//! Invariants:
//! 1. Prompts are named like tools ([`mcp_runtime::naming::qualify`], then the
//!    gateway's `tool_names` rule), in server-name order; a server whose list fails
//!    is left out and logged.
//! 2. `prompts/get` goes to the server of the prompt the name was shown for, with the
//!    prompt's own name; a name no prompt is shown as is refused as invalid params.
//! 3. `completion/complete` goes to the server of the prompt named in its reference
//!    (with the prompt's own name), or to the one server that lists the referenced
//!    resource template (or resource); anything else is refused as invalid params.
//!    The client's `_meta` does not go upstream.

use mcp_runtime::{FeatureError, ServerPrompt, config::ToolNames, naming::qualify};
use rmcp::{
    ErrorData,
    model::{
        CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
        GetPromptResult, Prompt, Reference, ResultType,
    },
};

use crate::{
    names::{self, Item},
    shared::Served,
};

/// The servers' prompts under the names the client sees (invariant 1), each with its
/// key for [`crate::paging`].
pub(crate) async fn list(runtime: &Served, names: ToolNames) -> Vec<(String, Prompt)> {
    let listed = runtime.prompts().await;
    log_failures(&listed.failures);
    let qualified = qualified(&listed.prompts);
    let items = items(&listed.prompts, &qualified);
    let shown = names::shown(&items, names);
    listed
        .prompts
        .iter()
        .zip(shown)
        .map(|(entry, shown)| {
            let mut prompt = entry.prompt.clone();
            prompt.name = shown.to_owned();
            (
                crate::paging::server_key(&entry.server, &entry.prompt.name),
                prompt,
            )
        })
        .collect()
}

/// `prompts/get` of the prompt shown as `request.name` (invariant 2); its server's
/// questions go to `asker` while it is being got, if given.
pub(crate) async fn get(
    runtime: &Served,
    names: ToolNames,
    request: GetPromptRequestParams,
    asker: Option<&crate::bridge::Asker>,
) -> Result<GetPromptResponse, ErrorData> {
    let (server, name) = find(runtime, names, &request.name).await?;
    let _asking = asker.map(|asker| asker.wait_on(&server));
    let got = runtime
        .get_prompt(&name, &server, request.arguments)
        .await
        .map_err(|error| feature_error(&error))?;
    serde_json::from_value::<GetPromptResult>(serde_json::Value::Object(got.into_object()))
        .map(|mut result| {
            result.result_type.get_or_insert(ResultType::COMPLETE);
            GetPromptResponse::from(result)
        })
        .map_err(|error| {
            ErrorData::internal_error(
                format!("the server's prompt cannot be passed on: {error}"),
                None,
            )
        })
}

/// `completion/complete`, routed by its reference (invariant 3).
pub(crate) async fn complete(
    runtime: &Served,
    names: ToolNames,
    mut request: CompleteRequestParams,
) -> Result<CompleteResult, ErrorData> {
    request.meta = None;
    let server = match &mut request.r#ref {
        Reference::Prompt(prompt) => {
            let (server, name) = find(runtime, names, &prompt.name).await?;
            prompt.name = name;
            server
        }
        Reference::Resource(resource) => {
            let listed = runtime.resources().await;
            let mut servers: Vec<String> = listed
                .templates
                .into_iter()
                .filter(|entry| entry.template.uri_template == resource.uri)
                .map(|entry| entry.server)
                .chain(
                    listed
                        .resources
                        .into_iter()
                        .filter(|entry| entry.resource.uri == resource.uri)
                        .map(|entry| entry.server),
                )
                .collect();
            servers.sort();
            servers.dedup();
            match servers.as_slice() {
                [server] => server.clone(),
                [] => {
                    return Err(ErrorData::invalid_params(
                        format!("no server lists the resource template `{}`", resource.uri),
                        None,
                    ));
                }
                _ => {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "more than one server lists `{}`: {}",
                            resource.uri,
                            servers.join(", ")
                        ),
                        None,
                    ));
                }
            }
        }
        _ => {
            return Err(ErrorData::invalid_params(
                "a completion's reference names a prompt or a resource template",
                None,
            ));
        }
    };
    let mut result = runtime
        .complete(&server, request)
        .await
        .map_err(|error| feature_error(&error))?;
    // A handshake-era server's result has no `resultType`, which a 2026-07-28 client
    // requires; a complete result is what it is.
    result.result_type.get_or_insert(ResultType::COMPLETE);
    Ok(result)
}

/// The server and own name of the prompt shown as `shown` (invariant 2).
async fn find(
    runtime: &Served,
    names: ToolNames,
    shown: &str,
) -> Result<(String, String), ErrorData> {
    let listed = runtime.prompts().await;
    let qualified = qualified(&listed.prompts);
    let items = items(&listed.prompts, &qualified);
    match names::find(&items, names, shown) {
        Some(index) => Ok((
            listed.prompts[index].server.clone(),
            listed.prompts[index].prompt.name.clone(),
        )),
        None => Err(ErrorData::invalid_params(
            format!("no prompt is named `{shown}`"),
            None,
        )),
    }
}

fn qualified(prompts: &[ServerPrompt]) -> Vec<String> {
    let pairs: Vec<(&str, &str)> = prompts
        .iter()
        .map(|entry| (entry.server.as_str(), entry.prompt.name.as_str()))
        .collect();
    qualify(&pairs)
}

fn items<'a>(prompts: &'a [ServerPrompt], qualified: &'a [String]) -> Vec<Item<'a>> {
    prompts
        .iter()
        .zip(qualified)
        .map(|(entry, qualified)| Item {
            server: &entry.server,
            raw: &entry.prompt.name,
            qualified,
        })
        .collect()
}

/// A server's failure to answer, as the client is told it.
pub(crate) fn feature_error(error: &FeatureError) -> ErrorData {
    let message = mcp_runtime::error::chain(error);
    match error {
        FeatureError::NotFound { .. } | FeatureError::Ambiguous { .. } => {
            ErrorData::invalid_params(message, None)
        }
        _ => ErrorData::internal_error(message, None),
    }
}

/// Logs the servers whose lists failed: the client gets the others' lists.
pub(crate) fn log_failures(failures: &[FeatureError]) {
    for failure in failures {
        tracing::warn!(error = %mcp_runtime::error::chain(failure), "a server's list is left out");
    }
}
