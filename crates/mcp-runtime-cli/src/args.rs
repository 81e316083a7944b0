//! The command line as typed: clap's view of the arguments, before any checking.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::demo::DemoServer;

/// Run many MCP servers at once: list their state and tools, call a tool.
#[derive(Debug, Parser)]
#[command(name = "mcp-runtime", version, about)]
pub struct RawArgs {
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand takes.
#[derive(Debug, Args)]
pub struct Common {
    /// Configuration file with `[mcp_servers.NAME]` tables (a Codex config.toml
    /// works). Without it, the built-in demo servers run.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Print JSON for scripts instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// The discovery scope: startups share `tools/list` answers only within one scope.
    #[arg(long, value_name = "NAME", global = true, default_value = mcp_runtime::DEFAULT_SCOPE)]
    pub scope: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start every enabled server and show its state, transport, startup time and error.
    Servers {
        #[command(flatten)]
        common: Common,
    },
    /// Start every enabled server and list all tools by qualified name.
    Tools {
        #[command(flatten)]
        common: Common,
    },
    /// Call a tool by its qualified name and print the result.
    Call {
        /// The qualified tool name, as `tools` prints it (`mcp__SERVER__TOOL`).
        name: String,
        /// The arguments, a JSON object: the JSON itself, `@FILE` for a file holding
        /// it, or `-` to read it from stdin.
        #[arg(long, value_name = "JSON|@FILE|-", default_value = "{}")]
        args: String,
        /// The sandbox state of this call, forwarded byte for byte to servers that ask
        /// for it: the JSON itself, `@FILE`, `-` for stdin, or a file's path.
        #[arg(long, value_name = "JSON|@FILE|-")]
        sandbox_state: Option<String>,
        /// The Codex CLI offered as the sandbox launcher to local servers that ask for
        /// it, once it passes the capability probe. Needs `--sandbox-state`.
        #[arg(long, value_name = "PATH", requires = "sandbox_state")]
        codex_executable: Option<std::path::PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Print another host's JSON config as Codex `config.toml` tables.
    ///
    /// Reads the files of Claude Desktop, Claude Code, VS Code and Cursor (which
    /// `--config` also reads as they are). A `${…}` that Codex's format cannot express
    /// is kept with a comment; no variable's value is printed.
    Import {
        /// The JSON file, for example `.vscode/mcp.json`.
        file: PathBuf,
    },
    /// Measure the runtime.
    Bench {
        #[command(subcommand)]
        bench: Bench,
    },
    /// Serve a built-in demo MCP server on stdin/stdout.
    #[command(hide = true)]
    ServeDemo {
        /// Which demo server.
        server: DemoServer,
    },
}

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// Start N runtimes at once, each starting every enabled server, and report how
    /// many `tools/list` requests they sent and how long until all settled.
    Startup {
        /// How many runtimes (sessions) to start concurrently.
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
        sessions: u32,
        /// Every startup lists tools itself instead of sharing a burst's listing.
        #[arg(long)]
        no_share: bool,
        #[command(flatten)]
        common: Common,
    },
}
