"""A client of the official Python SDK listing a large catalog through `mcp-runtime serve`.

    python serve_paging_client.py MODE BINARY CONFIG

Lists the tools page by page, following each page's cursor, and prints the size of
each page and every name, as one JSON object.
"""
import json
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main(mode, binary, config):
    server = StdioServerParameters(command=binary, args=["serve", "--config", config])
    pages, names, cursor = [], [], None
    async with Client(server, mode=mode) as client:
        while True:
            listed = await client.list_tools(cursor=cursor)
            pages.append(len(listed.tools))
            names.extend(tool.name for tool in listed.tools)
            cursor = listed.next_cursor
            if cursor is None:
                break
    print(json.dumps({"pages": pages, "names": names}))


anyio.run(main, *sys.argv[1:])
