//! `mcp-fixture`: a real MCP server process for mcp-runtime's integration
//! tests, whose behaviour is chosen by flags.
//!
//! The command line is parsed, then the startup actions run in order (exit
//! early, write stderr lines, spawn a grandchild), then the server is served
//! over stdio, or over Streamable HTTP with `--http`. See `--help` for the
//! flags and the `mcp_runtime_fixtures` crate docs for what each part does.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::{Command, ExitCode, Stdio},
    sync::Arc,
    time::Duration,
};

use anyhow::Context as _;
use clap::Parser;
use mcp_runtime_fixtures::{Behaviour, Fixture, MessageLog, http, stdio};
use rmcp::model::{ExperimentalCapabilities, JsonObject};

/// A fixture MCP server for mcp-runtime's integration tests.
#[derive(Debug, Parser)]
#[command(name = "mcp-fixture", version)]
struct Args {
    /// Add generated tools `tool_0` … `tool_{N-1}` after the fixed tools
    #[arg(long, value_name = "N", default_value_t = 0)]
    tools: usize,
    /// Add a tool with exactly this name (repeatable), after the generated ones
    #[arg(long = "tool-name", value_name = "NAME")]
    tool_names: Vec<String>,
    /// Paginate `tools/list`, N tools a page; the cursor is the next offset
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    page_size: Option<u32>,
    /// Fault: every `tools/list` page names the next cursor `again`, forever
    #[arg(long)]
    repeat_cursor: bool,
    /// Wait this long before answering `initialize`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    init_delay_ms: u64,
    /// Wait this long before answering each `tools/list`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    list_delay_ms: u64,
    /// Spin a CPU this long (thread CPU time) before answering each `tools/list`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    list_cpu_ms: u64,
    /// Wait this long before answering each `tools/call`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    call_delay_ms: u64,
    /// Fault: never answer `initialize` (exit only when stdin closes)
    #[arg(long)]
    hang_initialize: bool,
    /// Fault: answer `tools/list` with JSON-RPC error -32603
    #[arg(long)]
    fail_list: bool,
    /// Advertise `capabilities.experimental[NAME] = JSON` (repeatable; JSON is an object)
    #[arg(long, value_name = "NAME=JSON", value_parser = parse_experimental)]
    experimental: Vec<(String, JsonObject)>,
    /// Answer `initialize` only once DIR/PID.initialize exists, and each
    /// `tools/list` only once DIR/PID.tools-list exists (an error if it holds
    /// `fail`)
    #[arg(long, value_name = "DIR")]
    gate_dir: Option<PathBuf>,
    /// Append one JSON line per received JSON-RPC message to FILE
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Write three startup lines to stderr and exit with CODE before reading anything
    #[arg(long, value_name = "CODE", allow_negative_numbers = true)]
    exit_during_startup: Option<i32>,
    /// Write N lines `fixture stderr line K` to stderr at start, then serve
    #[arg(long, value_name = "N", default_value_t = 0)]
    stderr_lines: usize,
    /// Spawn `sleep 3600` in this process group and write its pid to FILE
    #[arg(long, value_name = "FILE")]
    spawn_grandchild: Option<PathBuf>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:0)
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// With --http: answer 401 unless `Authorization: Bearer TOKEN`
    #[arg(long, value_name = "TOKEN", requires = "http")]
    require_bearer: Option<String>,
}

fn parse_experimental(text: &str) -> Result<(String, JsonObject), String> {
    let (name, json) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=JSON"))?;
    let object = serde_json::from_str(json)
        .map_err(|error| format!("the value of `{name}` is not a JSON object: {error}"))?;
    Ok((name.to_owned(), object))
}

impl Args {
    fn behaviour(&self) -> Behaviour {
        Behaviour {
            generated_tools: self.tools,
            named_tools: self.tool_names.clone(),
            page_size: self.page_size.map(|size| size as usize),
            repeat_cursor: self.repeat_cursor,
            init_delay: Duration::from_millis(self.init_delay_ms),
            list_delay: Duration::from_millis(self.list_delay_ms),
            list_cpu: Duration::from_millis(self.list_cpu_ms),
            call_delay: Duration::from_millis(self.call_delay_ms),
            hang_initialize: self.hang_initialize,
            fail_list: self.fail_list,
            experimental: self
                .experimental
                .iter()
                .cloned()
                .collect::<ExperimentalCapabilities>(),
            gate_dir: self.gate_dir.clone(),
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(code) = args.exit_during_startup {
        eprintln!("fixture: starting");
        eprintln!("fixture: loading config");
        eprintln!("fixture: fatal: cannot open database /nonexistent/db");
        std::process::exit(code);
    }
    for k in 1..=args.stderr_lines {
        eprintln!("fixture stderr line {k}");
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-fixture: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if let Some(pid_file) = &args.spawn_grandchild {
        spawn_grandchild(pid_file)?;
    }
    let log = args
        .log
        .as_deref()
        .map(|path| {
            MessageLog::open(path)
                .map(Arc::new)
                .with_context(|| format!("cannot open the log `{}`", path.display()))
        })
        .transpose()?;
    let fixture = Fixture::new(args.behaviour());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let result = runtime.block_on(async {
        match &args.http {
            Some(addr) => http::serve(fixture, addr, log, args.require_bearer.clone()).await,
            None => stdio::serve(fixture, log).await,
        }
    });
    // The stdin reader may still sit in a blocking read; do not wait for it.
    runtime.shutdown_background();
    result
}

/// Start `sleep 3600` as a child in this process's group (no `setsid`), and
/// publish its pid to `pid_file` atomically (write a temporary file, rename).
///
/// The grandchild's standard streams are /dev/null so that it does not hold
/// the fixture's stdout or stderr pipes open after the fixture is gone.
fn spawn_grandchild(pid_file: &Path) -> anyhow::Result<()> {
    let child = Command::new("sleep")
        .arg("3600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot spawn `sleep 3600`")?;
    let mut temporary = OsString::from(pid_file.as_os_str());
    temporary.push(".tmp");
    std::fs::write(&temporary, format!("{}\n", child.id()))
        .with_context(|| format!("cannot write `{}`", Path::new(&temporary).display()))?;
    std::fs::rename(&temporary, pid_file)
        .with_context(|| format!("cannot write `{}`", pid_file.display()))?;
    // The child is deliberately neither waited for nor killed.
    drop(child);
    Ok(())
}
