"""A server on the official Python SDK that asks the person during a call, two ways.

- `ask_in_call` asks with `ctx.elicit(...)`: a request of the server's own, sent while
  the call runs. Only the handshake revisions (2025-11-25 and older) have such
  requests; under 2026-07-28 the SDK refuses to send it (`-32600 Cannot send
  'elicitation/create': ... no back-channel`) and the call fails.
- `ask_by_result` asks through a resolver (`Resolve` returning `Elicit`): the SDK
  sends the request mid-call to a handshake client, and answers a 2026-07-28 client
  with an input-required result, which the client answers by calling again.

Both answer `"<action> <name>"`. Served over stdio, or over Streamable HTTP at
http://127.0.0.1:PORT/mcp with `--http PORT`.
"""

import argparse
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve

server = MCPServer("python-asks")


class Name(BaseModel):
    name: str = "Ada"


def outcome(result) -> str:
    name = getattr(getattr(result, "data", None), "name", None)
    return f"{result.action} {name}"


@server.tool()
async def ask_in_call(ctx: Context) -> str:
    """Ask the person for a name with a request of the server's own."""
    return outcome(await ctx.elicit("What is your name?", Name))


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
async def ask_by_result(answer: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> str:
    """Ask the person for a name through the protocol era's own way."""
    return outcome(answer)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    args = parser.parse_args()
    if args.http is None:
        server.run()
    else:
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=args.http)
