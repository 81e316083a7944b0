//! Benchmarks of [`Catalog::search`]: a query's time at 10,000 and 100,000 tools, and
//! what re-indexing one server of 1,000 tools costs after its tools change. Before
//! the timings it prints the index's memory per tool, counted by a global allocator
//! that tracks the bytes in use.
//!
//! The catalogs are synthetic and deterministic: servers of 1,000 tools, each tool
//! named from a verb and a noun, described in 10 to 30 words and given two
//! parameters, the words drawn from a vocabulary of tool descriptions with a skew
//! (a few words common, most rare), as in real catalogs.
//!
//! Run with `cargo bench -p mcp-runtime --bench search`.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    hint::black_box,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcp_runtime::{Catalog, ListedTool, ServerConfig, model::Tool};

/// The system allocator, counting the bytes in use.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only a counter is
// kept beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        IN_USE.fetch_add(new_size, Ordering::Relaxed);
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const VERBS: &[&str] = &[
    "get", "list", "create", "update", "delete", "search", "read", "write", "send", "fetch", "run",
    "start", "stop", "move", "copy", "find", "query", "describe", "archive", "merge", "approve",
    "assign", "close", "open", "schedule", "cancel", "upload", "download", "export", "import",
];

const NOUNS: &[&str] = &[
    "file",
    "directory",
    "issue",
    "pull_request",
    "branch",
    "commit",
    "message",
    "channel",
    "user",
    "team",
    "project",
    "task",
    "ticket",
    "invoice",
    "customer",
    "order",
    "payment",
    "calendar_event",
    "document",
    "page",
    "database",
    "table",
    "record",
    "query",
    "dashboard",
    "alert",
    "incident",
    "deployment",
    "container",
    "cluster",
    "secret",
    "bucket",
    "object",
    "email",
    "contact",
    "note",
    "comment",
    "label",
    "milestone",
    "release",
    "workflow",
    "pipeline",
    "artifact",
    "log",
    "metric",
    "trace",
    "report",
    "spreadsheet",
    "image",
    "video",
];

const WORDS: &[&str] = &[
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "for",
    "with",
    "by",
    "from",
    "returns",
    "given",
    "optional",
    "list",
    "id",
    "name",
    "new",
    "existing",
    "current",
    "all",
    "specified",
    "repository",
    "organization",
    "workspace",
    "account",
    "status",
    "date",
    "time",
    "range",
    "filter",
    "limit",
    "page",
    "token",
    "results",
    "details",
    "information",
    "content",
    "text",
    "title",
    "description",
    "owner",
    "author",
    "created",
    "updated",
    "deleted",
    "url",
    "link",
    "path",
    "size",
    "type",
    "format",
    "json",
    "markdown",
    "csv",
    "pdf",
    "version",
    "tag",
    "priority",
    "state",
    "open",
    "closed",
    "pending",
    "active",
    "archived",
    "public",
    "private",
    "member",
    "role",
    "permission",
    "access",
    "scope",
    "key",
    "value",
    "field",
    "column",
    "row",
    "sheet",
    "cell",
    "range",
    "formula",
    "chart",
    "graph",
    "node",
    "edge",
    "entity",
    "relation",
    "observation",
    "memory",
    "knowledge",
    "vector",
    "embedding",
    "index",
    "search",
    "match",
    "pattern",
    "regex",
    "glob",
    "recursive",
    "tree",
    "parent",
    "child",
    "sibling",
    "ancestor",
    "timeout",
    "retry",
    "error",
    "warning",
    "exit",
    "code",
    "command",
    "shell",
    "process",
    "environment",
    "variable",
    "config",
    "setting",
    "preference",
    "theme",
    "language",
    "locale",
    "currency",
    "amount",
    "total",
    "tax",
    "discount",
    "refund",
    "subscription",
    "plan",
    "usage",
    "quota",
    "billing",
    "address",
    "phone",
    "region",
    "zone",
    "host",
    "port",
    "protocol",
    "request",
    "response",
    "header",
    "body",
    "cookie",
    "session",
    "browser",
    "screenshot",
    "click",
    "navigate",
    "element",
    "selector",
    "form",
    "input",
    "button",
    "upload",
    "attachment",
    "thread",
    "reply",
    "reaction",
    "mention",
    "notification",
    "webhook",
    "event",
    "trigger",
    "cron",
    "interval",
    "backup",
    "restore",
    "snapshot",
    "volume",
    "disk",
    "memory",
    "cpu",
    "latency",
    "throughput",
    "percentile",
    "histogram",
    "counter",
    "gauge",
    "span",
    "sample",
    "weather",
    "forecast",
    "temperature",
    "location",
    "map",
    "route",
    "distance",
    "coordinates",
];

/// A deterministic generator (a 64-bit linear congruential one).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// One of `words`, the first ones more often (the square of a uniform draw).
    fn skewed<'a>(&mut self, words: &[&'a str]) -> &'a str {
        let uniform = (self.next() % 10_000) as f64 / 10_000.0;
        words[((uniform * uniform) * words.len() as f64) as usize]
    }

    fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| self.skewed(WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The `per_server` tools of server `index`.
fn tools(index: usize, per_server: usize, draw: &mut Draw) -> Vec<ListedTool> {
    (0..per_server)
        .map(|i| {
            let verb = VERBS[(draw.next() as usize) % VERBS.len()];
            let noun = NOUNS[(draw.next() as usize) % NOUNS.len()];
            let length = 10 + (draw.next() as usize) % 21;
            let description = format!(
                "{} {} {}",
                verb,
                noun.replace('_', " "),
                draw.sentence(length)
            );
            let schema = serde_json::json!({
                "type": "object",
                "properties": {
                    draw.skewed(WORDS): {"type": "string", "description": draw.sentence(6)},
                    "limit": {"type": "integer", "description": draw.sentence(4)},
                },
            });
            let serde_json::Value::Object(schema) = schema else {
                unreachable!()
            };
            ListedTool::from(Tool::new(
                format!("{verb}_{noun}_{index}_{i}"),
                description,
                Arc::new(schema),
            ))
        })
        .collect()
}

fn servers(count: usize, per_server: usize) -> Vec<(ServerConfig, Vec<ListedTool>)> {
    let mut draw = Draw(7);
    (0..count)
        .map(|i| {
            let config = ServerConfig::stdio(format!("server-{i}"), "unused", vec![]);
            (config, tools(i, per_server, &mut draw))
        })
        .collect()
}

fn catalog(servers: &[(ServerConfig, Vec<ListedTool>)]) -> Catalog {
    Catalog::build(
        &Catalog::for_servers(servers.iter().map(|(config, _)| config.name.clone())),
        servers
            .iter()
            .map(|(config, tools)| (config, tools.as_slice())),
    )
}

const QUERIES: &[&str] = &[
    "list open issues",
    "send a message to a channel",
    "create invoice for customer",
    "read file",
    "search documents by title",
    "deploy container to cluster",
    "get weather forecast",
    "export spreadsheet as csv",
    "cancel subscription",
    "screenshot of browser page",
    "update_record",
    "merge pull request",
    "alert incident latency",
    "memory knowledge graph entity",
    "upload attachment",
    "get_file_3_17",
];

const PER_SERVER: usize = 1_000;

fn search(c: &mut Criterion) {
    let mut group = c.benchmark_group("search");
    group.sample_size(30);
    for tools in [10_000, 100_000] {
        let servers = servers(tools / PER_SERVER, PER_SERVER);
        let before = IN_USE.load(Ordering::Relaxed);
        let catalog = catalog(&servers);
        let built = IN_USE.load(Ordering::Relaxed);
        black_box(catalog.search("warm up", 10));
        let indexed = IN_USE.load(Ordering::Relaxed);
        eprintln!(
            "{tools} tools: catalog {} bytes per tool, index {} bytes per tool beyond it",
            (built - before) / tools,
            (indexed - built) / tools
        );
        let mut next = 0;
        group.bench_with_input(BenchmarkId::new("search", tools), &catalog, |b, catalog| {
            b.iter(|| {
                next = (next + 1) % QUERIES.len();
                black_box(catalog.search(QUERIES[next], 10))
            });
        });
    }

    // One server of 1,000 tools changes among ten: the new catalog, and the index of
    // that server on the first search (the others' are shared).
    let servers = servers(10, PER_SERVER);
    let catalog = catalog(&servers);
    black_box(catalog.search("warm up", 10));
    let (config, _) = &servers[3];
    let changed = tools(3, PER_SERVER, &mut Draw(11));
    group.bench_function("re-index one server of 1000 tools", |b| {
        b.iter(|| {
            let next = catalog.with_server(config, &changed);
            black_box(next.search_server(&config.name, "read file", 10))
        });
    });
    group.bench_function("catalog rebuild alone, one server of 1000 tools", |b| {
        b.iter(|| black_box(catalog.with_server(config, &changed)));
    });
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
