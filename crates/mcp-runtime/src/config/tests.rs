//! Tests of the configuration as a whole: every error of a file reported at once, and
//! values refused at load time because they could not work at run time.

use std::path::Path;

use super::parse::parse;

fn parse_err(text: &str) -> String {
    parse(text, Path::new("/etc/mcp.toml"))
        .unwrap_err()
        .to_string()
}

fn parse_ok(text: &str) -> super::Config {
    parse(text, Path::new("/etc/mcp.toml")).unwrap()
}

#[test]
fn every_error_in_a_file_is_reported_at_once() {
    let error = parse(
        r#"
            [environments.box]
            wrapper = []
            [mcp_servers.a]
            command = 3
            args = "-v"
            comand = "x"
            [mcp_servers.b]
            url = "https://x/mcp"
            bearer_token = "sk-1"
            required = "yes"
            [mcp_servers."bad name"]
            command = "x"
            "#,
        Path::new("/etc/mcp.toml"),
    )
    .unwrap_err();
    let messages: Vec<String> = error.errors().iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "`/etc/mcp.toml`: key `wrapper` in `[environments.box]` must be a non-empty array of strings",
            "`/etc/mcp.toml`: unknown key `comand` in `[mcp_servers.a]` (did you mean `command`?)",
            "`/etc/mcp.toml`: key `command` in `[mcp_servers.a]` must be a string",
            "`/etc/mcp.toml`: key `args` in `[mcp_servers.a]` must be an array of strings",
            "`/etc/mcp.toml`: key `bearer_token` in `[mcp_servers.b]` holds a literal token, which is refused (name an environment variable with `bearer_token_env_var`)",
            "`/etc/mcp.toml`: key `required` in `[mcp_servers.b]` must be `true` or `false`",
            "`/etc/mcp.toml`: server name `bad name` in `[mcp_servers]` may only contain letters, digits, `_` and `-`",
        ]
    );
    assert_eq!(error.to_string(), messages.join("\n"), "one line per error");
}

#[test]
fn a_server_naming_a_broken_environment_is_not_reported_again() {
    let error = parse(
            "[environments.box]\nwrapper = []\n[mcp_servers.a]\ncommand = \"x\"\nenvironment = \"box\"\n",
            Path::new("/etc/mcp.toml"),
        )
        .unwrap_err();
    assert_eq!(error.errors().len(), 1, "{error}");
}

#[test]
fn a_server_name_longer_than_256_bytes_is_an_error() {
    let longest = "n".repeat(256);
    let config = parse_ok(&format!("[mcp_servers.{longest}]\ncommand = \"x\"\n"));
    assert!(config.servers.contains_key(&longest));

    let name = "n".repeat(65_536);
    let message = parse_err(&format!("[mcp_servers.{name}]\ncommand = \"x\"\n"));
    assert_eq!(
        message,
        format!(
            "`/etc/mcp.toml`: server name `{}…` in `[mcp_servers]` is 65536 bytes long, more than the 256 allowed (use a shorter name)",
            "n".repeat(32)
        )
    );
}

#[test]
fn values_that_cannot_work_are_refused_at_load() {
    let nul = "can hold (remove it)";
    let cases = [
            (
                r#"command = "np\u0000x""#,
                format!("key `command` in `[mcp_servers.a]`: the value contains a NUL byte, which no program argument, path or environment variable {nul}"),
            ),
            (
                r#"command = "x"
                args = ["-y", "sk-secret\u0000"]"#,
                format!("key `args` in `[mcp_servers.a]`: item 2 contains a NUL byte, which no program argument, path or environment variable {nul}"),
            ),
            (
                r#"command = "x"
                cwd = "/srv\u0000""#,
                format!("key `cwd` in `[mcp_servers.a]`: the value contains a NUL byte, which no program argument, path or environment variable {nul}"),
            ),
            (
                r#"command = "x"
                env = { "MODE=ro" = "x" }"#,
                "key `env` in `[mcp_servers.a]`: variable `MODE=…` contains `=`, which no variable name can hold (write the variable's name alone)".to_owned(),
            ),
            (
                r#"command = "x"
                env = { TOKEN = "sk-secret\u0000" }"#,
                format!("key `env` in `[mcp_servers.a]`: the value of variable `TOKEN` contains a NUL byte, which no program argument, path or environment variable {nul}"),
            ),
            (
                r#"command = "x"
                env_vars = ["GITHUB_TOKEN=x"]"#,
                "key `env_vars` in `[mcp_servers.a]`: variable `GITHUB_TOKEN=…` contains `=`, which no variable name can hold (write the variable's name alone)".to_owned(),
            ),
            (
                r#"command = "x"
                env_vars = ["A\u0000B"]"#,
                format!("key `env_vars` in `[mcp_servers.a]`: variable `A\\u{{0}}B` contains a NUL byte, which no program argument, path or environment variable {nul}"),
            ),
            (
                r#"command = "x"
                env_vars = [""]"#,
                "key `env_vars` in `[mcp_servers.a]`: a variable name is empty (write the variable's name)".to_owned(),
            ),
            (
                r#"url = "http://""#,
                format!(
                    "key `url` in `[mcp_servers.a]` must be an `http://` or `https://` URL ({})",
                    if cfg!(feature = "http") { "empty host" } else { "empty string" }
                ),
            ),
            (
                r#"url = "https://exa mple.com/mcp""#,
                format!(
                    "key `url` in `[mcp_servers.a]` must be an `http://` or `https://` URL ({})",
                    if cfg!(feature = "http") {
                        "invalid international domain name"
                    } else {
                        "invalid uri character"
                    }
                ),
            ),
            (
                r#"url = "https://x/mcp"
                bearer_token_env_var = "TOKEN=sk-secret""#,
                "key `bearer_token_env_var` in `[mcp_servers.a]`: variable `TOKEN=…` contains `=`, which no variable name can hold (write the variable's name alone)".to_owned(),
            ),
            (
                r#"url = "https://x/mcp"
                http_headers = { "X Team" = "core" }"#,
                "key `http_headers` in `[mcp_servers.a]`: header `X Team` is not a valid HTTP header name (use letters, digits and `-`)".to_owned(),
            ),
            (
                r#"url = "https://x/mcp"
                http_headers = { X-Key = "sk-secret\r\nX-Other: 1" }"#,
                "key `http_headers` in `[mcp_servers.a]`: the value of header `X-Key` contains a line break, which an HTTP header cannot hold (remove it)".to_owned(),
            ),
            (
                r#"url = "https://x/mcp"
                http_headers = { X-Key = "sk-secret\u0000" }"#,
                "key `http_headers` in `[mcp_servers.a]`: the value of header `X-Key` contains a control character, which an HTTP header cannot hold (remove it)".to_owned(),
            ),
            (
                r#"url = "https://x/mcp"
                env_http_headers = { "X:Key" = "API_KEY" }"#,
                "key `env_http_headers` in `[mcp_servers.a]`: header `X:Key` is not a valid HTTP header name (use letters, digits and `-`)".to_owned(),
            ),
            (
                r#"url = "https://x/mcp"
                env_http_headers = { X-Key = "API_KEY=1" }"#,
                "key `env_http_headers` in `[mcp_servers.a]`: variable `API_KEY=…` for header `X-Key` contains `=`, which no variable name can hold (write the variable's name alone)".to_owned(),
            ),
        ];
    let mut wrong = Vec::new();
    for (body, expected) in &cases {
        let text = format!("[mcp_servers.a]\n{body}\n");
        let got = parse(&text, Path::new("/etc/mcp.toml")).map_err(|error| error.to_string());
        let expected = format!("`/etc/mcp.toml`: {expected}");
        if got.as_ref().err() != Some(&expected) {
            wrong.push(format!(
                "{body}\n  got:      {got:?}\n  expected: {expected}"
            ));
        }
        if let Err(message) = got {
            assert!(
                !message.contains("sk-secret"),
                "a value is echoed: {message}"
            );
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_wrapper_word_with_a_nul_byte_is_refused() {
    let message = parse_err("[environments.box]\nwrapper = [\"ssh\", \"h\\u0000\"]\n");
    assert_eq!(
        message,
        "`/etc/mcp.toml`: key `wrapper` in `[environments.box]`: item 2 contains a NUL byte, which no program argument, path or environment variable can hold (remove it)"
    );
}

mod properties {
    //! Properties of parsing over generated input: it never panics, every error names
    //! the file and points at a table and key that exist, and what it accepts can work.

    use std::path::Path;

    use proptest::prelude::*;
    use toml::{Table, Value};

    use super::parse;
    use crate::config::{Config, TransportConfig, error::ConfigError};

    const ORIGIN: &str = "/srv/my config/mcp.toml";
    /// Every key a server table may hold, as the parser knows them.
    fn server_keys() -> Vec<&'static str> {
        crate::config::keys::server_keys().collect()
    }

    /// Strings near the edges the checks care about, and any others.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[A-Za-z0-9_./:-]{0,12}",
            2 => ".{0,12}",
            1 => "[A-Z_=\\x00\\n\\r\\t -]{0,6}",
            1 => Just("http://".to_owned()),
            1 => Just("https://example.com/mcp".to_owned()),
            1 => Just("local".to_owned()),
            1 => Just("box".to_owned()),
        ]
    }

    /// Any TOML value except a date.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            text().prop_map(Value::String),
            any::<i64>().prop_map(Value::Integer),
            any::<f64>().prop_map(Value::Float),
            any::<bool>().prop_map(Value::Boolean),
        ];
        leaf.prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(text(), inner, 0..4)
                    .prop_map(|map| Value::Table(map.into_iter().collect())),
            ]
        })
    }

    /// A value of the type `key` expects, most of the time.
    fn value_for(key: &str) -> BoxedStrategy<Value> {
        let strings = prop::collection::vec(text().prop_map(Value::String), 0..4)
            .prop_map(Value::Array)
            .boxed();
        let string_table = prop::collection::btree_map(text(), text(), 0..4)
            .prop_map(|map| Value::Table(map.into_iter().map(|(k, v)| (k, v.into())).collect()))
            .boxed();
        let approval = prop_oneof![
            Just("auto"),
            Just("prompt"),
            Just("writes"),
            Just("approve"),
            Just("ask"),
        ]
        .prop_map(|mode| Value::String(mode.to_owned()));
        let typed = match key {
            "args" | "env_vars" | "enabled_tools" | "disabled_tools" | "scopes" => strings,
            "env" | "http_headers" | "env_http_headers" => string_table,
            "enabled" | "required" | "share_tool_listing" | "supports_parallel_tool_calls" => {
                any::<bool>().prop_map(Value::Boolean).boxed()
            }
            "default_tools_approval_mode" => approval.boxed(),
            "protocol" => prop_oneof![
                Just("auto"),
                Just("2026-07-28"),
                Just("2024-11-05"),
                Just("2099-01-01"),
            ]
            .prop_map(|value| Value::String(value.to_owned()))
            .boxed(),
            "connections" => prop_oneof![Just("session"), Just("shared"), Just("pooled")]
                .prop_map(|value| Value::String(value.to_owned()))
                .boxed(),
            "tools" => {
                let tool = (prop::option::of(approval), prop::option::of(-2i64..100_000)).prop_map(
                    |(mode, limit)| {
                        let mut table = Table::new();
                        if let Some(mode) = mode {
                            table.insert("approval_mode".into(), mode);
                        }
                        if let Some(limit) = limit {
                            table.insert("output_token_limit".into(), Value::Integer(limit));
                        }
                        Value::Table(table)
                    },
                );
                prop::collection::btree_map(text(), tool, 0..3)
                    .prop_map(|tools| Value::Table(tools.into_iter().collect()))
                    .boxed()
            }
            "oauth" => (
                prop::option::of(text()),
                prop::option::of(text()),
                prop::option::of(-1i64..70_000),
            )
                .prop_map(|(client_id, callback_url, callback_port)| {
                    let mut table = Table::new();
                    if let Some(client_id) = client_id {
                        table.insert("client_id".into(), client_id.into());
                    }
                    if let Some(callback_url) = callback_url {
                        table.insert("callback_url".into(), callback_url.into());
                    }
                    if let Some(port) = callback_port {
                        table.insert("callback_port".into(), Value::Integer(port));
                    }
                    Value::Table(table)
                })
                .boxed(),
            "startup_timeout_sec" | "startup_timeout_ms" | "tool_timeout_sec" => prop_oneof![
                (-2i64..100).prop_map(Value::Integer),
                any::<f64>().prop_map(Value::Float),
            ]
            .boxed(),
            _ => text().prop_map(Value::String).boxed(),
        };
        prop_oneof![3 => typed, 1 => value()].boxed()
    }

    /// A server table: known keys (and some unknown ones) with values of any type.
    fn server_table() -> impl Strategy<Value = Table> {
        let key = prop_oneof![
            4 => prop::sample::select(server_keys()).prop_map(str::to_owned),
            1 => "[a-z_]{1,10}",
        ];
        prop::collection::vec(key, 0..6).prop_flat_map(|keys| {
            keys.into_iter()
                .map(|key| value_for(&key).prop_map(move |value| (key.clone(), value)))
                .collect::<Vec<_>>()
                .prop_map(|entries| entries.into_iter().collect::<Table>())
        })
    }

    /// Mostly plain strings, sometimes any of [`text`].
    fn mostly_plain() -> impl Strategy<Value = String> {
        prop_oneof![8 => "[A-Za-z0-9_./-]{1,12}", 1 => text()]
    }

    /// A stdio or HTTP table with keys of the right types, mostly plain values.
    fn coherent_table() -> impl Strategy<Value = Table> {
        let strings = || prop::collection::vec(mostly_plain(), 0..3);
        let table = || prop::collection::btree_map(mostly_plain(), mostly_plain(), 0..3);
        let stdio = (
            mostly_plain(),
            strings(),
            table(),
            strings(),
            prop::option::of(mostly_plain()),
        )
            .prop_map(|(command, args, env, env_vars, cwd)| {
                let mut table = Table::new();
                table.insert("command".into(), command.into());
                table.insert("args".into(), args.into());
                table.insert(
                    "env".into(),
                    Value::Table(env.into_iter().map(|(k, v)| (k, v.into())).collect()),
                );
                table.insert("env_vars".into(), env_vars.into());
                if let Some(cwd) = cwd {
                    table.insert("cwd".into(), cwd.into());
                }
                table
            });
        let url = prop_oneof![
            4 => "https?://[a-z0-9.-]{1,10}(:[0-9]{1,5})?/[a-z/]{0,6}",
            1 => text(),
        ];
        let http = (url, prop::option::of(mostly_plain()), table(), table()).prop_map(
            |(url, token, headers, env_headers)| {
                let mut table = Table::new();
                table.insert("url".into(), url.into());
                if let Some(token) = token {
                    table.insert("bearer_token_env_var".into(), token.into());
                }
                let strings = |map: std::collections::BTreeMap<String, String>| {
                    Value::Table(map.into_iter().map(|(k, v)| (k, v.into())).collect())
                };
                table.insert("http_headers".into(), strings(headers));
                table.insert("env_http_headers".into(), strings(env_headers));
                table
            },
        );
        prop_oneof![stdio, http]
    }

    fn server_name() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => "[a-z0-9_-]{1,12}",
            1 => ".{0,8}",
            1 => (250usize..260).prop_map(|len| "n".repeat(len)),
        ]
    }

    /// A document of `[mcp_servers.NAME]` tables and maybe an `[environments.box]`.
    fn document() -> impl Strategy<Value = Table> {
        let table = prop_oneof![coherent_table(), server_table()];
        let servers = prop::collection::btree_map(server_name(), table, 0..4);
        let environment = prop::option::of(value_for("args"));
        (servers, environment).prop_map(|(servers, wrapper)| {
            let mut root = Table::new();
            let servers = servers
                .into_iter()
                .map(|(name, table)| (name, Value::Table(table)));
            root.insert("mcp_servers".into(), Value::Table(servers.collect()));
            if let Some(wrapper) = wrapper {
                let environment = Table::from_iter([("wrapper".to_owned(), wrapper)]);
                let environments = Table::from_iter([("box".to_owned(), environment.into())]);
                root.insert("environments".into(), environments.into());
            }
            root
        })
    }

    /// Every error of `result` names the file; none is nested.
    fn check_names_the_file(result: &Result<Config, ConfigError>) -> Result<(), TestCaseError> {
        if let Err(error) = result {
            prop_assert!(!error.errors().is_empty());
            for error in error.errors() {
                let nested = matches!(error, ConfigError::Several { .. });
                prop_assert!(!nested, "a nested error");
                let message = error.to_string();
                prop_assert!(message.starts_with(&format!("`{ORIGIN}`")), "{}", message);
            }
        }
        Ok(())
    }

    /// The keys of table `name`: a top-level one, `environments.x`, `mcp_servers.x`, or
    /// `mcp_servers.x.oauth`, `mcp_servers.x.tools` and `mcp_servers.x.tools.TOOL` (a
    /// server name has no `.`, a tool name may).
    fn keys_of<'a>(root: &'a Table, name: &str) -> Option<&'a Table> {
        let (top, rest) = name.split_once('.').unwrap_or((name, ""));
        let top = root.get(top)?.as_table()?;
        if rest.is_empty() {
            return Some(top);
        }
        // An environment's name may need quotes; a server's name never does.
        let (second, rest) = match rest.strip_prefix('"') {
            Some(_) => (rest, ""),
            None => rest.split_once('.').unwrap_or((rest, "")),
        };
        let second = top
            .iter()
            .find(|(name, _)| crate::config::keys::table_part(name) == second)?
            .1
            .as_table()?;
        if rest.is_empty() {
            return Some(second);
        }
        let (third, tool) = rest.split_once('.').unwrap_or((rest, ""));
        let third = second.get(third)?.as_table()?;
        if !rest.contains('.') {
            return Some(third);
        }
        third
            .iter()
            .find(|(name, _)| crate::config::keys::table_part(name) == tool)?
            .1
            .as_table()
    }

    /// `error` names a table of `root` and, where it concerns a key, a key of that table.
    fn check_points_at_the_document(
        root: &Table,
        error: &ConfigError,
    ) -> Result<(), TestCaseError> {
        let message = error.to_string();
        let has_key = |table: &str, key: &str| {
            keys_of(root, table).is_some_and(|table| table.contains_key(key))
        };
        match error {
            ConfigError::UnknownKey { table, key, .. }
            | ConfigError::InvalidValue { table, key, .. }
            | ConfigError::LiteralToken { table, key, .. }
            | ConfigError::InvalidEntry { table, key, .. } => {
                // A stdio table without `command` (or HTTP without `url`) names the key
                // it lacks.
                let required = matches!(key.as_str(), "command" | "url");
                prop_assert!(has_key(table, key) || required, "{}", message);
                prop_assert!(message.contains(&format!("`[{table}]`")), "{}", message);
                let key = crate::redact::shown(key);
                prop_assert!(message.contains(&format!("key `{key}`")), "{}", message);
                prop_assert!(!message.contains('\n'), "one line: {}", message);
            }
            ConfigError::UrlOnlyKey { table, key, .. } => {
                prop_assert!(has_key(table, key), "{}", message);
                prop_assert!(message.contains(&format!("`[{table}]`")), "{}", message);
            }
            ConfigError::MixedTransport {
                table,
                stdio_key,
                http_key,
                ..
            } => {
                prop_assert!(
                    has_key(table, stdio_key) && has_key(table, http_key),
                    "{}",
                    message
                );
                prop_assert!(message.contains(&format!("`[{table}]`")), "{}", message);
            }
            ConfigError::MissingTransport { table, .. } => {
                let table_keys = keys_of(root, table);
                prop_assert!(table_keys.is_some(), "{}", message);
                prop_assert!(message.contains(&format!("`[{table}]`")), "{}", message);
            }
            ConfigError::UnknownEnvironment { table, .. } => {
                prop_assert!(has_key(table, "environment"), "{}", message);
                prop_assert!(message.contains(&format!("`[{table}]`")), "{}", message);
            }
            ConfigError::InvalidServerName { name, .. }
            | ConfigError::ServerNameTooLong { name, .. } => {
                prop_assert!(!message.contains('\n'), "one line: {}", message);
                let servers = keys_of(root, "mcp_servers");
                prop_assert!(
                    servers.is_some_and(|servers| servers.contains_key(name)),
                    "{}",
                    message
                );
                prop_assert!(message.contains("`[mcp_servers]`"), "{}", message);
            }
            other => prop_assert!(false, "unexpected error for a generated table: {}", other),
        }
        Ok(())
    }

    /// What an accepted configuration holds can be passed to a program or sent over HTTP.
    fn check_can_work(config: &Config) -> Result<(), TestCaseError> {
        for server in config.servers.values() {
            prop_assert!(server.name.len() <= 256);
            for tool in server.tools.values() {
                prop_assert!(tool.output_token_limit.is_none_or(|limit| limit > 0));
            }
            prop_assert!(server.oauth.callback_port.is_none_or(|port| port > 0));
            #[cfg(feature = "http")]
            for url in server
                .oauth
                .callback_url
                .iter()
                .chain(&server.oauth.resource)
            {
                let url = url::Url::parse(url);
                prop_assert!(url.is_ok_and(|url| url.has_host()));
            }
            match &server.transport {
                TransportConfig::Stdio(stdio) => {
                    let words = std::iter::once(&stdio.command).chain(&stdio.args);
                    for word in words.chain(stdio.env.values()) {
                        prop_assert!(!word.contains('\0'));
                    }
                    for name in stdio.env.keys().chain(&stdio.env_vars) {
                        prop_assert!(!name.is_empty() && !name.contains(['=', '\0']));
                    }
                    let cwd = stdio
                        .cwd
                        .as_deref()
                        .map(|cwd| cwd.as_os_str().as_encoded_bytes());
                    prop_assert!(!cwd.is_some_and(|cwd| cwd.contains(&0)));
                }
                TransportConfig::StreamableHttp(http) => {
                    #[cfg(feature = "http")]
                    {
                        let url = url::Url::parse(&http.url);
                        prop_assert!(url.is_ok_and(|url| url.has_host()), "{}", http.url);
                    }
                    for (name, value) in &http.http_headers {
                        prop_assert!(http::HeaderName::try_from(name.as_str()).is_ok());
                        prop_assert!(http::HeaderValue::try_from(value.as_str()).is_ok());
                    }
                    for name in http.env_http_headers.keys() {
                        prop_assert!(http::HeaderName::try_from(name.as_str()).is_ok());
                    }
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(384))]

        #[test]
        fn any_text_parses_without_panic_and_errors_name_the_file(text in ".{0,200}") {
            check_names_the_file(&parse(&text, Path::new(ORIGIN)))?;
        }

        #[test]
        fn toml_ish_lines_parse_without_panic_and_errors_name_the_file(
            lines in prop::collection::vec(
                prop_oneof![
                    "\\[mcp_servers\\.[a-z\"\\\\ .]{0,6}\\]",
                    "\\[environments\\.[a-z]{0,4}\\]",
                    "(command|args|url|env|cwd|x) = (\"[^\"\\\\\\n]{0,8}\"|[0-9]{1,3}|true|\\[\"a\"\\]|\\{ A = \"b\" \\}|\"\\\\u0000\")",
                    ".{0,16}",
                ],
                0..12,
            )
        ) {
            check_names_the_file(&parse(&lines.join("\n"), Path::new(ORIGIN)))?;
        }

        #[test]
        fn every_error_names_the_file_table_and_key_and_what_is_accepted_can_work(
            root in document()
        ) {
            let Ok(text) = toml::to_string(&root) else {
                return Ok(());
            };
            let result = parse(&text, Path::new(ORIGIN));
            check_names_the_file(&result)?;
            match &result {
                Ok(config) => check_can_work(config)?,
                Err(error) => {
                    for error in error.errors() {
                        check_points_at_the_document(&root, error)?;
                    }
                }
            }
        }
    }
}

mod codex;
