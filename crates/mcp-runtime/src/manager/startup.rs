//! Concurrent startup of every enabled server, with progress events.

use std::time::Duration;

use futures::{StreamExt, stream::FuturesUnordered};
use rmcp::model::Tool;
use tokio::{sync::mpsc::UnboundedSender, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    config::{Config, Environment, ServerConfig},
    connection::Connection,
    error::{StartupError, chain},
};

/// How to start a [`Runtime`](super::Runtime).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct StartOptions {
    events: Option<UnboundedSender<StartupEvent>>,
    cancel: CancellationToken,
}

impl StartOptions {
    /// Default options: no events, no cancellation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends startup progress to `events`.
    pub fn with_events(mut self, events: UnboundedSender<StartupEvent>) -> Self {
        self.events = Some(events);
        self
    }

    /// Cancels every startup still in progress when `cancel` is cancelled; those
    /// servers end up [`Cancelled`](super::ServerState::Cancelled).
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}

/// Progress of a start, one event per step of each server, then a summary.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StartupEvent {
    /// The server's startup began.
    Starting {
        /// The server.
        server: String,
    },
    /// The server's process was spawned (local stdio servers only).
    Spawned {
        /// The server.
        server: String,
        /// Its process id, which is also its process group id.
        pid: u32,
    },
    /// The server is ready.
    Ready {
        /// The server.
        server: String,
        /// How many tools it listed.
        tools: usize,
        /// How long its startup took.
        elapsed: Duration,
    },
    /// The server's startup failed.
    Failed {
        /// The server.
        server: String,
        /// Why, in one line.
        reason: String,
        /// How long it took to fail.
        elapsed: Duration,
    },
    /// The server's startup was cancelled.
    Cancelled {
        /// The server.
        server: String,
    },
    /// Every startup has settled.
    Summary(StartupSummary),
}

/// How a start went, once every server has settled.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct StartupSummary {
    /// Servers that are ready.
    pub ready: Vec<String>,
    /// Servers that failed.
    pub failed: Vec<String>,
    /// Servers whose startup was cancelled.
    pub cancelled: Vec<String>,
    /// Wall time until the last server settled.
    pub elapsed: Duration,
}

/// How one server's startup ended.
pub(super) struct Outcome {
    pub(super) config: ServerConfig,
    pub(super) elapsed: Duration,
    pub(super) result: Result<(Connection, Vec<Tool>), StartupError>,
}

/// Starts every enabled server concurrently and returns once all have settled, in
/// name order.
pub(super) async fn start_all(config: &Config, options: &StartOptions) -> Vec<Outcome> {
    let began = Instant::now();
    let mut pending: FuturesUnordered<_> = config
        .enabled_servers()
        .map(|server| {
            let wrapper = match &server.environment {
                Environment::Local => None,
                Environment::Named(name) => config
                    .environments
                    .get(name)
                    .map(|environment| environment.wrapper.as_slice()),
            };
            start_one(server, wrapper, options)
        })
        .collect();
    let mut outcomes = Vec::new();
    while let Some(outcome) = pending.next().await {
        outcomes.push(outcome);
    }
    outcomes.sort_by(|a, b| a.config.name.cmp(&b.config.name));

    let mut summary = StartupSummary {
        elapsed: began.elapsed(),
        ..StartupSummary::default()
    };
    for outcome in &outcomes {
        let name = outcome.config.name.clone();
        match &outcome.result {
            Ok(_) => summary.ready.push(name),
            Err(StartupError::Cancelled) => summary.cancelled.push(name),
            Err(_) => summary.failed.push(name),
        }
    }
    send(&options.events, StartupEvent::Summary(summary));
    outcomes
}

async fn start_one(
    config: &ServerConfig,
    wrapper: Option<&[String]>,
    options: &StartOptions,
) -> Outcome {
    let began = Instant::now();
    let server = config.name.clone();
    let mut report = Report {
        events: options.events.clone(),
        server: server.clone(),
        settled: false,
    };
    report.send(StartupEvent::Starting {
        server: server.clone(),
    });
    let startup = async {
        let connection = Connection::connect(config, wrapper, |pid| {
            report.send(StartupEvent::Spawned {
                server: server.clone(),
                pid,
            });
        })
        .await?;
        let tools = connection
            .list_tools(config.startup_timeout)
            .await
            .map_err(StartupError::ListTools)?;
        Ok((connection, tools))
    };
    let result = tokio::select! {
        result = tokio::time::timeout(config.startup_timeout, startup) => match result {
            Ok(result) => result,
            Err(_) => Err(StartupError::Timeout { after: config.startup_timeout }),
        },
        () = options.cancel.cancelled() => Err(StartupError::Cancelled),
    };
    let elapsed = began.elapsed();
    report.settled = true;
    report.send(match &result {
        Ok((_, tools)) => StartupEvent::Ready {
            server,
            tools: tools.len(),
            elapsed,
        },
        Err(StartupError::Cancelled) => StartupEvent::Cancelled { server },
        Err(error) => StartupEvent::Failed {
            server,
            reason: chain(error),
            elapsed,
        },
    });
    Outcome {
        config: config.clone(),
        elapsed,
        result,
    }
}

/// Sends one server's events; if the startup is dropped before it settles, reports
/// it as cancelled.
struct Report {
    events: Option<UnboundedSender<StartupEvent>>,
    server: String,
    settled: bool,
}

impl Report {
    fn send(&self, event: StartupEvent) {
        send(&self.events, event);
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if !self.settled {
            self.send(StartupEvent::Cancelled {
                server: self.server.clone(),
            });
        }
    }
}

fn send(events: &Option<UnboundedSender<StartupEvent>>, event: StartupEvent) {
    if let Some(events) = events {
        // A host that stopped listening does not stop the start.
        let _ = events.send(event);
    }
}
