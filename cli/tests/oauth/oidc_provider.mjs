// A real authorization server for the OAuth tests: oidc-provider (OpenID Certified), configured
// here for an MCP server as its protected resource. Run with Node 22:
//
//   node oidc_provider.mjs --packages DIR [--access-token-ttl SECONDS]
//
// DIR holds node_modules/oidc-provider (cli/tests/interop/install.sh puts it under
// target/interop/oidc). It listens on a loopback port of its own and prints one JSON line,
// {"issuer": "http://127.0.0.1:PORT"}, then one line per token issued:
// {"event": "grant", "grant_type": "...", "resource": "..."}.
//
// What it does: dynamic client registration (open), the authorization code flow with PKCE
// (S256, required), resource indicators (RFC 8707) whose access tokens are JWTs signed ES256
// with `aud` the resource and the scope `mcp`, `iss` in the authorization response (RFC 9207),
// refresh tokens for clients registered with the refresh_token grant. Login and consent are
// approved without a user, for the account "alice": a headless user agent that keeps cookies
// gets its code.
import crypto from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const packages = arg('--packages');
if (!packages) {
  console.error('oidc_provider.mjs: --packages DIR is required');
  process.exit(2);
}
const ttl = Number(arg('--access-token-ttl', '3600'));
const entry = path.join(packages, 'node_modules', 'oidc-provider', 'lib', 'index.js');
const { default: Provider } = await import(pathToFileURL(entry).href);

const key = (type, options, kid, alg) => ({
  ...crypto.generateKeyPairSync(type, options).privateKey.export({ format: 'jwk' }),
  kid,
  alg,
  use: 'sig',
});

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: {
    keys: [
      key('rsa', { modulusLength: 2048 }, 'rsa-1', 'RS256'),
      key('ec', { namedCurve: 'P-256' }, 'ec-1', 'ES256'),
    ],
  },
  cookies: { keys: [crypto.randomBytes(16).toString('hex')] },
  scopes: ['openid', 'offline_access', 'mcp'],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: 'mcp',
        audience: resource,
        accessTokenTTL: ttl,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  pkce: { required: () => true },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  ttl: { AccessToken: ttl, RefreshToken: 24 * 3600, Grant: 24 * 3600, Session: 24 * 3600 },
});
provider.proxy = false;

// Login and consent, approved at once for "alice" (what a user would click).
provider.use(async (ctx, next) => {
  if (!ctx.path.startsWith('/interaction/')) {
    return next();
  }
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: 'alice' } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  const to = await provider.interactionResult(ctx.req, ctx.res, result, {
    mergeWithLastSubmission: false,
  });
  ctx.status = 303;
  ctx.redirect(to);
});

provider.on('grant.success', (ctx) => {
  const p = ctx.oidc.params;
  console.log(JSON.stringify({ event: 'grant', grant_type: p.grant_type, resource: p.resource }));
});
provider.on('server_error', (_ctx, err) => console.error('oidc-provider:', err));

server.on('request', provider.callback());
console.log(JSON.stringify({ issuer }));
