#!/usr/bin/env python3
"""Interop check: two official MCP Python SDK clients (PyPI mcp==2.3.0, `mcp.Client`) at once
through `mcpwire bridge`, in one era, against the bridge's child.

    target/interop/venv/bin/python tests/interop/bridge_python_client.py \
        --url http://127.0.0.1:PORT/mcp --era legacy --child python

--era legacy connects with `mode="legacy"` (initialize, a session each); --era modern pins
2026-07-28 (no initialize; the `_meta` envelope on every request). --child names what runs
behind the bridge:
- `python`: tests/interop/bridge_python_server.py, the SDK's MCPServer. It speaks both eras, but
  picks one per connection from the opening message; the bridge opens with `server/discover`,
  so behind the bridge it is a 2026-07-28 server only (it refuses the bridge's `initialize`):
  every legacy request is translated, and its questions come as `input_required` results the
  bridge asks the calling client.
- `everything`: npm @modelcontextprotocol/server-everything (TypeScript SDK v1): 2025-11-25 only.
- `mcpwire`: mcpwire's examples/everything, which speaks 2026-07-28 on the same connection, so
  the bridge sends calls as modern requests and routes each `input_required` question to the
  client whose call it is (a modern client gets the `input_required` result itself).

The steps, each checked:

1. (python, everything) Client A alone: tools, a tool call, a resource read, a prompt, progress.
2. Sampling and elicitation with one client in flight, A then B (300 ms apart: the bridge counts
   a request answered in the last 100 ms as in flight): each callback answers with a value of
   its own client (`answer of A`, `name of B`); each result must carry its own client's value,
   and no callback of the other client may run. A modern client of a legacy child gets its
   question through the bridge's held call (an `input_required` result the SDK answers with its
   callback and retries).
3. Two clients in flight at once:
   - mcpwire, python: A and B call the sampling tool and the elicitation tool at the same moment; each
     callback waits until both clients' callbacks have started (proof that both were in flight
     together) and answers with its own value; each result must carry its own value.
   - everything (either era): A runs a 3 s call with progress; once its first
     progress arrives, B calls the sampling tool, and the bridge must refuse the child's
     `sampling/createMessage` (-32000, "cannot be told which client") rather than guess: B's
     result says so and neither client's callback ran. Once A is done, B's call is routed.

Prints a JSON report; exit status 0 when every check passed, 1 with a line per failure.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_client_common import Checks, run_main, short

MODERN = "2026-07-28"
# The bridge's refusal (-32000) of a child's mid-call request with requests of several clients
# in flight.
REFUSAL = "cannot be told which client"
# What each child offers. `sample`, `elicit`: a tool that asks the client mid-call, with its
# arguments. `hold`: a tool that runs about 3 s with progress. `basics`: what the first step
# checks (None: the child is only here for routing). `era`: what the child is behind the bridge
# ("legacy": it sends its requests mid-call; "modern": it speaks 2026-07-28 to the bridge, alone
# or beside a legacy session, so the bridge sends calls as modern requests and routes the
# `input_required` questions to the calling client).
CHILDREN: dict[str, dict[str, Any]] = {
    "python": {
        "era": "modern",
        "sample": ("ask_sample", {"prompt": "which client?"}),
        "elicit": ("ask_elicit", {"question": "your name?"}),
        "hold": ("count", {"steps": 3, "ms": 1000}),
        "basics": {
            "echo": "echo",
            "progress": ("count", {"steps": 3}),
            "progress_seen": [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)],
            "prompt": ("greet", {"name": "bridge"}, "Hello, bridge!"),
            "resource": ("bridge://note", "a note from the python child"),
        },
    },
    "everything": {
        "era": "legacy",
        "sample": ("trigger-sampling-request", {"prompt": "which client?", "maxTokens": 16}),
        "elicit": ("trigger-elicitation-request", {}),
        "hold": ("trigger-long-running-operation", {"duration": 3, "steps": 3}),
        "basics": {
            "echo": "echo",
            "progress": ("trigger-long-running-operation", {"duration": 1, "steps": 2}),
            "progress_seen": [(1.0, 2.0), (2.0, 2.0)],
            "prompt": ("simple-prompt", {}, "This is a simple prompt without arguments."),
            "resource": ("demo://resource/static/document/architecture.md", "Architecture"),
        },
    },
    "mcpwire": {
        "era": "modern",
        "sample": ("test_sampling", {"prompt": "which client?"}),
        "elicit": ("test_elicitation", {"message": "your name?"}),
        "basics": None,
    },
}
# The bridge counts a request answered in the last 100 ms as still in flight.
GRACE_S = 0.3


class Callbacks:
    """One client's sampling and elicitation callbacks: each answers with this client's own
    value and is counted; with `barrier` set, each waits (up to 10 s) until every client in
    the barrier has entered the same kind of callback."""

    def __init__(self, name: str, barriers: dict[str, Barrier]) -> None:
        self.name = name
        self.calls: dict[str, int] = {"sampling": 0, "elicitation": 0}
        self.barriers = barriers
        self.met: list[str] = []

    async def _meet(self, kind: str) -> None:
        self.calls[kind] += 1
        barrier = self.barriers.get(kind)
        if barrier is not None and await barrier.meet():
            self.met.append(kind)

    async def sampling(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        await self._meet("sampling")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=f"answer of {self.name}"), model="m"
        )

    async def elicitation(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        """Accepts with this client's value in every required string field of the form."""
        await self._meet("elicitation")
        schema = getattr(params, "requested_schema", None) or {}
        props = schema.get("properties") or {}
        fields = [k for k in schema.get("required") or [] if (props.get(k) or {}).get("type") == "string"]
        return types.ElicitResult(action="accept", content={k: f"name of {self.name}" for k in fields})


class Barrier:
    """Met when `parties` callers have arrived; `meet` says whether it was met within 10 s."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.all_in = anyio.Event()

    async def meet(self) -> bool:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.all_in.set()
        with anyio.move_on_after(10):
            await self.all_in.wait()
            return True
        return False


async def call_text(client: Client, tool: str, arguments: dict[str, Any], **kw: Any) -> str:
    """The call's text (all text blocks, joined), `isError: ` before it when the tool failed,
    or `error CODE: MESSAGE` when the call was answered with a JSON-RPC error."""
    try:
        result = await client.call_tool(tool, arguments, **kw)
    except MCPError as exc:
        return f"error {exc.error.code}: {exc.error.message}"
    text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
    return ("isError: " if result.is_error else "") + text


def expect_own(checks: Checks, label: str, text: str, value: str, other: str) -> None:
    checks.check(value in text and other not in text, f"{label}: expected {value!r} (not {other!r}), got {short(text)}")


async def basics(client: Client, child: dict[str, Any], checks: Checks, report: dict[str, Any]) -> None:
    """Tools, a call, a resource, a prompt and progress, through the bridge."""
    tools = {t.name for t in (await client.list_tools()).tools}
    wanted = {child["sample"][0], child["elicit"][0], child["hold"][0]}
    child = child["basics"]
    wanted |= {child["echo"], child["progress"][0]}
    checks.check(wanted <= tools, f"tools/list lacks {sorted(wanted - tools)}: {sorted(tools)}")
    report["tools"] = len(tools)
    echoed = await call_text(client, child["echo"], {"message": "héllo 😀 \"bridge\""})
    checks.check(echoed.endswith("héllo 😀 \"bridge\""), f"echo answered {short(echoed)}")

    uri, needle = child["resource"]
    listed = [str(r.uri) for r in (await client.list_resources()).resources]
    checks.check(uri in listed, f"resources/list lacks {uri}: {short(listed)}")
    read = await client.read_resource(uri)
    texts = [c.text for c in read.contents if isinstance(c, types.TextResourceContents)]
    checks.check(any(needle in t for t in texts), f"resources/read {uri}: no {needle!r} in {short(texts)}")

    name, args, expected = child["prompt"]
    prompts = [p.name for p in (await client.list_prompts()).prompts]
    checks.check(name in prompts, f"prompts/list lacks {name}: {prompts}")
    got = await client.get_prompt(name, args)
    texts = [m.content.text for m in got.messages if isinstance(m.content, types.TextContent)]
    checks.check(expected in texts, f"prompts/get {name}: {short(texts)}")

    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    tool, args = child["progress"]
    text = await call_text(client, tool, args, progress_callback=on_progress)
    checks.check(not text.startswith(("error", "isError")), f"{tool} answered {short(text)}")
    checks.check(seen == child["progress_seen"], f"{tool}: progress {seen}, expected {child['progress_seen']}")
    report["progress"] = seen


async def one_at_a_time(clients: dict[str, tuple[Client, Callbacks]], child: dict[str, Any], checks: Checks) -> None:
    """Sampling then elicitation, by A then by B, one call in flight at a time."""
    for kind, value in (("sample", "answer of"), ("elicit", "name of")):
        tool, args = child[kind]
        for name, (client, _) in clients.items():
            other = "B" if name == "A" else "A"
            await anyio.sleep(GRACE_S)
            before = {n: dict(cb.calls) for n, (_, cb) in clients.items()}
            text = await call_text(client, tool, args)
            label = f"{name} alone, {tool}"
            expect_own(checks, label, text, f"{value} {name}", f"{value} {other}")
            after = {n: dict(cb.calls) for n, (_, cb) in clients.items()}
            callback = "sampling" if kind == "sample" else "elicitation"
            ran = after[name][callback] - before[name][callback]
            checks.check(ran == 1, f"{label}: {name}'s {callback} callback ran {ran} times")
            checks.check(after[other] == before[other], f"{label}: {other}'s callbacks ran: {after[other]}")


async def both_at_once_routed(
    clients: dict[str, tuple[Client, Callbacks]], child: dict[str, Any], checks: Checks
) -> None:
    """A and B call the sampling and the elicitation tool at the same moment."""
    texts: dict[tuple[str, str], str] = {}

    async def call(name: str, kind: str) -> None:
        tool, args = child[kind]
        texts[(name, kind)] = await call_text(clients[name][0], tool, args)

    async with anyio.create_task_group() as tg:
        for name in clients:
            for kind in ("sample", "elicit"):
                tg.start_soon(call, name, kind)
    for (name, kind), text in sorted(texts.items()):
        other = "B" if name == "A" else "A"
        value = "answer of" if kind == "sample" else "name of"
        expect_own(checks, f"{name} with B and A in flight, {child[kind][0]}", text, f"{value} {name}", f"{value} {other}")
    for name, (_, cb) in clients.items():
        checks.check(
            sorted(cb.met) == ["elicitation", "sampling"],
            f"{name}: its callbacks did not overlap the other client's (met: {cb.met}): not both in flight",
        )


async def both_at_once_refused(
    clients: dict[str, tuple[Client, Callbacks]], child: dict[str, Any], checks: Checks
) -> None:
    """A holds a long operation in flight; B's sampling call meanwhile must be refused."""
    client_a, cb_a = clients["A"]
    client_b, cb_b = clients["B"]
    first_progress = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        first_progress.set()

    texts: dict[str, str] = {}

    async def hold() -> None:
        texts["A"] = await call_text(client_a, *child["hold"], progress_callback=on_progress)

    before = (dict(cb_a.calls), dict(cb_b.calls))
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        with anyio.fail_after(10):
            await first_progress.wait()
        tool, args = child["sample"]
        texts["B"] = await call_text(client_b, tool, args)
    checks.check(REFUSAL in texts["B"] and "-32000" in texts["B"], f"B while A in flight: {short(texts['B'])}")
    checks.check(not texts["A"].startswith(("error", "isError")), f"A's long operation: {short(texts['A'])}")
    checks.check((cb_a.calls, cb_b.calls) == before, f"callbacks ran while refused: {cb_a.calls} {cb_b.calls}")
    # A's call is answered: after the bridge's 100 ms grace, B alone is routed again.
    await anyio.sleep(GRACE_S)
    text = await call_text(client_b, *child["sample"])
    expect_own(checks, "B once A is done", text, "answer of B", "answer of A")


async def run(args: argparse.Namespace, checks: Checks) -> dict[str, Any]:
    child = CHILDREN[args.child]
    mode = "legacy" if args.era == "legacy" else MODERN
    report: dict[str, Any] = {"era": args.era, "child": args.child}
    async with AsyncExitStack() as stack:
        barriers: dict[str, Barrier] = {}
        clients: dict[str, tuple[Client, Callbacks]] = {}
        for name in ("A", "B"):
            cb = Callbacks(name, barriers)
            http = await stack.enter_async_context(httpx2.AsyncClient(trust_env=False, timeout=30))
            client = await stack.enter_async_context(
                Client(
                    streamable_http_client(args.url, http_client=http),
                    mode=mode,
                    client_info=types.Implementation(name=f"bridge-interop-{name}", version="1"),
                    sampling_callback=cb.sampling,
                    elicitation_callback=cb.elicitation,
                )
            )
            clients[name] = (client, cb)
        versions = {n: c.protocol_version for n, (c, _) in clients.items()}
        report["protocol_versions"] = versions
        modern = [v == MODERN for v in versions.values()]
        checks.check(modern == [args.era == "modern"] * 2, f"negotiated {versions} in the {args.era} era")
        if child["basics"] is not None:
            await basics(clients["A"][0], child, checks, report)
        await one_at_a_time(clients, child, checks)
        if child["era"] == "modern":
            barriers.update({"sampling": Barrier(2), "elicitation": Barrier(2)})
            await both_at_once_routed(clients, child, checks)
            report["both_in_flight"] = "routed"
        else:
            await both_at_once_refused(clients, child, checks)
            report["both_in_flight"] = "refused"
        report["callbacks"] = {n: cb.calls for n, (_, cb) in clients.items()}
    return report


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True, help="the bridge's endpoint, http://127.0.0.1:PORT/mcp")
    p.add_argument("--era", choices=["legacy", "modern"], required=True)
    p.add_argument("--child", choices=sorted(CHILDREN), required=True)
    p.add_argument("--timeout-s", type=float, default=90.0, help="bound for the whole run")
    args = p.parse_args(argv)
    return run_main(f"bridge_python_client {args.era} {args.child}", args.timeout_s, lambda checks: run(args, checks))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
