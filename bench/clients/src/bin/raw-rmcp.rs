//! The baseline: a plain rmcp client, written the way a competent user would write
//! one with rmcp alone.
//!
//! It reads just the keys it needs from a Codex-style file (`command`, `args`, `env`
//! for a stdio server, `url` for Streamable HTTP), connects with rmcp's own transports
//! (`TokioChildProcess`, `StreamableHttpClientTransport`) and its default `initialize`
//! handshake (or, with `--lifecycle auto`, rmcp's `server/discover` probe that falls
//! back to `initialize` on the same connection: the protocol revision mcp-runtime
//! speaks with a 2026-07-28 server, so per-request costs compare like for like), and
//! ends each server with `RunningService::cancel`, which closes the
//! transport: for a child process that closes its stdin and waits for it to exit (then
//! `SIGTERM`, then kill, after 3 s each), the way mcp-runtime ends a stdio server; for
//! HTTP it sends the session's `DELETE`.
//!
//! An HTTP server's table may say `keep_alive = true`: its requests then go over a
//! reqwest client that keeps its connections (rmcp's default client opens one per
//! request), as a client on one kept-alive connection does.
//!
//! Besides the shared `list` and `calls`, `sessions` opens many connections to one
//! server at once, each a client of its own (over HTTP, a session of its own), as many
//! users of one gateway are (bench/compare, scenarios i and j).

use std::{
    collections::BTreeMap,
    io::{Read, Write},
    path::{Path, PathBuf},
    time::Instant,
};

use anyhow::Context;
use clap::{Parser, Subcommand};
use mcp_bench_clients::{
    CallStats, Work, call_arguments, print_calls_report, print_list_report, run_calls,
};
#[cfg(feature = "full")]
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{CallToolRequestParams, ProtocolVersion},
    service::{Peer, RunningService},
    transport::TokioChildProcess,
};
use serde::Deserialize;

/// A connected server.
type Client = RunningService<RoleClient, ()>;

/// raw-rmcp's command line: the shared work and its own, and how to start each
/// connection.
#[derive(Parser)]
struct RawArgs {
    /// `initialize` (rmcp's default) or `auto` (`server/discover`, falling back to
    /// `initialize`).
    #[arg(long, global = true, default_value = "initialize")]
    lifecycle: Lifecycle,
    /// The work to do.
    #[command(subcommand)]
    work: RawWork,
}

/// The work both Rust contenders do, and raw-rmcp's own.
#[derive(Subcommand)]
enum RawWork {
    #[command(flatten)]
    Shared(Work),
    /// Open `--sessions` connections to the file's one server at once, each a client of
    /// its own; then each makes `--warmup` untimed calls and `--count` timed ones, one
    /// at a time, all sessions at once; print latency percentiles and throughput over
    /// every session's calls, and `sessions`.
    Sessions(Sessions),
}

/// The `sessions` work.
#[derive(clap::Args)]
struct Sessions {
    /// A Codex-style TOML file with exactly one `[mcp_servers.NAME]` table.
    #[arg(long)]
    config: PathBuf,
    /// The tool's name on its server (not qualified).
    #[arg(long)]
    tool: String,
    /// How many connections.
    #[arg(long)]
    sessions: usize,
    /// Timed calls per session.
    #[arg(long, default_value_t = 0)]
    count: usize,
    /// Untimed calls per session, made first.
    #[arg(long, default_value_t = 10)]
    warmup: usize,
    /// Once every session is open, print `{"open": N}` and wait until stdin closes
    /// before the calls: the sessions stay open and idle while the caller looks.
    #[arg(long)]
    hold: bool,
}

/// How a connection starts.
#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum Lifecycle {
    Initialize,
    Auto,
}

impl Lifecycle {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Self::Initialize => ClientLifecycleMode::Initialize,
            Self::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: None,
            },
        }
    }
}

/// The part of a Codex `config.toml` this client reads.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    mcp_servers: BTreeMap<String, Server>,
}

/// One `[mcp_servers.NAME]` table: a stdio server (`command`) or an HTTP one (`url`).
#[derive(Deserialize)]
struct Server {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    /// Whether requests to `url` reuse their connections.
    #[serde(default)]
    keep_alive: bool,
}

fn load(path: &Path) -> anyhow::Result<BTreeMap<String, Server>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    Ok(toml::from_str::<File>(&text)?.mcp_servers)
}

/// Spawns or connects to `server` and starts the connection as `lifecycle` says.
async fn connect(name: &str, server: &Server, lifecycle: Lifecycle) -> anyhow::Result<Client> {
    let client = match (&server.url, &server.command) {
        #[cfg(feature = "full")]
        (Some(url), _) => {
            let transport = if server.keep_alive {
                let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str());
                StreamableHttpClientTransport::with_client(
                    reqwest::Client::builder().build()?,
                    config,
                )
            } else {
                StreamableHttpClientTransport::from_uri(url.as_str())
            };
            match lifecycle {
                Lifecycle::Initialize => ().serve(transport).await?,
                Lifecycle::Auto => ().serve_with_lifecycle(transport, lifecycle.mode()).await?,
            }
        }
        #[cfg(not(feature = "full"))]
        (Some(_), _) => anyhow::bail!(
            "server `{name}` is reached over HTTP; build with the `full` feature (the default)"
        ),
        (None, Some(program)) => {
            let mut command = tokio::process::Command::new(program);
            command.args(&server.args).envs(&server.env);
            let transport = TokioChildProcess::new(command)?;
            match lifecycle {
                Lifecycle::Initialize => ().serve(transport).await?,
                Lifecycle::Auto => ().serve_with_lifecycle(transport, lifecycle.mode()).await?,
            }
        }
        (None, None) => anyhow::bail!("server `{name}` has neither `command` nor `url`"),
    };
    Ok(client)
}

/// Starts every server concurrently, lists all their tools, then ends them all
/// concurrently.
async fn list(servers: BTreeMap<String, Server>, lifecycle: Lifecycle) -> anyhow::Result<()> {
    let count = servers.len();
    let mut startups = tokio::task::JoinSet::new();
    for (name, server) in servers {
        startups.spawn(async move {
            let client = connect(&name, &server, lifecycle)
                .await
                .with_context(|| format!("server `{name}`"))?;
            let tools = client
                .list_all_tools()
                .await
                .with_context(|| format!("server `{name}`: tools/list"))?;
            anyhow::Ok((client, tools))
        });
    }
    // The listed tools are kept until the end, as a host keeps its catalog (and as
    // mcp-runtime does), so the peak memory compares like for like.
    let mut clients = Vec::with_capacity(count);
    let mut listings = Vec::with_capacity(count);
    while let Some(started) = startups.join_next().await {
        let (client, tools) = started??;
        clients.push(client);
        listings.push(tools);
    }
    let mut shutdowns = tokio::task::JoinSet::new();
    for client in clients {
        shutdowns.spawn(client.cancel());
    }
    while let Some(closed) = shutdowns.join_next().await {
        closed??;
    }
    print_list_report(count, listings.iter().map(Vec::len).sum());
    drop(listings);
    Ok(())
}

/// One tool's call with the shared arguments, failed when the tool says it failed.
async fn call(peer: &Peer<RoleClient>, tool: &str) -> anyhow::Result<()> {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(call_arguments());
    let result = peer.call_tool(params).await?;
    anyhow::ensure!(result.is_error != Some(true), "the tool failed");
    Ok(())
}

/// The `sessions` work: `sessions` clients of the file's one server.
async fn sessions(work: Sessions, lifecycle: Lifecycle) -> anyhow::Result<()> {
    let Sessions {
        config,
        tool,
        sessions,
        count,
        warmup,
        hold,
    } = work;
    let servers = load(&config)?;
    anyhow::ensure!(servers.len() == 1, "`sessions` needs exactly one server");
    let (name, server) = servers.into_iter().next().expect("one server");
    let server = std::sync::Arc::new(server);
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..sessions {
        let (name, server) = (name.clone(), server.clone());
        opening.spawn(async move { connect(&name, &server, lifecycle).await });
    }
    let mut clients = Vec::with_capacity(sessions);
    while let Some(opened) = opening.join_next().await {
        clients.push(opened??);
    }
    if hold {
        println!("{}", serde_json::json!({ "open": clients.len() }));
        std::io::stdout().flush()?;
        tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new())).await??;
    }
    let tool = std::sync::Arc::new(tool);
    let mut warming = tokio::task::JoinSet::new();
    for client in clients {
        let tool = tool.clone();
        warming.spawn(async move {
            for _ in 0..warmup {
                call(client.peer(), &tool).await?;
            }
            anyhow::Ok(client)
        });
    }
    let mut clients = Vec::with_capacity(sessions);
    while let Some(warmed) = warming.join_next().await {
        clients.push(warmed??);
    }
    // Timed from here: every session is open and has made its warmup calls.
    let started = Instant::now();
    let mut calling = tokio::task::JoinSet::new();
    for client in clients {
        let tool = tool.clone();
        calling.spawn(async move {
            let mut latencies = Vec::with_capacity(count);
            for _ in 0..count {
                let sent = Instant::now();
                call(client.peer(), &tool).await?;
                latencies.push(sent.elapsed().as_nanos() as u64);
            }
            anyhow::Ok((client, latencies))
        });
    }
    let mut clients = Vec::with_capacity(sessions);
    let mut latencies = Vec::with_capacity(sessions * count);
    while let Some(called) = calling.join_next().await {
        let (client, session_latencies) = called??;
        clients.push(client);
        latencies.extend(session_latencies);
    }
    let stats = CallStats::new(latencies, started.elapsed());
    let mut closing = tokio::task::JoinSet::new();
    for client in clients {
        closing.spawn(client.cancel());
    }
    while let Some(closed) = closing.join_next().await {
        closed??;
    }
    let mut report = stats.report();
    report["sessions"] = serde_json::json!(sessions);
    println!("{report}");
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let RawArgs { lifecycle, work } = RawArgs::parse();
    let work = match work {
        RawWork::Shared(work) => work,
        RawWork::Sessions(work) => return sessions(work, lifecycle).await,
    };
    match work {
        Work::List { config } => list(load(&config)?, lifecycle).await,
        Work::Calls {
            config,
            tool,
            count,
            concurrency,
            warmup,
        } => {
            let servers = load(&config)?;
            anyhow::ensure!(servers.len() == 1, "`calls` needs exactly one server");
            let (name, server) = servers.iter().next().expect("one server");
            let client = connect(name, server, lifecycle).await?;
            let peer = client.peer().clone();
            let one_call = move || {
                let (peer, tool) = (peer.clone(), tool.clone());
                async move { call(&peer, &tool).await }
            };
            let stats = run_calls(one_call, warmup, count, concurrency).await?;
            client.cancel().await?;
            print_calls_report(&stats);
            Ok(())
        }
    }
}
