//! Serving the fixture over this process's stdin/stdout, logging every line
//! before rmcp parses it.
//!
//! rmcp only hands a handler parsed messages, so the fixture reads stdin
//! itself: a reader task takes one line at a time, logs it, and queues it; a
//! forwarder task writes the queue into an in-memory pipe that rmcp reads as
//! its transport. The queue is unbounded so that stdin is drained (and logged)
//! even while rmcp is not reading, e.g. while `initialize` hangs.
//!
//! With `--future` rmcp's output goes through a pipe too: a task reads it line by
//! line and writes each line to stdout with its markers replaced
//! ([`crate::future::rewrite_line`]).
//!
//! The fixture exits when stdin closes: rmcp sees end of input once the queue
//! has drained and stops after answering what is in flight. In
//! `--hang-initialize` mode rmcp never gets that far, so the fixture stops as
//! soon as stdin closes; with `--gate-dir`, it does so too when stdin closes
//! while the `initialize` gate is closed (a gate opened later is not
//! answered).

use std::sync::Arc;

use anyhow::Context as _;
use rmcp::{ServiceExt, service::ServerInitializeError};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, WriteHalf},
    sync::{mpsc, oneshot},
};

use crate::{
    message_log::{MessageLog, line_text},
    server::Fixture,
};

/// Capacity of the in-memory pipe between the forwarder and rmcp.
const PIPE_CAPACITY: usize = 1 << 16;

/// Serve `fixture` over stdin/stdout until stdin closes, logging every line
/// received to `log`.
///
/// # Cancel safety
///
/// Dropping the future stops serving; the stdin reader task stays blocked in
/// its read until the process exits.
pub async fn serve(fixture: Fixture, log: Option<Arc<MessageLog>>) -> anyhow::Result<()> {
    let hang_initialize = fixture.behaviour().hang_initialize;
    let gates = fixture.gates().cloned();
    let (rmcp_input, pipe) = tokio::io::simplex(PIPE_CAPACITY);
    let (lines_tx, lines_rx) = mpsc::unbounded_channel();
    let (stdin_closed_tx, stdin_closed) = oneshot::channel();
    tokio::spawn(async move {
        read_stdin(log, lines_tx).await;
        let _ = stdin_closed_tx.send(());
    });
    tokio::spawn(forward(lines_rx, pipe));

    let (output, rewriter) = if fixture.behaviour().future {
        // A duplex, not a simplex: its reader sees the end once rmcp drops its end.
        let (lines, rmcp_output) = tokio::io::duplex(PIPE_CAPACITY);
        let rewriter = tokio::spawn(rewrite_output(lines));
        (Output::Rewritten(rmcp_output), Some(rewriter))
    } else {
        (Output::Stdout(tokio::io::stdout()), None)
    };
    let served = serve_with(
        fixture,
        rmcp_input,
        output,
        hang_initialize,
        gates,
        stdin_closed,
    )
    .await;
    // Every line rmcp wrote reaches stdout before the process exits.
    if let Some(rewriter) = rewriter {
        let _ = rewriter.await;
    }
    served
}

/// Where rmcp writes: stdout, or the pipe to [`rewrite_output`].
enum Output {
    Stdout(tokio::io::Stdout),
    Rewritten(tokio::io::DuplexStream),
}

impl tokio::io::AsyncWrite for Output {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Stdout(out) => std::pin::Pin::new(out).poll_write(cx, buf),
            Self::Rewritten(out) => std::pin::Pin::new(out).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Stdout(out) => std::pin::Pin::new(out).poll_flush(cx),
            Self::Rewritten(out) => std::pin::Pin::new(out).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Stdout(out) => std::pin::Pin::new(out).poll_shutdown(cx),
            Self::Rewritten(out) => std::pin::Pin::new(out).poll_shutdown(cx),
        }
    }
}

/// Copies rmcp's output to stdout line by line, markers replaced, until rmcp's end
/// of the pipe is gone.
async fn rewrite_output(lines: tokio::io::DuplexStream) {
    let mut lines = BufReader::new(lines);
    let mut stdout = tokio::io::stdout();
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let rewritten = crate::future::rewrite_line(&line);
        if stdout.write_all(&rewritten).await.is_err() || stdout.flush().await.is_err() {
            return;
        }
    }
}

/// Serves `fixture` on `input` and `output` (see [`serve`]).
async fn serve_with(
    fixture: Fixture,
    rmcp_input: tokio::io::ReadHalf<tokio::io::SimplexStream>,
    output: Output,
    hang_initialize: bool,
    gates: Option<crate::gate::Gates>,
    mut stdin_closed: oneshot::Receiver<()>,
) -> anyhow::Result<()> {
    let handshake = fixture.serve((rmcp_input, output));
    tokio::pin!(handshake);
    // rmcp reads nothing while `initialize` waits, so it would not see stdin
    // close; watch for that here.
    let handshake = tokio::select! {
        result = &mut handshake => result,
        _ = &mut stdin_closed, if hang_initialize || gates.is_some() => {
            let gate_open = gates.is_some_and(|gates| gates.initialize_is_open());
            if hang_initialize || !gate_open {
                return Ok(());
            }
            handshake.await
        }
    };
    match handshake {
        Ok(running) => {
            running.waiting().await.context("the MCP service failed")?;
            Ok(())
        }
        // stdin closed before `initialize`: nothing to serve.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(error) => Err(error).context("the MCP handshake failed"),
    }
}

/// Read stdin line by line, log each line, and queue it for rmcp.
async fn read_stdin(log: Option<Arc<MessageLog>>, lines: mpsc::UnboundedSender<Vec<u8>>) {
    let mut stdin = BufReader::new(tokio::io::stdin());
    loop {
        let mut line = Vec::new();
        match stdin.read_until(b'\n', &mut line).await {
            Ok(0) => return,
            Ok(_) => {}
            Err(error) => {
                eprintln!("mcp-fixture: cannot read stdin: {error}");
                return;
            }
        }
        let text = line_text(&line);
        if let Some(log) = &log
            && !text.trim().is_empty()
            && let Err(error) = log.record(&text, None)
        {
            eprintln!("mcp-fixture: cannot write the message log: {error}");
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if lines.send(line).is_err() {
            return;
        }
    }
}

/// Write queued lines into rmcp's input; close it when the queue ends.
async fn forward(
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
    mut pipe: WriteHalf<tokio::io::SimplexStream>,
) {
    while let Some(line) = lines.recv().await {
        if pipe.write_all(&line).await.is_err() {
            return;
        }
    }
    let _ = pipe.shutdown().await;
}
