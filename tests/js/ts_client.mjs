// Drive an MCP server with an official TypeScript client: @modelcontextprotocol/client 2.x
// (sdk2, both eras) or @modelcontextprotocol/sdk 1.x (sdk1, the 2025 era only).
//   node ts_client.mjs <url> <legacy|modern> [sdk2|sdk1]
// Prints one JSON object with what it observed; exits non-zero on any failure.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [url, era, sdk = 'sdk2'] = process.argv.slice(2);
const root = process.env.MCP_CLIENT_MODULES;
const load = (rel) => import(pathToFileURL(path.join(root, rel)).href);

let client;
let transport;
const info = { name: 'mcpcore-ts-test', version: '1.0.0' };
const capabilities = { elicitation: {}, sampling: {}, roots: {} };
if (sdk === 'sdk1') {
  const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
  const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js');
  const types = await load('@modelcontextprotocol/sdk/dist/esm/types.js');
  client = new Client(info, { capabilities });
  transport = new StreamableHTTPClientTransport(new URL(url));
  client.setRequestHandler(types.ElicitRequestSchema, async (request) => elicit(request));
  client.setRequestHandler(types.CreateMessageRequestSchema, async () => sample());
  client.setRequestHandler(types.ListRootsRequestSchema, async () => roots());
} else {
  const sdk2 = await load('@modelcontextprotocol/client/dist/index.mjs');
  client = new sdk2.Client(info, {
    capabilities,
    versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
    inputRequired: { autoFulfill: true, maxRounds: 10 },
  });
  transport = new sdk2.StreamableHTTPClientTransport(new URL(url));
  client.setRequestHandler('elicitation/create', async (request) => elicit(request));
  client.setRequestHandler('sampling/createMessage', async () => sample());
  client.setRequestHandler('roots/list', async () => roots());
}

function elicit(request) {
  const props = request.params.requestedSchema?.properties ?? {};
  const content = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, v.type === 'boolean' ? true : 'Ada']));
  return { action: 'accept', content };
}
const sample = () => ({ role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'test-model',
  stopReason: 'endTurn' });
const roots = () => ({ roots: [{ uri: 'file:///home/ada', name: 'home' }] });

const out = {};
await client.connect(transport);
out.era = client.getProtocolEra?.();
out.version = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null;
const tools = await client.listTools();
out.tools = tools.tools.length;
out.fetchErrors = tools.tools.find((t) => t.name === 'fetch_items')?._meta?.['dev.mcpcore/errors'];
const search = await client.callTool({ name: 'search', arguments: { query: 'red' } });
out.search = search.structuredContent;
const res = await client.readResource({ uri: 'test://template/5/data' });
out.resource = res.contents[0].text;
const prompt = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
out.prompt = prompt.messages[0].content.text;
const multi = await client.callTool({ name: 'test_input_required_result_multiple_inputs', arguments: {} });
out.multi = multi.content[0].text;
const rounds = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
out.rounds = rounds.content[0].text;
const awaited = await client.callTool({ name: 'test_awaited_questions', arguments: {} });
out.awaited = awaited.content[0].text;
if (sdk === 'sdk1') {  // a 2025-11-25 task whose handler awaits two forms: answered through tasks/result
  out.task = [];
  const stream = client.experimental.tasks.callToolStream({ name: 'awaited_booking', arguments: {} }, undefined,
    { task: { ttl: 60000 } });
  for await (const m of stream) {
    out.task.push(m.type === 'result' ? m.result.content[0].text
      : m.type === 'error' ? `error: ${m.error?.message}` : `${m.type}:${m.task?.status}`);
  }
}
if (era === 'modern') {
  const changed = new Promise((resolve) => client.setNotificationHandler('notifications/tools/list_changed',
    () => resolve(true)));
  const sub = await client.listen({ toolsListChanged: true });
  out.honored = sub.honoredFilter;
  await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  out.listChanged = await Promise.race([changed, new Promise((r) => setTimeout(() => r(false), 5000))]);
  await sub.close();
}
await client.close();
console.log(JSON.stringify(out));
process.exit(0);
