//! The command line resolved: a validated plan of what to run.
//!
//! Everything that can be checked before a server starts is checked here: the
//! configuration is loaded and the tool arguments are parsed, so a typo fails at once
//! with exit code 2 rather than after every server has started.

use std::path::Path;

use anyhow::{Context, bail};
use mcp_runtime::{CallAuthority, Config, SandboxState, ServerConfig, model::JsonObject};

use crate::{
    args::{Bench, Command, Common, RawArgs},
    demo::DemoServer,
};

/// What to do.
pub enum Plan {
    /// Start the servers and report on them.
    Report {
        config: Config,
        scope: String,
        json: bool,
        view: View,
    },
    /// Start the servers and call one tool.
    Call {
        config: Config,
        scope: String,
        json: bool,
        name: String,
        arguments: JsonObject,
        authority: Option<CallAuthority>,
    },
    /// Start many runtimes at once and measure it.
    BenchStartup {
        config: Config,
        scope: String,
        json: bool,
        sessions: u32,
        share: bool,
    },
    /// Be a demo server.
    ServeDemo(DemoServer),
}

/// Which report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Servers,
    Tools,
}

impl Plan {
    pub fn resolve(args: RawArgs) -> anyhow::Result<Self> {
        Ok(match args.command {
            Command::Servers { common } => Self::report(common, View::Servers)?,
            Command::Tools { common } => Self::report(common, View::Tools)?,
            Command::Call {
                name,
                args,
                sandbox_state,
                codex_executable,
                common,
            } => {
                let arguments = match serde_json::from_str(&args) {
                    Ok(serde_json::Value::Object(object)) => object,
                    Ok(_) => bail!("`--args` must be a JSON object, like '{{\"a\": 1}}'"),
                    Err(error) => bail!("`--args` is not valid JSON: {error}"),
                };
                if let Some(path) = &codex_executable
                    && !path.is_absolute()
                {
                    bail!(
                        "`--codex-executable` must be an absolute path (`PATH` is never searched); try `$(realpath {})`",
                        path.display()
                    );
                }
                let authority = sandbox_state
                    .map(|state| {
                        let authority = CallAuthority::new(read_state(&state)?);
                        anyhow::Ok(match codex_executable {
                            Some(path) => authority.with_codex_executable(path),
                            None => authority,
                        })
                    })
                    .transpose()?;
                Self::Call {
                    config: load(common.config.as_deref())?,
                    scope: common.scope,
                    json: common.json,
                    name,
                    arguments,
                    authority,
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
                config: load(common.config.as_deref())?,
                scope: common.scope,
                json: common.json,
                sessions,
                share: !no_share,
            },
            Command::ServeDemo { server } => Self::ServeDemo(server),
        })
    }

    fn report(common: Common, view: View) -> anyhow::Result<Self> {
        Ok(Self::Report {
            config: load(common.config.as_deref())?,
            scope: common.scope,
            json: common.json,
            view,
        })
    }
}

/// `--sandbox-state`: JSON text when it starts with `{` or `[`, else the path of a file
/// holding it. The text is kept exactly as written (surrounding whitespace aside).
fn read_state(value: &str) -> anyhow::Result<SandboxState> {
    if value.trim_start().starts_with(['{', '[']) {
        return SandboxState::from_json(value).context("in `--sandbox-state`");
    }
    let text = std::fs::read_to_string(value)
        .with_context(|| format!("cannot read the sandbox state file `{value}`"))?;
    SandboxState::from_json(text).with_context(|| format!("in `{value}`"))
}

fn load(path: Option<&Path>) -> anyhow::Result<Config> {
    match path {
        Some(path) => Ok(Config::load(path)?),
        None => demo_config(),
    }
}

/// The embedded demo configuration: servers built into this very binary.
pub fn demo_config() -> anyhow::Result<Config> {
    let exe = std::env::current_exe().context("cannot find the path of this executable")?;
    let exe = exe
        .to_str()
        .context("the path of this executable is not valid UTF-8")?
        .to_owned();
    let mut config = Config::default();
    for (name, server) in [("text", "text"), ("math", "math"), ("sandbox", "sandbox")] {
        let server =
            ServerConfig::stdio(name, exe.clone(), vec!["serve-demo".into(), server.into()]);
        config.servers.insert(name.to_owned(), server);
    }
    Ok(config)
}
