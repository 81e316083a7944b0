"""A stdio MCP server on the official Python SDK (`mcp.server.mcpserver.MCPServer`).

It has one tool, `add`, so the tests see a real Python peer list and call a tool.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("python-adder")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
