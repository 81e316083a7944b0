//! `list` and `get`: the configured servers as the file declares them.
//!
//! 1. Nothing is started: these read the file only, so they answer at once even when
//!    a server would hang, and they work for servers that cannot start here.
//! 2. No secret is shown: `env` and `http_headers` show their names only, never their
//!    values (Codex masks them as `NAME=*****` in its tables but prints them in its
//!    JSON; mcp-runtime prints names only, everywhere). A URL is shown with its user
//!    information, query values and fragment masked ([`redact::url`]), where a token
//!    may be. Variable names (`env_vars`, `bearer_token_env_var`, the variables of
//!    `env_http_headers`) are shown: they are where secrets live, not secrets.
//! 3. `list --json` prints `{"servers":[…]}`, each server exactly `name`, `transport`,
//!    `enabled`, `command`, `args`, `url` (`null` where the transport has none);
//!    `get --json` prints one such object with the server's other settings after them.

use std::borrow::Cow;

use anyhow::bail;
use mcp_runtime::{
    ServerConfig,
    config::{HttpTransport, TransportConfig},
    redact,
};
use serde_json::{Value, json};

use crate::{
    config_file::{Loaded, Origin},
    output::{printable, table},
};

/// The `list` output.
pub fn list(loaded: &Loaded, json: bool) -> String {
    let servers = loaded.config.servers.values();
    if json {
        let servers: Vec<Value> = servers.map(summary).collect();
        return format!("{:#}\n", json!({ "servers": servers }));
    }
    if loaded.config.servers.is_empty() {
        let hint = "add one with `mcp-runtime add NAME -- COMMAND ARGS…` or `mcp-runtime add NAME --url URL`";
        return match &loaded.origin {
            Origin::File(path) => format!("No servers in `{}`: {hint}.\n", path.display()),
            Origin::Missing(Some(path)) => {
                format!("No servers: `{}` does not exist; {hint}.\n", path.display())
            }
            Origin::Missing(None) | Origin::Demo => format!("No servers: {hint}.\n"),
        };
    }
    let rows: Vec<Vec<String>> = servers
        .map(|server| {
            let (target, variables) = match &server.transport {
                TransportConfig::Stdio(stdio) => {
                    let target = command_line(&stdio.command, &stdio.args);
                    let variables = stdio
                        .env
                        .keys()
                        .chain(&stdio.env_vars)
                        .map(String::as_str)
                        .collect::<Vec<_>>();
                    (target, variables.join(", "))
                }
                TransportConfig::StreamableHttp(http) => {
                    let variables = http
                        .bearer_token_env_var
                        .iter()
                        .chain(http.env_http_headers.values())
                        .map(String::as_str)
                        .collect::<Vec<_>>();
                    (redact::url(&http.url).into_owned(), variables.join(", "))
                }
                _ => (String::new(), String::new()),
            };
            [
                server.name.clone(),
                status(server).to_owned(),
                transport(server).to_owned(),
                target,
                variables,
            ]
            .iter()
            .map(|text| cell(text))
            .collect()
        })
        .collect();
    table(
        &[
            "SERVER",
            "STATUS",
            "TRANSPORT",
            "COMMAND OR URL",
            "VARIABLES",
        ],
        &rows,
    )
}

/// The `get` output; an error when there is no such server.
pub fn get(loaded: &Loaded, name: &str, json: bool) -> anyhow::Result<String> {
    let Some(server) = loaded.config.servers.get(name) else {
        // On one line whatever the name holds.
        let name = redact::one_line(name);
        match &loaded.origin {
            Origin::File(path) => bail!(
                "no server `{name}` in `{}` (list them with `mcp-runtime list`)",
                path.display()
            ),
            Origin::Missing(Some(path)) => bail!(
                "no server `{name}`: `{}` does not exist (add one with `mcp-runtime add`)",
                path.display()
            ),
            Origin::Missing(None) | Origin::Demo => {
                bail!("no server `{name}` (list them with `mcp-runtime list`)")
            }
        }
    };
    let details = details(server);
    if json {
        return Ok(format!("{details:#}\n"));
    }
    let rows: Vec<Vec<String>> = details
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            let shown = match value {
                Value::Null => return None,
                Value::String(text) => text.clone(),
                Value::Array(items) if items.is_empty() => "-".to_owned(),
                Value::Object(entries) if entries.is_empty() => "-".to_owned(),
                Value::Array(items) => {
                    let items = items.iter().map(|item| match item {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    });
                    if key == "args" {
                        items
                            .map(|arg| quoted(&arg).into_owned())
                            .collect::<Vec<_>>()
                            .join(" ")
                    } else {
                        items.collect::<Vec<_>>().join(", ")
                    }
                }
                Value::Object(entries) => entries
                    .iter()
                    .map(|(key, value)| match value {
                        Value::String(text) => format!("{key}={text}"),
                        other => format!("{key}={other}"),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            Some(vec![key.clone(), cell(&shown)])
        })
        .collect();
    Ok(table(&["KEY", "VALUE"], &rows))
}

/// The object `list --json` prints for a server.
fn summary(server: &ServerConfig) -> Value {
    let (command, args, url) = match &server.transport {
        TransportConfig::Stdio(stdio) => (json!(stdio.command), json!(stdio.args), Value::Null),
        TransportConfig::StreamableHttp(http) => {
            (Value::Null, Value::Null, json!(redact::url(&http.url)))
        }
        _ => (Value::Null, Value::Null, Value::Null),
    };
    json!({
        "name": server.name,
        "transport": transport(server),
        "enabled": server.enabled,
        "command": command,
        "args": args,
        "url": url,
    })
}

/// The object `get --json` prints: the summary, then every other setting.
fn details(server: &ServerConfig) -> Value {
    let mut object = summary(server);
    let Value::Object(entries) = &mut object else {
        unreachable!("a summary is an object");
    };
    let mut set = |key: &str, value: Value| {
        entries.insert(key.to_owned(), value);
    };
    match &server.transport {
        TransportConfig::Stdio(stdio) => {
            set("cwd", json!(stdio.cwd));
            set("env", json!(stdio.env.keys().collect::<Vec<_>>()));
            set("env_vars", json!(stdio.env_vars));
        }
        TransportConfig::StreamableHttp(http) => {
            set("bearer_token_env_var", json!(http.bearer_token_env_var));
            set(
                "http_headers",
                json!(http.http_headers.keys().collect::<Vec<_>>()),
            );
            set("env_http_headers", json!(http.env_http_headers));
            set("ca_certificate", json!(http.ca_certificate));
        }
        _ => {}
    }
    set("protocol", json!(server.protocol.as_str()));
    set("required", json!(server.required));
    set(
        "startup_timeout_sec",
        json!(server.startup_timeout.as_secs_f64()),
    );
    set("tool_timeout_sec", json!(server.tool_timeout.as_secs_f64()));
    set("enabled_tools", json!(server.enabled_tools));
    set("disabled_tools", json!(server.disabled_tools));
    set(
        "environment",
        json!(match &server.environment {
            mcp_runtime::config::Environment::Named(name) => name.as_str(),
            _ => "local",
        }),
    );
    set(
        "supports_parallel_tool_calls",
        json!(server.supports_parallel_tool_calls),
    );
    set(
        "default_tools_approval_mode",
        json!(server.default_tools_approval_mode.map(|mode| mode.as_str())),
    );
    object
}

/// `text` as one table cell: on one line, its control characters escaped.
fn cell(text: &str) -> String {
    printable(text).replace('\n', " ")
}

fn status(server: &ServerConfig) -> &'static str {
    if server.enabled {
        "enabled"
    } else {
        "disabled"
    }
}

fn transport(server: &ServerConfig) -> &'static str {
    match &server.transport {
        TransportConfig::Stdio(_) => "stdio",
        TransportConfig::StreamableHttp(http) => match http.transport {
            HttpTransport::Sse => "sse",
            _ => "streamable_http",
        },
        _ => "unknown",
    }
}

/// `command` and `args` as a shell would take them back.
fn command_line(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(quoted)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `word` as is when a shell would read it back unchanged, else in single quotes.
fn quoted(word: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        Cow::Borrowed(word)
    } else {
        Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_is_shown_as_a_shell_would_read_it_back() {
        let args = ["-y", "@scope/pkg@1.2", "a b", "", "it's", "$HOME"].map(String::from);
        assert_eq!(
            command_line("npx", &args),
            r"npx -y @scope/pkg@1.2 'a b' '' 'it'\''s' '$HOME'"
        );
    }
}
