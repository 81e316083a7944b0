use super::*;
use crate::config::{GrantType, HttpTransport, SigningAlgorithm};

fn parse_err(text: &str) -> String {
    let error = parse(text, Path::new("/etc/mcp.toml")).unwrap_err();
    error.to_string()
}

/// Every error of `text`, one message each, in the order they are reported.
fn parse_errors(text: &str) -> Vec<String> {
    let error = parse(text, Path::new("/etc/mcp.toml")).unwrap_err();
    error.errors().iter().map(ToString::to_string).collect()
}

fn parse_ok(text: &str) -> Config {
    parse(text, Path::new("/etc/mcp.toml")).unwrap()
}

#[test]
fn parses_every_stdio_key() {
    let config = parse_ok(
        r#"
        model = "ignored: unknown top-level keys are allowed"
        [mcp_servers.files]
        command = "npx"
        args = ["-y", "server"]
        env = { MODE = "ro" }
        env_vars = ["GITHUB_TOKEN"]
        cwd = "/tmp"
        enabled = true
        required = true
        startup_timeout_sec = 2.5
        tool_timeout_sec = 60
        enabled_tools = ["read", "list"]
        disabled_tools = ["list"]
        share_tool_listing = false
        max_message_bytes = 1048576
        max_tools = 20000
        connections = "shared"
        "#,
    );
    let server = &config.servers["files"];
    let TransportConfig::Stdio(stdio) = &server.transport else {
        panic!("expected stdio");
    };
    assert_eq!(stdio.command, "npx");
    assert_eq!(stdio.args, ["-y", "server"]);
    assert_eq!(stdio.env["MODE"], "ro");
    assert_eq!(stdio.env_vars, ["GITHUB_TOKEN"]);
    assert_eq!(stdio.cwd.as_deref(), Some(Path::new("/tmp")));
    assert!(server.required);
    assert!(!server.share_tool_listing);
    assert_eq!(server.max_message_bytes, 1024 * 1024);
    assert_eq!(server.max_tools, 20_000);
    assert_eq!(server.connections, crate::config::Connections::Shared);
    assert_eq!(server.startup_timeout, Duration::from_millis(2500));
    assert_eq!(server.tool_timeout, Duration::from_secs(60));
    assert!(server.exposes_tool("read"));
    assert!(
        !server.exposes_tool("list"),
        "disabled_tools applies after enabled_tools"
    );
    assert!(
        !server.exposes_tool("write"),
        "enabled_tools is an allow-list"
    );
}

#[test]
fn parses_every_http_key_and_defaults() {
    let config = parse_ok(
        r#"
        [mcp_servers.remote]
        url = "https://example.com/mcp"
        bearer_token_env_var = "REMOTE_TOKEN"
        http_headers = { "X-Team" = "core" }
        env_http_headers = { "X-Key" = "REMOTE_KEY" }
        "#,
    );
    let server = &config.servers["remote"];
    let TransportConfig::StreamableHttp(http) = &server.transport else {
        panic!("expected http");
    };
    assert_eq!(http.url, "https://example.com/mcp");
    assert_eq!(http.bearer_token_env_var.as_deref(), Some("REMOTE_TOKEN"));
    assert_eq!(http.http_headers["X-Team"], "core");
    assert_eq!(http.env_http_headers["X-Key"], "REMOTE_KEY");
    assert!(server.enabled);
    assert!(!server.required);
    assert!(server.share_tool_listing);
    assert_eq!(server.startup_timeout, Duration::from_secs(30));
    assert_eq!(server.tool_timeout, Duration::from_secs(300));
    assert_eq!(server.max_message_bytes, 64 * 1024 * 1024);
    assert_eq!(server.max_tools, 10_000);
    assert_eq!(server.environment, Environment::Local);
}

#[test]
fn mixing_transports_names_both_keys() {
    let message = parse_err(
        r#"
        [mcp_servers.both]
        command = "x"
        url = "http://localhost/mcp"
        "#,
    );
    assert_eq!(
        message,
        "`/etc/mcp.toml`: `[mcp_servers.both]` mixes stdio key `command` with HTTP key `url` (a server is either `command` or `url`)"
    );
}

#[test]
fn a_table_without_command_or_url_is_an_error() {
    let message = parse_err("[mcp_servers.empty]\nenabled = true\n");
    assert_eq!(
        message,
        "`/etc/mcp.toml`: `[mcp_servers.empty]` needs key `command` (a stdio server) or key `url` (a Streamable HTTP server)"
    );
}

#[test]
fn a_bad_server_name_is_an_error() {
    let message = parse_err("[mcp_servers.\"my server\"]\ncommand = \"x\"\n");
    assert_eq!(
        message,
        "`/etc/mcp.toml`: server name `my server` in `[mcp_servers]` may only contain letters, digits, `_` and `-`"
    );
}

#[test]
fn an_unknown_key_in_a_server_table_is_an_error_with_the_closest_known_key() {
    let message = parse_err("[mcp_servers.a]\ncommand = \"x\"\ncomand = \"y\"\n");
    assert_eq!(
        message,
        "`/etc/mcp.toml`: unknown key `comand` in `[mcp_servers.a]` (did you mean `command`?)"
    );
    let message = parse_err("[mcp_servers.a]\nurl = \"https://x/mcp\"\nheaders = {}\n");
    assert_eq!(
        message,
        "`/etc/mcp.toml`: unknown key `headers` in `[mcp_servers.a]` (did you mean `http_headers`?)"
    );
    let message = parse_err("[mcp_servers.a]\ncommand = \"x\"\nxyz = 1\n");
    assert_eq!(
        message,
        "`/etc/mcp.toml`: unknown key `xyz` in `[mcp_servers.a]` (check its spelling)"
    );
}

#[test]
fn unknown_keys_in_tool_oauth_and_env_var_tables_suggest_the_closest_key() {
    let messages = parse_errors(
        r#"
        [mcp_servers.a]
        command = "x"
        env_vars = [{ nme = "LANG" }]
        [mcp_servers.a.tools.search]
        aproval_mode = "approve"
        [mcp_servers.b]
        url = "https://x/mcp"
        [mcp_servers.b.oauth]
        client = "id"
        "#,
    );
    assert_eq!(
        messages,
        [
            "`/etc/mcp.toml`: key `env_vars` in `[mcp_servers.a]`: item 1 has unknown key `nme` (did you mean `name`?)",
            "`/etc/mcp.toml`: key `env_vars` in `[mcp_servers.a]`: item 1 needs `name`, the variable's name as a string",
            "`/etc/mcp.toml`: unknown key `aproval_mode` in `[mcp_servers.a.tools.search]` (did you mean `approval_mode`?)",
            "`/etc/mcp.toml`: unknown key `client` in `[mcp_servers.b.oauth]` (did you mean `client_id`?)",
        ]
    );
}

#[test]
fn a_confidential_or_machine_client_is_read_with_its_secret_named_not_written() {
    let config = parse_ok(
        r#"
        [mcp_servers.web]
        url = "https://x/mcp"
        oauth = { client_id = "app", client_secret_env_var = "APP_SECRET", client_metadata_url = "https://app.example/client.json" }
        [mcp_servers.robot]
        url = "https://y/mcp"
        [mcp_servers.robot.oauth]
        client_id = "robot"
        grant_type = "client_credentials"
        private_key_env_var = "ROBOT_KEY"
        signing_algorithm = "RS256"
        "#,
    );
    let web = &config.servers["web"].oauth;
    assert_eq!(web.client_secret_env_var.as_deref(), Some("APP_SECRET"));
    assert_eq!(
        web.client_metadata_url.as_deref(),
        Some("https://app.example/client.json")
    );
    assert_eq!(web.grant_type, GrantType::AuthorizationCode);
    let robot = &config.servers["robot"].oauth;
    assert_eq!(robot.grant_type, GrantType::ClientCredentials);
    assert_eq!(robot.private_key_env_var.as_deref(), Some("ROBOT_KEY"));
    assert_eq!(robot.signing_algorithm, SigningAlgorithm::Rs256);
    assert_eq!(robot.signing_algorithm.as_str(), "RS256");
}

#[test]
fn a_client_secret_or_key_without_its_client_is_refused() {
    let messages = parse_errors(
        r#"
        [mcp_servers.a]
        url = "https://x/mcp"
        oauth = { client_secret_env_var = "S", client_metadata_url = "http://x/c.json" }
        [mcp_servers.b]
        url = "https://x/mcp"
        oauth = { client_id = "b", grant_type = "client_credentials" }
        [mcp_servers.c]
        url = "https://x/mcp"
        oauth = { client_id = "c", private_key_env_var = "K=1", signing_algorithm = "HS256" }
        [mcp_servers.d]
        url = "https://x/mcp"
        oauth = { client_id = "d", client_secret_env_var = "S", private_key_env_var = "K", grant_type = "client_credentials" }
        "#,
    );
    let f = "`/etc/mcp.toml`:";
    assert_eq!(
        messages,
        [
            format!(
                "{f} key `client_metadata_url` in `[mcp_servers.a.oauth]` must be an `https` URL with a path to the client's metadata document"
            ),
            format!(
                "{f} key `client_secret_env_var` in `[mcp_servers.a.oauth]` must be set with `client_id`: the secret is a pre-registered client's"
            ),
            format!(
                "{f} key `grant_type` in `[mcp_servers.b.oauth]` must be `authorization_code` here, or given a `client_id` with `client_secret_env_var` or `private_key_env_var`: a machine client authenticates itself"
            ),
            format!(
                "{f} key `private_key_env_var` in `[mcp_servers.c.oauth]`: variable `K=…` contains `=`, which no variable name can hold (write the variable's name alone)"
            ),
            format!(
                "{f} key `signing_algorithm` in `[mcp_servers.c.oauth]` must be one of `ES256`, `ES384`, `RS256`, `RS384` and `RS512`"
            ),
            format!(
                "{f} key `private_key_env_var` in `[mcp_servers.c.oauth]` must be set with `grant_type = \"client_credentials\"`: the key authenticates a machine client"
            ),
            format!(
                "{f} key `private_key_env_var` in `[mcp_servers.d.oauth]` must be set without `client_secret_env_var`: a client authenticates with one of them"
            ),
        ]
    );
}

#[test]
fn a_workload_names_where_its_identity_token_is_read() {
    let config = parse_ok(
        r#"
        [mcp_servers.pod]
        url = "https://x/mcp"
        oauth = { client_id = "pod", grant_type = "jwt_bearer", assertion_file = "tokens/sa.jwt" }
        [mcp_servers.job]
        url = "https://y/mcp"
        oauth = { client_id = "job", grant_type = "jwt_bearer", assertion_env_var = "JOB_ID_TOKEN" }
        "#,
    );
    let pod = &config.servers["pod"].oauth;
    assert_eq!(pod.grant_type, GrantType::JwtBearer);
    assert!(pod.grant_type.is_machine());
    assert_eq!(
        pod.assertion_file.as_deref(),
        Some(std::path::Path::new("/etc/tokens/sa.jwt")),
        "relative to the configuration file"
    );
    let job = &config.servers["job"].oauth;
    assert_eq!(job.assertion_env_var.as_deref(), Some("JOB_ID_TOKEN"));
    assert_eq!(job.assertion_file, None);
    assert!(!GrantType::AuthorizationCode.is_machine());
}

#[test]
fn a_workload_without_exactly_one_identity_token_or_with_a_secret_is_refused() {
    let messages = parse_errors(
        r#"
        [mcp_servers.a]
        url = "https://x/mcp"
        oauth = { client_id = "a", grant_type = "jwt_bearer" }
        [mcp_servers.b]
        url = "https://x/mcp"
        oauth = { client_id = "b", grant_type = "jwt_bearer", assertion_env_var = "T", assertion_file = "t.jwt" }
        [mcp_servers.c]
        url = "https://x/mcp"
        oauth = { client_id = "c", assertion_env_var = "T" }
        [mcp_servers.d]
        url = "https://x/mcp"
        oauth = { client_id = "d", grant_type = "jwt_bearer", assertion_file = "", client_secret_env_var = "S" }
        [mcp_servers.e]
        url = "https://x/mcp"
        oauth = { client_id = "e", grant_type = "jwt_bearer", assertion_env_var = "T", client_secret_env_var = "S" }
        "#,
    );
    let f = "`/etc/mcp.toml`:";
    let no_token = "must be `authorization_code` here, or given a `client_id` with one of `assertion_env_var` and `assertion_file`: a workload presents its identity token";
    assert_eq!(
        messages,
        [
            format!("{f} key `grant_type` in `[mcp_servers.a.oauth]` {no_token}"),
            format!("{f} key `grant_type` in `[mcp_servers.b.oauth]` {no_token}"),
            format!(
                "{f} key `assertion_env_var` in `[mcp_servers.c.oauth]` must be set with `grant_type = \"jwt_bearer\"`: the assertion is a workload's identity token"
            ),
            format!(
                "{f} key `assertion_file` in `[mcp_servers.d.oauth]`: the value is empty (name the file holding the workload's identity token)"
            ),
            format!("{f} key `grant_type` in `[mcp_servers.d.oauth]` {no_token}"),
            format!(
                "{f} key `client_secret_env_var` in `[mcp_servers.e.oauth]` must be left out with `grant_type = \"jwt_bearer\"`: the workload's identity token is its credential"
            ),
        ]
    );
}

#[test]
fn a_literal_bearer_token_is_refused() {
    let message =
        parse_err("[mcp_servers.a]\nurl = \"https://x/mcp\"\nbearer_token = \"sk-123\"\n");
    assert!(
        message.contains("key `bearer_token` in `[mcp_servers.a]`"),
        "{message}"
    );
    assert!(message.contains("bearer_token_env_var"), "{message}");
    assert!(
        !message.contains("sk-123"),
        "the token must not be echoed: {message}"
    );
}

#[test]
fn an_authorization_header_is_accepted_and_its_value_never_shown() {
    let config = parse_ok(
        "[mcp_servers.a]\nurl = \"https://x/mcp\"\nhttp_headers = { Authorization = \"Bearer sk-1\", Proxy-Authorization = \"Basic sk-2\" }\n",
    );
    let TransportConfig::StreamableHttp(http) = &config.servers["a"].transport else {
        panic!("expected http");
    };
    assert_eq!(http.http_headers["Authorization"], "Bearer sk-1");
    let shown = format!("{config:?}");
    assert!(shown.contains("Authorization"), "{shown}");
    assert!(
        !shown.contains("sk-1") && !shown.contains("sk-2"),
        "{shown}"
    );

    // A message about the header names it, never its value.
    let message = parse_err(
        "[mcp_servers.a]\nurl = \"https://x/mcp\"\nhttp_headers = { Authorization = \"Bearer sk-1\\n\" }\n",
    );
    assert!(message.contains("header `Authorization`"), "{message}");
    assert!(!message.contains("sk-1"), "{message}");
}

#[test]
fn a_header_is_set_in_one_place_only() {
    let message = parse_err(concat!(
        "[mcp_servers.a]\nurl = \"https://x/mcp\"\n",
        "http_headers = { X-Team = \"a\", x-team = \"b\" }\n",
        "env_http_headers = { X-TEAM = \"TEAM\" }\n",
    ));
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(
        lines,
        [
            "`/etc/mcp.toml`: key `http_headers` in `[mcp_servers.a]`: header `x-team` is already set in `http_headers` (header names ignore case: keep one)",
            "`/etc/mcp.toml`: key `env_http_headers` in `[mcp_servers.a]`: header `X-TEAM` is already set in `http_headers` (header names ignore case: keep one)",
        ],
        "{message}"
    );
}

#[test]
fn the_bearer_token_wins_over_an_authorization_header_with_a_warning() {
    let config = parse_ok(concat!(
        "[mcp_servers.a]\nurl = \"https://x/mcp\"\nbearer_token_env_var = \"TOKEN\"\n",
        "http_headers = { Authorization = \"Bearer sk-1\", X-Team = \"a\" }\n",
        "env_http_headers = { authorization = \"OTHER\" }\n",
    ));
    let TransportConfig::StreamableHttp(http) = &config.servers["a"].transport else {
        panic!("expected http");
    };
    assert_eq!(http.http_headers.keys().collect::<Vec<_>>(), ["X-Team"]);
    assert!(http.env_http_headers.is_empty());
    let warnings: Vec<String> = config.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "/etc/mcp.toml: [mcp_servers.a] `http_headers` entry header `Authorization` is not sent: `bearer_token_env_var` sets that header (keep one of them)",
            "/etc/mcp.toml: [mcp_servers.a] `env_http_headers` entry header `authorization` is not sent: `bearer_token_env_var` sets that header (keep one of them)",
        ]
    );
    assert!(!warnings.concat().contains("sk-1"));
}

#[test]
fn with_both_startup_timeouts_the_seconds_win_with_a_warning() {
    let config = parse_ok(
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 2\nstartup_timeout_ms = 500\n",
    );
    assert_eq!(config.servers["a"].startup_timeout, Duration::from_secs(2));
    let warnings: Vec<String> = config.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "/etc/mcp.toml: [mcp_servers.a] `startup_timeout_ms` is ignored because `startup_timeout_sec` is also set, which wins as in Codex (remove one of them)"
        ]
    );
}

#[test]
fn wrong_types_name_the_key_and_what_it_must_be() {
    let cases = [
        (
            "command = 3",
            "key `command` in `[mcp_servers.a]` must be a string",
        ),
        (
            "command = \"x\"\nargs = \"-v\"",
            "key `args` in `[mcp_servers.a]` must be an array of strings",
        ),
        (
            "command = \"x\"\nstartup_timeout_sec = 0",
            "key `startup_timeout_sec` in `[mcp_servers.a]` must be a positive number",
        ),
        (
            "command = \"x\"\ntool_timeout_sec = -1",
            "key `tool_timeout_sec` in `[mcp_servers.a]` must be a positive number",
        ),
        (
            "command = \"x\"\nenv = { A = 1 }",
            "key `env` in `[mcp_servers.a]` must be a table of strings",
        ),
        (
            "command = \"x\"\nrequired = \"yes\"",
            "key `required` in `[mcp_servers.a]` must be `true` or `false`",
        ),
        (
            "command = \"x\"\nmax_message_bytes = 0",
            "key `max_message_bytes` in `[mcp_servers.a]` must be a positive number of bytes",
        ),
        (
            "command = \"x\"\nmax_message_bytes = 1.5",
            "key `max_message_bytes` in `[mcp_servers.a]` must be a positive number of bytes",
        ),
        (
            "command = \"x\"\nmax_tools = 0",
            "key `max_tools` in `[mcp_servers.a]` must be a positive number of tools",
        ),
        (
            "url = \"ftp://x\"",
            "key `url` in `[mcp_servers.a]` must be an `http://` or `https://` URL",
        ),
    ];
    for (body, expected) in cases {
        let message = parse_err(&format!("[mcp_servers.a]\n{body}\n"));
        assert_eq!(
            message,
            format!("`/etc/mcp.toml`: {expected}"),
            "for {body:?}"
        );
    }
}

#[test]
fn environments_are_parsed_and_checked() {
    let config = parse_ok(
        r#"
        [environments.devbox]
        wrapper = ["ssh", "-T", "devbox"]
        [mcp_servers.remote]
        command = "server"
        environment = "devbox"
        [mcp_servers.here]
        command = "server"
        environment = "local"
        "#,
    );
    assert_eq!(
        config.servers["remote"].environment,
        Environment::Named("devbox".into())
    );
    assert_eq!(
        config.environments["devbox"].wrapper,
        ["ssh", "-T", "devbox"]
    );
    assert_eq!(config.servers["here"].environment, Environment::Local);

    let message = parse_err("[mcp_servers.a]\ncommand = \"x\"\nenvironment = \"nowhere\"\n");
    assert_eq!(
        message,
        "`/etc/mcp.toml`: key `environment` in `[mcp_servers.a]` names `nowhere`, which is neither `local` nor a defined `[environments.nowhere]`"
    );
    let message = parse_err("[environments.box]\nwrapper = [\"ssh\"]\nshell = \"sh\"\n");
    assert_eq!(
        message,
        "`/etc/mcp.toml`: unknown key `shell` in `[environments.box]` (check its spelling)"
    );
}

#[test]
fn invalid_toml_reports_the_position() {
    let message = parse_err("[mcp_servers.a]\ncommand = \n");
    assert!(
        message.starts_with("`/etc/mcp.toml` is not valid TOML:"),
        "{message}"
    );
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn codex_startup_timeout_ms_is_accepted() {
    let config = parse_ok("[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = 1500\n");
    assert_eq!(
        config.servers["a"].startup_timeout,
        Duration::from_millis(1500)
    );
}

#[test]
fn env_vars_entries_may_be_tables_and_remote_ones_are_not_forwarded() {
    let config = parse_ok(
        r#"
        [mcp_servers.a]
        command = "x"
        env_vars = ["HOME", { name = "LANG", source = "local" }, { name = "TZ" }, { name = "TOKEN", source = "remote" }, { name = "KEY", source = "remote" }]
        "#,
    );
    let TransportConfig::Stdio(stdio) = &config.servers["a"].transport else {
        panic!("expected stdio");
    };
    assert_eq!(stdio.env_vars, ["HOME", "LANG", "TZ"]);
    let warnings: Vec<String> = config.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "/etc/mcp.toml: [mcp_servers.a] `env_vars` entries with `source = \"remote\"` (`TOKEN`, `KEY`) are not forwarded: mcp-runtime forwards only variables of its own environment (set the value with `env`, or in the environment's `wrapper`)"
        ]
    );
}

#[test]
fn a_bad_env_vars_entry_names_the_item_and_what_it_must_be() {
    let messages = parse_errors(
        r#"
        [mcp_servers.a]
        command = "x"
        env_vars = [{ name = "LANG", source = "cloud" }, 3, { source = "local" }, { name = "A=B" }]
        "#,
    );
    assert_eq!(
        messages,
        [
            "`/etc/mcp.toml`: key `env_vars` in `[mcp_servers.a]`: item 1 has a `source` other than `local` or `remote`",
            "`/etc/mcp.toml`: key `env_vars` in `[mcp_servers.a]`: item 2 is neither a variable name nor a table `{ name = \"…\", source = \"local\" }`",
            "`/etc/mcp.toml`: key `env_vars` in `[mcp_servers.a]`: item 3 needs `name`, the variable's name as a string",
            "`/etc/mcp.toml`: key `env_vars` in `[mcp_servers.a]`: variable `A=…` contains `=`, which no variable name can hold (write the variable's name alone)",
        ]
    );
}

#[test]
fn the_transport_key_selects_the_http_transport() {
    let config = parse_ok(
        r#"
        [mcp_servers.plain]
        url = "https://x/mcp"
        [mcp_servers.streamable]
        url = "https://x/mcp"
        transport = "streamable_http"
        [mcp_servers.legacy]
        url = "https://x/sse"
        transport = "sse"
        "#,
    );
    let transport = |name: &str| match &config.servers[name].transport {
        TransportConfig::StreamableHttp(http) => http.transport,
        TransportConfig::Stdio(_) => panic!("expected http"),
    };
    assert_eq!(transport("plain"), HttpTransport::StreamableHttp);
    assert_eq!(transport("streamable"), HttpTransport::StreamableHttp);
    assert_eq!(transport("legacy"), HttpTransport::Sse);

    assert_eq!(
        parse_err("[mcp_servers.a]\nurl = \"https://x/mcp\"\ntransport = \"websocket\"\n"),
        "`/etc/mcp.toml`: key `transport` in `[mcp_servers.a]` must be `streamable_http` or `sse`"
    );
    assert_eq!(
        parse_err("[mcp_servers.a]\ncommand = \"x\"\ntransport = \"sse\"\n"),
        "`/etc/mcp.toml`: key `transport` in `[mcp_servers.a]` applies only to a server with `url` (remove it from this stdio server)"
    );
}

#[test]
fn ca_certificate_is_a_path_relative_to_the_file_for_a_server_with_url() {
    let config = parse_ok(
        r#"
        [mcp_servers.relative]
        url = "https://x/mcp"
        ca_certificate = "certs/corp.pem"
        [mcp_servers.absolute]
        url = "https://x/mcp"
        ca_certificate = "/opt/ca.pem"
        [mcp_servers.none]
        url = "https://x/mcp"
        "#,
    );
    let ca = |name: &str| match &config.servers[name].transport {
        TransportConfig::StreamableHttp(http) => http.ca_certificate.clone(),
        TransportConfig::Stdio(_) => panic!("expected http"),
    };
    assert_eq!(ca("relative"), Some("/etc/certs/corp.pem".into()));
    assert_eq!(ca("absolute"), Some("/opt/ca.pem".into()));
    assert_eq!(ca("none"), None);

    assert_eq!(
        parse_err("[mcp_servers.a]\nurl = \"https://x/mcp\"\nca_certificate = \"\"\n"),
        "`/etc/mcp.toml`: key `ca_certificate` in `[mcp_servers.a]`: the value is empty (name a PEM file of CA certificates)"
    );
    assert_eq!(
        parse_err("[mcp_servers.a]\ncommand = \"x\"\nca_certificate = \"/ca.pem\"\n"),
        "`/etc/mcp.toml`: key `ca_certificate` in `[mcp_servers.a]` applies only to a server with `url` (remove it from this stdio server)"
    );
}

#[test]
fn a_bad_approval_mode_names_the_values_codex_takes() {
    assert_eq!(
        parse_err("[mcp_servers.a]\ncommand = \"x\"\ndefault_tools_approval_mode = \"never\"\n"),
        "`/etc/mcp.toml`: key `default_tools_approval_mode` in `[mcp_servers.a]` must be one of `auto`, `prompt`, `writes` or `approve`"
    );
    assert_eq!(
        parse_err(
            "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a.tools.\"read.file\"]\napproval_mode = true\n"
        ),
        "`/etc/mcp.toml`: key `approval_mode` in `[mcp_servers.a.tools.\"read.file\"]` must be one of `auto`, `prompt`, `writes` or `approve`"
    );
}

#[test]
fn every_error_of_codex_keys_is_reported_at_once() {
    let messages = parse_errors(
        r#"
        [mcp_servers.a]
        command = "x"
        oauth = { client_id = "id" }
        oauth_resource = "https://x/"
        auth = "oauth"
        http_headers_helper = "helper"
        supports_parallel_tool_calls = "yes"
        tools = { search = { output_token_limit = 0 }, list = "approve" }
        [mcp_servers.b]
        url = "https://x/mcp"
        http_headers_helper = "  "
        auth = "token"
        oauth = { client_id = "", callback_url = "localhost:1", callback_port = 70000 }
        omit_tools_from = ["direct", "sideways"]
        environment_id = 3
        "#,
    );
    let f = "`/etc/mcp.toml`:";
    assert_eq!(
        messages,
        [
            format!(
                "{f} key `http_headers_helper` in `[mcp_servers.a]` applies only to a server with `url` (remove it from this stdio server)"
            ),
            format!(
                "{f} key `auth` in `[mcp_servers.a]` applies only to a server with `url` (remove it from this stdio server)"
            ),
            format!(
                "{f} key `oauth` in `[mcp_servers.a]` applies only to a server with `url` (remove it from this stdio server)"
            ),
            format!(
                "{f} key `oauth_resource` in `[mcp_servers.a]` applies only to a server with `url` (remove it from this stdio server)"
            ),
            format!(
                "{f} key `supports_parallel_tool_calls` in `[mcp_servers.a]` must be `true` or `false`"
            ),
            format!("{f} key `list` in `[mcp_servers.a.tools]` must be a table"),
            format!(
                "{f} key `output_token_limit` in `[mcp_servers.a.tools.search]` must be a positive number of tokens"
            ),
            format!("{f} key `client_id` in `[mcp_servers.b.oauth]` must be a non-empty string"),
            format!(
                "{f} key `callback_url` in `[mcp_servers.b.oauth]` must be an `http://` or `https://` URL"
            ),
            format!(
                "{f} key `callback_port` in `[mcp_servers.b.oauth]` must be a port number from 1 to 65535"
            ),
            format!(
                "{f} key `http_headers_helper` in `[mcp_servers.b]` must be a non-empty string"
            ),
            format!("{f} key `auth` in `[mcp_servers.b]` must be `oauth` or `chatgpt`"),
            format!("{f} key `environment_id` in `[mcp_servers.b]` must be a string"),
            format!(
                "{f} key `omit_tools_from` in `[mcp_servers.b]` must be an array of `direct`, `deferred` and `code_mode`"
            ),
        ]
    );
}

#[test]
fn a_bad_top_level_credentials_store_is_an_error() {
    assert_eq!(
        parse_ok("mcp_oauth_credentials_store = \"file\"\n").oauth_credentials_store,
        CredentialsStore::File
    );
    assert_eq!(
        parse_err("mcp_oauth_credentials_store = \"vault\"\n"),
        "`/etc/mcp.toml`: top-level key `mcp_oauth_credentials_store` must be `auto`, `keyring` or `file`"
    );
}

#[test]
fn protocol_is_auto_unless_a_revision_is_pinned() {
    let config = parse_ok(
        r#"
        [mcp_servers.plain]
        command = "server"
        [mcp_servers.modern]
        command = "server"
        protocol = "2026-07-28"
        [mcp_servers.old]
        url = "https://example.com/mcp"
        protocol = "2024-11-05"
        [mcp_servers.explicit]
        command = "server"
        protocol = "auto"
        "#,
    );
    assert_eq!(config.servers["plain"].protocol, Protocol::Auto);
    assert_eq!(config.servers["modern"].protocol, Protocol::V2026_07_28);
    assert_eq!(config.servers["old"].protocol, Protocol::V2024_11_05);
    assert_eq!(config.servers["explicit"].protocol, Protocol::Auto);
    for value in Protocol::ALL {
        assert_eq!(Protocol::from_config(value.as_str()), Some(value));
    }
}

#[test]
fn a_protocol_mcp_runtime_does_not_speak_is_an_error_naming_the_accepted_values() {
    for value in [r#""2099-01-01""#, r#""latest""#, "20260728"] {
        assert_eq!(
            parse_err(&format!(
                "[mcp_servers.a]\ncommand = \"server\"\nprotocol = {value}\n"
            )),
            "`/etc/mcp.toml`: key `protocol` in `[mcp_servers.a]` must be `auto`, `2026-07-28`, `2025-11-25`, `2025-06-18`, `2025-03-26` or `2024-11-05`"
        );
    }
}

#[test]
fn connections_are_per_session_unless_a_server_says_shared() {
    use crate::config::Connections;
    let config = parse_ok(
        "[mcp_servers.own]\ncommand = \"server\"\n\
         [mcp_servers.one]\ncommand = \"server\"\nconnections = \"shared\"\n\
         [mcp_servers.each]\ncommand = \"server\"\nconnections = \"session\"\n",
    );
    assert_eq!(config.servers["own"].connections, Connections::Session);
    assert_eq!(config.servers["one"].connections, Connections::Shared);
    assert_eq!(config.servers["each"].connections, Connections::Session);
    for value in [r#""pooled""#, "true"] {
        assert_eq!(
            parse_err(&format!(
                "[mcp_servers.a]\ncommand = \"server\"\nconnections = {value}\n"
            )),
            "`/etc/mcp.toml`: key `connections` in `[mcp_servers.a]` must be `session` or `shared`"
        );
    }
}

#[test]
fn the_serve_table_is_read_key_by_key() {
    use crate::config::{ServeAuth, ServeConfig, ToolNames};
    assert_eq!(parse_ok("").serve, ServeConfig::default());
    let serve = parse_ok(
        "[serve]\ntool_names = \"original\"\nsession_idle_sec = 30\nlisting_burst_sec = 0\n\
         expose = \"search\"\nalways_expose = [\"mcp__a__b\"]\nmax_exposed_tools = 8\n\
         max_sessions = 5\nmax_request_bytes = 1024\nallowed_hosts = [\"gw.example.com\"]\n\
         allowed_origins = [\"https://app.example.com\"]\n\
         [serve.auth]\nbearer_token_env_var = \"GATEWAY_TOKEN\"\n",
    )
    .serve;
    assert_eq!(serve.tool_names, ToolNames::Original);
    assert_eq!(serve.expose, crate::config::Expose::Search);
    assert_eq!(serve.always_expose, ["mcp__a__b"]);
    assert_eq!(serve.max_exposed_tools, 8);
    assert_eq!(serve.session_idle, Duration::from_secs(30));
    assert_eq!(serve.listing_burst, Duration::ZERO);
    assert_eq!(serve.max_sessions, 5);
    assert_eq!(serve.max_request_bytes, 1024);
    assert_eq!(serve.allowed_hosts, ["gw.example.com"]);
    assert_eq!(serve.allowed_origins, ["https://app.example.com"]);
    assert_eq!(
        serve.auth,
        Some(ServeAuth::BearerTokenEnvVar("GATEWAY_TOKEN".into()))
    );
}

#[test]
fn the_fleet_table_names_its_variables_and_never_their_values() {
    use crate::config::ServeFleet;
    let serve = parse_ok(
        "[serve.fleet]\nredis_url_env_var = \"MCP_RUNTIME_REDIS_URL\"\n\
         key_env_var = \"MCP_RUNTIME_FLEET_KEY\"\nreplica = \"eu-1\"\nredis_timeout_ms = 1000\n",
    )
    .serve;
    assert_eq!(
        serve.fleet,
        Some(ServeFleet {
            redis_url_env_var: "MCP_RUNTIME_REDIS_URL".into(),
            key_env_var: "MCP_RUNTIME_FLEET_KEY".into(),
            replica: Some("eu-1".into()),
            redis_timeout: Some(std::time::Duration::from_secs(1)),
        })
    );
    let fleet = |timeout: &str| {
        format!(
            "[serve.fleet]\nredis_url_env_var = \"U\"\nkey_env_var = \"K\"\nredis_timeout_ms = {timeout}\n"
        )
    };
    assert_eq!(
        parse_ok(&fleet("2.5")).serve.fleet.unwrap().redis_timeout,
        Some(std::time::Duration::from_micros(2500))
    );
    let f = "`/etc/mcp.toml`:";
    for (timeout, expected) in [
        ("0", "a positive number"),
        (
            "1001",
            "at most 1000 (a listing's leader renews its 3-second lease every second)",
        ),
    ] {
        assert_eq!(
            parse_errors(&fleet(timeout)),
            [format!(
                "{f} key `redis_timeout_ms` in `[serve.fleet]` must be {expected}"
            )]
        );
    }
    assert_eq!(
        parse_errors("[serve.fleet]\nredis_url = \"redis://:secret@db\"\nkey_env_var = \"A=B\"\n"),
        [
            format!(
                "{f} unknown key `redis_url` in `[serve.fleet]` (did you mean `redis_url_env_var`?)"
            ),
            format!(
                "{f} key `redis_url_env_var` in `[serve.fleet]` must be set, the name of an environment variable"
            ),
            format!(
                "{f} key `key_env_var` in `[serve.fleet]` must be an environment variable's name"
            ),
        ]
    );
}

#[test]
fn every_error_of_the_serve_table_is_reported() {
    let f = "`/etc/mcp.toml`:";
    assert_eq!(
        parse_errors(
            "[serve]\ntool_names = \"short\"\nexpose = \"some\"\nmax_exposed_tools = 0\nlisting_burst_sec = -1\nmax_sessions = 0\nallowed_origins = [\"app.example.com\"]\n\
             idle = 3\n[serve.auth]\nbearer_token = \"secret-value\"\n",
        ),
        [
            format!("{f} unknown key `idle` in `[serve]` (check its spelling)"),
            format!("{f} key `tool_names` in `[serve]` must be `qualified` or `original`"),
            format!("{f} key `expose` in `[serve]` must be `all` or `search`"),
            format!("{f} key `max_exposed_tools` in `[serve]` must be a positive integer"),
            format!("{f} key `listing_burst_sec` in `[serve]` must be zero or a positive number"),
            format!("{f} key `max_sessions` in `[serve]` must be a positive integer"),
            format!(
                "{f} key `allowed_origins` in `[serve]`: item 1 names no scheme (write it as `https://app.example.com` is written)"
            ),
            format!(
                "{f} unknown key `bearer_token` in `[serve.auth]` (did you mean `bearer_token_env_var`?)"
            ),
            format!(
                "{f} key `bearer_token_env_var` in `[serve.auth]` must be the name of the environment variable holding the clients' bearer token (or set `issuer` and `audience` for OAuth access tokens)"
            ),
        ]
    );
}

#[test]
fn an_oauth_resource_server_is_an_issuer_and_an_audience() {
    use crate::config::{JwtAuth, ServeAuth};
    let serve = parse_ok(
        "[serve.auth]\nissuer = \"https://auth.example.com\"\n\
         audience = \"https://gw.example.com/mcp\"\nscopes = [\"mcp\"]\n",
    )
    .serve;
    assert_eq!(
        serve.auth,
        Some(ServeAuth::Jwt(JwtAuth {
            issuer: "https://auth.example.com".into(),
            audience: "https://gw.example.com/mcp".into(),
            jwks_uri: None,
            scopes: vec!["mcp".into()],
        }))
    );
    let f = "`/etc/mcp.toml`:";
    assert_eq!(
        parse_errors("[serve.auth]\nissuer = \"auth.example.com\"\n"),
        [
            format!("{f} key `issuer` in `[serve.auth]` must be an `http://` or `https://` URL"),
            format!(
                "{f} key `audience` in `[serve.auth]` must be set, an `https://` URL, beside the other of `issuer` and `audience`"
            ),
        ]
    );
    assert_eq!(
        parse_errors(
            "[serve.auth]\nissuer = \"https://a.example.com\"\naudience = \"https://gw.example.com\"\n\
             scopes = [\"mcp\", \"a b\", \"x\\\"y\", \"\"]\n"
        )
        .len(),
        3
    );
    assert_eq!(
        parse_errors(
            "[serve.auth]\nbearer_token_env_var = \"T\"\nissuer = \"https://a.example.com\"\n"
        ),
        [format!(
            "{f} key `issuer` in `[serve.auth]` must be absent beside `bearer_token_env_var` (a listener takes one way of authenticating)"
        )]
    );
}
