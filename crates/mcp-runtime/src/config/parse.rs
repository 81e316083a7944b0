//! Key-by-key parsing of the TOML text into [`Config`].
//!
//! The document is first parsed as a plain TOML table; then every server table is
//! checked key by key against the stdio, HTTP and common key lists, so an unknown key,
//! a mix of transports or a value of the wrong type is reported with the file, the
//! table and the key. Keys that would hold a secret in clear text (`bearer_token`, an
//! `Authorization` header) are refused outright.
//!
//! An error does not stop the parse: [`File`] records it and parsing goes on with the
//! next key, entry or table, so that every error in a file is reported at once. Only
//! what the rest of a table depends on (its transport) ends that table early.

use std::{
    cell::RefCell,
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    time::Duration,
};

use toml::{Table, Value};

use super::{
    Config, Environment, EnvironmentConfig, HttpConfig, HttpTransport, MAX_SERVER_NAME_BYTES,
    ServerConfig, StdioConfig, TransportConfig,
    checks::{
        env_name_problem, header_name_problem, header_value_problem, os_string_problem, shown,
        url_problem,
    },
};
use crate::error::ConfigError;

pub(super) const STDIO_KEYS: &[&str] = &["command", "args", "env", "env_vars", "cwd"];
pub(super) const HTTP_KEYS: &[&str] = &[
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
];
pub(super) const COMMON_KEYS: &[&str] = &[
    "enabled",
    "required",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "environment",
    "share_tool_listing",
    "max_message_bytes",
];
/// Keys that would carry a secret in clear text.
pub(super) const LITERAL_TOKEN_KEYS: &[&str] = &["bearer_token"];
/// Headers that carry credentials: only `bearer_token_env_var` or `env_http_headers`
/// may set them.
const CREDENTIAL_HEADERS: &[&str] = &["authorization", "proxy-authorization"];

pub(super) fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    let root: Table = toml::from_str(text).map_err(|error| ConfigError::Syntax {
        path: origin.to_owned(),
        message: error.message().to_owned() + &location(text, error.span()),
    })?;
    let file = File {
        path: origin,
        errors: RefCell::default(),
    };

    let mut environments = BTreeMap::new();
    // A server may name an environment whose table has an error: that error is reported
    // once, at the environment, not again at each server.
    let mut declared_environments = BTreeSet::new();
    if let Some(value) = root.get("environments")
        && let Some(tables) = file.ok(file.table(value, "environments", "environments"))
    {
        for (name, value) in tables {
            declared_environments.insert(name.as_str());
            if let Some(environment) = file.ok(file.environment(name, value)) {
                environments.insert(name.clone(), environment);
            }
        }
    }

    let mut servers = BTreeMap::new();
    if let Some(value) = root.get("mcp_servers")
        && let Some(tables) = file.ok(file.table(value, "mcp_servers", "mcp_servers"))
    {
        for (name, value) in tables {
            if name.len() > MAX_SERVER_NAME_BYTES {
                file.report(ConfigError::ServerNameTooLong {
                    path: origin.to_owned(),
                    name: name.clone(),
                    limit: MAX_SERVER_NAME_BYTES,
                });
                continue;
            }
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                file.report(ConfigError::InvalidServerName {
                    path: origin.to_owned(),
                    name: name.clone(),
                });
                continue;
            }
            if let Some(server) = file.ok(file.server(name, value, &declared_environments)) {
                servers.insert(name.clone(), server);
            }
        }
    }
    file.finish(Config {
        servers,
        environments,
        ..Config::default()
    })
}

/// ` at line L, column C` for a byte span of `text`.
fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let Some(span) = span else {
        return String::new();
    };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |at| at + 1) + 1;
    format!(" (at line {line}, column {column})")
}

/// The file being parsed and the errors found in it so far.
struct File<'a> {
    path: &'a Path,
    errors: RefCell<Vec<ConfigError>>,
}

impl File<'_> {
    /// Records `error`; parsing goes on.
    fn report(&self, error: ConfigError) {
        debug_assert!(
            !matches!(error, ConfigError::Several { .. }),
            "errors are recorded one by one, never nested"
        );
        self.errors.borrow_mut().push(error);
    }

    /// The value of `result`, or `None` once its error is recorded.
    fn ok<T>(&self, result: Result<T, ConfigError>) -> Option<T> {
        result.map_err(|error| self.report(error)).ok()
    }

    /// Sets `target` to the value of `result`, or records its error.
    fn set<T>(&self, target: &mut T, result: Result<T, ConfigError>) {
        if let Some(value) = self.ok(result) {
            *target = value;
        }
    }

    /// `value` when no error was found in the file, else every error found.
    fn finish<T>(self, value: T) -> Result<T, ConfigError> {
        let mut errors = self.errors.into_inner();
        match errors.len() {
            0 => Ok(value),
            1 => Err(errors.remove(0)),
            _ => Err(ConfigError::Several { errors }),
        }
    }

    fn environment(&self, name: &str, value: &Value) -> Result<EnvironmentConfig, ConfigError> {
        let table_name = format!("environments.{name}");
        if name == "local" {
            return Err(self.invalid(
                "environments",
                name,
                "a name other than `local`, which always means this host",
            ));
        }
        let table = self.table(value, "environments", name)?;
        for key in table.keys().filter(|key| *key != "wrapper") {
            self.report(self.unknown_key(&table_name, key));
        }
        let wrapper = match table.get("wrapper") {
            Some(value) => self.strings(value, &table_name, "wrapper")?,
            None => Vec::new(),
        };
        if wrapper.is_empty() {
            return Err(self.invalid(&table_name, "wrapper", "a non-empty array of strings"));
        }
        for (index, word) in wrapper.iter().enumerate() {
            self.check(
                &table_name,
                "wrapper",
                || item(index),
                os_string_problem(word),
            );
        }
        Ok(EnvironmentConfig { wrapper })
    }

    fn server(
        &self,
        name: &str,
        value: &Value,
        environments: &BTreeSet<&str>,
    ) -> Result<ServerConfig, ConfigError> {
        let table_name = format!("mcp_servers.{name}");
        let table = self.table(value, "mcp_servers", name)?;
        let t = table_name.as_str();

        for key in table.keys() {
            if LITERAL_TOKEN_KEYS.contains(&key.as_str()) {
                self.report(ConfigError::LiteralToken {
                    path: self.path.to_owned(),
                    table: table_name.clone(),
                    key: key.clone(),
                });
                continue;
            }
            let known = [STDIO_KEYS, HTTP_KEYS, COMMON_KEYS]
                .iter()
                .any(|keys| keys.contains(&key.as_str()));
            if !known {
                self.report(self.unknown_key(t, key));
            }
        }
        let stdio_key = STDIO_KEYS.iter().find(|key| table.contains_key(**key));
        let http_key = HTTP_KEYS.iter().find(|key| table.contains_key(**key));
        let transport = match (stdio_key, http_key) {
            (Some(stdio_key), Some(http_key)) => {
                return Err(ConfigError::MixedTransport {
                    path: self.path.to_owned(),
                    table: table_name,
                    stdio_key: (*stdio_key).to_owned(),
                    http_key: (*http_key).to_owned(),
                });
            }
            (Some(_), None) => TransportConfig::Stdio(self.stdio(table, t)?),
            (None, Some(_)) => TransportConfig::StreamableHttp(self.http(table, t)?),
            (None, None) => {
                return Err(ConfigError::MissingTransport {
                    path: self.path.to_owned(),
                    table: table_name,
                });
            }
        };

        let mut server = ServerConfig::new(name.to_owned(), transport);
        if let Some(value) = table.get("enabled") {
            self.set(&mut server.enabled, self.boolean(value, t, "enabled"));
        }
        if let Some(value) = table.get("required") {
            self.set(&mut server.required, self.boolean(value, t, "required"));
        }
        if let Some(value) = table.get("share_tool_listing") {
            let share = self.boolean(value, t, "share_tool_listing");
            self.set(&mut server.share_tool_listing, share);
        }
        match (
            table.get("startup_timeout_sec"),
            table.get("startup_timeout_ms"),
        ) {
            (Some(_), Some(_)) => {
                self.report(self.invalid(
                    t,
                    "startup_timeout_ms",
                    "absent when `startup_timeout_sec` is set (set only one)",
                ));
            }
            (Some(value), None) => {
                let timeout = self.seconds(value, t, "startup_timeout_sec", 1.0);
                self.set(&mut server.startup_timeout, timeout);
            }
            (None, Some(value)) => {
                let timeout = self.seconds(value, t, "startup_timeout_ms", 1e-3);
                self.set(&mut server.startup_timeout, timeout);
            }
            (None, None) => {}
        }
        if let Some(value) = table.get("tool_timeout_sec") {
            let timeout = self.seconds(value, t, "tool_timeout_sec", 1.0);
            self.set(&mut server.tool_timeout, timeout);
        }
        if let Some(value) = table.get("max_message_bytes") {
            let bytes = value
                .as_integer()
                .filter(|bytes| *bytes > 0)
                .and_then(|bytes| usize::try_from(bytes).ok())
                .ok_or_else(|| self.invalid(t, "max_message_bytes", "a positive number of bytes"));
            self.set(&mut server.max_message_bytes, bytes);
        }
        if let Some(value) = table.get("enabled_tools") {
            let tools = self.strings(value, t, "enabled_tools").map(Some);
            self.set(&mut server.enabled_tools, tools);
        }
        if let Some(value) = table.get("disabled_tools") {
            let tools = self.strings(value, t, "disabled_tools");
            self.set(&mut server.disabled_tools, tools);
        }
        if let Some(value) = table.get("environment")
            && let Some(environment) = self.ok(self.string(value, t, "environment"))
        {
            match environment.as_str() {
                "local" => server.environment = Environment::Local,
                other if !environments.contains(other) => {
                    self.report(ConfigError::UnknownEnvironment {
                        path: self.path.to_owned(),
                        table: table_name.clone(),
                        environment,
                    });
                }
                _ if matches!(server.transport, TransportConfig::StreamableHttp(_)) => {
                    self.report(self.invalid(
                        t,
                        "environment",
                        "`local` for a Streamable HTTP server (only stdio servers run in another environment)",
                    ));
                }
                _ => server.environment = Environment::Named(environment),
            }
        }
        Ok(server)
    }

    fn stdio(&self, table: &Table, t: &str) -> Result<StdioConfig, ConfigError> {
        let command = match table.get("command") {
            Some(value) => self.ok(self.string(value, t, "command")),
            None => Some(String::new()),
        };
        if command.as_deref() == Some("") {
            self.report(self.invalid(t, "command", "a non-empty string"));
        }
        let args = table
            .get("args")
            .and_then(|value| self.ok(self.strings(value, t, "args")));
        let env = table
            .get("env")
            .and_then(|value| self.ok(self.string_map(value, t, "env")));
        let env_vars = table
            .get("env_vars")
            .and_then(|value| self.ok(self.strings(value, t, "env_vars")));
        let cwd = table
            .get("cwd")
            .and_then(|value| self.ok(self.string(value, t, "cwd")));
        if let Some(command) = &command {
            self.check(
                t,
                "command",
                || "the value".to_owned(),
                os_string_problem(command),
            );
        }
        for (index, arg) in args.iter().flatten().enumerate() {
            self.check(t, "args", || item(index), os_string_problem(arg));
        }
        for (name, value) in env.iter().flatten() {
            self.check(t, "env", || variable(name), env_name_problem(name));
            let value_of = || format!("the value of {}", variable(name));
            self.check(t, "env", value_of, os_string_problem(value));
        }
        for name in env_vars.iter().flatten() {
            self.check(t, "env_vars", || variable(name), env_name_problem(name));
        }
        if let Some(cwd) = &cwd {
            self.check(t, "cwd", || "the value".to_owned(), os_string_problem(cwd));
        }
        Ok(StdioConfig {
            command: command.unwrap_or_default(),
            args: args.unwrap_or_default(),
            env: env.unwrap_or_default(),
            env_vars: env_vars.unwrap_or_default(),
            cwd: cwd.map(PathBuf::from),
        })
    }

    fn http(&self, table: &Table, t: &str) -> Result<HttpConfig, ConfigError> {
        let url = match table.get("url") {
            Some(value) => self.ok(self.string(value, t, "url")),
            None => Some(String::new()),
        };
        if let Some(url) = &url
            && let Some(expected) = url_problem(url)
        {
            self.report(self.invalid(t, "url", &expected));
        }
        let bearer_token_env_var = table
            .get("bearer_token_env_var")
            .and_then(|value| self.ok(self.string(value, t, "bearer_token_env_var")));
        if let Some(name) = &bearer_token_env_var {
            let key = "bearer_token_env_var";
            self.check(t, key, || variable(name), env_name_problem(name));
        }
        let http_headers = table
            .get("http_headers")
            .and_then(|value| self.ok(self.string_map(value, t, "http_headers")))
            .unwrap_or_default();
        for (name, value) in &http_headers {
            self.check(
                t,
                "http_headers",
                || header(name),
                header_name_problem(name),
            );
            let value_of = || format!("the value of {}", header(name));
            self.check(t, "http_headers", value_of, header_value_problem(value));
        }
        for name in http_headers
            .keys()
            .filter(|name| CREDENTIAL_HEADERS.contains(&name.to_ascii_lowercase().as_str()))
        {
            self.report(ConfigError::LiteralToken {
                path: self.path.to_owned(),
                table: t.to_owned(),
                key: format!("http_headers.{name}"),
            });
        }
        let env_http_headers = table
            .get("env_http_headers")
            .and_then(|value| self.ok(self.string_map(value, t, "env_http_headers")))
            .unwrap_or_default();
        for (name, variable_name) in &env_http_headers {
            self.check(
                t,
                "env_http_headers",
                || header(name),
                header_name_problem(name),
            );
            let for_header = || format!("{} for {}", variable(variable_name), header(name));
            self.check(
                t,
                "env_http_headers",
                for_header,
                env_name_problem(variable_name),
            );
        }
        Ok(HttpConfig {
            url: url.unwrap_or_default(),
            bearer_token_env_var,
            http_headers,
            env_http_headers,
            transport: HttpTransport::StreamableHttp,
        })
    }

    fn table<'v>(
        &self,
        value: &'v Value,
        table: &str,
        key: &str,
    ) -> Result<&'v Table, ConfigError> {
        value
            .as_table()
            .ok_or_else(|| self.invalid(table, key, "a table"))
    }

    fn boolean(&self, value: &Value, table: &str, key: &str) -> Result<bool, ConfigError> {
        value
            .as_bool()
            .ok_or_else(|| self.invalid(table, key, "`true` or `false`"))
    }

    fn string(&self, value: &Value, table: &str, key: &str) -> Result<String, ConfigError> {
        value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| self.invalid(table, key, "a string"))
    }

    fn strings(&self, value: &Value, table: &str, key: &str) -> Result<Vec<String>, ConfigError> {
        let invalid = || self.invalid(table, key, "an array of strings");
        value
            .as_array()
            .ok_or_else(invalid)?
            .iter()
            .map(|item| item.as_str().map(str::to_owned).ok_or_else(invalid))
            .collect()
    }

    fn string_map(
        &self,
        value: &Value,
        table: &str,
        key: &str,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let invalid = || self.invalid(table, key, "a table of strings");
        value
            .as_table()
            .ok_or_else(invalid)?
            .iter()
            .map(|(name, item)| {
                let item = item.as_str().ok_or_else(invalid)?;
                Ok((name.clone(), item.to_owned()))
            })
            .collect()
    }

    /// A positive duration given in `unit` seconds (integer or float).
    fn seconds(
        &self,
        value: &Value,
        table: &str,
        key: &str,
        unit: f64,
    ) -> Result<Duration, ConfigError> {
        let number = match value {
            Value::Integer(number) => *number as f64,
            Value::Float(number) => *number,
            _ => f64::NAN,
        };
        Duration::try_from_secs_f64(number * unit)
            .ok()
            .filter(|duration| !duration.is_zero())
            .ok_or_else(|| self.invalid(table, key, "a positive number"))
    }

    /// Records that `entry` of `key` cannot work, when a check found a `problem`.
    fn check(&self, table: &str, key: &str, entry: impl FnOnce() -> String, problem: Option<&str>) {
        if let Some(problem) = problem {
            self.report(ConfigError::InvalidEntry {
                path: self.path.to_owned(),
                table: table.to_owned(),
                key: key.to_owned(),
                entry: entry(),
                problem: problem.to_owned(),
            });
        }
    }

    fn invalid(&self, table: &str, key: &str, expected: &str) -> ConfigError {
        ConfigError::InvalidValue {
            path: self.path.to_owned(),
            table: table.to_owned(),
            key: key.to_owned(),
            expected: expected.to_owned(),
        }
    }

    fn unknown_key(&self, table: &str, key: &str) -> ConfigError {
        ConfigError::UnknownKey {
            path: self.path.to_owned(),
            table: table.to_owned(),
            key: key.to_owned(),
        }
    }
}

/// An item of an array, counted from 1.
fn item(index: usize) -> String {
    format!("item {}", index + 1)
}

/// An environment variable, by name. A name holding `=` is cut there: what follows may
/// be a value written in the wrong place, and a value may be secret.
fn variable(name: &str) -> String {
    match name.split_once('=') {
        _ if name.is_empty() => "a variable name".to_owned(),
        Some((name, _)) => format!("variable `{}=…`", shown(name)),
        None => format!("variable `{}`", shown(name)),
    }
}

/// An HTTP header, by name.
fn header(name: &str) -> String {
    if name.is_empty() {
        "a header name".to_owned()
    } else {
        format!("header `{}`", shown(name))
    }
}

#[cfg(test)]
mod tests;
