#!/usr/bin/env python3
"""Shared vs unshared startup listings, side by side.

Starts `--sessions` runtimes at once against a fixture server whose `tools/list`
costs real server time (CPU spent building the answer, and many tools to serialize
and parse), once with shared listings and once with `--no-share`, alternating for
`--rounds` rounds in one run, and reports the median wall time of each and their
ratio. Every session spawns its own server process either way, so the difference is
the listing work that sharing saves.

Usage: bench/startup.py [--sessions 32] [--rounds 7] [--list-cpu-ms 100] [--tools 500]
Builds the release binaries first.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--list-cpu-ms", type=int, default=100)
    parser.add_argument("--tools", type=int, default=500)
    args = parser.parse_args()

    # The same packages as bench/compare builds, so that running one after the other
    # does not rebuild rmcp and the runtime with another set of rmcp features.
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "mcp-runtime-cli", "-p", "mcp-runtime-fixtures",
         "-p", "mcp-bench-clients", "--bins"],
        cwd=ROOT,
        check=True,
    )
    release = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR") or "target", "release")
    walls, requests = measure(
        os.path.join(release, "mcp-runtime"), os.path.join(release, "mcp-fixture"),
        args.sessions, args.rounds, args.list_cpu_ms, args.tools,
    )
    shared, unshared = statistics.median(walls[True]), statistics.median(walls[False])
    print(f"{args.sessions} sessions, tools/list costs {args.list_cpu_ms} ms CPU + {args.tools} tools, {args.rounds} rounds")
    print(f"  shared:   median {shared:.0f} ms  (all: {walls[True]})  tools/list requests per burst: {sorted(requests[True])}")
    print(f"  unshared: median {unshared:.0f} ms  (all: {walls[False]})  tools/list requests per burst: {sorted(requests[False])}")
    print(f"  ratio unshared/shared: {unshared / shared:.2f}x")


def measure(runtime, fixture, sessions, rounds, list_cpu_ms, tools):
    """Runs the shared and the unshared bursts `rounds` times each, alternating.

    Returns `(walls, requests)`, each keyed by `True` (shared) and `False` (unshared):
    the wall times in ms of every round, and the set of `tools/list` request counts
    per burst seen. Used by bench/compare too.
    """
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "bench.toml")
        with open(config, "w") as f:
            f.write(
                "[mcp_servers.costly]\n"
                f"command = {json.dumps(fixture)}\n"
                f'args = ["--tools", "{tools}", "--list-cpu-ms", "{list_cpu_ms}"]\n'
            )
        walls = {True: [], False: []}
        requests = {True: set(), False: set()}
        for round_ in range(rounds):
            # Alternate which contender goes first, so drift on a shared machine
            # affects both alike.
            order = (True, False) if round_ % 2 == 0 else (False, True)
            for shared in order:
                # Each round uses a fresh scope: rounds never share with each other.
                command = [runtime, "bench", "startup", "--sessions", str(sessions),
                           "--config", config, "--json", "--scope", f"round-{round_}"]
                if not shared:
                    command.append("--no-share")
                report = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
                server = report["servers"][0]
                if server["ready"] != sessions:
                    sys.exit(f"only {server['ready']} of {sessions} sessions became ready: {report}")
                walls[shared].append(report["wall_ms"])
                requests[shared].add(server["tools_list_requests"])
    return walls, requests


if __name__ == "__main__":
    main()
