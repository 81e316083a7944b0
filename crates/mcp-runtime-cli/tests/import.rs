//! `mcp-runtime import` and `--config` with another host's JSON file, as users run
//! them. `HOME` and `CODEX_HOME` point at a temporary directory, so no config of the
//! machine changes a test.

use std::{
    path::Path,
    process::{Command, Output},
};

fn run(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-runtime"))
        .args(args)
        .env_remove("MCP_RUNTIME_LOG")
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .env("CODEX_HOME", home.join(".codex"))
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn import_prints_the_codex_toml_of_a_claude_code_file() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".mcp.json");
    std::fs::write(
        &file,
        r#"{
  "mcpServers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ${GITHUB_PAT}" }
    },
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "${userHome}/notes"],
      "env": { "API_KEY": "${API_KEY}", "TOKEN": "${OTHER_TOKEN}", "DEBUG": "1" }
    }
  }
}"#,
    )
    .unwrap();
    let output = run(
        home.path(),
        &["import", file.to_str().unwrap()],
        &[
            ("GITHUB_PAT", "ghp-secret"),
            ("OTHER_TOKEN", "other-secret"),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stderr), "");
    let home = home.path().display();
    assert_eq!(
        text(&output.stdout),
        format!(
            r#"# The servers of `.mcp.json` (`mcpServers` of Claude Desktop, Claude Code or Cursor) in Codex's `config.toml` form, by `mcp-runtime import`.

[mcp_servers.github]
url = "https://api.githubcopilot.com/mcp/"
bearer_token_env_var = "GITHUB_PAT"

[mcp_servers.files]
# `env` variable `TOKEN` holds `${{OTHER_TOKEN}}`, which mcp-runtime expands from the environment when it loads the JSON file; Codex passes the text as written (set `TOKEN` itself and list it in `env_vars` instead)
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "{home}/notes"]
env = {{ DEBUG = "1", TOKEN = "${{OTHER_TOKEN}}" }}
env_vars = ["API_KEY"]
"#
        )
    );
}

#[test]
fn import_reports_every_error_with_file_server_and_key() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("mcp.json");
    std::fs::write(
        &file,
        r#"{ "servers": { "a": { "type": "stdio", "comand": "x" }, "b": { "url": "https://x/${input:missing}" } } }"#,
    )
    .unwrap();
    let output = run(home.path(), &["import", file.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(text(&output.stdout), "");
    let file = file.display();
    assert_eq!(
        text(&output.stderr),
        format!(
            "mcp-runtime: `{file}`: key `comand` in `[servers.a]` is unknown (check its spelling; a server here has `type`, `command`, `args`, `env`, `envFile`, `cwd`, `url`, `headers`)\nmcp-runtime: `{file}`: key `url` in `[servers.b]` uses input `missing`, which `inputs` does not declare (declare it there)\n"
        )
    );
}

#[test]
fn import_refuses_a_toml_file_and_tells_json_syntax_errors_by_line() {
    let home = tempfile::tempdir().unwrap();
    let toml = home.path().join("config.toml");
    std::fs::write(&toml, "[mcp_servers.a]\ncommand = \"x\"\n").unwrap();
    let output = run(home.path(), &["import", toml.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        format!(
            "mcp-runtime: `{}` is not JSON: mcp-runtime and Codex read a TOML file as it is (nothing to import)\n",
            toml.display()
        )
    );

    let json = home.path().join("broken.json");
    std::fs::write(
        &json,
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\" \"x\"}\n  }\n}\n",
    )
    .unwrap();
    let output = run(home.path(), &["import", json.to_str().unwrap()], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        format!(
            "mcp-runtime: `{}` is not valid JSON: expected `:` (at line 3, column 21)\n",
            json.display()
        )
    );
}

#[test]
fn config_runs_the_servers_of_a_json_file() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("claude_desktop_config.json");
    let exe = env!("CARGO_BIN_EXE_mcp-runtime");
    std::fs::write(
        &file,
        format!(
            r#"{{ "mcpServers": {{ "demo text": {{ "command": "{exe}", "args": ["serve-demo", "${{DEMO:-text}}"] }} }} }}"#
        ),
    )
    .unwrap();
    let output = run(
        home.path(),
        &["tools", "--config", file.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("mcp__demo_text__echo "),
        "the server named `demo text` in the file runs as `demo_text`: {stdout}"
    );
}
