// Run a list of steps against an MCP server with an official TypeScript client and report what
// the client handed back, step by step (a result, or the error it threw).
//   node matrix_client.mjs < plan.json
// plan: {"sdk": "sdk1" | "sdk2", "era": "legacy" | "modern", "url"?: string,
//        "command"?: string, "args"?: string[], "cwd"?: string,
//        "steps": [{"op": "list"} | {"op": "call", "name", "arguments"} | {"op": "read", "uri"}
//                  | {"op": "prompt", "name", "arguments"}]}
// sdk1 is @modelcontextprotocol/sdk 1.x (2025 era only), sdk2 is @modelcontextprotocol/client 2.x.
// Prints one JSON line {"version", "steps": [{"result": ...} | {"error": {"code", "message"}}]}.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const plan = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const root = process.env.MCP_CLIENT_MODULES;
const load = (rel) => import(pathToFileURL(path.join(root, rel)).href);

let client;
let transport;
const info = { name: 'mcpcore-matrix', version: '1.0.0' };
if (plan.sdk === 'sdk1') {
  const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
  client = new Client(info, { capabilities: {} });
  if (plan.url) {
    const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js');
    transport = new StreamableHTTPClientTransport(new URL(plan.url));
  } else {
    const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/stdio.js');
    transport = new StdioClientTransport({ command: plan.command, args: plan.args, cwd: plan.cwd,
                                           env: { ...process.env }, stderr: 'ignore' });
  }
} else {
  const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client/dist/index.mjs');
  client = new Client(info, {
    capabilities: {},
    versionNegotiation: { mode: plan.era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
  });
  if (plan.url) {
    transport = new StreamableHTTPClientTransport(new URL(plan.url));
  } else {
    const { StdioClientTransport } = await load('@modelcontextprotocol/client/dist/stdio.mjs');
    transport = new StdioClientTransport({ command: plan.command, args: plan.args, cwd: plan.cwd,
                                           env: { ...process.env }, stderr: 'ignore' });
  }
}

async function run(step) {
  switch (step.op) {
    case 'list': {
      const listed = await client.listTools();
      return { names: listed.tools.map((t) => t.name) };
    }
    case 'call':
      return client.callTool({ name: step.name, arguments: step.arguments ?? {} });
    case 'read':
      return client.readResource({ uri: step.uri });
    case 'prompt':
      return client.getPrompt({ name: step.name, arguments: step.arguments ?? {} });
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

await client.connect(transport);
const out = { version: client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null, steps: [] };
for (const step of plan.steps) {
  try {
    out.steps.push({ result: await run(step) });
  } catch (err) {
    out.steps.push({ error: { code: typeof err?.code === 'number' ? err.code : null, message: String(err?.message ?? err) } });
  }
}
await client.close();
console.log(JSON.stringify(out));
process.exit(0);
