//! The fleet registry's round trip at a session's start: one Lua script on a real
//! Redis (`redis-server`, installed by `scripts/install-peers`), over TCP on loopback
//! and over a Unix socket, for a startup that takes a listing another replica
//! published (20 tools, as bench-server lists them).

use criterion::{Criterion, criterion_group, criterion_main};
use mcp_runtime::{bench_support, fleet::Fleet};
use mcp_runtime_fixtures::services::RedisServer;

const KEY: &[u8] = b"a fleet key of thirty-two bytes or more";

fn payload() -> Vec<u8> {
    let tools: Vec<_> = (0..20)
        .map(|n| {
            serde_json::json!([{
                "name": format!("tool_{n}"),
                "description": "A tool of the benchmark server, answering at once.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            }, null])
        })
        .collect();
    serde_json::to_vec(&tools).unwrap()
}

fn round_trip(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisServer::start_with_port(dir.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("fleet registry round trip, taking a 20-tool listing");
    for (n, (name, url)) in [("tcp", redis.tcp_url()), ("unix socket", redis.url())]
        .into_iter()
        .enumerate()
    {
        let fleet = runtime.block_on(async { Fleet::connect(&url, KEY, "bench").unwrap() });
        // A key of each case's own: each publishes its listing.
        let digest = [u8::try_from(n).unwrap(); 32];
        runtime.block_on(bench_support::fleet_publish(&fleet, digest, &payload()));
        assert!(runtime.block_on(bench_support::fleet_round_trip(&fleet, digest)));
        group.bench_function(name, |b| {
            b.iter(|| runtime.block_on(bench_support::fleet_round_trip(&fleet, digest)));
        });
        runtime.block_on(async { drop(fleet) });
    }
    group.finish();
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
