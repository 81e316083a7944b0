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
//! trailing commas) rather than TOML, then `mcpServers` or `servers` at its top.
//!
//! Invariants:
//!
//! 1. A JSON file is converted into Codex's `[mcp_servers.NAME]` TOML, and that text
//!    is what [`super::parse`] validates: every rule of a server table holds in one
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

mod jsonc;
mod template;
#[cfg(test)]
mod tests;

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
};

use serde_json::{Map, Value};

use super::{Config, ConfigWarning, MAX_SERVER_NAME_BYTES};
use crate::error::ConfigError;
pub(crate) use jsonc::looks_like_json;
pub use template::input_variable;
use template::{Part, Predefined, Ref};

/// An environment: a variable's value by name.
pub(crate) type Vars<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment (a variable that is not UTF-8 counts as unset).
pub(crate) fn process_vars(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The keys a server of either shape may have.
const KEYS: &[&str] = &[
    "type", "command", "args", "env", "envFile", "cwd", "url", "headers",
];

/// Keys of one host that mcp-runtime reads but does not act on, with why, finishing a
/// sentence about the key.
const MCP_SERVERS_IGNORED: &[(&str, &str)] = &[
    (
        "oauth",
        "is Claude Code's OAuth client setting, which mcp-runtime does not import (set `[mcp_servers.NAME.oauth]` in a TOML file)",
    ),
    (
        "auth",
        "is Cursor's OAuth client setting, which mcp-runtime does not import (set `[mcp_servers.NAME.oauth]` in a TOML file)",
    ),
];
const VS_CODE_IGNORED: &[(&str, &str)] = &[
    (
        "dev",
        "is VS Code's development mode (watch and debug), which mcp-runtime does not implement",
    ),
    (
        "sandboxEnabled",
        "is VS Code's sandbox, which mcp-runtime does not apply (run the server through an `[environments.NAME]` wrapper instead)",
    ),
    (
        "sandbox",
        "is VS Code's sandbox, which mcp-runtime does not apply (run the server through an `[environments.NAME]` wrapper instead)",
    ),
    (
        "gallery",
        "is VS Code's gallery record, which mcp-runtime does not use",
    ),
    (
        "version",
        "is VS Code's gallery record, which mcp-runtime does not use",
    ),
];

/// Reads the JSON file of another host at `path` and converts it, as [`import`] does.
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
pub fn import(text: &str, origin: &Path) -> Result<String, ConfigError> {
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
        ConfigError::UnknownKey { path, table, key } => ConfigError::UnknownKey {
            path,
            table: object(table),
            key: json_key(&key),
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
        let object = format!("{top}.{original}");
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

/// One `[mcp_servers.NAME]` table to write.
#[derive(Debug)]
struct Table {
    name: String,
    comments: Vec<String>,
    entries: Vec<(&'static str, Item)>,
}

/// A TOML value to write.
#[derive(Debug)]
enum Item {
    Str(String),
    Strs(Vec<String>),
    Map(BTreeMap<String, String>),
    Bool(bool),
}

/// The conversion of one file's servers.
struct Converter<'a> {
    path: &'a Path,
    mode: Mode,
    vars: Vars<'a>,
    shape: Shape,
    inputs: BTreeMap<String, Option<String>>,
    workspace: PathBuf,
    errors: Vec<ConfigError>,
    warnings: Vec<ConfigWarning>,
}

impl Converter<'_> {
    /// The mcp-runtime name of server `original`: each character outside
    /// `[A-Za-z0-9_-]` written as `_`; `None` once an error is recorded.
    fn server_name(
        &mut self,
        top: &str,
        original: &str,
        taken: &BTreeMap<String, String>,
    ) -> Option<String> {
        let name: String = original
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let problem = if name.is_empty() {
            "is empty (name the server)".to_owned()
        } else if name.len() > MAX_SERVER_NAME_BYTES {
            format!(
                "is {} bytes long, more than the {MAX_SERVER_NAME_BYTES} allowed (use a shorter name)",
                name.len()
            )
        } else if let Some(other) = taken.get(&name) {
            format!(
                "becomes `{name}` in mcp-runtime, as `{other}` does (rename one of them: only letters, digits, `_` and `-` are kept)"
            )
        } else {
            return Some(name);
        };
        self.errors.push(ConfigError::HostServerName {
            path: self.path.to_owned(),
            table: top.to_owned(),
            name: original.to_owned(),
            problem,
        });
        None
    }

    fn error(&mut self, table: &str, key: &str, problem: String) {
        self.entry_error(table, key, None, problem);
    }

    fn entry_error(&mut self, table: &str, key: &str, entry: Option<String>, problem: String) {
        self.errors.push(ConfigError::HostKey {
            path: self.path.to_owned(),
            table: table.to_owned(),
            key: key.to_owned(),
            entry,
            problem,
        });
    }

    /// The table of one server; `None` when an error was recorded for it.
    fn server(
        &mut self,
        top: &str,
        name: &str,
        original: &str,
        t: &str,
        value: &Value,
    ) -> Option<Table> {
        let Value::Object(object) = value else {
            self.error(top, original, "must be an object".to_owned());
            return None;
        };
        let errors = self.errors.len();
        let mut table = Table {
            name: name.to_owned(),
            comments: Vec::new(),
            entries: Vec::new(),
        };
        if name != original {
            table
                .comments
                .push(format!("named `{original}` in the JSON file"));
        }
        let ignored = match self.shape {
            Shape::McpServers => MCP_SERVERS_IGNORED,
            Shape::VsCode => VS_CODE_IGNORED,
        };
        for key in object.keys() {
            if let Some((_, reason)) = ignored.iter().find(|(ignored, _)| ignored == key) {
                table.comments.push(format!("`{key}` {reason}"));
                self.warnings.push(ConfigWarning {
                    path: self.path.to_owned(),
                    table: t.to_owned(),
                    key: key.clone(),
                    reason: (*reason).to_owned(),
                });
            } else if !self.knows(key) {
                let known = match self.shape {
                    Shape::McpServers => {
                        "`type`, `command`, `args`, `env`, `envFile`, `cwd`, `url`, `headers`, `disabled`"
                    }
                    Shape::VsCode => {
                        "`type`, `command`, `args`, `env`, `envFile`, `cwd`, `url`, `headers`"
                    }
                };
                self.error(
                    t,
                    key,
                    format!("is unknown (check its spelling; a server here has {known})"),
                );
            }
        }

        let sse = self.server_type(object, t);
        if let Some(command) = self.string(object, t, "command") {
            let value = self.value(t, "`command`", &command, "", &mut table.comments);
            table
                .entries
                .extend(value.map(|value| ("command", Item::Str(value))));
        }
        if let Some(args) = self.strings(object, t, "args") {
            let args = args
                .iter()
                .enumerate()
                .filter_map(|(index, arg)| {
                    let at = format!("`args` item {}", index + 1);
                    self.value(t, &at, arg, "", &mut table.comments)
                })
                .collect();
            table.entries.push(("args", Item::Strs(args)));
        }
        self.env(object, t, &mut table);
        if let Some(cwd) = self.string(object, t, "cwd") {
            let value = self.value(t, "`cwd`", &cwd, "", &mut table.comments);
            table
                .entries
                .extend(value.map(|value| ("cwd", Item::Str(value))));
        }
        if let Some(url) = self.string(object, t, "url") {
            let value = self.value(t, "`url`", &url, "", &mut table.comments);
            table
                .entries
                .extend(value.map(|value| ("url", Item::Str(value))));
        }
        if sse == Some(true) {
            table
                .entries
                .push(("transport", Item::Str("sse".to_owned())));
        }
        self.headers(object, t, &mut table);
        if self.shape == Shape::McpServers {
            match object.get("disabled") {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => table.entries.push(("enabled", Item::Bool(false))),
                Some(_) => self.error(t, "disabled", "must be `true` or `false`".to_owned()),
            }
        }
        (self.errors.len() == errors).then_some(table)
    }

    /// Whether a server of this shape may have `key`.
    fn knows(&self, key: &str) -> bool {
        KEYS.contains(&key) || (self.shape == Shape::McpServers && key == "disabled")
    }

    /// Checks `type` against the keys present; `Some(true)` for `sse`.
    fn server_type(&mut self, object: &Map<String, Value>, t: &str) -> Option<bool> {
        let kind = object.get("type")?;
        let (stdio, sse) = match kind.as_str() {
            Some("stdio") => (true, false),
            Some("http" | "streamable-http") => (false, false),
            Some("sse") => (false, true),
            _ => {
                self.error(t, "type", "must be `stdio`, `http` or `sse`".to_owned());
                return None;
            }
        };
        let has_command = object.contains_key("command");
        let has_url = object.contains_key("url");
        if stdio && has_url && !has_command {
            self.error(
                t,
                "type",
                "is `stdio`, but the server has `url` and no `command` (write `http` or `sse`)"
                    .to_owned(),
            );
        } else if !stdio && has_command && !has_url {
            self.error(
                t,
                "type",
                "names an HTTP transport, but the server has `command` and no `url` (write `stdio`)".to_owned(),
            );
        }
        Some(sse)
    }

    fn string(&mut self, object: &Map<String, Value>, t: &str, key: &str) -> Option<String> {
        match object.get(key)? {
            Value::String(value) => Some(value.clone()),
            _ => {
                self.error(t, key, "must be a string".to_owned());
                None
            }
        }
    }

    fn strings(&mut self, object: &Map<String, Value>, t: &str, key: &str) -> Option<Vec<String>> {
        let value = object.get(key)?;
        let strings = value.as_array().and_then(|items| {
            items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        });
        if strings.is_none() {
            self.error(t, key, "must be an array of strings".to_owned());
        }
        strings
    }

    fn string_map(
        &mut self,
        object: &Map<String, Value>,
        t: &str,
        key: &str,
    ) -> Option<Vec<(String, String)>> {
        let value = object.get(key)?;
        let map = value.as_object().and_then(|entries| {
            entries
                .iter()
                .map(|(name, item)| Some((name.clone(), item.as_str()?.to_owned())))
                .collect::<Option<Vec<_>>>()
        });
        if map.is_none() {
            self.error(t, key, "must be an object of strings".to_owned());
        }
        map
    }

    /// `env` and `envFile`: whole-value references to a variable of the same name
    /// become `env_vars` (invariant 3); the rest is `env`, the file's variables first.
    fn env(&mut self, object: &Map<String, Value>, t: &str, table: &mut Table) {
        let mut env = BTreeMap::new();
        let mut env_vars = Vec::new();
        if let Some(file) = self.string(object, t, "envFile") {
            let at = "`envFile`";
            if let Some(file) = self.value(t, at, &file, "", &mut table.comments) {
                match self.mode {
                    Mode::Load => env.extend(self.env_file(t, &file)),
                    Mode::Check => {}
                    Mode::Import => table.comments.push(format!(
                        "`envFile` `{file}` is read by mcp-runtime when it loads the JSON file; Codex does not read it (copy its variables into `env`, or export them and list them in `env_vars`)"
                    )),
                }
            }
        }
        for (name, value) in self.string_map(object, t, "env").into_iter().flatten() {
            match self.whole_variable(&value) {
                Some(variable) if variable == name => env_vars.push(name),
                _ => {
                    let at = format!("`env` variable `{name}`");
                    let hint = format!(" (set `{name}` itself and list it in `env_vars` instead)");
                    if let Some(value) = self.value(t, &at, &value, &hint, &mut table.comments) {
                        env.insert(name, value);
                    }
                }
            }
        }
        if !env.is_empty() {
            table.entries.push(("env", Item::Map(env)));
        }
        if !env_vars.is_empty() {
            table.entries.push(("env_vars", Item::Strs(env_vars)));
        }
    }

    /// The variables of an `envFile` (`NAME=value` lines, `#` comments, an optional
    /// `export `, quotes around a value), read at load.
    fn env_file(&mut self, t: &str, file: &str) -> Vec<(String, String)> {
        let path = self.workspace.join(file);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) => {
                self.error(
                    t,
                    "envFile",
                    format!("names `{}`, which cannot be read ({error})", path.display()),
                );
                return Vec::new();
            }
        };
        text.lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .filter_map(|line| {
                let line = line.strip_prefix("export ").unwrap_or(line);
                let (name, value) = line.split_once('=')?;
                let value = value.trim();
                let value = [('"', '"'), ('\'', '\'')]
                    .iter()
                    .find_map(|(open, close)| value.strip_prefix(*open)?.strip_suffix(*close))
                    .unwrap_or(value);
                Some((name.trim().to_owned(), value.to_owned()))
            })
            .collect()
    }

    /// `headers`: `Authorization: Bearer ${X}` → `bearer_token_env_var`, a whole-value
    /// reference → `env_http_headers`, the rest → `http_headers` (invariant 3).
    fn headers(&mut self, object: &Map<String, Value>, t: &str, table: &mut Table) {
        let mut literal = BTreeMap::new();
        let mut from_env = BTreeMap::new();
        for (name, value) in self.string_map(object, t, "headers").into_iter().flatten() {
            if name.eq_ignore_ascii_case("authorization")
                && let Some(token) = value
                    .get(..7)
                    .filter(|scheme| scheme.eq_ignore_ascii_case("bearer "))
                    .map(|_| value[7..].trim())
                && let Some(variable) = self.whole_variable(token)
            {
                table
                    .entries
                    .push(("bearer_token_env_var", Item::Str(variable)));
            } else if let Some(variable) = self.whole_variable(&value) {
                from_env.insert(name, variable);
            } else {
                let at = format!("`headers` header `{name}`");
                if let Some(value) = self.value(t, &at, &value, "", &mut table.comments) {
                    literal.insert(name, value);
                }
            }
        }
        if !literal.is_empty() {
            table.entries.push(("http_headers", Item::Map(literal)));
        }
        if !from_env.is_empty() {
            table
                .entries
                .push(("env_http_headers", Item::Map(from_env)));
        }
    }

    /// The variable `text` consists of, when it is one reference and nothing else: an
    /// environment variable without default, or an input without default.
    fn whole_variable(&self, text: &str) -> Option<String> {
        match template::parse(text).as_slice() {
            [
                Part::Ref(
                    Ref::Env {
                        name,
                        default: None,
                    },
                    _,
                ),
            ] => Some((*name).to_owned()),
            [Part::Ref(Ref::Input(id), _)] if self.inputs.get(*id) == Some(&None) => {
                Some(input_variable(id))
            }
            _ => None,
        }
    }

    /// `text` of the value at `at` (for example ``​`args` item 2``): at load with every
    /// reference expanded; at import with the predefined ones expanded and the rest
    /// kept, with a comment (invariant 2). `None` once an error is recorded.
    fn value(
        &mut self,
        t: &str,
        at: &str,
        text: &str,
        hint: &str,
        comments: &mut Vec<String>,
    ) -> Option<String> {
        let key = at.split('`').nth(1).unwrap_or(at).to_owned();
        let mut out = String::new();
        let mut kept = Vec::new();
        let mut ok = true;
        for part in template::parse(text) {
            let (reference, whole) = match part {
                Part::Text(text) => {
                    out.push_str(text);
                    continue;
                }
                Part::Ref(reference, whole) => (reference, whole),
            };
            let expanded = match reference {
                Ref::Predefined(predefined) => self.predefined(predefined),
                Ref::Unsupported(_) => Err(format!(
                    "uses `{whole}`, which mcp-runtime cannot resolve outside the editor (write the value itself, or `${{env:NAME}}` for an environment variable)"
                )),
                Ref::Input(id) if !self.inputs.contains_key(id) => Err(format!(
                    "uses input `{id}`, which `inputs` does not declare (declare it there)"
                )),
                Ref::Env { .. } | Ref::Input(_) if self.mode == Mode::Import => {
                    kept.push(whole);
                    Ok(whole.to_owned())
                }
                Ref::Env { default, .. } if self.mode == Mode::Check => {
                    Ok(default.unwrap_or("0").to_owned())
                }
                Ref::Input(id) if self.mode == Mode::Check => Ok(self
                    .inputs
                    .get(id)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| "0".to_owned())),
                Ref::Env { name, default } => {
                    let value = (self.vars)(name);
                    match (value, default) {
                        (Some(value), None) => Ok(value),
                        (Some(value), Some(_)) if !value.is_empty() => Ok(value),
                        (_, Some(default)) => Ok(default.to_owned()),
                        (None, None) => Err(format!(
                            "uses variable `{name}`, which is not set (set it, or write `${{{name}:-default}}` for a default)"
                        )),
                    }
                }
                Ref::Input(id) => {
                    let variable = input_variable(id);
                    match (
                        (self.vars)(&variable),
                        self.inputs.get(id).cloned().flatten(),
                    ) {
                        (Some(value), _) | (None, Some(value)) => Ok(value),
                        (None, None) => Err(format!(
                            "uses input `{id}`, which mcp-runtime cannot prompt for (set variable `{variable}` to its value)"
                        )),
                    }
                }
            };
            match expanded {
                Ok(value) => out.push_str(&value),
                Err(problem) => {
                    ok = false;
                    let entry = at
                        .strip_prefix(&format!("`{key}`"))
                        .map(str::trim)
                        .filter(|entry| !entry.is_empty())
                        .map(str::to_owned);
                    self.entry_error(t, &key, entry, problem);
                }
            }
        }
        if !kept.is_empty() {
            comments.push(format!(
                "{at} holds `{}`, which mcp-runtime expands from the environment when it loads the JSON file; Codex passes the text as written{hint}",
                kept.join("`, `")
            ));
        }
        ok.then_some(out)
    }

    fn predefined(&self, predefined: Predefined) -> Result<String, String> {
        let workspace = || self.workspace.to_string_lossy().into_owned();
        match predefined {
            Predefined::WorkspaceFolder => Ok(workspace()),
            Predefined::WorkspaceFolderBasename => Ok(self
                .workspace
                .file_name()
                .map_or_else(workspace, |name| name.to_string_lossy().into_owned())),
            Predefined::UserHome => (self.vars)("HOME").ok_or_else(|| {
                "uses `${userHome}`, but variable `HOME` is not set (set it)".to_owned()
            }),
            Predefined::PathSeparator => Ok(std::path::MAIN_SEPARATOR.to_string()),
        }
    }
}

/// The TOML text of `tables`.
fn render(label: &str, format: &str, tables: &[Table]) -> String {
    let mut out = format!(
        "# The servers of `{label}` ({format}) in Codex's `config.toml` form, by `mcp-runtime import`.\n"
    );
    for table in tables {
        let _ = writeln!(out, "\n[mcp_servers.{}]", key(&table.name));
        for comment in &table.comments {
            for line in comment.lines() {
                let _ = writeln!(out, "# {line}");
            }
        }
        for (name, item) in &table.entries {
            let value = match item {
                Item::Str(value) => string(value),
                Item::Bool(value) => value.to_string(),
                Item::Strs(values) => {
                    let values: Vec<String> = values.iter().map(|value| string(value)).collect();
                    format!("[{}]", values.join(", "))
                }
                Item::Map(entries) => {
                    let entries: Vec<String> = entries
                        .iter()
                        .map(|(name, value)| format!("{} = {}", key(name), string(value)))
                        .collect();
                    format!("{{ {} }}", entries.join(", "))
                }
            };
            let _ = writeln!(out, "{name} = {value}");
        }
    }
    out
}

/// `name` as a TOML key: bare when it can be, else quoted.
fn key(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        name.to_owned()
    } else {
        string(name)
    }
}

/// `value` as a TOML basic string.
fn string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
