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

use std::{collections::BTreeMap, path::Path};

use anyhow::Context;
use clap::Parser;
use mcp_bench_clients::{
    Args, Work, call_arguments, print_calls_report, print_list_report, run_calls,
};
#[cfg(feature = "full")]
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{CallToolRequestParams, ProtocolVersion},
    service::RunningService,
    transport::TokioChildProcess,
};
use serde::Deserialize;

/// A connected server.
type Client = RunningService<RoleClient, ()>;

/// raw-rmcp's command line: the shared one, and how to start each connection.
#[derive(Parser)]
struct RawArgs {
    /// `initialize` (rmcp's default) or `auto` (`server/discover`, falling back to
    /// `initialize`).
    #[arg(long, global = true, default_value = "initialize")]
    lifecycle: Lifecycle,
    #[command(flatten)]
    args: Args,
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
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let RawArgs { lifecycle, args } = RawArgs::parse();
    match args.work {
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
            let call = move || {
                let peer = peer.clone();
                let params =
                    CallToolRequestParams::new(tool.clone()).with_arguments(call_arguments());
                async move {
                    let result = peer.call_tool(params).await?;
                    anyhow::ensure!(result.is_error != Some(true), "the tool failed");
                    Ok(())
                }
            };
            let stats = run_calls(call, warmup, count, concurrency).await?;
            client.cancel().await?;
            print_calls_report(&stats);
            Ok(())
        }
    }
}
