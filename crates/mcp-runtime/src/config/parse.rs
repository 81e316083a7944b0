//! Key-by-key parsing of the TOML text into [`Config`].
//!
//! The document is first parsed as a plain TOML table; then every server table is
//! checked key by key against the key lists of [`super::keys`], so an unknown key, a mix
//! of transports or a value of the wrong type is reported with the file, the table and
//! the key. A literal `bearer_token` is refused outright (Codex refuses it too).
//!
//! An error does not stop the parse: [`File`] records it and parsing goes on with the
//! next key, entry or table, so that every error in a file is reported at once. Only
//! what the rest of a table depends on (its transport) ends that table early. A key that
//! loads but has no effect is recorded as a [`ConfigWarning`] instead.
//!
//! The transport keys are read in [`transport`], the keys of Codex's format that go
//! beyond a transport and its timeouts (tools, approval, OAuth, and the keys that only
//! warn) in [`codex`].

mod codex;
mod serve;
mod transport;

use std::{
    cell::RefCell,
    collections::{BTreeMap, BTreeSet},
    path::Path,
    time::Duration,
};

use toml::{Table, Value};

use super::{
    Config, ConfigWarning, CredentialsStore, Environment, EnvironmentConfig, MAX_SERVER_NAME_BYTES,
    Protocol, ServerConfig, TransportConfig,
    checks::os_string_problem,
    keys::{
        HTTP_KEYS, LITERAL_TOKEN_KEYS, STDIO_KEYS, URL_ONLY_KEYS, closest, server_keys, table_part,
    },
};
use crate::{config::error::ConfigError, redact::shown};

pub(super) fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    let root: Table = toml::from_str(text).map_err(|error| ConfigError::Syntax {
        path: origin.to_owned(),
        message: error.message().to_owned() + &location(text, error.span()),
    })?;
    let file = File {
        path: origin,
        errors: RefCell::default(),
        warnings: RefCell::default(),
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

    let mut oauth_credentials_store = CredentialsStore::default();
    if let Some(value) = root.get("mcp_oauth_credentials_store") {
        let store = match value.as_str() {
            Some("auto") => Ok(CredentialsStore::Auto),
            Some("keyring") => Ok(CredentialsStore::Keyring),
            Some("file") => Ok(CredentialsStore::File),
            _ => Err(ConfigError::InvalidTopLevelValue {
                path: origin.to_owned(),
                key: "mcp_oauth_credentials_store".to_owned(),
                expected: "`auto`, `keyring` or `file`".to_owned(),
            }),
        };
        file.set(&mut oauth_credentials_store, store);
    }

    let serve = root
        .get("serve")
        .map(|value| file.serve(value))
        .unwrap_or_default();

    let warnings = file.warnings.take();
    file.finish(Config {
        servers,
        environments,
        oauth_credentials_store,
        serve,
        warnings,
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

/// The file being parsed, the errors found in it so far and the warnings.
struct File<'a> {
    path: &'a Path,
    errors: RefCell<Vec<ConfigError>>,
    warnings: RefCell<Vec<ConfigWarning>>,
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

    /// Records that `key` of `table` loads but has no effect, and why: `reason`
    /// finishes a sentence about the key.
    fn warn(&self, table: &str, key: &str, reason: String) {
        self.warnings.borrow_mut().push(ConfigWarning {
            path: self.path.to_owned(),
            table: table.to_owned(),
            key: key.to_owned(),
            reason,
        });
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
        let table_name = format!("environments.{}", table_part(name));
        if name == "local" {
            return Err(self.invalid(
                "environments",
                name,
                "a name other than `local`, which always means this host",
            ));
        }
        let table = self.table(value, "environments", name)?;
        self.unknown_keys(table, &table_name, &["wrapper"]);
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
            } else if !server_keys().any(|known| known == key) {
                self.report(self.unknown_key(t, key, closest(key, server_keys())));
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
            (Some(_), None) => {
                for key in URL_ONLY_KEYS.iter().filter(|key| table.contains_key(**key)) {
                    self.report(ConfigError::UrlOnlyKey {
                        path: self.path.to_owned(),
                        table: table_name.clone(),
                        key: (*key).to_owned(),
                    });
                }
                TransportConfig::Stdio(self.stdio(table, t)?)
            }
            (None, Some(_)) => TransportConfig::StreamableHttp(self.http(table, t)?),
            (None, None) => {
                return Err(ConfigError::MissingTransport {
                    path: self.path.to_owned(),
                    table: table_name,
                });
            }
        };

        let mut server = ServerConfig::new(name.to_owned(), transport);
        self.common(table, t, &mut server, environments);
        self.codex_keys(table, t, &mut server);
        Ok(server)
    }

    /// The keys every server takes that are not about its transport or Codex's tools
    /// and approval settings.
    fn common(
        &self,
        table: &Table,
        t: &str,
        server: &mut ServerConfig,
        environments: &BTreeSet<&str>,
    ) {
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
        let seconds = table
            .get("startup_timeout_sec")
            .map(|value| self.seconds(value, t, "startup_timeout_sec", 1.0));
        let milliseconds = table
            .get("startup_timeout_ms")
            .map(|value| self.seconds(value, t, "startup_timeout_ms", 1e-3));
        // As in Codex, the seconds win when both are set.
        if seconds.is_some() && milliseconds.is_some() {
            self.warn(
                t,
                "startup_timeout_ms",
                "is ignored because `startup_timeout_sec` is also set, which wins as in Codex (remove one of them)"
                    .to_owned(),
            );
        }
        for timeout in [milliseconds, seconds].into_iter().flatten() {
            self.set(&mut server.startup_timeout, timeout);
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
        if let Some(value) = table.get("max_tools") {
            let tools = value
                .as_integer()
                .filter(|tools| *tools > 0)
                .and_then(|tools| usize::try_from(tools).ok())
                .ok_or_else(|| self.invalid(t, "max_tools", "a positive number of tools"));
            self.set(&mut server.max_tools, tools);
        }
        if let Some(value) = table.get("protocol") {
            let protocol = value
                .as_str()
                .and_then(Protocol::from_config)
                .ok_or_else(|| self.invalid(t, "protocol", &protocol_values()));
            self.set(&mut server.protocol, protocol);
        }
        if let Some(value) = table.get("connections") {
            let connections = match value.as_str() {
                Some("session") => Ok(super::Connections::Session),
                Some("shared") => Ok(super::Connections::Shared),
                _ => Err(self.invalid(t, "connections", "`session` or `shared`")),
            };
            self.set(&mut server.connections, connections);
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
                        table: t.to_owned(),
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
    }

    /// Reports every key of `table` not in `known`, with the closest known key.
    fn unknown_keys(&self, table: &Table, table_name: &str, known: &[&str]) {
        for key in table.keys().filter(|key| !known.contains(&key.as_str())) {
            let suggestion = closest(key, known.iter().copied());
            self.report(self.unknown_key(table_name, key, suggestion));
        }
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
        duration(value, unit)
            .filter(|duration| !duration.is_zero())
            .ok_or_else(|| self.invalid(table, key, "a positive number"))
    }

    /// Like [`Self::seconds`], zero allowed: for a key whose zero turns something off.
    fn seconds_or_zero(
        &self,
        value: &Value,
        table: &str,
        key: &str,
        unit: f64,
    ) -> Result<Duration, ConfigError> {
        duration(value, unit).ok_or_else(|| self.invalid(table, key, "zero or a positive number"))
    }

    /// Records that `entry` of `key` cannot work, when a check found a `problem`.
    fn check(&self, table: &str, key: &str, entry: impl FnOnce() -> String, problem: Option<&str>) {
        if let Some(problem) = problem {
            self.report(self.invalid_entry(table, key, entry(), problem));
        }
    }

    fn invalid_entry(&self, table: &str, key: &str, entry: String, problem: &str) -> ConfigError {
        ConfigError::InvalidEntry {
            path: self.path.to_owned(),
            table: table.to_owned(),
            key: key.to_owned(),
            entry,
            problem: problem.to_owned(),
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

    fn unknown_key(&self, table: &str, key: &str, suggestion: Option<&str>) -> ConfigError {
        ConfigError::UnknownKey {
            path: self.path.to_owned(),
            table: table.to_owned(),
            key: key.to_owned(),
            suggestion: suggestion.map(str::to_owned),
        }
    }
}

/// The values `protocol` accepts, for a message: `` `auto`, `2026-07-28` … or `2024-11-05` ``.
fn protocol_values() -> String {
    let values: Vec<String> = Protocol::ALL
        .iter()
        .map(|value| format!("`{value}`"))
        .collect();
    let (last, rest) = values.split_last().expect("there are values");
    format!("{} or {last}", rest.join(", "))
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

/// `value` (a number of `unit` seconds) as a duration, when it is one.
fn duration(value: &Value, unit: f64) -> Option<Duration> {
    let number = match value {
        Value::Integer(number) => *number as f64,
        Value::Float(number) => *number,
        _ => f64::NAN,
    };
    Duration::try_from_secs_f64(number * unit).ok()
}
