//! `mcp-runtime`: start MCP servers, list their state and tools, call a tool; list and
//! edit the servers of a configuration file ([`edit`], [`show`]), by default the one
//! Codex reads ([`config_file`]).
//!
//! The flow is raw arguments ([`args`]) → a validated [`plan::Plan`] → running it.
//! Exit codes: 0 success; 1 the tool answered `isError: true`; 2 any other failure,
//! with a one-line reason on stderr; 130 or 143 when interrupted by `SIGINT` or
//! `SIGTERM` (every server started so far is killed first). A closed stdout (`| head`)
//! ends the output quietly with 0, once the servers are shut down.

mod args;
mod bench;
mod browser;
mod config_file;
mod demo;
mod edit;
mod elicit;
mod features;
mod import;
mod input;
mod limits;
mod logging;
mod login;
mod output;
mod plan;
mod progress;
mod serve;
mod show;

use std::{
    io::{IsTerminal, Write},
    process::ExitCode,
};

use anyhow::Context;
use clap::Parser;
use mcp_runtime::{CallError, CallOptions, Config, EraCache, Runtime, ServerState, StartOptions};

use crate::{
    login::Relogin,
    plan::{Plan, View},
};

/// The tool answered with `isError: true`.
const EXIT_TOOL_ERROR: u8 = 1;
/// Anything else failed.
const EXIT_FAILURE: u8 = 2;

fn main() -> ExitCode {
    let args = args::RawArgs::parse();
    logging::init();
    limits::raise_open_files_limit();
    // Resolved before any signal handler is installed: reading `-` from stdin may
    // block, and Ctrl-C must still end the process then.
    let plan = match Plan::resolve(args) {
        Ok(plan) => plan,
        Err(error) => return ExitCode::from(report(&error)),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return ExitCode::from(report(&error.into())),
    };
    ExitCode::from(runtime.block_on(async { run(plan, Interrupt::listen()).await }))
}

/// `SIGINT` or `SIGTERM`, once received, as the conventional exit code for it.
#[derive(Clone)]
struct Interrupt(tokio::sync::watch::Receiver<Option<u8>>);

impl Interrupt {
    /// Starts listening for the signals.
    fn listen() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let (sender, receiver) = tokio::sync::watch::channel(None);
        if let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            tokio::spawn(async move {
                let code = tokio::select! {
                    _ = interrupt.recv() => 130,
                    _ = terminate.recv() => 143,
                };
                // Receivers keep the code after the sender is gone.
                sender.send_replace(Some(code));
            });
        }
        Self(receiver)
    }

    /// Waits for a signal; its exit code.
    async fn received(&mut self) -> u8 {
        match self.0.wait_for(Option::is_some).await {
            Ok(code) => code.unwrap_or(EXIT_FAILURE),
            Err(_) => std::future::pending().await,
        }
    }
}

/// Prints `error` as the one `mcp-runtime: ` line on stderr; returns the exit code.
fn report(error: &anyhow::Error) -> u8 {
    // Several errors (every error of a configuration file) come one per line; each
    // line starts with the program's name, so each can be found and read alone.
    let text: String = mcp_runtime::redact::credentials(&describe(error))
        .lines()
        .map(|line| format!("mcp-runtime: {}\n", output::printable(line)))
        .collect();
    // Nothing is left to tell the user if stderr itself is gone.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    EXIT_FAILURE
}

/// `error` and its causes on one line, as `{:#}` writes them, except that the chain
/// ends with the first of the runtime's errors, written by
/// [`mcp_runtime::error::chain`]: the sources behind it belong to the protocol library
/// and name its internals.
fn describe(error: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in error.chain() {
        if mcp_runtime::error::is_ours(cause) {
            parts.push(output::error_text(cause));
            break;
        }
        parts.push(cause.to_string());
    }
    parts.join(": ")
}

/// Whether stdout is a terminal: the server's text printed there is escaped (see
/// [`output::output_text`]).
fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// Writes `text` to stdout and returns `code`. A closed stdout (the reader of a pipe
/// went away, as with `| head`) ends the output quietly with exit code 0: nobody
/// wants the rest.
fn print(text: &str, code: u8) -> u8 {
    print_with(code, |out| out.write_all(text.as_bytes()))
}

/// Prints what `write` writes to stdout, through one buffer (stdout on its own writes
/// line by line), and returns `code`, or the code of the failure to print it.
fn print_with(code: u8, write: impl FnOnce(&mut Stdout) -> std::io::Result<()>) -> u8 {
    let mut stdout = Stdout::new();
    let printed = write(&mut stdout).and_then(|()| stdout.finish());
    match printed {
        Ok(()) => code,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(error) => report(&anyhow::Error::from(error).context("cannot write the output")),
    }
}

/// Standard output through a buffer of its own type (not `dyn Write`: a serializer's
/// many small writes then copy into it inline rather than through a call each).
///
/// While the runtime sends credentials, nothing is printed before the end: the whole
/// output is printed then, every credential masked, as a server's text in it (a tool's
/// result, its description) may quote one.
struct Stdout {
    buffer: Vec<u8>,
    stdout: std::io::StdoutLock<'static>,
    masked: bool,
}

impl Stdout {
    /// How much is buffered before it is printed, when nothing is masked.
    const BUFFER_BYTES: usize = 1 << 16;

    fn new() -> Self {
        Self {
            buffer: Vec::with_capacity(Self::BUFFER_BYTES),
            stdout: std::io::stdout().lock(),
            masked: mcp_runtime::redact::credentials_in_use(),
        }
    }

    /// Prints what is left.
    fn finish(mut self) -> std::io::Result<()> {
        if self.masked {
            let text = String::from_utf8_lossy(&self.buffer);
            let text = mcp_runtime::redact::credentials(&text);
            self.stdout.write_all(text.as_bytes())?;
            self.buffer.clear();
        }
        self.flush()
    }
}

impl Write for Stdout {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if !self.masked && self.buffer.len() >= Self::BUFFER_BYTES {
            self.stdout.write_all(&self.buffer)?;
            self.buffer.clear();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.masked {
            self.stdout.write_all(&self.buffer)?;
            self.buffer.clear();
        }
        self.stdout.flush()
    }
}

/// Runs the plan and returns the exit code. Output and errors are printed as soon as
/// they are known, then the servers are shut down (which can take a grace period per
/// server), then the code is returned. A signal ends the run with its exit code.
async fn run(plan: Plan, mut interrupt: Interrupt) -> u8 {
    match plan {
        Plan::Call {
            config,
            others,
            scope,
            json,
            name,
            arguments,
            authority,
            elicitation,
        } => {
            let call = Call {
                json,
                name,
                arguments,
                authority,
            };
            let options = start_options(&config, scope, elicitation)
                .await
                .with_other_configured_servers(others);
            let (relogin, error) = match call
                .run(config.clone(), options.clone(), &mut interrupt, true)
                .await
            {
                Called::Done(code) => return code,
                Called::NeedsLogin(relogin, error) => (relogin, error),
            };
            // Once (login invariant 4): the call is made again after the login. The
            // server refused the first request, so the tool did not run.
            let logged_in = tokio::select! {
                logged_in = relogin.run(&config) => logged_in,
                code = interrupt.received() => return code,
            };
            if let Err(login_error) = logged_in {
                report(&error);
                return report(&login_error);
            }
            match call.run(config, options, &mut interrupt, false).await {
                Called::Done(code) => code,
                Called::NeedsLogin(_, error) => report(&error),
            }
        }
        Plan::Serve {
            config,
            scope,
            listen: Some(listen),
        } => {
            let options = match serve_options(&config, scope).await {
                Ok(options) => options,
                Err(error) => return report(&error),
            };
            // A signal drains the calls in flight before the servers end.
            match serve::http(config, options, listen, interrupt.received()).await {
                Ok(()) => 0,
                Err(error) => report(&error),
            }
        }
        plan => tokio::select! {
            code = run_to_end(plan) => code,
            // Servers run in process groups of their own, so a terminal's Ctrl-C
            // reaches only this process: dropping the run kills every server group.
            // Nothing is in flight to cancel.
            code = interrupt.received() => code,
        },
    }
}

/// Runs a plan other than a call.
async fn run_to_end(plan: Plan) -> u8 {
    match plan {
        Plan::Serve { config, scope, .. } => {
            let options = match serve_options(&config, scope).await {
                Ok(options) => options,
                Err(error) => return report(&error),
            };
            match serve::stdio(config, options).await {
                Ok(()) => 0,
                Err(error) => report(&error),
            }
        }
        Plan::ServeDemo(server) => match demo::serve(server).await {
            Ok(()) => 0,
            Err(error) => report(&error),
        },
        Plan::Report {
            mut config,
            scope,
            json,
            view,
            elicitation,
        } => {
            // `servers` is the diagnostic command: a required server that fails does
            // not end it; every server's state is shown, then the exit code says so.
            let required: Vec<String> = match &view {
                View::Servers => config
                    .servers
                    .values_mut()
                    .filter_map(|server| {
                        std::mem::take(&mut server.required).then(|| server.name.clone())
                    })
                    .collect(),
                View::Tools | View::Search { .. } => Vec::new(),
            };
            let options = start_options(&config, scope, elicitation)
                .await
                .wait_for_all();
            let mut runtime = match start(config.clone(), options.clone(), Wait::All).await {
                Ok(runtime) => runtime,
                Err(error) => return report(&error),
            };
            // Once (login invariant 4): the servers start again after the login; if
            // it cannot be made, the report shows the failure as it is. `servers`
            // shows the logins' states as they are.
            if view != View::Servers
                && let Some(relogin) = Relogin::for_servers(&runtime.servers())
                && Relogin::can_reach_person()
            {
                match relogin.run(&config).await {
                    Ok(()) => {
                        runtime.shutdown().await;
                        runtime = match start(config, options, Wait::All).await {
                            Ok(runtime) => runtime,
                            Err(error) => return report(&error),
                        };
                    }
                    Err(error) => {
                        report(&error);
                    }
                }
            }
            let servers = runtime.servers();
            let catalog = runtime.catalog();
            let failed_required: Vec<&str> = servers
                .iter()
                .filter(|status| {
                    status.state != ServerState::Ready && required.contains(&status.name)
                })
                .map(|status| status.name.as_str())
                .collect();
            let code = if failed_required.is_empty() {
                0
            } else {
                EXIT_FAILURE
            };
            let code = match &view {
                View::Search {
                    query,
                    limit,
                    server,
                } => {
                    warn_failed(&servers);
                    let hits = match server {
                        Some(server) => catalog.search_server(server, query, *limit),
                        None => catalog.search(query, *limit),
                    };
                    if json {
                        print_with(code, |out| output::write_search_json(out, &hits))
                    } else {
                        print(&output::search_table(&hits), code)
                    }
                }
                _ if json => print_with(code, |out| {
                    output::write_report_json(out, &servers, &catalog)
                }),
                View::Servers => print(&output::servers_table(&servers), code),
                View::Tools => {
                    warn_failed(&servers);
                    print(&output::tools_table(&catalog), code)
                }
            };
            if !failed_required.is_empty() {
                report(&anyhow::anyhow!(
                    "required {} failed to start: {}",
                    if failed_required.len() == 1 {
                        "server"
                    } else {
                        "servers"
                    },
                    failed_required
                        .iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            runtime.shutdown().await;
            code
        }
        Plan::Features {
            config,
            scope,
            json,
            ask,
            elicitation,
        } => {
            let options = start_options(&config, scope, elicitation)
                .await
                .wait_for_all();
            let runtime = match start(config, options, Wait::All).await {
                Ok(runtime) => runtime,
                Err(error) => return report(&error),
            };
            let code = match features::ask(&runtime, ask, json, stdout_is_terminal()).await {
                Ok(text) => print(&text, 0),
                Err(error) => report(&error),
            };
            runtime.shutdown().await;
            code
        }
        Plan::BenchStartup {
            config,
            scope,
            json,
            sessions,
            share,
        } => {
            let report = bench::startup(config, &scope, sessions, share).await;
            let text = if json {
                format!("{:#}\n", report.to_json())
            } else {
                report.to_text()
            };
            print(&text, 0)
        }
        Plan::Add(add) => match add.apply() {
            Ok(text) => print(&text, 0),
            Err(error) => report(&error),
        },
        Plan::Remove(remove) => match remove.apply() {
            Ok(edit::Removal::Removed(text)) => print(&text, 0),
            // As in Codex: nothing to remove is not a failure.
            Ok(edit::Removal::NotFound(warning)) => {
                config_file::print_warnings(&[warning]);
                0
            }
            Err(error) => report(&error),
        },
        Plan::List { loaded, json } => print(&show::list(&loaded, json), 0),
        Plan::Get { loaded, name, json } => match show::get(&loaded, &name, json) {
            Ok(text) => print(&text, 0),
            Err(error) => report(&error),
        },
        Plan::Print(text) => print(&text, 0),
        Plan::Login {
            config,
            server,
            scopes,
            no_browser,
            wait,
        } => match login::login(&config, &server, scopes, no_browser, wait).await {
            Ok(text) => print(&text, 0),
            Err(error) => report(&error),
        },
        Plan::Logout { config, server } => match login::logout(&config, &server).await {
            Ok(text) => print(&text, 0),
            Err(error) => report(&error),
        },
        Plan::Call { .. } => unreachable!("calls run through `Call::run`"),
    }
}

/// How a [`Call`] ended.
enum Called {
    /// With this exit code, everything printed and the servers shut down.
    Done(u8),
    /// With a failure another login may mend (the servers shut down, nothing
    /// printed): the login, and the failure to report if it cannot be made.
    NeedsLogin(Relogin, anyhow::Error),
}

/// A `call` command.
struct Call {
    json: bool,
    name: String,
    arguments: Box<serde_json::value::RawValue>,
    authority: Option<mcp_runtime::CallAuthority>,
}

impl Call {
    /// Starts the servers the plan chose (only the tool's own server, when its name
    /// tells which), calls the tool and prints its result. The call does not wait for
    /// every server: once the runtime is usable (every `required` server ready, and
    /// the optional ones given the default grace), the call waits only for the
    /// servers its tool may belong to. A `required` server that fails to start still
    /// fails the command. A signal while the call is in flight gives it up: the
    /// `notifications/cancelled` it owes is written before every server is killed.
    /// A failure another login may mend ends the call with [`Called::NeedsLogin`]
    /// when `relogin` allows it and a person can finish that login.
    async fn run(
        &self,
        config: Config,
        options: StartOptions,
        interrupt: &mut Interrupt,
        relogin: bool,
    ) -> Called {
        let started = tokio::select! {
            started = start(config, options, Wait::Usable) => started,
            // Dropping the start kills what it started; nothing was called yet.
            code = interrupt.received() => return Called::Done(code),
        };
        let runtime = match started {
            Ok(runtime) => runtime,
            Err(error) => return Called::Done(report(&error)),
        };
        // The server's progress, as a bar on a terminal, cleared before the result.
        let bar = progress::CallBar::new();
        let mut options = CallOptions::new().with_progress(bar.on_progress());
        if let Some(authority) = self.authority.clone() {
            options = options.with_authority(authority);
        }
        let answer = tokio::select! {
            answer = runtime.call_tool_exact(&self.name, &self.arguments, options) => answer,
            code = interrupt.received() => {
                runtime.abort().await;
                return Called::Done(code);
            }
        };
        drop(bar);
        if let Err(error) = &answer
            && relogin
            && let Some(login) = error.http_failure().and_then(Relogin::for_failure)
            && Relogin::can_reach_person()
        {
            let error = anyhow::Error::from(error.clone());
            return tokio::select! {
                () = runtime.shutdown() => Called::NeedsLogin(login, error),
                code = interrupt.received() => Called::Done(code),
            };
        }
        let code = match answer {
            Ok(result) => {
                let code = if result.is_error() {
                    EXIT_TOOL_ERROR
                } else {
                    0
                };
                match output::call_json_or_text(&result, self.json, stdout_is_terminal()) {
                    Ok(text) => print(&text, code),
                    Err(error) => report(&error.into()),
                }
            }
            // The result as the server gave it, then why it is refused.
            Err(error @ CallError::OutputMismatch { .. }) => {
                let printed = match &error {
                    CallError::OutputMismatch { result, .. } => {
                        output::call_json_or_text(result, self.json, stdout_is_terminal())
                            .map(|text| print(&text, 0))
                    }
                    _ => Ok(0),
                };
                match printed {
                    Ok(_) => report(&error.into()),
                    Err(failure) => report(&failure.into()),
                }
            }
            Err(error @ CallError::UnknownTool { .. }) => {
                warn_failed(&runtime.servers());
                report(&anyhow::anyhow!(
                    "{error} (list them with `mcp-runtime tools`)"
                ))
            }
            Err(error) => report(&error.into()),
        };
        Called::Done(tokio::select! {
            () = runtime.shutdown() => code,
            // Dropping the shutdown kills what is left at once.
            code = interrupt.received() => code,
        })
    }
}

/// What the `options` given to [`start`] wait for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Every server settles (`StartOptions::wait_for_all`): a report shows them all.
    All,
    /// The runtime is usable; servers may go on starting after it returns.
    Usable,
}

/// How a command starts the runtime of `config` in `scope`: questions answered as
/// `elicitation` says, the stored OAuth logins, and the protocol eras kept in the
/// user's cache directory (a repeated run starts each local server in its era without
/// probing it).
async fn start_options(
    config: &Config,
    scope: String,
    elicitation: Option<elicit::Policy>,
) -> StartOptions {
    let credentials = login::credentials(config).await;
    options_with(scope, elicitation, credentials)
}

/// [`start_options`], with the stored logins of `credentials`, if any.
fn options_with(
    scope: String,
    elicitation: Option<elicit::Policy>,
    credentials: Option<std::sync::Arc<dyn mcp_runtime::auth::CredentialSource>>,
) -> StartOptions {
    let mut options = StartOptions::new()
        .with_scope(scope)
        .with_host(elicit::handlers(elicitation, elicit::person_at_terminal()));
    if let Some(source) = credentials {
        options = options.with_credentials(source);
    }
    if let Some(cache) = EraCache::in_user_cache() {
        options = options.with_era_cache(cache);
    }
    options
}

/// How `serve` starts the servers of `config` in `scope`: as [`start_options`] says,
/// a server's question declined where the client does not answer it (nobody is at a
/// terminal). A replica of a fleet starts them without the stored OAuth logins, whose
/// tokens are in this machine's store alone, which the other replicas can neither
/// read nor refresh; and refuses a server with one, as it does one configured for
/// OAuth (`mcp_runtime_serve::fleet`).
async fn serve_options(config: &Config, scope: String) -> anyhow::Result<StartOptions> {
    let credentials = login::credentials(config).await;
    let decline = Some(elicit::Policy::Decline);
    if config.serve.fleet.is_none() {
        return Ok(options_with(scope, decline, credentials));
    }
    let instead = "serve it from a gateway without `[serve.fleet]`, or give it a static token through `bearer_token_env_var`";
    let stored = match &credentials {
        Some(source) => login::logged_in(config, &**source).await,
        None => None,
    };
    match stored {
        Some(login::Stored::Login(server)) => anyhow::bail!(
            "`[serve.fleet]`: server `{server}` has an OAuth login, whose tokens this machine's store keeps for itself; \
             a fleet cannot serve it yet ({instead} and run `mcp-runtime logout {server}`)"
        ),
        Some(login::Stored::Unreadable { server, error }) => anyhow::bail!(
            "`[serve.fleet]`: whether server `{server}` has an OAuth login cannot be read from this machine's token store \
             ({error}); a fleet cannot serve a server logged in to on one machine ({instead}, and mend or remove the store)"
        ),
        None => Ok(options_with(scope, decline, None)),
    }
}

/// Starts the servers with `options`, which wait as `wait` says; with the live
/// display (which shows the servers still starting) when stderr is a terminal. The
/// display ends when the start returns: with [`Wait::Usable`] the servers still
/// starting then are left shown as starting, so that it does not hold up the
/// command nor draw over its output.
async fn start(config: Config, mut options: StartOptions, wait: Wait) -> anyhow::Result<Runtime> {
    let stop = mcp_runtime::CancellationToken::new();
    let display = if std::io::stderr().is_terminal() {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        options = options.with_events(sender);
        Some(tokio::spawn(progress::show(receiver, stop.clone())))
    } else {
        None
    };
    let started = Runtime::start(config, options).await;
    if let Some(display) = display {
        // With `Wait::All` it ends with the startups' summary; with `Wait::Usable`
        // it stops now, the servers still starting shown as starting.
        if wait == Wait::Usable {
            stop.cancel();
        }
        let _ = display.await;
    }
    started.context("starting servers")
}

/// One stderr line per server that failed to start.
fn warn_failed(servers: &[mcp_runtime::ServerStatus]) {
    let mut stderr = std::io::stderr().lock();
    for server in servers {
        if let Some(error) = &server.error {
            let _ = writeln!(
                stderr,
                "mcp-runtime: server `{}` {}: {}",
                server.name,
                server.state.as_str(),
                output::printable(&output::error_text(error))
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mcp_runtime::{CallError, error::RequestError};

    use super::*;

    #[test]
    fn a_reported_error_ends_with_the_runtime_s_own_text() {
        let error = CallError::Failed {
            server: "web".into(),
            tool: "echo".into(),
            source: RequestError::Other {
                description: "the request failed".into(),
                source: Arc::new(std::io::Error::other("Transport [internal::Type<T>] error")),
            },
        };
        let error = anyhow::Error::from(error).context("calling `echo`");
        assert!(
            format!("{error:#}").contains("Transport ["),
            "the chain goes on"
        );
        assert_eq!(
            describe(&error),
            "calling `echo`: tool `echo` on server `web` failed: the request failed"
        );
    }
}
