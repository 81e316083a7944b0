//! The JSON configuration files of other MCP hosts, read as the Codex TOML they mean.
//!
//! `Config::load` reads, besides TOML, the JSON files of:
//!
//! - Claude Desktop (`claude_desktop_config.json`) and Claude Code (`.mcp.json`, the
//!   top-level servers of `~/.claude.json`): an `mcpServers` object; `type` `stdio`,
//!   `http` or `sse`; `headers`; `${VAR}` and `${VAR:-default}` in `command`, `args`,
//!   `env`, `url` and `headers`. Followed: Claude Code's MCP documentation,
//!   "Environment variable expansion in `.mcp.json`" (code.claude.com/docs/en/mcp).
//!   The servers of `projects.*` in `~/.claude.json` are not read.
//! - VS Code (`.vscode/mcp.json`, or a `settings.json` with an `mcp` object): a
//!   `servers` object with `type` `stdio`, `http` or `sse`, `envFile`, an `inputs`
//!   array and `${input:ID}`, `${env:NAME}`, `${workspaceFolder}`. Followed: VS Code's
//!   "MCP configuration reference" (code.visualstudio.com/docs/copilot/reference/
//!   mcp-configuration).
//! - Cursor (`~/.cursor/mcp.json`, `.cursor/mcp.json`): the `mcpServers` shape with
//!   `url`, `headers`, `envFile` and `${env:NAME}`, `${userHome}`, `${workspaceFolder}`.
//!   Followed: Cursor's MCP documentation (cursor.com/docs/mcp), "Config interpolation".
//!
//! A file is told by its content, never its name: JSON (possibly with comments and
//! trailing commas) rather than TOML, then `mcpServers` or `servers` at its top. Since
//! the `mcpServers` shape is shared, every `${…}` form is read in every file
//! (the table of `template.rs`); other top-level keys are ignored.
//!
//! What maps to what, in both shapes: `command`, `args`, `cwd`, `url` as they are;
//! `env` and `envFile` → `env` / `env_vars`; `headers` → `bearer_token_env_var`,
//! `http_headers`, `env_http_headers`; `type` `stdio` (or none) and `http` (also
//! `streamable-http`) choose by key as Codex does; `type` `sse` → `transport = "sse"`;
//! `disabled: true` (in `mcpServers`, as Cline and Windsurf write it) →
//! `enabled = false`. A server name keeps `[A-Za-z0-9_-]` and writes every other
//! character as `_` (`io.github/x` → `io_github_x`); two names that become one are an
//! error. Keys a host documents that mcp-runtime does not act on (VS Code's `dev`,
//! `sandbox`, `sandboxEnabled`, `gallery`, `version`; Claude Code's `oauth`; Cursor's
//! `auth`) load with a [`ConfigWarning`]; any other key is an error.
//!
//! Invariants:
//!
//! 1. A JSON file is converted into Codex's `[mcp_servers.NAME]` TOML, and that text
//!    is what the TOML parser validates: every rule of a server table holds in one
//!    place, and the errors it finds are told in the JSON file's own terms (the
//!    server's object, its JSON key).
//! 2. `mcp-runtime import` prints the same TOML, except where a value holds a
//!    variable that Codex's format cannot name: load expands it from the environment,
//!    import keeps the `${…}` text with a comment saying so. Import never writes the
//!    value of a variable, so it never writes a secret that was not already in the
//!    file.
//! 3. A whole-value reference becomes a reference: `env` entry `X` = `${X}` (or
//!    `${env:X}`) → `env_vars = ["X"]`; header `Authorization: Bearer ${X}` →
//!    `bearer_token_env_var = "X"`; any other header `${X}` → `env_http_headers`.
//! 4. VS Code's `${input:ID}` is read from the environment variable
//!    `MCP_RUNTIME_INPUT_<ID>` (upper case, `[A-Za-z0-9_]`; mcp-runtime cannot prompt),
//!    else from the input's `default`; an unset variable without default is an error
//!    that names the server, the key and the variable, never a value.
//! 5. Every error of a file is reported at once, those of the conversion first.
//! 6. [`load_as_written`], which `mcp-runtime list` and `get` read a file with, keeps
//!    every `${…}` as written, as import does: what they print never holds the value
//!    of a variable or an input, such as a token passed in `args` or `url`.

mod jsonc;
mod render;
mod server;
mod template;
#[cfg(test)]
mod tests;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde_json::Value;

use super::{Config, ConfigWarning, ServerConfig, TransportConfig};
use crate::config::error::ConfigError;
use crate::redact::shown;
pub(crate) use jsonc::looks_like_json;
use render::{Item, Table, render};
use server::Converter;

/// An environment: a variable's value by name.
pub(crate) type Vars<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment (a variable that is not UTF-8 counts as unset).
pub(crate) fn process_vars(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Reads the JSON file of another host (Claude Desktop, Claude Code, VS Code, Cursor)
/// at `path` and converts it into the Codex TOML it means, for writing into a Codex
/// `config.toml`. Variables are not expanded: a `${…}` that TOML cannot name is kept as
/// written, with a comment saying so. The result is validated as [`Config::load`]
/// would validate it.
pub fn import_file(path: &Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source: source.into(),
    })?;
    import(&text, path)
}

/// Converts the JSON file `text` of another host into the Codex TOML it means, for
/// `mcp-runtime import`. Variables are not expanded (invariant 2); the result is
/// validated as `Config::load` would validate it.
pub(crate) fn import(text: &str, origin: &Path) -> Result<String, ConfigError> {
    import_with(text, origin, &process_vars)
}

pub(crate) fn import_with(
    text: &str,
    origin: &Path,
    vars: Vars<'_>,
) -> Result<String, ConfigError> {
    if !looks_like_json(text) {
        return Err(ConfigError::HostFile {
            path: origin.to_owned(),
            problem:
                "is not JSON: mcp-runtime and Codex read a TOML file as it is (nothing to import)"
                    .to_owned(),
        });
    }
    convert(text, origin, Mode::Check, vars)?.validate(origin)?;
    Ok(convert(text, origin, Mode::Import, vars)?.toml)
}

/// Reads the configuration file at `path` as it is written, for showing it
/// (`mcp-runtime list` and `get`): a TOML file as [`Config::load`] reads it (TOML has
/// no variables); a host's JSON file validated as [`import`] validates it, each value
/// as import writes it. No variable of the environment is ever expanded (invariant 6).
pub(crate) fn load_as_written(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source: source.into(),
    })?;
    parse_as_written(&text, path, &process_vars)
}

pub(crate) fn parse_as_written(
    text: &str,
    origin: &Path,
    vars: Vars<'_>,
) -> Result<Config, ConfigError> {
    if !looks_like_json(text) {
        return super::parse::parse(text, origin);
    }
    // Validated with the stand-ins of `Mode::Check`, which keep a `${…}` in `url` from
    // failing the URL check; then each stand-in replaced by the text as written.
    let mut config = convert(text, origin, Mode::Check, vars)?.validate(origin)?;
    for table in convert(text, origin, Mode::Import, vars)?.tables {
        if let Some(server) = config.servers.get_mut(&table.name) {
            as_written(server, table);
        }
    }
    Ok(config)
}

/// `server` with each value that [`Mode::Check`] may have stood in for taken from
/// `table`, converted in [`Mode::Import`]: `command`, `args`, `cwd` and `env`, or
/// `url` and `http_headers`. Every other key is the same in both modes.
fn as_written(server: &mut ServerConfig, table: Table) {
    for (key, item) in table.entries {
        match (&mut server.transport, key, item) {
            (TransportConfig::Stdio(stdio), "command", Item::Str(command)) => {
                stdio.command = command;
            }
            (TransportConfig::Stdio(stdio), "args", Item::Strs(args)) => stdio.args = args,
            (TransportConfig::Stdio(stdio), "cwd", Item::Str(cwd)) => stdio.cwd = Some(cwd.into()),
            (TransportConfig::Stdio(stdio), "env", Item::Map(env)) => stdio.env = env,
            (TransportConfig::StreamableHttp(http), "url", Item::Str(url)) => http.url = url,
            (TransportConfig::StreamableHttp(http), "http_headers", Item::Map(headers)) => {
                http.http_headers = headers;
            }
            _ => {}
        }
    }
}

/// Loads the JSON file `text` of another host: converts it with every variable
/// expanded from `vars`, then validates that TOML.
pub(crate) fn load(text: &str, origin: &Path, vars: Vars<'_>) -> Result<Config, ConfigError> {
    convert(text, origin, Mode::Load, vars)?.validate(origin)
}

/// What the conversion is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every variable expanded, for `Config::load`.
    Load,
    /// No variable of the environment expanded, for `mcp-runtime import`.
    Import,
    /// As [`Mode::Import`], with a stand-in for each variable: its default, else `0`
    /// (a valid host, port, path or argument), so that the validation of what import
    /// prints does not fail on the `${…}` text itself.
    Check,
}

/// A converted file: its TOML, and what the conversion found.
#[derive(Debug)]
struct Converted {
    toml: String,
    /// The tables `toml` was written from.
    tables: Vec<Table>,
    /// Each server's TOML name and the name of its JSON object (`servers.NAME`).
    objects: BTreeMap<String, String>,
    errors: Vec<ConfigError>,
    warnings: Vec<ConfigWarning>,
}

impl Converted {
    /// The configuration, once the TOML passes [`super::parse`] (invariant 1).
    fn validate(self, origin: &Path) -> Result<Config, ConfigError> {
        let parsed = super::parse::parse(&self.toml, origin);
        debug_assert!(
            !matches!(parsed, Err(ConfigError::Syntax { .. })),
            "the converted TOML is well-formed: {parsed:?}"
        );
        let mut errors = self.errors;
        match parsed {
            Ok(mut config) if errors.is_empty() => {
                config.warnings.extend(self.warnings);
                Ok(config)
            }
            Ok(_) => Err(several(errors)),
            Err(error) => {
                errors.extend(
                    error
                        .errors()
                        .iter()
                        .map(|error| relocate(error.clone(), &self.objects)),
                );
                Err(several(errors))
            }
        }
    }
}

fn several(mut errors: Vec<ConfigError>) -> ConfigError {
    if errors.len() == 1 {
        errors.remove(0)
    } else {
        ConfigError::Several { errors }
    }
}

/// `error`, found in the converted TOML, told in the JSON file's terms: the server's
/// object and its JSON key.
fn relocate(error: ConfigError, objects: &BTreeMap<String, String>) -> ConfigError {
    let object = |table: String| match table.strip_prefix("mcp_servers.") {
        Some(name) => objects.get(name).cloned().unwrap_or(table),
        None => table,
    };
    match error {
        // A suggestion names a TOML key, which the JSON file does not have.
        ConfigError::UnknownKey {
            path, table, key, ..
        } => ConfigError::UnknownKey {
            path,
            table: object(table),
            key: json_key(&key),
            suggestion: None,
        },
        ConfigError::InvalidValue {
            path,
            table,
            key,
            expected,
        } => ConfigError::InvalidValue {
            path,
            table: object(table),
            key: json_key(&key),
            expected,
        },
        ConfigError::InvalidEntry {
            path,
            table,
            key,
            entry,
            problem,
        } => ConfigError::InvalidEntry {
            path,
            table: object(table),
            key: json_key(&key),
            entry,
            problem,
        },
        ConfigError::MixedTransport {
            path,
            table,
            stdio_key,
            http_key,
        } => ConfigError::MixedTransport {
            path,
            table: object(table),
            stdio_key: json_key(&stdio_key),
            http_key: json_key(&http_key),
        },
        ConfigError::MissingTransport { path, table } => ConfigError::MissingTransport {
            path,
            table: object(table),
        },
        ConfigError::LiteralToken { path, table, key } => ConfigError::LiteralToken {
            path,
            table: object(table),
            key: json_key(&key),
        },
        error => error,
    }
}

/// The JSON key a Codex key was converted from.
fn json_key(key: &str) -> String {
    match key {
        "env_vars" => "env".to_owned(),
        "http_headers" | "env_http_headers" | "bearer_token_env_var" => "headers".to_owned(),
        "enabled" => "disabled".to_owned(),
        "transport" => "type".to_owned(),
        key => match key.strip_prefix("http_headers.") {
            Some(header) => format!("headers.{header}"),
            None => key.to_owned(),
        },
    }
}

/// The shape of a host's JSON file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `mcpServers`: Claude Desktop, Claude Code, Cursor.
    McpServers,
    /// `servers` (and `inputs`): VS Code.
    VsCode,
}

/// Converts `text` into TOML. Errors of the file as a whole are returned at once;
/// those of a server are collected and that server is left out of the TOML.
fn convert(
    text: &str,
    origin: &Path,
    mode: Mode,
    vars: Vars<'_>,
) -> Result<Converted, ConfigError> {
    let file_error = |problem: String| ConfigError::HostFile {
        path: origin.to_owned(),
        problem,
    };
    let root: Value = serde_json::from_str(&jsonc::strip(text)).map_err(|error| {
        let location = format!(" at line {} column {}", error.line(), error.column());
        let message = error.to_string();
        ConfigError::JsonSyntax {
            path: origin.to_owned(),
            message: format!(
                "{} (at line {}, column {})",
                message.strip_suffix(&location).unwrap_or(&message),
                error.line(),
                error.column()
            ),
        }
    })?;
    let Value::Object(root) = root else {
        return Err(file_error("is JSON but not an object".to_owned()));
    };
    // VS Code's `settings.json` holds the same under `mcp`.
    let (root, prefix) = match root.get("mcp") {
        Some(Value::Object(mcp))
            if !root.contains_key("servers") && !root.contains_key("mcpServers") =>
        {
            (mcp, "mcp.")
        }
        _ => (&root, ""),
    };
    let (shape, top, servers) = match (root.get("mcpServers"), root.get("servers")) {
        (Some(_), Some(_)) => {
            return Err(file_error(format!(
                "has both `{prefix}mcpServers` and `{prefix}servers` (keep one: mcp-runtime reads one host's format at a time)"
            )));
        }
        (Some(servers), None) => (Shape::McpServers, format!("{prefix}mcpServers"), servers),
        (None, Some(servers)) => (Shape::VsCode, format!("{prefix}servers"), servers),
        (None, None) => {
            return Err(file_error(
                "is JSON but has neither `mcpServers` (Claude Desktop, Claude Code, Cursor) nor `servers` (VS Code) (mcp-runtime reads those, or TOML with `[mcp_servers.NAME]` tables)".to_owned(),
            ));
        }
    };
    let Value::Object(servers) = servers else {
        return Err(file_error(format!(
            "has a `{top}` that is not an object (write the servers as an object by name)"
        )));
    };
    let inputs = match (shape, root.get("inputs")) {
        (Shape::VsCode, Some(inputs)) => {
            self::inputs(inputs, &format!("{prefix}inputs")).map_err(file_error)?
        }
        _ => BTreeMap::new(),
    };

    let mut converter = Converter {
        path: origin,
        mode,
        vars,
        shape,
        inputs,
        workspace: workspace(origin),
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let mut tables = Vec::new();
    let mut objects = BTreeMap::new();
    for (original, value) in servers {
        let Some(name) = converter.server_name(&top, original, &objects) else {
            continue;
        };
        // Named in messages and warnings, one line each.
        let object = format!("{top}.{}", shown(original));
        if let Some(table) = converter.server(&top, &name, original, &object, value) {
            tables.push(table);
        }
        objects.insert(name, object);
    }
    let label = origin.file_name().map_or_else(
        || origin.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    let format = match shape {
        Shape::McpServers => "`mcpServers` of Claude Desktop, Claude Code or Cursor",
        Shape::VsCode => "`servers` of VS Code",
    };
    Ok(Converted {
        toml: render(&label, format, &tables),
        tables,
        objects,
        errors: converter.errors,
        warnings: converter.warnings,
    })
}

/// VS Code's `inputs`: each input's id and `default`.
fn inputs(value: &Value, key: &str) -> Result<BTreeMap<String, Option<String>>, String> {
    let invalid = |index: usize| {
        format!(
            "has an item {} in `{key}` that is not an object with a string `id` (write each input as `{{\"id\": …, \"type\": \"promptString\"}}`)",
            index + 1
        )
    };
    let Value::Array(items) = value else {
        return Err(format!(
            "has a `{key}` that is not an array (write the inputs as an array)"
        ));
    };
    let mut inputs = BTreeMap::new();
    for (index, item) in items.iter().enumerate() {
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(index))?;
        let default = item
            .get("default")
            .and_then(Value::as_str)
            .map(str::to_owned);
        inputs.insert(id.to_owned(), default);
    }
    Ok(inputs)
}

/// The folder `${workspaceFolder}` names: the one holding `.vscode/` or `.cursor/`
/// when the file is in such a folder, else the file's own folder.
fn workspace(origin: &Path) -> PathBuf {
    let file = std::path::absolute(origin).unwrap_or_else(|_| origin.to_owned());
    let folder = file.parent().unwrap_or(Path::new("/"));
    match folder.file_name().and_then(|name| name.to_str()) {
        Some(".vscode" | ".cursor") => folder.parent().unwrap_or(folder).to_owned(),
        _ => folder.to_owned(),
    }
}
