//! `mcp-fixture`: a real MCP server process for mcp-runtime's integration
//! tests, whose behaviour is chosen by flags.
//!
//! The command line is parsed, then the startup actions run in order (ignore
//! `SIGTERM`, exit early, write stderr lines, flood stderr, spawn a
//! grandchild), then the server is served over stdio, or over Streamable HTTP
//! with `--http`. The stdio server is rmcp's, except that the faults only raw
//! bytes can produce (marked "raw" in `--help`) select the fixture's own raw
//! server. See `--help` for the flags and the `mcp_runtime_fixtures` crate docs
//! for what each part does.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::{Command, ExitCode, Stdio},
    str::FromStr as _,
    sync::Arc,
    time::Duration,
};

use anyhow::Context as _;
use clap::Parser;
use mcp_runtime_fixtures::{
    Behaviour, Era, Fixture, MessageLog, fault, http, oauth,
    raw::{self, BadSchema, InitializeFault, Mangle, RawBehaviour, RawServer},
    stdio,
};
use rmcp::model::{CacheScope, ExperimentalCapabilities, JsonObject};

/// A fixture MCP server for mcp-runtime's integration tests.
#[derive(Debug, Parser)]
#[command(name = "mcp-fixture", version)]
struct Args {
    /// Add generated tools `tool_0` … `tool_{N-1}` after the fixed tools
    #[arg(long, value_name = "N", default_value_t = 0)]
    tools: usize,
    /// Add a tool with exactly this name (repeatable), after the generated ones
    #[arg(long = "tool-name", value_name = "NAME")]
    tool_names: Vec<String>,
    /// Paginate `tools/list`, N tools a page; the cursor is the next offset
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    page_size: Option<u32>,
    /// Fault: every `tools/list` page names the next cursor `again`, forever
    #[arg(long)]
    repeat_cursor: bool,
    /// Fault: end the last `tools/list` page with `nextCursor: ""`
    #[arg(long, conflicts_with = "repeat_cursor")]
    empty_last_cursor: bool,
    /// Wait this long before answering `initialize`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    init_delay_ms: u64,
    /// Wait this long before answering `server/discover`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    discover_delay_ms: u64,
    /// Wait this long before answering each `tools/list`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    list_delay_ms: u64,
    /// Spin a CPU this long (thread CPU time) before answering each `tools/list`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    list_cpu_ms: u64,
    /// Wait this long before answering each `tools/call`
    #[arg(long, value_name = "MS", default_value_t = 0)]
    call_delay_ms: u64,
    /// Fault: never answer `initialize` (exit only when stdin closes)
    #[arg(long)]
    hang_initialize: bool,
    /// Fault: on `initialize`, write three stderr lines and exit with CODE
    #[arg(long, value_name = "CODE", allow_negative_numbers = true)]
    crash_initialize: Option<i32>,
    /// Fault: never answer `tools/list` (exit only when stdin closes)
    #[arg(long)]
    hang_list: bool,
    /// Fault: on `tools/list`, write three stderr lines and exit with CODE
    #[arg(long, value_name = "CODE", allow_negative_numbers = true)]
    crash_list: Option<i32>,
    /// Fault: on `tools/call`, write three stderr lines and exit with CODE
    #[arg(long, value_name = "CODE", allow_negative_numbers = true)]
    exit_during_call: Option<i32>,
    /// Fault: answer `tools/list` with JSON-RPC error -32603
    #[arg(long)]
    fail_list: bool,
    /// List `ask`, `roots` and `sample`, tools that ask the client for an
    /// elicitation, its roots and a model's message
    #[arg(long)]
    asks: bool,
    /// List `task_job`, which runs as a task of the 2026-07-28 tasks extension
    #[arg(long)]
    tasks: bool,
    /// Offer the resource `fixture://counter` (subscriptions, list changes) and list
    /// `bump`, which changes it
    #[arg(long)]
    resources: bool,
    /// With `--resources`: also offer `fixture://asked`, whose read asks the client
    /// for a name first
    #[arg(long)]
    asking_resource: bool,
    /// With --resources: keep sending on the listen streams the client closed, with
    /// their ids, as a server that has not yet read their cancellation
    #[arg(long, requires = "resources")]
    late_streams: bool,
    /// `add_tool` tells every handshake session of the change, not only the caller's
    #[arg(long)]
    broadcast_tool_changes: bool,
    /// Offer logging, taking `logging/setLevel`
    #[arg(long)]
    logging: bool,
    /// Answer `initialize` with these `instructions`
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// List `future`, a tool with fields of its own, which answers a `video` block
    /// and fields no revision rmcp knows has (so does `task_job` with
    /// `"future": true`)
    #[arg(long)]
    future: bool,
    /// Give `echo` this `outputSchema` (a JSON object)
    #[arg(long, value_name = "JSON", value_parser = parse_object)]
    echo_output_schema: Option<JsonObject>,
    /// Before answering a `tools/call` that asks for progress, report N steps
    #[arg(long, value_name = "N", default_value_t = 0)]
    progress_steps: usize,
    /// List `crash`, whose call exits the process (status 3) while answering it
    #[arg(long)]
    crash_tool: bool,
    /// Wait this long after each progress report, so that each is sent on its own
    #[arg(long, value_name = "MS", default_value_t = 0)]
    progress_interval_ms: u64,
    /// Before answering a `tools/call`, log N messages (`notifications/message`),
    /// `debug` and `warning` in turn
    #[arg(long, value_name = "N", default_value_t = 0)]
    call_log_messages: usize,
    /// Fault: list a tool `padding` whose description is N bytes, so the
    /// `tools/list` answer is one line longer than N
    #[arg(long, value_name = "N", default_value_t = 0)]
    list_padding_bytes: usize,
    /// Fault: add a text block of N bytes to every `tools/call` result
    #[arg(long, value_name = "N", default_value_t = 0)]
    call_result_bytes: usize,
    /// Fault: write N bytes of stderr, in 1 KiB lines, before serving
    #[arg(long, value_name = "N", default_value_t = 0)]
    stderr_flood_bytes: usize,
    /// Fault: ignore `SIGTERM` (so does a grandchild spawned with `--spawn-grandchild`)
    #[arg(long)]
    ignore_sigterm: bool,
    /// Fault: keep running after stdin closes, until killed
    #[arg(long)]
    ignore_stdin_eof: bool,
    /// On `SIGTERM`, append this process's pid and a newline to FILE and exit (a
    /// server sent its grace period's `SIGTERM`, rather than killed outright)
    #[arg(long, value_name = "FILE", conflicts_with = "ignore_sigterm")]
    sigterm_note: Option<PathBuf>,
    /// Over stdio: once stdin has closed and serving has ended by itself, append
    /// this process's pid and a newline to FILE (a server its client let go of,
    /// rather than killed)
    #[arg(long, value_name = "FILE")]
    ended_note: Option<PathBuf>,
    /// Fault (raw): write a line that is not JSON before the `initialize` reply
    #[arg(long, conflicts_with_all = ["garbage_instead_of_initialize", "unsolicited_response"])]
    garbage_before_initialize: bool,
    /// Fault (raw): write a line that is not JSON instead of the `initialize` reply
    #[arg(long, conflicts_with = "unsolicited_response")]
    garbage_instead_of_initialize: bool,
    /// Fault (raw): write `{"jsonrpc":"2.0","id":987654,"result":{}}` before the
    /// `initialize` reply
    #[arg(long)]
    unsolicited_response: bool,
    /// Fault (raw): list a tool `bad_schema` second, whose `inputSchema` is KIND:
    /// `string`, `null`, `array` or `missing`
    #[arg(long, value_name = "KIND", value_parser = BadSchema::from_str)]
    bad_input_schema: Option<BadSchema>,
    /// Fault (raw): list a tool with an empty name third
    #[arg(long)]
    empty_tool_name: bool,
    /// Fault (raw): list a second tool named `echo` last
    #[arg(long)]
    duplicate_tool: bool,
    /// Fault (raw): answer one message at a time, each call after its delay (its
    /// `delay_ms` argument, else --call-delay-ms), even when it was cancelled
    #[arg(long)]
    ignore_cancel: bool,
    /// Fault (raw): spoil the answer to METHOD as KIND (repeatable): `not-utf8`
    /// (a byte that is not UTF-8 in a string), `several-lines` (pretty-printed),
    /// `batch` (in a JSON-RPC batch), `without-protocol-version` (its result
    /// without `protocolVersion`), `empty-result` (the result `{}`, also for a
    /// method it does not know, such as `server/discover`). With --http (not raw):
    /// the first three, rmcp's answer sent again spoiled, as an event stream
    #[arg(long = "mangle-answer", value_name = "METHOD=KIND", value_parser = raw::parse_mangled)]
    mangled_answers: Vec<(String, Mangle)>,
    /// With --http and --mangle-answer: send a spoiled answer as a JSON body
    #[arg(long, requires_all = ["http", "mangled_answers"])]
    http_json_answers: bool,
    /// Advertise `capabilities.experimental[NAME] = JSON` (repeatable; JSON is an object)
    #[arg(long, value_name = "NAME=JSON", value_parser = parse_experimental)]
    experimental: Vec<(String, JsonObject)>,
    /// Answer `initialize` only once DIR/PID.initialize exists, and each
    /// `tools/list` only once DIR/PID.tools-list exists (an error if it holds
    /// `fail`)
    #[arg(long, value_name = "DIR")]
    gate_dir: Option<PathBuf>,
    /// Append one JSON line per received JSON-RPC message to FILE
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Write three startup lines to stderr and exit with CODE before reading anything
    #[arg(long, value_name = "CODE", allow_negative_numbers = true)]
    exit_during_startup: Option<i32>,
    /// Write N lines `fixture stderr line K` to stderr at start, then serve
    #[arg(long, value_name = "N", default_value_t = 0)]
    stderr_lines: usize,
    /// Write `fixture: NAME=VALUE` to stderr at start, VALUE the environment
    /// variable's (repeatable): a server that prints what it was given
    #[arg(long = "stderr-env", value_name = "NAME")]
    stderr_env: Vec<String>,
    /// Spawn `sleep 3600` in this process group and write its pid to FILE
    #[arg(long, value_name = "FILE")]
    spawn_grandchild: Option<PathBuf>,
    /// Which protocol revisions to speak
    #[arg(long, value_enum, default_value_t = Era::Handshake)]
    era: Era,
    /// With `--era handshake`: never answer `server/discover`
    #[arg(long)]
    silent_discover: bool,
    /// Put `ttlMs: MS` on every `tools/list` page
    #[arg(long, value_name = "MS")]
    list_ttl_ms: Option<u64>,
    /// Put `cacheScope: SCOPE` on every `tools/list` page
    #[arg(long, value_name = "SCOPE", value_parser = ["public", "private"])]
    list_cache_scope: Option<String>,
    /// Support VERSION instead of the era's versions (repeatable); `initialize` is
    /// answered with the newest supported when the offered one is not
    #[arg(long = "supported-version", value_name = "VERSION")]
    supported_versions: Vec<String>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:0)
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// With --http: answer 401 unless `Authorization: Bearer TOKEN`
    #[arg(long, value_name = "TOKEN", requires = "http")]
    require_bearer: Option<String>,
    /// Fault, with --http: answer every request with STATUS and a short body (401
    /// with `WWW-Authenticate`)
    #[arg(long, value_name = "STATUS", requires = "http", value_parser = clap::value_parser!(u16).range(100..600))]
    http_status: Option<u16>,
    /// With --http-status: the `Location` header of every answer (a redirect)
    #[arg(long, value_name = "URL", requires = "http_status")]
    http_location: Option<String>,
    /// Fault, with --http: accept connections and never answer
    #[arg(long, requires = "http", conflicts_with = "http_status")]
    http_silent: bool,
    /// Fault, with --http: quote the request's headers back (credentials
    /// included) in the body and `WWW-Authenticate` of a --http-status answer, and
    /// in the JSON-RPC error (message and data) answering every `tools/call`
    #[arg(long, requires = "http", conflicts_with = "http_silent")]
    echo_headers: bool,
    /// Fault, with --http: exit (status 7) on the first `tools/call`: at once
    /// (`before-answering`), after one event of its answer's stream (`mid-stream`), or
    /// after one event with an id, from which the stream could be resumed
    /// (`mid-resumable-stream`)
    #[arg(long, value_name = "WHEN", requires = "http", conflicts_with_all = ["http_status", "http_silent"], value_parser = parse_death)]
    http_die_during_call: Option<http::Death>,
    /// Fault, with --http: forget the session of the first N `tools/call` POSTs
    /// that carry one (rmcp then answers 404, as for an expired session)
    #[arg(long, value_name = "N", requires = "http", default_value_t = 0)]
    expire_sessions_on_call: usize,
    /// With --http: serve an OAuth 2.1 authorization server on the same listener
    /// and answer 401 (403 for a missing scope) unless a request carries one of
    /// its access tokens for http://ADDR/mcp
    #[arg(long, requires = "http", conflicts_with = "require_bearer")]
    require_oauth: bool,
    /// With --require-oauth: the lifetime of an access token (0: expired at once)
    #[arg(
        long,
        value_name = "N",
        requires = "require_oauth",
        default_value_t = 3600
    )]
    oauth_token_ttl_secs: u64,
    /// With --require-oauth: the account every authorization approves as (`sub`)
    #[arg(
        long,
        value_name = "NAME",
        requires = "require_oauth",
        default_value = "fixture-user"
    )]
    oauth_account: String,
    /// With --require-oauth: a pre-registered confidential client (repeatable)
    #[arg(
        long = "oauth-client",
        value_name = "ID:SECRET",
        requires = "require_oauth"
    )]
    oauth_clients: Vec<oauth::ClientCredentials>,
    /// With --require-oauth: a workload, a public client whose identity token TOKEN
    /// is trusted as its JWT bearer assertion (repeatable)
    #[arg(
        long = "oauth-workload",
        value_name = "ID:TOKEN",
        requires = "require_oauth"
    )]
    oauth_workloads: Vec<oauth::ClientCredentials>,
    /// With --require-oauth: the scope the MCP endpoint requires and names in its
    /// challenge (space-separated; empty: none)
    #[arg(
        long,
        value_name = "SCOPE",
        requires = "require_oauth",
        default_value = "mcp"
    )]
    oauth_scope: String,
    /// With --require-oauth: the resource tokens are issued for and accepted at the
    /// MCP endpoint, instead of its URL, which its metadata still names (a client
    /// must be told: `oauth_resource`)
    #[arg(long, value_name = "URL", requires = "require_oauth")]
    oauth_token_resource: Option<String>,
    /// With --require-oauth: accept and advertise only these client
    /// authentication methods at the token endpoint (repeatable; default all)
    #[arg(long = "oauth-auth-method", value_name = "METHOD", requires = "require_oauth",
          value_parser = oauth::AUTH_METHODS)]
    oauth_auth_methods: Vec<String>,
    /// With --require-oauth: make one step of the authorization server fail
    /// (repeatable): its metadata is missing, a registration is refused, the
    /// authorization is denied, the code exchange is refused, a refresh fails
    #[arg(
        long = "oauth-fail",
        value_name = "STEP",
        requires = "require_oauth",
        value_enum
    )]
    oauth_fail: Vec<oauth::Failing>,
    /// With --require-oauth: append one JSON line per authorization server
    /// request to FILE (endpoint, grant_type, client_id, auth_method, outcome)
    #[arg(long, value_name = "FILE", requires = "require_oauth")]
    oauth_log: Option<PathBuf>,
}

fn parse_object(text: &str) -> Result<JsonObject, String> {
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(object)) => Ok(object),
        _ => Err("a JSON object".to_owned()),
    }
}

fn parse_death(text: &str) -> Result<http::Death, String> {
    match text {
        "before-answering" => Ok(http::Death::BeforeAnswering),
        "mid-stream" => Ok(http::Death::MidStream),
        "mid-resumable-stream" => Ok(http::Death::MidResumableStream),
        _ => Err("`before-answering`, `mid-stream` or `mid-resumable-stream`".to_owned()),
    }
}

fn parse_experimental(text: &str) -> Result<(String, JsonObject), String> {
    let (name, json) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=JSON"))?;
    let object = serde_json::from_str(json)
        .map_err(|error| format!("the value of `{name}` is not a JSON object: {error}"))?;
    Ok((name.to_owned(), object))
}

impl Args {
    fn behaviour(&self) -> Behaviour {
        Behaviour {
            generated_tools: self.tools,
            named_tools: self.tool_names.clone(),
            page_size: self.page_size.map(|size| size as usize),
            repeat_cursor: self.repeat_cursor,
            empty_last_cursor: self.empty_last_cursor,
            init_delay: Duration::from_millis(self.init_delay_ms),
            discover_delay: Duration::from_millis(self.discover_delay_ms),
            list_delay: Duration::from_millis(self.list_delay_ms),
            list_cpu: Duration::from_millis(self.list_cpu_ms),
            call_delay: Duration::from_millis(self.call_delay_ms),
            hang_initialize: self.hang_initialize,
            crash_initialize: self.crash_initialize,
            hang_list: self.hang_list,
            crash_list: self.crash_list,
            exit_during_call: self.exit_during_call,
            fail_list: self.fail_list,
            list_padding_bytes: self.list_padding_bytes,
            asks: self.asks,
            tasks: self.tasks,
            resources: self.resources,
            asking_resource: self.asking_resource,
            late_streams: self.late_streams,
            broadcast_tool_changes: self.broadcast_tool_changes,
            logging: self.logging,
            instructions: self.instructions.clone(),
            progress_steps: self.progress_steps,
            call_log_messages: self.call_log_messages,
            progress_interval: Duration::from_millis(self.progress_interval_ms),
            crash_tool: self.crash_tool,
            echo_output_schema: self.echo_output_schema.clone(),
            call_result_bytes: self.call_result_bytes,
            experimental: self
                .experimental
                .iter()
                .cloned()
                .collect::<ExperimentalCapabilities>(),
            gate_dir: self.gate_dir.clone(),
            era: self.era,
            silent_discover: self.silent_discover,
            list_ttl_ms: self.list_ttl_ms,
            list_cache_scope: self.list_cache_scope.as_deref().map(|scope| match scope {
                "public" => CacheScope::Public,
                _ => CacheScope::Private,
            }),
            supported_versions: self.supported_versions.clone(),
            future: self.future,
        }
    }

    /// The raw server's behaviour, when a raw fault was asked for.
    fn raw_behaviour(&self) -> Option<RawBehaviour> {
        let initialize = if self.garbage_before_initialize {
            InitializeFault::GarbageBefore
        } else if self.garbage_instead_of_initialize {
            InitializeFault::GarbageInstead
        } else if self.unsolicited_response {
            InitializeFault::UnsolicitedResponseBefore
        } else {
            InitializeFault::None
        };
        let raw = initialize != InitializeFault::None
            || self.bad_input_schema.is_some()
            || self.empty_tool_name
            || self.duplicate_tool
            || self.ignore_cancel
            // Over HTTP, rmcp's answers are spoiled by the HTTP front.
            || (!self.mangled_answers.is_empty() && self.http.is_none());
        raw.then(|| RawBehaviour {
            initialize,
            bad_schema: self.bad_input_schema,
            empty_tool_name: self.empty_tool_name,
            duplicate_tool: self.duplicate_tool,
            call_delay: Duration::from_millis(self.call_delay_ms),
            mangled: self.mangled_answers.clone(),
        })
    }

    fn http_fault(&self) -> anyhow::Result<Option<http::Fault>> {
        if self.http_silent {
            return Ok(Some(http::Fault::Silent));
        }
        if let Some(death) = self.http_die_during_call {
            return Ok(Some(http::Fault::DieDuringCall(death)));
        }
        self.http_status
            .map(|status| {
                ::http::StatusCode::from_u16(status)
                    .map(http::Fault::Status)
                    .with_context(|| format!("`{status}` is not an HTTP status"))
            })
            .transpose()
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.ignore_sigterm
        && let Err(error) = fault::ignore_sigterm()
    {
        eprintln!("mcp-fixture: cannot ignore SIGTERM: {error}");
        return ExitCode::FAILURE;
    }
    if let Some(note) = &args.sigterm_note
        && let Err(error) = fault::note_sigterm(note.clone())
    {
        eprintln!("mcp-fixture: cannot watch for SIGTERM: {error}");
        return ExitCode::FAILURE;
    }
    if let Some(code) = args.exit_during_startup {
        eprintln!("fixture: starting");
        eprintln!("fixture: loading config");
        eprintln!("fixture: fatal: cannot open database /nonexistent/db");
        std::process::exit(code);
    }
    for k in 1..=args.stderr_lines {
        eprintln!("fixture stderr line {k}");
    }
    for name in &args.stderr_env {
        let value = std::env::var_os(name).unwrap_or_default();
        eprintln!("fixture: {name}={}", value.to_string_lossy());
    }
    if let Err(error) = fault::flood_stderr(args.stderr_flood_bytes) {
        eprintln!("mcp-fixture: cannot flood stderr: {error}");
        return ExitCode::FAILURE;
    }
    let ignore_stdin_eof = args.ignore_stdin_eof;
    let code = match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-fixture: {error:#}");
            ExitCode::FAILURE
        }
    };
    if ignore_stdin_eof {
        loop {
            std::thread::park();
        }
    }
    code
}

fn run(args: Args) -> anyhow::Result<()> {
    if let Some(pid_file) = &args.spawn_grandchild {
        spawn_grandchild(pid_file)?;
    }
    let log = args
        .log
        .as_deref()
        .map(|path| {
            MessageLog::open(path)
                .map(Arc::new)
                .with_context(|| format!("cannot open the log `{}`", path.display()))
        })
        .transpose()?;
    let fixture = Fixture::new(args.behaviour());
    if let Some(behaviour) = args.raw_behaviour() {
        anyhow::ensure!(
            args.http.is_none(),
            "the raw faults are for stdio only (drop `--http`)"
        );
        return raw::serve(&RawServer::new(behaviour, &fixture.tools()), log);
    }
    if args.http.is_some()
        && let Some((method, _)) = args
            .mangled_answers
            .iter()
            .find(|(_, mangle)| !http::mangles_over_http(*mangle))
    {
        anyhow::bail!(
            "the answer to `{method}` can be spoiled that way over stdio only (drop `--http`)"
        );
    }
    let http_fault = args.http_fault()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    let result = runtime.block_on(async {
        match &args.http {
            Some(addr) => {
                let options = http::Options {
                    bearer: args.require_bearer.clone(),
                    fault: http_fault,
                    expire_sessions_on_call: args.expire_sessions_on_call,
                    echo_headers: args.echo_headers,
                    location: args.http_location.clone(),
                    mangled: args.mangled_answers.clone(),
                    json_answers: args.http_json_answers,
                    oauth: args.require_oauth.then(|| http::OAuthOptions {
                        config: oauth::Config {
                            token_ttl: Duration::from_secs(args.oauth_token_ttl_secs),
                            account: args.oauth_account.clone(),
                            clients: args.oauth_clients.clone(),
                            workloads: args.oauth_workloads.clone(),
                            scope: args.oauth_scope.clone(),
                            token_resource: args.oauth_token_resource.clone(),
                            failing: args.oauth_fail.clone(),
                            auth_methods: if args.oauth_auth_methods.is_empty() {
                                oauth::Config::default().auth_methods
                            } else {
                                args.oauth_auth_methods.clone()
                            },
                        },
                        log: args.oauth_log.clone(),
                    }),
                };
                http::serve(fixture, addr, log, options).await
            }
            None => {
                let served = stdio::serve(fixture, log).await;
                if served.is_ok()
                    && let Some(note) = &args.ended_note
                {
                    use std::io::Write as _;
                    // One `write` of the whole line to a file opened for appending,
                    // so the lines of servers ending together do not interleave
                    // (`writeln!` writes the pid and the newline apart).
                    let line = format!("{}\n", std::process::id());
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(note)
                        .and_then(|mut file| file.write_all(line.as_bytes()))
                        .with_context(|| format!("cannot write `{}`", note.display()))?;
                }
                served
            }
        }
    });
    // The stdin reader may still sit in a blocking read; do not wait for it.
    runtime.shutdown_background();
    result
}

/// Start `sleep 3600` as a child in this process's group (no `setsid`), and
/// publish its pid to `pid_file` atomically (write a temporary file, rename).
///
/// The grandchild's standard streams are /dev/null so that it does not hold
/// the fixture's stdout or stderr pipes open after the fixture is gone.
fn spawn_grandchild(pid_file: &Path) -> anyhow::Result<()> {
    let child = Command::new("sleep")
        .arg("3600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot spawn `sleep 3600`")?;
    let mut temporary = OsString::from(pid_file.as_os_str());
    temporary.push(".tmp");
    std::fs::write(&temporary, format!("{}\n", child.id()))
        .with_context(|| format!("cannot write `{}`", Path::new(&temporary).display()))?;
    std::fs::rename(&temporary, pid_file)
        .with_context(|| format!("cannot write `{}`", pid_file.display()))?;
    // The child is deliberately neither waited for nor killed.
    drop(child);
    Ok(())
}
