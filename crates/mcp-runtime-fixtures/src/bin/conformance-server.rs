//! `conformance-server`: the reference server for the official MCP conformance
//! suite's server scenarios (see `mcp_runtime_fixtures::conformance`), over
//! Streamable HTTP (`--listen ADDR`, at `/mcp`) or stdio (`--stdio`).

use std::process::ExitCode;

use clap::Parser;
use mcp_runtime_fixtures::conformance::{self, Conformance};

/// A reference MCP server for the conformance suite's server scenarios.
#[derive(Debug, Parser)]
#[command(name = "conformance-server", version)]
struct Args {
    /// Serve Streamable HTTP at `http://ADDR/mcp`; prints `listening on URL` once bound
    #[arg(long, value_name = "ADDR", required_unless_present = "stdio")]
    listen: Option<String>,
    /// Serve over stdin and stdout
    #[arg(long, conflicts_with = "listen")]
    stdio: bool,
    /// Speak only the handshake revisions (2025-11-25 and earlier), asking the
    /// client mid-call with requests of the server's own
    #[arg(long)]
    handshake_only: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let server = if args.handshake_only {
        Conformance::handshake_only()
    } else {
        Conformance::new()
    };
    let served = match &args.listen {
        Some(addr) => conformance::serve_http(server, addr).await,
        None => conformance::serve_stdio(server).await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance-server: {error:#}");
            ExitCode::FAILURE
        }
    }
}
