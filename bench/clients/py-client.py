#!/usr/bin/env python3
"""The official Python SDK's client doing the work of `raw-rmcp`.

Same arguments and same JSON output as the Rust contenders (bench/clients/src/lib.rs):

    py-client.py list --config FILE
    py-client.py calls --config FILE --tool NAME --count N --concurrency C [--warmup W]

Run with the interpreter of the pinned SDK, peers/venvs/mcp-2.3.0/bin/python. It uses
`mcp.Client` with its defaults (mode "auto": `server/discover`, falling back to
`initialize`). Leaving the client's context ends the server: for stdio the SDK closes
the child's stdin and polls for its exit (then SIGTERM, then SIGKILL to its group).
"""
import argparse
import json
import time
import tomllib

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def load_servers(path):
    with open(path, "rb") as f:
        return tomllib.load(f).get("mcp_servers", {})


def client_for(server):
    if "url" in server:
        return Client(server["url"])
    return Client(StdioServerParameters(command=server["command"], args=server.get("args", []), env=server.get("env")))


async def list_all_tools(client):
    tools, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


def peak_rss_kib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


async def run_list(config):
    servers = load_servers(config)
    # The listed tools are kept until the end, as a host keeps its catalog.
    listings = []
    all_listed = anyio.Event()

    async def serve(server):
        # The client's context is entered and left in one task (anyio requires it):
        # each task holds its server until every server has listed, then ends it.
        async with client_for(server) as client:
            listings.append(await list_all_tools(client))
            if len(listings) == len(servers):
                all_listed.set()
            await all_listed.wait()

    async with anyio.create_task_group() as group:
        for server in servers.values():
            group.start_soon(serve, server)
    total = sum(map(len, listings))
    print(json.dumps({"servers": len(servers), "tools": total, "peak_rss_kib": peak_rss_kib()}))


async def run_calls(config, tool, count, concurrency, warmup):
    servers = load_servers(config)
    if len(servers) != 1:
        raise SystemExit("`calls` needs exactly one server")
    async with client_for(next(iter(servers.values()))) as client:

        async def call():
            result = await client.call_tool(tool, {"x": 1})
            if result.is_error:
                raise RuntimeError("the tool failed")

        for _ in range(warmup):
            await call()
        latencies = []
        taken = 0

        async def worker():
            nonlocal taken
            while taken < count:
                taken += 1
                sent = time.perf_counter_ns()
                await call()
                latencies.append((time.perf_counter_ns() - sent) / 1000)

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(min(concurrency, max(count, 1))):
                group.start_soon(worker)
        wall = time.perf_counter() - started
    latencies.sort()

    def percentile(p):
        index = max(-(-len(latencies) * p // 1) - 1, 0)
        return round(latencies[int(index)], 1) if latencies else 0

    print(json.dumps({
        "count": count,
        "p50_us": percentile(0.5),
        "p99_us": percentile(0.99),
        "calls_per_sec": round(count / wall, 1),
        "peak_rss_kib": peak_rss_kib(),
    }))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    work = parser.add_subparsers(dest="work", required=True)
    listing = work.add_parser("list")
    listing.add_argument("--config", required=True)
    calls = work.add_parser("calls")
    calls.add_argument("--config", required=True)
    calls.add_argument("--tool", required=True)
    calls.add_argument("--count", type=int, required=True)
    calls.add_argument("--concurrency", type=int, default=1)
    calls.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args()
    if args.work == "list":
        anyio.run(run_list, args.config)
    else:
        anyio.run(run_calls, args.config, args.tool, args.count, args.concurrency, args.warmup)


if __name__ == "__main__":
    main()
