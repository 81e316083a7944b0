//! The same work as `raw-rmcp`, through the mcp-runtime library, as a host embedding
//! it would do it: load the file with `Config::load`, `Runtime::start` waiting for every
//! server, read the catalog, call tools by qualified name (`mcp__SERVER__TOOL`), and
//! `Runtime::shutdown` (per stdio server: close stdin and wait for the exit, `SIGTERM`
//! and `SIGKILL` only after 2 s grace periods, then wait for the process group to be
//! gone; per HTTP server: rmcp's close, which sends the session's `DELETE`).

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use mcp_bench_clients::{
    Args, Work, call_arguments, print_calls_report, print_list_report, run_calls,
};
use mcp_runtime::{Config, Runtime, ServerState, StartOptions};

/// Starts every enabled server of `config` and fails unless every one became ready.
async fn start(config: Config) -> anyhow::Result<Runtime> {
    let runtime = Runtime::start(config, StartOptions::new().wait_for_all()).await?;
    if let Some(failed) = runtime
        .servers()
        .into_iter()
        .find(|server| server.state != ServerState::Ready)
    {
        let reason = failed
            .error
            .map(|error| error.to_string())
            .unwrap_or_default();
        anyhow::bail!(
            "server `{}` is {:?}, not ready: {reason}",
            failed.name,
            failed.state
        );
    }
    Ok(runtime)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Args::parse().work {
        Work::List { config } => {
            let config = Config::load(&config)?;
            let runtime = start(config).await?;
            let servers = runtime.servers().len();
            let tools = runtime.catalog().tools().len();
            runtime.shutdown().await;
            print_list_report(servers, tools);
            Ok(())
        }
        Work::Calls {
            config,
            tool,
            count,
            concurrency,
            warmup,
        } => {
            let config = Config::load(&config)?;
            let server = {
                let mut servers = config.enabled_servers();
                let server = servers.next().context("`calls` needs exactly one server")?;
                anyhow::ensure!(servers.next().is_none(), "`calls` needs exactly one server");
                server.name.clone()
            };
            let runtime = Arc::new(start(config).await?);
            let qualified = format!("mcp__{server}__{tool}");
            let call = {
                let runtime = runtime.clone();
                move || {
                    let (runtime, qualified) = (runtime.clone(), qualified.clone());
                    async move {
                        let result = runtime
                            .call_tool(&qualified, Some(call_arguments()))
                            .await?;
                        anyhow::ensure!(!result.is_error(), "the tool failed");
                        Ok(())
                    }
                }
            };
            let stats = run_calls(call, warmup, count, concurrency).await?;
            let runtime = Arc::into_inner(runtime).expect("every call has ended");
            runtime.shutdown().await;
            print_calls_report(&stats);
            Ok(())
        }
    }
}
