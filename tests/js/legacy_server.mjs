// A 2025-era-only MCP server over stdio, built with the official TypeScript SDK 1.x: what an
// mcpcore client meets in the wild. It knows nothing of server/discover or 2026-07-28.
//   node legacy_server.mjs        (MCP_CLIENT_MODULES: the node_modules holding the SDK)
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const root = process.env.MCP_CLIENT_MODULES;
const load = (rel) => import(pathToFileURL(path.join(root, rel)).href);
const { McpServer } = await load('@modelcontextprotocol/sdk/dist/esm/server/mcp.js');
const { StdioServerTransport } = await load('@modelcontextprotocol/sdk/dist/esm/server/stdio.js');
const { z } = await load('zod/index.js');

const server = new McpServer({ name: 'legacy-sdk1', version: '1.0.0' });
server.registerTool('echo', { description: 'Echo the text back.', inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
server.registerPrompt('greet', { description: 'A greeting.', argsSchema: { name: z.string() } },
  ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}` } }] }));
await server.connect(new StdioServerTransport());
