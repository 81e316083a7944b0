//! `add`, `remove`, `get` and `list`, and which configuration file each command reads.
//!
//! Every run gets `HOME` (and, when a test says so, `CODEX_HOME`) in a temporary
//! directory, so a Codex config on this machine never changes what a test sees.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{stderr, stdout};

/// A home directory of its own, with or without `CODEX_HOME`.
struct Home {
    dir: TempDir,
    codex_home: Option<PathBuf>,
}

impl Home {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            codex_home: None,
        }
    }

    /// `CODEX_HOME` set to `codex-home` in the temporary directory (not created).
    fn with_codex_home() -> Self {
        let mut home = Self::new();
        home.codex_home = Some(home.dir.path().join("codex-home"));
        home
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `~/.codex/config.toml`.
    fn default_file(&self) -> PathBuf {
        self.home().join(".codex").join("config.toml")
    }

    fn codex_home_file(&self) -> PathBuf {
        self.codex_home.as_ref().unwrap().join("config.toml")
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// Runs with the variables `env` set.
    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-runtime"));
        command
            .args(args)
            .env_remove("MCP_RUNTIME_LOG")
            .env("HOME", self.home())
            .env_remove("XDG_CACHE_HOME")
            .envs(env.iter().copied())
            .current_dir(self.dir.path());
        match &self.codex_home {
            Some(codex_home) => command.env("CODEX_HOME", codex_home),
            None => command.env_remove("CODEX_HOME"),
        };
        command.output().expect("the binary runs")
    }

    /// Runs and expects exit code 0 and nothing on stderr; the stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(stderr(&output), "", "{args:?}");
        stdout(&output)
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn added_servers_are_listed_and_shown_without_their_env_values() {
    let home = Home::new();
    let file = home.default_file();
    assert_eq!(
        home.ok(&[
            "add",
            "docs",
            "--env",
            "DOCS_TOKEN=s3cret-value",
            "--env",
            "MODE=fast",
            "--",
            "docs-server",
            "--port",
            "4000",
        ]),
        format!("Added server `docs` to `{}`.\n", file.display())
    );
    assert_eq!(
        home.ok(&[
            "add",
            "web",
            "--url",
            "https://example.test/mcp",
            "--bearer-token-env-var",
            "WEB_TOKEN",
        ]),
        format!("Added server `web` to `{}`.\n", file.display())
    );
    assert_eq!(
        read(&file),
        "[mcp_servers.docs]\ncommand = \"docs-server\"\nargs = [\"--port\", \"4000\"]\n\n\
         [mcp_servers.docs.env]\nDOCS_TOKEN = \"s3cret-value\"\nMODE = \"fast\"\n\n\
         [mcp_servers.web]\nurl = \"https://example.test/mcp\"\nbearer_token_env_var = \"WEB_TOKEN\"\n"
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600,
        "a new file holding env values is its owner's only"
    );

    let mut outputs = Vec::new();
    let list = home.ok(&["list"]);
    insta::assert_snapshot!(list, @r"
    SERVER  STATUS   TRANSPORT        COMMAND OR URL            VARIABLES
    docs    enabled  stdio            docs-server --port 4000   DOCS_TOKEN, MODE
    web     enabled  streamable_http  https://example.test/mcp  WEB_TOKEN
    ");
    outputs.push(list);

    let list_json = home.ok(&["list", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&list_json).unwrap(),
        json!({"servers": [
            {"name": "docs", "transport": "stdio", "enabled": true,
             "command": "docs-server", "args": ["--port", "4000"], "url": null},
            {"name": "web", "transport": "streamable_http", "enabled": true,
             "command": null, "args": null, "url": "https://example.test/mcp"},
        ]})
    );
    outputs.push(list_json);

    let get = home.ok(&["get", "docs"]);
    insta::assert_snapshot!(get, @r"
    KEY                           VALUE
    name                          docs
    transport                     stdio
    enabled                       true
    command                       docs-server
    args                          --port 4000
    env                           DOCS_TOKEN, MODE
    env_vars                      -
    protocol                      auto
    required                      false
    startup_timeout_sec           30.0
    tool_timeout_sec              300.0
    disabled_tools                -
    environment                   local
    supports_parallel_tool_calls  false
    ");
    outputs.push(get);

    let get_json = home.ok(&["get", "docs", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&get_json).unwrap(),
        json!({
            "name": "docs", "transport": "stdio", "enabled": true,
            "command": "docs-server", "args": ["--port", "4000"], "url": null,
            "cwd": null, "env": ["DOCS_TOKEN", "MODE"], "env_vars": [],
            "protocol": "auto", "required": false, "startup_timeout_sec": 30.0, "tool_timeout_sec": 300.0,
            "enabled_tools": null, "disabled_tools": [], "environment": "local",
            "supports_parallel_tool_calls": false, "default_tools_approval_mode": null,
        })
    );
    outputs.push(get_json);

    let get_web = home.ok(&["get", "web", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&get_web).unwrap(),
        json!({
            "name": "web", "transport": "streamable_http", "enabled": true,
            "command": null, "args": null, "url": "https://example.test/mcp",
            "bearer_token_env_var": "WEB_TOKEN", "http_headers": [], "env_http_headers": {},
            "ca_certificate": null, "protocol": "auto", "required": false, "startup_timeout_sec": 30.0, "tool_timeout_sec": 300.0,
            "enabled_tools": null, "disabled_tools": [], "environment": "local",
            "supports_parallel_tool_calls": false, "default_tools_approval_mode": null,
        })
    );
    outputs.push(get_web);
    for output in outputs {
        assert!(!output.contains("s3cret"), "{output}");
    }
}

#[test]
fn header_values_and_url_passwords_are_never_shown() {
    let home = Home::new();
    let file = home.default_file();
    write(
        &file,
        "[mcp_servers.api]\nurl = \"https://me:pa55word@example.test/mcp\"\n\
         http_headers = { X-Team = \"team-s3cret\" }\n\
         env_http_headers = { X-Key = \"API_KEY_VAR\" }\nenabled = false\n",
    );
    let mut seen = String::new();
    for args in [
        &["list"][..],
        &["list", "--json"],
        &["get", "api"],
        &["get", "api", "--json"],
    ] {
        seen += &home.ok(args);
    }
    assert!(!seen.contains("pa55word"), "{seen}");
    assert!(!seen.contains("team-s3cret"), "{seen}");
    assert!(seen.contains("https://*****@example.test/mcp"), "{seen}");
    assert!(
        seen.contains("X-Team"),
        "the header's name is shown: {seen}"
    );
    assert!(seen.contains("X-Key=API_KEY_VAR"), "{seen}");
    assert!(seen.contains("api     disabled"), "{seen}");
}

#[test]
fn a_token_in_a_url_s_user_query_or_fragment_is_never_shown() {
    let home = Home::new();
    let file = home.default_file();
    write(
        &file,
        "[mcp_servers.user]\nurl = \"https://ghp_userTOKEN@example.test/mcp\"\n\
         [mcp_servers.query]\nurl = \"https://example.test/mcp?api_key=keyTOKEN&token=tokTOKEN&v=1\"\n\
         [mcp_servers.fragment]\nurl = \"https://example.test/mcp#fragTOKEN\"\n",
    );
    let mut seen = String::new();
    for args in [
        &["list"][..],
        &["list", "--json"],
        &["get", "user"],
        &["get", "query", "--json"],
        &["get", "fragment"],
    ] {
        seen += &home.ok(args);
    }
    assert!(!seen.contains("TOKEN"), "{seen}");
    for shown in [
        "https://*****@example.test/mcp",
        "https://example.test/mcp?api_key=*****&token=*****&v=*****",
        "https://example.test/mcp#*****",
    ] {
        assert!(seen.contains(shown), "{shown} in {seen}");
    }
}

#[test]
fn a_name_with_control_characters_is_refused_on_one_escaped_line() {
    let home = Home::new();
    write(&home.default_file(), "[mcp_servers.a]\ncommand = \"a\"\n");
    let name = "x\r\ny\u{1b}[2J";
    let long = format!("{name}{}", "n".repeat(300));
    for args in [
        &["add", name, "--", "run"][..],
        &["add", &long, "--", "run"],
        &["remove", name],
        &["get", name],
        &["get", name, "--json"],
    ] {
        let output = home.run(args);
        let stderr = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr:?}");
        assert!(
            !stderr.trim_end().chars().any(char::is_control),
            "{args:?}: {stderr:?}"
        );
        assert!(stderr.contains("x\\r\\ny"), "{args:?}: {stderr:?}");
    }
}

/// The secret that the variables of [`list_and_get_of_a_json_file_never_expand_a_variable`]
/// hold.
const SECRET: &str = "s3cret-t0ken";

#[test]
fn list_and_get_of_a_json_file_never_expand_a_variable() {
    let home = Home::new();
    let files = [
        (
            "claude/.mcp.json",
            r#"{ "mcpServers": {
  "cli": { "command": "run-${SECRET}", "args": ["--token", "${SECRET}", "--k=${SECRET:-x}"],
           "env": { "SECRET": "${SECRET}", "RENAMED": "${SECRET}", "MIXED": "a-${SECRET}" } },
  "web": { "type": "http", "url": "https://${SECRET}.example/mcp/${SECRET}",
           "headers": { "Authorization": "Bearer ${SECRET}", "X-Whole": "${SECRET}", "X-Mixed": "t ${SECRET}" } }
} }"#,
        ),
        (
            "vscode/.vscode/mcp.json",
            r#"{
  // VS Code asks for `token` as a password; mcp-runtime reads MCP_RUNTIME_INPUT_TOKEN.
  "inputs": [{ "id": "token", "type": "promptString", "password": true }],
  "servers": {
    "cli": { "type": "stdio", "command": "run", "args": ["${input:token}", "--env=${env:SECRET}"],
             "env": { "TOKEN": "${input:token}", "MIXED": "x${env:SECRET}" } },
    "web": { "type": "http", "url": "https://h.example/${input:token}/mcp",
             "headers": { "Authorization": "Bearer ${input:token}", "X-Mixed": "k ${env:SECRET}" } },
  },
}"#,
        ),
        (
            "cursor/.cursor/mcp.json",
            r#"{ "mcpServers": {
  "cli": { "command": "run", "args": ["${env:SECRET}"], "env": { "K": "${env:SECRET}" } },
  "web": { "url": "https://h.example/${env:SECRET}", "headers": { "X-Key": "v${env:SECRET}" } }
} }"#,
        ),
    ];
    let env = [("SECRET", SECRET), ("MCP_RUNTIME_INPUT_TOKEN", SECRET)];
    for (name, text) in files {
        let file = home.dir.path().join(name);
        write(&file, text);
        let file = file.to_str().unwrap();
        for command in [
            &["list"][..],
            &["list", "--json"],
            &["get", "cli"],
            &["get", "cli", "--json"],
            &["get", "web"],
            &["get", "web", "--json"],
        ] {
            let args = [command, &["--config", file]].concat();
            let output = home.run_with(&args, &env);
            let (stdout, stderr) = (stdout(&output), stderr(&output));
            assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
            assert!(!stdout.contains(SECRET), "{args:?}: {stdout}");
            assert!(!stderr.contains(SECRET), "{args:?}: {stderr}");
        }
        let shown = home.run_with(&["get", "cli", "--json", "--config", file], &env);
        let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
        let written = match name {
            "claude/.mcp.json" => json!(["--token", "${SECRET}", "--k=${SECRET:-x}"]),
            "vscode/.vscode/mcp.json" => json!(["${input:token}", "--env=${env:SECRET}"]),
            _ => json!(["${env:SECRET}"]),
        };
        assert_eq!(shown["args"], written, "{name}: shown as written");
    }
}

/// A file as a person writes it: comments, blank lines, odd spacing and quoting, keys
/// out of the usual order, tables Codex knows and mcp-runtime does not.
const HAND_WRITTEN: &str = r#"# My Codex config
model = "o3"   # the default model

[mcp_servers.github]   # GitHub
url = 'https://api.example.test/mcp'
bearer_token_env_var="GITHUB_TOKEN"

# local tools
[mcp_servers.local]
args    = [ "serve",  "--stdio" ]
command = "local-tool"
[mcp_servers.local.env]
LEVEL = "debug"   # noisy

[profiles.fast]
model = "o4-mini"
# end of file
"#;

#[test]
fn editing_keeps_every_other_byte_of_a_hand_written_file() {
    let home = Home::new();
    let file = home.default_file();
    write(&file, HAND_WRITTEN);

    home.ok(&["add", "extra", "--", "extra-server", "a b"]);
    assert_eq!(
        read(&file),
        HAND_WRITTEN.replace(
            "LEVEL = \"debug\"   # noisy\n",
            "LEVEL = \"debug\"   # noisy\n\n[mcp_servers.extra]\ncommand = \"extra-server\"\nargs = [\"a b\"]\n"
        )
    );
    home.ok(&["remove", "extra"]);
    assert_eq!(read(&file), HAND_WRITTEN, "remove undoes add byte for byte");

    assert_eq!(
        home.ok(&["remove", "local"]),
        format!("Removed server `local` from `{}`.\n", file.display())
    );
    assert_eq!(
        read(&file),
        HAND_WRITTEN.replace(
            "\n# local tools\n[mcp_servers.local]\nargs    = [ \"serve\",  \"--stdio\" ]\ncommand = \"local-tool\"\n[mcp_servers.local.env]\nLEVEL = \"debug\"   # noisy\n",
            ""
        ),
        "the server goes with its sub-tables and the blank line and comment above it"
    );
}

#[test]
fn adding_an_existing_name_replaces_that_server_in_place() {
    let home = Home::new();
    let file = home.default_file();
    write(&file, HAND_WRITTEN);
    assert_eq!(
        home.ok(&["add", "github", "--", "gh-mcp"]),
        format!("Replaced server `github` in `{}`.\n", file.display())
    );
    assert_eq!(
        read(&file),
        HAND_WRITTEN.replace(
            "url = 'https://api.example.test/mcp'\nbearer_token_env_var=\"GITHUB_TOKEN\"\n",
            "command = \"gh-mcp\"\n"
        )
    );
}

#[test]
fn removing_an_unknown_server_warns_exits_zero_and_changes_nothing() {
    let home = Home::new();
    let file = home.default_file();
    write(&file, HAND_WRITTEN);
    let output = home.run(&["remove", "nope"]);
    assert_eq!(output.status.code(), Some(0), "as in Codex");
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        format!(
            "mcp-runtime: warning: no server `nope` in `{}`; nothing was removed\n",
            file.display()
        )
    );
    assert_eq!(read(&file), HAND_WRITTEN);

    let empty = Home::new();
    let output = empty.run(&["remove", "nope"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(!empty.default_file().exists(), "remove creates nothing");
}

#[test]
fn a_failed_edit_leaves_the_file_unchanged_and_says_why() {
    let home = Home::new();
    let file = home.default_file();
    write(&file, HAND_WRITTEN);
    let path = file.display();
    let cases: &[(&[&str], String)] = &[
        (
            &["add", "bad", "--url", "ftp://example.test/mcp"],
            format!(
                "mcp-runtime: adding server `bad` would leave the file with errors, so nothing was written: `{path}`: key `url` in `[mcp_servers.bad]` must be an `http://` or `https://` URL\n"
            ),
        ),
        (
            &["add", "my.server", "--", "x"],
            "mcp-runtime: server name `my.server` may only contain letters, digits, `_` and `-`\n"
                .to_owned(),
        ),
        (
            &["remove", "my server"],
            "mcp-runtime: server name `my server` may only contain letters, digits, `_` and `-`\n"
                .to_owned(),
        ),
        (
            &[
                "add",
                "x",
                "--env",
                "A=1",
                "--env",
                "s3cret-no-equals",
                "--",
                "x",
            ],
            "mcp-runtime: `--env` number 2 has no `=` (write `KEY=VALUE`)\n".to_owned(),
        ),
        (
            &["get", "nope"],
            format!(
                "mcp-runtime: no server `nope` in `{path}` (list them with `mcp-runtime list`)\n"
            ),
        ),
    ];
    for (args, expected) in cases {
        let output = home.run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&output), *expected, "{args:?}");
        assert_eq!(stdout(&output), "", "{args:?}");
        assert_eq!(read(&file), HAND_WRITTEN, "{args:?}");
    }
    let long = "n".repeat(257);
    let output = home.run(&["add", &long, "--", "x"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("is 257 bytes long, more than the 256 allowed"));

    // A file that does not load is not made worse, nor rewritten.
    let broken = "[mcp_servers.a]\ncommand = \"a\"\ncomand = \"typo\"\n";
    write(&file, broken);
    let output = home.run(&["add", "b", "--", "b"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "mcp-runtime: adding server `b` would leave the file with errors, so nothing was written: `{path}`: unknown key `comand` in `[mcp_servers.a]` (did you mean `command`?)\n"
        )
    );
    assert_eq!(read(&file), broken);
    // Removing the broken server is how it is fixed.
    home.ok(&["remove", "a"]);
    assert_eq!(read(&file), "");

    let json = home.dir.path().join("mcp.json");
    write(&json, "{\"mcpServers\": {}}\n");
    let output = home.run(&["add", "b", "--config", json.to_str().unwrap(), "--", "b"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "mcp-runtime: `{0}` holds JSON, and `add` and `remove` edit TOML files only (print it as TOML with `mcp-runtime import {0}`, or edit it by hand)\n",
            json.display()
        )
    );
}

#[test]
fn an_edit_keeps_the_file_s_permissions_and_follows_a_symbolic_link() {
    let home = Home::new();
    let real = home.dir.path().join("dotfiles").join("codex.toml");
    write(&real, "model = \"o3\"\n");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = home.default_file();
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();

    home.ok(&["add", "s", "--", "s"]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        read(&real),
        "model = \"o3\"\n\n[mcp_servers.s]\ncommand = \"s\"\n"
    );
    assert_eq!(
        std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let leftovers: Vec<_> = std::fs::read_dir(real.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["codex.toml"], "no temporary file is left");
}

/// A configuration with one server `NAME` that lists `NAME` as its only tool, so the
/// output says which file was read.
fn naming(name: &str) -> String {
    // `list` shows the name without starting anything; `tools` needs a server that
    // answers, which the demo binary provides.
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [\"serve-demo\", \"text\"]\n",
        env!("CARGO_BIN_EXE_mcp-runtime")
    )
}

fn listed(output: &str) -> Vec<String> {
    let list: Value = serde_json::from_str(output).unwrap();
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| server["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_file_is_config_flag_then_codex_home_then_home_then_the_demo() {
    let home = Home::with_codex_home();
    write(&home.default_file(), &naming("from_home"));
    write(&home.codex_home_file(), &naming("from_codex_home"));
    let flag = home.dir.path().join("flag.toml");
    write(&flag, &naming("from_flag"));
    let flag = flag.to_str().unwrap();

    assert_eq!(
        listed(&home.ok(&["list", "--json", "--config", flag])),
        ["from_flag"]
    );
    assert_eq!(listed(&home.ok(&["list", "--json"])), ["from_codex_home"]);
    let tools = home.ok(&["tools"]);
    assert!(
        tools.contains("mcp__from_codex_home__echo") && !tools.contains("from_home"),
        "{tools}"
    );
    let tools = home.ok(&["tools", "--config", flag]);
    assert!(tools.contains("mcp__from_flag__echo"), "{tools}");

    // As in Codex, `CODEX_HOME` replaces `~/.codex`: with no file there, the demo runs
    // and `~/.codex/config.toml` is not read.
    std::fs::remove_file(home.codex_home_file()).unwrap();
    assert_eq!(listed(&home.ok(&["list", "--json"])), Vec::<String>::new());
    let tools = home.ok(&["tools"]);
    assert!(
        tools.contains("mcp__math__add") && !tools.contains("from_home"),
        "{tools}"
    );

    let no_codex_home = Home::new();
    write(&no_codex_home.default_file(), &naming("from_home"));
    assert_eq!(
        listed(&no_codex_home.ok(&["list", "--json"])),
        ["from_home"]
    );
    let servers = no_codex_home.ok(&["servers", "--json"]);
    assert_eq!(listed(&servers), ["from_home"]);

    std::fs::remove_file(no_codex_home.default_file()).unwrap();
    let servers = no_codex_home.ok(&["servers", "--json"]);
    assert_eq!(listed(&servers), ["math", "sandbox", "text"], "the demo");
}

#[test]
fn demo_flag_runs_the_demo_whatever_file_exists() {
    let home = Home::new();
    write(&home.default_file(), &naming("mine"));
    let servers = home.ok(&["servers", "--json", "--demo"]);
    assert_eq!(listed(&servers), ["math", "sandbox", "text"]);
    let output = home.ok(&[
        "call",
        "--demo",
        "mcp__math__add",
        "--args",
        r#"{"a":2,"b":3}"#,
    ]);
    assert_eq!(output, "5\n");
    assert_eq!(
        listed(&home.ok(&["list", "--json", "--demo"])),
        ["math", "sandbox", "text"]
    );
    let output = home.run(&["tools", "--demo", "--config", "x.toml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot be used with"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_file_without_servers_lists_nothing_and_runs_no_demo() {
    let home = Home::new();
    let file = home.default_file();
    write(
        &file,
        "model = \"o3\"\n[profiles.fast]\nmodel = \"o4-mini\"\n",
    );
    let hint = format!(
        "mcp-runtime: warning: `{}` configures no server (add one with `mcp-runtime add`, or pass `--demo` for the built-in demo servers)\n",
        file.display()
    );
    for (command, table) in [
        ("tools", "TOOL  DESCRIPTION\n"),
        (
            "servers",
            "SERVER  STATE  TRANSPORT  AUTH  STARTUP  TOOLS  ERROR\n",
        ),
    ] {
        let output = home.run(&[command]);
        assert_eq!(output.status.code(), Some(0), "{command}");
        assert_eq!(stdout(&output), table, "{command}");
        assert_eq!(stderr(&output), hint, "{command}");
    }
    assert_eq!(home.ok(&["list", "--json"]), "{\n  \"servers\": []\n}\n");
    assert_eq!(
        home.ok(&["list"]),
        format!(
            "No servers in `{}`: add one with `mcp-runtime add NAME -- COMMAND ARGS…` or `mcp-runtime add NAME --url URL`.\n",
            file.display()
        )
    );
}

#[test]
fn add_creates_the_codex_home_file_and_its_directory() {
    let home = Home::with_codex_home();
    let file = home.codex_home_file();
    assert!(!file.parent().unwrap().exists());
    assert_eq!(
        home.ok(&["add", "s", "--", "s"]),
        format!("Added server `s` to `{}`.\n", file.display())
    );
    assert_eq!(read(&file), "[mcp_servers.s]\ncommand = \"s\"\n");
    assert!(!home.default_file().exists());

    let flag = home.dir.path().join("new").join("mcp.toml");
    home.ok(&["add", "t", "--config", flag.to_str().unwrap(), "--", "t"]);
    assert_eq!(read(&flag), "[mcp_servers.t]\ncommand = \"t\"\n");
}

#[test]
fn list_and_get_never_start_a_server() {
    let home = Home::new();
    let marker = home.dir.path().join("started");
    write(
        &home.default_file(),
        &format!(
            "[mcp_servers.marker]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n",
            marker.display()
        ),
    );
    home.ok(&["list"]);
    home.ok(&["list", "--json"]);
    home.ok(&["get", "marker"]);
    home.ok(&["get", "marker", "--json"]);
    assert!(!marker.exists(), "nothing was started");

    // The server does run when a command starts servers: the marker can appear.
    let output = home.run(&["servers"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(marker.exists(), "`servers` started it");
}
