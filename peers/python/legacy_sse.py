"""A legacy HTTP+SSE MCP server on the official Python SDK 1.x (FastMCP, `transport="sse"`).

It binds a free loopback port and prints `listening http://127.0.0.1:PORT/sse` on stdout
once connections are accepted, so a test waits for that line rather than for time. It
serves the event stream at `GET /sse` and takes messages at `POST /messages/`.

It advertises the experimental capability `codex/sandbox-state`, so a client sends it
sandbox metadata. With `--log FILE` it appends the body of every POST, exactly as
received, as one JSON line `{"raw": BODY}`, so a test can check bytes the SDK would
parse away.

Tools: `add(a, b)`, and `echo(n, text)`, which answers `"<n> <text>"` (Python's integers
keep every digit).
"""

import argparse
import json
import socket

import uvicorn
from mcp.server.fastmcp import FastMCP

SANDBOX_STATE_CAPABILITY = "codex/sandbox-state"

server = FastMCP("python-legacy-sse")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(n: int, text: str) -> str:
    """Answer the integer and the text, as received."""
    return f"{n} {text}"


def advertise_sandbox_state() -> None:
    lowlevel = server._mcp_server
    original = lowlevel.create_initialization_options

    def with_sandbox_state(notification_options=None, experimental_capabilities=None):
        experimental = dict(experimental_capabilities or {})
        experimental[SANDBOX_STATE_CAPABILITY] = {}
        return original(notification_options, experimental)

    lowlevel.create_initialization_options = with_sandbox_state


class LogPostBodies:
    """ASGI middleware appending each POST body, as received, to a file."""

    def __init__(self, app, path):
        self.app = app
        self.path = path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []

        async def logged_receive():
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    raw = b"".join(chunks).decode("utf-8")
                    with open(self.path, "a", encoding="utf-8") as log:
                        log.write(json.dumps({"raw": raw}) + "\n")
            return message

        await self.app(scope, logged_receive, send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log")
    args = parser.parse_args()
    advertise_sandbox_state()
    app = server.sse_app()
    if args.log:
        app = LogPostBodies(app, args.log)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    print(f"listening http://127.0.0.1:{port}/sse", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
