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
    /// works). Default: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`, when
    /// it exists; else the built-in demo servers run.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Run the built-in demo servers, whatever configuration file exists.
    #[arg(long, global = true, conflicts_with = "config")]
    pub demo: bool,
    /// Print JSON for scripts instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// The discovery scope: startups share `tools/list` answers only within one scope.
    #[arg(long, value_name = "NAME", global = true, default_value = mcp_runtime::DEFAULT_SCOPE)]
    pub scope: String,
}

/// How a command that starts servers answers their questions (elicitation).
#[derive(Debug, Args)]
pub struct Asking {
    /// How to answer a server that asks the person something: decline (elicitation
    /// is not offered, and a server may then list fewer tools, as to a host without
    /// it), cancel, or accept each form with its fields' defaults. Default: offered;
    /// the person is asked on a terminal, else each question is declined.
    #[arg(long, value_enum, value_name = "ANSWER")]
    pub elicitation: Option<crate::elicit::Policy>,
}

/// The file `add` and `remove` edit.
#[derive(Debug, Args)]
pub struct FileArgs {
    /// The configuration file to edit. Default: `$CODEX_HOME/config.toml`, else
    /// `~/.codex/config.toml` (created when missing).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The configuration file of `login` and `logout`, their only common option: they
/// start no server (so no `--scope`), print no report (so no `--json`), and the demo
/// servers have no login (so no `--demo`).
#[derive(Debug, Args)]
pub struct AuthArgs {
    /// Configuration file with `[mcp_servers.NAME]` tables (a Codex config.toml
    /// works). Default: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Options of `list` and `get`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The configuration file to read. Default: `$CODEX_HOME/config.toml`, else
    /// `~/.codex/config.toml`; no server when it does not exist.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Show the built-in demo servers instead.
    #[arg(long, conflicts_with = "config")]
    pub demo: bool,
    /// Print JSON for scripts instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start every enabled server and show its state, transport, startup time and error.
    Servers {
        #[command(flatten)]
        asking: Asking,
        #[command(flatten)]
        common: Common,
    },
    /// Start every enabled server and list all tools by qualified name.
    Tools {
        #[command(flatten)]
        asking: Asking,
        #[command(flatten)]
        common: Common,
    },
    /// Start every enabled server and print the tools that best match QUERY, best
    /// first, each with its score: a tool whose name is QUERY first, then by how well
    /// its names, title, description and parameters match QUERY's words.
    Search {
        /// What to look for: words, or a tool's name.
        query: String,
        /// The most tools to print.
        #[arg(long, value_name = "N", default_value_t = 10)]
        limit: usize,
        /// Only this server's tools.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        #[command(flatten)]
        asking: Asking,
        #[command(flatten)]
        common: Common,
    },
    /// Start every enabled server and list the resources and resource templates of
    /// those that offer them.
    Resources {
        #[command(flatten)]
        asking: Asking,
        #[command(flatten)]
        common: Common,
    },
    /// Read a resource and print its contents.
    Read {
        /// The resource's URI.
        uri: String,
        /// The server to read it from; needed when more than one lists it.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        #[command(flatten)]
        asking: Asking,
        #[command(flatten)]
        common: Common,
    },
    /// Start every enabled server and list the prompts of those that offer them.
    Prompts {
        #[command(flatten)]
        asking: Asking,
        #[command(flatten)]
        common: Common,
    },
    /// Get a prompt, filled with its arguments, and print its messages.
    Prompt {
        /// The prompt's name.
        name: String,
        /// The server to get it from; needed when more than one lists it.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        /// The prompt's arguments, a JSON object of strings: the JSON itself, `@FILE`,
        /// or `-` to read it from stdin.
        #[arg(long, value_name = "JSON|@FILE|-")]
        args: Option<String>,
        #[command(flatten)]
        asking: Asking,
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
        asking: Asking,
        #[command(flatten)]
        common: Common,
    },
    /// Add a server to the configuration file, or replace the one of that name.
    #[command(
        override_usage = "mcp-runtime add [OPTIONS] <NAME> (--url <URL> | -- <COMMAND> [ARGS]...)",
        group(clap::ArgGroup::new("transport").args(["command", "url"]).required(true).multiple(false))
    )]
    Add {
        /// The server's name: letters, digits, `_` and `-`.
        name: String,
        /// A variable set for a stdio server, written into the file as it is given
        /// (repeat for more). For a secret, prefer `env_vars` in the file.
        #[arg(long = "env", value_name = "KEY=VALUE", conflicts_with = "url")]
        env: Vec<String>,
        /// The URL of a Streamable HTTP server, instead of a command.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// The environment variable holding the bearer token sent to `--url`.
        #[arg(long, value_name = "VAR", requires = "url")]
        bearer_token_env_var: Option<String>,
        /// The command that starts a stdio server, then its arguments (after `--`).
        #[arg(value_name = "COMMAND", trailing_var_arg = true, num_args = 0..)]
        command: Vec<String>,
        #[command(flatten)]
        file: FileArgs,
    },
    /// Log in to a remote server with OAuth, in a browser, and store the login.
    ///
    /// The authorization URL is opened with `$BROWSER` when set, else the system's
    /// opener, and printed on stderr; the login waits for the browser's redirect on
    /// a loopback port. Later commands send the stored token, refreshed as needed.
    Login {
        /// The server's name (a server with `url`).
        name: String,
        /// The scopes to ask for, instead of the configured `scopes` or the server's
        /// (comma-separated, or repeat the flag).
        #[arg(long, value_name = "SCOPE", value_delimiter = ',')]
        scopes: Vec<String>,
        /// Print the authorization URL only; open no browser.
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the login to be finished in the browser.
        #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
        timeout_sec: u64,
        #[command(flatten)]
        file: AuthArgs,
    },
    /// Forget the stored OAuth login of a server.
    Logout {
        /// The server's name.
        name: String,
        #[command(flatten)]
        file: AuthArgs,
    },
    /// Remove a server from the configuration file.
    Remove {
        /// The server's name.
        name: String,
        #[command(flatten)]
        file: FileArgs,
    },
    /// Show one configured server's settings, from the file alone: nothing is started.
    Get {
        /// The server's name.
        name: String,
        #[command(flatten)]
        read: ReadArgs,
    },
    /// List the configured servers, from the file alone: nothing is started.
    List {
        #[command(flatten)]
        read: ReadArgs,
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
    /// Serve every enabled server as one MCP server: their tools under the names
    /// `tools` prints, each call routed to its server. Without `--listen`, to one
    /// client on stdin and stdout, until stdin closes; with it, over Streamable HTTP
    /// at `/mcp`, to many clients. Ends every server at SIGINT or SIGTERM.
    Serve {
        /// Listen for HTTP clients on ADDR:PORT (a bare PORT means 127.0.0.1:PORT).
        /// An address other than loopback needs `[serve.auth]` in the config.
        #[arg(long, value_name = "ADDR:PORT", value_parser = parse_listen)]
        listen: Option<std::net::SocketAddr>,
        #[command(flatten)]
        common: Common,
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

/// `--listen`: `ADDR:PORT`, `[ADDR]:PORT` or a bare port on loopback.
fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        "expected ADDR:PORT with an IP address (127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080) or a bare PORT".to_owned()
    })
}
