//! What several test modules need: the binary, its output as text, the fixture
//! servers, the repository's scripts.

use std::{
    io::BufRead as _,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
};

/// The binary, with `HOME` and `CODEX_HOME` in an empty directory, so that no
/// `~/.codex/config.toml` on this machine changes what a test sees (without
/// `--config`, the demo servers run), and no log filter of the caller's. Its cache
/// directory cannot be written, so no protocol era is kept from one run to the next
/// (each run probes); a test of the cache sets `XDG_CACHE_HOME` itself.
pub fn cli() -> Command {
    isolated(Command::new(env!("CARGO_BIN_EXE_mcp-runtime")))
}

/// `command` with the environment [`cli`] gives the binary, which the binary it
/// starts (a client's `mcp-runtime serve`) inherits.
pub fn isolated(mut command: Command) -> Command {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-empty-home");
    std::fs::create_dir_all(&home).unwrap();
    assert!(
        !home.join(".codex").exists() && !home.join("config.toml").exists(),
        "{} must stay empty",
        home.display()
    );
    command
        .env("HOME", &home)
        .env("CODEX_HOME", &home)
        .env("XDG_CACHE_HOME", "/dev/null/no-cache")
        .env_remove("MCP_RUNTIME_LOG");
    command
}

/// A client script of `tests/` run by the pinned Python SDK's interpreter.
pub fn python_client(script: &str) -> Command {
    let mut command = Command::new(mcp_runtime_fixtures::testing::python_sdk("2.3.0"));
    command.arg(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(script),
    );
    command
}

/// What a client run isolated ([`isolated`]) printed, as JSON; `what` names the run
/// when it fails.
pub fn report_of(command: Command, what: &str) -> serde_json::Value {
    let output = isolated(command).output().unwrap();
    assert!(
        output.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout(&output).trim()).unwrap()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The fixture server, built beside this binary by `cargo test --workspace`.
pub fn fixture_server() -> PathBuf {
    fixture_binary("mcp-fixture")
}

/// The binary `name` of the fixture crate (`mcp-fixture`, `conformance-server`):
/// Cargo builds no binary of a dev-dependency, so it is there when the whole
/// workspace was built, as `cargo test --workspace` (scripts/test) does.
pub fn fixture_binary(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_mcp-runtime")).with_file_name(name);
    assert!(
        path.exists(),
        "{} is missing: build the whole workspace first (scripts/test does)",
        path.display()
    );
    path
}

/// The repository root: the scripts and `peers/` live there.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// An HTTP fixture process, killed when dropped.
pub struct HttpFixture {
    child: Child,
    /// Its endpoint.
    pub url: String,
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixture serving Streamable HTTP on a free port with `args`.
pub fn http_fixture(args: &[&str]) -> HttpFixture {
    let mut child = Command::new(fixture_server())
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the fixture starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = mcp_runtime_fixtures::testing::announced_url(&line);
    HttpFixture { child, url }
}
