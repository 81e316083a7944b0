//! What the contenders of `bench/compare` share: their command line, the call loop
//! that times `tools/call`, and the report they print.
//!
//! `raw-rmcp` and `runtime-client` do the same work through different stacks; sharing
//! everything but that stack (argument parsing, the timing loop, the JSON they print)
//! keeps the comparison about the stack alone. The TypeScript and Python clients in
//! this folder mirror the same arguments and output by hand.

use std::{
    future::Future,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use clap::{Parser, Subcommand};
use serde_json::json;

/// The command line both Rust contenders take.
#[derive(Debug, Parser)]
pub struct Args {
    /// The work to do.
    #[command(subcommand)]
    pub work: Work,
}

/// One benchmark's work.
#[derive(Debug, Subcommand)]
pub enum Work {
    /// Start every server of the file concurrently, initialize, list all tools (every
    /// page), shut down; print `{"servers","tools","peak_rss_kib"}`.
    List {
        /// A Codex-style TOML file of `[mcp_servers.NAME]` tables.
        #[arg(long)]
        config: PathBuf,
    },
    /// Start the file's one server, then call one tool `--count` times with
    /// `--concurrency` calls in flight; print latency percentiles and throughput.
    Calls {
        /// A Codex-style TOML file with exactly one `[mcp_servers.NAME]` table.
        #[arg(long)]
        config: PathBuf,
        /// The tool's name on its server (not qualified).
        #[arg(long)]
        tool: String,
        /// How many timed calls.
        #[arg(long)]
        count: usize,
        /// How many calls in flight at once.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Untimed calls made first, one at a time.
        #[arg(long, default_value_t = 100)]
        warmup: usize,
    },
}

/// The process's peak resident set (`VmHWM`) in KiB, read from `/proc/self/status`;
/// 0 where there is no such file.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmHWM:")?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}

/// Prints the `list` report, the peak memory read last.
pub fn print_list_report(servers: usize, tools: usize) {
    let report = json!({ "servers": servers, "tools": tools, "peak_rss_kib": peak_rss_kib() });
    println!("{report}");
}

/// The arguments every timed call sends: a tiny object, the same for every contender.
pub fn call_arguments() -> serde_json::Map<String, serde_json::Value> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("x".to_owned(), json!(1));
    arguments
}

/// Makes `warmup` calls one at a time, then `count` calls with `concurrency` of them
/// in flight (each of `concurrency` tasks takes the next call until all are taken),
/// and returns what [`print_calls_report`] prints: p50 and p99 of each call's
/// latency, and calls per second over the whole timed run.
///
/// `call` makes one call and fails if the call did; the first failure ends the run.
pub async fn run_calls<F, Fut>(
    call: F,
    warmup: usize,
    count: usize,
    concurrency: usize,
) -> anyhow::Result<CallStats>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    anyhow::ensure!(concurrency > 0, "`--concurrency` must be at least 1");
    for _ in 0..warmup {
        call().await?;
    }
    let call = Arc::new(call);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.min(count.max(1)) {
        let (call, next) = (call.clone(), next.clone());
        workers.spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < count {
                let sent = Instant::now();
                call().await?;
                latencies.push(sent.elapsed().as_nanos() as u64);
            }
            anyhow::Ok(latencies)
        });
    }
    let mut latencies = Vec::with_capacity(count);
    while let Some(worker) = workers.join_next().await {
        latencies.extend(worker??);
    }
    Ok(CallStats::new(latencies, started.elapsed()))
}

/// The timings of a [`run_calls`] run, or of calls timed otherwise ([`CallStats::new`]).
#[derive(Debug)]
pub struct CallStats {
    count: usize,
    p50_us: f64,
    p99_us: f64,
    calls_per_sec: f64,
}

impl CallStats {
    /// The p50 and p99 of `latencies` (one per call, in nanoseconds), and calls per
    /// second over `wall`, the whole timed run.
    pub fn new(mut latencies: Vec<u64>, wall: Duration) -> Self {
        latencies.sort_unstable();
        let percentile = |p: f64| {
            let index = ((latencies.len() as f64 * p).ceil() as usize).saturating_sub(1);
            latencies.get(index).map_or(0.0, |&ns| ns as f64 / 1000.0)
        };
        Self {
            count: latencies.len(),
            p50_us: round(percentile(0.50)),
            p99_us: round(percentile(0.99)),
            calls_per_sec: round(latencies.len() as f64 / wall.as_secs_f64()),
        }
    }

    /// The `calls` report: `{"count","p50_us","p99_us","calls_per_sec","peak_rss_kib"}`,
    /// the peak memory read now.
    pub fn report(&self) -> serde_json::Value {
        json!({
            "count": self.count,
            "p50_us": self.p50_us,
            "p99_us": self.p99_us,
            "calls_per_sec": self.calls_per_sec,
            "peak_rss_kib": peak_rss_kib(),
        })
    }
}

/// Prints the `calls` report, the peak memory read last (after the shutdown).
pub fn print_calls_report(stats: &CallStats) {
    println!("{}", stats.report());
}

/// `value` to one decimal.
fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}
