//! The transport keys of a server table: stdio (`command`, `args`, `env`, `env_vars`,
//! `cwd`) or Streamable HTTP (`url`, `bearer_token_env_var`, `http_headers`,
//! `env_http_headers`, `transport`, `ca_certificate`).
//!
//! An `Authorization` entry in `http_headers` is accepted, as Codex accepts it: the
//! value is kept for the request and never shown (the `Debug` output of
//! [`HttpConfig`] lists header names only, and no message repeats a header value).

use std::{collections::BTreeMap, path::PathBuf};

use toml::{Table, Value};

use super::{File, header, item, variable};
use crate::{
    config::{
        HttpConfig, HttpTransport, StdioConfig,
        checks::{
            env_name_problem, header_name_problem, header_value_problem, os_string_problem,
            url_problem,
        },
        error::ConfigError,
        keys::{ENV_VAR_KEYS, closest},
    },
    redact::shown,
};

impl File<'_> {
    pub(super) fn stdio(&self, table: &Table, t: &str) -> Result<StdioConfig, ConfigError> {
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
            .and_then(|value| self.ok(self.env_vars(value, t)));
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
        let (remote, local): (Vec<_>, Vec<_>) = env_vars
            .into_iter()
            .flatten()
            .partition(|(_, is_remote)| *is_remote);
        for (name, _) in local.iter().chain(&remote) {
            self.check(t, "env_vars", || variable(name), env_name_problem(name));
        }
        if !remote.is_empty() {
            let names: Vec<String> = remote
                .iter()
                .map(|(name, _)| format!("`{}`", shown(name)))
                .collect();
            self.warn(
                t,
                "env_vars",
                format!(
                    "entries with `source = \"remote\"` ({}) are not forwarded: mcp-runtime forwards only variables of its own environment (set the value with `env`, or in the environment's `wrapper`)",
                    names.join(", ")
                ),
            );
        }
        if let Some(cwd) = &cwd {
            self.check(t, "cwd", || "the value".to_owned(), os_string_problem(cwd));
        }
        Ok(StdioConfig {
            command: command.unwrap_or_default(),
            args: args.unwrap_or_default(),
            env: env.unwrap_or_default(),
            env_vars: local.into_iter().map(|(name, _)| name).collect(),
            cwd: cwd.map(PathBuf::from),
        })
    }

    /// `env_vars`: the variables to forward from this process's environment, each with
    /// whether it is `remote`. An entry is a name, or a table `{ name = "…", source =
    /// "local" | "remote" }` (Codex's form). A `remote` variable is one Codex reads in
    /// the remote environment a server runs in; mcp-runtime forwards only its own
    /// variables, so such an entry loads with a warning and is not forwarded.
    fn env_vars(&self, value: &Value, t: &str) -> Result<Vec<(String, bool)>, ConfigError> {
        const KEY: &str = "env_vars";
        let items = value.as_array().ok_or_else(|| {
            self.invalid(
                t,
                KEY,
                "an array of variable names or of tables `{ name = \"…\", source = \"local\" }`",
            )
        })?;
        let mut names = Vec::new();
        for (index, entry) in items.iter().enumerate() {
            let (name, is_remote) = match entry {
                Value::String(name) => (name, false),
                Value::Table(entry) => {
                    for key in entry
                        .keys()
                        .filter(|key| !ENV_VAR_KEYS.contains(&key.as_str()))
                    {
                        let hint = match closest(key, ENV_VAR_KEYS.iter().copied()) {
                            Some(known) => format!("did you mean `{known}`?"),
                            None => "an entry takes `name` and `source`".to_owned(),
                        };
                        let problem = format!("has unknown key `{}` ({hint})", shown(key));
                        self.report(self.invalid_entry(t, KEY, item(index), &problem));
                    }
                    let is_remote = match entry.get("source") {
                        None => Some(false),
                        Some(Value::String(source)) if source == "local" => Some(false),
                        Some(Value::String(source)) if source == "remote" => Some(true),
                        Some(_) => {
                            let problem = "has a `source` other than `local` or `remote`";
                            self.report(self.invalid_entry(t, KEY, item(index), problem));
                            None
                        }
                    };
                    let Some(Value::String(name)) = entry.get("name") else {
                        let problem = "needs `name`, the variable's name as a string";
                        self.report(self.invalid_entry(t, KEY, item(index), problem));
                        continue;
                    };
                    let Some(is_remote) = is_remote else {
                        continue;
                    };
                    (name, is_remote)
                }
                _ => {
                    let problem = "is neither a variable name nor a table `{ name = \"…\", source = \"local\" }`";
                    self.report(self.invalid_entry(t, KEY, item(index), problem));
                    continue;
                }
            };
            names.push((name.clone(), is_remote));
        }
        Ok(names)
    }

    pub(super) fn http(&self, table: &Table, t: &str) -> Result<HttpConfig, ConfigError> {
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
        let mut http_headers = table
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
        let mut env_http_headers = table
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
        self.keep_each_header_once(
            t,
            &bearer_token_env_var,
            &mut http_headers,
            &mut env_http_headers,
        );
        let transport = match table.get("transport") {
            None => HttpTransport::StreamableHttp,
            Some(value) => match value.as_str() {
                Some("streamable_http") => HttpTransport::StreamableHttp,
                Some("sse") => HttpTransport::Sse,
                _ => {
                    self.report(self.invalid(t, "transport", "`streamable_http` or `sse`"));
                    HttpTransport::StreamableHttp
                }
            },
        };
        let ca_certificate = table
            .get("ca_certificate")
            .and_then(|value| self.ok(self.string(value, t, "ca_certificate")))
            .filter(|path| {
                let problem = match path.as_str() {
                    "" => Some("is empty (name a PEM file of CA certificates)"),
                    path => os_string_problem(path),
                };
                self.check(t, "ca_certificate", || "the value".to_owned(), problem);
                problem.is_none()
            })
            .map(|path| {
                let dir = self.path.parent().unwrap_or(std::path::Path::new(""));
                dir.join(path)
            });
        Ok(HttpConfig {
            url: url.unwrap_or_default(),
            bearer_token_env_var,
            http_headers,
            env_http_headers,
            transport,
            ca_certificate,
        })
    }
}

impl File<'_> {
    /// Makes every header set by one entry only. An `Authorization` entry next to
    /// `bearer_token_env_var` loads, as in Codex, but is not sent: the token is, and a
    /// warning says so (two `Authorization` headers would reach the server). Any other
    /// header set twice (two keys differing only in case, or the same name in
    /// `http_headers` and `env_http_headers`) is an error: which value to send would be
    /// an accident of the order of the tables.
    fn keep_each_header_once(
        &self,
        t: &str,
        bearer_token_env_var: &Option<String>,
        http_headers: &mut BTreeMap<String, String>,
        env_http_headers: &mut BTreeMap<String, String>,
    ) {
        if bearer_token_env_var.is_some() {
            for (key, headers) in [
                ("http_headers", &mut *http_headers),
                ("env_http_headers", &mut *env_http_headers),
            ] {
                headers.retain(|name, _| {
                    let credential = name.eq_ignore_ascii_case("authorization");
                    if credential {
                        self.warn(
                            t,
                            key,
                            format!(
                                "entry {} is not sent: `bearer_token_env_var` sets that header (keep one of them)",
                                header(name)
                            ),
                        );
                    }
                    !credential
                });
            }
        }
        let mut seen: BTreeMap<String, &'static str> = BTreeMap::new();
        let entries = http_headers
            .keys()
            .map(|name| ("http_headers", name))
            .chain(
                env_http_headers
                    .keys()
                    .map(|name| ("env_http_headers", name)),
            );
        for (key, name) in entries {
            if let Some(first) = seen.insert(name.to_ascii_lowercase(), key) {
                self.report(ConfigError::InvalidEntry {
                    path: self.path.to_owned(),
                    table: t.to_owned(),
                    key: key.to_owned(),
                    entry: header(name),
                    problem: format!(
                        "is already set in `{first}` (header names ignore case: keep one)"
                    ),
                });
            }
        }
    }
}
