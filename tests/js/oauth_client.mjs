// The TypeScript SDK 1.x client's OAuth support against an authorization server, from the first 401
// to a called tool. The browser is the test's: this script prints {"authorize": url} when the SDK
// redirects, reads {"code": ...} from stdin, finishes the flow and prints what it saw.
//   node oauth_client.mjs <mcp url> <redirect url> [client metadata document URL]
import path from 'node:path';
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

const [url, redirectUrl, metadataUrl] = process.argv.slice(2);
const sdk = path.join(process.env.MCP_CLIENT_MODULES, '@modelcontextprotocol/sdk/dist/esm/client');
const { Client } = await import(pathToFileURL(path.join(sdk, 'index.js')).href);
const { StreamableHTTPClientTransport } = await import(pathToFileURL(path.join(sdk, 'streamableHttp.js')).href);
const { UnauthorizedError } = await import(pathToFileURL(path.join(sdk, 'auth.js')).href);

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
let info;
let tokens;
let verifier;
const provider = {
  get redirectUrl() { return redirectUrl; },
  clientMetadataUrl: metadataUrl || undefined,
  get clientMetadata() {
    return { client_name: 'ts desk', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  state: () => 'ts-client-state',
  clientInformation: () => info,
  saveClientInformation: (i) => { info = i; },
  tokens: () => tokens,
  saveTokens: (t) => { tokens = t; },
  redirectToAuthorization: (authorizationUrl) => {
    process.stdout.write(`${JSON.stringify({ authorize: authorizationUrl.href })}\n`);
  },
  saveCodeVerifier: (v) => { verifier = v; },
  codeVerifier: () => verifier,
};

const out = {};
let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
try {
  await new Client({ name: 'ts-oauth', version: '1.0.0' }).connect(transport);
  out.unauthorized = false;
} catch (err) {
  if (!(err instanceof UnauthorizedError)) throw err;
  out.unauthorized = true;
}
const { code } = JSON.parse((await lines.next()).value);
await transport.finishAuth(code);
transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
const client = new Client({ name: 'ts-oauth', version: '1.0.0' });
await client.connect(transport);
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.whoami = (await client.callTool({ name: 'whoami', arguments: {} })).structuredContent;
out.profile = (await client.callTool({ name: 'provider_profile', arguments: {} })).structuredContent;
out.client_id = info?.client_id;
out.token_type = tokens?.token_type;
await client.close();
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
