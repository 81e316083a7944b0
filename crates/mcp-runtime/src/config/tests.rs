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
            "`/etc/mcp.toml`: unknown key `comand` in `[mcp_servers.a]` (check its spelling)",
            "`/etc/mcp.toml`: key `command` in `[mcp_servers.a]` must be a string",
            "`/etc/mcp.toml`: key `args` in `[mcp_servers.a]` must be an array of strings",
            "`/etc/mcp.toml`: key `bearer_token` in `[mcp_servers.b]` holds a literal token, which is refused (name an environment variable with `bearer_token_env_var`)",
            "`/etc/mcp.toml`: key `required` in `[mcp_servers.b]` must be `true` or `false`",
            "`/etc/mcp.toml`: server name `bad name` in `[mcp_servers]` may only contain letters, digits, `_` and `-`",
        ]
    );
    assert_eq!(error.to_string(), messages.join("; "));
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
                "key `url` in `[mcp_servers.a]` must be an `http://` or `https://` URL (empty host)".to_owned(),
            ),
            (
                r#"url = "https://exa mple.com/mcp""#,
                "key `url` in `[mcp_servers.a]` must be an `http://` or `https://` URL (invalid international domain name)".to_owned(),
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
