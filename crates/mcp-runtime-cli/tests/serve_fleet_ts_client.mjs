#!/usr/bin/env node
// The official TypeScript SDK's clients in front of replicas of `mcp-runtime serve
// --listen` behind haproxy:
//
//   serve_fleet_ts_client.mjs burst URL SESSIONS
//
// Opens SESSIONS sessions at once; each lists the tools and calls `mcp__up__echo`
// three times and `mcp__up__pid` once. Prints how many succeeded, the pids reached and
// the errors, as one JSON object. The SDK is the one pinned in peers/package.json.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const sdk = join(dirname(fileURLToPath(import.meta.url)), "../../../peers/node_modules/@modelcontextprotocol/sdk/dist/esm");
const { Client } = await import(join(sdk, "client/index.js"));
const { StreamableHTTPClientTransport } = await import(join(sdk, "client/streamableHttp.js"));

const [mode, url, sessions] = process.argv.slice(2);
if (mode !== "burst") throw new Error(`unknown mode ${mode}`);

const report = { sessions: 0, pids: [], errors: [] };
async function one() {
  const client = new Client({ name: "ts-sdk", version: "1" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    if (!tools.includes("mcp__up__echo")) throw new Error(`no echo in ${tools}`);
    for (let n = 0; n < 3; n++) {
      const echo = await client.callTool({ name: "mcp__up__echo", arguments: { text: `ts ${n}` } });
      if (echo.isError) throw new Error(JSON.stringify(echo));
    }
    report.pids.push((await client.callTool({ name: "mcp__up__pid", arguments: {} })).structuredContent.pid);
    report.sessions += 1;
  } catch (error) {
    report.errors.push(String(error));
  } finally {
    await client.close().catch(() => {});
  }
}
await Promise.all(Array.from({ length: Number(sessions) }, one));
console.log(JSON.stringify(report));
