//! Micro-benchmarks of the runtime's own work, apart from servers and processes: the
//! catalog (built whole, and rebuilt after one server's tools change), the naming of
//! colliding tools (their hash suffixes), the splice of a sandbox state into a call,
//! and the parse of a configuration. `bench/compare` measures the whole runtime against
//! other clients; these say where its time goes.
//!
//! Run with `cargo bench -p mcp-runtime --bench runtime`.

use std::{hint::black_box, path::Path, sync::Arc};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcp_runtime::{
    Catalog, Config, ListedTool, SandboxState, ServerConfig, bench_support, model::Tool,
};

/// `count` tools named `{prefix}{i}`, each with a small input schema, as servers list
/// them.
fn tools(prefix: &str, count: usize) -> Vec<ListedTool> {
    let schema: serde_json::Map<String, serde_json::Value> =
        serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        }))
        .expect("an object");
    let schema = Arc::new(schema);
    (0..count)
        .map(|i| {
            ListedTool::from(Tool::new(
                format!("{prefix}{i}"),
                "Reads a thing and returns it",
                schema.clone(),
            ))
        })
        .collect()
}

/// `servers` servers of `per_server` tools each.
fn servers(servers: usize, per_server: usize) -> Vec<(ServerConfig, Vec<ListedTool>)> {
    (0..servers)
        .map(|i| {
            (
                ServerConfig::stdio(format!("server-{i}"), "unused", vec![]),
                tools("tool_", per_server),
            )
        })
        .collect()
}

fn lineage(servers: &[(ServerConfig, Vec<ListedTool>)]) -> Catalog {
    Catalog::for_servers(servers.iter().map(|(config, _)| config.name.clone()))
}

fn build_whole(servers: &[(ServerConfig, Vec<ListedTool>)]) -> Catalog {
    Catalog::build(
        &lineage(servers),
        servers
            .iter()
            .map(|(config, tools)| (config, tools.as_slice())),
    )
}

fn catalog(c: &mut Criterion) {
    let mut group = c.benchmark_group("catalog");
    group.sample_size(20);
    for (count, per_server) in [(100, 100), (20, 2000), (1000, 10)] {
        let servers = servers(count, per_server);
        let shape = format!("{count}x{per_server}");
        group.throughput(Throughput::Elements((count * per_server) as u64));
        group.bench_function(BenchmarkId::new("build_whole", &shape), |b| {
            b.iter(|| build_whole(black_box(&servers)))
        });
        // The servers becoming ready one by one, as at a runtime's start: one
        // catalog published per server.
        group.bench_function(
            BenchmarkId::new("servers_joining_one_by_one", &shape),
            |b| {
                b.iter(|| {
                    servers
                        .iter()
                        .fold(lineage(&servers), |catalog, (config, tools)| {
                            catalog.with_server(config, tools)
                        })
                })
            },
        );
    }
    group.finish();

    // One server's tools replaced in a catalog of 20 x 2,000 tools plus that server:
    // the cost follows the server's tools, not the catalog's. Every iteration shares
    // the lineage's registry, so from the second on the names are known: this is a
    // refresh that lists other tools than the catalog holds, without new names to
    // hash (`naming` measures those).
    let mut group = c.benchmark_group("catalog_refresh_of_one_server");
    group.sample_size(20);
    let others = servers(20, 2000);
    for changed_tools in [10, 100, 1000] {
        let server = ServerConfig::stdio("changing", "unused", vec![]);
        let before = tools("before_", changed_tools);
        let after = tools("after_", changed_tools);
        let base = others
            .iter()
            .fold(lineage(&others), |catalog, (config, tools)| {
                catalog.with_server(config, tools)
            })
            .with_server(&server, &before);
        group.throughput(Throughput::Elements(changed_tools as u64));
        group.bench_function(BenchmarkId::from_parameter(changed_tools), |b| {
            b.iter(|| black_box(&base).with_server(&server, &after))
        });
    }
    group.finish();
}

/// Tools whose names sanitize alike on servers whose names sanitize alike: every
/// name takes a SHA-1 hash suffix (naming rules 2 and 3).
fn naming(c: &mut Criterion) {
    let mut group = c.benchmark_group("naming");
    let colliding: Vec<(ServerConfig, Vec<ListedTool>)> = ["files-a", "files_a"]
        .into_iter()
        .map(|name| {
            let tools = (0..500)
                .flat_map(|i| [format!("get-{i}"), format!("get_{i}")])
                .map(|name| ListedTool::from(Tool::new(name, "", Arc::new(Default::default()))))
                .collect();
            (ServerConfig::stdio(name, "unused", vec![]), tools)
        })
        .collect();
    let plain = servers(2, 1000);
    group.throughput(Throughput::Elements(2000));
    group.bench_function("2000_tools_all_hashed", |b| {
        b.iter(|| build_whole(black_box(&colliding)))
    });
    group.bench_function("2000_tools_none_hashed", |b| {
        b.iter(|| build_whole(black_box(&plain)))
    });
    group.finish();
}

/// A sandbox state of `bytes` bytes: an object of string members.
fn state_of(bytes: usize) -> SandboxState {
    let mut text = String::from("{");
    let mut i = 0;
    while text.len() < bytes {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("\"key{i}\":\"{}\"", "v".repeat(40)));
        i += 1;
    }
    text.push('}');
    SandboxState::from_json(text).expect("valid JSON on one line")
}

fn splice(c: &mut Criterion) {
    let mut group = c.benchmark_group("splice");
    for bytes in [1 << 10, 1 << 16, 1 << 20] {
        let state = state_of(bytes);
        let text = state.as_json().to_owned();
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(BenchmarkId::new("state_from_json", bytes), |b| {
            b.iter(|| SandboxState::from_json(black_box(text.clone())).expect("valid"))
        });
        group.bench_function(BenchmarkId::new("call_with_state", bytes), |b| {
            b.iter(|| bench_support::splice_call(black_box(&state)))
        });
    }
    group.finish();
}

fn config(c: &mut Criterion) {
    let mut text = String::new();
    for i in 0..100 {
        text.push_str(&format!(
            "[mcp_servers.server-{i}]\ncommand = \"node\"\nargs = [\"server.js\", \"--port\", \"{i}\"]\n\
             env = {{ LOG = \"info\" }}\nenabled_tools = [\"read\", \"write\"]\n\
             [mcp_servers.server-{i}.tools.read]\napproval_mode = \"approve\"\n\n"
        ));
    }
    let mut group = c.benchmark_group("config");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("parse_100_servers", |b| {
        b.iter(|| Config::parse(black_box(&text), Path::new("config.toml")).expect("valid"))
    });
    group.finish();
}

criterion_group!(benches, catalog, naming, splice, config);
criterion_main!(benches);
