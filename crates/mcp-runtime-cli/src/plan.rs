//! The command line resolved: a validated plan of what to run.
//!
//! Everything that can be checked before a server starts is checked here: the
//! configuration is loaded and the tool arguments and sandbox state are read (from
//! their files or stdin) and parsed, so a typo fails at once
//! with exit code 2 rather than after every server has started.

use anyhow::bail;
use mcp_runtime::{CallAuthority, Config, ServerConfig};
use serde_json::value::RawValue;

use crate::{
    args::{Asking, AuthArgs, Bench, Command, Common, RawArgs},
    config_file::{self, Loaded},
    demo::DemoServer,
    edit::{self, Transport},
    features::Ask,
    input::JsonFlag,
};

/// What to do.
pub enum Plan {
    /// Start the servers and report on them.
    Report {
        config: Config,
        scope: String,
        json: bool,
        view: View,
        /// `--elicitation`, if given.
        elicitation: Option<crate::elicit::Policy>,
    },
    /// Start the servers the tool may belong to and call it.
    Call {
        /// Only the tool's own server, when its name tells which (see
        /// [`servers_to_call`]).
        config: Config,
        /// The enabled servers left out of `config`, whose names the tools are
        /// named beside, so that they have the names `tools` shows.
        others: Vec<String>,
        scope: String,
        json: bool,
        name: String,
        /// A JSON object, exactly as the user wrote it.
        arguments: Box<RawValue>,
        authority: Option<CallAuthority>,
        /// How questions from the servers are answered: `--elicitation`, if given.
        elicitation: Option<crate::elicit::Policy>,
    },
    /// Start the servers and ask them for resources or prompts.
    Features {
        config: Config,
        scope: String,
        json: bool,
        ask: crate::features::Ask,
        /// `--elicitation`, if given.
        elicitation: Option<crate::elicit::Policy>,
    },
    /// Start many runtimes at once and measure it.
    BenchStartup {
        config: Config,
        scope: String,
        json: bool,
        sessions: u32,
        share: bool,
    },
    /// Serve the servers as one MCP server, on stdio or over HTTP on `listen`.
    Serve {
        config: Config,
        scope: String,
        listen: Option<std::net::SocketAddr>,
    },
    /// Be a demo server.
    ServeDemo(DemoServer),
    /// Add or replace a server in a configuration file.
    Add(edit::Add),
    /// Remove a server from a configuration file.
    Remove(edit::Remove),
    /// Print the configured servers.
    List { loaded: Loaded, json: bool },
    /// Print one configured server.
    Get {
        loaded: Loaded,
        name: String,
        json: bool,
    },
    /// Print text that is already known, such as what `import` converted.
    Print(String),
    /// Log in to a remote server and store the login.
    Login {
        config: Config,
        server: ServerConfig,
        scopes: Option<Vec<String>>,
        no_browser: bool,
        wait: std::time::Duration,
    },
    /// Forget a remote server's stored login.
    Logout {
        config: Config,
        server: ServerConfig,
    },
}

/// Which report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum View {
    Servers,
    Tools,
    /// The tools that best match `query` (of `server` only, if given), at most
    /// `limit`.
    Search {
        query: String,
        limit: usize,
        server: Option<String>,
    },
}

impl Plan {
    pub fn resolve(args: RawArgs) -> anyhow::Result<Self> {
        Ok(match args.command {
            Command::Servers { asking, common } => Self::report(common, asking, View::Servers)?,
            Command::Tools { asking, common } => Self::report(common, asking, View::Tools)?,
            Command::Search {
                query,
                limit,
                server,
                asking,
                common,
            } => {
                let plan = Self::report(
                    common,
                    asking,
                    View::Search {
                        query,
                        limit,
                        server: server.clone(),
                    },
                )?;
                if let (Some(server), Self::Report { config, .. }) = (&server, &plan)
                    && !config.servers.contains_key(server)
                {
                    bail!("no server is named `{server}` (list them with `mcp-runtime list`)");
                }
                plan
            }
            Command::Resources { asking, common } => {
                Self::features(common, asking, Ask::Resources)?
            }
            Command::Prompts { asking, common } => Self::features(common, asking, Ask::Prompts)?,
            Command::Read {
                uri,
                server,
                asking,
                common,
            } => Self::features(common, asking, Ask::Read { uri, server })?,
            Command::Prompt {
                name,
                server,
                args,
                asking,
                common,
            } => {
                let arguments = args
                    .map(|args| {
                        JsonFlag::new("--args", args).object_value(&mut std::io::stdin().lock())
                    })
                    .transpose()?;
                Self::features(
                    common,
                    asking,
                    Ask::Prompt {
                        name,
                        server,
                        arguments,
                    },
                )?
            }
            Command::Call {
                name,
                args,
                sandbox_state,
                codex_executable,
                asking,
                common,
            } => {
                let arguments = JsonFlag::new("--args", args);
                let sandbox_state =
                    sandbox_state.map(|value| JsonFlag::with_bare_path("--sandbox-state", value));
                if arguments.reads_stdin()
                    && sandbox_state.as_ref().is_some_and(JsonFlag::reads_stdin)
                {
                    bail!(
                        "`--args` and `--sandbox-state` cannot both read stdin (`-`); give one of them as `@FILE`"
                    );
                }
                let mut stdin = std::io::stdin().lock();
                let arguments = arguments.object(&mut stdin)?;
                if let Some(path) = &codex_executable
                    && !path.is_absolute()
                {
                    bail!(
                        "`--codex-executable` must be an absolute path (`PATH` is never searched); {}",
                        absolute_path_hint(path)
                    );
                }
                let authority = sandbox_state
                    .map(|state| {
                        let authority = CallAuthority::new(state.sandbox_state(&mut stdin)?);
                        anyhow::Ok(match codex_executable {
                            Some(path) => authority.with_codex_executable(path),
                            None => authority,
                        })
                    })
                    .transpose()?;
                let (config, others) = servers_to_call(&name, load(&common)?);
                Self::Call {
                    config,
                    others,
                    scope: common.scope,
                    json: common.json,
                    name,
                    arguments,
                    authority,
                    elicitation: asking.elicitation,
                }
            }
            Command::Bench {
                bench:
                    Bench::Startup {
                        sessions,
                        no_share,
                        common,
                    },
            } => Self::BenchStartup {
                config: load(&common)?,
                scope: common.scope,
                json: common.json,
                sessions,
                share: !no_share,
            },
            Command::Serve { listen, common } => Self::Serve {
                config: load(&common)?,
                scope: common.scope,
                listen,
            },
            Command::ServeDemo { server } => Self::ServeDemo(server),
            Command::Add {
                name,
                env,
                url,
                bearer_token_env_var,
                command,
                file,
            } => {
                edit::check_name(&name)?;
                let env = edit::parse_env(env)?;
                let transport = match (url, command.split_first()) {
                    (Some(url), _) => Transport::Http {
                        url,
                        bearer_token_env_var,
                    },
                    (None, Some((command, args))) => Transport::Stdio {
                        command: command.clone(),
                        args: args.to_vec(),
                        env,
                    },
                    (None, None) => bail!(
                        "`add` needs the server's command after `--`, or `--url URL` (for example `mcp-runtime add {name} -- npx -y some-server`)"
                    ),
                };
                Self::Add(edit::Add {
                    path: config_file::edit_target(file.config.as_deref())?,
                    name,
                    transport,
                })
            }
            Command::Remove { name, file } => {
                edit::check_name(&name)?;
                Self::Remove(edit::Remove {
                    path: config_file::edit_target(file.config.as_deref())?,
                    name,
                })
            }
            Command::Get { name, read } => Self::Get {
                loaded: config_file::read_as_written(read.config.as_deref(), read.demo)?,
                name,
                json: read.json,
            },
            Command::List { read } => Self::List {
                loaded: config_file::read_as_written(read.config.as_deref(), read.demo)?,
                json: read.json,
            },
            Command::Import { file } => Self::Print(crate::import::toml(&file)?),
            Command::Login {
                name,
                scopes,
                no_browser,
                timeout_sec,
                file,
            } => {
                let config = load_for_auth(&file)?;
                let server = remote_server(&config, &name)?;
                Self::Login {
                    config,
                    server,
                    scopes: (!scopes.is_empty()).then_some(scopes),
                    no_browser,
                    wait: std::time::Duration::from_secs(timeout_sec),
                }
            }
            Command::Logout { name, file } => {
                let config = load_for_auth(&file)?;
                let server = remote_server(&config, &name)?;
                Self::Logout { config, server }
            }
        })
    }

    fn features(common: Common, asking: Asking, ask: Ask) -> anyhow::Result<Self> {
        Ok(Self::Features {
            config: load(&common)?,
            scope: common.scope,
            json: common.json,
            ask,
            elicitation: asking.elicitation,
        })
    }

    fn report(common: Common, asking: Asking, view: View) -> anyhow::Result<Self> {
        Ok(Self::Report {
            config: load(&common)?,
            scope: common.scope,
            json: common.json,
            view,
            elicitation: asking.elicitation,
        })
    }
}

/// The server `name` of `config`, which must be a remote one (with `url`).
fn remote_server(config: &Config, name: &str) -> anyhow::Result<ServerConfig> {
    let Some(server) = config.servers.get(name) else {
        bail!("no server is named `{name}` (list them with `mcp-runtime list`)");
    };
    if !matches!(
        server.transport,
        mcp_runtime::config::TransportConfig::StreamableHttp(_)
    ) {
        bail!("server `{name}` is not a remote server: only a server with `url` logs in");
    }
    Ok(server.clone())
}

/// The configuration of a command that starts servers: `--config`, `--demo`, the
/// default file when it exists, else the demo ([`config_file`]).
fn load(common: &Common) -> anyhow::Result<Config> {
    Ok(config_file::read(common.config.as_deref(), common.demo, true)?.config)
}

/// The configuration `login` and `logout` read: `--config`, else the default file;
/// never the demo, whose servers have no login.
fn load_for_auth(file: &AuthArgs) -> anyhow::Result<Config> {
    Ok(config_file::read(file.config.as_deref(), false, false)?.config)
}

/// `config` with only the enabled server that the qualified tool name `name` can
/// belong to, when its `mcp__SERVER__` prefix names exactly one: a call starts only
/// the server it needs. When the name cannot tell (no enabled server, or several,
/// match its prefix), every server is kept and started.
///
/// Also the names of the enabled servers left out: the runtime names the tools as if
/// they were started too (`StartOptions::with_other_configured_servers`), so a tool
/// has the name `tools` shows, hashed when another server's name sanitizes alike.
pub fn servers_to_call(name: &str, mut config: Config) -> (Config, Vec<String>) {
    let enabled: Vec<String> = config
        .enabled_servers()
        .map(|server| server.name.clone())
        .collect();
    let owners =
        mcp_runtime::naming::servers_for_qualified_name(name, enabled.iter().map(String::as_str));
    if owners.is_empty() {
        // A disabled server's tool: nothing need start for the runtime to say so.
        let disabled = config
            .servers
            .values()
            .filter(|server| !server.enabled)
            .map(|server| server.name.as_str());
        let owner = match mcp_runtime::naming::servers_for_qualified_name(name, disabled)[..] {
            [server] => Some(server.to_owned()),
            _ => None,
        };
        if let Some(owner) = owner {
            config.servers.retain(|name, _| *name == owner);
            return (config, Vec::new());
        }
    }
    let others = match owners[..] {
        [server] => {
            config.servers.retain(|name, _| name == server);
            enabled
                .iter()
                .filter(|name| *name != server)
                .cloned()
                .collect()
        }
        _ => Vec::new(),
    };
    (config, others)
}

/// How to make `path` absolute in a shell: a bare name is the program the shell finds
/// on `PATH` (`realpath NAME` would name a file of the current directory); a path with
/// a directory is resolved from here.
fn absolute_path_hint(path: &std::path::Path) -> String {
    let shown = path.display();
    if path.components().count() == 1 {
        format!("for the `{shown}` on `PATH`, try `$(command -v {shown})`")
    } else {
        format!("try `$(realpath {shown})`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_program_name_is_made_absolute_from_path_and_a_relative_path_from_here() {
        assert_eq!(
            absolute_path_hint(std::path::Path::new("codex")),
            "for the `codex` on `PATH`, try `$(command -v codex)`"
        );
        assert_eq!(
            absolute_path_hint(std::path::Path::new("bin/codex")),
            "try `$(realpath bin/codex)`"
        );
        assert_eq!(
            absolute_path_hint(std::path::Path::new("./codex")),
            "try `$(realpath ./codex)`"
        );
    }

    fn config(names: &[&str]) -> Config {
        let mut config = Config::default();
        for name in names {
            let server = ServerConfig::stdio(*name, "unused", Vec::new());
            config.servers.insert((*name).to_owned(), server);
        }
        config
    }

    fn kept(name: &str, config: Config) -> Vec<String> {
        servers_to_call(name, config)
            .0
            .servers
            .into_keys()
            .collect()
    }

    #[test]
    fn the_servers_left_out_are_named_for_the_runtime() {
        let mut config = config(&["a-b", "a_b", "c", "off"]);
        config.servers.get_mut("off").unwrap().enabled = false;
        let (kept, others) = servers_to_call("mcp__a_b_ec4afa65682a__echo", config.clone());
        assert_eq!(kept.servers.into_keys().collect::<Vec<_>>(), ["a_b"]);
        assert_eq!(
            others,
            ["a-b", "c"],
            "every enabled server but the one kept"
        );
        let (kept, others) = servers_to_call("mcp__a_b__echo", config);
        assert_eq!(kept.servers.len(), 4);
        assert!(others.is_empty(), "every server is started");
    }

    #[test]
    fn a_call_keeps_only_the_server_its_name_belongs_to() {
        assert_eq!(kept("mcp__b__echo", config(&["a", "b", "c"])), ["b"]);
    }

    #[test]
    fn a_name_that_cannot_tell_its_server_keeps_every_server() {
        // Both names sanitize to `a_b`.
        assert_eq!(
            kept("mcp__a_b__echo", config(&["a-b", "a_b"])),
            ["a-b", "a_b"]
        );
        assert_eq!(kept("mcp__z__echo", config(&["a", "b"])), ["a", "b"]);
        assert_eq!(kept("echo", config(&["a", "b"])), ["a", "b"]);
    }

    #[test]
    fn a_disabled_server_does_not_make_a_name_ambiguous() {
        let mut both = config(&["a-b", "a_b"]);
        both.servers.get_mut("a-b").unwrap().enabled = false;
        assert_eq!(kept("mcp__a_b__echo", both), ["a_b"]);
    }
}
