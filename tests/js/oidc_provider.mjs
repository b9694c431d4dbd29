// A real OAuth authorization server for the identity tests: panva's oidc-provider on a free
// loopback port, with
//   - client_credentials for `dpop-client` (DPoP-bound tokens: a JWT for a resource indicator,
//     opaque otherwise) and introspection for the resource server `mcp-rs`;
//   - RFC 8693 token exchange for `mcp-server`, registered through registerGrantType: the
//     subject token is an HS256 JWT of the MCP server's jwt mode (SUBJECT_SECRET); the issued
//     token is a JWT for the asked audience, signed with this provider's key, carrying the
//     subject's sub and tid and, with an actor token, `act`.
//   node oidc_provider.mjs        (env: OIDC_MODULES, SUBJECT_SECRET, EXCHANGE_TTL seconds)
// Prints {"issuer": ...} once listening. GET /test/stats counts exchanges; POST /test/ttl?s=N
// changes the lifetime of exchanged tokens.
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = process.env.OIDC_MODULES;
const { default: Provider, errors } = await import(pathToFileURL(path.join(root, 'oidc-provider/lib/index.js')).href);
const jose = await import(pathToFileURL(path.join(root, 'jose/dist/webapi/index.js')).href);

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS = 'urn:ietf:params:oauth:token-type:access_token';
const secret = new TextEncoder().encode(process.env.SUBJECT_SECRET);
const claimsOf = new WeakMap(); // the claims an exchanged token carries beyond the standard ones
const stats = { exchanges: 0, refused: 0, ttl: Number(process.env.EXCHANGE_TTL || 300) };

const { privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
const signing = { ...(await jose.exportJWK(privateKey)), kid: 'provider-1', alg: 'ES256', use: 'sig' };

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [
    { client_id: 'mcp-server', client_secret: 'mcp-server-secret', grant_types: [GRANT], response_types: [],
      redirect_uris: [] },
    { client_id: 'dpop-client', client_secret: 'dpop-client-secret', grant_types: ['client_credentials'],
      response_types: [], redirect_uris: [], scope: 'tools' },
    { client_id: 'mcp-rs', client_secret: 'mcp-rs-secret', grant_types: [], response_types: [], redirect_uris: [] },
  ],
  jwks: { keys: [signing] },
  clientDefaults: { id_token_signed_response_alg: 'ES256' },
  extraTokenClaims: async (ctx, token) => claimsOf.get(token),
  cookies: { keys: ['identity-tests-cookie-key'] },
  scopes: ['tools', 'invoices:read'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true, allowedPolicy: async () => true },
    dPoP: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => undefined,
      useGrantedResource: async () => false,
      getResourceServerInfo: async (ctx, resource) => ({
        scope: 'tools invoices:read', audience: resource, accessTokenFormat: 'jwt', accessTokenTTL: 300,
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
});

async function verified(token) {
  try {
    return (await jose.jwtVerify(token, secret, { algorithms: ['HS256'] })).payload;
  } catch {
    return undefined;
  }
}

async function tokenExchange(ctx) {
  const { params, client } = ctx.oidc;
  stats.exchanges += 1;
  if (params.subject_token_type !== ACCESS) {
    throw new errors.InvalidRequest('subject_token_type must be an access token');
  }
  const subject = await verified(params.subject_token);
  if (!subject?.sub) {
    stats.refused += 1;
    throw new errors.InvalidGrant('subject token is not valid');
  }
  const audience = params.audience;
  if (!audience || audience === 'https://forbidden.example') {
    stats.refused += 1;
    throw new errors.InvalidTarget('this client may not get tokens for that audience');
  }
  let act;
  if (params.actor_token) {
    const actor = await verified(params.actor_token);
    if (!actor?.sub) throw new errors.InvalidGrant('actor token is not valid');
    act = { sub: actor.sub };
  }
  const token = new provider.AccessToken({ accountId: subject.sub, client, scope: params.scope || undefined });
  claimsOf.set(token, { tid: subject.tid, act });
  token.resourceServer = new provider.ResourceServer(audience, {
    scope: 'tools invoices:read', audience, accessTokenFormat: 'jwt', accessTokenTTL: stats.ttl,
    jwt: { sign: { alg: 'ES256' } },
  });
  ctx.body = {
    access_token: await token.save(), issued_token_type: ACCESS, token_type: 'Bearer',
    expires_in: token.expiration, scope: token.scope,
  };
}

provider.registerGrantType(GRANT, tokenExchange,
  ['audience', 'resource', 'scope', 'requested_token_type', 'subject_token', 'subject_token_type', 'actor_token',
    'actor_token_type'], ['audience', 'resource']);

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.url === '/test/stats') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(stats));
  } else if (req.url.startsWith('/test/ttl')) {
    stats.ttl = Number(new URL(req.url, issuer).searchParams.get('s'));
    res.end(JSON.stringify(stats));
  } else {
    callback(req, res);
  }
});
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
