// The upstream identity provider of the authorization-server tests: panva's oidc-provider (a
// certified OpenID provider) on a free loopback port, with a scripted login instead of forms.
//   - clients register by RFC 7591 at /reg (the tests register the MCP server's upstream app);
//   - GET /interaction/:uid logs in the test's current user (POST /test/user?sub=..&tid=..&name=..)
//     and grants what is asked, or refuses when /test/user set refuse=1;
//   - ID tokens carry sub, name and tid (scope `profile`); refresh tokens are always issued;
//     the access token lifetime is ACCESS_TTL seconds (POST /test/ttl?s=N changes it).
//   node oidc_upstream.mjs        (env: OIDC_MODULES, ACCESS_TTL)
// Prints {"issuer": ...} once listening. GET /test/stats counts logins, refusals and refresh grants.
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const root = process.env.OIDC_MODULES;
const { default: Provider } = await import(pathToFileURL(path.join(root, 'oidc-provider/lib/index.js')).href);
const jose = await import(pathToFileURL(path.join(root, 'jose/dist/webapi/index.js')).href);

const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const signing = { ...(await jose.exportJWK(privateKey)), kid: 'upstream-1', alg: 'RS256', use: 'sig' };
const user = { sub: 'alice', name: 'Alice Example', tid: 'acme', refuse: false };
const stats = { logins: 0, refused: 0, refreshes: 0, ttl: Number(process.env.ACCESS_TTL || 3600) };

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [signing] },
  cookies: { keys: ['upstream-tests-cookie-key'] },
  scopes: ['openid', 'profile', 'offline_access'],
  claims: { openid: ['sub'], profile: ['name', 'tid'] },
  conformIdTokenClaims: false,
  findAccount: async (ctx, id) => ({
    accountId: id,
    claims: async () => ({ sub: id, name: id === user.sub ? user.name : id, tid: id === user.sub ? user.tid : undefined }),
  }),
  issueRefreshToken: async () => true,
  ttl: { AccessToken: () => stats.ttl },
  interactions: { url: async (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    userinfo: { enabled: true },
  },
});
provider.proxy = false;
provider.on('grant.success', (ctx) => {
  if (ctx.oidc.params.grant_type === 'refresh_token') stats.refreshes += 1;
});

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (user.refuse) {
    stats.refused += 1;
    await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the user said no' },
      { mergeWithLastSubmission: false });
    return;
  }
  if (prompt.name === 'login') {
    stats.logins += 1;
    await provider.interactionFinished(req, res, { login: { accountId: user.sub } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  if (missing.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const callback = provider.callback();
server.on('request', async (req, res) => {
  const url = new URL(req.url, issuer);
  try {
    if (url.pathname === '/test/stats') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(stats));
    } else if (url.pathname === '/test/user') {
      user.sub = url.searchParams.get('sub') || user.sub;
      user.name = url.searchParams.get('name') || user.sub;
      user.tid = url.searchParams.get('tid') || undefined;
      user.refuse = url.searchParams.get('refuse') === '1';
      res.end(JSON.stringify(user));
    } else if (url.pathname === '/test/ttl') {
      stats.ttl = Number(url.searchParams.get('s'));
      res.end(JSON.stringify(stats));
    } else if (url.pathname.startsWith('/interaction/')) {
      await interaction(req, res);
    } else {
      callback(req, res);
    }
  } catch (err) {
    res.statusCode = 500;
    res.end(String(err && err.stack || err));
  }
});
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
