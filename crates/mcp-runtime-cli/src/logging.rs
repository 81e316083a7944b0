//! Logs on stderr: by default only mcp-runtime's own warnings, one plain line each.
//!
//! Every problem reaches the user once, through the runtime's own error naming the
//! server. The libraries underneath (rmcp, hyper, …) log the same failures again,
//! without the server's name, so at the default level their logs are off, and
//! mcp-runtime's warnings (a tool dropped from a listing, a launcher that failed its
//! probe) print as `mcp-runtime: warning: …`, like the CLI's errors.
//!
//! Servers' log messages (`notifications/message`) are events of their own target,
//! `mcp_runtime::server_log`, naming the server: off by default, shown by a filter
//! that names them (`mcp_runtime::server_log=info`).
//!
//! `MCP_RUNTIME_LOG` takes a filter (`debug`, `rmcp=trace`, `mcp_runtime=info`) and
//! shows what it selects from any crate, with times and targets, except what rmcp's
//! OAuth module logs below `info`: it logs the token endpoint's answer there, whose
//! extra fields (an OpenID Connect ID token) it prints in clear, and no filter shows a
//! credential. Colour is used only when stderr is a terminal and `NO_COLOR` is unset
//! or empty. Every credential the runtime sends is masked in every line.

use std::{ffi::OsStr, fmt, io::IsTerminal};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{
    EnvFilter,
    filter::Targets,
    fmt::{FmtContext, FormatEvent, FormatFields, format::Writer},
    registry::LookupSpan,
};

/// The environment variable holding the log filter.
const FILTER_VARIABLE: &str = "MCP_RUNTIME_LOG";

/// Installs the global subscriber writing to stderr.
pub fn init() {
    let colour = colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let builder = tracing_subscriber::fmt()
        .with_writer(|| MaskedStderr)
        .with_ansi(colour);
    match EnvFilter::try_from_env(FILTER_VARIABLE) {
        Ok(filter) => builder
            .with_env_filter(filter)
            .finish()
            .with(tracing_subscriber::filter::filter_fn(|metadata| {
                shown(metadata.target(), *metadata.level())
            }))
            .init(),
        Err(_) => builder
            .event_format(Plain)
            .finish()
            .with(default_filter())
            .init(),
    }
}

/// Standard error for log lines, every credential the runtime sends masked: a line may
/// quote what a server sent back, and the libraries underneath log what they send.
/// The formatter writes each event whole, in one write, so no credential is split
/// between two.
struct MaskedStderr;

impl std::io::Write for MaskedStderr {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(bytes);
        std::io::stderr()
            .lock()
            .write_all(mcp_runtime::redact::credentials(&text).as_bytes())?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Whether an event of `target` at `level` may be shown at all (see the module docs).
fn shown(target: &str, level: Level) -> bool {
    let oauth = target == RMCP_OAUTH || target.starts_with(&format!("{RMCP_OAUTH}::"));
    !oauth || level <= Level::INFO
}

/// The target of rmcp's OAuth module.
const RMCP_OAUTH: &str = "rmcp::transport::auth";

/// Colour on a terminal, unless `NO_COLOR` is set to anything but the empty string.
fn colour(terminal: bool, no_color: Option<&OsStr>) -> bool {
    terminal && no_color.is_none_or(OsStr::is_empty)
}

/// mcp-runtime's own crates at `warn`, every other crate off, and the servers' own
/// log messages off (they are the servers' to say, not failures of the run).
fn default_filter() -> Targets {
    // A target matches by prefix, the longest first: `mcp_runtime` covers the CLI
    // and the library.
    Targets::new()
        .with_target("mcp_runtime", Level::WARN)
        .with_target(
            mcp_runtime::SERVER_LOG_TARGET,
            tracing_subscriber::filter::LevelFilter::OFF,
        )
}

/// `mcp-runtime: warning: MESSAGE key=value …` on one line, control characters
/// escaped (fields may quote what a server sent).
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        let mut fields = String::new();
        context
            .field_format()
            .format_fields(Writer::new(&mut fields), event)?;
        let line = crate::output::printable(&fields).replace('\n', " ");
        writeln!(writer, "mcp-runtime: {level}: {line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_log_messages_are_off_by_default_and_the_runtimes_warnings_on() {
        let filter = default_filter();
        assert!(filter.would_enable("mcp_runtime::manager", &Level::WARN));
        assert!(!filter.would_enable("mcp_runtime::manager", &Level::INFO));
        assert!(!filter.would_enable(mcp_runtime::SERVER_LOG_TARGET, &Level::ERROR));
        assert!(!filter.would_enable("rmcp::service", &Level::ERROR));
    }

    #[test]
    fn rmcp_oauth_details_are_never_shown_whatever_the_filter() {
        assert!(!shown("rmcp::transport::auth", Level::DEBUG));
        assert!(!shown(
            "rmcp::transport::auth::metadata_resolver",
            Level::TRACE
        ));
        assert!(shown("rmcp::transport::auth", Level::WARN));
        assert!(shown("rmcp::transport::authx", Level::DEBUG));
        assert!(shown("rmcp::service", Level::TRACE));
    }

    #[test]
    fn colour_only_on_a_terminal_and_never_with_no_color_set() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsStr::new(""))));
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(false, None));
    }
}
