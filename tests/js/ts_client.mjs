// Drive an MCP server with the official TypeScript client (@modelcontextprotocol/client 2.x).
//   node ts_client.mjs <url> <legacy|modern>
// Prints one JSON object with what it observed; exits non-zero on any failure.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [url, era] = process.argv.slice(2);
const root = process.env.MCP_CLIENT_MODULES;
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(root, '@modelcontextprotocol/client/dist/index.mjs')).href);

const client = new Client({ name: 'mcpcore-ts-test', version: '1.0.0' }, {
  capabilities: { elicitation: {}, sampling: {}, roots: {} },
  versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' },
  inputRequired: { autoFulfill: true, maxRounds: 10 },
});
client.setRequestHandler('elicitation/create', async (request) => {
  const props = request.params.requestedSchema?.properties ?? {};
  const content = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, v.type === 'boolean' ? true : 'Ada']));
  return { action: 'accept', content };
});
client.setRequestHandler('sampling/createMessage', async () => ({
  role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'test-model', stopReason: 'endTurn',
}));
client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///home/ada', name: 'home' }] }));

const out = {};
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
out.era = client.getProtocolEra?.();
out.version = client.getNegotiatedProtocolVersion?.();
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
