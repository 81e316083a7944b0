//! `mcp-runtime`: start MCP servers, list their state and tools, call a tool.
//!
//! The flow is raw arguments ([`args`]) → a validated [`plan::Plan`] → running it.
//! Exit codes: 0 success; 1 the tool answered `isError: true`; 2 any other failure,
//! with a one-line reason on stderr; 130 or 143 when interrupted by `SIGINT` or
//! `SIGTERM` (every server started so far is killed first).

mod args;
mod bench;
mod demo;
mod output;
mod plan;
mod progress;

use std::{io::IsTerminal, process::ExitCode};

use anyhow::Context;
use clap::Parser;
use mcp_runtime::{CallError, CallOptions, Config, Runtime, StartOptions};
use tracing_subscriber::EnvFilter;

use crate::plan::{Plan, View};

/// The tool answered with `isError: true`.
const EXIT_TOOL_ERROR: u8 = 1;
/// Anything else failed.
const EXIT_FAILURE: u8 = 2;

fn main() -> ExitCode {
    let args = args::RawArgs::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("MCP_RUNTIME_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return fail(&anyhow::Error::from(error)),
    };
    let outcome = runtime.block_on(async {
        tokio::select! {
            outcome = run(args) => outcome,
            // Servers run in process groups of their own, so a terminal's Ctrl-C
            // reaches only this process: dropping `run` kills every server group.
            code = interrupted() => Ok(code),
        }
    });
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(error) => fail(&error),
    }
}

/// Waits for `SIGINT` or `SIGTERM`; returns the conventional exit code for it.
async fn interrupted() -> u8 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => 130,
        _ = terminate.recv() => 143,
    }
}

fn fail(error: &anyhow::Error) -> ExitCode {
    eprintln!("mcp-runtime: {}", output::printable(&format!("{error:#}")));
    ExitCode::from(EXIT_FAILURE)
}

async fn run(args: args::RawArgs) -> anyhow::Result<u8> {
    match Plan::resolve(args)? {
        Plan::ServeDemo(server) => {
            demo::serve(server).await?;
            Ok(0)
        }
        Plan::Report {
            config,
            scope,
            json,
            view,
        } => {
            let runtime = start(config, scope).await?;
            let servers = runtime.servers();
            let catalog = runtime.catalog();
            runtime.shutdown().await;
            if json {
                println!("{:#}", output::report_json(&servers, &catalog));
            } else {
                match view {
                    View::Servers => print!("{}", output::servers_table(&servers)),
                    View::Tools => {
                        warn_failed(&servers);
                        print!("{}", output::tools_table(&catalog));
                    }
                }
            }
            Ok(0)
        }
        Plan::BenchStartup {
            config,
            scope,
            json,
            sessions,
            share,
        } => {
            let report = bench::startup(config, &scope, sessions, share).await;
            if json {
                println!("{:#}", report.to_json());
            } else {
                print!("{}", report.to_text());
            }
            Ok(0)
        }
        Plan::Call {
            config,
            scope,
            json,
            name,
            arguments,
            authority,
        } => {
            let runtime = start(config, scope).await?;
            let mut options = CallOptions::new();
            if let Some(authority) = authority {
                options = options.with_authority(authority);
            }
            let result = runtime
                .call_tool_with(&name, Some(arguments), options)
                .await;
            let servers = runtime.servers();
            runtime.shutdown().await;
            let result = match result {
                Ok(result) => result,
                Err(error @ CallError::UnknownTool { .. }) => {
                    warn_failed(&servers);
                    return Err(error.into());
                }
                Err(error) => return Err(error.into()),
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&result)?);
            } else {
                print!("{}", output::call_text(&result));
            }
            Ok(if result.is_error == Some(true) {
                EXIT_TOOL_ERROR
            } else {
                0
            })
        }
    }
}

/// Starts the servers, with the live display when stderr is a terminal.
async fn start(config: Config, scope: String) -> anyhow::Result<Runtime> {
    let mut options = StartOptions::new().with_scope(scope);
    let display = if std::io::stderr().is_terminal() {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        options = options.with_events(sender);
        Some(tokio::spawn(progress::show(receiver)))
    } else {
        None
    };
    let started = Runtime::start(config, options).await;
    if let Some(display) = display {
        let _ = display.await;
    }
    started.context("starting servers")
}

/// One stderr line per server that failed to start.
fn warn_failed(servers: &[mcp_runtime::ServerStatus]) {
    for server in servers {
        if let Some(error) = &server.error {
            eprintln!(
                "mcp-runtime: server `{}` {}: {}",
                server.name,
                server.state.as_str(),
                output::printable(&mcp_runtime::error::chain(error))
            );
        }
    }
}
