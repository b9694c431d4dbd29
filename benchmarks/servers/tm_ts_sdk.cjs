// The official TypeScript SDK (@modelcontextprotocol/sdk 1.32, McpServer + Express) serving the
// TM-style workload's three tools on Node 22: the same I/O and the same answers as the Python
// servers' _tm_tools.py (a GET to the harness's catalog API with fetch, Redis round trips over one
// pipelined connection speaking RESP), so every server does the same work per call.
//
// Started by the harness as `node tm_ts_sdk.cjs` with NODE_PATH pointing at the SDK's
// node_modules (.cache/node/client/node_modules) and PORT, BENCH_API_URL, BENCH_REDIS_URL and
// BENCH_STATELESS in the environment. BENCH_STATELESS=0 (the per-call-session form): the SDK's
// documented stateful pattern, one McpServer and transport per session, ended by DELETE.
// BENCH_STATELESS=1: its stateless pattern, a fresh server and transport per POST. JSON responses
// in both (enableJsonResponse), as the Python servers run.
'use strict';

const net = require('node:net');
const { randomUUID } = require('node:crypto');
const express = require('express');
const { z } = require('zod');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');

const API = process.env.BENCH_API_URL;
const STATELESS = (process.env.BENCH_STATELESS || '1') !== '0';

// A minimal Redis client: one connection, commands pipelined, replies matched in order.
class Redis {
  constructor(url) {
    const u = new URL(url);
    this.pending = [];
    this.buf = Buffer.alloc(0);
    this.sock = net.createConnection({ host: u.hostname, port: Number(u.port || 6379) });
    this.sock.setNoDelay(true);
    this.sock.on('data', (chunk) => this.onData(chunk));
    this.sock.on('error', (err) => { for (const p of this.pending.splice(0)) p.reject(err); });
  }

  command(...args) {
    let out = `*${args.length}\r\n`;
    for (const a of args) {
      const s = String(a);
      out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.sock.write(out);
    });
  }

  onData(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    for (;;) {
      const parsed = parseReply(this.buf, 0);
      if (parsed === null) return;
      this.buf = this.buf.subarray(parsed.end);
      const p = this.pending.shift();
      if (parsed.value instanceof Error) p.reject(parsed.value); else p.resolve(parsed.value);
    }
  }
}

// One RESP reply from buf at pos: { value, end }, or null when it is not all in yet.
function parseReply(buf, pos) {
  const eol = buf.indexOf('\r\n', pos);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[pos]);
  const line = buf.toString('utf8', pos + 1, eol);
  if (type === '+') return { value: line, end: eol + 2 };
  if (type === '-') return { value: new Error(line), end: eol + 2 };
  if (type === ':') return { value: Number(line), end: eol + 2 };
  if (type === '$') {
    const n = Number(line);
    if (n < 0) return { value: null, end: eol + 2 };
    if (buf.length < eol + 2 + n + 2) return null;
    return { value: buf.toString('utf8', eol + 2, eol + 2 + n), end: eol + 2 + n + 2 };
  }
  if (type === '*') {
    const n = Number(line);
    const items = [];
    let at = eol + 2;
    for (let i = 0; i < n; i++) {
      const item = parseReply(buf, at);
      if (item === null) return null;
      items.push(item.value);
      at = item.end;
    }
    return { value: n < 0 ? null : items, end: at };
  }
  return { value: new Error(`unknown RESP type ${type}`), end: eol + 2 };
}

const redis = new Redis(process.env.BENCH_REDIS_URL);

async function getJson(path) {
  const resp = await fetch(API + path);
  if (!resp.ok) throw new Error(`catalog API answered HTTP ${resp.status} for ${path}`);
  return resp.json();
}

const text = (doc) => ({ content: [{ type: 'text', text: JSON.stringify(doc) }] });

async function searchProducts({ category, limit }) {
  const n = limit ?? 10;
  const found = await getJson(`/products?category=${encodeURIComponent(category)}&limit=${n}`);
  const searches = await redis.command('INCR', `tm:searches:${category}`);
  return text({ category, count: found.items.length, ids: found.items.map((p) => p.id), searches });
}

async function getUserCart({ user_id: userId }) {
  const found = await getJson(`/users/${userId}`);
  const recent = await redis.command('LRANGE', `tm:recent:${userId}`, 0, 9);
  return text({ user_id: userId, name: found.name, recent: recent.map(Number) });
}

async function checkout({ user_id: userId, product_id: productId, quantity }) {
  const qty = quantity ?? 1;
  const item = await getJson(`/products/${productId}`);
  redis.command('MULTI');
  redis.command('INCR', 'tm:orders');
  redis.command('LPUSH', `tm:recent:${userId}`, productId);
  redis.command('LTRIM', `tm:recent:${userId}`, 0, 9);
  redis.command('HINCRBY', 'tm:sales', productId, qty);
  const [orderId] = await redis.command('EXEC');
  return text({ order_id: orderId, user_id: userId, product_id: productId, quantity: qty,
                total_cents: item.price_cents * qty });
}

function buildServer() {
  const server = new McpServer({ name: 'tm-bench', version: '1.0' });
  server.registerTool('search_products', {
    description: 'Products of a category from the catalog API; the search is counted in Redis.',
    inputSchema: { category: z.string(), limit: z.number().int().optional() },
  }, searchProducts);
  server.registerTool('get_user_cart', {
    description: 'A user and the products they last ordered.',
    inputSchema: { user_id: z.number().int() },
  }, getUserCart);
  server.registerTool('checkout', {
    description: 'Price a product and record the order.',
    inputSchema: { user_id: z.number().int(), product_id: z.number().int(), quantity: z.number().int().optional() },
  }, checkout);
  return server;
}

const app = express();
app.use(express.json());
const transports = new Map();

async function stateful(req, res) {
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? transports.get(sid) : undefined;
  if (!transport) {
    if (sid || req.method !== 'POST' || !isInitializeRequest(req.body)) {
      res.status(sid ? 404 : 400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'No valid session' },
                                         id: null });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => { transports.set(id, transport); },
    });
    transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
    await buildServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
}

async function stateless(req, res) {
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
}

const handler = STATELESS ? stateless : stateful;
app.all('/mcp', (req, res) => {
  handler(req, res).catch((err) => {
    if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: String(err) }, id: null });
  });
});

const httpServer = app.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => { httpServer.close(); process.exit(0); });
