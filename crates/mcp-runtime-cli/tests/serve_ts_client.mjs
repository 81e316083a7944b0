#!/usr/bin/env node
// The official TypeScript SDK's client in front of `mcp-runtime serve`:
//
//   serve_ts_client.mjs stdio BINARY CONFIG
//   serve_ts_client.mjs http URL TOKEN
//
// Lists the tools, calls `mcp__up__echo` asking for its progress, and `mcp__up__ask`,
// whose question (an elicitation) the client answers; prints what it got as one JSON
// object. The SDK is the one pinned in peers/package.json.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const sdk = join(dirname(fileURLToPath(import.meta.url)), "../../../peers/node_modules/@modelcontextprotocol/sdk/dist/esm");
const { Client } = await import(join(sdk, "client/index.js"));
const { StdioClientTransport } = await import(join(sdk, "client/stdio.js"));
const { StreamableHTTPClientTransport } = await import(join(sdk, "client/streamableHttp.js"));
const { ElicitRequestSchema } = await import(join(sdk, "types.js"));

const [mode, ...rest] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: rest[0], args: ["serve", "--config", rest[1]], stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(rest[0]), {
        requestInit: { headers: { Authorization: `Bearer ${rest[1]}` } },
      });

const client = new Client({ name: "ts-sdk", version: "1" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: "accept",
  content: { name: "ts client", count: 5 },
}));
await client.connect(transport);
const tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
const progress = [];
const echo = await client.callTool({ name: "mcp__up__echo", arguments: { text: "ts" } }, undefined, {
  onprogress: (report) => progress.push([report.progress, report.total]),
});
const asked = await client.callTool({ name: "mcp__up__ask", arguments: {} });
console.log(
  JSON.stringify({
    tools,
    echo: echo.structuredContent,
    progress,
    asked: asked.structuredContent,
  }),
);
await client.close();
