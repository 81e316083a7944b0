"""A client of the official Python SDK in front of `mcp-runtime serve` in search mode.

    python serve_search_client.py MODE BINARY CONFIG
    python serve_search_client.py MODE URL

MODE is the SDK client's protocol mode (`legacy`, `2026-07-28`). Starts BINARY
`serve --config CONFIG` as a stdio server whose `[serve] expose = "search"`, or
reaches the gateway listening at URL over Streamable HTTP; lists
its tools, calls a tool it was not shown, searches for `echo`, and (under `legacy`)
waits for the list change the search causes and lists again; then calls what it
found by name and through `call_tool`. Prints what it got as one JSON object.
"""
import json
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


async def main(mode, binary_or_url, config=None):
    if config is None:
        server = streamable_http_client(binary_or_url)
    else:
        server = StdioServerParameters(command=binary_or_url, args=["serve", "--config", config])
    report = {}
    changed = anyio.Event()

    async def on_message(message):
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            changed.set()

    async with Client(server, mode=mode, message_handler=on_message) as client:
        report["listed"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        try:
            await client.call_tool("mcp__up__echo", {"text": "unseen"})
            report["unshown"] = "answered"
        except Exception as error:  # the SDK raises the JSON-RPC error
            report["unshown"] = str(error)
        found = await client.call_tool("search_tools", {"query": "echo", "limit": 3})
        report["found"] = [tool["name"] for tool in found.structured_content["tools"]]
        if mode == "legacy":
            with anyio.fail_after(20):
                await changed.wait()
            report["relisted"] = sorted(tool.name for tool in (await client.list_tools()).tools)
            echo = await client.call_tool("mcp__up__echo", {"text": "by name"})
            report["by_name"] = echo.structured_content
        through = await client.call_tool(
            "call_tool", {"name": "mcp__up__echo", "arguments": {"text": "through"}}
        )
        report["through"] = through.structured_content
    print(json.dumps(report))


anyio.run(main, *sys.argv[1:])
