//! `resources`, `read`, `prompts` and `prompt`: the servers' resources and prompts,
//! as tables or `--json`.
//!
//! A server whose list failed is named on stderr, one line each, and the others'
//! entries are printed. A `read` or `prompt` without `--server` goes to the one server
//! that lists it; none, or more than one, exits 2 naming them.

use mcp_runtime::{
    Content, PromptResult, Prompts, ReadResult, Resources, Runtime, model::JsonObject,
};
use serde_json::{Value, json};

use crate::output::{error_text, one_line, output_text, printable, table};

/// What to ask the servers.
pub enum Ask {
    Resources,
    Read {
        uri: String,
        server: Option<String>,
    },
    Prompts,
    Prompt {
        name: String,
        server: Option<String>,
        arguments: Option<JsonObject>,
    },
}

/// Asks the servers of `runtime`; the text to print (the servers' text as
/// [`output_text`] prints it on a `terminal` or a pipe), or the failure.
pub async fn ask(
    runtime: &Runtime,
    ask: Ask,
    json: bool,
    terminal: bool,
) -> anyhow::Result<String> {
    Ok(match ask {
        Ask::Resources => {
            let listed = runtime.resources().await;
            warn_failures(&listed.failures);
            if json {
                format!("{:#}\n", resources_json(&listed))
            } else {
                resources_table(&listed)
            }
        }
        Ask::Prompts => {
            let listed = runtime.prompts().await;
            warn_failures(&listed.failures);
            if json {
                format!("{:#}\n", prompts_json(&listed))
            } else {
                prompts_table(&listed)
            }
        }
        Ask::Read { uri, server } => {
            let read = runtime.read_resource(&uri, server.as_deref()).await?;
            if json {
                format!("{}\n", serde_json::to_string_pretty(&read)?)
            } else {
                read_text(&read, terminal)
            }
        }
        Ask::Prompt {
            name,
            server,
            arguments,
        } => {
            let prompt = runtime
                .get_prompt(&name, server.as_deref(), arguments)
                .await?;
            if json {
                format!("{}\n", serde_json::to_string_pretty(&prompt)?)
            } else {
                prompt_text(&prompt, terminal)
            }
        }
    })
}

fn warn_failures(failures: &[mcp_runtime::FeatureError]) {
    for failure in failures {
        eprintln!("mcp-runtime: {}", printable(&error_text(failure)));
    }
}

/// `{"resources":[…],"resource_templates":[…]}`.
fn resources_json(listed: &Resources) -> Value {
    let resources: Vec<Value> = listed
        .resources
        .iter()
        .map(|entry| {
            let resource = &entry.resource;
            json!({
                "server": entry.server,
                "uri": resource.uri,
                "name": resource.name,
                "title": resource.title,
                "description": resource.description,
                "mime_type": resource.mime_type,
            })
        })
        .collect();
    let templates: Vec<Value> = listed
        .templates
        .iter()
        .map(|entry| {
            let template = &entry.template;
            json!({
                "server": entry.server,
                "uri_template": template.uri_template,
                "name": template.name,
                "description": template.description,
            })
        })
        .collect();
    json!({ "resources": resources, "resource_templates": templates })
}

fn resources_table(listed: &Resources) -> String {
    let rows: Vec<Vec<String>> = listed
        .resources
        .iter()
        .map(|entry| {
            vec![
                printable(&entry.server).into_owned(),
                printable(&entry.resource.uri).into_owned(),
                one_line(&entry.resource.name, 60),
                printable(entry.resource.mime_type.as_deref().unwrap_or_default()).into_owned(),
            ]
        })
        .collect();
    let mut out = table(&["SERVER", "URI", "NAME", "MIME TYPE"], &rows);
    if !listed.templates.is_empty() {
        let rows: Vec<Vec<String>> = listed
            .templates
            .iter()
            .map(|entry| {
                vec![
                    printable(&entry.server).into_owned(),
                    printable(&entry.template.uri_template).into_owned(),
                    one_line(&entry.template.name, 60),
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(&table(&["SERVER", "URI TEMPLATE", "NAME"], &rows));
    }
    out
}

/// `{"prompts":[…]}`.
fn prompts_json(listed: &Prompts) -> Value {
    let prompts: Vec<Value> = listed
        .prompts
        .iter()
        .map(|entry| {
            let prompt = &entry.prompt;
            json!({
                "server": entry.server,
                "name": prompt.name,
                "title": prompt.title,
                "description": prompt.description,
                "arguments": prompt.arguments,
            })
        })
        .collect();
    json!({ "prompts": prompts })
}

fn prompts_table(listed: &Prompts) -> String {
    let rows: Vec<Vec<String>> = listed
        .prompts
        .iter()
        .map(|entry| {
            let arguments = entry
                .prompt
                .arguments
                .iter()
                .flatten()
                .map(|argument| match argument.required {
                    Some(true) => argument.name.clone(),
                    _ => format!("[{}]", argument.name),
                })
                .collect::<Vec<_>>()
                .join(" ");
            vec![
                printable(&entry.server).into_owned(),
                printable(&entry.prompt.name).into_owned(),
                printable(&arguments).into_owned(),
                one_line(entry.prompt.description.as_deref().unwrap_or_default(), 80),
            ]
        })
        .collect();
    table(&["SERVER", "PROMPT", "ARGUMENTS", "DESCRIPTION"], &rows)
}

/// A read resource for people: text as text (see [`output_text`]), anything else as
/// its JSON.
fn read_text(read: &ReadResult, terminal: bool) -> String {
    let all = match read.as_object().get("contents") {
        Some(Value::Array(all)) => all.as_slice(),
        _ => &[],
    };
    let mut out = String::new();
    for (contents, json) in read.contents().zip(all) {
        match contents.as_text() {
            Some(text) => out.push_str(&output_text(text, terminal)),
            None => out.push_str(&serde_json::to_string(json).unwrap_or_default()),
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// A prompt for people: each message as `ROLE: text` (content of a type mcp-runtime
/// does not know as its type, `[video]`; any other as its JSON).
fn prompt_text(prompt: &PromptResult, terminal: bool) -> String {
    let all = match prompt.as_object().get("messages") {
        Some(Value::Array(all)) => all.as_slice(),
        _ => &[],
    };
    let mut out = String::new();
    for (message, json) in prompt.messages().zip(all) {
        let role = output_text(message.role.unwrap_or_default(), terminal);
        let content = match (&message.content, message.content.kind()) {
            (Content::Known(_), _) if let Some(text) = message.content.as_text() => {
                output_text(text, terminal).into_owned()
            }
            (Content::Unknown(_), Some(kind)) => format!("[{}]", output_text(kind, terminal)),
            _ => serde_json::to_string(&json["content"]).unwrap_or_default(),
        };
        out.push_str(&format!("{role}: {content}"));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}
