//! The live startup display on a terminal's stderr: one line per server with a
//! spinner and the elapsed time while it starts, then its final state.

use std::{io::Write, time::Duration};

use mcp_runtime::StartupEvent;
use tokio::{sync::mpsc::UnboundedReceiver, time::Instant};

const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const TICK: Duration = Duration::from_millis(80);

struct Line {
    server: String,
    began: Instant,
    /// The final text, once the server has settled.
    settled: Option<String>,
}

/// Draws the display until the startup summary arrives (or the sender is dropped),
/// then leaves the final lines on screen.
pub async fn show(mut events: UnboundedReceiver<StartupEvent>) {
    let mut lines: Vec<Line> = Vec::new();
    let mut drawn = 0;
    let mut frame = 0usize;
    let mut tick = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                None | Some(StartupEvent::Summary(_)) => break,
                Some(event) => apply(&mut lines, event),
            },
            _ = tick.tick() => frame += 1,
        }
        drawn = draw(&lines, drawn, frame);
    }
    draw(&lines, drawn, frame);
}

fn apply(lines: &mut Vec<Line>, event: StartupEvent) {
    let settle = |lines: &mut Vec<Line>, server: &str, text: String| {
        if let Some(line) = lines.iter_mut().find(|line| line.server == server) {
            line.settled = Some(text);
        }
    };
    match event {
        StartupEvent::Starting { server } => lines.push(Line {
            server,
            began: Instant::now(),
            settled: None,
        }),
        StartupEvent::Ready {
            server,
            tools,
            elapsed,
        } => settle(
            lines,
            &server,
            format!("✓ {server}  {}  ready, {tools} tools", seconds(elapsed)),
        ),
        StartupEvent::Failed {
            server,
            reason,
            elapsed,
        } => settle(
            lines,
            &server,
            format!(
                "✗ {server}  {}  failed: {}",
                seconds(elapsed),
                crate::output::printable(&reason).replace('\n', " ")
            ),
        ),
        StartupEvent::Cancelled { server } => {
            settle(lines, &server, format!("- {server}  cancelled"))
        }
        _ => {}
    }
}

/// Redraws every line over the `previous` ones; returns how many lines are drawn.
fn draw(lines: &[Line], previous: usize, frame: usize) -> usize {
    let out = render(lines, previous, frame);
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(out.as_bytes());
    let _ = stderr.flush();
    lines.len()
}

/// The terminal text that moves up over `previous` lines and draws `lines`.
fn render(lines: &[Line], previous: usize, frame: usize) -> String {
    let mut out = String::new();
    if previous > 0 {
        out.push_str(&format!("\x1b[{previous}A"));
    }
    for line in lines {
        out.push_str("\r\x1b[2K");
        match &line.settled {
            Some(text) => out.push_str(text),
            None => out.push_str(&format!(
                "{} {}  {}  starting",
                SPINNER[frame % SPINNER.len()],
                line.server,
                seconds(line.began.elapsed())
            )),
        }
        out.push('\n');
    }
    out
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn each_server_has_a_line_that_ends_in_its_final_state() {
        let mut lines = Vec::new();
        for server in ["a", "b", "c"] {
            apply(
                &mut lines,
                StartupEvent::Starting {
                    server: server.into(),
                },
            );
        }
        tokio::time::advance(Duration::from_millis(1500)).await;
        let ready = StartupEvent::Ready {
            server: "a".into(),
            tools: 3,
            elapsed: Duration::from_millis(1200),
        };
        let failed = StartupEvent::Failed {
            server: "b".into(),
            reason: "did not finish starting within 1s".into(),
            elapsed: Duration::from_secs(1),
        };
        apply(&mut lines, ready);
        apply(&mut lines, failed);
        let text = render(&lines, 3, 2);
        assert_eq!(
            text.split('\n').collect::<Vec<_>>(),
            [
                "\x1b[3A\r\x1b[2K✓ a  1.2s  ready, 3 tools",
                "\r\x1b[2K✗ b  1.0s  failed: did not finish starting within 1s",
                "\r\x1b[2K⠹ c  1.5s  starting",
                "",
            ]
        );
    }
}
