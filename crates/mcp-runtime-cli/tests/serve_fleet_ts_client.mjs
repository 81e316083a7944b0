#!/usr/bin/env node
// The official TypeScript SDK's clients in front of replicas of `mcp-runtime serve
// --listen` behind haproxy:
//
//   serve_fleet_ts_client.mjs burst URL SESSIONS
//
// Opens SESSIONS handshake sessions (the SDK's v1, `@modelcontextprotocol/sdk`) and
// SESSIONS 2026-07-28 clients (its v2, `@modelcontextprotocol/client`, pinned to that
// revision) at once; each lists the tools and calls `mcp__up__echo` three times and
// `mcp__up__pid` once. Prints how many of each era succeeded, the pids reached and the
// errors, as one JSON object. The SDKs are the ones pinned in peers/package.json.

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const modules = join(dirname(fileURLToPath(import.meta.url)), "../../../peers/node_modules/@modelcontextprotocol");
const v1 = join(modules, "sdk/dist/esm");
const { Client } = await import(join(v1, "client/index.js"));
const { StreamableHTTPClientTransport } = await import(join(v1, "client/streamableHttp.js"));
const v2 = await import(join(modules, "client/dist/index.mjs"));

const [mode, url, sessions] = process.argv.slice(2);
if (mode !== "burst") throw new Error(`unknown mode ${mode}`);

const report = { legacy: 0, "2026-07-28": 0, pids: [], errors: [] };

/// A connected client of the era: the v1 SDK's for the handshake, v2's for 2026-07-28.
async function connected(era) {
  if (era === "legacy") {
    const client = new Client({ name: "ts-sdk", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return client;
  }
  const client = new v2.Client(
    { name: "ts-sdk-v2", version: "1" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(new v2.StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function one(era) {
  let client;
  try {
    client = await connected(era);
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    if (!tools.includes("mcp__up__echo")) throw new Error(`no echo in ${tools}`);
    for (let n = 0; n < 3; n++) {
      const echo = await client.callTool({ name: "mcp__up__echo", arguments: { text: `ts ${n}` } });
      if (echo.isError) throw new Error(JSON.stringify(echo));
    }
    report.pids.push((await client.callTool({ name: "mcp__up__pid", arguments: {} })).structuredContent.pid);
    report[era] += 1;
  } catch (error) {
    report.errors.push(`${era}: ${error}`);
  } finally {
    await client?.close().catch(() => {});
  }
}
const eras = ["legacy", "2026-07-28"];
await Promise.all(eras.flatMap((era) => Array.from({ length: Number(sessions) }, () => one(era))));
console.log(JSON.stringify(report));
