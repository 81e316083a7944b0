"""The `adder` server of `adder.py`, served over Streamable HTTP at
http://127.0.0.1:PORT/mcp (PORT is the first argument).

The official Python SDK serves both eras at that URL: `server/discover` and
self-contained 2026-07-28 requests, and `initialize` with sessions. For the tests to
see which one a client spoke, each POST is reported on stderr as
`mcp-request VERSION METHOD` (its `MCP-Protocol-Version` and `Mcp-Method` headers,
`-` when absent).
"""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("python-adder")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def reporting(app):
    """`app`, reporting each POST's protocol headers on stderr."""

    async def report(scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            version = headers.get(b"mcp-protocol-version", b"-").decode()
            method = headers.get(b"mcp-method", b"-").decode()
            print(f"mcp-request {version} {method}", file=sys.stderr, flush=True)
        await app(scope, receive, send)

    return report


if __name__ == "__main__":
    app = reporting(server.streamable_http_app())
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]))
