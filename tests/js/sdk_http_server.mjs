// A 2025-era MCP server over streamable HTTP, built with the official TypeScript SDK 1.x, for the
// proxy tests: one session per initialize (kept in this process), SSE answers, GET streams.
//   node sdk_http_server.mjs PORT      (MCP_CLIENT_MODULES: the node_modules holding the SDK)
// GET /healthz answers ok; GET /initializes the count of initialize requests (caller, own).
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';

const root = process.env.MCP_CLIENT_MODULES;
const load = (rel) => import(pathToFileURL(path.join(root, rel)).href);
const { McpServer } = await load('@modelcontextprotocol/sdk/dist/esm/server/mcp.js');
const { StreamableHTTPServerTransport } = await load('@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js');
const { z } = await load('zod/index.js');

const counts = { caller: 0, own: 0 };
const transports = new Map();

function makeServer() {
  const server = new McpServer({ name: 'ts-sdk', version: '1.0.0' });
  server.registerTool('shout', { description: 'Upper-case the text.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }));
  server.registerPrompt('farewell', { description: 'A farewell.', argsSchema: { name: z.string() } },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Goodbye, ${name}` } }] }));
  return server;
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.url === '/healthz' || req.url === '/initializes') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url === '/healthz' ? 'ok' : JSON.stringify(counts));
    return;
  }
  const sid = req.headers['mcp-session-id'];
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  let transport = sid ? transports.get(sid) : undefined;
  if (!transport) {
    if (sid || !(body && body.method === 'initialize')) {
      res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no such session' } }));
      return;
    }
    const own = (body.params?.clientInfo?.title === "the proxy's own requests");
    counts[own ? 'own' : 'caller'] += 1;
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
    await makeServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
});
httpServer.listen(Number(process.argv[2]), '127.0.0.1');
