#!/usr/bin/env node
// The official TypeScript SDK's client doing the work of `raw-rmcp`, with the same
// arguments and the same JSON output (see bench/clients/src/lib.rs):
//
//   ts-client.mjs list --config FILE
//   ts-client.mjs calls --config FILE --tool NAME --count N --concurrency C [--warmup W]
//
// The SDK is the one pinned in peers/package.json, loaded from peers/node_modules.
// Servers end with `Client.close()`: for stdio the SDK ends the child's stdin and
// waits for it to exit (then SIGTERM, then SIGKILL, after 2 s each), as the others do.
// The configuration is read by a small reader of the TOML that bench/compare writes
// (`[mcp_servers.NAME]` tables whose values are strings, arrays of strings or inline
// tables of strings), since the peers carry no TOML package.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const sdk = join(dirname(fileURLToPath(import.meta.url)), "../../peers/node_modules/@modelcontextprotocol/sdk/dist/esm");
const { Client } = await import(join(sdk, "client/index.js"));
const { StdioClientTransport } = await import(join(sdk, "client/stdio.js"));
const { StreamableHTTPClientTransport } = await import(join(sdk, "client/streamableHttp.js"));

/** The `[mcp_servers.NAME]` tables of `path`, as `{ name: { command, args, env, url } }`. */
function loadServers(path) {
  const servers = {};
  let current = null;
  for (const raw of readFileSync(path, "utf8").split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const header = line.match(/^\[mcp_servers\.("?)([A-Za-z0-9_-]+)\1\]$/);
    if (header) {
      current = servers[header[2]] = {};
      continue;
    }
    const pair = line.match(/^([A-Za-z0-9_]+)\s*=\s*(.*)$/);
    if (!pair || !current) throw new Error(`cannot read line \`${line}\` of \`${path}\``);
    // Inline tables become JSON objects: `{ A = "b" }` -> `{ "A": "b" }`.
    const json = pair[2].replace(/([{,]\s*)([A-Za-z0-9_]+)\s*=/g, '$1"$2":');
    current[pair[1]] = JSON.parse(json);
  }
  return servers;
}

/** Spawns or connects to `server` and completes the SDK's handshake. */
async function connect(server) {
  const client = new Client({ name: "bench-ts-client", version: "0.1.0" }, { capabilities: {} });
  const transport = server.url
    ? new StreamableHTTPClientTransport(new URL(server.url))
    : new StdioClientTransport({ command: server.command, args: server.args ?? [], env: server.env });
  await client.connect(transport);
  return client;
}

/** Every tool of `client`, page after page. */
async function listAllTools(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/** The process's peak resident set (VmHWM) in KiB. */
function peakRssKib() {
  try {
    const match = readFileSync("/proc/self/status", "utf8").match(/^VmHWM:\s+(\d+) kB/m);
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

function option(args, name, fallback) {
  const index = args.indexOf(`--${name}`);
  if (index < 0) {
    if (fallback === undefined) throw new Error(`missing --${name}`);
    return fallback;
  }
  return args[index + 1];
}

const round = (value) => Math.round(value * 10) / 10;

async function list(config) {
  const servers = Object.values(loadServers(config));
  // The listed tools are kept until the end, as a host keeps its catalog.
  const started = await Promise.all(servers.map(async (server) => {
    const client = await connect(server);
    return { client, tools: await listAllTools(client) };
  }));
  await Promise.all(started.map(({ client }) => client.close()));
  const tools = started.reduce((sum, { tools }) => sum + tools.length, 0);
  console.log(JSON.stringify({ servers: servers.length, tools, peak_rss_kib: peakRssKib() }));
}

async function calls(config, tool, count, concurrency, warmup) {
  const servers = Object.values(loadServers(config));
  if (servers.length !== 1) throw new Error("`calls` needs exactly one server");
  const client = await connect(servers[0]);
  const call = async () => {
    const result = await client.callTool({ name: tool, arguments: { x: 1 } });
    if (result.isError) throw new Error("the tool failed");
  };
  for (let i = 0; i < warmup; i++) await call();
  const latencies = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(count, 1)) }, async () => {
    while (next++ < count) {
      const sent = process.hrtime.bigint();
      await call();
      latencies.push(Number(process.hrtime.bigint() - sent) / 1000);
    }
  }));
  const wallSec = Number(process.hrtime.bigint() - started) / 1e9;
  await client.close();
  latencies.sort((a, b) => a - b);
  const percentile = (p) => latencies[Math.max(Math.ceil(latencies.length * p) - 1, 0)] ?? 0;
  console.log(JSON.stringify({
    count,
    p50_us: round(percentile(0.5)),
    p99_us: round(percentile(0.99)),
    calls_per_sec: round(count / wallSec),
    peak_rss_kib: peakRssKib(),
  }));
}

const [work, ...args] = process.argv.slice(2);
if (work === "list") {
  await list(option(args, "config"));
} else if (work === "calls") {
  await calls(
    option(args, "config"),
    option(args, "tool"),
    Number(option(args, "count")),
    Number(option(args, "concurrency", "1")),
    Number(option(args, "warmup", "100")),
  );
} else {
  throw new Error("usage: ts-client.mjs list|calls --config FILE …");
}
// Exit now, as the Rust clients do, rather than wait for timers the SDK may hold.
process.exit(0);
