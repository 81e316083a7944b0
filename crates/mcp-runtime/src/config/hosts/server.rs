//! One server of a host's JSON file, converted key by key into a Codex table.
//!
//! Unknown keys, values of the wrong type and `${…}` references that cannot be
//! resolved are recorded with the server's object and the JSON key, and conversion
//! goes on, so that every error of a file is reported at once.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde_json::{Map, Value};

use super::{
    Mode, Shape, Vars,
    render::{Item, Table},
    template::{self, Part, Predefined, Ref, input_variable},
};
use crate::config::{ConfigWarning, MAX_SERVER_NAME_BYTES, error::ConfigError};

/// The keys a server of either shape may have.
const KEYS: &[&str] = &[
    "type", "command", "args", "env", "envFile", "cwd", "url", "headers",
];

/// The key of the `mcpServers` shape that turns a server off, as Cline and Windsurf
/// write it.
const DISABLED: &str = "disabled";

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

/// The conversion of one file's servers.
pub(super) struct Converter<'a> {
    pub(super) path: &'a Path,
    pub(super) mode: Mode,
    pub(super) vars: Vars<'a>,
    pub(super) shape: Shape,
    pub(super) inputs: BTreeMap<String, Option<String>>,
    pub(super) workspace: PathBuf,
    pub(super) errors: Vec<ConfigError>,
    pub(super) warnings: Vec<ConfigWarning>,
}

impl Converter<'_> {
    /// The mcp-runtime name of server `original`: each character outside
    /// `[A-Za-z0-9_-]` written as `_`; `None` once an error is recorded.
    pub(super) fn server_name(
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
    pub(super) fn server(
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
                let known: Vec<String> = KEYS
                    .iter()
                    .chain((self.shape == Shape::McpServers).then_some(&DISABLED))
                    .map(|key| format!("`{key}`"))
                    .collect();
                let known = known.join(", ");
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
        KEYS.contains(&key) || (self.shape == Shape::McpServers && key == DISABLED)
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
        let mut bearer = None;
        for (name, value) in self.string_map(object, t, "headers").into_iter().flatten() {
            if bearer.is_none()
                && name.eq_ignore_ascii_case("authorization")
                && let Some(token) = value
                    .get(..7)
                    .filter(|scheme| scheme.eq_ignore_ascii_case("bearer "))
                    .map(|_| value[7..].trim())
                && let Some(variable) = self.whole_variable(token)
            {
                bearer = Some(variable);
            } else if let Some(variable) = self.whole_variable(&value) {
                from_env.insert(name, variable);
            } else {
                let at = format!("`headers` header `{name}`");
                if let Some(value) = self.value(t, &at, &value, "", &mut table.comments) {
                    literal.insert(name, value);
                }
            }
        }
        if let Some(variable) = bearer {
            table
                .entries
                .push(("bearer_token_env_var", Item::Str(variable)));
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

    /// `text` of the value at `at` (for example `` `args` item 2 ``): at load with every
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
                    Ok(default.map_or_else(|| stand_in(&key, &out), str::to_owned))
                }
                Ref::Input(id) if self.mode == Mode::Check => Ok(self
                    .inputs
                    .get(id)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| stand_in(&key, &out))),
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

/// What stands in for a variable without default when import validates its output
/// ([`Mode::Check`]): `0`, a valid host, port, path segment or argument; at the start
/// of a `url`, a whole URL.
fn stand_in(key: &str, before: &str) -> String {
    if key == "url" && before.is_empty() {
        "http://0".to_owned()
    } else {
        "0".to_owned()
    }
}
