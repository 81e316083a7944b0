"""Clients of the official Python SDK in front of replicas of `mcp-runtime serve
--listen` behind haproxy.

    python serve_fleet_client.py burst URL SESSIONS UP_LOG

`burst`: SESSIONS handshake sessions (`legacy`) and SESSIONS 2026-07-28 clients, all
at once, each list the tools and call `mcp__up__echo` three times and `mcp__up__pid`
once; reports how many of each succeeded, the pids their calls reached, and the
number of `tools/list` requests in UP_LOG.

Prints what it saw as one JSON object.
"""
import json
import sys

import anyio
from serve_common import logged
from serve_http_client import client


async def burst(url, sessions, up_log):
    report = {"legacy": 0, "2026-07-28": 0, "pids": [], "errors": []}

    async def one(mode):
        try:
            async with client(url, mode) as c:
                tools = [t.name for t in (await c.list_tools()).tools]
                assert "mcp__up__echo" in tools, tools
                for n in range(3):
                    echo = await c.call_tool("mcp__up__echo", {"text": f"{mode} {n}"})
                    assert not echo.is_error, echo
                pid = (await c.call_tool("mcp__up__pid", {})).structured_content["pid"]
                report["pids"].append(pid)
                report[mode] += 1
        except Exception as error:  # noqa: BLE001 - reported, then asserted on
            report["errors"].append(f"{mode}: {error!r}")

    async with anyio.create_task_group() as group:
        for _ in range(sessions):
            group.start_soon(one, "legacy")
            group.start_soon(one, "2026-07-28")
    report["listings"] = logged(up_log, "tools/list")
    return report


if __name__ == "__main__":
    command, url = sys.argv[1], sys.argv[2]
    if command == "burst":
        print(json.dumps(anyio.run(burst, url, int(sys.argv[3]), sys.argv[4])))
