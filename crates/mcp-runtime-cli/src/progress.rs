//! The live lines on a terminal's stderr, drawn by `indicatif`: during a start, one
//! line per server with a spinner and the elapsed time while it starts, then its final
//! state; during a call, a bar of the progress the server reports. On a pipe
//! `indicatif` draws nothing.

use std::{collections::HashMap, time::Duration};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use mcp_runtime::CancellationToken;
use mcp_runtime::{OnProgress, Progress, StartupEvent};
use tokio::sync::mpsc::UnboundedReceiver;

const TICK: Duration = Duration::from_millis(80);

/// The style of a server still starting: `⠹ NAME  1.5s  starting`.
fn starting_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {prefix}  {seconds}  starting")
        .expect("a valid template")
        .with_key(
            "seconds",
            |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = out.write_str(&seconds(state.elapsed()));
            },
        )
}

/// The style of a settled line: its text.
fn settled_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg}").expect("a valid template")
}

/// Draws the display until the startup summary arrives (or the sender is dropped,
/// or `stop` is cancelled), then leaves the lines on screen as they are, the cursor
/// on the line after them. Call it only when stderr is a terminal.
pub async fn show(mut events: UnboundedReceiver<StartupEvent>, stop: CancellationToken) {
    let lines = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let mut bars: HashMap<String, ProgressBar> = HashMap::new();
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            () = stop.cancelled() => None,
        };
        let Some(event) = event else {
            break;
        };
        if let StartupEvent::Starting { server } = &event {
            let bar = lines.add(ProgressBar::new_spinner().with_style(starting_style()));
            bar.set_prefix(server.clone());
            bar.enable_steady_tick(TICK);
            bars.insert(server.clone(), bar);
        } else if let StartupEvent::Summary(_) = event {
            break;
        } else if let Some((server, text)) = settled(&event)
            && let Some(bar) = bars.get(server)
        {
            bar.set_style(settled_style());
            bar.finish_with_message(text);
        }
    }
    // A server still starting keeps its last line, and stops ticking.
    for bar in bars.values().filter(|bar| !bar.is_finished()) {
        bar.abandon();
    }
    if !bars.is_empty() {
        // indicatif leaves the cursor at the end of the last line.
        eprintln!();
    }
}

/// The server an event settles, and its final line.
fn settled(event: &StartupEvent) -> Option<(&str, String)> {
    match event {
        StartupEvent::Ready {
            server,
            tools,
            elapsed,
        } => Some((
            server,
            format!("✓ {server}  {}  ready, {tools} tools", seconds(*elapsed)),
        )),
        StartupEvent::Failed {
            server,
            error,
            elapsed,
        } => Some((
            server,
            format!(
                "✗ {server}  {}  failed: {}",
                seconds(*elapsed),
                crate::output::printable(&crate::output::error_text(&**error)).replace('\n', " ")
            ),
        )),
        StartupEvent::Cancelled { server } => Some((server, format!("- {server}  cancelled"))),
        _ => None,
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

/// The bar of a call's progress, drawn from the server's first report on; cleared
/// when dropped, so the result prints on a clean line.
pub struct CallBar(ProgressBar);

/// The bar's resolution when the server names a total.
const PER_TOTAL: u64 = 1000;

impl CallBar {
    /// A bar on stderr (drawn only on a terminal).
    pub fn new() -> Self {
        Self::with_target(ProgressDrawTarget::stderr())
    }

    fn with_target(target: ProgressDrawTarget) -> Self {
        let bar = ProgressBar::with_draw_target(None, target);
        Self(bar)
    }

    /// What updates the bar with each report.
    pub fn on_progress(&self) -> OnProgress {
        let bar = self.0.clone();
        OnProgress::new(move |report| update(&bar, &report))
    }
}

impl Drop for CallBar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Shows `report` on `bar`: a bar with the share done when the server knows the
/// total, else a spinner with the count.
fn update(bar: &ProgressBar, report: &Progress) {
    let count = match report.total {
        Some(total) => format!("{} of {}", report.progress, total),
        None => report.progress.to_string(),
    };
    // Prefix and message first: each change below draws.
    bar.set_prefix(report.server.clone());
    bar.set_message(match report.message.as_deref() {
        Some(message) => format!("{} ({count})", crate::output::printable(message)),
        None => count,
    });
    match report.total.filter(|total| *total > 0.0) {
        Some(total) => {
            if bar.length() != Some(PER_TOTAL) {
                bar.set_style(
                    ProgressStyle::with_template("{prefix}  [{bar:30}] {percent:>3}%  {msg}")
                        .expect("a valid template")
                        .progress_chars("=> "),
                );
                bar.set_length(PER_TOTAL);
            }
            let share = (report.progress / total).clamp(0.0, 1.0);
            bar.set_position((share * PER_TOTAL as f64).round() as u64);
        }
        None => {
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix}  {msg}")
                    .expect("a valid template"),
            );
            bar.tick();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_settled_server_has_its_final_line() {
        let ready = StartupEvent::Ready {
            server: "a".into(),
            tools: 3,
            elapsed: Duration::from_millis(1200),
        };
        let failed = StartupEvent::Failed {
            server: "b".into(),
            error: std::sync::Arc::new(mcp_runtime::StartupError::Closed {
                stderr_tail: vec!["cannot read\nthe database".into()],
            }),
            elapsed: Duration::from_secs(1),
        };
        let cancelled = StartupEvent::Cancelled { server: "c".into() };
        let lines: Vec<_> = [ready, failed, cancelled]
            .iter()
            .filter_map(settled)
            .map(|(server, text)| format!("{server}: {text}"))
            .collect();
        assert_eq!(
            lines,
            [
                "a: ✓ a  1.2s  ready, 3 tools",
                "b: ✗ b  1.0s  failed: the connection closed during startup; last stderr: cannot read the database",
                "c: - c  cancelled",
            ]
        );
        let starting = StartupEvent::Starting { server: "d".into() };
        assert_eq!(settled(&starting), None);
    }

    fn report(progress: f64, total: Option<f64>, message: Option<&str>) -> Progress {
        let mut report = Progress::new("files", progress);
        report.total = total;
        report.message = message.map(str::to_owned);
        report
    }

    #[test]
    fn the_call_bar_shows_the_share_done_or_the_count() {
        let bar = CallBar::with_target(ProgressDrawTarget::hidden());
        let on_progress = bar.on_progress();
        on_progress.report(report(1.0, Some(4.0), Some("copying\u{1b}[2J")));
        assert_eq!(bar.0.length(), Some(PER_TOTAL));
        assert_eq!(bar.0.position(), 250);
        assert_eq!(bar.0.message(), "copying\\u{1b}[2J (1 of 4)");
        assert_eq!(bar.0.prefix(), "files");
        on_progress.report(report(9.0, Some(4.0), None));
        assert_eq!(bar.0.position(), PER_TOTAL, "never past the end");
        on_progress.report(report(7.0, None, None));
        assert_eq!(bar.0.message(), "7");
    }
}
