"""A client of the official Python SDK giving its sandbox authority to `mcp-runtime serve`.

    python serve_sandbox_client.py stdio BINARY CONFIG LAUNCHER
    python serve_sandbox_client.py http URL LAUNCHER

Calls `mcp__opted__echo` and `mcp__plain__echo` with `codex/sandbox-state` and
`codex/sandbox-launcher` in the call's `_meta`, and with a state in the arguments
too; prints the gateway's advertised experimental capabilities as JSON.
"""
import json
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

STATE = {"zeta": {"future": [1, None]}, "alpha": 12, "s": "café \"q\""}


async def main(transport, *rest):
    if transport == "stdio":
        binary, config, launcher = rest
        server = StdioServerParameters(command=binary, args=["serve", "--config", config])
    else:
        server, launcher = rest
    meta = {
        "codex/sandbox-state": STATE,
        "codex/sandbox-launcher": {"codexExecutable": launcher},
    }
    async with Client(server, mode="legacy") as client:
        experimental = client.server_capabilities.experimental or {}
        arguments = {"x": 1, "codex/sandbox-state": {"from": "the model"}}
        for name in ("mcp__opted__echo", "mcp__plain__echo"):
            await client.call_tool(name, arguments, meta=meta)
    print(json.dumps({"experimental": sorted(experimental)}))


anyio.run(main, *sys.argv[1:])
